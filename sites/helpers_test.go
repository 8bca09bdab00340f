package sites

import (
	"context"
	"io"
	"net/http"
	"sync"

	"github.com/robotsguard/robotsguard/internal/testorigin"
)

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

// testSetup is a Cache's configuration and dependencies, which a test
// edits before newCache.
type testSetup struct {
	Config
	Deps
}

// testConfig is the engine's default configuration of a Cache, with src.
func testConfig(src Source) testSetup {
	cfg, err := Config{}.WithDefaults()
	if err != nil {
		panic(err)
	}
	return testSetup{cfg, Deps{Source: src}}
}

// newCache is New with a test's setup.
func newCache(s testSetup) *Cache { return New(s.Config, s.Deps) }

// bodySite serves body at /robots.txt.
func bodySite(body string) http.Handler {
	return testorigin.Status(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })
}

// get returns the copy of host (http, port unknown) as a bot's request
// gets it: waiting for a fetch when one is needed.
func get(c *Cache, host string, origin http.Handler) *State {
	_, st := c.Get(context.Background(), MakeKey("http", host, 0), host, 0, origin, true, "")
	return st
}

// denies reports whether st's rules deny path to a bot no group names.
func denies(st *State, path string) bool {
	d := st.Robots.Agent("AhrefsBot").Decide(path)
	return !d.Allowed && !d.Exempt
}
