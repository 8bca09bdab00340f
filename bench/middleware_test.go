package bench

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jimsmart/grobotstxt"
	"github.com/temoto/robotstxt"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/nethttp"
	"github.com/robotsguard/robotsguard/sites"
)

// The in-process middleware comparison: robotsguard's net/http middleware
// against the middleware a Go programmer would write in a few lines with
// either peer library, on the same small robots.txt. Run it with
//
//	cd bench && go test -run '^$' -bench 'Middleware' -cpu 1,2 -count 5
//
// and compare per-op times; BenchmarkMiddlewareParallel at -cpu 2 shows
// how each scales over cores.
//
// The naive middlewares give the library the whole User-Agent header, as
// their authors would: neither library extracts a product token from one
// (see agents), so both choose the "*" group for every header below, and
// the naive middlewares also stop browsers on disallowed paths. The
// requests are chosen so that all three give the same status; the work per
// request is of the same kind (a group lookup and a rule scan; grobotstxt
// parses the file at every call, which is its API).

const middlewareRobots = `User-agent: *
Disallow: /private/

User-agent: GPTBot
Disallow: /
Allow: /public/

User-agent: bingbot
Crawl-delay: 10
Disallow: /a/b
`

const (
	mwChrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	mwGPTBot = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
)

var mwOK = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

// temotoMiddleware parses robots.txt once and tests every request's path
// against the group its User-Agent header selects.
func temotoMiddleware(tb testing.TB, next http.Handler) http.Handler {
	data, err := robotstxt.FromBytes([]byte(middlewareRobots))
	if err != nil {
		tb.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !data.FindGroup(r.Header.Get("User-Agent")).Test(r.URL.Path) {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// grobotstxtMiddleware asks grobotstxt about every request.
func grobotstxtMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !grobotstxt.AgentAllowed(middlewareRobots, r.Header.Get("User-Agent"), "http://example.com"+r.URL.RequestURI()) {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func robotsguardMiddleware(tb testing.TB, next http.Handler) http.Handler {
	e, err := guard.New(guard.Config{}, guard.WithSource(sites.BytesSource([]byte(middlewareRobots))))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return nethttp.Handler(e, next)
}

// mwWriter is a reusable ResponseWriter. Each goroutine of the parallel
// benchmark writes its own at every request; the padding keeps two of them
// off one cache line, which would make the benchmark measure false sharing.
type mwWriter struct {
	h    http.Header
	code int
	_    [112]byte
}

func (w *mwWriter) Header() http.Header         { return w.h }
func (w *mwWriter) WriteHeader(c int)           { w.code = c }
func (w *mwWriter) Write(p []byte) (int, error) { return len(p), nil }

type mwCase struct {
	name, ua, target string
	want             int
}

var mwCases = []mwCase{
	{"browser", mwChrome, "/page?id=42", http.StatusOK},
	{"bot_allowed", mwGPTBot, "/public/page?id=42", http.StatusOK},
	{"bot_denied", mwGPTBot, "/private/page?id=42", http.StatusForbidden},
}

func mwRequest(c mwCase) *http.Request {
	r := httptest.NewRequest("GET", "http://example.com"+c.target, nil)
	r.RequestURI = c.target
	r.RemoteAddr = "192.0.2.1:1234"
	r.Header.Set("User-Agent", c.ua)
	browserHeaders(r.Header)
	return r
}

// browserHeaders sets on h the headers that real browsers send on every
// request, beside their User-Agent: Accept-Language (every browser, any
// scheme), and the Sec-CH-UA client hint and Sec-Fetch-Mode fetch metadata
// that Chrome sends to secure origins. Without them a request whose
// User-Agent names a browser is an undeclared bot (issue 47,
// classify.UndeclaredRules), judged by the "*" group, and the "browser"
// case would measure a bot; a bot is a bot whatever it sends.
func browserHeaders(h http.Header) {
	h.Set("Accept-Language", "en-US,en;q=0.9")
	h.Set("Sec-CH-UA", `"Chromium";v="137", "Not/A)Brand";v="24"`)
	h.Set("Sec-Fetch-Mode", "navigate")
}

func mwHandlers(tb testing.TB) []struct {
	name string
	h    http.Handler
} {
	return []struct {
		name string
		h    http.Handler
	}{
		{"robotsguard", robotsguardMiddleware(tb, mwOK)},
		{"temoto", temotoMiddleware(tb, mwOK)},
		{"grobotstxt", grobotstxtMiddleware(mwOK)},
	}
}

// TestMiddlewareStatuses: the three middlewares answer every benchmark
// request alike, so that their timings compare the same work.
func TestMiddlewareStatuses(t *testing.T) {
	for _, m := range mwHandlers(t) {
		for _, c := range mwCases {
			w := &mwWriter{h: http.Header{}}
			m.h.ServeHTTP(w, mwRequest(c))
			if w.code != c.want {
				t.Errorf("%s %s: status %d, want %d", m.name, c.name, w.code, c.want)
			}
		}
	}
}

func BenchmarkMiddleware(b *testing.B) {
	for _, m := range mwHandlers(b) {
		for _, c := range mwCases {
			b.Run(m.name+"/"+c.name, func(b *testing.B) {
				r, w := mwRequest(c), &mwWriter{h: http.Header{}}
				m.h.ServeHTTP(w, r)
				b.ReportAllocs()
				for b.Loop() {
					clear(w.h)
					m.h.ServeHTTP(w, r)
				}
				if w.code != c.want {
					b.Fatalf("status %d, want %d", w.code, c.want)
				}
			})
		}
	}
}

func BenchmarkMiddlewareParallel(b *testing.B) {
	for _, m := range mwHandlers(b) {
		for _, c := range mwCases {
			b.Run(m.name+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					r, w := mwRequest(c), &mwWriter{h: http.Header{}}
					for pb.Next() {
						clear(w.h)
						m.h.ServeHTTP(w, r)
					}
					if w.code != 0 && w.code != c.want { // 0: this goroutine got no iteration
						b.Errorf("status %d, want %d", w.code, c.want)
					}
				})
			})
		}
	}
}
