package sites

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/internal/testorigin"
)

// floodSetup returns a Cache of 100 sites, the origin of every site, a
// function that makes a request for the busy site, and the count of that
// site's robots.txt fetches.
func floodSetup(t *testing.T) (*Cache, http.Handler, func(), *atomic.Int32) {
	busyFetches := new(atomic.Int32)
	origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "busy.example" {
			busyFetches.Add(1)
		}
		io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
	})
	cfg := testConfig(SelfSource())
	cfg.MaxSites, cfg.Refresh, cfg.NewSitesPerSecond = 100, 3600e9, 1<<20
	c := newCache(cfg)
	return c, origin, func() { get(c, "busy.example", origin) }, busyFetches
}

// TestBusySiteSurvivesHostFlood: a flood of Host names seen once each does
// not push a site with traffic out of the cache, and the cache stays within
// MaxSites.
func TestBusySiteSurvivesHostFlood(t *testing.T) {
	c, origin, busy, busyFetches := floodSetup(t)
	for i := range 20000 {
		if i%50 == 0 {
			busy()
		}
		get(c, fmt.Sprintf("flood%d.example", i), origin)
	}
	// Its first entry may leave the probation segment before its second
	// request (the flood churns it); the sketch then admits it to the
	// protected segment on its second creation. A plain LRU of 100 fetched
	// it 400 times here.
	if n := busyFetches.Load(); n > 2 {
		t.Errorf("the busy site's robots.txt was fetched %d times during a flood of 20,000 one-hit Hosts, want at most 2", n)
	}
	if n := c.Len(); n > 100 {
		t.Errorf("%d sites cached, max_sites 100", n)
	}
}

// TestBusySiteSurvivesTwoHitFlood: Host names requested twice each (which
// reach the protected segment when it has room) do not push out a site
// with traffic either: admission compares sketch counts.
func TestBusySiteSurvivesTwoHitFlood(t *testing.T) {
	c, origin, busy, busyFetches := floodSetup(t)
	for range 500 {
		busy()
	}
	for i := range 10000 {
		if i%25 == 0 {
			busy()
		}
		h := fmt.Sprintf("two%d.example", i)
		get(c, h, origin)
		get(c, h, origin)
	}
	if n := busyFetches.Load(); n > 2 {
		t.Errorf("the busy site's robots.txt was fetched %d times during a two-hit flood, want at most 2", n)
	}
}

// TestHostFloodMemory: 30,000 distinct Host names on a catch-all site that
// serves facebook.com's 22 KB robots.txt to all of them. Sites that serve
// the same bytes share one compiled copy, and entries the cache drops are
// freed at once (their refresh timers hold them weakly), so the heap stays
// near MaxSites small entries. Before, each Host compiled its own copy
// (160 KB retained each) and evicted entries stayed reachable from their
// timers for the refresh interval: 475,000 Hosts took 2.76 GB.
func TestHostFloodMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("floods 30,000 Hosts")
	}
	body, err := os.ReadFile("../testdata/robots/facebook.txt")
	if err != nil {
		t.Fatal(err)
	}
	origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	cfg := testConfig(SelfSource())
	cfg.NewSitesPerSecond = 1 << 20 // every Host fetched: the sharing is what is measured
	c := newCache(cfg)
	get(c, "warm.example", origin)
	before := heapAlloc()
	const n = 30000
	for i := range n {
		get(c, fmt.Sprintf("h%d.example", i), origin)
	}
	after := heapAlloc()
	grew := int64(after) - int64(before)
	t.Logf("heap after %d distinct Hosts (max_sites %d): %+.1f MB", n, cfg.MaxSites, float64(grew)/(1<<20))
	if grew > 20<<20 {
		t.Errorf("heap grew by %.1f MB, want under 20 MB", float64(grew)/(1<<20))
	}
	if n := c.compiledLen(); n > 2 {
		t.Errorf("%d compiled copies of one robots.txt", n)
	}
}

