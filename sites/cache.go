package sites

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sync/singleflight"

	"github.com/robotsguard/robotsguard/policy"
)

// State is one view of a site's robots.txt: the compiled file and what
// the fetch it came from found. It is immutable: a new fetch makes a new
// State, which replaces the old one as a whole.
type State struct {
	// Robots is the compiled file; never nil (empty rules when none
	// apply).
	Robots *policy.Robots
	// Outcome is the outcome of the fetch that produced Robots.
	Outcome Outcome
	// Unreachable reports that no good copy is known and the last fetch
	// failed: Robots is empty, and the enforcer's on_unreachable
	// setting decides.
	Unreachable bool
	// Postponed reports that no fetch has run yet: too many new sites
	// came at once (Config.NewSitesPerSecond).
	Postponed bool
	// Unknown reports that the host is none of Config.SiteNames while
	// Config.Origin is set: the site gets no robots.txt (Robots is empty),
	// and the enforcer refuses its bots.
	Unknown bool
	// Status is the HTTP status of the fetch, 0 when there was none.
	Status int
	// Fetched is when this copy was fetched.
	Fetched time.Time
	// ETag and LastModified are the validators of a 2xx copy, sent back
	// when it is revalidated.
	ETag, LastModified string
	// ContentType is the Content-Type of a 2xx answer.
	ContentType string
	// Size is the number of body bytes of a 2xx answer.
	Size int
	// Err says why a fetch found no file (a redirect loop), if it did.
	Err error

	sum [32]byte // SHA-256 of a 2xx body, the key of its compiled copy
}

// originRef boxes the handler that serves a site, with its type and
// whether that type can be compared, found once (see same).
type originRef struct {
	h          http.Handler
	t          reflect.Type
	comparable bool
}

// newOriginRef boxes h.
func newOriginRef(h http.Handler) *originRef {
	t := reflect.TypeOf(h)
	return &originRef{h: h, t: t, comparable: t != nil && t.Comparable()}
}

// same reports whether h is the handler o holds. Handlers of a type that
// cannot be compared (an http.HandlerFunc) count as the same, so the first
// one seen is kept.
func (o *originRef) same(h http.Handler) bool {
	return reflect.TypeOf(h) == o.t && (!o.comparable || o.h == h)
}

// Site is the cache slot of one site: its name, the robots.txt copy in
// force (replaced as a whole by each fetch) and the bookkeeping of its
// fetches. A Site stays valid after the cache drops it (it is then no
// longer refreshed).
type Site struct {
	key Key
	// spelled is how a request to the site was spelled (the first one
	// GetRequest saw): the Host header and server port that MakeKey
	// turned into key, with key.https. A request spelled the same has
	// the same key.
	spelled    atomic.Pointer[spelling]
	named      bool   // the host is in Config.SiteNames
	site       string // "https://example.com"
	siteURL    *url.URL
	state      atomic.Pointer[State]
	due        atomic.Int64 // unix nanoseconds when a refresh is due
	refreshing atomic.Bool  // a background refresh was started
	stale      atomic.Bool  // set by a timer when a refresh is due
	evicted    atomic.Bool  // dropped from the LRU: Cache.last must not return it
	moving     atomic.Bool  // between LRU segments: not evicted
	protected  atomic.Bool  // in the protected LRU segment
	referenced atomic.Bool  // hit since segLRU.admit last passed it over (see there)
	// Revalidation (Cache.Invalidate): a fetch that starts when the
	// wanted generation, max(Cache.all, want), is g stores g in have
	// when it ends; have < wanted means the copy must be fetched again
	// before a bot is judged by it.
	want, have atomic.Uint64
	checked    atomic.Int64              // unix nanoseconds of the last fetch that kept or replaced the copy
	origin     atomic.Pointer[originRef] // the handler that serves the site, for fetches without one (Cache.Fetch)
	class      string                    // what the last fetch meant for bots, for logging changes; fetches only
	rulesSeen  *policy.Robots            // the copy Config.OnRules last saw; fetches only
	// attached is what the Cache's user keeps per site (Attach).
	attached   atomic.Pointer[attachment]
	failed     atomic.Bool // the last fetch found robots.txt unreachable
	firstFetch bool        // a token was spent for its first fetch; guarded by Cache.newMu
	charged    *State      // the state whose compiled file this entry is counted for; guarded by Cache.compiledMu
	timerMu    sync.Mutex
	timer      *time.Timer // marks the entry stale when a refresh is due (real clock only)
	hist       siteHistory // the versions of its robots.txt (History)
}

// maxSpelling is the longest Host header kept as a site's spelling: a DNS
// name (253 bytes), brackets and a port. The header's port part is not
// bounded by the name's (MakeKey ignores it), and a client must not make
// the cache keep a megabyte of it.
const maxSpelling = 253 + len("[]:65535")

