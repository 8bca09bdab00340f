package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/robotsguard/robotsguard/dashboard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/nethttp"
	"github.com/robotsguard/robotsguard/report"
)

func init() {
	caddy.RegisterModule(Dashboard{})
	httpcaddyfile.RegisterHandlerDirective("robots_guard_dashboard", parseDashboardCaddyfile)
	// After basic_auth and forward_auth, which guard it, like metrics.
	httpcaddyfile.RegisterDirectiveOrder("robots_guard_dashboard", httpcaddyfile.After, "metrics")
}

// Dashboard is the http.handlers.robots_guard_dashboard module: the
// operator's page of every robots_guard handler of the running
// configuration (package dashboard), for a site route that only operators
// reach, behind basic_auth or forward_auth, as the metrics handler is
// mounted. The admin API serves the same page at /robots_guard/.
//
//	robots_guard_dashboard [<matcher>] {
//	    read_only        # no Unban buttons; POST refused
//	    title <text>     # the page's title; default "robots_guard"
//	}
//
// It answers every request it gets (it does not call the next handler):
// GET serves the page at whatever path it is mounted on, POST lifts a ban
// (same-origin requests only).
type Dashboard struct {
	// ReadOnly hides the Unban buttons and refuses POST.
	ReadOnly bool `json:"read_only,omitempty"`
	// Title names the page. Default "robots_guard".
	Title string `json:"title,omitempty"`

	h http.Handler
}

// CaddyModule returns the Caddy module information.
func (Dashboard) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.robots_guard_dashboard",
		New: func() caddy.Module { return new(Dashboard) },
	}
}

// Provision builds the page's handler.
func (d *Dashboard) Provision(caddy.Context) error {
	d.h = dashboard.Handler(caddyBackend{}, dashboard.Options{Title: d.Title, ReadOnly: d.ReadOnly})
	return nil
}

// ServeHTTP serves the dashboard.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	d.h.ServeHTTP(w, r)
	return nil
}

// UnmarshalCaddyfile reads the robots_guard_dashboard directive.
func (d *Dashboard) UnmarshalCaddyfile(dd *caddyfile.Dispenser) error {
	dd.Next() // the directive's name
	if dd.NextArg() {
		return dd.ArgErr()
	}
	for dd.NextBlock(0) {
		switch dd.Val() {
		case "read_only":
			if dd.NextArg() {
				return dd.ArgErr()
			}
			d.ReadOnly = true
		case "title":
			if !dd.NextArg() {
				return dd.ArgErr()
			}
			d.Title = dd.Val()
			if dd.NextArg() {
				return dd.Errf("title: one argument; quote a title with spaces")
			}
		default:
			return dd.Errf("robots_guard_dashboard: unknown subdirective %q (want read_only or title)", dd.Val())
		}
	}
	return nil
}

func parseDashboardCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	d := new(Dashboard)
	err := d.UnmarshalCaddyfile(h.Dispenser)
	return d, err
}

// caddyBackend is the dashboard's view of every robots_guard handler of
// the running configuration: each site once, each ban once, the tester
// asking the handler a request for that site reaches (as explain does).
type caddyBackend struct{}

func (caddyBackend) Sites(ctx context.Context) []dashboard.Site {
	var out []dashboard.Site
	seen := map[string]bool{}
	for _, e := range enforcers() {
		for _, s := range nethttp.Backend(e, serverFor).Sites(ctx) {
			if !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func (caddyBackend) Report() report.Report { return mergedReport() }

func (caddyBackend) Bans(ctx context.Context) []dashboard.Ban {
	var out []dashboard.Ban
	seen := map[string]bool{}
	for _, e := range enforcers() {
		for _, b := range nethttp.Backend(e, serverFor).Bans(ctx) {
			if !seen[b.Client] {
				seen[b.Client] = true
				out = append(out, b)
			}
		}
	}
	return out
}

func (caddyBackend) Unban(ctx context.Context, client string) (bool, error) {
	found := false
	for _, e := range enforcers() {
		ok, err := nethttp.Backend(e, serverFor).Unban(ctx, client)
		if err != nil {
			return found, err
		}
		found = found || ok
	}
	return found, nil
}

func (caddyBackend) Feeds() []identity.FeedStatus {
	var out []identity.FeedStatus
	for _, v := range verifiers() {
		out = append(out, v.Feeds()...)
	}
	return out
}

func (caddyBackend) Explain(ctx context.Context, q dashboard.Query) (dashboard.Verdict, error) {
	req, err := nethttp.DashboardRequest(q)
	if err != nil {
		return dashboard.Verdict{}, err
	}
	u, err := siteURL(req.Scheme + "://" + req.Host)
	if err != nil {
		return dashboard.Verdict{}, err
	}
	e, err := enforcerFor(u, req.Target, req.UserAgent, req.ClientIP)
	if err != nil {
		if ae, ok := err.(caddy.APIError); ok {
			return dashboard.Verdict{}, errors.New(strings.TrimPrefix(ae.Message, "robots_guard: "))
		}
		return dashboard.Verdict{}, err
	}
	return nethttp.Backend(e, serverFor).Explain(ctx, q)
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Dashboard)(nil)
	_ caddyhttp.MiddlewareHandler = (*Dashboard)(nil)
	_ caddyfile.Unmarshaler       = (*Dashboard)(nil)
)