// TestRobotsBytesBound: sites that serve distinct large files are dropped,
// least recently used first, while their compiled files are estimated over
// MaxBytes; sites that share one file are counted once.
func TestRobotsBytesBound(t *testing.T) {
	big := strings.Repeat("Disallow: /some/long/path/segment/*/x\n", 1300) // about 50 KB
	origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\n# "+r.Host+"\n"+big) // a different file per Host
	})
	const limit = 4 << 20 // the enforcer's smallest max_robots_bytes
	cfg := testConfig(SelfSource())
	cfg.MaxBytes, cfg.NewSitesPerSecond = limit, 1<<20
	c := newCache(cfg)
	for i := range 50 {
		get(c, fmt.Sprintf("d%d.example", i), origin)
	}
	if held := c.heldBytes(); held > limit {
		t.Errorf("estimated %d bytes of compiled files held, bound %d", held, limit)
	}
	per := compiledCost(len(big) + 30)
	if n := c.Len(); n > int(limit/per)+1 {
		t.Errorf("%d sites with distinct 50 KB files cached under a %d-byte bound", n, limit)
	}
	// One file shared by many sites is counted once.
	shared := testorigin.Status(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "User-agent: *\n"+big) })
	c2 := newCache(cfg)
	for i := range 200 {
		get(c2, fmt.Sprintf("s%d.example", i), shared)
	}
	if n, held := c2.Len(), c2.heldBytes(); n != 200 || held != compiledCost(len(big)+14) {
		t.Errorf("200 sites sharing one file: %d cached, %d bytes estimated (one file: %d)", n, held, compiledCost(len(big)+14))
	}
}

// TestNewSitesPerSecond: first fetches of new sites beyond the bound are
// postponed (the state says so, and the Observer counts it), and the sites
// are fetched once tokens come back; known sites are never postponed.
func TestNewSitesPerSecond(t *testing.T) {
	clk := testclock.New()
	obs := &countObserver{}
	var fetches atomic.Int32
	origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
	})
	cfg := testConfig(SelfSource())
	cfg.NewSitesPerSecond, cfg.Now, cfg.Observer = 10, clk.Now, obs
	c := newCache(cfg)
	postponed := 0
	for i := range 100 {
		if get(c, fmt.Sprintf("n%d.example", i), origin).Postponed {
			postponed++
		}
	}
	if n := fetches.Load(); n != 40 || postponed != 60 || obs.get("postponed") != 60 {
		t.Fatalf("%d fetches, %d postponed (%d observed) of 100 new sites at one instant; want the burst of 40 fetched", n, postponed, obs.get("postponed"))
	}
	if get(c, "n0.example", origin).Postponed {
		t.Fatal("a known site was postponed")
	}
	clk.Add(1e9) // 10 tokens come back
	if st := get(c, "n99.example", origin); st.Postponed || !denies(st, "/private/x") {
		t.Fatalf("a postponed site after the wait: %+v", st)
	}
}

// heapAlloc returns the live heap after two collections.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestNewSitesShares: a flood of new Host names from one network spends
// that network's share of NewSitesPerSecond only, so another client's
// first request to a new site is fetched; the named sites are never
// postponed, even with the whole budget spent.
func TestNewSitesShares(t *testing.T) {
	clk := testclock.New()
	var fetches atomic.Int32
	origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
	})
	cfg := testConfig(SelfSource())
	cfg.NewSitesPerSecond, cfg.Now = 10, clk.Now // a burst of 40, 5 per network
	cfg.SiteNames = []string{"Shop.Example.", "*.blog.example", "*"}
	c := newCache(cfg)
	getFrom := func(host, client string) *State {
		_, st := c.Get(context.Background(), MakeKey("http", host, 0), host, 0, origin, true, client)
		return st
	}
	postponed := 0
	for i := range 100 {
		if getFrom(fmt.Sprintf("flood%d.example", i), "192.0.2."+fmt.Sprint(i%250)).Postponed {
			postponed++
		}
	}
	if n := fetches.Load(); n != 5 || postponed != 95 {
		t.Fatalf("a flood from one /24: %d fetched, %d postponed; want its share of 5", n, postponed)
	}
	if st := getFrom("crawled.example", "198.51.100.9"); st.Postponed {
		t.Fatal("another network's first request to a new site was postponed by the flood")
	}
	if st := getFrom("v6.example", "[2001:db8:1:2::9]:443"); st.Postponed {
		t.Fatal("an IPv6 network's first request was postponed")
	}
	// Many networks spend the whole budget: named sites still pass.
	for i := range 200 {
		getFrom(fmt.Sprintf("wide%d.example", i), fmt.Sprintf("10.%d.%d.1", i/250, i%250))
	}
	if st := getFrom("other.example", "203.0.113.1"); !st.Postponed {
		t.Fatal("the budget is not spent: the test floods too little")
	}
	for _, host := range []string{"shop.example", "SHOP.example:8080"} {
		if st := getFrom(host, "203.0.113.1"); st.Postponed || !denies(st, "/private/x") {
			t.Fatalf("named site %s: %+v", host, st)
		}
	}
	for _, host := range []string{"a.blog.example", "x.y.blog.example"} {
		if st := getFrom(host, "203.0.113.1"); !st.Postponed {
			t.Fatalf("%s: a wildcard name exempts nobody (random subdomains would spend fetches without bound)", host)
		}
	}
}
