package middleware

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/logsample"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/report"
	"github.com/robotsguard/robotsguard/sites"
)

// Log sampling of denial and throttle lines: per second, per message and
// per P (see internal/logsample), the first logSampleFirst lines are written, then
// one in logSampleThereafter.
const (
	logSampleTick       = time.Second
	logSampleFirst      = 10
	logSampleThereafter = 100
)

// Enforcer applies each site's robots.txt to the bots that visit it. It is
// safe for concurrent use. Build it with New; Decide is the decision alone,
// Handler the net/http front end.
type Enforcer struct {
	cfg        Config
	now        func() time.Time
	clientIP   func(*http.Request) string
	sites      *sites.Cache
	classes    *classifier
	limits     limit.Limiter
	obs        Observer
	log        *zap.Logger // decision lines, sampled
	deny       ResponseFunc
	throttle   ResponseFunc
	client     *http.Client
	byGroup    bool
	allowUnrch bool
	verifier   *identity.Verifier // nil when verification is off
	ownVerify  bool               // New built verifier; Close closes it
	ownLimits  io.Closer          // the store limiter New built; Close closes it
	denySpoof  bool
	starOnDNS  bool
	acceptSig  bool           // verify.web_bot_auth.accept_signature
	traps      *trapSet       // nil: none
	bans       limit.Bans     // nil when neither traps nor ban_after is set
	bansActive func() bool    // whether any ban may be held
	ownBans    io.Closer      // the shared ban list New built; Close closes it
	banAfter   *denialCounter // nil: off
	report     *report.Recorder

	bufs sync.Pool // *respBuf for response bodies and decoded views

	// Header values shared by every stopped request; never modified.
	hdrText, hdrNoStore, hdrNosniff []string
}

// New validates cfg, applies its defaults and returns an Enforcer. An invalid
// field yields an error that names it, e.g.
// "robots_guard: refresh: must be at most 24h, got 48h0m0s".
func New(cfg Config, opts ...Option) (_ *Enforcer, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	o := collect(opts)
	injected := o.now
	if o.now == nil {
		o.now = time.Now
	}
	ver, own := o.verifier, false
	if cfg.Verify == nil {
		ver = nil
	} else if ver == nil {
		if ver, err = newVerifier(cfg, o); err != nil {
			return nil, err
		}
		own = true
		defer func() {
			if err != nil {
				ver.Close() // New fails after all: stop its feed refresh
			}
		}()
	}
	e := &Enforcer{
		cfg:        cfg,
		now:        o.now,
		clientIP:   o.clientIP,
		classes:    newClassifier(cfg, ver),
		verifier:   ver,
		ownVerify:  own,
		denySpoof:  cfg.Verify != nil && cfg.Verify.OnSpoofed == SpoofedDeny,
		starOnDNS:  cfg.Verify != nil && cfg.Verify.OnDNSError == DNSErrorStar,
		acceptSig:  cfg.Verify != nil && cfg.Verify.WebBotAuth != nil && cfg.Verify.WebBotAuth.AcceptSignature,
		limits:     o.limiter,
		obs:        o.observer,
		deny:       o.deny,
		throttle:   o.throttle,
		byGroup:    cfg.CrawlDelayKey == KeyGroup,
		allowUnrch: cfg.OnUnreachable == UnreachableAllow,
		hdrText:    []string{"text/plain; charset=utf-8"},
		hdrNoStore: []string{"no-store"},
		hdrNosniff: []string{"nosniff"},
	}
	if e.limits == nil {
		if cfg.Store == nil {
			e.limits = NewLimiter(cfg)
		} else {
			var r *limit.Redis
			if r, err = newStoreLimiter(cfg, o); err != nil {
				return nil, err
			}
			e.limits, e.ownLimits = r, r
			defer func() {
				if err != nil {
					r.Close()
				}
			}()
		}
	}
	e.traps = newTrapSet(cfg.Traps)
	if cfg.BanAfter != nil {
		e.banAfter = &denialCounter{m: make(map[limit.Client]denials), max: cfg.MaxKeys, window: int64(cfg.BanAfter.Window), n: cfg.BanAfter.Denials}
	}
	e.bansActive = func() bool { return true }
	if e.traps != nil || e.banAfter != nil {
		e.bans = o.bans
		if e.bans == nil {
			if r, ok := e.limits.(*limit.Redis); ok {
				rb := r.NewBans(cfg.MaxBans)
				e.bans, e.ownBans = rb, rb
			} else {
				e.bans = limit.NewMemoryBans(cfg.MaxBans)
			}
		}
	}
	if a, ok := e.bans.(interface{ Active() bool }); ok {
		e.bansActive = a.Active // skips the address parse while no ban exists
	}
	e.report = report.New(cfg.IPv4Prefix, cfg.IPv6Prefix, e.now)
	e.bufs.New = func() any { return &respBuf{b: make([]byte, 0, 128)} }
	if e.deny == nil {
		e.deny = e.writeVerdict
	}
	if e.throttle == nil {
		e.throttle = e.writeVerdict
	}
	e.log = o.logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return logsample.New(c, logSampleTick, logSampleFirst, logSampleThereafter)
	}))
	// Every line goes through the sampler, the robots.txt state lines too:
	// a flood of new Host names cannot flood the log.
	e.client = sites.NewHTTPClient(o.transport, time.Duration(cfg.FetchTimeout))
	src := o.source
	if src == nil {
		if src, err = newSource(cfg.RobotsTxt, e.client); err != nil {
			return nil, err
		}
	}
	sc := sites.Config{
		Source:            src,
		MaxSites:          cfg.MaxSites,
		MaxBytes:          cfg.MaxRobotsBytes,
		Refresh:           time.Duration(cfg.Refresh),
		Timeout:           time.Duration(cfg.FetchTimeout),
		NewSitesPerSecond: float64(cfg.NewSitesPerSecond),
		Now:               injected,
		Logger:            e.log,
		Observer:          o.observer,
		AllowUnreachable:  e.allowUnrch,
	}
	if e.traps != nil {
		sc.OnRules = e.checkTraps
	}
	e.sites = sites.New(sc)
	return e, nil
}

