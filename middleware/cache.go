package middleware

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"runtime"
	"strconv"
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

// siteKey identifies a site: scheme, canonical host name (lower-cased, no
// trailing dot, no port) and port (0 for the scheme's default). The port is
// the server's own when the front end knows it (Request.Port), so a client
// cannot make one site many by writing ports, letter case or a trailing dot
// into its Host header.
type siteKey struct {
	https bool
	port  uint16
	host  string
}

// siteState is one immutable view of a site's robots.txt.
type siteState struct {
	robots      *policy.Robots // never nil; empty rules when none apply
	outcome     FetchOutcome   // outcome of the fetch that produced robots
	unreachable bool           // no good copy: OnUnreachable applies
	status      int            // HTTP status of the fetch, 0 when none
	fetched     time.Time      // when this copy was fetched
	etag        string         // validators of a 2xx copy, for revalidation
	lastMod     string
	ctype       string   // Content-Type of a 2xx answer, for log lines
	size        int      // body bytes of a 2xx answer
	err         error    // why a fetch found no file (redirect loops), for log lines
	postponed   bool     // no fetch yet: too many new sites at once
	sum         [32]byte // SHA-256 of a 2xx body, the key of its compiled copy

	agents atomic.Pointer[[]string] // robots' group tokens, for trap checks; made on first use
}

// compiledCost estimates the memory a compiled robots.txt of n bytes
// keeps: measured from 21 times the body for a 122-byte file to 3.3 times
// for a 500 KiB one (7 times for facebook.com's 22 KB), so 8 times the body
// plus 4 KiB.
func compiledCost(n int) int64 { return 8*int64(n) + 4096 }

// firstFetchAllowed takes a token for the first fetch of e, unless a fetch
// of e is already under way (joining it costs nothing).
func (c *siteCache) firstFetchAllowed(e *siteEntry) bool {
	now := c.now()
	c.newMu.Lock()
	defer c.newMu.Unlock()
	if !c.newLast.IsZero() {
		c.newTokens = min(c.newBurst, c.newTokens+now.Sub(c.newLast).Seconds()*c.newRate)
	}
	c.newLast = now
	if e.firstFetch {
		return true
	}
	if c.newTokens < 1 {
		return false
	}
	c.newTokens--
	e.firstFetch = true
	return true
}

// originRef boxes the handler that serves a site.
type originRef struct{ h http.Handler }

// siteEntry is the cache slot of one site. state is replaced as a whole.
type siteEntry struct {
	key        siteKey
	site       string // "https://example.com"
	siteURL    *url.URL
	state      atomic.Pointer[siteState]
	due        atomic.Int64 // unix nanoseconds when a refresh is due
	refreshing atomic.Bool  // a background refresh was started
	stale      atomic.Bool  // set by a timer when a refresh is due
	evicted    atomic.Bool  // dropped from the LRU: siteCache.last must not return it
	moving     atomic.Bool  // between LRU segments: not evicted
	protected  atomic.Bool  // in the protected LRU segment
	referenced atomic.Bool  // hit since siteLRU.admit last passed it over (see there)
	// Revalidation (Enforcer.Invalidate): a fetch that starts when the
	// wanted generation, max(siteCache.all, want), is g stores g in have
	// when it ends; have < wanted means the copy must be fetched again
	// before a bot is judged by it.
	want, have atomic.Uint64
	checked    atomic.Int64              // unix nanoseconds of the last fetch that kept or replaced the copy
	origin     atomic.Pointer[originRef] // the first Origin seen, for Enforcer.Refresh
	class      string                    // what the last fetch meant for bots, for logging changes; fetches only
	rulesSeen  *policy.Robots            // the copy onRules last saw; fetches only
	// trapSince holds, per trap of Config.Traps, since when (Unix ns) the
	// site's copies have armed it without a break; 0 when the current one
	// does not. Written by fetches (onRules), read by requests.
	trapSince  atomic.Pointer[[]atomic.Int64]
	failed     atomic.Bool // the last fetch found robots.txt unreachable
	firstFetch bool        // a token was spent for its first fetch; guarded by siteCache.newMu
	charged    *siteState  // the state whose compiled file this entry is counted for; guarded by siteCache.compiledMu
	timerMu    sync.Mutex
	timer      *time.Timer // marks the entry stale when a refresh is due (real clock only)
}

