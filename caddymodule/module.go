// Package caddymodule is the Caddy shell around the robotsguard engine: the
// http.handlers.robots_guard module and its Caddyfile directive
// robots_guard, the decision service http.handlers.robots_guard_check
// (robots_guard_check), the admin API's robots_guard endpoints and
// dashboard, Prometheus metrics and the "caddy robots" command. All decisions are made
// by guard.Engine; this package only translates between Caddy and it.
package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/traps"
)

func init() {
	caddy.RegisterModule(RobotsGuard{})
}

// RobotsGuard enforces each site's own robots.txt on bots: a bot gets 403
// Forbidden for a path its group may not fetch and 429 Too Many Requests with
// Retry-After when it comes faster than its group's Crawl-delay. Browsers
// pass untouched and /robots.txt is always served.
//
// By default the robots.txt of a site is read from the site itself, through
// this Caddy server (a virtual GET /robots.txt that passes the guard), so
// whatever serves the site — reverse_proxy, file_server, respond — is what
// gets enforced. Rules are judged on the request URI as the client sent it,
// before any rewrite, and the client address is Caddy's client_ip, which
// honours the server's trusted_proxies.
//
// Stopped requests become HTTP errors (caddyhttp.Error) when a
// handle_errors route of the server takes them, so they can be restyled
// there; otherwise the module answers itself with the status, Retry-After
// and a one-line text body (Caddy would answer an error no route takes
// with the status alone).
// The placeholders {http.robots_guard.group}, {http.robots_guard.rule} and
// {http.robots_guard.action} describe the decision for logs and
// handle_errors; with verify, {http.robots_guard.verification} (none,
// verified, spoofed or unverifiable) and {http.robots_guard.operator} too.
//
// Its configuration is guard.Config's, field for field, with the same
// JSON names and documentation; every duration in it, nested ones
// included, reads "90s", "1h30m", "1d" or integer nanoseconds.
//
// On a config reload, the robots.txt cache carries over as long as the
// module's configuration does not change, and every cached robots.txt is
// revalidated before the next bot request of its site. The Crawl-delay
// clocks (and a store's connections) carry over as long as max_keys,
// crawl_delay.tolerance and store do not change: handlers with the same
// three share one limiter, and its max_keys bound. Crawler verification's
// feeds and DNS cache carry over as long as the verify block does not
// change; the last good copy of each feed is kept in Caddy's storage
// unless verify's cache_dir names a directory.
type RobotsGuard struct {
	// The configuration of the engine, flattened into the module's JSON
	// (robots_txt, refresh, verify, store, traps, ...): each field and its
	// documentation are guard.Config's.
	guard.Config

	state      *state
	poolKey    string
	limiterKey *limiterKey
	bansKey    *banListKey
	// addressKeyed: something is keyed by, or checks, the client address
	// (the default Crawl-delay key, traps, ban_after, crawler
	// verification); proxyChecked: the
	// server's proxy setup was checked for it (checkForwarded).
	addressKeyed bool
	proxyChecked *atomic.Bool
	trapLinks    bool // per-client trap links: the trap_link placeholder is set
	// dashboards: the ways into the server's robots_guard_dashboard
	// handlers, read once per server (toDashboard).
	dashboards  *atomic.Pointer[dashboardRoutes]
	verifierKey string
	logger      *zap.Logger
	// checkService: this is robots_guard_check's engine, which serves no
	// site: the server's host names are the service's own, not sites.
	checkService bool
}

// CaddyModule returns the Caddy module information.
func (RobotsGuard) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.robots_guard",
		New: func() caddy.Module { return new(RobotsGuard) },
	}
}

// pool holds what survives config reloads, shared by the handlers and the
// admin API: one *state per distinct configuration (its key is the
// configuration's JSON), so that the robots.txt cache and its Engine
// carry over when the robots_guard block does not change, and one
// *sharedLimiter per limiter setting (its key a limiterKey), so that the
// Crawl-delay clocks carry over whatever else changes. Caddy provisions the
// new config before it cleans up the old one, so the counts never drop to
// zero in between.
var pool = caddy.NewUsagePool()