// spelling is a request's Host header and server port.
type spelling struct {
	host string
	port int
}

// attachment boxes a value attached to a Site.
type attachment struct{ v any }

// Name returns the site's name: scheme and host, the port when it is not
// the scheme's default ("https://example.com:8443").
func (e *Site) Name() string { return e.site }

// Named reports whether the site's host is one of Config.SiteNames: a site
// the configuration is written for, which metrics may name.
func (e *Site) Named() bool { return e.named }

// Key returns the site's cache key.
func (e *Site) Key() Key { return e.key }

// State returns the robots.txt copy in force, nil before the first fetch
// ended.
func (e *Site) State() *State { return e.state.Load() }

// Checked returns when the last fetch ended that kept the copy (304 Not
// Modified, or a failure that kept the last good copy) or replaced it;
// the zero time before the first.
func (e *Site) Checked() time.Time {
	if c := e.checked.Load(); c != 0 {
		return time.Unix(0, c)
	}
	return time.Time{}
}

// Due returns when the copy's next refresh is due (the zero time before the
// first fetch ends).
func (e *Site) Due() time.Time {
	if d := e.due.Load(); d != 0 {
		return time.Unix(0, d).UTC()
	}
	return time.Time{}
}

// Failed reports whether the last fetch found robots.txt unreachable.
func (e *Site) Failed() bool { return e.failed.Load() }

// Attached returns the value the Cache's user attached to the site with
// Attach, nil when none. The Cache never looks at it: it lets the user
// keep per-site state (the enforcer keeps its traps' grace clocks here)
// that lives and dies with the cache slot.
func (e *Site) Attached() any {
	if a := e.attached.Load(); a != nil {
		return a.v
	}
	return nil
}

// Attach attaches v to the site (see Attached).
func (e *Site) Attach(v any) { e.attached.Store(&attachment{v}) }

// Cache holds the robots.txt of each site, fetched through a Source with
// one fetch per site at a time, revalidated when due, and bounded in
// sites and bytes. It is safe for concurrent use.
type Cache struct {
	lru       *segLRU
	last      atomic.Pointer[Site] // the entry of the latest lookup: most servers serve one site
	mu        sync.Mutex           // serialises entry creation
	seq       atomic.Uint64        // revalidation generations, handed out in order
	all       atomic.Uint64        // generation wanted of every site (Invalidate(nil))
	flights   singleflight.Group
	src       Source
	now       func() time.Time
	refresh   time.Duration
	retry     time.Duration
	timeout   time.Duration
	empty     *policy.Robots
	pending   *State // what clients that do not wait see before the first fetch ends
	postponed *State // what a new site's clients see while first fetches are rate-limited

	// Token bucket of first fetches (newRate, newBurst), guarded
	// by newMu; only requests for a site without a copy touch it.
	newMu     sync.Mutex
	newRate   float64 // Config.NewSitesPerSecond (+Inf: no bound)
	newBurst  float64 // 4 seconds' worth
	newTokens float64
	newLast   time.Time
	shares    map[netip.Prefix]*share // per client prefix, guarded by newMu
	named     names                   // Config.SiteNames: never postponed
	history   HistoryStore            // Deps.History: named sites' version histories
	writes    historyWrites           // background history writes (Wait)
	// only, with Config.Origin: the hosts that get a robots.txt; other
	// hosts share unknown, whose state is unknownState.
	only         *allowList
	unknown      *Site
	unknownState *State
	log          *zap.Logger
	obs          Observer

	allowUnreachable bool // for log lines only; the enforcer decides

	onRules   func(e *Site, r *policy.Robots) // Config.OnRules
	onConfirm func(e *Site, r *policy.Robots) // Config.OnConfirm

	// Compiled robots.txt files by the SHA-256 of their body, held
	// weakly: sites that serve the same file (a catch-all server reached
	// under many names) share one compiled copy, which is freed when no
	// site uses it any more.
	compiledMu sync.Mutex
	compiled   map[[32]byte]weak.Pointer[policy.Robots]
	// The byte bound (Config.MaxBytes): the estimated memory of the
	// distinct compiled files the cached sites use, each counted once
	// however many sites share it. charges counts the sites per file;
	// held is the estimate. Guarded by compiledMu.
	charges  map[[32]byte]int
	held     int64
	maxBytes int64
	// timers: the clock is the real one, so a timer marks entries stale and
	// requests need not read the clock (time.Now costs tens of ns on some
	// virtual machines). With an injected clock, requests compare times.
	timers bool
}

