package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	blockScope string // crawl_delay_scope block: the site part of every limiter key
	allowUnrch bool
	verifier   *identity.Verifier // nil when verification is off
	// purposes is the registry of crawler purposes, nil when
	// content_signals is off; signalsReport: content_signals report.
	purposes      *identity.Purposes
	signalsReport bool
	ownVerify     bool      // New built verifier; Close closes it
	ownLimits     io.Closer // the store limiter New built; Close closes it
	denySpoof     bool
	starOnDNS     bool
	acceptSig     bool           // verify.web_bot_auth.accept_signature
	warnedNG      atomic.Bool    // warnNotGlobal has logged
	warnedProxy   atomic.Bool    // warnUntrustedProxy has logged
	traps         *trapSet       // nil: none
	trapLink      string         // the path per-client trap links extend; "" with trap_links static
	trapKey       []byte         // the key of trap link tokens
	trapClocks    TrapClockStore // nil: the clocks live in memory only
	realClock     bool           // the clock is time.Now: timers may announce traps
	keptClocks    atomic.Int64   // trap clocks stored in trapClocks (maxKeptClocks)
	armTimers     atomic.Int64   // pending timers of announceTrap (maxArmTimers)
	bans          limit.Bans     // nil when neither traps nor ban_after is set
	bansActive    func() bool    // whether any ban may be held
	ownBans       io.Closer      // the shared ban list New built; Close closes it
	banAfter      *denialCounter // nil: off
	report        *report.Recorder

	bufs  sync.Pool // *respBuf for response bodies and decoded views
	slabs sync.Pool // *headerSlab for the header values of answers
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
	e := &Enforcer{
		cfg:        cfg,
		now:        o.now,
		clientIP:   o.clientIP,
		denySpoof:  cfg.Verifying() && cfg.Verify.OnSpoofed == SpoofedDeny,
		starOnDNS:  cfg.Verifying() && cfg.Verify.OnDNSError == DNSErrorStar,
		acceptSig:  cfg.Verifying() && cfg.Verify.WebBotAuth != nil && cfg.Verify.WebBotAuth.AcceptSignature,
		limits:     o.limiter,
		obs:        o.observer,
		deny:       o.deny,
		throttle:   o.throttle,
		byGroup:    cfg.CrawlDelay.Key == KeyGroup,
		allowUnrch: cfg.RobotsTxt.OnUnreachable == UnreachableAllow,
		traps:      newTrapSet(cfg.Traps.Paths),
		trapKey:    trapSecret(cfg, o),
		trapClocks: o.trapClocks,
		realClock:  injected == nil,
		report:     report.New(cfg.Clients.IPv4Prefix, cfg.Clients.IPv6Prefix, o.now),
	}
	if cfg.Traps.Links == TrapLinksClient {
		e.trapLink = linkTrap(cfg.Traps.Paths)
	}
	if cfg.CrawlDelay.Scope == ScopeBlock {
		// One name for the block's clocks, the same on every instance of
		// a fleet that runs this configuration.
		b, _ := json.Marshal(cfg)
		sum := sha256.Sum256(b)
		e.blockScope = "block:" + hex.EncodeToString(sum[:8])
	}
	defer func() {
		if err != nil {
			e.Close() // New fails after all: stop what it started
		}
	}()
	if cfg.Verifying() {
		e.verifier = o.verifier
		if e.verifier == nil {
			if e.verifier, err = newVerifier(cfg, o); err != nil {
				return nil, err
			}
			e.ownVerify = true
		}
	}
	if cfg.ContentSignals != SignalsOff {
		e.purposes = identity.NewPurposes()
		e.signalsReport = cfg.ContentSignals == SignalsReport
	}
	e.classes = newClassifier(cfg, e.verifier, e.purposes)
	if err = e.buildLimits(o); err != nil {
		return nil, err
	}
	e.bufs.New = func() any { return &respBuf{b: make([]byte, 0, 128)} }
	if e.deny == nil {
		e.deny = e.writeVerdict
	}
	if e.throttle == nil {
		e.throttle = e.writeVerdict
	}
	// Every line goes through the sampler, the robots.txt state lines too:
	// a flood of new Host names cannot flood the log.
	e.log = o.logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return logsample.New(c, logSampleTick, logSampleFirst, logSampleThereafter)
	}))
	e.client = sites.NewHTTPClient(o.transport, time.Duration(cfg.RobotsTxt.FetchTimeout))
	src := o.source
	if src == nil {
		if src, err = newSource(cfg.RobotsTxt.Source, e.client); err != nil {
			return nil, err
		}
	}
	sc := sites.Config{
		Source:            src,
		MaxSites:          cfg.RobotsTxt.MaxSites,
		MaxBytes:          cfg.RobotsTxt.MaxBytes,
		Refresh:           time.Duration(cfg.RobotsTxt.Refresh),
		Timeout:           time.Duration(cfg.RobotsTxt.FetchTimeout),
		NewSitesPerSecond: float64(cfg.RobotsTxt.NewSitesPerSecond),
		Named:             cfg.RobotsTxt.SiteNames,
		Now:               injected,
		Logger:            e.log,
		Observer:          o.observer,
		AllowUnreachable:  e.allowUnrch,
	}
	if e.traps != nil {
		sc.OnRules, sc.OnConfirm = e.checkTraps, e.confirmTraps
	}
	e.sites = sites.New(sc)
	return e, nil
}