// state is what survives a reload: the Engine and the logger it writes to,
// which each new config points at its own log.
type state struct {
	enforcer *guard.Engine
	log      *swapCore
}

// Destruct stops the Engine's background work when the last config that
// uses it is unloaded.
func (s *state) Destruct() error { return s.enforcer.Close() }

// limiterKey identifies the settings a Crawl-delay limiter is built from:
// the store block's JSON too, so that a reload that keeps it keeps the
// store's connections.
type limiterKey struct {
	maxKeys   int
	tolerance float64
	store     string
}

// verifierKey identifies the settings a crawler verifier is built from (the
// verify block's JSON), so that its feeds and DNS cache survive reloads
// that keep them.
type verifierKey string

// sharedVerifier is a crawler verifier in the pool, with the log core each
// new config points at its own log.
type sharedVerifier struct {
	v   *identity.Verifier
	log *swapCore
}

// Destruct stops the verifier's feed refresh.
func (s *sharedVerifier) Destruct() error { return s.v.Close() }

// sharedLimiter is a Crawl-delay limiter in the pool, with the log core of
// a store limiter (each new config points it at its own log).
type sharedLimiter struct {
	l   limit.Limiter
	log *swapCore
}

// Destruct closes a store limiter's connections; the in-memory ones hold
// no background work.
func (s *sharedLimiter) Destruct() error {
	if c, ok := s.l.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Provision builds or adopts the Engine for this configuration and
// registers the metrics on this config's registry. A reload revalidates
// every cached robots.txt before the next bot request of its site: with the
// same configuration, the Engine is kept and its copies are marked; with
// a changed one, the new Engine starts from the old copies (same
// robots_txt source) and marks them. The Crawl-delay clocks are kept as
// long as crawl_delay.max_keys and crawl_delay.tolerance do not change.
func (g *RobotsGuard) Provision(ctx caddy.Context) error {
	g.logger = ctx.Logger()
	g.dashboards = new(atomic.Pointer[dashboardRoutes])
	cfg, err := g.Config.WithDefaults()
	if err != nil {
		return err
	}
	if names := configuredNames(ctx); len(names) > 0 && !g.checkService {
		cfg.RobotsTxt.SiteNames = append(slices.Clip(cfg.RobotsTxt.SiteNames), names...)
	}
	sl, err := g.provisionLimiter(cfg)
	if err != nil {
		return err
	}
	ver, err := g.provisionVerifier(ctx, cfg)
	if err != nil {
		return err
	}
	bans, err := g.provisionBans(cfg)
	if err != nil {
		return err
	}
	g.proxyChecked = new(atomic.Bool)
	g.addressKeyed = len(cfg.Traps.Paths) > 0 || cfg.Bans.After != nil || cfg.CrawlDelay.Key != limit.KeyGroup || cfg.Verifying()
	var secret []byte
	if g.trapLinks = len(cfg.Traps.Paths) > 0 && cfg.Traps.Links == traps.LinksClient; g.trapLinks && cfg.Traps.Secret == "" {
		if secret, err = trapSecret(ctx); err != nil {
			// Traps still work, with links of this process only: the
			// worst case is a refused link, never an innocent ban.
			g.logger.Warn("robots_guard: no trap link key from storage; using one of this process (links change at a restart and differ between instances)", zap.Error(err))
		}
	}
	key, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("robots_guard: %w", err)
	}
	// Engines of the previous config that read the same source; ranged
	// before LoadOrNew, which must not wait on the pool inside.
	var previous []*guard.Engine
	pool.Range(func(_, v any) bool {
		if st, ok := v.(*state); ok && st.enforcer.Config().RobotsTxt.Source == cfg.RobotsTxt.Source {
			previous = append(previous, st.enforcer)
		}
		return true
	})
	adopted := 0
	val, loaded, err := pool.LoadOrNew(string(key), func() (caddy.Destructor, error) {
		log := newSwapCore()
		opts := []guard.Option{
			guard.WithLogger(zap.New(log).Named("http.handlers.robots_guard")),
			guard.WithObserver(metricsObserver{}),
			guard.WithLimiter(sl.l),
			guard.WithVerifier(ver),
			guard.WithBans(bans),
		}
		if secret != nil {
			opts = append(opts, guard.WithTrapSecret(secret))
		}
		if st := storageOf(ctx); st != nil && len(cfg.Traps.Paths) > 0 {
			opts = append(opts, guard.WithTrapClocks(storageClocks{st: st, log: g.logger}))
		}
		if st := storageOf(ctx); st != nil {
			opts = append(opts, guard.WithHistory(storageHistory{st: st, log: g.logger}))
		}
		e, err := guard.New(cfg, opts...)
		if err != nil {
			return nil, err
		}
		for _, p := range previous {
			adopted += e.Adopt(p)
		}
		return &state{enforcer: e, log: log}, nil
	})
	if err != nil {
		return err
	}
	g.poolKey = string(key)
	g.state = val.(*state)
	g.state.log.set(g.logger.Core())
	if loaded {
		// The same configuration again (a reload, or a second site with
		// the same block): robots.txt may have been edited.
		g.state.enforcer.Invalidate("")
	}
	go refreshWhenActive(ctx, g.state.enforcer, loaded || adopted > 0)
	if reg := ctx.GetMetricsRegistry(); reg != nil {
		if err := registerMetrics(reg); err != nil {
			return fmt.Errorf("robots_guard: metrics: %w", err)
		}
		newGeneration(reg)
	}
	return nil
}