// Middleware returns the net/http middleware of a new Enforcer: protecting a
// handler takes three lines.
//
//	guard, err := middleware.Middleware(middleware.Config{})
//	if err != nil { ... }
//	http.ListenAndServe(":8080", guard(mux))
func Middleware(cfg Config, opts ...Option) (func(http.Handler) http.Handler, error) {
	e, err := New(cfg, opts...)
	if err != nil {
		return nil, err
	}
	return e.Handler, nil
}

// Config returns the configuration in force, defaults applied.
func (e *Enforcer) Config() Config { return e.cfg }

// Close releases idle connections of the robots.txt HTTP client, stops the
// background refresh of the crawler verifier that New built, and closes
// the store and shared ban list that New built (not those given with
// WithVerifier, WithLimiter or WithBans). Call it when the Enforcer is no
// longer used: afterwards its store calls fail (and decide locally).
func (e *Enforcer) Close() error {
	e.client.CloseIdleConnections()
	if e.ownVerify {
		e.verifier.Close()
	}
	if e.ownBans != nil {
		e.ownBans.Close()
	}
	if e.ownLimits != nil {
		e.ownLimits.Close()
	}
	return nil
}

// newSource returns the source that Config.RobotsTxt names: the site
// itself (empty), a URL fetched with client, or a file.
func newSource(robotsTxt string, client *http.Client) (sites.Source, error) {
	switch {
	case robotsTxt == "":
		return sites.SelfSource(), nil
	case uriScheme.MatchString(robotsTxt): // http or https: checked by withDefaults
		u, err := url.Parse(robotsTxt)
		if err != nil {
			return nil, fmt.Errorf("robots_guard: robots_txt: %w", err)
		}
		return sites.URLSource(u, client), nil
	}
	if err := CheckRobotsTxtFile(robotsTxt); err != nil {
		return nil, err
	}
	return sites.FileSource(robotsTxt), nil
}

// Verifier returns the crawler verifier in use, nil when Config.Verify is
// off.
func (e *Enforcer) Verifier() *identity.Verifier { return e.verifier }

