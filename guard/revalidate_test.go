package guard

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/internal/testorigin"
	"github.com/robotsguard/robotsguard/sites"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestInvalidate: after Invalidate (what a Caddy reload does), the next bot
// request is decided with a fresh fetch, not with the old copy.
func TestInvalidate(t *testing.T) {
	s := testorigin.NewEditable("User-agent: *\nDisallow: /a\n")
	e := mustNew(t, Config{RobotsTxt: sites.Config{Refresh: duration.Duration(time.Hour)}})
	h := serve(e, s)
	if rec := do(h, uaAhrefs, "/a"); rec.Code != 403 {
		t.Fatalf("first: %d", rec.Code)
	}
	s.Set("User-agent: *\nDisallow: /b\n")
	if rec := do(h, uaAhrefs, "/b"); rec.Code != 200 {
		t.Fatalf("before Invalidate the copy is an hour old: %d", rec.Code)
	}
	if n := e.Invalidate(""); n != 1 {
		t.Fatalf("Invalidate marked %d sites", n)
	}
	if rec := do(h, uaAhrefs, "/b"); rec.Code != 403 {
		t.Fatalf("first bot request after Invalidate: %d, want 403 from the new copy", rec.Code)
	}
	// One site by name.
	s.Set("User-agent: *\nDisallow: /c\n")
	if n := e.Invalidate("example.org"); n != 0 {
		t.Fatalf("Invalidate(other site) marked %d", n)
	}
	if n := e.Invalidate("http://EXAMPLE.com"); n != 1 {
		t.Fatalf("Invalidate(site) marked %d", n)
	}
	if rec := do(h, uaAhrefs, "/c"); rec.Code != 403 {
		t.Fatalf("after Invalidate(site): %d", rec.Code)
	}
	// A failed revalidation keeps the copy.
	s.Set("User-agent: *\nDisallow: /a\n")
	e.Invalidate("")
	do(h, uaAhrefs, "/")
	s.Fail.Store(true)
	e.Invalidate("")
	if rec := do(h, uaAhrefs, "/a"); rec.Code != 403 {
		t.Fatalf("failed revalidation: %d", rec.Code)
	}
	if rec := do(h, uaAhrefs, "/x"); rec.Code != 200 {
		t.Fatalf("failed revalidation dropped the copy: %d", rec.Code)
	}
}

func TestRefreshAndSites(t *testing.T) {
	s := testorigin.NewEditable("User-agent: *\nDisallow: /a\n")
	e := mustNew(t, Config{RobotsTxt: sites.Config{Refresh: duration.Duration(time.Hour)}})
	h := serve(e, s)
	do(h, uaAhrefs, "/")
	s.Set("User-agent: *\nDisallow: /b\n")
	st := e.Refresh(context.Background(), "", nil)
	if len(st) != 1 || st[0].Site != "http://example.com" || st[0].Outcome != "ok" || !st[0].Rules || st[0].Error != "" || st[0].Status != 200 {
		t.Fatalf("Refresh = %+v", st)
	}
	if s.Served.Load() != 2 {
		t.Fatalf("Refresh did not fetch: %d answers", s.Served.Load())
	}
	if rec := do(h, uaAhrefs, "/b"); rec.Code != 403 {
		t.Fatalf("after Refresh: %d", rec.Code)
	}
	// The origin function wins over the remembered handler.
	other := testorigin.NewEditable("User-agent: *\nDisallow: /z\n")
	e.Refresh(context.Background(), "example.com", func(string) http.Handler { return other })
	if rec := do(h, uaAhrefs, "/z"); rec.Code != 403 {
		t.Fatalf("Refresh with an origin: %d", rec.Code)
	}
	sites := e.Sites()
	if len(sites) != 1 || sites[0].Outcome != "ok" || sites[0].Fetched.IsZero() {
		t.Fatalf("Sites = %+v", sites)
	}
}