// provisionLimiter loads or makes the shared Crawl-delay limiter for cfg's
// limiter settings (crawl_delay.max_keys, crawl_delay.tolerance and the store block),
// and points a store limiter's log at this config's.
func (g *RobotsGuard) provisionLimiter(cfg guard.Config) (*sharedLimiter, error) {
	lk := limiterKey{maxKeys: cfg.CrawlDelay.MaxKeys, tolerance: *cfg.CrawlDelay.Tolerance}
	if cfg.Store != nil {
		b, err := json.Marshal(cfg.Store)
		if err != nil {
			return nil, fmt.Errorf("robots_guard: store: %w", err)
		}
		lk.store = string(b)
	}
	lv, _, err := pool.LoadOrNew(lk, func() (caddy.Destructor, error) {
		if cfg.Store == nil {
			l, err := guard.NewLimiter(cfg)
			if err != nil {
				return nil, err
			}
			return &sharedLimiter{l: l}, nil
		}
		log := newSwapCore()
		log.set(g.logger.Core()) // for the lines NewStoreLimiter writes
		r, err := guard.NewStoreLimiter(cfg,
			guard.WithLogger(zap.New(log).Named("http.handlers.robots_guard")),
			guard.WithObserver(metricsObserver{}))
		if err != nil {
			return nil, err
		}
		return &sharedLimiter{l: r, log: log}, nil
	})
	if err != nil {
		return nil, err
	}
	g.limiterKey = &lk
	sl := lv.(*sharedLimiter)
	if sl.log != nil {
		sl.log.set(g.logger.Core())
	}
	return sl, nil
}

// provisionVerifier loads or makes the shared crawler verifier for cfg's
// verify block (nil when it is off), keeping its feeds in Caddy's storage
// unless cache_dir says otherwise.
func (g *RobotsGuard) provisionVerifier(ctx caddy.Context, cfg guard.Config) (*identity.Verifier, error) {
	if !cfg.Verifying() {
		return nil, nil
	}
	vkey, err := json.Marshal(cfg.Verify)
	if err != nil {
		return nil, fmt.Errorf("robots_guard: verify: %w", err)
	}
	vv, _, err := pool.LoadOrNew(verifierKey(vkey), func() (caddy.Destructor, error) {
		log := newSwapCore()
		log.set(g.logger.Core())
		opts := []guard.Option{
			guard.WithLogger(zap.New(log).Named("http.handlers.robots_guard")),
			guard.WithObserver(metricsObserver{}),
		}
		if st := storageOf(ctx); cfg.Verify.CacheDir == "" && st != nil {
			opts = append(opts, guard.WithFeedStorage(st))
		}
		v, err := guard.NewVerifier(cfg, opts...)
		if err != nil {
			return nil, err
		}
		return &sharedVerifier{v: v, log: log}, nil
	})
	if err != nil {
		return nil, err
	}
	g.verifierKey = string(vkey)
	sv := vv.(*sharedVerifier)
	sv.log.set(g.logger.Core())
	return sv.v, nil
}

