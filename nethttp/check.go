package nethttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
)

// CheckConfig is the decision service's own settings: the check block of
// the Caddy module's robots_guard_check, and Check's argument in Go. The
// zero value serves nginx, Traefik, Caddy's forward_auth and HAProxy.
type CheckConfig struct {
	// PathPrefix is the path_prefix of Envoy's ext_authz HTTP service
	// (e.g. "/check"): Envoy asks about a request by sending its method and
	// path, with this prefix in front, to the service, so a question
	// whose path starts with it and that carries no X-Forwarded-Uri or
	// X-Original-URI is about the rest of its path. Empty (the default)
	// means no Envoy question is expected.
	PathPrefix string `json:"path_prefix,omitempty"`

	// RequestIDs answers a question that nginx asks again for one client
	// request (after an internal redirect: an index file, try_files,
	// error_page) with the verdict of the first, so that the request
	// spends one Crawl-delay unit and records one row: such questions
	// carry the same X-Robots-Guard-Request-Id, which docs/proxies'
	// nginx recipes set to nginx's $request_id over any value a client
	// sent. Read in nginx's contract (X-Original-URI) only. Default off:
	// an nginx configuration that does not write the header passes a
	// client's own value on, which would let the client choose its id.
	RequestIDs bool `json:"request_ids,omitempty"`
}

// Validate checks c, naming the field: PathPrefix starts with '/' and
// does not end with one, as Envoy's path_prefix.
func (c CheckConfig) Validate() error {
	if p := c.PathPrefix; p != "" && (!strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/")) {
		return fmt.Errorf("robots_guard_check: check: path_prefix: must start with / and not end with one, as Envoy's path_prefix, got %q", p)
	}
	return nil
}

// Headers of the proxies' contracts (canonical keys), and the service's
// answer headers, which a proxy copies to the request or the response.
const (
	hdrForwardedURI    = "X-Forwarded-Uri"    // Traefik forwardAuth, Caddy forward_auth
	hdrForwardedMethod = "X-Forwarded-Method" // the same
	hdrOriginalURI     = "X-Original-Uri"     // nginx auth_request (X-Original-URI)
	hdrOriginalMethod  = "X-Original-Method"  // nginx
	hdrForwardedHost   = "X-Forwarded-Host"
	hdrForwardedProto  = "X-Forwarded-Proto"
	hdrForwardedPort   = "X-Forwarded-Port"

	// The answer's X-Robots-Guard-* headers; see Check.
	hdrAction       = "X-Robots-Guard-Action"
	hdrStatus       = "X-Robots-Guard-Status"
	hdrReason       = "X-Robots-Guard-Reason"
	hdrGroup        = "X-Robots-Guard-Group"
	hdrRule         = "X-Robots-Guard-Rule"
	hdrVerification = "X-Robots-Guard-Verification"
	hdrOperator     = "X-Robots-Guard-Operator"
	hdrTrapLink     = "X-Robots-Guard-Trap-Link"
	hdrMessage      = "X-Robots-Guard-Message"
)

// WithTrustedProxy sets which questions Check answers: those for which
// trusted reports true, the proxies that set the forwarded headers.
// Default: questions from a loopback address (a proxy on the same
// machine). Any other question gets 403, so that a client that reaches the
// service itself cannot name the request, host or address it is judged
// by. The Caddy module passes the server's trusted_proxies.
func WithTrustedProxy(trusted func(*http.Request) bool) Option {
	return func(o *options) {
		if trusted != nil {
			o.trusted = trusted
		}
	}
}

// ErrSelfSource is the error of a decision service (Check, the Caddy
// module's robots_guard_check) whose engine would ask each site itself
// for its robots.txt, the default: the service does not serve the sites
// it protects, so it could not.
var ErrSelfSource = errors.New("robots_guard_check: robots_txt: set origin (the address each site's /robots.txt is asked of, with site_names), " +
	"a URL or a file: the decision service does not serve the sites it protects")

