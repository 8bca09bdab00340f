package sites

import (
	"math"
	"time"
	"weak"

	"github.com/robotsguard/robotsguard/policy"
	"go.uber.org/zap"
)

// Config configures a Cache. Source is required; a zero field of the
// others takes its default (the enforcer's configuration checks them and
// fills them in from its own, which the Caddy module documents).
type Config struct {
	// Source fetches robots.txt files.
	Source Source
	// MaxSites caps the number of sites cached (DefaultMaxSites); see the
	// package documentation for the admission policy.
	MaxSites int
	// MaxBytes bounds the estimated memory of the distinct compiled files
	// the cached sites use; over it, the least recently used sites are
	// dropped (DefaultMaxBytes).
	MaxBytes int64
	// Refresh is how long a copy is used before it is revalidated
	// (DefaultRefresh).
	Refresh time.Duration
	// Timeout bounds one fetch, redirects included, and a request's wait
	// for one (DefaultTimeout).
	Timeout time.Duration
	// NewSitesPerSecond bounds the first fetches of sites not seen
	// before (bursts of four seconds' worth); 0 means no bound. Each
	// client prefix (/24 for IPv4, /48 for IPv6) may spend at most an
	// eighth of it, so a flood of Host names from one network cannot
	// spend everyone's; Named sites spend none of it.
	NewSitesPerSecond float64
	// Named lists the host names the configuration serves ("example.com"):
	// their first fetch is never postponed by NewSitesPerSecond. Wildcard
	// names ("*.example.com") are left out: they cover any number of
	// hosts, which a flood of random subdomains would use.
	Named []string
	// Now is the clock; nil for the real one, with which a timer marks a
	// site due for a refresh, so that requests need not read the clock.
	Now func() time.Time
	// Logger receives one line per change of what a site's robots.txt
	// means for bots; nil for none.
	Logger *zap.Logger
	// Observer receives one call per fetch; nil for none.
	Observer Observer
	// AllowUnreachable says, for log lines only, what bots may do while
	// a site's robots.txt is unreachable and no copy is known.
	AllowUnreachable bool
	// OnRules is called once for each new copy of a site's robots.txt,
	// before requests see it, by the fetch that got it (fetches of one
	// site never run at once); nil for none.
	OnRules func(site *Site, r *policy.Robots)
	// OnConfirm is called after every fetch that confirms the copy in
	// force, a 304 or a new copy (after OnRules), by the fetch; not after
	// one that failed and kept the last copy. nil for none.
	OnConfirm func(site *Site, r *policy.Robots)
}

// Observer receives the outcome of every robots.txt fetch, for metrics.
type Observer interface {
	// ObserveFetch is called once per robots.txt fetch. site is a bounded
	// label: the site's name ("https://example.com") when the
	// configuration names it (Config.Named), OtherSites otherwise.
	ObserveFetch(site string, outcome Outcome)
}

// OtherSites is the site label of the fetches of a site that the
// configuration does not name (see Observer).
const OtherSites = "_other"

// New returns an empty Cache.
func New(cfg Config) *Cache {
	orDefault(&cfg.MaxSites, DefaultMaxSites)
	orDefault(&cfg.MaxBytes, DefaultMaxBytes)
	orDefault(&cfg.Refresh, DefaultRefresh)
	orDefault(&cfg.Timeout, DefaultTimeout)
	size, now := cfg.MaxSites, cfg.Now
	timers := now == nil
	empty := policy.Parse(nil)
	if now == nil {
		now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	newRate := cfg.NewSitesPerSecond
	if newRate <= 0 {
		newRate = math.Inf(1)
	}
	c := &Cache{
		timers:    timers,
		src:       cfg.Source,
		now:       now,
		refresh:   cfg.Refresh,
		retry:     min(cfg.Refresh, time.Minute),
		timeout:   cfg.Timeout,
		empty:     empty,
		pending:   &State{Robots: empty},
		postponed: &State{Robots: empty, Postponed: true},
		newRate:   newRate,
		newBurst:  4 * newRate,
		newTokens: 4 * newRate,
		named:     makeNames(cfg.Named),
		compiled:  make(map[[32]byte]weak.Pointer[policy.Robots]),
		charges:   make(map[[32]byte]int),
		maxBytes:  cfg.MaxBytes,
		log:       log,
		obs:       cfg.Observer,
		onRules:   cfg.OnRules,
		onConfirm: cfg.OnConfirm,

		allowUnreachable: cfg.AllowUnreachable,
	}
	c.lru = newSegLRU(size, c.release)
	return c
}

// orDefault sets *v to def when it is zero or negative.
func orDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
