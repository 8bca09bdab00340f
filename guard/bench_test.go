package guard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/sites"
)

// benchWriter is a reusable ResponseWriter, so that benchmarks measure the
// middleware and not the recorder.
type benchWriter struct {
	h    http.Header
	code int
}

func (w *benchWriter) Header() http.Header { return w.h }

func (w *benchWriter) WriteHeader(c int) { w.code = c }

func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })

func benchRequest(ua, target string) *http.Request {
	r := httptest.NewRequest("GET", "http://example.com"+target, nil)
	r.RequestURI = target
	r.Header.Set("User-Agent", ua)
	browserHeaders(r.Header)
	return r
}

func runBench(b *testing.B, h http.Handler, r *http.Request, want int) {
	w := &benchWriter{h: make(http.Header)}
	h.ServeHTTP(w, r) // warm the caches
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
	if w.code != want {
		b.Fatalf("status %d, want %d", w.code, want)
	}
}

// guarded wraps okHandler; robots.txt comes from the same bytes a site
// would serve, so the figures hold the middleware's cost alone.
func guarded(b *testing.B) http.Handler {
	return serve(mustNew(b, Config{}, WithSource(sites.BytesSource([]byte(robotsTxt)))), okHandler)
}

// BenchmarkBare is the handler alone, the baseline of the overhead figures.
func BenchmarkBare(b *testing.B) {
	runBench(b, okHandler, benchRequest(uaChrome, "/private/page?id=42"), 200)
}

func BenchmarkBrowser(b *testing.B) {
	runBench(b, guarded(b), benchRequest(uaChrome, "/private/page?id=42"), 200)
}

func BenchmarkBotAllowed(b *testing.B) {
	runBench(b, guarded(b), benchRequest(uaGPTBot, "/public/page?id=42"), 200)
}

func BenchmarkBotDenied(b *testing.B) {
	runBench(b, guarded(b), benchRequest(uaGPTBot, "/private/page?id=42"), 403)
}

func BenchmarkBotDeniedDecodedView(b *testing.B) {
	runBench(b, guarded(b), benchRequest(uaBing, "/x/../a/b"), 403)
}

func BenchmarkBotThrottled(b *testing.B) {
	runBench(b, guarded(b), benchRequest(uaBing, "/page"), 429)
}

// BenchmarkDecideBotCrawlDelay runs Decide for a bot with a Crawl-delay,
// allowed every time (the clock moves past the delay). Refresh is at its
// maximum so that the fake clock, 11 s a request, seldom makes a refresh
// due (which would be measured too).
func BenchmarkDecideBotCrawlDelay(b *testing.B) {
	clk := testclock.New()
	e := mustNew(b, Config{RobotsTxt: sites.Config{Refresh: duration.Duration(sites.MaxRefresh)}}, WithClock(clk.Now), WithSource(sites.BytesSource([]byte(robotsTxt))))
	req := Request{Host: "example.com", Target: "/page", UserAgent: uaBing, ClientIP: "192.0.2.1:1234"}
	ctx := context.Background()
	e.Decide(ctx, req)
	b.ReportAllocs()
	for b.Loop() {
		clk.Add(11 * time.Second)
		if v := e.Decide(ctx, req); v.Action != Allow {
			b.Fatal(v)
		}
	}
}
