package guard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/license"
	"github.com/robotsguard/robotsguard/traps"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/logsample"
	"github.com/robotsguard/robotsguard/limit"
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

// Engine applies each site's robots.txt to the bots that visit it. It is
// safe for concurrent use. Build it with New; Decide is the decision alone,
// Handler the net/http front end.
type Engine struct {
	cfg        Config
	now        func() time.Time
	sites      *sites.Cache
	classes    *classify.Classifier
	lic        *licenses // nil with licenses off
	limits     limit.Limiter
	obs        Observer
	log        *zap.Logger // decision lines, sampled
	client     *http.Client
	byGroup    bool
	blockScope string // crawl_delay_scope block: the site part of every limiter key
	allowUnrch bool
	selfSource bool               // robots.txt comes from the sites themselves (sites.SelfSource)
	verifier   *identity.Verifier // nil when verification is off
	// purposes is the registry of crawler purposes, nil when
	// content_signals and licenses are off; signals: content_signals
	// is on, signalsReport: content_signals report.
	purposes      *identity.Purposes
	signals       bool
	signalsReport bool
	ownVerify     bool      // New built verifier; Close closes it
	ownLimits     io.Closer // the store limiter New built; Close closes it
	denySpoof     bool
	personOwn     bool // classify.Config.PersonAgents own: verified agents of people answer to their own groups only
	starOnDNS     bool
	acceptSig     bool                             // verify.web_bot_auth.accept_signature
	warnedNG      atomic.Bool                      // warnNotGlobal has logged
	warnedProxy   atomic.Bool                      // warnUntrustedProxy has logged
	traps         *traps.Set                       // nil: none
	trapLink      string                           // the path per-client trap links extend; "" with trap_links static
	trapKey       []byte                           // the key of trap link tokens
	trapClocks    traps.ClockStore                 // nil: the clocks live in memory only
	realClock     bool                             // the clock is time.Now: timers may announce traps
	keptClocks    atomic.Int64                     // trap clocks stored in trapClocks (maxKeptClocks)
	armTimers     atomic.Int64                     // pending timers of announceTrap (maxArmTimers)
	bans          limit.Bans                       // nil when neither traps nor ban_after is set
	bansActive    func() bool                      // whether any ban may be held
	ownBans       io.Closer                        // the shared ban list New built; Close closes it
	banAfter      *traps.DenialCounter             // nil: off
	untrusted     *untrustedPeers                  // peers that forward without being trusted (proxied)
	nets          *netCounters                     // recent bans per network (aggregated bans); nil without bans
	rulesClocks   *lru.Cache[rulesClockKey, int64] // since when each set of rules has armed each trap
	report        *report.Recorder

	bufs sync.Pool // *respBuf for response bodies and decoded views
}

// New validates cfg, applies its defaults and returns an Engine. An invalid
// field yields an error that names it, e.g.
// "robots_guard: refresh: must be at most 24h, got 48h0m0s".
func New(cfg Config, opts ...Option) (_ *Engine, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	o := collect(opts)
	injected := o.now
	if o.now == nil {
		o.now = time.Now
	}
	e := &Engine{
		cfg:        cfg,
		now:        o.now,
		denySpoof:  cfg.Verifying() && cfg.Verify.OnSpoofed == identity.SpoofedDeny,
		personOwn:  cfg.Bots.PersonAgents == classify.PersonAgentsOwn,
		starOnDNS:  cfg.Verifying() && cfg.Verify.OnDNSError == identity.DNSErrorStar,
		acceptSig:  cfg.Verifying() && cfg.Verify.WebBotAuth != nil && *cfg.Verify.WebBotAuth.AcceptSignature,
		limits:     o.limiter,
		obs:        o.observer,
		byGroup:    cfg.CrawlDelay.Key == limit.KeyGroup,
		allowUnrch: cfg.RobotsTxt.OnUnreachable == sites.UnreachableAllow,
		traps:      traps.NewSet(cfg.Traps.Paths),
		trapKey:    trapSecret(cfg, o),
		trapClocks: o.trapClocks,
		realClock:  injected == nil,
		report:     report.New(cfg.Clients.IPv4Prefix, cfg.Clients.IPv6Prefix, o.now),
		untrusted:  newUntrustedPeers(),
	}
	e.rulesClocks, _ = lru.New[rulesClockKey, int64](maxRulesClocks)
	if cfg.Traps.Links == traps.LinksClient {
		e.trapLink = traps.LinkPath(cfg.Traps.Paths)
	}
	if cfg.CrawlDelay.Scope == limit.ScopeBlock {
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
	// A licence's usage terms (RSL) read the same purposes as signals.
	if cfg.ContentSignals != SignalsOff || cfg.Licenses.Mode != license.ModeOff {
		e.purposes = identity.NewPurposes()
	}
	e.signals = cfg.ContentSignals != SignalsOff
	e.signalsReport = cfg.ContentSignals == SignalsReport
	e.classes = classify.New(cfg.Bots, e.verifier, e.purposes)
	if err = e.buildLimits(o); err != nil {
		return nil, err
	}
	e.bufs.New = func() any { return &respBuf{b: make([]byte, 0, 128)} }
	// Every line goes through the sampler, the robots.txt state lines too:
	// a flood of new Host names cannot flood the log.
	e.log = o.logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return logsample.New(c, logSampleTick, logSampleFirst, logSampleThereafter)
	}))
	e.client = sites.NewHTTPClient(o.transport, time.Duration(cfg.RobotsTxt.FetchTimeout))
	src := o.source
	if src == nil {
		if src, err = cfg.RobotsTxt.NewSource(e.client); err != nil {
			return nil, err
		}
	}
	// The default source is a comparable value: another source (of
	// another type) compares unequal without a panic.
	e.selfSource = src == sites.SelfSource()
	deps := sites.Deps{Source: src, Now: injected, Logger: e.log, Observer: o.observer, History: o.history}
	if e.traps != nil {
		deps.OnRules, deps.OnConfirm = e.checkTraps, e.confirmTraps
	}
	e.sites = sites.New(cfg.RobotsTxt, deps)
	if cfg.Licenses.Mode != license.ModeOff {
		e.lic = newLicenses(cfg.Licenses, o.transport, e.log, o.observer, e.now)
		e.lic.self, e.lic.given = e.selfSource, o.licenseDocs
	}
	return e, nil
}

