package sites

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testclock"
)

// memHistory is a HistoryStore in memory.
type memHistory struct {
	mu     sync.Mutex
	m      map[string][]Version
	stores int
}

func (h *memHistory) LoadHistory(site string) ([]Version, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[site]
	return v, ok
}

func (h *memHistory) StoreHistory(site string, v []Version) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m[site] = v
	h.stores++
}

// TestHistory: each new robots.txt of a site is a version, a copy seen
// again (or a 304) moves its LastSeen; a named site's history is kept in
// the store and read back by a new Cache; the count is bounded.
func TestHistory(t *testing.T) {
	clk := testclock.New()
	var mu sync.Mutex
	body := "User-agent: *\nDisallow: /a/\n"
	site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if body == "" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body)
	})
	store := &memHistory{m: map[string][]Version{}}
	setup := testConfig(SelfSource())
	setup.SiteNames, setup.Now, setup.History = []string{"example.com"}, clk.Now, store
	c := newCache(setup)
	fetch := func(b string) {
		mu.Lock()
		body = b
		mu.Unlock()
		clk.Add(time.Hour)
		c.Fetch(context.Background(), []*Site{c.Entry(MakeKey("http", "example.com", 0))}, func(string) http.Handler { return site })
	}
	get(c, "example.com", site)
	fetch("User-agent: *\nDisallow: /a/\n") // the same again
	fetch("User-agent: *\nDisallow: /b/\n")
	fetch("") // gone: 404
	h := c.Entry(MakeKey("http", "example.com", 0)).History()
	if len(h) != 3 || h[0].Text != "User-agent: *\nDisallow: /a/\n" || !h[0].LastSeen.Equal(h[0].FirstSeen.Add(time.Hour)) ||
		h[1].Text != "User-agent: *\nDisallow: /b/\n" || h[2].Outcome != "unavailable" || h[2].SHA256 != "" || h[2].Status != 404 {
		t.Fatalf("history: %+v", h)
	}
	testclock.WaitFor(t, func() bool { v, _ := store.LoadHistory("http://example.com"); return len(v) == 3 }) // written in the background
	// A new Cache (a restart) goes on from the stored history.
	c = newCache(setup)
	fetch("User-agent: *\nDisallow: /c/\n")
	if h = c.Entry(MakeKey("http", "example.com", 0)).History(); len(h) != 4 || h[3].Text != "User-agent: *\nDisallow: /c/\n" {
		t.Errorf("after a restart: %+v", h)
	}
	for i := range maxVersions + 5 {
		fetch(fmt.Sprintf("User-agent: *\nDisallow: /%d/\n", i))
	}
	if h = c.Entry(MakeKey("http", "example.com", 0)).History(); len(h) != maxVersions || h[maxVersions-1].Text != fmt.Sprintf("User-agent: *\nDisallow: /%d/\n", maxVersions+4) {
		t.Errorf("bounded: %d versions, last %+v", len(h), h[len(h)-1])
	}
	// An unnamed site's history is kept in memory only, without texts.
	get(c, "other.example", site)
	h = c.Entry(MakeKey("http", "other.example", 0)).History()
	if _, ok := store.LoadHistory("http://other.example"); ok || len(h) != 1 || h[0].Text != "" || h[0].SHA256 == "" {
		t.Errorf("unnamed site: %+v", h)
	}
}
