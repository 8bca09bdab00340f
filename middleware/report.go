package middleware

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"net/http"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/policy"
)

// Bounds of the violations report. Memory: at most reportSites sites, each
// in reportShards shards of reportMinutes + reportHours buckets of at most
// reportClients/reportShards entries (about 100 bytes each), and at most
// reportLines lines of at most reportWhom entries: about 200 KB a site,
// 20 MB in all; and the batches that records wait in (reporter.record),
// 4 × GOMAXPROCS + 4 of about 3 KB, which keep the robots.txt rules of
// their records until the next flush.
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
// batches of different clients rarely wait for one another.
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
	hb := sr.hour(mb.start)
	if hb == nil {
		return
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

// hour returns the hourly bucket of the time at (Unix ns), starting it if
// its slot holds an older hour, or nil if the slot holds a later hour
// (one at least a day newer than at).
func (sr *reportShard) hour(at int64) *bucket {
	hs := at - at%int64(time.Hour)
	hb := &sr.hours[(hs/int64(time.Hour))%reportHours]
	switch {
	case hb.start > hs:
		return nil
	case hb.start < hs:
		*hb = bucket{start: hs, len: int64(time.Hour), clients: newSpaceSaving[reportKey](reportClients / reportShards)}
	}
	return hb
}

// bucketFor returns the bucket that counts a record made at the time at:
// its five-minute bucket, started when the slot holds an older one (which
// goes to its hourly bucket first), or, for a record that waited in a
// batch while its slot moved on, its hourly bucket; nil when that has
// moved on too.
func (sr *reportShard) bucketFor(at int64) *bucket {
	ms := at - at%int64(5*time.Minute)
	mb := &sr.minutes[(ms/int64(5*time.Minute))%reportMinutes]
	switch {
	case mb.start > ms:
		return sr.hour(at)
	case mb.start < ms:
		sr.fold(mb)
		*mb = bucket{start: ms, len: int64(5 * time.Minute), clients: newSpaceSaving[reportKey](reportClients / reportShards)}
	}
	return mb
}

// Kinds of reportRecord.
const (
	recordDenial uint8 = iota
	recordThrottle
	recordTrap
	recordBanned
)

// reportRecord is one stopped request, waiting in a reportBatch.
type reportRecord struct {
	site string
	key  reportKey
	rule *policy.Rule // the denying rule, counted in the site's lines
	at   int64        // Unix ns of the first request it counts
	n    int64        // requests it counts (see reporter.add)
	kind uint8
}

// reportBatchSize is how many distinct records a batch holds before it is
// added to the report: the denied path takes a shared lock at most once
// per this many requests of one P, and a client that comes back (in the
// same five-minute slice) is counted in the batch, not again.
const reportBatchSize = 32

// reportBatch is a batch of records, held by one P at a time while the
// reporter has no more batches than its bound (it lives in the reporter's
// sync.Pool, which is per P), so that the denied path writes only memory
// its own P uses. Its lock is uncontended but for drain (every Report)
// and batches shared past the bound.
type reportBatch struct {
	mu   sync.Mutex
	n    int
	recs [reportBatchSize]reportRecord
	// index finds a record by its client, in a few probes; a slot holds
	// a record's index + 1, 0 when free.
	index [4 * reportBatchSize]uint8
	// refs counts the live refs that hold the batch; guarded by
	// reporter.mu, and last, away from the fields every record writes.
	refs int
}

// reportBatchRef is what the pool holds. A ref the pool drops (after two
// garbage collections without use) returns its batch to the idle list for
// reuse (see reporter.release), records and all: every batch stays
// reachable from the reporter, which drains them all before each Report,
// so no record is lost. Records wait in a batch until it fills or the next
// Report.
type reportBatchRef struct{ b *reportBatch }

// reporter keeps the violations report of an Enforcer.
type reporter struct {
	pool       sync.Pool // *reportBatchRef
	mu         sync.Mutex
	batches    []*reportBatch             // every batch made; guarded by mu
	idle       []*reportBatch             // batches no ref holds; guarded by mu
	next       int                        // round robin over batches once at the bound; guarded by mu
	maxBatches int                        // the bound on batches
	last       atomic.Pointer[siteReport] // the site of the latest flushed record: most servers serve one
	sites      *lru.Cache[string, *siteReport]
	v4, v6     int
	now        func() time.Time
	startedAt  time.Time
}

func newReporter(v4, v6 int, now func() time.Time) *reporter {
	c, _ := lru.New[string, *siteReport](reportSites)
	r := &reporter{sites: c, v4: v4, v6: v6, now: now, startedAt: now(),
		// A pool keeps about two refs per P (its own and its victim
		// cache's); the rest is headroom.
		maxBatches: 4*runtime.GOMAXPROCS(0) + 4,
	}
	r.pool.New = func() any {
		r.mu.Lock()
		var b *reportBatch
		switch n := len(r.idle); {
		case n > 0:
			b, r.idle = r.idle[n-1], r.idle[:n-1]
		case len(r.batches) < r.maxBatches:
			b = new(reportBatch)
			r.batches = append(r.batches, b)
		default:
			// More refs than Ps need (the race detector's pool drops
			// items at random, GOMAXPROCS grew): share a batch,
			// which its lock allows.
			b = r.batches[r.next%len(r.batches)]
			r.next++
		}
		b.refs++
		r.mu.Unlock()
		ref := &reportBatchRef{b}
		runtime.AddCleanup(ref, r.release, b)
		return ref
	}
	return r
}

// release is the cleanup of a ref: its batch goes to the idle list once
// no ref holds it. It takes only the reporter's lock, briefly.
func (r *reporter) release(b *reportBatch) {
	r.mu.Lock()
	if b.refs--; b.refs == 0 {
		r.idle = append(r.idle, b)
	}
	r.mu.Unlock()
}

// record counts one stopped request. It writes only its P's batch (past
// the bound on batches, one it may share); one call in reportBatchSize
// adds the batch to the shared report. at is the time of the decision,
// Unix ns.
func (r *reporter) record(v *Verdict, client [16]byte, at int64) {
	if v.Site == "" {
		return
	}
	var kind uint8
	switch {
	case v.Reason == ReasonTrap:
		kind = recordTrap
	case v.Reason == ReasonBanned:
		kind = recordBanned
	case v.Action == Throttle && v.Reason == ReasonCrawlDelay:
		kind = recordThrottle
	case v.Action == Deny && (v.Reason == ReasonDisallowed || v.Reason == ReasonDisallowedDecoded || v.Reason == ReasonSpoofed):
		kind = recordDenial
	default:
		return
	}
	var rule *policy.Rule
	if v.Action == Deny {
		rule = v.Rule
	}
	ref := r.pool.Get().(*reportBatchRef)
	r.add(ref.b, reportRecord{
		site: v.Site,
		key:  reportKey{client: client, group: v.Group, verification: v.Verification},
		rule: rule, at: at, kind: kind,
	})
	r.pool.Put(ref)
}

// add counts rec in b: once more in an equal record of its five-minute
// slice that b holds, or in a new one; a full batch is added to the
// report first.
func (r *reporter) add(b *reportBatch, rec reportRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec.n = 1
	h := (clientHash(&rec.key.client) ^ uint64(rec.kind)) * 0x9e3779b97f4a7c15
	slot, free := int(h>>57)&(len(b.index)-1), -1
	for range 4 { // linear probing; slots are freed only all at once
		i := int(b.index[slot]) - 1
		if i < 0 {
			free = slot
			break
		}
		if b.recs[i].sameRun(&rec) {
			b.recs[i].n++
			return
		}
		slot = (slot + 1) & (len(b.index) - 1)
	}
	if b.n == len(b.recs) {
		recs := b.recs[:b.n]
		b.n = 0 // first: a panic below loses the records, never counts them twice
		clear(b.index[:])
		r.flush(recs)
		clear(recs) // drop the references
		free = int(h>>57) & (len(b.index) - 1)
	}
	b.recs[b.n] = rec
	b.n++
	if free >= 0 {
		b.index[free] = uint8(b.n)
	}
}

// flush adds records to the report. Records of one client follow one
// another: a run of equal records (in one five-minute slice) is added once
// with its count, and a shard's lock is taken once per change of shard.
func (r *reporter) flush(recs []reportRecord) {
	var sh *reportShard
	defer func() {
		if sh != nil {
			sh.mu.Unlock()
		}
	}()
	for i := 0; i < len(recs); {
		rec := &recs[i]
		n, count := 1, rec.n
		for i+n < len(recs) && recs[i+n].sameRun(rec) {
			count += recs[i+n].n
			n++
		}
		if next := r.shard(rec); next != sh {
			if sh != nil {
				sh.mu.Unlock()
			}
			sh = next
			sh.mu.Lock()
		}
		sh.add(rec, count)
		i += n
	}
}

// sameRun reports whether o counts the same as rec, in the same
// five-minute slice.
func (o *reportRecord) sameRun(rec *reportRecord) bool {
	const slice = int64(5 * time.Minute)
	return o.kind == rec.kind && o.rule == rec.rule && o.key == rec.key && o.site == rec.site &&
		o.at-o.at%slice == rec.at-rec.at%slice
}

// drain adds the records waiting in every batch to the report, oldest
// first (so that a late record is not pushed out of its five-minute
// bucket by a newer batch's), so that report sees every record.
func (r *reporter) drain() {
	r.mu.Lock()
	bs := slices.Clone(r.batches)
	r.mu.Unlock()
	var recs []reportRecord
	for _, b := range bs {
		b.mu.Lock()
		recs = append(recs, b.recs[:b.n]...)
		clear(b.recs[:b.n])
		clear(b.index[:])
		b.n = 0
		b.mu.Unlock()
	}
	slices.SortStableFunc(recs, func(a, b reportRecord) int { return cmp.Compare(a.at, b.at) })
	r.flush(recs)
}

// shard returns the report shard of a record's site and client, starting
// the site's report when needed.
func (r *reporter) shard(rec *reportRecord) *reportShard {
	sr := r.last.Load()
	if sr == nil || sr.site != rec.site {
		var ok bool
		if sr, ok = r.sites.Get(rec.site); !ok {
			r.mu.Lock()
			if sr, ok = r.sites.Get(rec.site); !ok {
				sr = &siteReport{site: rec.site}
				for i := range sr.shards {
					sr.shards[i].lines = make(map[lineKey]*lineStat)
				}
				r.sites.Add(rec.site, sr)
			}
			r.mu.Unlock()
		}
		r.last.Store(sr)
	}
	return &sr.shards[((clientHash(&rec.key.client)*0x9e3779b97f4a7c15)>>32)%reportShards]
}

// clientHash mixes all 16 bytes of a client key: IPv4 keys differ in
// their last bytes, IPv6 /64 keys in their first eight (the rest are
// zero).
func clientHash(c *[16]byte) uint64 {
	return binary.LittleEndian.Uint64(c[:8]) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(c[8:]), 29)
}

