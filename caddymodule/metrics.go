package caddymodule

import (
	"errors"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
)

// maxGroupLabels caps the distinct values of the group label at a time;
// later groups are counted as "_other", so a site that lists thousands of
// agents cannot blow up the metrics. A config reload frees the places of
// the groups that had no request since the previous one (groupLabels).
const maxGroupLabels = 50

// The collectors are built once and registered on every config's registry
// (Caddy makes a new one per load), so counts survive reloads.
var (
	requestsTotal = &decisionCollector{desc: prometheus.NewDesc("caddy_robots_guard_requests_total",
		"Requests decided by robots_guard, by action (allow, deny, throttle, and dry_run_deny, dry_run_throttle under dry_run), reason, robots.txt group, crawler verification verdict (none, verified, spoofed, unverifiable) and site (a site address of the configuration, _other for any other host, empty for exempt requests).",
		[]string{"action", "reason", "group", "verification", "site"}, nil)}
	fetchesTotal = counterVec("robots_fetches_total",
		"robots.txt fetches by site (a site address of the configuration, _other for any other host) and outcome (ok, html, not_modified, unavailable, unreachable, postponed).",
		"site", "outcome")
	feedFetchesTotal = counterVec("verify_feed_fetches_total",
		"Crawler IP-range feed fetches by feed and outcome (ok, not_modified, stored, error, invalid); error and invalid keep the last good copy.",
		"feed", "outcome")
	lookupsTotal = counterVec("verify_dns_lookups_total",
		"Forward-confirmed reverse-DNS checks by outcome (verified, failed: spoofed, error: unverifiable).",
		"outcome")
	bansTotal = counterVec("bans_total",
		"Clients banned for ignoring robots.txt, by trigger (trap, ban_after), outcome (banned; dropped: the ban list held bans.max_entries live bans, none of which is lifted for a new one) and dry_run (true: logged, not enforced).",
		"trigger", "outcome", "dry_run")
	licenseFetchesTotal = counterVec("license_fetches_total",
		"Fetches of the RSL documents that robots.txt License lines name, by outcome (ok; not_modified: a 304 to a revalidation, the copy kept; error and invalid keep the last good copy, or leave the content unenforced when none is known).",
		"outcome")
	undeclaredTotal = counterVec("undeclared_total",
		"Requests of undeclared bots (a User-Agent that names a browser, contradicted by the request's other headers), by rule (classify.UndeclaredRules: no-accept-language, no-client-hints, no-fetch-metadata) and action (allow, deny, throttle, and dry_run_deny, dry_run_throttle in dry run or with bots undeclared report).",
		"rule", "action")
	storeCallsTotal = counterVec("store_calls_total",
		"Crawl-delay decisions that involved the shared store, by outcome (ok, error, timeout, skipped_backoff: decided locally while calls pause after failures).",
		"outcome")
	storeCallSeconds = histogram("store_call_seconds",
		"Latency of the calls to the shared Crawl-delay store.",
		.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25)
	lookupSeconds = histogram("verify_dns_lookup_seconds",
		"Duration of forward-confirmed reverse-DNS checks (PTR and forward lookups).",
		.001, .005, .01, .025, .05, .1, .25, .5, 1, 2, 5)
)

// counterVec makes a caddy_robots_guard_<name> counter vector.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "caddy", Subsystem: "robots_guard", Name: name, Help: help}, labels)
}

// histogram makes a caddy_robots_guard_<name> histogram with the given
// bucket bounds (seconds).
func histogram(name, help string, buckets ...float64) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "caddy", Subsystem: "robots_guard", Name: name, Help: help, Buckets: buckets})
}

// registerMetrics registers the collectors on reg; registering them again
// on the same registry is not an error.
func registerMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{requestsTotal, fetchesTotal, feedFetchesTotal, lookupsTotal, lookupSeconds, storeCallsTotal, storeCallSeconds, bansTotal, undeclaredTotal, licenseFetchesTotal} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}

