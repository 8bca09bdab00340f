package sites

import (
	"net/http"
	"strings"
	"testing"
)

func TestMakeKey(t *testing.T) {
	for _, c := range []struct {
		scheme, host string
		port         int
		want         Key
		site         string
	}{
		{"http", "Example.COM.", 8080, Key{host: "example.com", port: 8080}, "example.com:8080"},
		{"http", "example.com:1", 8080, Key{host: "example.com", port: 8080}, "example.com:8080"},
		{"http", "example.com:abc", 80, Key{host: "example.com"}, "example.com"},
		{"https", "example.com:443", 0, Key{https: true, host: "example.com"}, "example.com"},
		{"http", "example.com:8081", 0, Key{host: "example.com"}, "example.com"}, // the client's port never counts
		{"http", "[::1]:9", 8080, Key{host: "::1", port: 8080}, "[::1]:8080"},
		{"https", "example.com:8443", 8443, Key{https: true, host: "example.com", port: 8443}, "example.com:8443"},
		{"http", "", 8080, Key{port: 8080}, ":8080"},
		{"http", "a:b:c", 0, Key{host: "a:b:c"}, "[a:b:c]"},
	} {
		k := MakeKey(c.scheme, c.host, c.port)
		if k != c.want || k.HostPort() != c.site {
			t.Errorf("MakeKey(%q, %q, %d) = %+v %q, want %+v %q", c.scheme, c.host, c.port, k, k.HostPort(), c.want, c.site)
		}
		if name := k.Name(); name != strings.ToLower(c.scheme)+"://"+c.site {
			t.Errorf("MakeKey(%q, %q, %d).Name() = %q", c.scheme, c.host, c.port, name)
		}
	}
	if n := testing.AllocsPerRun(100, func() { MakeKey("http", "example.com:443", 8080) }); n != 0 {
		t.Errorf("MakeKey allocates %v times", n)
	}
}

func TestFetchHost(t *testing.T) {
	for _, c := range []struct {
		host string
		port int
		want string
	}{
		{"example.com", 8080, "example.com"},            // behind a proxy: the Host clients use
		{"example.com:8080", 8080, "example.com:8080"},  // the server's own port
		{"example.com:1", 8080, "example.com"},          // a port the client chose is dropped
		{"Example.COM.:8080", 8080, "example.com:8080"}, // canonical name
		{"[::1]:8080", 8080, "[::1]:8080"},
		{"", 8080, ":8080"},                     // no Host: the site it reaches
		{"example.com:81", 0, "example.com:81"}, // server port unknown
	} {
		k := MakeKey("http", c.host, c.port)
		if got := fetchHost(k, c.host, c.port); got != c.want {
			t.Errorf("fetchHost(%q, %d) = %q, want %q", c.host, c.port, got, c.want)
		}
	}
}

// TestSiteCacheCap: the cache holds at most MaxSites sites, keyed by the
// canonical (lower-case) host name.
func TestSiteCacheCap(t *testing.T) {
	cfg := testConfig(SelfSource())
	cfg.MaxSites = 2
	c := newCache(cfg)
	origin := bodySite("User-agent: *\nDisallow: /x\n")
	for _, host := range []string{"a.example", "B.example", "c.example:8080", "b.example"} {
		get(c, host, origin)
	}
	if n := c.Len(); n > 2 {
		t.Fatalf("%d sites cached, want at most 2", n)
	}
	if _, ok := c.lru.Peek(Key{host: "b.example"}); !ok {
		t.Fatal("host not lower-cased in the key")
	}
}

// TestSiteCacheLastEntry: the one-entry fast path of the site cache returns
// the latest site, and never an entry the LRU has dropped.
func TestSiteCacheLastEntry(t *testing.T) {
	newCache := func() *Cache {
		cfg := testConfig(BytesSource(nil))
		cfg.MaxSites = 2
		return newCache(cfg)
	}
	if c := newCache(); c.Entry(MakeKey("http", "a.example", 0)) != c.Entry(MakeKey("http", "A.example", 0)) {
		t.Fatal("the same site (host case aside) got a second entry")
	}
	// A site looked up once stays in probation (one slot of two) and
	// the next new site pushes it out.
	c := newCache()
	a := c.Entry(MakeKey("http", "a.example", 0))
	c.Entry(MakeKey("http", "b.example", 0)) // evicts a
	if !a.evicted.Load() {
		t.Fatal("the LRU dropped a.example without marking it")
	}
	c.last.Store(a) // as if a had been the latest lookup when it was dropped
	if c.Entry(MakeKey("http", "a.example", 0)) == a {
		t.Error("an evicted entry came back from the fast path")
	}
}

// TestMatch: the site names of Invalidate and Refresh.
func TestMatch(t *testing.T) {
	c := newCache(testConfig(BytesSource([]byte("User-agent: *\nDisallow: /\n"))))
	for _, k := range []Key{MakeKey("http", "example.com", 0), MakeKey("https", "example.com", 0), MakeKey("http", "example.com", 8080), MakeKey("http", "other.example", 0)} {
		c.Get(t.Context(), k, "", 0, http.NotFoundHandler(), true, "")
	}
	for name, want := range map[string]int{
		"":                         4,
		"example.com":              3,
		"EXAMPLE.com.":             3,
		"example.com:80":           1,
		"example.com:443":          1,
		"example.com:8080":         1,
		"http://example.com":       1,
		"https://example.com/":     1,
		"http://example.com:8080":  1,
		"https://example.com:8080": 0,
		"nothing.example":          0,
	} {
		if got := len(c.Invalidate(Match(name))); got != want {
			t.Errorf("Match(%q) names %d sites, want %d", name, got, want)
		}
	}
}

// A zero Config field takes its documented default: a Cache built with
// only a Source and Config{}.WithDefaults fetches, keeps and bounds sites as the engine's defaults
// do.
func TestConfigDefaults(t *testing.T) {
	c := newCache(testConfig(BytesSource([]byte("User-agent: *\nDisallow: /x\n"))))
	if c.lru.protSize+max(1, DefaultMaxSites/4) != DefaultMaxSites || c.maxBytes != DefaultMaxBytes || c.refresh != DefaultRefresh || c.timeout != DefaultFetchTimeout {
		t.Fatalf("defaults: %d sites, %d bytes, refresh %v, timeout %v", c.lru.protSize+max(1, DefaultMaxSites/4), c.maxBytes, c.refresh, c.timeout)
	}
	if st := get(c, "example.com", nil); st.Unreachable || !denies(st, "/x") {
		t.Fatalf("a Cache with defaults: %+v", st)
	}
}