// refreshWhenActive, as soon as the configuration being provisioned (ctx)
// runs, fetches through its servers the robots.txt of every site written
// in it that e does not hold yet (Prefetch), and with revalidate every copy
// e holds again: a reload applies robots.txt edits right away, not at the
// next refresh.
// Until the fetch of a site ends, its last good copy stays in force, and a
// bot request that comes meanwhile waits for it (Invalidate), at most the
// fetch timeout. The configuration runs when its http app (registered in
// ctx before the handlers are provisioned) is the active one; it gives up
// when the configuration is unloaded first.
func refreshWhenActive(ctx caddy.Context, e *guard.Engine, revalidate bool) {
	mine, err := ctx.AppIfConfigured("http")
	if err != nil || ctx.Done() == nil {
		return // not inside a configuration Caddy loads (a test's context)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if active, err := caddy.ActiveContext().AppIfConfigured("http"); err == nil && active == mine {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	if revalidate {
		e.Revalidate(ctx, serverFor)
	}
	// The sites written in the configuration are fetched now, not at the
	// first bot: an unreachable, HTML or empty robots.txt is logged (WARN)
	// before any bot finds it, and /robots_guard/sites lists them.
	if app, ok := mine.(*caddyhttp.App); ok {
		e.Prefetch(ctx, servedSites(app, e), serverFor)
	}
}

// Validate checks the configuration; Provision has already applied the
// engine's own checks, so this only guards against use without Provision.
func (g *RobotsGuard) Validate() error {
	if g.state == nil {
		return errors.New("robots_guard: not provisioned")
	}
	return nil
}

// Cleanup releases this config's hold on the shared state and limiter. It
// may run twice (after a failed Provision and when the config is unloaded),
// so it forgets what it released.
func (g *RobotsGuard) Cleanup() error {
	var err error
	if g.poolKey != "" {
		_, err = pool.Delete(g.poolKey)
		g.poolKey = ""
	}
	if g.limiterKey != nil {
		_, err2 := pool.Delete(*g.limiterKey)
		g.limiterKey = nil
		err = errors.Join(err, err2)
	}
	if g.bansKey != nil {
		_, err2 := pool.Delete(*g.bansKey)
		g.bansKey = nil
		err = errors.Join(err, err2)
	}
	if g.verifierKey != "" {
		_, err2 := pool.Delete(verifierKey(g.verifierKey))
		g.verifierKey = ""
		err = errors.Join(err, err2)
	}
	return err
}

// varMark is the request variable in which robots_guard handlers leave a
// requestMark for the later ones of the same request.
const varMark = "robots_guard.seen"

// requestMark says what the robots_guard handlers a request has been
// through did with it.
type requestMark uint8

const (
	// markSpent: one admitted it under a Crawl-delay, spending its budget.
	markSpent requestMark = 1 << iota
	// markPlaceholders: one gave the replacer its placeholder values (a
	// later one sets its own, which come first).
	markPlaceholders
)