// NewVerifier returns the crawler verifier that New builds for cfg.Verify
// (nil, nil when it is off), with the logger, observer and feed storage of
// opts. Front ends that keep the verifier's feeds and DNS cache across
// configuration changes build one and hand it to each new Enforcer with
// WithVerifier; they close it themselves.
func NewVerifier(cfg Config, opts ...Option) (*identity.Verifier, error) {
	cfg, err := cfg.withDefaults()
	if err != nil || cfg.Verify == nil {
		return nil, err
	}
	return newVerifier(cfg, collect(opts))
}

// collect applies opts to the defaults.
func collect(opts []Option) options {
	o := options{logger: zap.NewNop(), clientIP: remoteAddr}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func newVerifier(cfg Config, o options) (*identity.Verifier, error) {
	vc := cfg.Verify
	ic := identity.Config{
		Operators:  vc.Registry(),
		Refresh:    time.Duration(vc.Refresh),
		DNSTimeout: time.Duration(vc.DNSTimeout),
		Resolver:   vc.Resolver,
		CacheSize:  vc.DNSCacheSize,
		Storage:    o.feedStore,
		Logger:     o.logger,
		Now:        o.now,
	}
	if w := vc.WebBotAuth; w != nil {
		wc := &identity.WebBotAuthConfig{Discover: w.Discover, MaxWindow: time.Duration(w.MaxWindow), AllowPrivate: w.AllowPrivateDirectories, TLS: o.storeTLSForAgents}
		if w.CAFile != "" && wc.TLS == nil {
			pem, err := os.ReadFile(w.CAFile)
			if err != nil {
				return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: ca_file: %s holds no PEM certificate", w.CAFile)
			}
			wc.TLS = &tls.Config{RootCAs: pool}
		}
		for _, a := range w.Agents {
			ag := identity.Agent{Origin: a.Origin, Operator: a.Operator}
			for _, f := range a.Keys {
				b, err := os.ReadFile(f)
				if err != nil {
					return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: agent %s: key: %w", a.Origin, err)
				}
				k, err := identity.ParseJWK(b)
				if err != nil {
					return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: agent %s: key %s: %w", a.Origin, f, err)
				}
				ag.Keys = append(ag.Keys, k)
			}
			wc.Agents = append(wc.Agents, ag)
		}
		ic.WebBotAuth = wc
	}
	if ic.Storage == nil && vc.CacheDir != "" {
		ic.Storage = identity.DirStorage(vc.CacheDir)
	}
	if io, ok := o.observer.(identity.Observer); ok {
		ic.Observer = io
	}
	v, err := identity.New(ic)
	if err != nil {
		return nil, fmt.Errorf("robots_guard: verify: %w", err)
	}
	o.logger.Info("robots_guard: crawler verification on", zap.Stringer("registry", v), zap.String("on_spoofed", vc.OnSpoofed))
	return v, nil
}

func remoteAddr(r *http.Request) string { return r.RemoteAddr }

// MaxUserAgent is the length of the longest User-Agent header that is read
// whole (4 times the longest of the 235 real browser headers and 2,116
// crawler headers in testdata, 285 bytes). A longer header is a bot's, and
// only its first MaxUserAgent bytes choose its group, so the work per
// request stays bounded whatever a client sends.
const MaxUserAgent = 1024

// Decide decides what to do with one request; it does not write anything.
// The steps: /robots.txt and the Enforcer's own fetches pass; the site's
// robots.txt is looked up (fetched when needed); clients that are not bots
// pass; the path is judged for the bot's group in the RFC 9309 view and in
// the decoded view, and either one disallowing it denies it; an allowed path
// is then subject to the group's Crawl-delay.
func (e *Enforcer) Decide(ctx context.Context, req Request) Verdict {
	// Pointers: Request and Verdict are copied once, not at every call.
	v := e.decide(ctx, &req, nil)
	if v.Action != Allow || e.obs != nil {
		e.done(&req, &v)
	}
	return v
}

// trace collects what Explain shows beside the verdict. When it is given,
// decide spends no Crawl-delay budget.
type trace struct {
	ent     *sites.Site
	st      *sites.State
	d       policy.Decision
	decided bool
	noIP    bool // no client address given: claims are not looked up
	verify  *identity.Explanation
}

func (e *Enforcer) decide(ctx context.Context, req *Request, tr *trace) Verdict {
	if sites.IsInternal(ctx) {
		return Verdict{Reason: ReasonInternal, DryRun: e.cfg.DryRun}
	}
	target, targetOK := policy.RequestTarget(req.Target)
	if targetOK && policy.IsRobotsTxt(target) {
		return Verdict{Reason: ReasonRobotsTxt, DryRun: e.cfg.DryRun}
	}
	ua, bot := req.UserAgent, false
	if len(ua) > MaxUserAgent {
		// No browser sends this much: a bot, judged by the group its
		// header's first MaxUserAgent bytes choose, for bounded work.
		ua, bot = ua[:MaxUserAgent], true
	}
	info := e.classes.lookup(ua)
	bot = bot || info.bot // a header that claims an operator is a bot
	// Browsers never wait for a robots.txt fetch; bots and unknown
	// clients (which the site's own groups may name) do.
	ent, st := e.sites.Get(ctx, sites.MakeKey(req.Scheme, req.Host, req.Port), req.Host, req.Port, req.Origin, bot || !info.browser || tr != nil)
	if tr != nil {
		tr.ent, tr.st = ent, st
	}
	v := Verdict{Site: ent.Name(), DryRun: e.cfg.DryRun}
	agent, groupClaims := info.agent(st.Robots, ua, e.verifier)
	var ver identity.Result
	if claims := info.claims | groupClaims; claims != 0 || req.Signed != nil && e.verifier != nil {
		ver = e.verify(ctx, claims, req, tr)
		v.Verification, v.Operator, v.Method = ver.Verdict, ver.Operator, ver.Method
		if ver.Verdict == identity.Spoofed {
			if e.denySpoof {
				v.Bot, v.Group = true, agent.Group()
				v.Action, v.Reason = Deny, ReasonSpoofed
				return v
			}
			// The group the header does not earn is replaced by "*".
			agent = st.Robots.Agent("")
		} else if ver.DNSFailed && e.starOnDNS {
			// Nothing proven, and the client may have made sure of it.
			agent = st.Robots.Agent("")
		}
		bot = bot || claims != 0 || ver.Verdict == identity.Verified
	}
	// Bans, and traps that ban: never for a verified crawler.
	if e.bans != nil && !vouched(ver) {
		if e.bansActive() {
			client := e.clientKey(req)
			if until := e.bans.Until(client, e.clock(req)); until != 0 && !client.IsZero() {
				v.Bot, v.Group = bot || agent.Specific(), agent.Group()
				v.Action, v.Reason, v.BanUntil = Deny, ReasonBanned, until
				return v
			}
		}
		if e.traps != nil && targetOK && !st.Unreachable {
			if i, ok := e.traps.hit(target); ok && e.trapReady(ent, i) && navigation(req) {
				if armed, _ := trapArmed(st.Robots, target); armed {
					v.Bot, v.Group = bot || agent.Specific(), agent.Group()
					v.Action, v.Reason = Deny, ReasonTrap
					v.BanUntil = e.ban(ctx, e.clientKey(req), tr, "trap "+e.traps.patterns[i])
					return v
				}
			}
		}
	}
	if !bot && !agent.Specific() {
		return v
	}
	v.Bot = true
	v.Group = agent.Group()
	if st.Postponed {
		v.Action, v.Reason, v.RetryAfter = Throttle, ReasonNewSiteRate, time.Second
		return v
	}
	if st.Unreachable && !e.allowUnrch {
		v.Action, v.Reason = Deny, ReasonUnreachable
		return v
	}
	if !targetOK {
		v.Action, v.Reason = Deny, ReasonBadTarget
		return v
	}
	path, query := policy.SplitTarget(target)
	d := agent.Decide(target)
	if tr != nil {
		tr.d, tr.decided = d, true
	}
	v.CrawlDelay = d.CrawlDelay
	if d.Exempt {
		v.Reason = ReasonRobotsTxt
		return v
	}
	if !d.Allowed {
		v.Action, v.Reason, v.Rule = Deny, ReasonDisallowed, d.Rule
		e.countDenial(ctx, req, ver, tr)
		return v
	}
	if policy.NeedsDecodedView(path) {
		if d2, denied := e.decideDecoded(agent, path, query); denied {
			v.Action, v.Reason, v.Rule = Deny, ReasonDisallowedDecoded, d2.Rule
			if tr != nil {
				tr.d = d2
			}
			return v
		}
	}
	v.Reason = ReasonAllowed
	if d.CrawlDelay > 0 {
		k, now := e.limitKey(ent.Name(), v.Group, req, ver), e.clock(req)
		var ok bool
		var wait time.Duration
		if tr == nil {
			ok, wait = e.limits.Allow(ctx, k, now, d.CrawlDelay)
		} else {
			ok, wait = e.limits.Peek(ctx, k, now, d.CrawlDelay)
		}
		if !ok {
			v.Action, v.Reason, v.RetryAfter = Throttle, ReasonCrawlDelay, wait
		}
	}
	return v
}

// ban bans client for reason (unless in dry run, or tr: Explain) and
// returns when the ban ends; in dry run, when it would end.
func (e *Enforcer) ban(ctx context.Context, client limit.Client, tr *trace, reason string) int64 {
	now := e.now().UnixNano()
	if tr != nil {
		return now + int64(e.cfg.BanFor)
	}
	if client.IsZero() {
		return 0 // no address to ban: the trap request is refused, no more
	}
	b := limit.BanInfo{Until: now + int64(e.cfg.BanFor), Strikes: 1}
	msg := "robots_guard: dry run: would ban for ignoring robots.txt"
	if !e.cfg.DryRun {
		b = e.bans.Ban(ctx, client, now, time.Duration(e.cfg.BanFor), time.Duration(e.cfg.BanMax), reason)
		msg = "robots_guard: banned for ignoring robots.txt"
	}
	e.log.Warn(msg, zap.String("client", limit.Client(client).Format(e.cfg.IPv4Prefix, e.cfg.IPv6Prefix)),
		zap.String("reason", reason), zap.Time("until", time.Unix(0, b.Until).UTC()), zap.Int("strikes", b.Strikes))
	if bo, ok := e.obs.(BanObserver); ok {
		bo.ObserveBan(reason[:strings.IndexByte(reason+" ", ' ')], e.cfg.DryRun)
	}
	return b.Until
}

// countDenial counts a robots.txt denial (in the RFC 9309 view only: the
// decoded view can refuse what an RFC crawler may fetch) for ban_after, and
// bans the client when it reaches the count (a verified crawler never).
func (e *Enforcer) countDenial(ctx context.Context, req *Request, ver identity.Result, tr *trace) {
	if e.banAfter == nil || tr != nil || vouched(ver) {
		return
	}
	client := e.clientKey(req)
	if client.IsZero() {
		return
	}
	if e.banAfter.add(client, e.clock(req)) {
		e.ban(ctx, client, tr, "ban_after "+strconv.Itoa(e.banAfter.n)+" denials")
	}
}

// vouched reports whether a verification earns a crawler's privileges
// (a shared budget, no bans): Verified for a registry operator, not only a
// discovered agent.
func vouched(r identity.Result) bool { return r.Verdict == identity.Verified && !r.AgentOnly }

// limitKey is the Crawl-delay budget of a client of a group of a site: per
// client-IP prefix; with crawl_delay_key "group", one per group, or, when
// verification is on, one per verified operator and group (unverified
// clients keep per-address budgets, so nobody can spend a verified
// crawler's).
func (e *Enforcer) limitKey(site, group string, req *Request, ver identity.Result) limit.Key {
	k := limit.Key{Site: site, Group: group}
	switch {
	case e.byGroup && e.verifier == nil:
	case e.byGroup && vouched(ver):
		k.Client = ver.ClientKey()
	default:
		k.Client = e.clientKey(req)
	}
	return k
}

// clientKey is the client's address prefix as a limiter, ban and report
// key, parsed once per request (all zeros when the address does not
// parse).
// clock returns the time of req's decision, read once per request: the
// ban check, the Crawl-delay limiter, ban_after and the violations report
// of one request all use it (a clock read costs 30–65 ns on some VMs).
func (e *Enforcer) clock(req *Request) int64 {
	if req.at == 0 {
		req.at = e.now().UnixNano()
	}
	return req.at
}

func (e *Enforcer) clientKey(req *Request) limit.Client {
	if !req.keyDone {
		req.key, req.keyDone = limit.ClientOf(req.ClientIP, e.cfg.IPv4Prefix, e.cfg.IPv6Prefix), true
	}
	return req.key
}

// verify checks the claims of a request (and its Web Bot Auth signature);
// with tr, it records the steps for Explain (and a request without a
// client address is not looked up).
func (e *Enforcer) verify(ctx context.Context, claims identity.Claims, req *Request, tr *trace) identity.Result {
	if e.verifier == nil {
		return identity.Result{}
	}
	var addr netip.Addr
	if tr == nil || !tr.noIP {
		addr = limit.ParseAddr(req.ClientIP)
	}
	if tr != nil {
		x := e.verifier.ExplainRequest(ctx, claims, addr, req.Signed)
		tr.verify = &x
		return x.Result
	}
	if req.Signed != nil {
		r, _ := e.verifier.VerifyRequest(ctx, claims, addr, req.Signed)
		return r
	}
	return e.verifier.Verify(ctx, claims, addr)
}

// signedRequest returns the parts of r a Web Bot Auth signature covers,
// or nil when r carries no signature or signatures are not checked.
func (e *Enforcer) signedRequest(r *http.Request, scheme string) *identity.SignedRequest {
	if e.verifier == nil || !e.verifier.WebBotAuth() || len(r.Header["Signature-Input"]) == 0 {
		return nil
	}
	return SignedRequest(r, scheme)
}

// SignedRequest returns what a Web Bot Auth signature of r covers (front
// ends that fill Request themselves put it in Request.Signed).
func SignedRequest(r *http.Request, scheme string) *identity.SignedRequest {
	u := r.URL
	return &identity.SignedRequest{Method: r.Method, Scheme: scheme, Authority: r.Host, Path: u.EscapedPath(), Query: u.RawQuery, Header: r.Header}
}

// NewStoreLimiter returns the limiter that New builds for cfg.Store: a
// limit.Redis with the logger and observer of opts (an Observer that also
// implements limit.StoreObserver gets the store's call outcomes). Front
// ends that keep it across configuration changes hand it to each new
// Enforcer with WithLimiter and close it themselves. It is an error to
// call it without cfg.Store.
func NewStoreLimiter(cfg Config, opts ...Option) (*limit.Redis, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Store == nil {
		return nil, errors.New("robots_guard: store: not configured")
	}
	return newStoreLimiter(cfg, collect(opts))
}

func newStoreLimiter(cfg Config, o options) (*limit.Redis, error) {
	sc := cfg.Store
	rc := limit.RedisConfig{
		URL:       sc.Redis,
		KeyPrefix: sc.KeyPrefix,
		Timeout:   time.Duration(sc.Timeout),
		OnError:   sc.OnStoreError,
		Tolerance: *cfg.CrawlDelayTolerance,
		LocalKeys: cfg.MaxKeys,
		Logger:    o.logger,
		TLS:       o.storeTLS,
	}
	if so, ok := o.observer.(limit.StoreObserver); ok {
		rc.Observer = so
	}
	r, err := limit.NewRedis(rc)
	if err != nil {
		return nil, fmt.Errorf("robots_guard: store: %w", err)
	}
	o.logger.Info("robots_guard: Crawl-delay clocks shared through a store", zap.Stringer("store", r), zap.String("on_store_error", sc.OnStoreError))
	return r, nil
}

// NewLimiter returns the in-memory Crawl-delay limiter that New builds for
// cfg (cfg.MaxKeys keys, cfg.CrawlDelayTolerance). Front ends that keep the
// limiter's clocks across configuration changes build one and hand it to
// each new Enforcer with WithLimiter.
func NewLimiter(cfg Config) *limit.Memory {
	cfg, err := cfg.withDefaults()
	if err != nil {
		cfg, _ = Config{}.withDefaults()
	}
	return limit.NewMemory(cfg.MaxKeys, *cfg.CrawlDelayTolerance)
}

// done reports a verdict to the observer and the log, and returns it.
func (e *Enforcer) done(req *Request, v *Verdict) {
	if e.obs != nil {
		e.obs.ObserveDecision(*v)
	}
	if v.Action == Allow {
		return
	}
	if rec, ok := recordOf(v, e.clientKey(req), e.clock(req)); ok {
		e.report.Record(rec)
	}
	msg := "robots_guard: denied"
	switch {
	case v.Action == Throttle && v.DryRun:
		msg = "robots_guard: dry run: would throttle"
	case v.Action == Throttle:
		msg = "robots_guard: throttled"
	case v.DryRun:
		msg = "robots_guard: dry run: would deny"
	}
	if ce := e.log.Check(zapcore.InfoLevel, msg); ce != nil {
		line := 0
		if v.Rule != nil {
			line = v.Rule.Line
		}
		ce.Write(
			zap.String("site", v.Site),
			zap.String("group", v.Group),
			zap.String("action", v.ActionName()),
			zap.String("reason", v.Reason.String()),
			zap.Int("rule_line", line),
			zap.Duration("retry_after", v.RetryAfter),
			zap.String("client_ip", req.ClientIP),
			zap.String("verification", v.Verification.String()),
			zap.String("operator", v.Operator),
			zap.String("verified_by", v.Method.String()),
			zap.String("user_agent", req.UserAgent),
			zap.String("target", e.logTarget(req.Target)),
			zap.Bool("dry_run", v.DryRun),
		)
	}
}

// logTarget is the target as denial lines show it: without its query
// string (tokens and e-mail addresses travel in queries) unless
// Config.LogQuery asks for it.
func (e *Enforcer) logTarget(t string) string {
	if e.cfg.LogQuery {
		return t
	}
	if i := strings.IndexByte(t, '?'); i >= 0 {
		return t[:i] + "?…"
	}
	return t
}

// Handler returns next wrapped by the Enforcer: allowed requests reach next,
// denied ones get 403 and throttled ones 429 with Retry-After (or what
// WithDenyHandler and WithThrottleHandler write). next also serves the
// site's robots.txt to the default source.
func (e *Enforcer) Handler(next http.Handler) http.Handler {
	return &handler{e: e, next: next}
}

type handler struct {
	e    *Enforcer
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e := h.e
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	target := r.RequestURI
	if target == "" {
		target = r.URL.RequestURI()
	}
	req := Request{
		Scheme:    scheme,
		Host:      r.Host,
		Port:      LocalPort(r),
		Target:    target,
		UserAgent: userAgent(r.Header),
		ClientIP:  e.clientIP(r),
		Origin:    h.next,
		Method:    r.Method,
	}
	req.Signed = e.signedRequest(r, scheme)
	if e.traps != nil { // only traps read fetch metadata
		req.SecFetchSite = headerValue(r.Header, "Sec-Fetch-Site")
		req.SecFetchDest = headerValue(r.Header, "Sec-Fetch-Dest")
	}
	v := e.Decide(r.Context(), req)
	switch {
	case !v.Enforced():
		h.next.ServeHTTP(w, r)
	default:
		e.Respond(w, r, v)
	}
}

// Respond writes the answer to a request that v stops (v.Enforced()): 403
// or 429 with Retry-After and a short text body, or what WithDenyHandler and
// WithThrottleHandler write. Front ends that call Decide themselves use it
// to answer the way Handler does.
func (e *Enforcer) Respond(w http.ResponseWriter, r *http.Request, v Verdict) {
	if v.Action == Deny {
		e.deny(w, r, v)
		return
	}
	e.throttle(w, r, v)
}

// LocalPort returns the port of the server's side of r's connection (from
// http.LocalAddrContextKey: TCP, or UDP for HTTP/3), or 0 when there is
// none (a Unix socket). Front ends put it into Request.Port.
func LocalPort(r *http.Request) int {
	switch a := r.Context().Value(http.LocalAddrContextKey).(type) {
	case *net.TCPAddr:
		return a.Port
	case *net.UDPAddr: // HTTP/3 (quic-go stores the UDP address)
		return a.Port
	}
	return 0
}

// userAgent returns the User-Agent header; the key is canonical already, so
// the map is read directly.
func userAgent(h http.Header) string {
	if v := h["User-Agent"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// retryAfterValues are the Retry-After header values of 1 to 3600 seconds,
// made once and never modified, so that a 429 does not allocate for them.
var retryAfterValues = func() [][]string {
	t := make([][]string, 3601)
	for i := 1; i < len(t); i++ {
		t[i] = []string{strconv.Itoa(i)}
	}
	return t
}()

// retryAfterValue returns the header value of secs seconds.
func retryAfterValue(secs int64) []string {
	if secs >= 1 && secs < int64(len(retryAfterValues)) {
		return retryAfterValues[secs]
	}
	return []string{strconv.FormatInt(secs, 10)}
}

// headerValue returns the first value of the canonical header key without
// allocating.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// writeVerdict is the default answer to a stopped request: the status,
// Retry-After for Throttle, and the message as a text/plain body that no
// cache may keep (the answer depends on the User-Agent).
func (e *Enforcer) writeVerdict(w http.ResponseWriter, _ *http.Request, v Verdict) {
	h := w.Header()
	h["Content-Type"] = e.hdrText
	h["Cache-Control"] = e.hdrNoStore
	h["X-Content-Type-Options"] = e.hdrNosniff
	if e.acceptSig && v.Operator != "" && v.Method != identity.MethodSignature && e.verifier.SignsFor(v.Operator) {
		h["Accept-Signature"] = []string{`sig1=("@authority" "signature-agent";key="sig1");tag="web-bot-auth"`}
	}
	switch {
	case v.Action == Throttle:
		h["Retry-After"] = retryAfterValue(v.RetryAfterSeconds())
	case v.BanUntil != 0:
		secs := (v.BanUntil - e.now().UnixNano() + int64(time.Second) - 1) / int64(time.Second)
		h["Retry-After"] = retryAfterValue(max(secs, 1))
	}
	w.WriteHeader(v.StatusCode())
	bp := e.bufs.Get().(*respBuf)
	bp.b = append(v.AppendMessage(bp.b[:0]), '\n')
	_, _ = w.Write(bp.b)
	e.bufs.Put(bp)
}

// decideDecoded decides the decoded views of a target
// (policy.AppendDecodedView, with backslashes read as '/' and kept) and
// reports whether one is denied. The views are built in a pooled buffer
// and given to Decide as strings over it: Decide keeps no part of its
// target, so the buffer goes back to the pool when the last Decide returns
// (unless a huge target grew it).
func (e *Enforcer) decideDecoded(agent policy.Agent, path, query string) (policy.Decision, bool) {
	bp := e.bufs.Get().(*respBuf)
	var d policy.Decision
	denied := false
	for _, keepBackslash := range [...]bool{false, true} {
		var start int
		var ok bool
		if bp.b, start, ok = policy.AppendDecodedView(bp.b[:0], path, query, keepBackslash); !ok {
			continue
		}
		if d = agent.Decide(unsafe.String(unsafe.SliceData(bp.b[start:]), len(bp.b)-start)); !d.Allowed && !d.Exempt {
			denied = true
			break
		}
	}
	if cap(bp.b) <= maxPooledBuf {
		e.bufs.Put(bp)
	}
	return d, denied
}

// maxPooledBuf is the largest buffer that goes back to the pool.
const maxPooledBuf = 4 << 10

// respBuf is a pooled response body buffer. Its slice header is written
// at every stopped request by the P that holds it; the padding keeps
// buffers of different Ps off one another's cache lines.
type respBuf struct {
	b []byte
	_ [128 - 24]byte
}