// add counts a record n times; the caller holds sh.mu.
func (sh *reportShard) add(rec *reportRecord, n int64) {
	if mb := sh.bucketFor(rec.at); mb != nil {
		mb.clients.add(rec.key, func(c *reportCounts) {
			switch rec.kind {
			case recordDenial:
				c.denials += n
			case recordThrottle:
				c.throttles += n
			case recordTrap:
				c.traps += n
			case recordBanned:
				c.banned += n
			}
		})
	}
	if rec.rule == nil {
		return
	}
	lk := lineKey{rec.rule.Line, rec.rule.Pattern}
	ls, ok := sh.lines[lk]
	if !ok {
		if len(sh.lines) >= reportLines/reportShards {
			sh.other += n
			return
		}
		ls = &lineStat{text: rec.rule.String(), whom: newSpaceSaving[whomKey](reportWhom)}
		sh.lines[lk] = ls
	}
	ls.count += n
	ls.whom.add(whomKey{rec.key.group, rec.key.verification}, func(c *reportCounts) { c.denials += n })
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
	r.drain()
	now := r.now().UnixNano()
	out := Report{Since: r.startedAt, Sites: []SiteReport{}}
	for _, site := range r.sites.Keys() {
		sr, ok := r.sites.Peek(site)
		if !ok {
			continue
		}
		hour, day := map[reportKey]*reportCounts{}, map[reportKey]*reportCounts{}
		lines := map[lineKey]*LineReport{}
		for i := range sr.shards {
			sh := &sr.shards[i]
			// The buckets' maps are summed under the lock: flushes
			// write them.
			sh.mu.Lock()
			// The last day: the hourly buckets (folded five-minute
			// ones) and the five-minute buckets not folded yet.
			sum(hour, sh.minutes[:], now-int64(time.Hour))
			sum(day, sh.hours[:], now-int64(24*time.Hour))
			sum(day, sh.minutes[:], now-int64(24*time.Hour))
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
			LastHour: r.rows(hour),
			LastDay:  r.rows(day),
		}
		for _, lr := range lines {
			slices.SortFunc(lr.Whom, func(a, b WhomCount) int {
				return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Group, b.Group), strings.Compare(a.Verification, b.Verification))
			})
			rep.Lines = append(rep.Lines, *lr)
		}
		slices.SortFunc(rep.Lines, func(a, b LineReport) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Line, b.Line), strings.Compare(a.Rule, b.Rule))
		})
		if len(rep.Lines) > reportTop {
			rep.Lines = rep.Lines[:reportTop]
		}
		out.Sites = append(out.Sites, rep)
	}
	slices.SortFunc(out.Sites, func(a, b SiteReport) int { return strings.Compare(a.Site, b.Site) })
	return out
}

