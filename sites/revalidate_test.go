package sites

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/internal/testorigin"
	"github.com/robotsguard/robotsguard/policy"
)

// revalidating is a Cache with a one-minute refresh on clk, counting
// outcomes in obs.
func revalidating(src Source, clk *testclock.Clock, obs *countObserver) *Cache {
	cfg := testConfig(src)
	cfg.Now, cfg.Observer = clk.Now, obs
	return newCache(cfg)
}

// TestRevalidateConditional: a due refresh sends the copy's ETag and
// Last-Modified; 304 keeps the copy without a parse; a changed file is
// picked up at the next refresh.
func TestRevalidateConditional(t *testing.T) {
	clk := testclock.New()
	obs := &countObserver{}
	s := testorigin.NewEditable("User-agent: *\nDisallow: /a\n")
	c := revalidating(SelfSource(), clk, obs)
	if st := get(c, "example.com", s); !denies(st, "/a") {
		t.Fatalf("first: %s", st.Outcome)
	}
	if r := s.Last(); r.RequestURI != "/robots.txt" || r.RemoteAddr != SelfFetchAddr || r.Header.Get("If-None-Match") != "" {
		t.Fatalf("first self-fetch: RequestURI %q RemoteAddr %q If-None-Match %q", r.RequestURI, r.RemoteAddr, r.Header.Get("If-None-Match"))
	}
	browser := func() { c.Get(context.Background(), MakeKey("http", "example.com", 0), "example.com", 0, s, false, "") }
	for i := range 3 {
		clk.Add(61 * time.Second)
		testclock.WaitDoing(t, browser, func() bool { return obs.get("not_modified") == i+1 }) // starts the refresh in the background
	}
	if r := s.Last(); r.Header.Get("If-None-Match") == "" || r.Header.Get("If-Modified-Since") == "" {
		t.Fatalf("revalidation without validators: %v", r.Header)
	}
	if s.Served.Load() != 1 {
		t.Fatalf("%d full answers, want 1", s.Served.Load())
	}
	s.Set("User-agent: *\nDisallow: /b\n")
	clk.Add(61 * time.Second)
	testclock.WaitDoing(t, browser, func() bool { return obs.get("ok") == 2 })
	if st := get(c, "example.com", s); !denies(st, "/b") || denies(st, "/a") {
		t.Fatal("the edit is not in force")
	}
}

// TestRevalidateURLSource: the URL source sends validators too.
func TestRevalidateURLSource(t *testing.T) {
	clk := testclock.New()
	obs := &countObserver{}
	s := testorigin.NewEditable("User-agent: *\nDisallow: /a\n")
	srv := httptest.NewServer(s)
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/robots.txt")
	client := NewHTTPClient(nil, 5*time.Second)
	defer client.CloseIdleConnections()
	c := revalidating(URLSource(u, client), clk, obs)
	get(c, "example.com", nil)
	clk.Add(2 * time.Minute)
	testclock.WaitDoing(t, func() {
		c.Get(context.Background(), MakeKey("http", "example.com", 0), "example.com", 0, nil, false, "")
	},
		func() bool { return obs.get("not_modified") == 1 })
	if s.Served.Load() != 1 {
		t.Fatalf("%d full answers, want 1", s.Served.Load())
	}
}

// TestRevalidateFileSource: a file is read again only when its size or
// modification time changed; a file that disappears keeps the last copy.
func TestRevalidateFileSource(t *testing.T) {
	clk := testclock.New()
	obs := &countObserver{}
	file := filepath.Join(t.TempDir(), "robots.txt")
	os.WriteFile(file, []byte("User-agent: *\nDisallow: /a\n"), 0o644)
	c := revalidating(FileSource(file), clk, obs)
	if !denies(get(c, "example.com", nil), "/a") {
		t.Fatal("first: /a allowed")
	}
	later := func(cond func() bool) {
		clk.Add(2 * time.Minute)
		testclock.WaitDoing(t, func() {
			c.Get(context.Background(), MakeKey("http", "example.com", 0), "example.com", 0, nil, false, "")
		}, cond)
	}
	later(func() bool { return obs.get("not_modified") == 1 })
	os.WriteFile(file, []byte("User-agent: *\nDisallow: /bb\n"), 0o644)
	os.Chtimes(file, time.Now(), time.Now().Add(time.Second))
	later(func() bool { return obs.get("ok") == 2 })
	if !denies(get(c, "example.com", nil), "/bb") {
		t.Fatal("after the edit: /bb allowed")
	}
	// The file disappears: the last good copy stays.
	os.Remove(file)
	later(func() bool { return obs.get("unreachable") == 1 })
	if st := get(c, "example.com", nil); !denies(st, "/bb") || st.Unreachable {
		t.Fatal("file removed: the last copy is not in force")
	}
}

