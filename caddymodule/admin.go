package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/dashboard"
	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/report"
)

func init() {
	caddy.RegisterModule(AdminAPI{})
}

// AdminAPI is the admin.api.robots_guard module: endpoints on Caddy's admin
// API for the robots_guard handlers of the running configuration.
//
//	GET  /robots_guard/                      the dashboard: an HTML page of all of it, with a tester
//	GET  /robots_guard/sites                 the cached robots.txt of every site
//	POST /robots_guard/refresh[?site=]       fetch robots.txt again now (all sites, or one)
//	GET  /robots_guard/explain?site=&ua=&path=[&ip=]
//	                                         the verdict robots_guard would give now
//	GET  /robots_guard/report                who broke robots.txt: top clients, lines
//	GET  /robots_guard/bans                  the bans in force
//	DELETE /robots_guard/bans/<address>      lift a ban
//	GET  /robots_guard/feeds                 the crawler IP-range feeds of verify
//	POST /robots_guard/feeds/refresh         fetch every feed again now
//
// site is a host ("example.com", "example.com:8080") or a scheme and host
// ("https://example.com"); a bare host means http:// for explain and both
// schemes for refresh. Caddy loads admin modules itself; like every admin
// endpoint these are only as reachable as the admin listener (localhost by
// default).
type AdminAPI struct{}

// CaddyModule returns the Caddy module information.
func (AdminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.robots_guard",
		New: func() caddy.Module { return new(AdminAPI) },
	}
}

// Routes returns the module's admin routes.
func (a AdminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/robots_guard/", Handler: dashboardRoute(dashboard.Handler(caddyBackend{}, dashboard.Options{}))},
		{Pattern: "/robots_guard/sites", Handler: caddy.AdminHandlerFunc(a.handleSites)},
		{Pattern: "/robots_guard/history", Handler: caddy.AdminHandlerFunc(a.handleHistory)},
		{Pattern: "/robots_guard/refresh", Handler: caddy.AdminHandlerFunc(a.handleRefresh)},
		{Pattern: "/robots_guard/explain", Handler: caddy.AdminHandlerFunc(a.handleExplain)},
		{Pattern: "/robots_guard/feeds", Handler: caddy.AdminHandlerFunc(a.handleFeeds)},
		{Pattern: "/robots_guard/report", Handler: caddy.AdminHandlerFunc(a.handleReport)},
		{Pattern: "/robots_guard/bans", Handler: caddy.AdminHandlerFunc(a.handleBans)},
		{Pattern: "/robots_guard/bans/", Handler: caddy.AdminHandlerFunc(a.handleUnban)},
		{Pattern: "/robots_guard/feeds/refresh", Handler: caddy.AdminHandlerFunc(a.handleFeedsRefresh)},
	}
}

// dashboardRoute serves the operator's page (package dashboard) at
// exactly /robots_guard/; other paths under it that no endpoint serves are
// 404.
func dashboardRoute(h http.Handler) caddy.AdminHandler {
	return caddy.AdminHandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if r.URL.Path != "/robots_guard/" {
			return apiError(http.StatusNotFound, "no such endpoint: %s (the dashboard is at /robots_guard/)", r.URL.Path)
		}
		h.ServeHTTP(w, r)
		return nil
	})
}

// adminRefreshTimeout bounds one refresh call of the admin API.
const adminRefreshTimeout = 2 * time.Minute

// pooled returns the values of type T in the pool (the state of each loaded
// configuration), in a stable order: by their keys' text.
func pooled[T any]() []T {
	type kv struct {
		key string
		v   T
	}
	var all []kv
	pool.Range(func(k, v any) bool {
		if x, ok := v.(T); ok {
			all = append(all, kv{fmt.Sprint(k), x})
		}
		return true
	})
	slices.SortFunc(all, func(a, b kv) int { return strings.Compare(a.key, b.key) })
	out := make([]T, len(all))
	for i, x := range all {
		out[i] = x.v
	}
	return out
}

// enforcers returns the Engines of the loaded configurations.
func enforcers() []*guard.Engine {
	var out []*guard.Engine
	for _, st := range pooled[*state]() {
		out = append(out, st.enforcer)
	}
	return out
}

// verifiers returns the crawler verifiers of the loaded configurations.
func verifiers() []*identity.Verifier {
	var out []*identity.Verifier
	for _, sv := range pooled[*sharedVerifier]() {
		out = append(out, sv.v)
	}
	return out
}

// handleReport serves the violations report of every loaded configuration
// (sites served by several robots_guard blocks appear once per block).
func (AdminAPI) handleReport(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiError(http.StatusMethodNotAllowed, "method not allowed; use GET")
	}
	return writeJSON(w, mergedReport())
}

// mergedReport is the violations report of every loaded configuration
// (sites served by several robots_guard blocks appear once per block).
func mergedReport() report.Report {
	out := report.Report{Sites: []report.SiteReport{}}
	for i, e := range enforcers() {
		rep := e.Report()
		if i == 0 || rep.Since.Before(out.Since) {
			out.Since = rep.Since
		}
		out.Sites = append(out.Sites, rep.Sites...)
	}
	return out
}

