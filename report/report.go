// Package report keeps the violations report of robotsguard: per site, the
// clients that robots.txt stopped (denials, throttles, trap hits and
// requests refused by a ban) or that its licences (RSL) judged (licensed,
// unlicensed, an invalid token, a token that could not be checked) over
// the last hour and day, and the robots.txt lines that denied whom. A
// Recorder takes one Record per stopped (or licensed) request on the
// request path, without writing memory that other CPUs use (records wait
// in per-P batches), and builds a bounded Report on demand. It knows
// nothing of HTTP requests or verdicts: the enforcer says what each record
// is.
package report

import (
	"encoding/binary"
	"math/bits"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/policy"
)

// Bounds of the violations report. Memory: at most reportSites sites, each
// in reportShards shards of reportMinutes + reportHours buckets of at most
// reportClients/reportShards entries (about 180 bytes each, and the last
// User-Agent header of the entry's client, a copy of at most
// reportUserAgent bytes), and at most reportLines lines of at most
// reportWhom entries (about 50 bytes each): about 600 KB a site at worst
// (every entry a different 200-byte header; a day of such records
// measures 590 KB, 360 KB with short headers), 60 MB in all; and the
// batches that records wait in (Recorder.Record), 4 × GOMAXPROCS + 4 of
// about 4 KB, which keep the robots.txt rules and User-Agent headers (at
// most reportUserAgent bytes each) of their records until the next flush.
const (
	reportSites     = 100
	reportMinutes   = 12 // five-minute buckets: the last hour
	reportHours     = 24 // hourly buckets: the last day
	reportClients   = 32 // space-saving counters per bucket
	reportLines     = 256
	reportShards    = 4
	reportWhom      = 8
	reportTop       = 20  // rows per list in a Report
	reportUserAgent = 200 // bytes of a User-Agent header a row keeps
)

// reportKey is who a counted request came from.
type reportKey struct {
	client       limit.Client
	group        string
	verification identity.Verdict
	class        string // "unfurler", "fetcher" or ""
}

// reportCounts are the counts of one client in a bucket.
type reportCounts struct {
	// n counts the client's records by kind: those stopped (Denial to
	// TrapUnattributed) and the licence decisions (RSL): requests refused
	// without a token, with an invalid one or with one that could not be
	// checked, and those that passed with a valid token (Unlicensed to
	// Licensed). Allowed records are not counted here.
	n [rowKinds]int64
	// err bounds the overcount of a space-saving counter that took over
	// another's slot.
	err int64
	// ua is the User-Agent header of the client's latest record counted
	// here, made at uaAt (Unix ns): the report's own copy (see seen).
	ua   string
	uaAt int64
}

// merge adds o's counts to c, and keeps the later of their User-Agent
// headers (both are the report's own copies: no copy is made).
func (c *reportCounts) merge(o *reportCounts) {
	for k, n := range o.n {
		c.n[k] += n
	}
	c.err += o.err
	if o.uaAt >= c.uaAt {
		c.ua, c.uaAt = o.ua, o.uaAt
	}
}

// seen notes the User-Agent header of a record made at the time at, unless
// a later one is noted. The header is copied when it differs from the one
// held: the report keeps no string of a request's (a header is at most
// reportUserAgent bytes here, see Recorder.Record), and a client that keeps
// its header costs one copy per bucket.
func (c *reportCounts) seen(ua string, at int64) {
	if at < c.uaAt {
		return
	}
	c.uaAt = at
	if ua != c.ua {
		c.ua = strings.Clone(ua)
	}
}

// total is every request the counts count, licensed ones too: the weight
// by which the space-saving counters keep a client (so that an evicted
// client's licensed requests are in its successor's error bound too).
func (c *reportCounts) total() int64 {
	var t int64
	for _, n := range c.n {
		t += n
	}
	return t
}

// inherit starts the counts of a client that took over the slot of an
// evicted one whose total was n: n is its error, spread as denials so that
// totals stay upper bounds.
func (c *reportCounts) inherit(n int64) { c.err, c.n[Denial] = n, n }

// whomCounts are the denials of one group (and verdict) by a line: two
// counts, not a reportCounts, as a site holds up to reportLines ×
// reportWhom of them.
type whomCounts struct {
	count int64
	err   int64 // as reportCounts.err
}

func (c *whomCounts) total() int64 { return c.count }

// inherit starts the count of a group that took over an evicted one's
// slot, as reportCounts.inherit.
func (c *whomCounts) inherit(n int64) { c.err, c.count = n, n }

// counter is what a spaceSaving keeps per key: C's pointer, which weighs
// the key (total) and takes over an evicted key's weight (inherit).
type counter[C any] interface {
	*C
	total() int64
	inherit(n int64)
}

