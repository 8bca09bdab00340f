package sites

import (
	"context"
	"net/http"
	"strings"
	"sync"
)

// What operators ask of the cache: the sites it holds (Sites), to fetch
// their robots.txt again (Invalidate, Fetch), and to start from another
// cache's copies after a configuration change (Adopt).

// Sites returns the cached sites: the protected segment first, each
// segment from least to most recently used.
func (c *Cache) Sites() []*Site { return c.lru.Values() }

// Match returns a filter for the sites that name names: a scheme and host
// ("https://example.com:8443") names one, a host and port
// ("example.com:8080") names it under either scheme, a bare host
// ("example.com") under every scheme and port; "" names every site (a nil
// filter). Names are compared in canonical form (lower case, no trailing
// dot).
func Match(name string) func(*Site) bool {
	if name == "" {
		return nil
	}
	name = strings.TrimSuffix(name, "/")
	scheme, host, ok := strings.Cut(name, "://")
	if !ok {
		scheme, host = "", name
	}
	hostname, port := SplitHost(host)
	k := MakeKey(scheme, host, port)
	return func(e *Site) bool {
		switch {
		case e.key.host != k.host:
			return false
		case scheme != "":
			return e.key.https == k.https && e.key.port == k.port
		case port == 0:
			return hostname != "" // a bare name: every scheme and port
		}
		def := 80
		if e.key.https {
			def = 443
		}
		return int(e.key.port) == port || e.key.port == 0 && port == def
	}
}

// Invalidate marks the cached sites that match (all when match is nil) for
// revalidation and returns them. Their copies stay in force; the next Get
// of such a site with wait set waits for a new fetch (at most the fetch
// timeout) and returns its result, or the old copy when the fetch fails,
// and the next Get without wait starts that fetch in the background.
func (c *Cache) Invalidate(match func(*Site) bool) []*Site {
	ents, _ := c.invalidate(match)
	return ents
}

// Stale reports whether e was marked by Invalidate and no fetch has
// renewed it since.
func (c *Cache) Stale(e *Site) bool { return c.wanted(e) > e.have.Load() }

// FetchReport is the result of Fetch for one site.
type FetchReport struct {
	Site *Site
	// State is the copy in force after the fetch (the old one when it
	// did not finish or failed).
	State *State
	// Err says why the fetch did not renew the copy, empty when it did.
	Err string
}

// Fetch fetches the robots.txt of sites now, at most eight at a time, each
// bounded by the fetch timeout and all by ctx, and returns the outcome of
// each. A fetch that started before the site was last marked by
// Invalidate does not count: one more follows. A failure keeps the last
// good copy, as a timed refresh does. origin, when not nil, says which
// handler serves a site now (for the default source); when it is nil or
// returns nil, the handler that last served the site's requests is used.
func (c *Cache) Fetch(ctx context.Context, sites []*Site, origin func(site string) http.Handler) []FetchReport {
	out := make([]FetchReport, len(sites))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, ent := range sites {
		var h http.Handler
		if origin != nil {
			h = origin(ent.site)
		}
		g := c.wanted(ent)
		out[i].Site = ent
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				out[i].State, out[i].Err = ent.state.Load(), ctx.Err().Error()
				return
			}
			st, ok := c.fresh(ctx, ent, h, g, nil)
			switch {
			case !ok:
				out[i].State = ent.state.Load()
				out[i].Err = "the fetch did not finish: " + context.Cause(ctx).Error()
			case ent.failed.Load():
				out[i].State = st
				out[i].Err = "robots.txt unreachable; the last good copy, if any, stays in force"
			default:
				out[i].State = st
			}
		})
	}
	wg.Wait()
	return out
}

// Adopt copies the good robots.txt copies that from holds into c, for the
// sites c has not cached yet, and marks every site for revalidation, so
// that a cache that replaces another one (a configuration change) starts
// with the last good copies instead of fetching every site while requests
// wait. Both must read robots.txt from the same source. carry, when not
// nil, is called for each adopted site before its copy is in force; it
// moves what the user attached to the old site (Attach) to the new one and
// reports whether that state already reflects the copy, in which case
// Config.OnRules is not called again for it. Adopt returns the number of
// copies adopted.
func (c *Cache) Adopt(from *Cache, carry func(from, to *Site) bool) int {
	if from == nil || from == c {
		return 0
	}
	n := 0
	now := c.now()
	for _, old := range from.lru.Values() {
		st := old.state.Load()
		if st == nil || st.Unreachable {
			continue
		}
		ent := c.Entry(old.key)
		if ent.state.Load() != nil {
			continue
		}
		if carry != nil && carry(old, ent) {
			ent.rulesSeen = st.Robots
		}
		c.setState(ent, st)
		ent.checked.Store(old.checked.Load())
		c.setDue(ent, now, c.refresh)
		n++
	}
	if n > 0 {
		c.invalidate(nil)
	}
	return n
}