// handleBans lists the bans in force (each shared ban list once).
func (AdminAPI) handleBans(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiError(http.StatusMethodNotAllowed, "method not allowed; use GET")
	}
	out := []guard.BanStatus{}
	seen := map[string]bool{}
	for _, e := range enforcers() {
		for _, b := range e.Bans(r.Context()) {
			if !seen[b.Client] {
				seen[b.Client] = true
				out = append(out, b)
			}
		}
	}
	return writeJSON(w, out)
}

// handleUnban lifts the ban of the address (or prefix) after
// /robots_guard/bans/, e.g. DELETE /robots_guard/bans/203.0.113.7.
func (AdminAPI) handleUnban(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodDelete {
		return apiError(http.StatusMethodNotAllowed, "method not allowed; use DELETE /robots_guard/bans/<address>")
	}
	client := strings.TrimPrefix(r.URL.Path, "/robots_guard/bans/")
	if client == "" {
		return apiError(http.StatusBadRequest, "unban: give the address, e.g. DELETE /robots_guard/bans/203.0.113.7")
	}
	found, enabled := false, false
	for _, e := range enforcers() {
		ok, err := e.Unban(r.Context(), client)
		if err != nil {
			if strings.Contains(err.Error(), "no bans") {
				continue
			}
			return apiError(http.StatusBadRequest, "%v", err)
		}
		enabled = true
		found = found || ok
	}
	if !enabled {
		return apiError(http.StatusNotFound, "unban: no robots_guard has traps or bans.after configured")
	}
	if !found {
		return apiError(http.StatusNotFound, "unban: %s is not banned", client)
	}
	return writeJSON(w, map[string]any{"unbanned": client})
}

// handleFeeds lists the feeds of every verifier: loaded or not, prefixes,
// when fetched, the last error. A feed that never loads keeps its
// operator's claims unverifiable; this is where to see it.
func (AdminAPI) handleFeeds(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiError(http.StatusMethodNotAllowed, "method not allowed; use GET")
	}
	out := []identity.FeedStatus{}
	for _, v := range verifiers() {
		out = append(out, v.Feeds()...)
	}
	return writeJSON(w, out)
}

// handleFeedsRefresh fetches every feed again now (conditionally).
func (AdminAPI) handleFeedsRefresh(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return apiError(http.StatusMethodNotAllowed, "method not allowed; use POST")
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminRefreshTimeout)
	defer cancel()
	out := []identity.FeedStatus{}
	for _, v := range verifiers() {
		v.RefreshFeeds(ctx) // failures are in each feed's last_error
		out = append(out, v.Feeds()...)
	}
	return writeJSON(w, map[string]any{"feeds": out})
}

// apiError is an admin API error whose message starts with
// "robots_guard: " once, whether or not the error it wraps (the Engine's)
// says so already.
func apiError(status int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	err := errors.New("robots_guard: " + strings.TrimPrefix(msg, "robots_guard: "))
	return caddy.APIError{HTTPStatus: status, Err: err, Message: err.Error()}
}

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (AdminAPI) handleSites(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiError(http.StatusMethodNotAllowed, "method not allowed; use GET")
	}
	out := []guard.SiteStatus{}
	seen := map[string]bool{}
	for _, e := range enforcers() {
		for _, s := range e.Sites() {
			if !seen[s.Site] {
				seen[s.Site] = true
				out = append(out, s)
			}
		}
	}
	return writeJSON(w, out)
}

func (AdminAPI) handleRefresh(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return apiError(http.StatusMethodNotAllowed, "method not allowed; use POST")
	}
	site := r.URL.Query().Get("site")
	ctx, cancel := context.WithTimeout(r.Context(), adminRefreshTimeout)
	defer cancel()
	out := []guard.SiteStatus{}
	for _, e := range enforcers() {
		out = append(out, e.Refresh(ctx, site, serverFor)...)
	}
	if site != "" && len(out) == 0 {
		return apiError(http.StatusNotFound, "site %q has no cached robots.txt (a site's robots.txt is fetched on its first request)", site)
	}
	return writeJSON(w, map[string]any{"refreshed": out})
}

