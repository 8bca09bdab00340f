package sites

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostCounter is an origin that serves a robots.txt naming the Host it
// was asked with, and counts the requests per Host.
type hostCounter struct {
	mu    sync.Mutex
	hosts map[string]int
}

func (h *hostCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hosts[r.Host]++
	h.mu.Unlock()
	switch r.URL.Path {
	case "/robots.txt":
		if r.Host == "moved.example.com" {
			http.Redirect(w, r, "/elsewhere.txt", http.StatusMovedPermanently)
			return
		}
		if r.Host == "secure.example.com" && r.Header.Get("X-Forwarded-Proto") != "https" {
			http.Redirect(w, r, "https://secure.example.com/robots.txt", http.StatusMovedPermanently)
			return
		}
		if r.Host == "forced.example.com" { // ignores X-Forwarded-Proto
			http.Redirect(w, r, "https://forced.example.com/robots.txt", http.StatusMovedPermanently)
			return
		}
		if r.Host == "away.example.com" {
			http.Redirect(w, r, "http://127.0.0.1:1/robots.txt", http.StatusFound)
			return
		}
		io.WriteString(w, "User-agent: *\nDisallow: /"+r.Host+"/\n")
	case "/elsewhere.txt":
		io.WriteString(w, "User-agent: *\nDisallow: /moved/\n")
	default:
		http.NotFound(w, r)
	}
}

func (h *hostCounter) count(host string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hosts[host]
}

// originCache is a Cache whose robots.txt files come from an origin that
// serves them for site_names.
func originCache(t *testing.T, names ...string) (*Cache, *hostCounter) {
	t.Helper()
	hc := &hostCounter{hosts: map[string]int{}}
	srv := httptest.NewServer(hc)
	t.Cleanup(srv.Close)
	cfg, err := Config{Origin: srv.URL, SiteNames: names}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	src, err := cfg.NewSource(NewHTTPClient(nil, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg, Deps{Source: src}), hc
}

// TestOriginSource: each named site's robots.txt is asked of the origin
// with the site's own Host; a redirect within the site is followed there
// too (resolved against the site, not the origin's address), and one to
// another host is fetched from public addresses only.
func TestOriginSource(t *testing.T) {
	c, hc := originCache(t, "example.com", "moved.example.com", "away.example.com", "secure.example.com", "forced.example.com")
	if st := get(c, "example.com", nil); !denies(st, "/example.com/x") || st.Unknown {
		t.Errorf("example.com: %+v", st)
	}
	if st := get(c, "Example.COM:8080", nil); !denies(st, "/example.com/x") {
		t.Errorf("example.com with a port: %+v", st)
	}
	if st := get(c, "moved.example.com", nil); !denies(st, "/moved/x") {
		t.Errorf("a redirect within the site: %+v", st)
	}
	if st := get(c, "away.example.com", nil); !st.Unreachable {
		t.Errorf("a redirect to a loopback address elsewhere: %+v, want unreachable (refused)", st)
	}
	if st := get(c, "secure.example.com", nil); !denies(st, "/secure.example.com/x") {
		t.Errorf("an upstream that forces https and reads X-Forwarded-Proto: %+v", st)
	}
	if st := get(c, "forced.example.com", nil); !st.Unreachable || denies(st, "/x") {
		t.Errorf("an upstream that forces https and ignores X-Forwarded-Proto: %+v, want unreachable (never \"no rules\")", st)
	}
	if hc.count("example.com") == 0 || hc.count("moved.example.com") != 2 {
		t.Errorf("origin requests by Host: %v", hc.hosts)
	}
}

// TestOriginUnknownSites: with an origin, only site_names get a
// robots.txt; any other host shares the unknown site, costs no fetch and
// no cache slot, whatever a client writes.
func TestOriginUnknownSites(t *testing.T) {
	c, hc := originCache(t, "example.com", "*.example.org")
	cases := []struct {
		host  string
		known bool
	}{
		{"example.com", true},
		{"EXAMPLE.com.", true},
		{"a.example.org", true},
		{"b.example.org:443", true},
		{"example.org", false},
		{"a.b.example.org", false},
		{"evil.test", false},
		{"example.com.evil.test", false},
		{"127.0.0.1", false},
		{"", false},
	}
	for _, k := range cases {
		ent, st := c.GetRequest(context.Background(), "http", k.host, 0, nil, true, "192.0.2.1")
		if st.Unknown == k.known || (ent.Name() == unknownSite) == k.known {
			t.Errorf("%q: site %q, unknown %v, want known %v", k.host, ent.Name(), st.Unknown, k.known)
		}
	}
	for host := range hc.hosts {
		host, _ = SplitHost(host)
		if !strings.HasSuffix(host, "example.com") && !strings.HasSuffix(host, ".example.org") {
			t.Errorf("robots.txt asked for with Host %q", host)
		}
	}
	if n := len(c.Sites()); n != 3 {
		t.Errorf("%d sites cached, want 3 (the known ones)", n)
	}
}

// TestOriginConfig: origin needs site_names, excludes source, and is an
// address only.
func TestOriginConfig(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Origin: "http://127.0.0.1:9000"}, "needs site_names"},
		{Config{Origin: "http://127.0.0.1:9000", SiteNames: []string{"*"}}, "needs site_names"},
		{Config{Origin: "http://127.0.0.1:9000/robots.txt", SiteNames: []string{"a.test"}}, "address only"},
		{Config{Origin: "127.0.0.1:9000", SiteNames: []string{"a.test"}}, "http://host[:port]"},
		{Config{Origin: "ftp://a", SiteNames: []string{"a.test"}}, "http://host[:port]"},
		{Config{Origin: "http://a", Source: "http://b/robots.txt", SiteNames: []string{"a.test"}}, "give one of them"},
		{Config{Origin: "https://upstream.internal/", SiteNames: []string{"*.a.test"}}, ""},
	}
	for _, k := range cases {
		_, err := k.cfg.WithDefaults()
		switch {
		case k.want == "" && err != nil:
			t.Errorf("%+v: %v", k.cfg, err)
		case k.want != "" && (err == nil || !strings.Contains(err.Error(), k.want) || !strings.Contains(err.Error(), "robots_txt: origin")):
			t.Errorf("%+v: %v, want an error naming robots_txt: origin with %q", k.cfg, err, k.want)
		}
	}
	u, _ := url.Parse("http://127.0.0.1:9/ignored?x")
	if s := OriginSource(u, nil).(*originSource); s.origin.String() != "http://127.0.0.1:9" {
		t.Errorf("origin kept as %s", s.origin)
	}
}