// groupLabels bounds the group label values (see maxGroupLabels): seen
// holds the groups that have counters of their own in requestsTotal; the
// others are counted as "_other". A new config generation (newGeneration)
// sets it to the groups that had requests since the previous one, so that
// a group no longer in any site's robots.txt, or of a site no longer
// served, gives its place up at the next reload instead of keeping it for
// the life of the process.
var groupLabels = struct {
	sync.RWMutex
	seen map[string]bool
	gen  weak.Pointer[prometheus.Registry] // the generation of the last retireGroups
}{seen: make(map[string]bool)}

func groupLabel(group string) string {
	if group == "" {
		return "_none"
	}
	groupLabels.RLock()
	ok := groupLabels.seen[group]
	n := len(groupLabels.seen)
	groupLabels.RUnlock()
	if ok {
		return group
	}
	if n >= maxGroupLabels {
		return "_other"
	}
	groupLabels.Lock()
	defer groupLabels.Unlock()
	if len(groupLabels.seen) >= maxGroupLabels {
		return "_other"
	}
	groupLabels.seen[group] = true
	return group
}

// newGeneration starts a new config generation of the group labels when
// reg, the metrics registry of the configuration being provisioned (Caddy
// makes one per config load, shared by all its handlers), is not the one
// of the last call: requestsTotal retires the groups that had no request
// since the previous generation began. It reports whether it did.
func newGeneration(reg *prometheus.Registry) bool {
	if reg == nil {
		return false
	}
	w := weak.Make(reg)
	groupLabels.Lock()
	defer groupLabels.Unlock()
	if groupLabels.gen == w {
		return false
	}
	groupLabels.gen = w
	requestsTotal.retireGroups()
	return true
}

var (
	_ identity.Observer   = metricsObserver{}
	_ limit.StoreObserver = metricsObserver{}
	_ guard.BanObserver   = metricsObserver{}
)

// metricsObserver feeds the Engine's decisions and fetches into the
// collectors. Browsers (not_bot) are counted too, under group "_none".
type metricsObserver struct{}

// ObserveLicenseFetch counts a fetch of an RSL document.
func (metricsObserver) ObserveLicenseFetch(outcome string) {
	licenseFetchesTotal.WithLabelValues(outcome).Inc()
}

func (metricsObserver) ObserveDecision(v guard.Verdict) {
	requestsTotal.inc(v)
	if v.Undeclared != "" { // a rule's name: bounded values
		undeclaredTotal.WithLabelValues(v.Undeclared, v.ActionName()).Inc()
	}
}

// counterKey identifies a counter of requestsTotal.
type counterKey struct {
	action       guard.Action
	dryRun       bool
	reason       guard.Reason
	verification identity.Verdict
	group        string
	site         string // Verdict.SiteLabel
}

// decisionCollector is requests_total: one counter per label tuple, kept in
// cells summed when scraped. A request increments a cell picked at random
// (see add), so that concurrent requests (every browser increments the
// same tuple) mostly write different cache lines. Tuples are bounded by
// maxGroupLabels.
//
// The counter of a request is found through fast, an array indexed by the
// small fields of the tuple, and a copy-on-write map of group names there:
// hashing the whole tuple as a sync.Map key cost a browser 75 ns. counters
// remains the authority; fast is filled from it.
type decisionCollector struct {
	desc     *prometheus.Desc
	counters sync.Map // counterKey → *cellCounter
	fast     [fastTuples]atomic.Pointer[tupleCounters]
	fastMu   sync.Mutex // serialises writers of fast
}

// fastTuples is the size of the fast index: 2 bits of action, 1 of dry
// run, 4 of reason and 2 of verification.
const fastTuples = 1 << 9

// maxFastGroups bounds the group names each fast tuple remembers; requests
// of other groups take the sync.Map.
const maxFastGroups = 256