func (AdminAPI) handleExplain(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiError(http.StatusMethodNotAllowed, "method not allowed; use GET")
	}
	q := r.URL.Query()
	site, path := q.Get("site"), q.Get("path")
	if site == "" {
		return apiError(http.StatusBadRequest, "explain: the site parameter is required, e.g. ?site=example.com&ua=GPTBot&path=/private/")
	}
	if _, ok := q["ua"]; !ok {
		return apiError(http.StatusBadRequest, "explain: the ua parameter is required (a User-Agent header or a product token; empty for none)")
	}
	if path == "" {
		path = "/"
	}
	if path[0] != '/' {
		return apiError(http.StatusBadRequest, "explain: path %q must start with '/'", path)
	}
	u, err := siteURL(site)
	if err != nil {
		return apiError(http.StatusBadRequest, "explain: site %q: %v", site, err)
	}
	e, err := enforcerFor(u, path, q.Get("ua"), q.Get("ip"))
	if err != nil {
		return err
	}
	req := guard.Request{
		Scheme:    u.Scheme,
		Host:      u.Host,
		Target:    path,
		UserAgent: q.Get("ua"),
		ClientIP:  q.Get("ip"),
		Origin:    serverFor(u.Scheme + "://" + u.Host),
	}
	if hs, ok := q["header"]; ok {
		// The request's other headers ("Accept-Language: en", repeated):
		// with them, the undeclared-bot rules apply as to a request.
		h := make(http.Header, len(hs))
		for _, s := range hs {
			if name, value, ok := strings.Cut(s, ":"); ok {
				h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
			}
		}
		req.Evidence = classify.EvidenceOf(h)
	}
	x, err := e.Explain(r.Context(), req)
	if err != nil {
		return apiError(http.StatusBadRequest, "explain: %v", err)
	}
	return writeJSON(w, x)
}

// enforcerFor returns the Engine of the robots_guard handler that a
// request for path on the site u (with that User-Agent and client address)
// reaches: the server that listens on its port, then its routes as they
// match the request; or an API error (404) that says why there is none.
func enforcerFor(u *url.URL, path, ua, ip string) (*guard.Engine, error) {
	if len(enforcers()) == 0 {
		return nil, apiError(http.StatusNotFound, "no robots_guard handler is loaded")
	}
	srv, _ := serverFor(u.Scheme + "://" + u.Host).(*caddyhttp.Server)
	if srv == nil {
		return nil, apiError(http.StatusNotFound, "explain: no server of the running configuration listens on the port of %s://%s", u.Scheme, u.Host)
	}
	probe, err := http.NewRequest(http.MethodGet, u.Scheme+"://"+u.Host+path, nil)
	if err != nil {
		return nil, apiError(http.StatusBadRequest, "explain: %v", err)
	}
	probe.Header.Set("User-Agent", ua)
	probe.RemoteAddr = net.JoinHostPort("127.0.0.1", "0")
	if ip != "" {
		probe.RemoteAddr = net.JoinHostPort(strings.Trim(ip, "[]"), "0")
	}
	probe = caddyhttp.PrepareRequest(probe, caddy.NewReplacer(), httptest.NewRecorder(), srv)
	g := guardFor(srv.Routes, probe, 0)
	if g == nil || g.state == nil {
		return nil, apiError(http.StatusNotFound, "explain: a request for %s://%s%s reaches no robots_guard handler (no route of the server that listens on that port leads to one)", u.Scheme, u.Host, path)
	}
	return g.state.enforcer, nil
}

// guardFor returns the robots_guard handler that req reaches through
// routes, as the server would run them: in order, every route whose
// matchers match, into subroutes, until a terminal route; nil for none.
func guardFor(routes caddyhttp.RouteList, req *http.Request, depth int) *RobotsGuard {
	if depth > 8 {
		return nil
	}
	for _, rt := range routes {
		if len(rt.MatcherSets) > 0 {
			if ok, err := rt.MatcherSets.AnyMatchWithError(req); err != nil || !ok {
				continue
			}
		}
		for _, h := range rt.Handlers {
			switch h := h.(type) {
			case *RobotsGuard:
				return h
			case *caddyhttp.Subroute:
				if g := guardFor(h.Routes, req, depth+1); g != nil {
					return g
				}
			}
		}
		if rt.Terminal {
			return nil
		}
	}
	return nil
}

// siteURL reads a site parameter: "host[:port]" or "scheme://host[:port]".
func siteURL(site string) (*url.URL, error) {
	if !strings.Contains(site, "://") {
		site = "http://" + site
	}
	u, err := url.Parse(strings.ToLower(site))
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, errors.New("want host[:port] or http(s)://host[:port]")
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// serverFor returns the server of the running Caddy configuration that
// listens on the site's port, the handler a robots.txt self-fetch of that
// site goes to, or nil when there is none.
func serverFor(site string) http.Handler {
	u, err := siteURL(site)
	if err != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil
	}
	appAny, err := caddy.ActiveContext().AppIfConfigured("http")
	if err != nil {
		return nil
	}
	app, ok := appAny.(*caddyhttp.App)
	if !ok {
		return nil
	}
	names := make([]string, 0, len(app.Servers))
	for name := range app.Servers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		srv := app.Servers[name]
		for _, l := range srv.Listen {
			na, err := caddy.ParseNetworkAddress(l)
			if err != nil || na.IsUnixNetwork() {
				continue
			}
			if uint(p) >= na.StartPort && uint(p) <= na.EndPort {
				return srv
			}
		}
	}
	return nil
}

// Interface guard.
var _ caddy.AdminRouter = AdminAPI{}
