// Package nethttp is the net/http front of the guard: Handler wraps an
// http.Handler with an Engine (package guard), so that bots get the 403
// and 429 their site's robots.txt calls for and every other request goes
// on untouched; Check is the decision service that nginx, HAProxy,
// Traefik, Envoy and Caddy's forward_auth ask about a request they hold
// (Engine.DecideForwarded, once per client request); and Backend gives
// the operator's dashboard (package dashboard) one Engine's facts. The
// Caddy module is the other front; all ask the same engine.
//
//	e, err := guard.New(guard.Config{})
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer e.Close()
//	log.Fatal(http.ListenAndServe(":8080", nethttp.Handler(e, mux)))
package nethttp

import (
	"net/http"

	"github.com/robotsguard/robotsguard/guard"
)

// ResponseFunc writes the answer to a request the Engine stopped. The
// default (Engine.Respond) writes the status, Retry-After for a throttle
// or a ban, and Verdict.Message as a short text/plain body marked
// no-store.
type ResponseFunc func(w http.ResponseWriter, r *http.Request, v guard.Verdict)

// Option configures Handler and Check.
type Option func(*options)

type options struct {
	clientIP    func(*http.Request) string
	clientIPSet bool // WithClientIP was given (Check has another default)
	trusted     func(*http.Request) bool
	deny        ResponseFunc
	throttle    ResponseFunc
}

// WithClientIP sets how the client's address is read from a request
// ("ip" or "ip:port"). Default: r.RemoteAddr. Behind a proxy, pass a
// function that trusts X-Forwarded-For only from the proxies you run:
// otherwise any client chooses its own Crawl-delay key and ban.
func WithClientIP(f func(*http.Request) string) Option {
	return func(o *options) {
		if f != nil {
			o.clientIP, o.clientIPSet = f, true
		}
	}
}

// WithDenyHandler replaces the default 403 answer. A replacement should
// keep the status, or a 4xx that bots take as a refusal.
func WithDenyHandler(f ResponseFunc) Option { return func(o *options) { o.deny = f } }

// WithThrottleHandler replaces the default 429 answer. A replacement
// should set Retry-After from Verdict.RetryAfterSeconds.
func WithThrottleHandler(f ResponseFunc) Option { return func(o *options) { o.throttle = f } }

// collect applies opts to the defaults: the connection's address, and
// e's own answers.
func collect(e *guard.Engine, opts []Option) options {
	o := options{clientIP: remoteAddr, trusted: loopbackPeer, deny: e.Respond, throttle: e.Respond}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func remoteAddr(r *http.Request) string { return r.RemoteAddr }

// Handler returns next wrapped by e: allowed requests reach next, denied
// ones get 403 and throttled ones 429 with Retry-After (or what
// WithDenyHandler and WithThrottleHandler write). next also serves the
// site's robots.txt to e's default source.
func Handler(e *guard.Engine, next http.Handler, opts ...Option) http.Handler {
	return &handler{e: e, next: next, o: collect(e, opts)}
}

// Middleware returns Handler as a middleware, for routers that chain them.
func Middleware(e *guard.Engine, opts ...Option) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler { return Handler(e, next, opts...) }
}

type handler struct {
	e    *guard.Engine
	next http.Handler
	o    options
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v := h.e.DecideHTTP(r, nil, h.o.clientIP(r), h.next)
	switch {
	case !v.Enforced():
		guard.SetLicenseHeaders(w.Header(), v) // a bot on licensed content: the Link to its terms
		h.next.ServeHTTP(w, r)
	case v.Action == guard.Throttle:
		h.o.throttle(w, r, v)
	default:
		h.o.deny(w, r, v)
	}
}

// TrapLink returns the trap link of r's client on r's site
// (Engine.TrapLinkFor), its address read as Handler reads it with the same
// options.
func TrapLink(e *guard.Engine, r *http.Request, opts ...Option) string {
	return e.TrapLinkFor(e.SiteOf(r), collect(e, opts).clientIP(r))
}