// TestInvalidateWaits: after Invalidate, the next waiting Get returns a
// fresh copy; a failed revalidation keeps the old one.
func TestInvalidateWaits(t *testing.T) {
	s := testorigin.NewEditable("User-agent: *\nDisallow: /a\n")
	cfg := testConfig(SelfSource())
	cfg.Refresh = duration.Duration(time.Hour)
	c := newCache(cfg)
	get(c, "example.com", s)
	s.Set("User-agent: *\nDisallow: /b\n")
	if denies(get(c, "example.com", s), "/b") {
		t.Fatal("the copy is an hour old: /b denied before Invalidate")
	}
	if n := len(c.Invalidate(nil)); n != 1 {
		t.Fatalf("Invalidate marked %d sites", n)
	}
	if !c.Stale(c.Entry(MakeKey("http", "example.com", 0))) {
		t.Fatal("the marked site is not stale")
	}
	if !denies(get(c, "example.com", s), "/b") {
		t.Fatal("first waiting Get after Invalidate: /b allowed, want the new copy")
	}
	s.Fail.Store(true)
	c.Invalidate(nil)
	if st := get(c, "example.com", s); !denies(st, "/b") || st.Unreachable {
		t.Fatal("failed revalidation dropped the copy")
	}
}

// TestTimedRefreshSurvivesRevalidations: revalidations and timed refreshes
// racing from many goroutines never leave the refresh switched off.
func TestTimedRefreshSurvivesRevalidations(t *testing.T) {
	s := testorigin.NewEditable("User-agent: *\nDisallow: /a\n")
	clk := testclock.New()
	obs := &countObserver{}
	c := revalidating(SelfSource(), clk, obs)
	k := MakeKey("http", "example.com", 0)
	get(c, "example.com", s)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				switch {
				case g == 0 && i%10 == 0:
					c.Invalidate(nil)
				case g == 1 && i%7 == 0:
					clk.Add(61 * time.Second)
				}
				c.Get(context.Background(), k, "example.com", 0, s, i%2 == 0, "")
			}
		})
	}
	wg.Wait()
	ent := c.Entry(k)
	testclock.WaitFor(t, func() bool { return !ent.refreshing.Load() })
	before := obs.get("not_modified")
	clk.Add(2 * time.Minute)
	c.Get(context.Background(), k, "example.com", 0, s, false, "")
	testclock.WaitFor(t, func() bool { return obs.get("not_modified") > before })
}

// TestAdopt: a new cache starts from another's good copies, marked for
// revalidation, and carry moves what was attached.
func TestAdopt(t *testing.T) {
	s := testorigin.NewEditable("User-agent: *\nDisallow: /a\n")
	old := newCache(testConfig(SelfSource()))
	get(old, "example.com", s)
	old.Entry(MakeKey("http", "example.com", 0)).Attach("clocks")
	get(old, "down.example", testorigin.Status(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	var rules int
	cfg := testConfig(SelfSource())
	cfg.OnRules = func(*Site, *policy.Robots) { rules++ }
	c := newCache(cfg)
	n := c.Adopt(old, func(from, to *Site) bool { to.Attach(from.Attached()); return true })
	ent := c.Entry(MakeKey("http", "example.com", 0))
	if n != 1 || ent.State() == nil || !denies(ent.State(), "/a") || ent.Attached() != "clocks" || !c.Stale(ent) {
		t.Fatalf("adopted %d; state %+v, attached %v, stale %v", n, ent.State(), ent.Attached(), c.Stale(ent))
	}
	if c.Entry(MakeKey("http", "down.example", 0)).State() != nil {
		t.Fatal("an unreachable site's copy was adopted")
	}
	get(c, "example.com", s) // revalidated: 304, the same copy
	if rules != 0 {
		t.Fatalf("OnRules ran %d times for a copy whose state was carried", rules)
	}
}

// BenchmarkRevalidate measures a refresh of a real robots.txt through the
// self-fetch (the origin answers conditional requests, as Caddy's
// file_server does): "changed" fetches and parses the file, "not_modified"
// gets 304 and keeps the copy.
func BenchmarkRevalidate(b *testing.B) {
	for _, name := range []string{"github.txt", "wikimedia-config.txt", "linkedin.txt"} {
		body, err := os.ReadFile("../testdata/robots/" + name)
		if err != nil {
			b.Fatal(err)
		}
		for _, changed := range []bool{true, false} {
			label := name + "/not_modified"
			if changed {
				label = name + "/changed"
			}
			b.Run(label, func(b *testing.B) {
				s := testorigin.NewEditable(string(body))
				c := newCache(testConfig(SelfSource()))
				ent := c.Entry(MakeKey("http", "example.com", 0))
				c.fetch(ent, s)
				b.ReportAllocs()
				for b.Loop() {
					if changed {
						st := *ent.state.Load()
						st.ETag, st.LastModified = "", ""
						ent.state.Store(&st)
					}
					c.fetch(ent, s)
				}
			})
		}
	}
}