// Check returns the decision service: the handler a proxy asks, before it
// serves a request, whether e allows it (nginx auth_request, Traefik
// forwardAuth, Caddy forward_auth, Envoy ext_authz, the HAProxy Lua action
// in docs/proxies.md). It reads the request the proxy holds from the
// question's headers — X-Forwarded-Uri and X-Forwarded-Method (Traefik,
// Caddy), X-Original-URI and X-Original-Method (nginx), or the question's
// own path after cfg.PathPrefix (Envoy); X-Forwarded-Host (else the
// question's Host), X-Forwarded-Proto and X-Forwarded-Port — and the
// client's User-Agent, fetch metadata and signature headers as the proxy
// passed them. The client's address is read as WithClientIP says; by
// default, the last X-Forwarded-For value, else X-Real-IP, else the
// question's own address.
//
// It answers 200 when the request may pass, and otherwise e's own 403,
// 429 with Retry-After, 400 for unreadable Web Bot Auth signature
// headers, or, for a bot on content a licence of the site's robots.txt
// covers (RSL 1.0, docs/licensing.md), 401 (402 where the licence asks
// payment) without a valid licence token, 503 when the token cannot be
// checked now and 403 for a use no licence of the content grants, with its one-line body (or what WithDenyHandler and
// WithThrottleHandler write). An answer about licensed content carries
// the Link to the licence's RSL document, the yes as much as the
// refusal, and a refusal for want of a token the WWW-Authenticate:
// License challenge (guard.SetLicenseHeaders), for the proxy to pass to
// the client. Every answer carries X-Robots-Guard-Action
// (allow, deny, throttle, dry_run_deny, dry_run_throttle),
// X-Robots-Guard-Status (the status the client must get) and
// X-Robots-Guard-Reason; a bot's answer X-Robots-Guard-Group,
// X-Robots-Guard-Rule (the deciding line) and, with verification,
// X-Robots-Guard-Verification and X-Robots-Guard-Operator; a request that
// is stopped (or would be, in dry-run mode) X-Robots-Guard-Message, the
// body's line, for proxies that cannot pass a body on; with per-client
// trap links, an allowed request's answer X-Robots-Guard-Trap-Link, for
// the proxy to pass to the upstream that renders pages (not for a
// browser's subresources: rendersPage). nginx treats any
// status but 2xx, 401 and 403 as an error, so a question in its contract
// (X-Original-URI) is answered 403 for a throttle too, with
// X-Robots-Guard-Status 429 and Retry-After, which the recipe turns back
// into the 429 the client must see, and so for a 400, 402 or 503. A 401
// goes to nginx as it is: nginx passes it to the client with its
// WWW-Authenticate.
//
// A question it cannot place is never allowed: one from an untrusted
// address gets 403; one without a forwarded target, with a target that
// is not in origin form ("/path?query"), with both X-Forwarded-Uri and
// X-Original-URI (one of them the client's, passed on by the proxy), or
// with a forwarded header other than X-Forwarded-For sent twice, or with a
// Host that is not one plain host name (a list, a trailing dot), 400 (in
// nginx's contract 403 with X-Robots-Guard-Status 400). A header's value
// is taken whole: a comma in a target is part of it.
//
// One client request is judged once: with cfg.RequestIDs, in nginx's
// contract, a question that carries the X-Robots-Guard-Request-Id of an
// earlier one about the same request (nginx's $request_id, which its
// internal redirects keep) gets the earlier bot's verdict again, spending
// no second Crawl-delay unit and recording no second row (at most 10
// times, for a minute).
//
// Check refuses, with ErrSelfSource, an engine whose robots.txt source is
// the default (the site itself, which the service does not serve): set
// robots_txt origin (with site_names), a URL, a file or guard.WithSource.
// It refuses a cfg that fails Validate with Validate's error.
func Check(e *guard.Engine, cfg CheckConfig, opts ...Option) (http.Handler, error) {
	if e.SelfSourced() {
		return nil, ErrSelfSource
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := collect(e, opts)
	if !o.clientIPSet {
		o.clientIP = forwardedFor
	}
	return &checker{e: e, cfg: cfg, o: o, repeats: newRepeats()}, nil
}

type checker struct {
	e       *guard.Engine
	cfg     CheckConfig
	o       options
	repeats *repeats // nginx's questions asked again for one request
}

func (c *checker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.o.trusted(r) {
		refuse(w, http.StatusForbidden, "robots_guard: check: this question comes from "+r.RemoteAddr+
			", which is not a proxy this service trusts: only trusted proxies may name the request to judge")
		return
	}
	f, nginx, msg := readForwarded(r, c.cfg.PathPrefix)
	if msg != "" {
		if nginx {
			// nginx's auth_request takes 403, not 400, for a refusal;
			// the recipe answers X-Robots-Guard-Status.
			w = &statusAs{ResponseWriter: w, from: http.StatusBadRequest, to: http.StatusForbidden}
		}
		refuse(w, http.StatusBadRequest, "robots_guard: check: "+msg)
		return
	}
	clientIP := c.o.clientIP(r)
	v := c.decide(r, &f, clientIP, nginx)
	h := w.Header()
	h[hdrAction] = actionValues[v.ActionName()]
	h[hdrReason] = reasonValues(v.Reason)
	if v.Bot {
		setBotHeaders(h, &v, c.e.Verifier() != nil)
	}
	if v.Action != guard.Allow {
		h[hdrMessage] = []string{headerSafe(v.Message())}
	}
	// A bot on licensed content (RSL): the Link to the licence's terms on
	// every answer, for the proxy to pass to the client with the site's,
	// and on a refusal for want of a token the WWW-Authenticate: License
	// challenge. Respond sets them too: they are set once.
	guard.SetLicenseHeaders(h, v)
	switch {
	case !v.Enforced():
		h[hdrStatus] = statusOK
		if rendersPage(r.Header) {
			if link := c.e.TrapLinkFor(v.Site, clientIP); link != "" {
				h[hdrTrapLink] = []string{link}
			}
		}
		w.WriteHeader(http.StatusOK)
	case v.Action == guard.Throttle:
		h[hdrStatus] = statusThrottle
		if nginx {
			w = &statusAs{ResponseWriter: w, from: http.StatusTooManyRequests, to: http.StatusForbidden}
		}
		c.o.throttle(w, r, v)
	default:
		// 403; 401 and 402 for want of a licence token, 503 when it
		// cannot be checked; 400 for unreadable signature headers of a
		// signing agent's claim. nginx takes only 401 and 403 for a
		// refusal (anything else is its own 500), so it gets 403 with
		// X-Robots-Guard-Status 400, 402 or 503, which the recipe turns
		// back into that status.
		status := v.StatusCode()
		h[hdrStatus] = statusValues(status)
		if nginx && status != http.StatusForbidden && status != http.StatusUnauthorized {
			w = &statusAs{ResponseWriter: w, from: status, to: http.StatusForbidden}
		}
		c.o.deny(w, r, v)
	}
}

// decide judges the request f with the engine, once per client request:
// a question nginx asks again under the same request id (see repeats)
// gets the verdict of the first.
func (c *checker) decide(r *http.Request, f *guard.Forwarded, clientIP string, nginx bool) guard.Verdict {
	id := ""
	if nginx && c.cfg.RequestIDs {
		id = requestID(r.Header)
	}
	if id == "" {
		return c.e.DecideForwarded(r, f, clientIP)
	}
	ua := ""
	if v := r.Header["User-Agent"]; len(v) > 0 {
		ua = v[0]
	}
	request := c.repeats.hash(f, clientIP, ua)
	if v, ok := c.repeats.lookup(id, request); ok {
		return v
	}
	v := c.e.DecideForwarded(r, f, clientIP)
	c.repeats.keep(id, request, v)
	return v
}

// readForwarded reads the request a question is about from the proxy's
// headers, and reports whether the question is in nginx's contract; msg
// says why it cannot, "" when it can. Each header is one value, taken
// whole: a comma is part of a target (/a?b=,c), never a list separator,
// and a header sent twice is refused.
func readForwarded(r *http.Request, prefix string) (f guard.Forwarded, nginx bool, msg string) {
	h := r.Header
	twice := "" // a header read here that was sent more than once
	one := func(key string) string {
		v := h[key]
		if len(v) == 0 {
			return ""
		}
		if len(v) > 1 {
			twice = key
		}
		return strings.TrimSpace(v[0])
	}
	switch fwd, orig := len(h[hdrForwardedURI]) > 0, len(h[hdrOriginalURI]) > 0; {
	case fwd && orig:
		// Each proxy writes one of them and passes the client's other
		// headers on: the second is the client's, and which one is the
		// proxy's cannot be told.
		return f, false, "the question carries both X-Forwarded-Uri and X-Original-URI: the proxy must write one and " +
			"remove the other, which a client may have sent (see docs/proxies.md)"
	case fwd:
		f.Target, f.Method = one(hdrForwardedURI), one(hdrForwardedMethod)
	case orig:
		f.Target, f.Method, nginx = one(hdrOriginalURI), one(hdrOriginalMethod), true
	case prefix != "" && strings.HasPrefix(questionURI(r), prefix):
		f.Target = questionURI(r)[len(prefix):]
	default:
		return f, false, "the question names no request: send X-Forwarded-Uri (Traefik, Caddy forward_auth), " +
			"X-Original-URI (nginx) or, for Envoy, set check { path_prefix } to ext_authz's path_prefix"
	}
	if f.Method == "" {
		f.Method = r.Method
	}
	if f.Host = one(hdrForwardedHost); f.Host == "" {
		f.Host = r.Host
	}
	proto, port := one(hdrForwardedProto), one(hdrForwardedPort)
	switch {
	case twice != "":
		return f, nginx, "the question carries " + twice + " twice: the proxy must write it once, replacing the client's"
	case !originForm(f.Target):
		return f, nginx, "the forwarded target " + strconv.Quote(f.Target[:min(len(f.Target), 200)]) + " is not in origin form (/path?query)"
	case !plainHost(f.Host):
		return f, nginx, "the forwarded Host " + strconv.Quote(f.Host[:min(len(f.Host), 200)]) + " is not one host name: " +
			"a list, a trailing dot, an empty label or a character no host name has, which the proxy and the site may read differently"
	case proto == "" || strings.EqualFold(proto, "http"):
		f.Scheme = "http"
	case strings.EqualFold(proto, "https"):
		f.Scheme = "https"
	default:
		return f, nginx, "X-Forwarded-Proto " + strconv.Quote(proto[:min(len(proto), 20)]) + " is neither http nor https"
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return f, nginx, "X-Forwarded-Port " + strconv.Quote(port[:min(len(port), 20)]) + " is not a port"
		}
		f.Port = n
	}
	return f, nginx, ""
}

