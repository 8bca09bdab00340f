package middleware

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/robotsguard/robotsguard/identity"
)

// Bounds of the violations report. Memory: at most reportSites sites, each
// in reportShards shards of reportMinutes + reportHours buckets of at most
// reportClients/reportShards entries (about 100 bytes each), and at most
// reportLines lines of at most reportWhom entries: about 200 KB a site,
// 20 MB in all.
const (
	reportSites   = 100
	reportMinutes = 12 // five-minute buckets: the last hour
	reportHours   = 24 // hourly buckets: the last day
	reportClients = 32 // space-saving counters per bucket
	reportLines   = 256
	reportShards  = 4
	reportWhom    = 8
	reportTop     = 20 // rows per list in a Report
)

// reportKey is who a counted request came from.
type reportKey struct {
	client       [16]byte
	group        string
	verification identity.Verdict
}

// reportCounts are the counts of one client in a bucket.
type reportCounts struct {
	denials, throttles, traps, banned int64
	// err bounds the overcount of a space-saving counter that took over
	// another's slot.
	err int64
}

func (c reportCounts) total() int64 { return c.denials + c.throttles + c.traps + c.banned }

// spaceSaving keeps the heaviest keys of a stream in a fixed number of
// counters (Metwally et al.): a key not held replaces the lightest one,
// inheriting its total as the error bound. With fewer distinct keys than
// counters the counts are exact.
type spaceSaving[K comparable] struct {
	m   map[K]*reportCounts
	max int
}

func newSpaceSaving[K comparable](max int) spaceSaving[K] {
	return spaceSaving[K]{m: make(map[K]*reportCounts, max), max: max}
}

func (s *spaceSaving[K]) add(k K, f func(*reportCounts)) {
	c, ok := s.m[k]
	if !ok {
		if len(s.m) >= s.max {
			var minK K
			var minC *reportCounts
			for k2, c2 := range s.m {
				if minC == nil || c2.total() < minC.total() {
					minK, minC = k2, c2
				}
			}
			delete(s.m, minK)
			c = &reportCounts{err: minC.total()}
			// The newcomer inherits the evicted count as its error,
			// spread as denials so totals stay upper bounds.
			c.denials = minC.total()
		} else {
			c = &reportCounts{}
		}
		s.m[k] = c
	}
	f(c)
}

// bucket is one time slice of a site's report.
type bucket struct {
	start   int64 // Unix ns
	len     int64 // ns
	clients spaceSaving[reportKey]
}

// lineKey is a robots.txt line: its number and pattern, so that an edited
// file's counts do not merge with the old file's under one number.
type lineKey struct {
	line    int
	pattern string
}

// lineStat counts the denials of one robots.txt line.
type lineStat struct {
	text  string
	count int64
	whom  spaceSaving[whomKey]
}

type whomKey struct {
	group        string
	verification identity.Verdict
}

// siteReport is the report of one site, in shards by client, so that
// requests of different clients rarely wait for one another (the denied
// path's only shared write).
type siteReport struct {
	site   string
	shards [reportShards]reportShard
}

// reportShard is the part of a site's report of some of its clients.
type reportShard struct {
	mu      sync.Mutex
	minutes [reportMinutes]bucket
	hours   [reportHours]bucket
	lines   map[lineKey]*lineStat
	other   int64    // denials of lines over the shard's share of reportLines
	_       [64]byte // keep shards' locks on separate cache lines
}

// fold adds a five-minute bucket that leaves the ring to the hourly bucket
// of its start.
func (sr *reportShard) fold(mb *bucket) {
	if mb.clients.m == nil {
		return
	}
	hs := mb.start - mb.start%int64(time.Hour)
	hb := &sr.hours[(hs/int64(time.Hour))%reportHours]
	if hb.start != hs {
		*hb = bucket{start: hs, len: int64(time.Hour), clients: newSpaceSaving[reportKey](reportClients / reportShards)}
	}
	for k, c := range mb.clients.m {
		hb.clients.add(k, func(t *reportCounts) {
			t.denials += c.denials
			t.throttles += c.throttles
			t.traps += c.traps
			t.banned += c.banned
			t.err += c.err
		})
	}
}

// reporter keeps the violations report of an Enforcer.
type reporter struct {
	last      atomic.Pointer[siteReport] // the site of the latest record: most servers serve one
	sites     *lru.Cache[string, *siteReport]
	mu        sync.Mutex // serialises site creation
	v4, v6    int
	now       func() time.Time
	startedAt time.Time
}