// siteCache holds the robots.txt of each site, fetched through a Source with
// one fetch per site at a time.
type siteCache struct {
	lru       *siteLRU
	last      atomic.Pointer[siteEntry] // the entry of the latest lookup: most servers serve one site
	mu        sync.Mutex                // serialises entry creation
	seq       atomic.Uint64             // revalidation generations, handed out in order
	all       atomic.Uint64             // generation wanted of every site (Enforcer.Invalidate(""))
	flights   singleflight.Group
	src       Source
	now       func() time.Time
	refresh   time.Duration
	retry     time.Duration
	timeout   time.Duration
	empty     *policy.Robots
	pending   *siteState // what clients that do not wait see before the first fetch ends
	postponed *siteState // what a new site's clients see while first fetches are rate-limited

	// Token bucket of first fetches (newSiteRate, newSiteBurst), guarded
	// by newMu; only requests for a site without a copy touch it.
	newMu     sync.Mutex
	newRate   float64 // Config.NewSitesPerSecond
	newBurst  float64 // 4 seconds' worth
	newTokens float64
	newLast   time.Time
	log       *zap.Logger
	obs       Observer

	allowUnreachable bool // for log lines only; Enforcer decides

	// onRules is called once for each new copy of a site's robots.txt
	// (the Enforcer checks its traps against it); nil for none.
	onRules func(e *siteEntry, r *policy.Robots)

	// Compiled robots.txt files by the SHA-256 of their body, held
	// weakly: sites that serve the same file (a catch-all server reached
	// under many names) share one compiled copy, which is freed when no
	// site uses it any more.
	compiledMu sync.Mutex
	compiled   map[[32]byte]weak.Pointer[policy.Robots]
	// The byte bound (Config.MaxRobotsBytes): the estimated memory of the
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

func newSiteCache(size int, src Source, now func() time.Time, refresh, timeout time.Duration, log *zap.Logger, obs Observer, allowUnreachable bool, newRate float64, maxBytes int64) *siteCache {
	// size > 0 is checked by Config.
	timers := now == nil
	empty := policy.Parse(nil)
	if now == nil {
		now = time.Now
	}
	c := &siteCache{
		timers:    timers,
		src:       src,
		now:       now,
		refresh:   refresh,
		retry:     min(refresh, time.Minute),
		timeout:   timeout,
		empty:     empty,
		pending:   &siteState{robots: empty},
		postponed: &siteState{robots: empty, postponed: true},
		newRate:   newRate,
		newBurst:  4 * newRate,
		newTokens: 4 * newRate,
		compiled:  make(map[[32]byte]weak.Pointer[policy.Robots]),
		charges:   make(map[[32]byte]int),
		maxBytes:  maxBytes,
		log:       log,
		obs:       obs,

		allowUnreachable: allowUnreachable,
	}
	c.lru = newSiteLRU(size, c.release)
	return c
}

// makeKey builds the cache key of a site from the scheme, the Host header
// and the port the request came in on. The Host header's own port never
// counts: the client writes it. A port of 0 (unknown, as on a Unix socket)
// makes one site of every port. It allocates only for a host name with
// upper-case letters.
func makeKey(scheme, host string, port int) siteKey {
	https := scheme == "https" || scheme == "HTTPS"
	name, _ := splitHost(host)
	if port < 0 || port > 65535 {
		port = 0
	}
	if https && port == 443 || !https && port == 80 {
		port = 0
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			name = strings.ToLower(name)
			break
		}
	}
	return siteKey{https: https, host: name, port: uint16(port)}
}

// splitHost splits a Host header into the host name, without brackets and
// trailing dots, and its port (0 when absent or not a number).
func splitHost(h string) (name string, port int) {
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i > 0 {
			name, h = h[1:i], h[i+1:]
			if strings.HasPrefix(h, ":") {
				port = atoiPort(h[1:])
			}
			return name, port
		}
	}
	name = h
	if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h[:i], ':') < 0 {
		name, port = h[:i], atoiPort(h[i+1:])
	}
	for len(name) > 0 && name[len(name)-1] == '.' {
		name = name[:len(name)-1]
	}
	return name, port
}

// atoiPort reads a port number; 0 for anything else.
func atoiPort(s string) int {
	if len(s) == 0 || len(s) > 5 {
		return 0
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0
		}
		n = n*10 + int(s[i]-'0')
	}
	if n > 65535 {
		return 0
	}
	return n
}

