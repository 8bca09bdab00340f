package guard

import (
	"crypto/tls"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
	"github.com/robotsguard/robotsguard/traps"
)

// Option configures what a Config cannot express: code and live objects.
type Option func(*options)

type options struct {
	logger     *zap.Logger
	now        func() time.Time
	source     sites.Source
	history    sites.HistoryStore
	observer   Observer
	transport  http.RoundTripper
	limiter    limit.Limiter
	verifier   *identity.Verifier
	feedStore  identity.Storage
	storeTLS   *tls.Config
	bans       limit.Bans
	trapSecret []byte
	trapClocks traps.ClockStore
	// licenseDocs: WithOfflineLicenses.
	licenseDocs func(url string) ([]byte, bool)

	storeTLSForAgents *tls.Config
}

// Observer receives one call per decision and per robots.txt fetch, for
// metrics. Every argument is a bounded label: no client address, User-Agent
// or path is passed. Implementations must be safe for concurrent use and
// fast; they run on the request path. An Observer that also implements
// identity.Observer receives the outcomes of the crawler verifier's feed
// fetches and reverse-DNS checks.
type Observer interface {
	// ObserveDecision is called once per decided request with its verdict.
	// v.Site is empty for requests exempt before the site is looked up
	// (/robots.txt, internal fetches). v.DryRun reports that the request
	// passes whatever v.Action says (Config.DryRun), so that dashboards can
	// tell a dry run from enforcement (see Verdict.ActionName). Bounded
	// labels are v.Action, v.Reason, v.Verification and, with a bound of
	// its own, v.Group.
	ObserveDecision(v Verdict)
	// ObserveFetch is called once per robots.txt fetch, with the site as
	// a bounded label: its name when the configuration names it,
	// OtherSites otherwise (see sites.Observer).
	ObserveFetch(site string, outcome sites.Outcome)
}

// WithLogger sets the logger. Default: no logging. Denials and throttles are
// logged at Info level, sampled (see the package documentation); fetch
// failures are logged at Warn level.
func WithLogger(l *zap.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithClock sets the function that tells the time, for tests. Default
// time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithSource sets where robots.txt files come from, overriding
// Config.RobotsTxt. See sites.SelfSource, sites.URLSource, sites.FileSource and
// sites.BytesSource.
func WithSource(s sites.Source) Option {
	return func(o *options) {
		if s != nil {
			o.source = s
		}
	}
}

// WithHistory keeps the robots.txt version histories of the sites that
// Config.RobotsTxt.SiteNames names in s, across restarts. Default: in
// memory only.
func WithHistory(s sites.HistoryStore) Option { return func(o *options) { o.history = s } }

// WithObserver sets the metrics observer. Default: none.
func WithObserver(obs Observer) Option {
	return func(o *options) { o.observer = obs }
}

// WithTransport sets the RoundTripper of the HTTP client used for robots.txt
// URLs (the URL source). A transport of your own replaces the default one's
// guard against redirects into the private network (see URLSource).
// Default: a dedicated http.Transport.
func WithTransport(rt http.RoundTripper) Option {
	return func(o *options) { o.transport = rt }
}

// WithLimiter sets the Crawl-delay limiter, overriding the in-memory one
// that New builds from Config.CrawlDelay.MaxKeys and Config.CrawlDelayTolerance. Pass
// the same limiter to the Engines that replace each other on a
// configuration reload to keep every bot's Crawl-delay clock (the Caddy
// module does); keys name the site and group, so Engines of different
// sites can share one.
func WithLimiter(l limit.Limiter) Option {
	return func(o *options) {
		if l != nil {
			o.limiter = l
		}
	}
}

// WithVerifier sets the crawler verifier used when Config.Verify is on,
// instead of one that New builds (see NewVerifier): front ends pass the same
// verifier to the Engines that replace each other on a reload, to keep
// its feeds and DNS cache. The Engine does not close it.
func WithVerifier(v *identity.Verifier) Option {
	return func(o *options) { o.verifier = v }
}

// WithFeedStorage sets where the verifier that New builds keeps the last
// good copy of each IP-range feed (the Caddy module passes Caddy's
// storage), overriding VerifyConfig.CacheDir.
func WithFeedStorage(s identity.Storage) Option {
	return func(o *options) { o.feedStore = s }
}

// WithStoreTLS sets the TLS configuration of a rediss:// store (Config.Store),
// for a server whose certificate a private CA signed. Default: the system's
// roots.
func WithStoreTLS(c *tls.Config) Option {
	return func(o *options) { o.storeTLS = c }
}

// WithBans sets the ban list: the Engine refuses the clients it holds
// (whether or not it has traps or ban_after of its own) and adds its own
// bans to it, instead of the list New builds when Config.Traps.Paths or
// Config.Bans.After is set (in memory, or in the store's Redis). Front ends
// pass one list to every Engine, and to the ones that replace them on a
// reload, so that a ban holds everywhere and survives reloads. The
// Engine does not close it.
func WithBans(b limit.Bans) Option {
	return func(o *options) { o.bans = b }
}

// WithTrapSecret sets the key of per-client trap link tokens when
// Config.Traps.Secret is empty (the Caddy module passes one it keeps in
// Caddy's storage, so that links survive restarts and hold across the
// instances that share the storage). Without either, New makes a random
// key.
func WithTrapSecret(key []byte) Option {
	return func(o *options) { o.trapSecret = key }
}

// WithTrapClocks keeps the grace clocks of traps in s, so that they survive
// restarts (see traps.ClockStore); without it they live in memory.
func WithTrapClocks(s traps.ClockStore) Option {
	return func(o *options) { o.trapClocks = s }
}

// WithOfflineLicenses makes the Engine judge the licences of robots.txt's
// License lines (RSL 1.0) without the network, as an audit of past
// requests must: the RSL documents are docs' (by URL; a document docs
// lacks is one that could not be read, whose content is not enforced),
// none is fetched or fetched again, and no licence server is asked: a
// request's LicenseToken passes unchecked (Allow, with the Verdict's
// License and LicenseServer), while a bot without one is refused as
// always. docs must be safe for concurrent use. It does nothing with
// licenses off.
func WithOfflineLicenses(docs func(url string) ([]byte, bool)) Option {
	return func(o *options) { o.licenseDocs = docs }
}

// BanObserver is an optional Observer method set: ObserveBan is called once
// per ban (trigger "trap" or "ban_after"; outcome BanBanned, or BanDropped
// when the ban list was full of live bans; dryRun for bans that dry_run
// only logs).
type BanObserver interface {
	ObserveBan(trigger, outcome string, dryRun bool)
}

// Outcomes of a ban (BanObserver).
const (
	BanBanned  = "banned"
	BanDropped = "dropped"
	// BanProxy: the client address is a peer that forwards for several
	// clients without being a trusted proxy: refused, not banned.
	BanProxy = "proxy"
)

// WithKeyDirectoryTLS sets the TLS configuration of Web Bot Auth key
// directory fetches, for agents whose certificate a private CA signed.
// Default: the system's roots.
func WithKeyDirectoryTLS(c *tls.Config) Option {
	return func(o *options) { o.storeTLSForAgents = c }
}