// buildLimits sets up the Crawl-delay limiter (WithLimiter's, or one of
// its own: in memory, or in Config.Store), the ban_after counter and the
// ban list (WithBans', or one in the limiter's store, or in memory) when
// traps or ban_after need one.
func (e *Enforcer) buildLimits(o options) error {
	cfg := e.cfg
	if e.limits == nil {
		if cfg.Store == nil {
			e.limits = limit.NewMemory(cfg.CrawlDelay.MaxKeys, *cfg.CrawlDelay.Tolerance)
		} else {
			r, err := newStoreLimiter(cfg, o)
			if err != nil {
				return err
			}
			e.limits, e.ownLimits = r, r
		}
	}
	if cfg.Bans.After != nil {
		e.banAfter = &denialCounter{m: make(map[limit.Client]denials), max: cfg.CrawlDelay.MaxKeys, window: int64(cfg.Bans.After.Window), n: cfg.Bans.After.Denials}
	}
	e.bansActive = func() bool { return true }
	// A ban list given with WithBans is checked whatever this Enforcer's
	// own triggers: a client banned through another one is banned here
	// too. Without one, an Enforcer that can ban keeps its own.
	e.bans = o.bans
	if e.bans == nil && (e.traps != nil || e.banAfter != nil) {
		if r, ok := e.limits.(*limit.Redis); ok {
			rb := r.NewBans(cfg.Bans.MaxEntries)
			e.bans, e.ownBans = rb, rb
		} else {
			e.bans = limit.NewMemoryBans(cfg.Bans.MaxEntries)
		}
	}
	if a, ok := e.bans.(interface{ Active() bool }); ok {
		e.bansActive = a.Active // skips the address parse while no ban exists
	}
	return nil
}

// Config returns the configuration in force, defaults applied.
func (e *Enforcer) Config() Config { return e.cfg }

