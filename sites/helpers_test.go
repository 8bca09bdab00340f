package sites

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// countObserver counts fetch outcomes by name.
type countObserver struct {
	mu sync.Mutex
	m  map[string]int
}

func (o *countObserver) ObserveFetch(_ string, outcome Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]int{}
	}
	o.m[outcome.String()]++
}

func (o *countObserver) get(k string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[k]
}

// testConfig is the enforcer's default configuration of a Cache, with src.
func testConfig(src Source) Config {
	return Config{Source: src, MaxSites: 1000, MaxBytes: 256 << 20, Refresh: time.Minute, Timeout: 5 * time.Second, NewSitesPerSecond: 50}
}

// statusSite returns a handler serving f at /robots.txt and "ok" elsewhere.
func statusSite(f http.HandlerFunc) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", f)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	return mux
}

// bodySite serves body at /robots.txt.
func bodySite(body string) http.Handler {
	return statusSite(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })
}

// redirectChain redirects n times before it serves final.
func redirectChain(n int, final string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var hop int
		fmt.Sscanf(r.URL.Query().Get("hop"), "%d", &hop)
		if hop < n {
			http.Redirect(w, r, fmt.Sprintf("/robots.txt?hop=%d", hop+1), http.StatusMovedPermanently)
			return
		}
		io.WriteString(w, final)
	}
}

// get returns the copy of host (http, port unknown) as a bot's request
// gets it: waiting for a fetch when one is needed.
func get(c *Cache, host string, origin http.Handler) *State {
	_, st := c.Get(context.Background(), MakeKey("http", host, 0), host, 0, origin, true)
	return st
}

// denies reports whether st's rules deny path to a bot no group names.
func denies(st *State, path string) bool {
	d := st.Robots.Agent("AhrefsBot").Decide(path)
	return !d.Allowed && !d.Exempt
}

// editableSite serves a robots.txt that tests can change, with an ETag and
// Last-Modified through http.ServeContent (which answers conditional
// requests with 304, as Caddy's file_server does), and records the
// requests it gets for /robots.txt.
type editableSite struct {
	fail    atomic.Bool // answer 503
	mu      sync.Mutex
	body    string
	mod     time.Time
	fetches []*http.Request
	served  atomic.Int32 // 200 answers
}

func newEditableSite(body string) *editableSite {
	return &editableSite{body: body, mod: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (s *editableSite) set(body string) {
	s.mu.Lock()
	s.body, s.mod = body, s.mod.Add(time.Minute)
	s.mu.Unlock()
}

func (s *editableSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/robots.txt" {
		io.WriteString(w, "ok")
		return
	}
	s.mu.Lock()
	body, mod := s.body, s.mod
	s.fetches = append(s.fetches, r)
	s.mu.Unlock()
	if s.fail.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("ETag", `"`+mod.Format("150405")+`"`)
	rw := &statusSpy{ResponseWriter: w}
	http.ServeContent(rw, r, "robots.txt", mod, strings.NewReader(body))
	if rw.code == 200 {
		s.served.Add(1)
	}
}

func (s *editableSite) last() *http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches[len(s.fetches)-1]
}

type statusSpy struct {
	http.ResponseWriter
	code int
}

func (s *statusSpy) WriteHeader(c int) { s.code = c; s.ResponseWriter.WriteHeader(c) }
func (s *statusSpy) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = 200
	}
	return s.ResponseWriter.Write(b)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5s")
}