// plainHost reports whether h, a Host header, is one host name or IP
// literal with an optional port, spelled as every server reads it alike:
// letters, digits, '-', '_' and '.' between non-empty labels (no trailing
// dot, which nginx drops and Caddy keeps), or an IPv6 literal in
// brackets; then ":" and digits. A list ("a,b", which some proxies read
// as its last value and sites as a whole), spaces and anything else are
// refused, so that the site the guard judges is the site that is served.
func plainHost(h string) bool {
	name := h
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		name = h[:i]
		port := h[i+1:]
		if port == "" || len(port) > 5 {
			return false
		}
		for j := 0; j < len(port); j++ {
			if port[j] < '0' || port[j] > '9' {
				return false
			}
		}
	}
	if strings.HasPrefix(name, "[") {
		if len(name) < 3 || name[len(name)-1] != ']' {
			return false
		}
		for j := 1; j < len(name)-1; j++ {
			if c := name[j]; !(c == ':' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		return true
	}
	label := 0 // the length of the label so far
	for j := 0; j < len(name); j++ {
		switch c := name[j]; {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			label++
		default:
			return false
		}
	}
	return label > 0
}

// questionURI is the question's own request-target in origin form, as
// sent when it is (Envoy's, after its path_prefix, is the target judged).
func questionURI(r *http.Request) string {
	if strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// originForm reports whether t is an origin-form request-target: a path
// that starts with "/", then visible ASCII only.
func originForm(t string) bool {
	if t == "" || t[0] != '/' {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// headerLast returns the last value of the canonical header key, after its
// last comma, trimmed: the one the nearest proxy wrote to a list that
// proxies append to (X-Forwarded-For only).
func headerLast(h http.Header, key string) string {
	v := h[key]
	if len(v) == 0 {
		return ""
	}
	s := v[len(v)-1]
	if i := strings.LastIndexByte(s, ','); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// forwardedFor is Check's default client address: the last
// X-Forwarded-For value (the address the trusted proxy saw), else
// X-Real-IP, else the question's own address.
func forwardedFor(r *http.Request) string {
	if ip := headerLast(r.Header, "X-Forwarded-For"); ip != "" {
		return ip
	}
	if ip := headerLast(r.Header, "X-Real-Ip"); ip != "" {
		return ip
	}
	return r.RemoteAddr
}

// loopbackPeer is the default of WithTrustedProxy.
func loopbackPeer(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// setBotHeaders adds the group, the deciding rule and the verification of
// a bot's verdict.
func setBotHeaders(h http.Header, v *guard.Verdict, verify bool) {
	if v.Group != "" {
		h[hdrGroup] = []string{headerSafe(v.Group)}
	}
	if v.Rule != nil {
		h[hdrRule] = []string{"line " + strconv.Itoa(v.Rule.Line) + ": " + headerSafe(v.Rule.String())}
	}
	if verify {
		h[hdrVerification] = verificationValues(v.Verification)
		if v.Operator != "" {
			h[hdrOperator] = []string{headerSafe(v.Operator)}
		}
	}
}

// headerSafe returns s when it is visible ASCII and spaces, and its
// quoted ASCII form otherwise (a robots.txt line may hold any byte).
func headerSafe(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c >= 0x7f {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}

// refuse answers a question the service cannot place.
func refuse(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["Cache-Control"] = []string{"no-store"}
	h[hdrStatus] = []string{strconv.Itoa(status)}
	h[hdrMessage] = []string{headerSafe(msg)}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// statusAs writes status to instead of from (nginx's 403 for a 429).
type statusAs struct {
	http.ResponseWriter
	from, to int
}

func (s *statusAs) WriteHeader(code int) {
	if code == s.from {
		code = s.to
	}
	s.ResponseWriter.WriteHeader(code)
}

// The answer's header values of a fixed set, made once so that a
// browser's answer allocates nothing. They are shared: nothing may change
// them in place.
var (
	statusOK          = []string{"200"}
	statusDeny        = []string{"403"}
	statusThrottle    = []string{"429"}
	statusBadRequest  = []string{"400"}
	statusLicense     = []string{"401"}
	statusPayment     = []string{"402"}
	statusUnavailable = []string{"503"}
	actionValues      = map[string][]string{
		"allow": {"allow"}, "deny": {"deny"}, "throttle": {"throttle"},
		"dry_run_deny": {"dry_run_deny"}, "dry_run_throttle": {"dry_run_throttle"},
	}
	reasonTable       = valueTable[guard.Reason](32)
	verificationTable = valueTable[identity.Verdict](8)
)

// statusValues returns the X-Robots-Guard-Status value of a refusal's
// status.
func statusValues(status int) []string {
	switch status {
	case http.StatusForbidden:
		return statusDeny
	case http.StatusBadRequest:
		return statusBadRequest
	case http.StatusUnauthorized:
		return statusLicense
	case http.StatusPaymentRequired:
		return statusPayment
	case http.StatusServiceUnavailable:
		return statusUnavailable
	}
	return []string{strconv.Itoa(status)}
}

// valueTable makes the header values of the first n values of an enum.
func valueTable[T interface {
	~uint8
	String() string
}](n int) [][]string {
	t := make([][]string, n)
	for i := range t {
		t[i] = []string{T(i).String()}
	}
	return t
}

// reasonValues returns the header value of r.
func reasonValues(r guard.Reason) []string { return lookupValue(reasonTable, r) }

// verificationValues returns the header value of a verification verdict.
func verificationValues(v identity.Verdict) []string { return lookupValue(verificationTable, v) }

// lookupValue returns the made value of v, or a new one beyond the table.
func lookupValue[T interface {
	~uint8
	String() string
}](t [][]string, v T) []string {
	if int(v) < len(t) {
		return t[v]
	}
	return []string{v.String()}
}

// rendersPage reports whether the request the question is about may get a
// page that shows a trap link: one whose Sec-Fetch-Dest is absent (bots,
// older clients) or a document or frame. A browser's images, scripts and
// styles, most of its requests, get no link: it would be computed for
// nothing (an HMAC and the header's strings, on the browser path).
func rendersPage(h http.Header) bool {
	switch dest := headerLast(h, "Sec-Fetch-Dest"); dest {
	case "", "document", "iframe", "frame", "embed", "object":
		return true
	}
	return false
}
