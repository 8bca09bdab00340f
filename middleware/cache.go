package middleware

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/robotsguard/robotsguard/policy"
)

// siteKey identifies a site: scheme and lower-cased host, port kept.
type siteKey struct {
	https bool
	host  string
}

// siteState is one immutable view of a site's robots.txt.
type siteState struct {
	robots      *policy.Robots // never nil; empty rules when none apply
	outcome     FetchOutcome   // outcome of the fetch that produced robots
	unreachable bool           // no good copy: OnUnreachable applies
}

// siteEntry is the cache slot of one site. state is replaced as a whole.
type siteEntry struct {
	key        siteKey
	site       string // "https://example.com"
	siteURL    *url.URL
	state      atomic.Pointer[siteState]
	due        atomic.Int64 // unix nanoseconds when a refresh is due
	refreshing atomic.Bool  // a background refresh was started
	hits       atomic.Uint32
	stale      atomic.Bool // set by a timer when a refresh is due
	evicted    atomic.Bool // dropped from the LRU: siteCache.last must not return it
}

// siteCache holds the robots.txt of each site, fetched through a Source with
// one fetch per site at a time.
type siteCache struct {
	lru     *lru.Cache[siteKey, *siteEntry]
	last    atomic.Pointer[siteEntry] // the entry of the latest lookup: most servers serve one site
	mu      sync.Mutex                // serialises entry creation
	flights singleflight.Group
	src     Source
	now     func() time.Time
	refresh time.Duration
	retry   time.Duration
	timeout time.Duration
	empty   *policy.Robots
	log     *zap.Logger
	obs     Observer
	// timers: the clock is the real one, so a timer marks entries stale and
	// requests need not read the clock (time.Now costs tens of ns on some
	// virtual machines). With an injected clock, requests compare times.
	timers bool
}

func newSiteCache(size int, src Source, now func() time.Time, refresh, timeout time.Duration, log *zap.Logger, obs Observer) *siteCache {
	// size > 0 is checked by Config.
	c, _ := lru.NewWithEvict(size, func(_ siteKey, e *siteEntry) { e.evicted.Store(true) })
	timers := now == nil
	if now == nil {
		now = time.Now
	}
	return &siteCache{
		timers:  timers,
		lru:     c,
		src:     src,
		now:     now,
		refresh: refresh,
		retry:   min(refresh, time.Minute),
		timeout: timeout,
		empty:   policy.Parse(nil),
		log:     log,
		obs:     obs,
	}
}

// makeKey builds the cache key of a site without allocating when the host
// is already lower-case.
func makeKey(scheme, host string) siteKey {
	for i := 0; i < len(host); i++ {
		if c := host[i]; 'A' <= c && c <= 'Z' {
			host = strings.ToLower(host)
			break
		}
	}
	return siteKey{https: scheme == "https" || scheme == "HTTPS", host: host}
}

// entry returns the cache slot of a site, creating it when needed.
func (c *siteCache) entry(k siteKey) *siteEntry {
	if e := c.last.Load(); e != nil && e.key == k && !e.evicted.Load() {
		if e.hits.Add(1)%promoteEvery == 0 {
			c.lru.Get(k) // refresh its LRU position now and then
		}
		return e
	}
	if e, ok := c.lru.Peek(k); ok {
		if e.hits.Add(1)%promoteEvery == 0 {
			c.lru.Get(k)
		}
		c.last.Store(e)
		return e
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.lru.Get(k); ok {
		return e
	}
	scheme := "http"
	if k.https {
		scheme = "https"
	}
	e := &siteEntry{key: k, site: scheme + "://" + k.host, siteURL: &url.URL{Scheme: scheme, Host: k.host}}
	c.lru.Add(k, e)
	c.last.Store(e)
	return e
}

// get returns the robots.txt state of a site. A known copy is returned at
// once, and a refresh is started in the background when it is due. Without
// a copy the caller waits for the first fetch, at most the fetch timeout.
func (c *siteCache) get(ctx context.Context, k siteKey, origin http.Handler) (*siteEntry, *siteState) {
	e := c.entry(k)
	if st := e.state.Load(); st != nil {
		if c.isDue(e) && e.refreshing.CompareAndSwap(false, true) {
			e.stale.Store(false)
			c.flights.DoChan(e.site, func() (any, error) {
				defer e.refreshing.Store(false)
				return c.fetch(e, origin), nil
			})
		}
		return e, st
	}
	ch := c.flights.DoChan(e.site, func() (any, error) { return c.fetch(e, origin), nil })
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

// fetch fetches a site's robots.txt, following redirects, and stores the
// resulting state (RFC 9309 §2.3.1).
func (c *siteCache) fetch(e *siteEntry, origin http.Handler) *siteState {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	req := FetchRequest{Site: e.siteURL, URL: e.siteURL.JoinPath("/robots.txt"), Origin: origin}
	var (
		res FetchResult
		err error
	)
	for {
		res, err = c.fetchOnce(ctx, req)
		if err != nil || res.StatusCode < 300 || res.StatusCode >= 400 {
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
	prev := e.state.Load()
	var st *siteState
	switch {
	case err == nil && res.StatusCode >= 200 && res.StatusCode < 300:
		st = &siteState{robots: policy.Parse(res.Body), outcome: FetchOK}
	case errors.Is(err, errTooManyRedirects), errors.Is(err, errNoLocation),
		err == nil && res.StatusCode >= 400 && res.StatusCode < 500 && res.StatusCode != 429:
		st = &siteState{robots: c.empty, outcome: FetchUnavailable}
	default:
		if err == nil {
			err = errors.New("status " + http.StatusText(res.StatusCode))
			if res.StatusCode < 100 || res.StatusCode > 599 || http.StatusText(res.StatusCode) == "" {
				err = errors.New("unexpected status")
			}
		}
		c.log.Warn("robots_guard: robots.txt unreachable",
			zap.String("site", e.site), zap.Int("status", res.StatusCode), zap.Error(err),
			zap.Bool("kept_last_copy", prev != nil && !prev.unreachable))
		if c.obs != nil {
			c.obs.ObserveFetch(e.site, FetchUnreachable)
		}
		if prev != nil && !prev.unreachable {
			c.setDue(e, now, c.retry)
			return prev
		}
		st = &siteState{robots: c.empty, outcome: FetchUnreachable, unreachable: true}
		e.state.Store(st)
		c.setDue(e, now, c.retry)
		return st
	}
	if c.obs != nil {
		c.obs.ObserveFetch(e.site, st.outcome)
	}
	e.state.Store(st)
	c.setDue(e, now, c.refresh)
	return st
}

// setDue records that e is due for a refresh after d.
func (c *siteCache) setDue(e *siteEntry, now time.Time, d time.Duration) {
	e.due.Store(now.Add(d).UnixNano())
	if c.timers {
		time.AfterFunc(d, func() { e.stale.Store(true) })
	}
}

// isDue reports whether e is due for a refresh.
func (c *siteCache) isDue(e *siteEntry) bool {
	if c.timers {
		return e.stale.Load()
	}
	return c.now().UnixNano() >= e.due.Load()
}

func (c *siteCache) fetchOnce(ctx context.Context, req FetchRequest) (FetchResult, error) {
	return c.src.Fetch(ctx, req)
}

var (
	errTooManyRedirects = errors.New("more than 5 redirects")
	errNoLocation       = errors.New("redirect without a usable Location")
)