// ServeHTTP decides the request with the Engine and passes it on, or
// stops it.
func (g *RobotsGuard) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	ctx := r.Context()
	// Caddy's variables, found once (each look-up walks the context).
	vars, _ := ctx.Value(caddyhttp.VarsCtxKey).(map[string]any)
	mark, _ := vars[varMark].(requestMark)
	if mark&markSpent != 0 {
		// An earlier robots_guard of this request let it pass and spent
		// its Crawl-delay budget (handlers with the same limiter settings
		// share one limiter); judging it again would refuse it.
		return next.ServeHTTP(w, r)
	}
	// Rules are judged on the request as the client sent it (before any
	// rewrite), from Caddy's client_ip, which honours trusted_proxies.
	var orig *http.Request
	if o, ok := ctx.Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok {
		orig = &o
	}
	clientIP, _ := vars[caddyhttp.ClientIPVarKey].(string)
	if clientIP == "" {
		clientIP = r.RemoteAddr
	}
	var origin http.Handler
	srv, _ := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if toDashboard(g.dashboards, srv, r) {
		// The operator's way in: the dashboard is never refused (a ban of
		// the operator's own address would lock them out of lifting it),
		// so it is not judged, and nothing counts it as refused.
		return next.ServeHTTP(w, r)
	}
	if srv != nil {
		origin = srv // robots.txt is asked of the server that serves the site
		if g.proxyChecked != nil && !g.proxyChecked.Load() && !sameAddr(r.RemoteAddr, clientIP) {
			g.checkForwarded(srv, clientIP, r.RemoteAddr)
		}
	}
	v := g.state.enforcer.DecideHTTP(r, orig, clientIP, origin)
	if repl, ok := ctx.Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		g.placeholders(repl, &v, mark, clientIP, w.Header())
		mark |= markPlaceholders
	}
	if !v.Enforced() && v.Reason == guard.ReasonAllowed && v.CrawlDelay > 0 {
		mark |= markSpent
	}
	if vars != nil {
		vars[varMark] = mark // as caddyhttp.SetVar does
	}
	if !v.Enforced() {
		guard.SetLicenseHeaders(w.Header(), v) // a bot on licensed content: the Link to its terms
		return next.ServeHTTP(w, r)
	}
	return g.stop(w, r, srv, &v)
}

// placeholders gives repl the placeholder values of v: a browser's (no
// group, rule or operator) through a provider made once when this is the
// request's first guard, set one by one otherwise (set values come before
// providers, so the last guard wins).
func (g *RobotsGuard) placeholders(repl *caddy.Replacer, v *guard.Verdict, mark requestMark, clientIP string, h http.Header) {
	verify := g.state.enforcer.Verifier() != nil
	if p := fixedProvider(v, verify); p != nil && mark&markPlaceholders == 0 {
		repl.Map(p)
	} else {
		setPlaceholders(repl, v, verify)
	}
	if g.trapLinks {
		// Made only when a template or header reads it.
		repl.Set(phTrapLink, &trapLinkValue{g.state.enforcer, v.Site, clientIP, h})
	}
}

// stop answers a request that v stops: with the guard's own answer, or
// through the server's handle_errors routes when one takes its status.
func (g *RobotsGuard) stop(w http.ResponseWriter, r *http.Request, srv *caddyhttp.Server, v *guard.Verdict) error {
	var herr caddyhttp.HandlerError
	if srv != nil && srv.Errors != nil && len(srv.Errors.Routes) > 0 {
		// Built only here: caddyhttp.Error records a stack trace.
		herr = caddyhttp.Error(v.StatusCode(), errors.New(v.Message()))
	}
	if herr.StatusCode == 0 || !errorRouteTakes(srv, r, herr) {
		// No handle_errors route takes this status: answer with the
		// body too, which Caddy's default error answer (status only)
		// would drop (see errorRouteTakes).
		g.state.enforcer.Respond(w, r, *v)
		return nil
	}
	// handle_errors restyles the answer; these headers stay whatever its
	// routes write (a handler may still remove them on purpose).
	g.state.enforcer.SetAnswerHeaders(w.Header(), *v)
	return herr
}

// sameAddr reports whether peer ("ip:port") is clientIP's: the request
// was not forwarded, and checkForwarded has nothing to check (the common
// case, tested here so that it does not cost a call).
func sameAddr(peer, clientIP string) bool {
	return len(peer) > len(clientIP) && peer[len(clientIP)] == ':' && peer[:len(clientIP)] == clientIP
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*RobotsGuard)(nil)
	_ caddy.Validator             = (*RobotsGuard)(nil)
	_ caddy.CleanerUpper          = (*RobotsGuard)(nil)
	_ caddyhttp.MiddlewareHandler = (*RobotsGuard)(nil)
	_ caddy.Destructor            = (*state)(nil)
	_ caddy.Destructor            = (*sharedVerifier)(nil)
)