// Close releases idle connections of the robots.txt HTTP client, stops the
// background refresh of the crawler verifier that New built, and closes
// the store and shared ban list that New built (not those given with
// WithVerifier, WithLimiter or WithBans). Call it when the Enforcer is no
// longer used: afterwards its store calls fail (and decide locally).
func (e *Enforcer) Close() error {
	if e.client != nil {
		e.client.CloseIdleConnections()
	}
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

// Verifier returns the crawler verifier in use, nil when Config.Verify is
// off.
func (e *Enforcer) Verifier() *identity.Verifier { return e.verifier }

// MaxUserAgent is the length of the longest User-Agent header that is read
// whole (4 times the longest of the 235 real browser headers and 2,116
// crawler headers in testdata, 285 bytes). A longer header is a bot's, and
// only its first MaxUserAgent bytes choose its group, so the work per
// request stays bounded whatever a client sends.
const MaxUserAgent = 1024

// maxHostName is the longest host name a Host header may carry (RFC 1035
// §2.3.4: 253 bytes as text); maxLoggedUserAgent is how much of a
// User-Agent a log line shows (its full length is a field of its own).
const (
	maxHostName        = 253
	maxLoggedUserAgent = 256
)

// hostTooLong reports whether the host name of a Host header (without
// port and brackets) is longer than maxHostName.
func hostTooLong(host string) bool {
	name, _ := sites.SplitHost(host)
	return len(name) > maxHostName
}

// Decide decides what to do with one request; it does not write anything.
// The steps: /robots.txt and the Enforcer's own fetches pass; the site's
// robots.txt is looked up (fetched when needed); clients that are not bots
// pass; the path is judged for the bot's group in the RFC 9309 view and in
// the decoded view, and either one disallowing it denies it; an allowed path
// is then subject to the group's Crawl-delay.
func (e *Enforcer) Decide(ctx context.Context, req Request) Verdict {
	return e.decideReq(ctx, &req)
}

// decideReq is Decide for a Request the caller keeps (the net/http
// front's), so that it is not copied again: Request and Verdict are passed
// by pointer from here on.
func (e *Enforcer) decideReq(ctx context.Context, req *Request) Verdict {
	v := e.decide(ctx, req, nil)
	if v.Action != Allow || v.Bot || e.obs != nil {
		e.done(req, &v) // a browser that passes is counted nowhere but the observer
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
	// alsoStar: the claim is not verified, and "*" was applied too.
	alsoStar bool
	verify   *identity.Explanation
	// signal: the crawler's purpose was checked against the group's
	// Content-Signal lines (the answer is in the verdict's fields, or
	// signalVal when it allowed).
	signal     bool
	signalVal  policy.Signal
	signalRule *policy.SignalRule
}

func (e *Enforcer) decide(ctx context.Context, req *Request, tr *trace) Verdict {
	// The guard's own robots.txt fetch passes.
	if sites.IsSelfFetch(ctx, req.peer) {
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
	if len(req.Host) > maxHostName && hostTooLong(req.Host) {
		// No DNS name is this long (RFC 1035): the Host is garbage, and
		// no site, cache entry or store key is made of it. Bots are
		// refused; others pass to the site, which answers as it will.
		v := Verdict{Bot: bot, DryRun: e.cfg.DryRun, Reason: ReasonNotBot}
		if bot || !info.browser {
			v.Bot, v.Action, v.Reason = true, Deny, ReasonBadTarget
		}
		return v
	}
	// Browsers never wait for a robots.txt fetch; bots and unknown
	// clients (which the site's own groups may name) do.
	ent, st := e.sites.GetRequest(ctx, req.Scheme, req.Host, req.Port, req.Origin, bot || !info.browser || tr != nil, req.ClientIP)
	if tr != nil {
		tr.ent, tr.st = ent, st
	}
	v := Verdict{Site: ent.Name(), SiteLabel: OtherSites, DryRun: e.cfg.DryRun}
	if ent.Named() {
		v.SiteLabel = v.Site
	}
	agent, groupClaims := info.agent(st.Robots, ua, e.verifier)
	var ver identity.Result
	unproven := false // judged by "*" as well as by its group
	if claims := info.claims | groupClaims; claims != 0 || req.Signed != nil && e.verifier != nil {
		ver = e.verify(ctx, claims, req, tr)
		if ver.Verdict == identity.Spoofed && viaUntrustedProxy(req) {
			// The address checked is a proxy's, not the client's: it
			// proves nothing either way.
			ver.Verdict = identity.Unverifiable
			if tr != nil && tr.verify != nil {
				tr.verify.Verdict = ver.Verdict
				tr.verify.Steps = append(tr.verify.Steps, "the request carries a forwarding header but its address is the connection's: "+
					"a proxy that is not trusted, whose address proves nothing (unverifiable, not spoofed)")
			} else {
				e.warnUnverifiable(&e.warnedProxy, msgUntrustedProxy, req)
			}
		}
		v.Verification, v.Operator, v.Method = ver.Verdict, ver.Operator, ver.Method
		switch {
		case ver.Verdict == identity.Spoofed && e.denySpoof:
			v.Bot, v.Group = true, agent.Group()
			v.Action, v.Reason = Deny, ReasonSpoofed
			return v
		case ver.Verdict == identity.Spoofed:
			unproven = true
		case ver.Verdict == identity.Unverifiable:
			// Nothing proven: the header earns no more than "*", and
			// escapes none of its own group's rules. A failed reverse-DNS
			// check (which the owner of the address can cause) counts
			// as proof only with on_dns_error "header".
			unproven = !ver.DNSFailed || e.starOnDNS
			if ver.NotGlobal {
				e.warnUnverifiable(&e.warnedNG, msgNotGlobal, req)
			}
		}
		bot = bot || claims != 0 || ver.Verdict == identity.Verified
	}
	// Bans, and traps that ban: never for a verified crawler.
	if e.bans != nil && !vouched(ver) && e.banned(ctx, req, tr, &v, ent, st, agent, target, targetOK, bot) {
		return v
	}
	if !bot && !agent.Specific() {
		return v
	}
	v.Bot = true
	v.Group = agent.Group()
	v.Crawler = info.crawler
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
	var also *policy.Robots // the file whose "*" applies too
	if unproven && agent.Specific() {
		also = st.Robots
	}
	e.judge(ctx, req, tr, &v, agent, also, target, ver)
	return v
}

// banned stops (in v) a request of a banned client, or one that a trap
// catches, which it bans; it reports whether it stopped it.
func (e *Enforcer) banned(ctx context.Context, req *Request, tr *trace, v *Verdict, ent *sites.Site, st *sites.State, agent policy.Agent, target string, targetOK, bot bool) bool {
	if e.bansActive() {
		client := e.clientKey(req)
		if until := e.bans.Until(client, e.clock(req)); until != 0 && !client.IsZero() {
			v.Bot, v.Group = bot || agent.Specific(), agent.Group()
			v.Action, v.Reason, v.BanUntil = Deny, ReasonBanned, until
			return true
		}
	}
	if e.traps == nil || !targetOK || st.Unreachable {
		return false
	}
	i, ok := e.traps.hit(target)
	if !ok || !e.trapReady(ent, i) {
		return false
	}
	if armed, _ := trapArmed(st.Robots, target); !armed {
		return false
	}
	switch {
	case e.trapLink == "" && !navigation(req):
		return false // trap_links static: a browser made to load it
	case e.trapLink != "" && !e.ownLink(req, target):
		// Not this client's own link: maybe one someone else put in
		// front of it. Refused, nobody banned.
		v.Bot, v.Group = bot || agent.Specific(), agent.Group()
		v.Action, v.Reason = Deny, ReasonTrapUnattributed
		return true
	}
	v.Bot, v.Group = bot || agent.Specific(), agent.Group()
	v.Action, v.Reason = Deny, ReasonTrap
	v.BanUntil = e.ban(ctx, e.clientKey(req), tr, "trap "+e.traps.patterns[i])
	return true
}

// judge decides (in v) a bot's request for target by its group's rules: a
// path disallowed in the RFC 9309 view or in a decoded view is denied, an
// allowed one is subject to the group's Crawl-delay. With also (for a
// claim that is not verified: agent's file) the "*" group's rules apply too: the path must be
// allowed by both, and the longer Crawl-delay applies; v.Group is "*" when
// a rule of "*" decides.
func (e *Enforcer) judge(ctx context.Context, req *Request, tr *trace, v *Verdict, agent policy.Agent, also *policy.Robots, target string, ver identity.Result) {
	d := agent.Decide(target)
	var star policy.Agent
	group := v.Group  // the claimed group: the budget's key
	starOnly := false // "*" refused what the claimed group allows
	if also != nil {
		star = also.Agent("")
		if d = policy.Both(d, star.Decide(target)); !d.Allowed && d.Group != v.Group {
			v.Group, starOnly = d.Group, true // "*"'s rule decided
		}
	}
	if tr != nil {
		tr.d, tr.decided, tr.alsoStar = d, true, also != nil
	}
	v.CrawlDelay, v.CrawlDelayLine = d.CrawlDelay, d.CrawlDelayLine
	if d.Exempt {
		v.Reason = ReasonRobotsTxt
		return
	}
	if !d.Allowed {
		v.Action, v.Reason, v.Rule = Deny, ReasonDisallowed, d.Rule
		if !starOnly {
			// A crawler whose claim could not be verified (feeds not
			// loaded, DNS busy) is refused what "*" disallows, but its
			// own rules allow it: no ban_after strike for that.
			e.countDenial(ctx, req, ver, tr)
		}
		return
	}
	if path, query := policy.SplitTarget(target); policy.NeedsDecodedView(path) {
		d2, denied := e.decideDecoded(agent, path, query)
		if !denied && also != nil {
			if d2, denied = e.decideDecoded(star, path, query); denied {
				v.Group = "*"
			}
		}
		if denied {
			v.Action, v.Reason, v.Rule = Deny, ReasonDisallowedDecoded, d2.Rule
			if tr != nil {
				tr.d = d2
			}
			return
		}
	}
	v.Reason = ReasonAllowed
	if cp := v.Crawler; cp != nil {
		// SEMANTICS.md §8a: the group's AI-use preference for the
		// crawler's documented purpose, on a path the group allows; an
		// unproven claim answers to "*"'s too, no from either winning.
		s, rule := agent.SignalRule(cp.Purpose, target)
		if also != nil && s != policy.No {
			if s2, r2 := star.SignalRule(cp.Purpose, target); s2 == policy.No {
				s, rule = s2, r2
			}
		}
		if tr != nil {
			tr.signal, tr.signalVal, tr.signalRule = true, s, rule
		}
		if s == policy.No {
			v.Action, v.Reason, v.Signal = Deny, ReasonContentSignal, rule
			v.DryRun = v.DryRun || e.signalsReport
			return
		}
	}
	if d.CrawlDelay <= 0 {
		return
	}
	k, now := e.limitKey(v.Site, group, req, ver), e.clock(req)
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

// ban bans client for reason (unless in dry run, or tr: Explain) and
// returns when the ban ends; in dry run, when it would end.
func (e *Enforcer) ban(ctx context.Context, client limit.Client, tr *trace, reason string) int64 {
	now := e.now().UnixNano()
	if tr != nil {
		return now + int64(e.cfg.Bans.For)
	}
	if client.IsZero() {
		return 0 // no address to ban: the trap request is refused, no more
	}
	b := limit.BanInfo{Until: now + int64(e.cfg.Bans.For), Strikes: 1}
	msg := "robots_guard: dry run: would ban for ignoring robots.txt"
	if !e.cfg.DryRun {
		// The ban is the fleet's, whatever the client does now: a bot
		// that hangs up must not keep its ban off the shared store.
		b = e.bans.Ban(context.WithoutCancel(ctx), client, now, time.Duration(e.cfg.Bans.For), time.Duration(e.cfg.Bans.Max), reason)
		msg = "robots_guard: banned for ignoring robots.txt"
	}
	outcome := BanBanned
	if b.Dropped {
		// Every place holds a live ban, and none is lifted for a new one
		// (a flood of addresses must not undo a ban): refused, no more.
		outcome = BanDropped
		e.log.Warn("robots_guard: ban dropped: the ban list is full of live bans",
			zap.String("client", client.Format(e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)),
			zap.String("reason", reason), zap.Int("max_bans", e.cfg.Bans.MaxEntries))
	} else {
		e.log.Warn(msg, zap.String("client", client.Format(e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)),
			zap.String("reason", reason), zap.Time("until", time.Unix(0, b.Until).UTC()), zap.Int("strikes", b.Strikes))
	}
	if bo, ok := e.obs.(BanObserver); ok {
		bo.ObserveBan(reason[:strings.IndexByte(reason+" ", ' ')], outcome, e.cfg.DryRun)
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
	if e.blockScope != "" {
		site = e.blockScope // crawl_delay_scope block: one clock whatever the Host
	}
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

// clock returns the time of req's decision, read once per request: the
// ban check, the Crawl-delay limiter, ban_after and the violations report
// of one request all use it (a clock read costs 30–65 ns on some VMs).
func (e *Enforcer) clock(req *Request) int64 {
	if req.at == 0 {
		req.at = e.now().UnixNano()
	}
	return req.at
}

// clientKey is the client's address prefix as a limiter, ban and report
// key, parsed once per request (the zero Client when the address does not
// parse).
func (e *Enforcer) clientKey(req *Request) limit.Client {
	if !req.keyDone {
		req.key, req.keyDone = limit.ClientOfAddr(clientAddr(req), e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix), true
	}
	return req.key
}

// clientAddr is req.ClientIP parsed, once per request: verification and
// the limiter, ban and report keys all use it.
func clientAddr(req *Request) netip.Addr {
	if !req.addrDone {
		req.addr, req.addrDone = limit.ParseAddr(req.ClientIP), true
	}
	return req.addr
}

// verify checks the claims of a request (and its Web Bot Auth signature);
// with tr, it records the steps for Explain (and a request without a
// client address is not looked up).
// forwardingHeaders are the headers a proxy or CDN writes the client's
// address into.
var forwardingHeaders = [...]string{"X-Forwarded-For", "Forwarded", "X-Real-Ip", "Cf-Connecting-Ip", "True-Client-Ip", "Fastly-Client-Ip"}

// viaUntrustedProxy reports whether req came through a proxy that was not
// trusted: it carries a forwarding header, yet its client address is the
// connection's own. A crawler claim that fails verification there was
// checked against the proxy's address; it is judged as unverifiable (its
// group and "*" together), not refused as spoofed. A client that adds such
// a header itself gains nothing by it: never more than "*".
func viaUntrustedProxy(req *Request) bool {
	if req.header == nil || req.peer == "" {
		return false
	}
	found := false
	for _, h := range forwardingHeaders {
		if _, ok := req.header[h]; ok {
			found = true
			break
		}
	}
	return found && clientAddr(req) == limit.ParseAddr(req.peer)
}

// OtherSites is Verdict.SiteLabel for a site the configuration does not
// name.
const OtherSites = sites.OtherSites

// Why a crawler claim can never be verified, said once per Enforcer (each
// such request is counted with verification "unverifiable").
const (
	msgUntrustedProxy = "robots_guard: a crawler claim came through a proxy or CDN that is not trusted (the request carries a forwarding header, but its address is the connection's): " +
		"claims are checked against the proxy's address and can never be verified, so they are judged by their group and \"*\" together instead of refused. " +
		"Trust the proxy's addresses (Caddy: trusted_proxies with trusted_proxies_strict) so that the client's own address is checked"
	msgNotGlobal = "robots_guard: a crawler claim came from an address that is not globally reachable; " +
		"such claims are judged by their group and \"*\" together, never verified. Behind a proxy, trust the proxy's address " +
		"(Caddy: trusted_proxies with trusted_proxies_strict) so that the client's own address is checked"
)

// warnUnverifiable logs msg, once per flag, with the request's addresses
// and User-Agent.
func (e *Enforcer) warnUnverifiable(flag *atomic.Bool, msg string, req *Request) {
	if flag.Load() || !flag.CompareAndSwap(false, true) {
		return
	}
	e.log.Warn(msg, zap.String("client", req.ClientIP), zap.String("peer", req.peer),
		zap.String("user_agent", req.UserAgent[:min(len(req.UserAgent), maxLoggedUserAgent)]))
}

func (e *Enforcer) verify(ctx context.Context, claims identity.Claims, req *Request, tr *trace) identity.Result {
	if e.verifier == nil {
		return identity.Result{}
	}
	var addr netip.Addr
	if tr == nil || !tr.noIP {
		addr = clientAddr(req)
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

// done reports a verdict to the observer and, when it stops the request,
// to the violations report and the (sampled) log.
func (e *Enforcer) done(req *Request, v *Verdict) {
	if e.obs != nil {
		e.obs.ObserveDecision(*v)
	}
	if v.Action == Allow {
		if v.Bot && v.Site != "" {
			// The site's traffic timeline (report.Traffic) counts the
			// bots that pass, by verdict; browsers pass uncounted.
			e.report.Record(report.Record{Site: v.Site, Verification: v.Verification, At: e.clock(req), Kind: report.Allowed})
		}
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
		switch {
		case v.Rule != nil:
			line = v.Rule.Line
		case v.Reason == ReasonCrawlDelay:
			line = v.CrawlDelayLine // the Crawl-delay that throttled it
		case v.Reason == ReasonContentSignal && v.Signal != nil:
			line = v.Signal.Line
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
			zap.String("user_agent", req.UserAgent[:min(len(req.UserAgent), maxLoggedUserAgent)]),
			zap.Int("user_agent_bytes", len(req.UserAgent)),
			zap.String("target", e.logTarget(req.Target)),
			targetBytes(req.Target),
			zap.Bool("dry_run", v.DryRun),
		)
	}
}

// logTarget is the target as denial lines show it: without its query
// string (tokens and e-mail addresses travel in queries) unless
// Config.LogQuery asks for it.
func (e *Enforcer) logTarget(t string) string {
	if !e.cfg.LogQuery {
		if i := strings.IndexByte(t, '?'); i >= 0 {
			t = t[:i] + "?…"
		}
	}
	if len(t) > maxLoggedTarget {
		t = t[:maxLoggedTarget] + "…"
	}
	return t
}

// maxLoggedTarget bounds the bytes of a request target in a log line (its
// full length goes in target_bytes), so that no request writes a line of
// more than about 2 KB.
const maxLoggedTarget = 1024

// targetBytes is the target_bytes field of a line whose target was cut.
func targetBytes(t string) zap.Field {
	if len(t) <= maxLoggedTarget {
		return zap.Skip()
	}
	return zap.Int("target_bytes", len(t))
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