func TestExplain(t *testing.T) {
	clk := testclock.New()
	e := mustNew(t, Config{}, WithClock(clk.Now))
	origin := site(robotsTxt)
	x, err := e.Explain(context.Background(), Request{Host: "example.com", Target: "/a/b/c", UserAgent: uaBing, Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	if x.Action != "deny" || x.Reason != "disallowed" || x.Status != 403 || x.Group != "bingbot" || x.Rule == nil ||
		x.Rule.Text != "Disallow: /a/b" || x.CrawlDelay != duration.Duration(10*time.Second) || x.RobotsTxt == nil || x.RobotsTxt.Outcome != "ok" {
		t.Fatalf("Explain = %+v", x)
	}
	// Explain spends no budget: a bot explained twice is still admitted.
	for range 2 {
		x, _ = e.Explain(context.Background(), Request{Host: "example.com", Target: "/page", UserAgent: uaBing, ClientIP: "192.0.2.1"})
		if x.Action != "allow" || x.Status != 0 {
			t.Fatalf("Explain before any request = %+v", x)
		}
	}
	spend(t, serve(e, origin), uaBing, "/page", "192.0.2.1:1234")
	x, _ = e.Explain(context.Background(), Request{Host: "example.com", Target: "/page", UserAgent: uaBing, ClientIP: "192.0.2.1"})
	// Three requests at once under Crawl-delay 10s: 30s - 25s tolerance.
	if x.Action != "throttle" || x.Status != 429 || x.RetryAfter != duration.Duration(5*time.Second) {
		t.Fatalf("Explain after a request = %+v", x)
	}
	// Without an address the Crawl-delay is shown, not checked.
	x, _ = e.Explain(context.Background(), Request{Host: "example.com", Target: "/page", UserAgent: uaBing})
	if x.Action != "allow" || x.CrawlDelay != duration.Duration(10*time.Second) {
		t.Fatalf("Explain without an address = %+v", x)
	}
	x, _ = e.Explain(context.Background(), Request{Host: "example.com", Target: "/x", UserAgent: uaChrome})
	if x.Bot || x.Action != "allow" || x.Reason != "not_bot" {
		t.Fatalf("Explain browser = %+v", x)
	}
	if _, err := e.Explain(context.Background(), Request{UserAgent: uaBing}); err != errNoSite {
		t.Fatalf("Explain without a host: %v", err)
	}
}

// TestNoRulesLogged: every state in which a site has no rules for bots is
// logged once per site and per change, at Info, or Warn for an HTML page,
// an unreachable file and a robots.txt answered 4xx (which RFC 9309 reads
// as none, so the guard enforces nothing); the copy is still parsed.
func TestNoRulesLogged(t *testing.T) {
	clk := testclock.New()
	obs := &countObserver{}
	core, logs := observer.New(zapcore.DebugLevel)
	var mu sync.Mutex
	answer := func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
	set := func(f http.HandlerFunc) { mu.Lock(); answer = f; mu.Unlock() }
	h := serve(mustNew(t, Config{RobotsTxt: sites.Config{Refresh: duration.Duration(time.Minute)}}, WithClock(clk.Now), WithObserver(obs), WithLogger(zap.New(core))),
		testorigin.Status(func(w http.ResponseWriter, r *http.Request) { mu.Lock(); f := answer; mu.Unlock(); f(w, r) }))
	step := func(n int) {
		for range n {
			clk.Add(2 * time.Minute)
			before := obs.get("fetch/ok") + obs.get("fetch/html") + obs.get("fetch/unavailable") + obs.get("fetch/unreachable")
			testclock.WaitDoing(t, func() { do(h, uaChrome, "/") }, func() bool {
				return obs.get("fetch/ok")+obs.get("fetch/html")+obs.get("fetch/unavailable")+obs.get("fetch/unreachable") > before
			})
		}
	}
	count := func(msg string) int { return logs.FilterMessageSnippet(msg).Len() }
	do(h, uaAhrefs, "/")
	step(2)
	if n := count("no robots.txt"); n != 1 {
		t.Fatalf("404 logged %d times over 3 fetches, want 1", n)
	}
	set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>App</title>")
	})
	step(3)
	if l := logs.FilterMessageSnippet("HTML page").All(); len(l) != 1 || l[0].Level != zapcore.WarnLevel {
		t.Fatalf("HTML page logged %v", l)
	}
	if n := obs.get("fetch/html"); n != 3 {
		t.Fatalf("fetch/html counted %d times, want 3", n)
	}
	set(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# nothing here\nUser-agent: *\nDisallow:\n")
	})
	step(2)
	if n := count("has no Disallow and no Crawl-delay"); n != 1 {
		t.Fatalf("ruleless file logged %d times, want 1", n)
	}
	set(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "User-agent: *\nDisallow: /x\n") })
	step(2)
	if l := logs.FilterMessage("robots_guard: robots.txt rules in force").All(); len(l) != 1 || l[0].Level != zapcore.InfoLevel {
		t.Fatalf("rules in force logged %v", l)
	}
	// An HTML page is still parsed as RFC 9309 says: a rule on a line of
	// its own applies.
	set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>\nUser-agent: *\nDisallow: /y\n</html>")
	})
	step(1)
	if rec := do(h, uaAhrefs, "/y"); rec.Code != 403 {
		t.Fatalf("rule inside an HTML page: %d", rec.Code)
	}
	if n := count("HTML page"); n != 2 {
		t.Fatalf("HTML page logged %d times after a change, want 2", n)
	}
	// A robots.txt behind authentication by mistake: RFC 9309 reads a
	// 403 as no robots.txt, and the guard enforces nothing; one WARN
	// says so, and names the likely mistake.
	set(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) })
	step(3)
	if l := logs.FilterMessageSnippet("answered 403").All(); len(l) != 1 || l[0].Level != zapcore.WarnLevel ||
		!strings.Contains(l[0].Message, "authentication") || !strings.Contains(l[0].Message, "enforces nothing") {
		t.Fatalf("a robots.txt answered 403 logged %v", l)
	}
	if rec := do(h, uaAhrefs, "/y"); rec.Code != 200 {
		t.Fatalf("403 is no robots.txt (RFC 9309 §2.3.1.3): %d", rec.Code)
	}
}

