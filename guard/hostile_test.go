package guard

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
	"time"
	"weak"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/internal/testorigin"
	"github.com/robotsguard/robotsguard/sites"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestLogQuery: denial lines show the path, and the query only with
// log_query.
func TestLogQuery(t *testing.T) {
	for _, logQuery := range []bool{false, true} {
		core, logs := observer.New(zapcore.InfoLevel)
		h := serve(mustNew(t, Config{LogQuery: logQuery}, WithLogger(zap.New(core))), site(robotsTxt))
		do(h, uaGPTBot, "/x?token=secret&email=a@b.example")
		l := logs.FilterMessage("robots_guard: denied").All()
		if len(l) != 1 {
			t.Fatalf("log_query %v: %d lines", logQuery, len(l))
		}
		got, want := l[0].ContextMap()["target"], "/x?…"
		if logQuery {
			want = "/x?token=secret&email=a@b.example"
		}
		if got != want {
			t.Errorf("log_query %v: target %q, want %q", logQuery, got, want)
		}
	}
}

// TestLogFloodSampled: a flood of new sites without robots.txt writes at
// most the sampler's first lines per second, not one per site.
func TestLogFloodSampled(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	e := mustNew(t, Config{RobotsTxt: sites.Config{NewSitesPerSecond: 1 << 20}}, WithLogger(zap.New(core)))
	origin := testorigin.Status(http.NotFound)
	start := time.Now()
	for i := range 2000 {
		e.Decide(context.Background(), Request{Host: fmt.Sprintf("h%d.example", i), Target: "/", UserAgent: uaAhrefs, Origin: origin})
	}
	secs := int(time.Since(start)/logSampleTick) + 1 // the sampler starts over every tick
	n := logs.FilterMessageSnippet("no robots.txt").Len()
	if n > secs*logSampleFirst+2000/logSampleThereafter+1 {
		t.Fatalf("%d lines for 2,000 new sites in %d s", n, secs)
	}
	t.Logf("2,000 new sites without robots.txt: %d log lines", n)
}

// TestHugeUserAgent: a header longer than maxUserAgent is a bot's, and its
// group is chosen from the first maxUserAgent bytes.
func TestHugeUserAgent(t *testing.T) {
	h := serve(mustNew(t, Config{}), site(robotsTxt))
	huge := uaChrome + strings.Repeat(" x", 10000)
	if rec := do(h, huge, "/private/a"); rec.Code != 403 {
		t.Fatalf("20 KB browser-like header: %d, want 403 (a bot under *)", rec.Code)
	}
	if rec := do(h, uaChrome, "/private/a"); rec.Code != 200 {
		t.Fatalf("browser: %d", rec.Code)
	}
}

// BenchmarkHugeUserAgent: the work for a 20 KB and a 1 MB header is that
// of a 1 KiB one.
func BenchmarkHugeUserAgent(b *testing.B) {
	e := mustNew(b, Config{}, WithSource(sites.BytesSource([]byte(robotsTxt))))
	for _, n := range []int{20 << 10, 1 << 20} {
		ua := uaChrome + strings.Repeat("x", n)
		req := Request{Host: "example.com", Target: "/page", UserAgent: ua, ClientIP: "192.0.2.1"}
		b.Run(fmt.Sprintf("%dKB", n>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.Decide(context.Background(), req)
			}
		})
	}
}

// TestNewSiteRate: first fetches of new sites are bounded; a bot's request
// for a site over the bound gets 429 with Retry-After 1 and no fetch, and
// is served by rules once tokens come back.
func TestNewSiteRate(t *testing.T) {
	clk := testclock.New()
	var fetches atomic.Int32
	obs := &countObserver{}
	origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		io.WriteString(w, "User-agent: *\nDisallow: /private/\n")
	})
	e := mustNew(t, Config{RobotsTxt: sites.Config{NewSitesPerSecond: 10}}, WithClock(clk.Now), WithObserver(obs))
	ctx := context.Background()
	var throttled, browsersStopped int
	for i := range 100 {
		v := e.Decide(ctx, Request{Host: fmt.Sprintf("n%d.example", i), Target: "/x", UserAgent: uaAhrefs, Origin: origin})
		if v.Action == Throttle && v.Reason == ReasonNewSiteRate && v.RetryAfterSeconds() == 1 {
			throttled++
		}
		if b := e.Decide(ctx, Request{Host: fmt.Sprintf("b%d.example", i), Target: "/x", UserAgent: uaChrome, Origin: origin}); b.Action != Allow {
			browsersStopped++
		}
	}
	if n := fetches.Load(); n > 40 {
		t.Fatalf("%d fetches for 200 new sites at one instant, want at most the burst of 40", n)
	}
	if throttled < 60 || browsersStopped != 0 {
		t.Fatalf("%d bots throttled (want the ones over the burst), %d browsers stopped", throttled, browsersStopped)
	}
	if obs.get("fetch/postponed") == 0 {
		t.Fatal("postponed first fetches are not counted")
	}
	clk.Add(time.Second) // 10 tokens come back
	if v := e.Decide(ctx, Request{Host: "n99.example", Target: "/private/x", UserAgent: uaAhrefs, Origin: origin}); v.Action != Deny {
		t.Fatalf("a postponed site after the wait: %v %v, want its rules", v.Action, v.Reason)
	}
}