// buildLimits sets up the Crawl-delay limiter (WithLimiter's, or one of
// its own: in memory, or in Config.Store), the ban_after counter and the
// ban list (WithBans', or one in the limiter's store, or in memory) when
// traps or ban_after need one.
func (e *Engine) buildLimits(o options) error {
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
		e.banAfter = traps.NewDenialCounter(cfg.CrawlDelay.MaxKeys, time.Duration(cfg.Bans.After.Window), cfg.Bans.After.Denials)
	}
	e.bansActive = func() bool { return true }
	// A ban list given with WithBans is checked whatever this Engine's
	// own triggers: a client banned through another one is banned here
	// too. Without one, an Engine that can ban keeps its own.
	e.bans = o.bans
	if e.bans == nil && (e.traps != nil || e.banAfter != nil) {
		if r, ok := e.limits.(*limit.Redis); ok {
			rb := r.NewBans(cfg.Bans.MaxEntries)
			e.bans, e.ownBans = rb, rb
		} else {
			e.bans = limit.NewMemoryBans(cfg.Bans.MaxEntries)
		}
	}
	if e.bans != nil {
		e.nets = newNetCounters(time.Duration(cfg.Bans.For))
	}
	if a, ok := e.bans.(interface{ Active() bool }); ok {
		e.bansActive = a.Active // skips the address parse while no ban exists
	}
	return nil
}

// Config returns the configuration in force, defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// SelfSourced reports whether e asks each site itself for its robots.txt
// (sites.SelfSource: the default, when neither Config.RobotsTxt nor
// WithSource names another source), which only a front end that serves
// the site can answer.
func (e *Engine) SelfSourced() bool { return e.selfSource }

// Close waits for the background writes of robots.txt histories,
// releases idle connections of the robots.txt HTTP client, stops the
// background refresh of the crawler verifier that New built, and closes
// the store and shared ban list that New built (not those given with
// WithVerifier, WithLimiter or WithBans). Call it when the Engine is no
// longer used: afterwards its store calls fail (and decide locally).
func (e *Engine) Close() error {
	if e.sites != nil {
		e.sites.Wait()
	}
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
func (e *Engine) Verifier() *identity.Verifier { return e.verifier }

// done reports a verdict to the observer and, when it stops the request,
// to the violations report and the (sampled) log.
func (e *Engine) done(req *Request, v *Verdict) {
	if e.obs != nil {
		e.obs.ObserveDecision(*v)
	}
	if v.Action == Allow {
		switch {
		case licensed(v):
			// A bot that passed with a valid licence token: its client's
			// row counts it (and the timeline, as allowed).
			if rec, ok := recordOf(v, req.UserAgent, e.clientKey(req), e.clock(req)); ok {
				e.report.Record(rec)
			}
		case v.Bot && v.Site != "":
			// The site's traffic timeline (report.Traffic) counts the
			// bots that pass, by verdict; browsers pass uncounted.
			e.report.Record(report.Record{Site: v.Site, Verification: v.Verification, At: e.clock(req), Kind: report.Allowed})
		}
		return
	}
	if rec, ok := recordOf(v, req.UserAgent, e.clientKey(req), e.clock(req)); ok {
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
			zap.String("undeclared", v.Undeclared),
		)
	}
}

// logTarget is the target as denial lines show it: without its query
// string (tokens and e-mail addresses travel in queries) unless
// Config.LogQuery asks for it.
func (e *Engine) logTarget(t string) string {
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