// Entry returns the cache slot of a site, creating it when needed. A site
// looked up again while in the probation segment is offered to the
// protected one (see segLRU).
func (c *Cache) Entry(k Key) *Site { return c.entryFor(k, "", 0) }

// entryFor is Entry for a request with the given Host header and server
// port: a new entry's robots.txt requests carry that Host as clients write
// it (see fetchHost), not the server's own port, which a backend behind a
// proxy may not expect.
func (c *Cache) entryFor(k Key, host string, port int) *Site {
	if e := c.last.Load(); e != nil && e.key == k && !e.evicted.Load() {
		// The hot path of a server with one site: reads only, once the
		// site is protected (see hit).
		c.hit(k, e)
		return e
	}
	if e, ok := c.lru.Peek(k); ok {
		c.hit(k, e)
		if rand.Uint32()%promoteEvery == 0 { // sampled: alternating sites would write it every time
			c.last.Store(e)
		}
		return e
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.lru.Peek(k); ok {
		return e
	}
	scheme := "http"
	if k.https {
		scheme = "https"
	}
	e := &Site{key: k, site: k.Name(), siteURL: &url.URL{Scheme: scheme, Host: fetchHost(k, host, port)}, named: c.named.has(k.host)}
	if c.lru.add(k, e) {
		e.protected.Store(true)
	}
	c.last.Store(e)
	return e
}

// hit records a cache hit of e without a write to shared memory in the
// steady state. A site in probation is touched at every hit, so that a
// busy new site earns its place at once (it leaves probation soon, and
// the writes stop). A protected site sets its reference bit when it is
// clear (a read otherwise), and one hit in promoteEvery, chosen at random,
// refreshes its recency and counts for the promoteEvery hits it stands
// for in the admission sketch; sampling alone would leave a busy site's
// count too uneven to hold its place (see segLRU.admit).
func (c *Cache) hit(k Key, e *Site) {
	if !e.protected.Load() {
		c.touch(k, e, 1)
		return
	}
	if !e.referenced.Load() {
		e.referenced.Store(true)
	}
	if rand.Uint32()%promoteEvery == 0 {
		c.touch(k, e, promoteEvery)
	}
}

// touch refreshes the recency of e, counts weight hits of it, and offers
// it to the protected segment while it is in probation.
func (c *Cache) touch(k Key, e *Site, weight uint8) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.evicted.Load() {
		return // dropped since the lookup; a new entry may hold k
	}
	c.lru.touch(k, weight) // counts the hits, refreshes recency
	if !e.protected.Load() && c.lru.promote(k, e) {
		e.protected.Store(true)
	}
}

// Get returns the slot of the site k (made when needed) and its robots.txt
// copy, never nil. host is the request's Host header and port the
// server's own port (see MakeKey): a new site's robots.txt requests carry
// that Host. origin is the handler that serves the site, for the default
// source; it is remembered for fetches that have none. A known copy is returned at
// once, and a refresh is started in the background when it is due. Without
// a copy, a caller that may be a bot (wait) waits for the first fetch, at
// most the fetch timeout; any other caller starts it and goes on at once.
// A copy marked for revalidation (Invalidate) is fetched again
// first; callers that may be bots (wait) wait for that fetch, at most the
// fetch timeout, and are decided with the old copy when it fails; other
// callers start it in the background and go on with the copy.
func (c *Cache) Get(ctx context.Context, k Key, host string, port int, origin http.Handler, wait bool, client string) (*Site, *State) {
	if c.only != nil && !c.only.has(k.host) {
		return c.unknown, c.unknownState
	}
	return c.get(ctx, c.entryFor(k, host, port), origin, wait, client)
}

// GetRequest is Get for the site of a request with the given scheme,
// Host header and server port (Get with MakeKey(scheme, host, port)). The
// site of the last request, when this one is spelled the same, is found
// without making the key: the hot path of a server with one site.
func (c *Cache) GetRequest(ctx context.Context, scheme, host string, port int, origin http.Handler, wait bool, client string) (*Site, *State) {
	https := isHTTPS(scheme)
	if e := c.last.Load(); e != nil && e.key.https == https && !e.evicted.Load() {
		if sp := e.spelled.Load(); sp != nil && sp.host == host && sp.port == port {
			c.hit(e.key, e)
			return c.get(ctx, e, origin, wait, client)
		}
	}
	k := MakeKey(scheme, host, port)
	if c.only != nil && !c.only.has(k.host) {
		return c.unknown, c.unknownState
	}
	e := c.entryFor(k, host, port)
	if len(host) <= maxSpelling && e.spelled.Load() == nil {
		e.spelled.CompareAndSwap(nil, &spelling{strings.Clone(host), port})
	}
	return c.get(ctx, e, origin, wait, client)
}

