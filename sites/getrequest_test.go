package sites

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestGetRequestSpelling checks that GetRequest finds the site Get finds
// with MakeKey, whatever the spelling of the request and whichever entry
// was looked up last: the entry's remembered spelling is only a short cut.
func TestGetRequestSpelling(t *testing.T) {
	origin := bodySite("User-agent: *\nDisallow: /private/\n")
	c := newCache(testConfig(SelfSource()))
	ctx := context.Background()
	reqs := []struct {
		scheme, host string
		port         int
	}{
		{"http", "example.com", 80},
		{"http", "example.com", 80},
		{"http", "Example.COM", 80},
		{"http", "example.com.", 80},
		{"http", "example.com:8080", 80}, // the Host header's port never counts
		{"http", "example.com", 8080},
		{"https", "example.com", 8080},
		{"HTTPS", "example.com", 443},
		{"Https", "example.com", 443}, // neither spelling of HTTPS: http, both ways
		{"https", "example.com", 80},
		{"http", "example.org", 80},
		{"http", "example.com", 0},
		{"http", "", 80},
		{"http", "", 0},
		{"http", "[::1]:80", 80},
		{"http", "::1", 80},
	}
	// Every order of two requests, so that each one follows each other
	// one as the cache's last entry.
	for _, a := range reqs {
		for _, b := range reqs {
			for _, r := range []struct {
				scheme, host string
				port         int
			}{a, b, b} {
				got, _ := c.GetRequest(ctx, r.scheme, r.host, r.port, origin, false, "")
				want := c.Entry(MakeKey(r.scheme, r.host, r.port))
				if got != want {
					t.Fatalf("after %v: GetRequest%v = %s, Get with MakeKey = %s", a, r, got.Name(), want.Name())
				}
			}
		}
	}
	// An entry made without a request (a prefetch) learns a spelling from
	// the first request, and the short cut then finds it.
	k := MakeKey("https", "prefetched.example", 443)
	e := c.Entry(k)
	if got, _ := c.GetRequest(ctx, "https", "prefetched.example", 443, origin, false, ""); got != e {
		t.Fatalf("GetRequest of a prefetched site: %s, want %s", got.Name(), e.Name())
	}
	if sp := e.spelled.Load(); sp == nil || sp.host != "prefetched.example" || sp.port != 443 {
		t.Fatalf("the prefetched site's spelling: %+v", sp)
	}
}

// TestGetRequestEvicted checks that the short cut never returns an entry
// the cache has dropped.
func TestGetRequestEvicted(t *testing.T) {
	cfg := testConfig(SelfSource())
	cfg.MaxSites = 2
	c := newCache(cfg)
	ctx := context.Background()
	origin := bodySite("")
	first, _ := c.GetRequest(ctx, "http", "a.example", 80, origin, false, "")
	for i := range 50 {
		c.GetRequest(ctx, "http", "b"+string(rune('a'+i%26))+".example", 80, origin, false, "")
	}
	if !first.evicted.Load() {
		t.Skip("a.example was not evicted; the test needs it to be")
	}
	c.last.Store(first) // as if it had been the last one looked up
	if got, _ := c.GetRequest(ctx, "http", "a.example", 80, origin, false, ""); got == first {
		t.Fatal("GetRequest returned an evicted entry")
	}
}

// TestGetRequestLongHost checks that a Host header longer than any name
// and port is never kept as a site's spelling (its port part is not
// bounded by the name's), and that the site is still found.
func TestGetRequestLongHost(t *testing.T) {
	c := newCache(testConfig(SelfSource()))
	ctx := context.Background()
	host := "example.com:" + strings.Repeat("0", 100_000)
	e, _ := c.GetRequest(ctx, "http", host, 80, bodySite(""), false, "")
	if sp := e.spelled.Load(); sp != nil {
		t.Fatalf("a %d-byte Host was kept as the spelling", len(sp.host))
	}
	if want := c.Entry(MakeKey("http", host, 80)); e != want {
		t.Fatalf("GetRequest = %s, want %s", e.Name(), want.Name())
	}
}

// TestOriginRefSame checks when a site's remembered handler is replaced:
// by another handler of a comparable type, or of another type; never by a
// handler of a type that cannot be compared (the first one seen stays).
func TestOriginRefSame(t *testing.T) {
	a, b := bodySite("a"), bodySite("b")
	f := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	g := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, tc := range []struct {
		held, got http.Handler
		same      bool
	}{
		{a, a, true},
		{a, b, false},
		{a, f, false},
		{f, a, false},
		{f, g, true}, // not comparable: kept
		{f, f, true},
	} {
		if got := newOriginRef(tc.held).same(tc.got); got != tc.same {
			t.Errorf("held %T %p, got %T %p: same %v, want %v", tc.held, tc.held, tc.got, tc.got, got, tc.same)
		}
	}
}