// TestMillionHosts: 1,000,000 distinct Host names with the default
// configuration. First fetches are bounded (new_sites_per_second), the
// cache by max_sites and max_robots_bytes: the heap stays small.
func TestMillionHosts(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("floods 1,000,000 Hosts; heap figures under the race detector mean little")
	}
	body, err := os.ReadFile("../testdata/robots/facebook.txt")
	if err != nil {
		t.Fatal(err)
	}
	var fetches atomic.Int32
	origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) { fetches.Add(1); w.Write(body) })
	e := mustNew(t, Config{})
	ctx := context.Background()
	before := heapAlloc()
	start := time.Now()
	for i := range 1000000 {
		e.Decide(ctx, Request{Host: fmt.Sprintf("h%d.example", i), Target: "/", UserAgent: uaAhrefs, Origin: origin})
	}
	took := time.Since(start)
	grew := float64(int64(heapAlloc())-int64(before)) / (1 << 20)
	t.Logf("1,000,000 distinct Hosts in %v: %d upstream fetches, heap %+.1f MB, %d sites cached", took.Round(time.Millisecond), fetches.Load(), grew, e.sites.Len())
	if grew > 50 {
		t.Errorf("heap grew %.1f MB", grew)
	}
	if n := fetches.Load(); float64(n) > 4*sites.DefaultNewSitesPerSecond+took.Seconds()*sites.DefaultNewSitesPerSecond+1 {
		t.Errorf("%d upstream fetches in %v", n, took)
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

// TestUACacheDoesNotPinReplacedFiles: headers cached with their group
// choice do not keep a replaced robots.txt alive.
func TestUACacheDoesNotPinReplacedFiles(t *testing.T) {
	s := testorigin.NewEditable("User-agent: *\nDisallow: /a\n")
	e := mustNew(t, Config{RobotsTxt: sites.Config{Refresh: duration.Duration(time.Hour)}})
	ctx := context.Background()
	for i := range 100 {
		e.Decide(ctx, Request{Host: "example.com", Target: "/", UserAgent: fmt.Sprintf("Bot%d/1.0 (+https://example.com/bot)", i), Origin: s})
	}
	old := weak.Make(e.sites.Entry(sites.MakeKey("http", "example.com", 0)).State().Robots)
	s.Set("User-agent: *\nDisallow: /b\n")
	e.Invalidate("")
	e.Decide(ctx, Request{Host: "example.com", Target: "/", UserAgent: uaAhrefs, Origin: s})
	runtime.GC()
	runtime.GC()
	if old.Value() != nil {
		t.Fatal("the replaced robots.txt is still reachable (pinned by the User-Agent cache?)")
	}
	runtime.KeepAlive(e) // the cache must be alive for the check to mean anything
}

// A Host header longer than any DNS name makes no site, cache entry or
// store key: a bot gets 403 bad_target, a browser passes; a log line
// carries at most 256 bytes of a User-Agent, and its length.
func TestLongHostAndUserAgent(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	e := mustNew(t, Config{}, WithSource(sites.BytesSource([]byte("User-agent: *\nDisallow: /private/\n"))), WithLogger(zap.New(core)))
	long := strings.Repeat("a", 250) + ".example"
	for _, c := range []struct {
		ua     string
		action Action
	}{{uaAhrefs, Deny}, {uaChrome, Allow}} {
		v := e.Decide(context.Background(), Request{Host: long, Target: "/private/x", UserAgent: c.ua})
		if v.Action != c.action || (c.action == Deny && v.Reason != ReasonBadTarget) || v.Site != "" {
			t.Errorf("%s with a %d-byte Host: %v %v site %q", c.ua, len(long), v.Action, v.Reason, v.Site)
		}
	}
	if n := e.sites.Len(); n != 0 {
		t.Fatalf("%d sites cached for an over-long Host", n)
	}
	if v := e.Decide(context.Background(), Request{Host: strings.Repeat("b", 253) + ":8080", Target: "/private/x", UserAgent: uaAhrefs}); v.Reason != ReasonDisallowed {
		t.Fatalf("a 253-byte host name: %v", v.Reason)
	}
	ua := "HugeBot/1.0 " + strings.Repeat("x", 20000)
	target := "/private/" + strings.Repeat("p", 16000)
	e.Decide(context.Background(), Request{Host: "example.com", Target: target, UserAgent: ua})
	l := logs.FilterMessage("robots_guard: denied").All()
	if len(l) == 0 {
		t.Fatal("no denial line")
	}
	m := l[len(l)-1].ContextMap()
	if got := m["user_agent"].(string); len(got) != 256 || m["user_agent_bytes"] != int64(len(ua)) {
		t.Fatalf("logged %d bytes of the User-Agent, length field %v", len(got), m["user_agent_bytes"])
	}
	if got := m["target"].(string); len(got) > maxLoggedTarget+len("…") || m["target_bytes"] != int64(len(target)) {
		t.Fatalf("logged %d bytes of the target, length field %v", len(got), m["target_bytes"])
	}
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	buf, err := enc.EncodeEntry(l[len(l)-1].Entry, l[len(l)-1].Context)
	if err != nil || buf.Len() > 2048 {
		t.Fatalf("a line for a 20 KB User-Agent and a 16 KB target is %d bytes (%v), want at most 2 KB", buf.Len(), err)
	}
	t.Logf("the line for a 20 KB User-Agent and a 16 KB target: %d bytes", buf.Len())
}