// fetchHost is the Host of a site's robots.txt requests: the canonical
// host name, with the port of the client's Host header only when that is
// the server's own port (or the server's port is unknown) — so a client
// that writes another port cannot make the site's own robots.txt request
// go out under a Host the backend does not serve, and a backend behind a
// proxy gets the Host its clients use. Without a Host header, the
// canonical name and port.
func fetchHost(k siteKey, host string, port int) string {
	if host == "" {
		return k.hostport()
	}
	name, hp := splitHost(host)
	if strings.IndexByte(name, ':') >= 0 {
		name = "[" + name + "]"
	}
	name = strings.ToLower(name)
	if hp != 0 && (port <= 0 || hp == port) {
		return name + ":" + strconv.Itoa(hp)
	}
	return name
}

// hostport is the authority of the site: its host name, in brackets when
// it is an IPv6 address, and its port unless it is the default.
func (k siteKey) hostport() string {
	h := k.host
	if strings.IndexByte(h, ':') >= 0 {
		h = "[" + h + "]"
	}
	if k.port != 0 {
		h += ":" + strconv.Itoa(int(k.port))
	}
	return h
}

// entry returns the cache slot of a site, creating it when needed. A site
// looked up again while in the probation segment is offered to the
// protected one (see siteLRU).
func (c *siteCache) entry(k siteKey) *siteEntry { return c.entryFor(k, "", 0) }