// tupleCounters are the counters of one (action, dry run, reason,
// verification) tuple, by site label and group name, read without locks.
// Both levels are string-keyed maps, found with the runtime's string-keyed
// map access, which Caddy's own maps keep in the caches (a map keyed by a
// struct of the two names ran the generic map code: 15 instruction cache
// misses per bot request, counted by bench/footprint). Counters without a
// group (browsers, robots.txt fetches) are in bySite.
type tupleCounters struct {
	bySite map[string]*cellCounter
	groups map[string]map[string]*cellCounter // site label → group → counter
	n      int                                // counters in groups
}

// labelKey is the site label and group of a counter within a tuple.
type labelKey struct{ site, group string }

// fastIndex packs the small fields of v, or reports that one is out of
// the index's range.
func fastIndex(v *guard.Verdict) (int, bool) {
	if v.Action > 3 || v.Reason > 15 || v.Verification > 3 {
		return 0, false
	}
	i := int(v.Action)<<7 | int(v.Reason)<<3 | int(v.Verification)<<1
	if v.DryRun {
		i |= 1
	}
	return i, true
}

const counterCells = 8

type cellCounter struct {
	labels [5]string
	cells  [counterCells]struct {
		n atomic.Uint64
		_ [56]byte // one cache line each
	}
	// Under groupLabels' lock and fastMu: the count at the last
	// retireGroups, and whether it removed the counter.
	atRetire uint64
	retired  bool
}

// total sums the cells of cc.
func (cc *cellCounter) total() uint64 {
	var n uint64
	for i := range cc.cells {
		n += cc.cells[i].n.Load()
	}
	return n
}

func (c *decisionCollector) inc(v guard.Verdict) {
	idx, fastOK := fastIndex(&v)
	var cc *cellCounter
	if fastOK {
		if t := c.fast[idx].Load(); t != nil {
			if v.Group == "" {
				cc = t.bySite[v.SiteLabel]
			} else {
				cc = t.groups[v.SiteLabel][v.Group]
			}
		}
	}
	if cc == nil {
		cc = c.slow(v)
		if fastOK {
			c.remember(idx, labelKey{v.SiteLabel, v.Group}, cc)
		}
	}
	c.add(cc)
}

// slow finds or makes the counter of v's tuple in the sync.Map.
func (c *decisionCollector) slow(v guard.Verdict) *cellCounter {
	k := counterKey{v.Action, v.DryRun, v.Reason, v.Verification, v.Group, v.SiteLabel}
	cc, ok := c.counters.Load(k)
	if !ok {
		g := groupLabel(v.Group)
		if g != v.Group && v.Group != "" {
			k.group = g // "_other": one tuple for every group over the cap
		}
		cc, _ = c.counters.LoadOrStore(k, &cellCounter{labels: [5]string{v.ActionName(), v.Reason.String(), g, v.Verification.String(), v.SiteLabel}})
	}
	return cc.(*cellCounter)
}

// remember adds a (site, group) counter to the fast index (a new copy of
// the tuple's entry).
func (c *decisionCollector) remember(idx int, key labelKey, cc *cellCounter) {
	c.fastMu.Lock()
	defer c.fastMu.Unlock()
	if cc.retired {
		return // found just before retireGroups removed it
	}
	old := c.fast[idx].Load()
	t := &tupleCounters{}
	if old != nil {
		*t = *old
	}
	if len(t.bySite)+t.n >= maxFastGroups {
		return
	}
	if key.group == "" {
		t.bySite = withCounter(t.bySite, strings.Clone(key.site), cc)
	} else {
		if _, ok := t.groups[key.site][key.group]; ok {
			return // remembered by a request that raced this one
		}
		// A new copy of the outer map and of the site's own.
		site := strings.Clone(key.site)
		t.groups = maps.Clone(t.groups)
		if t.groups == nil {
			t.groups = map[string]map[string]*cellCounter{}
		}
		t.groups[site] = withCounter(t.groups[site], strings.Clone(key.group), cc)
		t.n++
	}
	c.fast[idx].Store(t)
}