// spaceSaving keeps the heaviest keys of a stream in a fixed number of
// counters (Metwally et al.): a key not held replaces the lightest one,
// inheriting its total as the error bound. With fewer distinct keys than
// counters the counts are exact.
type spaceSaving[K comparable, C any, P counter[C]] struct {
	m   map[K]P
	max int
}

// clientCounters are a bucket's counters of clients; whomCounters a line's
// of groups.
type (
	clientCounters = spaceSaving[reportKey, reportCounts, *reportCounts]
	whomCounters   = spaceSaving[whomKey, whomCounts, *whomCounts]
)

func newSpaceSaving[K comparable, C any, P counter[C]](max int) spaceSaving[K, C, P] {
	return spaceSaving[K, C, P]{m: make(map[K]P, max), max: max}
}

func (s *spaceSaving[K, C, P]) add(k K, f func(P)) {
	c, ok := s.m[k]
	if !ok {
		c = P(new(C))
		if len(s.m) >= s.max {
			var minK K
			var minC P
			for k2, c2 := range s.m {
				if minC == nil || c2.total() < minC.total() {
					minK, minC = k2, c2
				}
			}
			delete(s.m, minK)
			c.inherit(minC.total())
		}
		s.m[k] = c
	}
	f(c)
}

// bucket is one time slice of a site's report.
type bucket struct {
	start   int64 // Unix ns
	len     int64 // ns
	clients clientCounters
	// totals counts every record of the slice exactly, by kind (as the
	// timeline tells them apart: timelineKind) and verdict: the site's
	// traffic (Timeline), allowed bot requests too.
	totals [kinds][verdicts]int64
}

// kinds and verdicts size bucket.totals: the kinds up to Allowed (those
// after it count as one of them, timelineKind), and identity's four
// verdicts.
const (
	kinds    = int(Allowed) + 1
	verdicts = int(identity.Unverifiable) + 1
)

// rowKinds sizes reportCounts.n: every Kind, up to the last (Allowed's
// count stays 0).
const rowKinds = int(Licensed) + 1

// timelineKind is the kind under which the site's timeline counts a
// record: a licence refusal as a Denial (Slice.Denied), a licensed request
// as Allowed; the others as themselves.
func timelineKind(k Kind) Kind {
	switch k {
	case Unlicensed, InvalidToken, LicenseUnavailable:
		return Denial
	case Licensed:
		return Allowed
	}
	return k
}

// count adds n records of kind and verdict to the bucket's totals.
func (b *bucket) count(kind Kind, v identity.Verdict, n int64) {
	if kind = timelineKind(kind); int(kind) < kinds && int(v) < verdicts {
		b.totals[kind][v] += n
	}
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
	whom  whomCounters
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
		hb.clients.add(k, func(t *reportCounts) { t.merge(c) })
	}
	for k := range mb.totals {
		for v, n := range mb.totals[k] {
			hb.totals[k][v] += n
		}
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
		*hb = bucket{start: hs, len: int64(time.Hour), clients: newSpaceSaving[reportKey, reportCounts](reportClients / reportShards)}
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
		*mb = bucket{start: ms, len: int64(5 * time.Minute), clients: newSpaceSaving[reportKey, reportCounts](reportClients / reportShards)}
	}
	return mb
}

// Kind is what a Record counts.
type Kind uint8

// The kinds of Record.
const (
	// Denial is a request that robots.txt denies (or a spoofed claim).
	Denial Kind = iota
	// Throttle is a request that came faster than the Crawl-delay.
	Throttle
	// Trap is a request for a trap path.
	Trap
	// Banned is a request refused by a ban.
	Banned
	// TrapUnattributed is a request under a trap path without the
	// requesting client's own link token: refused, nobody banned.
	TrapUnattributed
	// Allowed is a bot request that passed. It is counted in the site's
	// Timeline only, not in the client rows: a Record of this kind needs
	// no Client, Group or Rule.
	Allowed
	// Unlicensed is a bot's request for content that a licence (RSL)
	// covers, whose licence server issues tokens, without a token: 401,
	// or 402 where the licence asks payment; or for a use that no
	// licence of the content grants: 403 (license_usage).
	Unlicensed
	// InvalidToken is such a request with a token that its licence server
	// did not accept (expired, for other content, unreadable): 401
	// invalid_token.
	InvalidToken
	// LicenseUnavailable is such a request with a token that could not be
	// checked (the licence server did not answer, or may not be asked):
	// 503 server_error. It is counted apart from InvalidToken: the
	// failure is the licence server's, not the client's.
	LicenseUnavailable
	// Licensed is a bot request that passed with a valid token of the
	// licence server of the content it asked for. It is counted in the
	// client rows (and as Allowed in the site's Timeline), though it was
	// not stopped.
	Licensed
)