// entryFor is entry for a request with the given Host header and server
// port: a new entry's robots.txt requests carry that Host as clients write
// it (see fetchHost), not the server's own port, which a backend behind a
// proxy may not expect.
func (c *siteCache) entryFor(k siteKey, host string, port int) *siteEntry {
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
	e := &siteEntry{key: k, site: scheme + "://" + k.hostport(), siteURL: &url.URL{Scheme: scheme, Host: fetchHost(k, host, port)}}
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
// count too uneven to hold its place (see siteLRU.admit).
func (c *siteCache) hit(k siteKey, e *siteEntry) {
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
func (c *siteCache) touch(k siteKey, e *siteEntry, weight uint8) {
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

// get returns the robots.txt state of a site. A known copy is returned at
// once, and a refresh is started in the background when it is due. Without
// a copy, a caller that may be a bot (wait) waits for the first fetch, at
// most the fetch timeout; any other caller starts it and goes on at once.
// A copy marked for revalidation (Enforcer.Invalidate) is fetched again
// first; callers that may be bots (wait) wait for that fetch, at most the
// fetch timeout, and are decided with the old copy when it fails; other
// callers start it in the background and go on with the copy.
func (c *siteCache) get(ctx context.Context, k siteKey, host string, port int, origin http.Handler, wait bool) (*siteEntry, *siteState) {
	e := c.entryFor(k, host, port)
	if origin != nil {
		// Remember the handler that serves the site, for fetches that
		// have none (Enforcer.Refresh); after a Caddy reload it is the
		// new server. Written only when it changes.
		if o := e.origin.Load(); o == nil || !sameHandler(o.h, origin) {
			e.origin.Store(&originRef{origin})
		}
	}
	if st := e.state.Load(); st != nil {
		if g := c.wanted(e); g > e.have.Load() {
			if !wait {
				c.background(e, origin)
				return e, st
			}
			timer := time.NewTimer(c.timeout)
			defer timer.Stop()
			if st, ok := c.fresh(ctx, e, origin, g, timer.C); ok {
				return e, st
			}
			return e, e.state.Load()
		}
		if c.isDue(e) {
			c.background(e, origin)
		}
		return e, st
	}
	if !c.firstFetchAllowed(e) {
		// Too many new sites at once (a flood of Host names): this one
		// waits for a later request. Bots are told to come back (429).
		c.observe(e, FetchPostponed)
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
	ch := c.flight(e, origin)
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return e, r.Val.(*siteState)
	case <-timer.C:
	case <-ctx.Done():
		// The client went away: decide as unreachable for it alone.
		return e, &siteState{robots: c.empty, outcome: FetchUnreachable, unreachable: true}
	}
	// The fetch hangs: decide as unreachable, and make later requests do
	// the same without waiting until the fetch ends or a retry is due.
	st := &siteState{robots: c.empty, outcome: FetchUnreachable, unreachable: true}
	if e.state.CompareAndSwap(nil, st) {
		c.setDue(e, c.now(), c.retry)
	}
	return e, e.state.Load()
}

// sameHandler reports whether a and b are the same handler. Handlers of a
// type that cannot be compared (an http.HandlerFunc) count as the same, so
// the first one seen is kept.
func sameHandler(a, b http.Handler) bool {
	t := reflect.TypeOf(a)
	if t != reflect.TypeOf(b) {
		return false
	}
	return !t.Comparable() || a == b
}

// background starts a fetch of e in a goroutine of its own, unless one
// started this way is still running: requests that find a refresh due only
// read e.refreshing, and the goroutine, not a joined singleflight call,
// clears it, so it can never stay set.
func (c *siteCache) background(e *siteEntry, origin http.Handler) {
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
func (c *siteCache) fresh(ctx context.Context, e *siteEntry, origin http.Handler, g uint64, done <-chan time.Time) (*siteState, bool) {
	for range 2 {
		select {
		case r := <-c.flight(e, origin):
			if e.have.Load() >= g {
				return r.Val.(*siteState), true
			}
		case <-done:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
	return nil, false
}

// wanted is the generation e must have been fetched at.
func (c *siteCache) wanted(e *siteEntry) uint64 {
	return max(c.all.Load(), e.want.Load())
}

// invalidate marks the entries that match (all when match is nil) for
// revalidation and returns them with the generation a fetch must start at
// to count.
func (c *siteCache) invalidate(match func(*siteEntry) bool) ([]*siteEntry, uint64) {
	g := c.seq.Add(1)
	if match == nil {
		c.all.Store(g)
	}
	var out []*siteEntry
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
func (c *siteCache) flight(e *siteEntry, origin http.Handler) <-chan singleflight.Result {
	return c.flights.DoChan(e.site, func() (any, error) { return c.fetchGen(e, origin), nil })
}

// fetchGen fetches e and records the generation it was asked for.
func (c *siteCache) fetchGen(e *siteEntry, origin http.Handler) *siteState {
	g := c.wanted(e)
	if origin == nil {
		if o := e.origin.Load(); o != nil {
			origin = o.h
		}
	}
	st := c.fetch(e, origin)
	for {
		have := e.have.Load()
		if have >= g || e.have.CompareAndSwap(have, g) {
			return st
		}
	}
}

// fetch fetches a site's robots.txt, following redirects, and stores the
// resulting state (RFC 9309 §2.3.1). A copy from a 2xx answer is
// revalidated with its ETag and Last-Modified: 304 keeps it.
func (c *siteCache) fetch(e *siteEntry, origin http.Handler) *siteState {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	prev := e.state.Load()
	req := FetchRequest{Site: e.siteURL, URL: robotsURL(e.siteURL), Origin: origin}
	if prev != nil && !prev.unreachable && prev.status >= 200 && prev.status < 300 {
		req.IfNoneMatch, req.IfModifiedSince = prev.etag, prev.lastMod
	}
	var (
		res FetchResult
		err error
	)
	for {
		res, err = c.src.Fetch(ctx, req)
		if err != nil || res.StatusCode < 300 || res.StatusCode >= 400 || res.StatusCode == http.StatusNotModified {
			break
		}
		if res.Location == nil {
			err = errNoLocation
			break
		}
		if req.Redirects == maxRedirects {
			err = errTooManyRedirects
			break
		}
		req.Redirects++
		req.URL = res.Location
	}
	now := c.now()
	e.checked.Store(now.UnixNano())
	e.failed.Store(false)
	var st *siteState
	switch {
	case err == nil && res.StatusCode == http.StatusNotModified && req.IfNoneMatch+req.IfModifiedSince != "":
		c.reportState(e, prev) // the source may have failed in between
		c.observe(e, FetchNotModified)
		c.setDue(e, now, c.refresh)
		return prev
	case err == nil && res.StatusCode >= 200 && res.StatusCode < 300:
		sum := sha256.Sum256(res.Body)
		st = &siteState{robots: c.parse(sum, res.Body), outcome: FetchOK, status: res.StatusCode, fetched: now,
			etag: res.ETag, lastMod: res.LastModified, ctype: res.ContentType, size: len(res.Body), sum: sum}
		// A web page where robots.txt should be: by its body, or by its
		// type when it has no rule (a real file sent as text/html by a
		// misconfigured server keeps its rules and outcome ok).
		if st.robots.HTML() || isHTMLType(res.ContentType) && !st.robots.Restricts() {
			st.outcome = FetchHTML
		}
	case errors.Is(err, errTooManyRedirects), errors.Is(err, errNoLocation),
		err == nil && res.StatusCode >= 400 && res.StatusCode < 500 && res.StatusCode != 429:
		st = &siteState{robots: c.empty, outcome: FetchUnavailable, status: res.StatusCode, fetched: now, err: err}
	default:
		if err == nil {
			err = errors.New("status " + http.StatusText(res.StatusCode))
			if res.StatusCode < 100 || res.StatusCode > 599 || http.StatusText(res.StatusCode) == "" || res.StatusCode == http.StatusNotModified {
				err = fmt.Errorf("unexpected status %d", res.StatusCode)
			}
		}
		kept := prev != nil && !prev.unreachable
		e.failed.Store(true)
		c.logChange(e, "unreachable", zapcore.WarnLevel, "robots_guard: robots.txt unreachable",
			zap.String("site", e.site), zap.Int("status", res.StatusCode), zap.Error(err), zap.Bool("kept_last_copy", kept),
			zap.String("meanwhile", c.unreachableMeans(kept)))
		c.observe(e, FetchUnreachable)
		if kept {
			c.setDue(e, now, c.retry)
			return prev
		}
		st = &siteState{robots: c.empty, outcome: FetchUnreachable, unreachable: true, status: res.StatusCode, fetched: now}
		c.setState(e, st)
		c.setDue(e, now, c.retry)
		return st
	}
	c.reportState(e, st)
	c.observe(e, st.outcome)
	c.setState(e, st)
	c.setDue(e, now, c.refresh)
	return st
}

// setState stores st as e's copy, moves e's charge to st's compiled file,
// and drops least recently used sites while the distinct compiled files
// are estimated over Config.MaxRobotsBytes.
func (c *siteCache) setState(e *siteEntry, st *siteState) {
	c.compiledMu.Lock()
	e.state.Store(st)
	if !e.evicted.Load() {
		c.charge(e, st)
	}
	over := c.held > c.maxBytes
	c.compiledMu.Unlock()
	if over {
		c.trim(e)
	}
}

// charge counts e for st's compiled file instead of the one it was
// counted for. compiledMu is held.
func (c *siteCache) charge(e *siteEntry, st *siteState) {
	if old := e.charged; old != nil {
		if c.charges[old.sum]--; c.charges[old.sum] <= 0 {
			delete(c.charges, old.sum)
			c.held -= compiledCost(old.size)
		}
		e.charged = nil
	}
	if st != nil && st.size > 0 && !st.unreachable {
		if c.charges[st.sum]++; c.charges[st.sum] == 1 {
			c.held += compiledCost(st.size)
		}
		e.charged = st
	}
}

// release is called for an entry the cache drops: its charge and its
// refresh timer go.
func (c *siteCache) release(e *siteEntry) {
	c.compiledMu.Lock()
	c.charge(e, nil)
	c.compiledMu.Unlock()
	e.timerMu.Lock()
	if e.timer != nil {
		e.timer.Stop()
	}
	e.timerMu.Unlock()
}

// trim drops least recently used sites other than keep while the estimate
// is over the bound.
func (c *siteCache) trim(keep *siteEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		c.compiledMu.Lock()
		over := c.held > c.maxBytes
		c.compiledMu.Unlock()
		if !over || !c.lru.removeOldest(keep) {
			return
		}
	}
}

// heldBytes returns the estimate of the compiled files in use.
func (c *siteCache) heldBytes() int64 {
	c.compiledMu.Lock()
	defer c.compiledMu.Unlock()
	return c.held
}

// parse returns the compiled form of body, shared with every other site
// whose robots.txt has the same bytes.
func (c *siteCache) parse(k [32]byte, body []byte) *policy.Robots {
	c.compiledMu.Lock()
	if r := c.compiled[k].Value(); r != nil {
		c.compiledMu.Unlock()
		return r
	}
	c.compiledMu.Unlock()
	r := policy.Parse(body)
	c.compiledMu.Lock()
	defer c.compiledMu.Unlock()
	if old := c.compiled[k].Value(); old != nil {
		return old // another site compiled it meanwhile
	}
	wp := weak.Make(r)
	c.compiled[k] = wp
	runtime.AddCleanup(r, func(k [32]byte) {
		c.compiledMu.Lock()
		if c.compiled[k] == wp {
			delete(c.compiled, k)
		}
		c.compiledMu.Unlock()
	}, k)
	return r
}

// compiledLen returns the number of compiled files held, for tests.
func (c *siteCache) compiledLen() int {
	c.compiledMu.Lock()
	defer c.compiledMu.Unlock()
	return len(c.compiled)
}

// robotsURL is the URL of a site's robots.txt.
func robotsURL(site *url.URL) *url.URL {
	return &url.URL{Scheme: site.Scheme, Host: site.Host, Path: "/robots.txt"}
}

// isHTMLType reports whether a Content-Type names an HTML document.
func isHTMLType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	return strings.EqualFold(mt, "text/html") || strings.EqualFold(mt, "application/xhtml+xml")
}

func (c *siteCache) observe(e *siteEntry, o FetchOutcome) {
	if c.obs != nil {
		c.obs.ObserveFetch(e.site, o)
	}
}

func (c *siteCache) unreachableMeans(kept bool) string {
	switch {
	case kept:
		return "the last good copy stays in force"
	case c.allowUnreachable:
		return "every bot may fetch everything (on_unreachable allow)"
	}
	return "bots are refused everything (on_unreachable disallow)"
}

// reportState logs, once per change of what it means for bots, the state
// of a site after a fetch that got an answer: a file with rules (Debug,
// or Info after a state without rules), a file without rules, an HTML page,
// or no file at all. "Why is nothing blocked?" has an answer in the log.
func (c *siteCache) reportState(e *siteEntry, st *siteState) {
	if c.onRules != nil && e.rulesSeen != st.robots && !st.unreachable {
		e.rulesSeen = st.robots
		c.onRules(e, st.robots)
	}
	site := zap.String("site", e.site)
	switch {
	case st.outcome == FetchHTML && st.robots.Restricts():
		c.logChange(e, "html_rules", zapcore.WarnLevel, "robots_guard: robots.txt is an HTML page, not a robots.txt; the rule lines found in it apply",
			site, zap.String("content_type", st.ctype), zap.Int("bytes", st.size))
	case st.outcome == FetchHTML:
		c.logChange(e, "html", zapcore.WarnLevel, "robots_guard: robots.txt is an HTML page, not a robots.txt; no rule applies and every bot may fetch everything",
			site, zap.String("content_type", st.ctype), zap.Int("bytes", st.size))
	case st.outcome == FetchUnavailable:
		f := []zap.Field{site, zap.Int("status", st.status)}
		if st.err != nil {
			f = append(f, zap.Error(st.err))
		}
		c.logChange(e, "unavailable:"+strconv.Itoa(st.status), zapcore.InfoLevel,
			"robots_guard: no robots.txt; every bot may fetch everything (RFC 9309 §2.3.1.3)", f...)
	case !st.robots.Restricts():
		c.logChange(e, "no_rules", zapcore.InfoLevel, "robots_guard: robots.txt has no Disallow and no Crawl-delay; every bot may fetch everything",
			site, zap.Int("bytes", st.size))
	default:
		lvl := zapcore.InfoLevel
		if e.class == "" || e.class == "rules" {
			lvl = zapcore.DebugLevel
		}
		c.logChange(e, "rules", lvl, "robots_guard: robots.txt rules in force", site, zap.Int("bytes", st.size))
	}
}

// logChange writes a line when a site's class differs from the last one
// logged for it. Fetches of one site never run at once, so e.class needs no
// lock.
func (c *siteCache) logChange(e *siteEntry, class string, lvl zapcore.Level, msg string, fields ...zap.Field) {
	if e.class == class {
		return
	}
	e.class = class
	if ce := c.log.Check(lvl, msg); ce != nil {
		ce.Write(fields...)
	}
}

// setDue records that e is due for a refresh after d. A timer marks it
// stale then; a timer of an earlier setDue that fires before the new due
// time does nothing.
func (c *siteCache) setDue(e *siteEntry, now time.Time, d time.Duration) {
	due := now.Add(d).UnixNano()
	e.due.Store(due)
	e.stale.Store(false)
	if c.timers {
		// One timer per entry, reset at each setDue and stopped when the
		// cache drops the entry; it holds the entry weakly, so a dropped
		// entry is garbage at once and a flood of sites leaves no queue of
		// pending timers behind.
		e.timerMu.Lock()
		if e.timer == nil {
			wp := weak.Make(e)
			e.timer = time.AfterFunc(d, func() {
				if e := wp.Value(); e != nil && time.Now().UnixNano() >= e.due.Load() {
					e.stale.Store(true)
				}
			})
		} else if !e.evicted.Load() {
			e.timer.Reset(d)
		}
		e.timerMu.Unlock()
	}
}

// isDue reports whether e is due for a refresh.
func (c *siteCache) isDue(e *siteEntry) bool {
	if c.timers {
		return e.stale.Load()
	}
	return c.now().UnixNano() >= e.due.Load()
}

var (
	errTooManyRedirects = errors.New("more than 5 redirects")
	errNoLocation       = errors.New("redirect without a usable Location")
)