// get is Get once the entry is found.
func (c *Cache) get(ctx context.Context, e *Site, origin http.Handler, wait bool, client string) (*Site, *State) {
	if origin != nil {
		// Remember the handler that serves the site, for fetches that
		// have none (Fetch); after a Caddy reload it is the
		// new server. Written only when it changes.
		if o := e.origin.Load(); o == nil || !o.same(origin) {
			e.origin.Store(newOriginRef(origin))
		}
	}
	if st := e.state.Load(); st != nil {
		if g := c.wanted(e); g > e.have.Load() {
			if !wait {
				c.background(e, origin)
				return e, st
			}
			return e, c.waitFresh(ctx, e, origin, g)
		}
		if c.isDue(e) {
			c.background(e, origin)
		}
		return e, st
	}
	if !c.firstFetchAllowed(e, client) {
		// Too many new sites at once (a flood of Host names): this one
		// waits for a later request. Bots are told to come back (429).
		c.observe(e, Postponed)
		if ce := c.log.Check(zapcore.WarnLevel, "robots_guard: too many new sites; first robots.txt fetch postponed, bots get 429"); ce != nil {
			ce.Write(zap.String("site", e.site), zap.Float64("new_sites_per_second", c.newRate))
		}
		return e, c.postponed
	}
	if !wait {
		// No copy yet: a client that is no bot does not wait for the
		// first fetch; it is decided with no rules (which bind bots only).
		c.background(e, origin)
		return e, c.pending
	}
	return e, c.waitFirst(ctx, e, origin)
}

// waitFresh waits, up to the cache's timeout, for e's copy of generation g
// (a reload's revalidation), and returns the copy it gets or the one in
// place. It is out of Get, where a defer would cost every call.
func (c *Cache) waitFresh(ctx context.Context, e *Site, origin http.Handler, g uint64) *State {
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	if st, ok := c.fresh(ctx, e, origin, g, timer.C); ok {
		return st
	}
	return e.state.Load()
}

// waitFirst waits, up to the cache's timeout, for e's first copy.
func (c *Cache) waitFirst(ctx context.Context, e *Site, origin http.Handler) *State {
	ch := c.flight(e, origin)
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.Val.(*State)
	case <-timer.C:
	case <-ctx.Done():
		// The client went away: decide as unreachable for it alone.
		return &State{Robots: c.empty, Outcome: Unreachable, Unreachable: true}
	}
	// The fetch hangs: decide as unreachable, and make later requests do
	// the same without waiting until the fetch ends or a retry is due.
	st := &State{Robots: c.empty, Outcome: Unreachable, Unreachable: true}
	if e.state.CompareAndSwap(nil, st) {
		c.setDue(e, c.now(), c.retry)
	}
	return e.state.Load()
}

// background starts a fetch of e in a goroutine of its own, unless one
// started this way is still running: requests that find a refresh due only
// read e.refreshing, and the goroutine, not a joined singleflight call,
// clears it, so it can never stay set.
func (c *Cache) background(e *Site, origin http.Handler) {
	if e.refreshing.Load() || !e.refreshing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer e.refreshing.Store(false)
		e.stale.Store(false)
		c.flights.Do(e.site, func() (any, error) { return c.fetchGen(e, origin), nil })
	}()
}

// fresh waits for a fetch of e that started at generation g or later (a
// fetch already under way may have started before g: then one more
// follows). It gives up when done fires or ctx ends.
func (c *Cache) fresh(ctx context.Context, e *Site, origin http.Handler, g uint64, done <-chan time.Time) (*State, bool) {
	for range 2 {
		select {
		case r := <-c.flight(e, origin):
			if e.have.Load() >= g {
				return r.Val.(*State), true
			}
		case <-done:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
	return nil, false
}

// wanted is the generation e must have been fetched at (see Stale).
func (c *Cache) wanted(e *Site) uint64 {
	return max(c.all.Load(), e.want.Load())
}

// invalidate marks the entries that match (all when match is nil) for
// revalidation and returns them with the generation a fetch must start at
// to count.
func (c *Cache) invalidate(match func(*Site) bool) ([]*Site, uint64) {
	g := c.seq.Add(1)
	if match == nil {
		c.all.Store(g)
	}
	var out []*Site
	for _, e := range c.lru.Values() {
		if match == nil || match(e) {
			if match != nil {
				e.want.Store(g)
			}
			out = append(out, e)
		}
	}
	return out, g
}

// flight starts a fetch of e, or joins the one under way.
func (c *Cache) flight(e *Site, origin http.Handler) <-chan singleflight.Result {
	return c.flights.DoChan(e.site, func() (any, error) { return c.fetchGen(e, origin), nil })
}

// Len returns the number of sites cached.
func (c *Cache) Len() int { return c.lru.Len() }
