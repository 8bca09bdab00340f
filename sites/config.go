package sites

import (
	"math"
	"net/url"
	"time"
	"weak"

	"github.com/robotsguard/robotsguard/policy"
	"go.uber.org/zap"
)

// Deps is what a Cache runs with besides its Config: the source of the
// files, the clock, where it logs and reports, and the callbacks of the
// engine that keeps per-site state (traps). Source is required.
type Deps struct {
	// Source fetches robots.txt files.
	Source Source
	// Now is the clock; nil for the real one, with which a timer marks a
	// site due for a refresh, so that requests need not read the clock.
	Now func() time.Time
	// Logger receives one line per change of what a site's robots.txt
	// means for bots; nil for none.
	Logger *zap.Logger
	// Observer receives one call per fetch; nil for none.
	Observer Observer
	// OnRules is called once for each new copy of a site's robots.txt,
	// before requests see it, by the fetch that got it (fetches of one
	// site never run at once); nil for none.
	OnRules func(site *Site, r *policy.Robots)
	// History keeps the version histories of named sites across
	// restarts; nil keeps them in memory only.
	History HistoryStore
	// OnConfirm is called after every fetch that confirms the copy in
	// force, a 304 or a new copy (after OnRules), by the fetch; not after
	// one that failed and kept the last copy. nil for none.
	OnConfirm func(site *Site, r *policy.Robots)
}

// Observer receives the outcome of every robots.txt fetch, for metrics.
type Observer interface {
	// ObserveFetch is called once per robots.txt fetch. site is a bounded
	// label: the site's name ("https://example.com") when the
	// configuration names it (Config.SiteNames), OtherSites otherwise.
	ObserveFetch(site string, outcome Outcome)
}

// unknownSite is the name of every site that Config.Origin leaves without
// a robots.txt (a host none of Config.SiteNames covers).
const unknownSite = "unknown"

// OtherSites is the site label of the fetches of a site that the
// configuration does not name (see Observer).
const OtherSites = "_other"

// New returns an empty Cache for cfg, with its defaults applied (see
// Config.WithDefaults: New applies none of its own), that runs with deps.
// A zero NewSitesPerSecond means no bound.
func New(cfg Config, deps Deps) *Cache {
	now := deps.Now
	timers := now == nil
	empty := policy.Parse(nil)
	if now == nil {
		now = time.Now
	}
	log := deps.Logger
	if log == nil {
		log = zap.NewNop()
	}
	newRate := float64(cfg.NewSitesPerSecond)
	if newRate <= 0 {
		newRate = math.Inf(1)
	}
	refresh := time.Duration(cfg.Refresh)
	c := &Cache{
		timers:    timers,
		src:       deps.Source,
		now:       now,
		refresh:   refresh,
		retry:     min(refresh, time.Minute),
		timeout:   time.Duration(cfg.FetchTimeout),
		empty:     empty,
		pending:   &State{Robots: empty},
		postponed: &State{Robots: empty, Postponed: true},
		newRate:   newRate,
		newBurst:  4 * newRate,
		newTokens: 4 * newRate,
		named:     makeNames(cfg.SiteNames),
		compiled:  make(map[[32]byte]weak.Pointer[policy.Robots]),
		charges:   make(map[[32]byte]int),
		maxBytes:  cfg.MaxBytes,
		log:       log,
		obs:       deps.Observer,
		onRules:   deps.OnRules,
		onConfirm: deps.OnConfirm,
		history:   deps.History,

		allowUnreachable: cfg.OnUnreachable == UnreachableAllow,
	}
	c.lru = newSegLRU(max(cfg.MaxSites, 1), c.release)
	if cfg.Origin != "" {
		only := makeAllowList(cfg.SiteNames)
		c.only = &only
		c.unknown = &Site{site: unknownSite, siteURL: &url.URL{Scheme: "http", Host: "unknown.invalid"}}
		c.unknownState = &State{Robots: empty, Unknown: true}
		c.unknown.state.Store(c.unknownState)
	}
	return c
}