// TestOutagesLoggedEachTime: an outage, a recovery answered 304, and a
// second outage: both outages are logged (the 304 brings the state back).
func TestOutagesLoggedEachTime(t *testing.T) {
	clk := testclock.New()
	obs := &countObserver{}
	core, logs := observer.New(zapcore.InfoLevel)
	s := testorigin.NewEditable("User-agent: *\nDisallow: /a\n")
	h := serve(mustNew(t, Config{RobotsTxt: sites.Config{Refresh: duration.Duration(time.Minute)}}, WithClock(clk.Now), WithObserver(obs), WithLogger(zap.New(core))), s)
	do(h, uaAhrefs, "/")
	refresh := func(key string, n int) {
		t.Helper()
		clk.Add(2 * time.Minute)
		testclock.WaitDoing(t, func() { do(h, uaChrome, "/") }, func() bool { return obs.get(key) == n })
	}
	s.Fail.Store(true)
	refresh("fetch/unreachable", 1)
	s.Fail.Store(false)
	refresh("fetch/not_modified", 1)
	s.Fail.Store(true)
	refresh("fetch/unreachable", 2)
	if n := logs.FilterMessage("robots_guard: robots.txt unreachable").Len(); n != 2 {
		t.Fatalf("two outages logged %d times", n)
	}
}

// TestRevalidationPendingBrowsersDoNotAllocate: while a revalidation hangs,
// browsers go on with the copy without starting (or joining) a fetch each.
func TestRevalidationPendingBrowsersDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	s := testorigin.NewEditable("User-agent: *\nDisallow: /a\n")
	e := mustNew(t, Config{RobotsTxt: sites.Config{Refresh: duration.Duration(time.Hour)}})
	req := Request{Host: "example.com", Target: "/a", UserAgent: uaChrome, ClientIP: "192.0.2.1", Origin: s}
	ctx := context.Background()
	e.Decide(ctx, req)
	release := make(chan struct{})
	s.Block(release)
	defer close(release)
	e.Invalidate("")
	e.Decide(ctx, req) // starts the revalidation, which hangs
	if n := testing.AllocsPerRun(200, func() { e.Decide(ctx, req) }); n != 0 {
		t.Fatalf("a browser request allocates %v times while a revalidation is pending", n)
	}
}

// TestRevalidate fetches the copies marked by Invalidate that no request
// has renewed since, and only those.
func TestRevalidate(t *testing.T) {
	a, b := testorigin.NewEditable("User-agent: *\nDisallow: /a\n"), testorigin.NewEditable("User-agent: *\nDisallow: /b\n")
	e := mustNew(t, Config{RobotsTxt: sites.Config{Refresh: duration.Duration(time.Hour)}})
	ctx := context.Background()
	e.Decide(ctx, Request{Host: "a.example", Target: "/", UserAgent: uaAhrefs, Origin: a}) // bots wait for the first fetch
	e.Decide(ctx, Request{Host: "b.example", Target: "/", UserAgent: uaAhrefs, Origin: b})
	e.Invalidate("")
	e.Decide(ctx, Request{Host: "a.example", Target: "/", UserAgent: uaAhrefs, Origin: a}) // renews a
	st := e.Revalidate(ctx, nil)
	if len(st) != 1 || st[0].Site != "http://b.example" || st[0].Error != "" {
		t.Fatalf("Revalidate = %+v, want b.example alone", st)
	}
	if a.Count() != 2 || b.Count() != 2 {
		t.Fatalf("fetches: a %d, b %d; want 2 each", a.Count(), b.Count())
	}
	if st := e.Revalidate(ctx, nil); len(st) != 0 {
		t.Fatalf("second Revalidate fetched %+v", st)
	}
}

// TestBrowsersNeverWait: while a site's first robots.txt fetch hangs,
// browsers pass at once; unknown clients and bots wait (at most the fetch
// timeout).
func TestBrowsersNeverWait(t *testing.T) {
	s := testorigin.NewEditable("User-agent: FooAgent\nDisallow: /\n")
	release := make(chan struct{})
	s.Block(release)
	defer close(release)
	e := mustNew(t, Config{RobotsTxt: sites.Config{FetchTimeout: duration.Duration(time.Second)}})
	start := time.Now()
	v := e.Decide(context.Background(), Request{Host: "example.com", Target: "/x", UserAgent: uaChrome, Origin: s})
	if d := time.Since(start); d > 500*time.Millisecond || v.Action != Allow {
		t.Fatalf("a browser waited %v for a hanging fetch (verdict %v)", d, v.Action)
	}
	start = time.Now()
	e.Decide(context.Background(), Request{Host: "example.com", Target: "/x", UserAgent: uaFooBot, Origin: s})
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("an unknown client did not wait for the first fetch (%v)", d)
	}
}