// sum adds the counts of the buckets that end after since to to.
func sum(to map[reportKey]*reportCounts, bs []bucket, since int64) {
	for i := range bs {
		b := &bs[i]
		if b.clients.m == nil || b.start+b.len <= since {
			continue
		}
		for k, c := range b.clients.m {
			t := to[k]
			if t == nil {
				t = &reportCounts{}
				to[k] = t
			}
			t.denials += c.denials
			t.throttles += c.throttles
			t.traps += c.traps
			t.banned += c.banned
			t.err += c.err
		}
	}
}

// rows returns the top rows of summed counts.
func (r *reporter) rows(sum map[reportKey]*reportCounts) []ClientReport {
	rows := make([]ClientReport, 0, len(sum))
	for k, c := range sum {
		rows = append(rows, ClientReport{
			Client: prefixString(k.client, r.v4, r.v6), Group: k.group, Verification: k.verification.String(),
			Denials: c.denials - c.err, Throttles: c.throttles, Traps: c.traps, Banned: c.banned, Error: c.err,
		})
	}
	// Busiest first; a client's rows of several groups or verdicts in a
	// fixed order.
	slices.SortFunc(rows, func(a, b ClientReport) int {
		ta, tb := a.Denials+a.Throttles+a.Traps+a.Banned, b.Denials+b.Throttles+b.Traps+b.Banned
		return cmp.Or(cmp.Compare(tb, ta), strings.Compare(a.Client, b.Client),
			strings.Compare(a.Group, b.Group), strings.Compare(a.Verification, b.Verification))
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
