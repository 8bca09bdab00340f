package guard

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// The BenchmarkParallel set runs the handler from many goroutines at once;
// run it with -cpu 1,2 and compare the per-op times: a path without writes
// to memory shared across requests gets about twice as fast on two cores.

type parallelWriter struct{ h http.Header }

func (w *parallelWriter) Header() http.Header         { return w.h }
func (w *parallelWriter) WriteHeader(int)             {}
func (w *parallelWriter) Write(p []byte) (int, error) { return len(p), nil }

func runParallel(b *testing.B, h http.Handler, mk func(i int) *http.Request) {
	var n atomic.Int64
	h.ServeHTTP(&parallelWriter{h: http.Header{}}, mk(0)) // warm the caches
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &parallelWriter{h: http.Header{}}
		// Each goroutine cycles over its own few requests.
		base := int(n.Add(1)) * 1000
		reqs := make([]*http.Request, 16)
		for i := range reqs {
			reqs[i] = mk(base + i)
		}
		i := 0
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, reqs[i&15])
			i++
		}
	})
}

func BenchmarkParallelBrowser(b *testing.B) {
	h := guarded(b)
	runParallel(b, h, func(int) *http.Request { return benchRequest(uaChrome, "/private/page?id=42") })
}

func BenchmarkParallelBotAllowed(b *testing.B) {
	h := guarded(b)
	runParallel(b, h, func(int) *http.Request { return benchRequest(uaGPTBot, "/public/page?id=42") })
}

// BenchmarkParallelBotDenied: denials from 250 addresses (each counted in
// the violations report).
func BenchmarkParallelBotDenied(b *testing.B) {
	runParallel(b, guarded(b), from250(uaGPTBot, "/private/page?id=42"))
}

// BenchmarkParallelBotThrottled: bingbot has a Crawl-delay of 10 s; every
// request after the first of each address is throttled.
func BenchmarkParallelBotThrottled(b *testing.B) {
	runParallel(b, guarded(b), from250(uaBing, "/page"))
}

// from250 makes the i-th request of ua for target come from one of 250
// addresses.
func from250(ua, target string) func(i int) *http.Request {
	return func(i int) *http.Request {
		r := benchRequest(ua, target)
		r.RemoteAddr = "192.0.2." + strconv.Itoa(i%250) + ":1234"
		return r
	}
}

// BenchmarkParallelManyUAs: 235 distinct browser-like headers.
func BenchmarkParallelManyUAs(b *testing.B) {
	h := guarded(b)
	runParallel(b, h, func(i int) *http.Request {
		return benchRequest(fmt.Sprintf("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/%d.0 Safari/537.36", 100+i%235), "/page")
	})
}

// BenchmarkParallelManySites: requests spread over 50 Host names.
func BenchmarkParallelManySites(b *testing.B) {
	h := guarded(b)
	runParallel(b, h, func(i int) *http.Request {
		r := benchRequest(uaGPTBot, "/public/page")
		r.Host = "site" + strconv.Itoa(i%50) + ".example"
		return r
	})
}

// BenchmarkParallelBare is the yardstick of a run: a handler with no
// shared state, which shows how much faster two cores of this machine are
// than one just then (about 2× on a quiet machine). Compare the other
// ratios with it.
func BenchmarkParallelBare(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("User-Agent"), "bot") {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	runParallel(b, h, func(int) *http.Request { return benchRequest(uaChrome, "/page") })
}