// Record is one stopped request (or, of kind Allowed or Licensed, a bot
// request that passed), as the Recorder counts it.
type Record struct {
	// Site is the site, scheme and host ("https://example.com").
	Site string
	// Client is the client's address prefix.
	Client limit.Client
	// Group is the robots.txt group its User-Agent header chose.
	Group string
	// Verification is the verdict on its claim to be a known crawler.
	Verification identity.Verdict
	// Class is "unfurler" or "fetcher" for an agent that fetches for a
	// person (a link preview, a user-triggered fetch), "undeclared"
	// (classify.ClassUndeclared) for an undeclared bot (a header that names a browser, contradicted
	// by the request's other headers), "" for others.
	Class string
	// Rule is the robots.txt line that denied it, counted in the site's
	// lines; nil for none.
	Rule *policy.Rule
	// UserAgent is the request's User-Agent header, shown in the client's
	// rows (the latest of each row). Only its first 200 bytes are kept.
	UserAgent string
	// At is the time of the decision, Unix ns.
	At int64
	// Kind is what the request counts as.
	Kind Kind
}

// reportRecord is one or more stopped requests, waiting in a reportBatch.
type reportRecord struct {
	site string
	key  reportKey
	rule *policy.Rule // the denying rule, counted in the site's lines
	ua   string       // the User-Agent header of the latest request it counts, at most reportUserAgent bytes
	at   int64        // Unix ns of the first request it counts
	n    int64        // requests it counts (see Recorder.add)
	kind Kind
}

// Recorder keeps the violations report. It is safe for concurrent use.
type Recorder struct {
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

// New returns an empty Recorder whose rows show clients as prefixes of
// v4 and v6 bits (as the client keys were cut) and whose report starts at
// now().
func New(v4, v6 int, now func() time.Time) *Recorder {
	c, _ := lru.New[string, *siteReport](reportSites)
	r := &Recorder{sites: c, v4: v4, v6: v6, now: now, startedAt: now(),
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

// Record counts one stopped request (or a bot request that passed: kinds
// Allowed and Licensed). It writes only its P's batch (past the bound on
// batches, one it may share); one call in reportBatchSize adds the batch
// to the shared report. A record without a site is not counted.
//
// The User-Agent header waits in the batch as the request's own string,
// without a copy, when it is at most reportUserAgent bytes: net/http
// makes each header value a string of its own, so it keeps no more than
// those bytes alive. A longer header is cut (on a rune boundary) and the
// cut copied, the one allocation Record may make: a slice of it would
// keep the whole header (up to the server's header limit, a megabyte by
// default) alive in the batch until the next flush. The report keeps
// copies of its own (reportCounts.seen).
func (r *Recorder) Record(rec Record) {
	if rec.Site == "" {
		return
	}
	ua := rec.UserAgent
	switch {
	case rec.Kind == Allowed:
		ua = "" // counted in the timeline only: no row shows it
	case len(ua) > reportUserAgent:
		ua = strings.Clone(cutUTF8(ua, reportUserAgent))
	}
	ref := r.pool.Get().(*reportBatchRef)
	r.add(ref.b, reportRecord{
		site: rec.Site,
		key:  reportKey{client: rec.Client, group: rec.Group, verification: rec.Verification, class: rec.Class},
		rule: rec.Rule, ua: ua, at: rec.At, kind: rec.Kind,
	})
	r.pool.Put(ref)
}

// cutUTF8 returns the first n bytes of s at most, cut before a rune that
// would straddle the cut.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut > n-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// shard returns the report shard of a record's site and client, starting
// the site's report when needed.
func (r *Recorder) shard(rec *reportRecord) *reportShard {
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
func clientHash(c *limit.Client) uint64 {
	return binary.LittleEndian.Uint64(c[:8]) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(c[8:]), 29)
}

// add counts a record n times; the caller holds sh.mu.
func (sh *reportShard) add(rec *reportRecord, n int64) {
	mb := sh.bucketFor(rec.at)
	if mb != nil {
		mb.count(rec.kind, rec.key.verification, n)
	}
	if rec.kind == Allowed {
		return
	}
	if mb != nil {
		mb.clients.add(rec.key, func(c *reportCounts) {
			c.seen(rec.ua, rec.at)
			if int(rec.kind) < rowKinds {
				c.n[rec.kind] += n
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
		ls = &lineStat{text: rec.rule.String(), whom: newSpaceSaving[whomKey, whomCounts](reportWhom)}
		sh.lines[lk] = ls
	}
	ls.count += n
	ls.whom.add(whomKey{rec.key.group, rec.key.verification}, func(c *whomCounts) { c.count += n })
}
