package caddymodule

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/nethttp"
)

func init() {
	caddy.RegisterModule(RobotsGuardCheck{})
	httpcaddyfile.RegisterHandlerDirective("robots_guard_check", parseCheckCaddyfile)
	// A terminal handler, as respond is.
	httpcaddyfile.RegisterDirectiveOrder("robots_guard_check", httpcaddyfile.Before, "respond")
}

// RobotsGuardCheck is the decision service: the same engine as
// robots_guard, answering a proxy that asks whether a request it holds may
// pass (nginx auth_request, Traefik forwardAuth, Caddy forward_auth, Envoy
// ext_authz, HAProxy through the Lua action of docs/proxies.md) instead of
// wrapping a handler. It reads the request from the proxy's forwarded
// headers and answers 200 with X-Robots-Guard-* headers, or the guard's
// own 403, 429 (with Retry-After) or 400 with its body (see nethttp.Check,
// which it runs).
//
// Only questions from the server's trusted_proxies are answered (others
// get 403), and the client address is Caddy's client_ip, so the
// server's trusted_proxies decide whose forwarded address counts. The
// service does not serve the sites it protects, so their robots.txt comes
// from robots_txt origin (with site_names: no other host gets one), a URL
// or a file. Its configuration is robots_guard's, plus the check block.
type RobotsGuardCheck struct {
	RobotsGuard

	// Check is the decision service's own settings (path_prefix, for
	// Envoy's ext_authz).
	Check nethttp.CheckConfig `json:"check,omitzero"`

	handler http.Handler
	// warned is when an untrusted question was last logged (Unix ns);
	// unaddressed when one that names no client address was.
	warned, unaddressed *atomic.Int64
}

// CaddyModule returns the Caddy module information.
func (RobotsGuardCheck) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.robots_guard_check",
		New: func() caddy.Module { return new(RobotsGuardCheck) },
	}
}

// Provision builds or adopts the engine as robots_guard does, and the
// check handler on it.
func (c *RobotsGuardCheck) Provision(ctx caddy.Context) error {
	if c.RobotsTxt.Source == "" && c.RobotsTxt.Origin == "" {
		return nethttp.ErrSelfSource
	}
	c.checkService = true
	if err := c.RobotsGuard.Provision(ctx); err != nil {
		return err
	}
	if err := c.Check.Validate(); err != nil {
		return err
	}
	c.warned, c.unaddressed = new(atomic.Int64), new(atomic.Int64)
	h, err := nethttp.Check(c.state.enforcer, c.Check,
		nethttp.WithTrustedProxy(c.trusted),
		nethttp.WithClientIP(c.clientIP))
	if err != nil {
		return err
	}
	c.handler = h
	return nil
}

// trusted reports whether r comes from one of the server's
// trusted_proxies; an untrusted question is logged, at most once a minute.
func (c *RobotsGuardCheck) trusted(r *http.Request) bool {
	if ok, _ := caddyhttp.GetVar(r.Context(), caddyhttp.TrustedProxyVarKey).(bool); ok {
		return true
	}
	now := time.Now().UnixNano()
	if everyMinute(c.warned, now) {
		c.logger.Warn("robots_guard_check: question from an address that is not in the server's trusted_proxies refused (403); "+
			"list the proxy's address there (servers { trusted_proxies static <ranges> })",
			zap.String("remote_addr", r.RemoteAddr))
	}
	return false
}

// clientIP is Caddy's client_ip (trusted_proxies applied). The question
// comes from the proxy, so a client_ip that is the question's own address
// means the proxy forwarded none: the request is judged by the proxy's
// address, whose trap hit or ban would refuse everyone behind it, which a
// WARN says (once a minute). A forwarded one is checked as robots_guard's
// are: without trusted_proxies_strict, the client writes it.
func (c *RobotsGuardCheck) clientIP(r *http.Request) string {
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	switch {
	case ip == "" || sameAddr(r.RemoteAddr, ip):
		// A forwarded address that is the proxy's own is a client on
		// the proxy's machine (a test with curl there), not a proxy
		// that forwards none.
		if len(r.Header["X-Forwarded-For"]) == 0 && len(r.Header["X-Real-Ip"]) == 0 && everyMinute(c.unaddressed, time.Now().UnixNano()) {
			c.logger.Warn("robots_guard_check: a question from "+r.RemoteAddr+" carries no X-Forwarded-For or X-Real-IP: the request is judged by the proxy's own address, "+
				"so a trap hit or a ban would refuse every client behind it; make the proxy send the client's address (see docs/proxies.md)",
				zap.String("remote_addr", r.RemoteAddr), zap.String("user_agent", r.Header.Get("User-Agent")))
		}
		return r.RemoteAddr
	case !c.proxyChecked.Load():
		if srv, _ := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); srv != nil {
			c.checkForwarded(srv, ip, r.RemoteAddr)
		}
	}
	return ip
}

// everyMinute reports whether a minute has passed since *last (Unix ns),
// and if so sets it to now: at most one caller a minute gets true.
func everyMinute(last *atomic.Int64, now int64) bool {
	l := last.Load()
	return now-l > int64(time.Minute) && last.CompareAndSwap(l, now)
}

// ServeHTTP answers the proxy's question; it never calls next.
func (c *RobotsGuardCheck) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	c.handler.ServeHTTP(w, r)
	return nil
}

func parseCheckCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	c := new(RobotsGuardCheck)
	err := c.UnmarshalCaddyfile(h.Dispenser)
	return c, err
}

// UnmarshalCaddyfile reads the robots_guard_check directive: robots_guard's
// block, plus
//
//	path_prefix <prefix>
//	request_ids
//
// for Envoy's ext_authz (the check block's path_prefix), and for nginx's
// recipes, which send their $request_id (the check block's request_ids).
func (c *RobotsGuardCheck) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if d.NextArg() {
		return d.Errf("robots_guard_check takes no arguments (only a matcher and a block), got %q", d.Val())
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "path_prefix":
			if !d.NextArg() {
				return d.ArgErr()
			}
			c.Check.PathPrefix = d.Val()
			if d.NextArg() {
				return d.ArgErr()
			}
			continue
		case "request_ids":
			if d.NextArg() {
				return d.ArgErr()
			}
			c.Check.RequestIDs = true
			continue
		}
		if err := c.parseSetting(d); err != nil {
			return err
		}
	}
	if err := c.Config.Validate(); err != nil {
		return d.Err(err.Error())
	}
	if err := c.Check.Validate(); err != nil {
		return d.Err(err.Error())
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*RobotsGuardCheck)(nil)
	_ caddy.CleanerUpper          = (*RobotsGuardCheck)(nil)
	_ caddyhttp.MiddlewareHandler = (*RobotsGuardCheck)(nil)
	_ caddyfile.Unmarshaler       = (*RobotsGuardCheck)(nil)
)