// withCounter returns a copy of m with cc at k (m is read without locks,
// so it is never written in place).
func withCounter[K comparable](m map[K]*cellCounter, k K, cc *cellCounter) map[K]*cellCounter {
	m = maps.Clone(m)
	if m == nil {
		m = map[K]*cellCounter{}
	}
	m[k] = cc
	return m
}

// add counts one request in cc, in a cell picked by the thread's random
// number generator: two requests running at once write the same cell one
// time in counterCells. (A per-P cell through a sync.Pool, as
// internal/stripe hands out, cost a browser's request 150 instructions and
// 12 instruction cache misses, code Caddy's path does not keep warm.)
func (c *decisionCollector) add(cc *cellCounter) {
	cc.cells[rand.Uint32()%counterCells].n.Add(1)
}

// Describe implements prometheus.Collector.
func (c *decisionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: the sum of each tuple's cells.
func (c *decisionCollector) Collect(ch chan<- prometheus.Metric) {
	sums := map[[5]string]uint64{}
	c.counters.Range(func(_, v any) bool {
		cc := v.(*cellCounter)
		sums[cc.labels] += cc.total() // "_other" tuples of several groups add up
		return true
	})
	for l, n := range sums {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), l[0], l[1], l[2], l[3], l[4])
	}
}

// retireGroups removes the counters of the groups that had no request
// since the last call (none of their counters moved), with their series,
// and leaves in groupLabels.seen only the groups that did: the places of
// the others go to new names. Counters of active groups are kept whole, so
// their series never restart; "_none" and "_other" are never removed.
// Requests counted while it runs may be lost to a removed counter (one
// found just before), but only for a group that had none for a whole
// generation. The caller holds groupLabels' lock.
func (c *decisionCollector) retireGroups() {
	c.fastMu.Lock()
	defer c.fastMu.Unlock()
	for i := range c.fast {
		c.fast[i].Store(nil) // refilled from counters by the slow path
	}
	active := map[string]bool{}
	c.counters.Range(func(k, v any) bool {
		cc := v.(*cellCounter)
		if n := cc.total(); n != cc.atRetire {
			cc.atRetire = n
			active[k.(counterKey).group] = true
		}
		return true
	})
	seen := make(map[string]bool, len(active))
	c.counters.Range(func(k, v any) bool {
		switch g := k.(counterKey).group; {
		case g == "" || g == "_other":
		case active[g]:
			seen[g] = true
		default:
			v.(*cellCounter).retired = true
			c.counters.Delete(k)
		}
		return true
	})
	groupLabels.seen = seen
}

// ObserveFeed counts a feed fetch; the feed label takes the configured
// feed sources only.
func (metricsObserver) ObserveFeed(source, outcome string) {
	feedFetchesTotal.WithLabelValues(source, outcome).Inc()
}

// ObserveBan counts a ban.
func (metricsObserver) ObserveBan(trigger, outcome string, dryRun bool) {
	bansTotal.WithLabelValues(trigger, outcome, strconv.FormatBool(dryRun)).Inc()
}

// ObserveStoreCall counts a store call and, for calls made, its latency.
func (metricsObserver) ObserveStoreCall(outcome string, d time.Duration) {
	storeCallsTotal.WithLabelValues(outcome).Inc()
	if outcome != limit.StoreSkipped {
		storeCallSeconds.Observe(d.Seconds())
	}
}

// ObserveLookup counts a reverse-DNS check and its duration.
func (metricsObserver) ObserveLookup(outcome string, d time.Duration) {
	lookupsTotal.WithLabelValues(outcome).Inc()
	lookupSeconds.Observe(d.Seconds())
}

func (metricsObserver) ObserveFetch(site string, outcome sites.Outcome) {
	fetchesTotal.WithLabelValues(site, outcome.String()).Inc()
}