func newReporter(v4, v6 int, now func() time.Time) *reporter {
	c, _ := lru.New[string, *siteReport](reportSites)
	return &reporter{sites: c, v4: v4, v6: v6, now: now, startedAt: now()}
}

// record counts one stopped request.
func (r *reporter) record(v *Verdict, client [16]byte) {
	if v.Site == "" {
		return
	}
	var kind func(c *reportCounts)
	switch {
	case v.Reason == ReasonTrap:
		kind = func(c *reportCounts) { c.traps++ }
	case v.Reason == ReasonBanned:
		kind = func(c *reportCounts) { c.banned++ }
	case v.Action == Throttle && v.Reason == ReasonCrawlDelay:
		kind = func(c *reportCounts) { c.throttles++ }
	case v.Action == Deny && (v.Reason == ReasonDisallowed || v.Reason == ReasonDisallowedDecoded || v.Reason == ReasonSpoofed):
		kind = func(c *reportCounts) { c.denials++ }
	default:
		return
	}
	sr := r.last.Load()
	if sr == nil || sr.site != v.Site {
		var ok bool
		if sr, ok = r.sites.Get(v.Site); !ok {
			r.mu.Lock()
			if sr, ok = r.sites.Get(v.Site); !ok {
				sr = &siteReport{site: v.Site}
				for i := range sr.shards {
					sr.shards[i].lines = make(map[lineKey]*lineStat)
				}
				r.sites.Add(v.Site, sr)
			}
			r.mu.Unlock()
		}
		r.last.Store(sr)
	}
	k := reportKey{client: client, group: v.Group, verification: v.Verification}
	now := r.now().UnixNano()
	sh := &sr.shards[int(k.client[15]^k.client[13]^k.client[11])%reportShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// One bucket per record: a five-minute bucket is folded into the
	// hourly bucket of its start when its slot is reused.
	mb := &sh.minutes[(now/int64(5*time.Minute))%reportMinutes]
	if start := now - now%int64(5*time.Minute); mb.start != start {
		sh.fold(mb)
		*mb = bucket{start: start, len: int64(5 * time.Minute), clients: newSpaceSaving[reportKey](reportClients / reportShards)}
	}
	mb.clients.add(k, kind)
	if v.Rule != nil && v.Action == Deny {
		lk := lineKey{v.Rule.Line, v.Rule.Pattern}
		ls, ok := sh.lines[lk]
		if !ok {
			if len(sh.lines) >= reportLines/reportShards {
				sh.other++
				return
			}
			ls = &lineStat{text: v.Rule.String(), whom: newSpaceSaving[whomKey](reportWhom)}
			sh.lines[lk] = ls
		}
		ls.count++
		ls.whom.add(whomKey{v.Group, v.Verification}, func(c *reportCounts) { c.denials++ })
	}
}

// Report is the violations report: per site, who broke its robots.txt
// and which lines stopped whom.
type Report struct {
	// Since is when the Enforcer started counting.
	Since time.Time    `json:"since"`
	Sites []SiteReport `json:"sites"`
}

// SiteReport is the report of one site.
type SiteReport struct {
	Site string `json:"site"`
	// LastHour and LastDay list the top clients by stopped requests.
	LastHour []ClientReport `json:"last_hour"`
	LastDay  []ClientReport `json:"last_day"`
	// Lines lists the robots.txt lines that denied requests, the busiest
	// first.
	Lines []LineReport `json:"lines"`
}

// ClientReport is one client's row: its address prefix, the group its
// header chose and the verification verdict.
type ClientReport struct {
	Client       string `json:"client"`
	Group        string `json:"group"`
	Verification string `json:"verification"`
	Denials      int64  `json:"denials"`
	Throttles    int64  `json:"throttles"`
	Traps        int64  `json:"traps"`
	Banned       int64  `json:"banned"`
	// Error is how many of this row's requests may be missing: the row
	// took over a slot of the space-saving counters, and counts only what
	// came since (the true total is at most the row's plus Error); 0
	// means exact.
	Error int64 `json:"error,omitempty"`
}

// LineReport is one robots.txt line's row.
type LineReport struct {
	Line  int         `json:"line"`
	Rule  string      `json:"rule"`
	Count int64       `json:"count"`
	Whom  []WhomCount `json:"whom"`
}

// WhomCount says how often a line denied a group (and verdict).
type WhomCount struct {
	Group        string `json:"group"`
	Verification string `json:"verification"`
	Count        int64  `json:"count"`
}

// report builds the Report.
func (r *reporter) report() Report {
	now := r.now().UnixNano()
	out := Report{Since: r.startedAt, Sites: []SiteReport{}}
	for _, site := range r.sites.Keys() {
		sr, ok := r.sites.Peek(site)
		if !ok {
			continue
		}
		var hour, day []bucket
		lines := map[lineKey]*LineReport{}
		for i := range sr.shards {
			sh := &sr.shards[i]
			sh.mu.Lock()
			// The last day: the hourly buckets (folded five-minute
			// ones) and the five-minute buckets not folded yet.
			hour = append(hour, sh.minutes[:]...)
			day = append(append(day, sh.hours[:]...), sh.minutes[:]...)
			for lk, ls := range sh.lines {
				lr := lines[lk]
				if lr == nil {
					lr = &LineReport{Line: lk.line, Rule: ls.text}
					lines[lk] = lr
				}
				lr.Count += ls.count
				for k, c := range ls.whom.m {
					lr.Whom = addWhom(lr.Whom, WhomCount{Group: k.group, Verification: k.verification.String(), Count: c.denials - c.err})
				}
			}
			sh.mu.Unlock()
		}
		rep := SiteReport{Site: site,
			LastHour: r.merge(hour, now-int64(time.Hour)),
			LastDay:  r.merge(day, now-int64(24*time.Hour)),
		}
		for _, lr := range lines {
			slices.SortFunc(lr.Whom, func(a, b WhomCount) int { return int(b.Count - a.Count) })
			rep.Lines = append(rep.Lines, *lr)
		}
		slices.SortFunc(rep.Lines, func(a, b LineReport) int {
			if a.Count != b.Count {
				return int(b.Count - a.Count)
			}
			return a.Line - b.Line
		})
		if len(rep.Lines) > reportTop {
			rep.Lines = rep.Lines[:reportTop]
		}
		out.Sites = append(out.Sites, rep)
	}
	slices.SortFunc(out.Sites, func(a, b SiteReport) int {
		switch {
		case a.Site < b.Site:
			return -1
		case a.Site > b.Site:
			return 1
		}
		return 0
	})
	return out
}

// merge sums the buckets that started after since and returns the top
// rows.
func (r *reporter) merge(bs []bucket, since int64) []ClientReport {
	sum := map[reportKey]*reportCounts{}
	for i := range bs {
		b := &bs[i]
		if b.clients.m == nil || b.start+b.len <= since {
			continue
		}
		for k, c := range b.clients.m {
			t := sum[k]
			if t == nil {
				t = &reportCounts{}
				sum[k] = t
			}
			t.denials += c.denials
			t.throttles += c.throttles
			t.traps += c.traps
			t.banned += c.banned
			t.err += c.err
		}
	}
	rows := make([]ClientReport, 0, len(sum))
	for k, c := range sum {
		rows = append(rows, ClientReport{
			Client: prefixString(k.client, r.v4, r.v6), Group: k.group, Verification: k.verification.String(),
			Denials: c.denials - c.err, Throttles: c.throttles, Traps: c.traps, Banned: c.banned, Error: c.err,
		})
	}
	slices.SortFunc(rows, func(a, b ClientReport) int {
		ta, tb := a.Denials+a.Throttles+a.Traps+a.Banned, b.Denials+b.Throttles+b.Traps+b.Banned
		if ta != tb {
			return int(tb - ta)
		}
		if a.Client < b.Client {
			return -1
		}
		return 1
	})
	if len(rows) > reportTop {
		rows = rows[:reportTop]
	}
	return rows
}

// addWhom adds w to ws, summing the counts of the same group and verdict.
func addWhom(ws []WhomCount, w WhomCount) []WhomCount {
	for i := range ws {
		if ws[i].Group == w.Group && ws[i].Verification == w.Verification {
			ws[i].Count += w.Count
			return ws
		}
	}
	return append(ws, w)
}

// prefixString writes a limiter client key as a prefix, "203.0.113.7/32"
// or "2001:db8:1:2::/64".
func prefixString(k [16]byte, v4, v6 int) string {
	if k == ([16]byte{}) {
		return "(unknown)"
	}
	a := netip.AddrFrom16(k)
	if a.Is4In6() {
		return netip.PrefixFrom(a.Unmap(), v4).String()
	}
	if k[0] == 0xff {
		return "(verified operator)"
	}
	return netip.PrefixFrom(a, v6).String()
}

// Report returns the violations report: per site (the 100 busiest), the
// top clients by robots.txt denials, throttles, trap hits and banned
// requests over the last hour and day, and the lines that denied whom.
func (e *Enforcer) Report() Report { return e.report.report() }

// ReportHandler returns an http.Handler that serves Report as JSON, for a
// net/http program to mount where only its operators reach it.
func (e *Enforcer) ReportHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(e.Report())
	})
}
