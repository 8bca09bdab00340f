package caddymodule

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/internal/testorigin"
	"github.com/robotsguard/robotsguard/sites"
)

// BenchmarkServeHTTP measures what the module adds to a request inside
// Caddy: the decision, the placeholders and the hand-over to next (a no-op
// here). Every request gets a new context, replacer and variables from
// caddyhttp.PrepareRequest, as Caddy's server gives them; "caddy only" is
// that set-up alone, to subtract. A proxied request costs Caddy about
// 140-200 µs of CPU on the machines this was measured on; see
// bench/loadtest for the end-to-end comparison.
func BenchmarkServeHTTP(b *testing.B) {
	g := benchGuard(b)
	g.state.log.set(zapcore.NewNopCore()) // keep denial lines out of the output
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	for _, bc := range []struct {
		name, ua, target string
		guard            bool
	}{
		{"caddy only", chrome, "/private/x?y=1", false},
		{"browser", chrome, "/private/x?y=1", true},
		{"bot allowed", "Mozilla/5.0 (compatible; FooBot/1.0; +https://foo.example/bot)", "/blog/post?id=7", true},
		{"bot denied", gptUA, "/blog/post", true},
	} {
		r0 := httptest.NewRequest(http.MethodGet, "http://example.com"+bc.target, nil)
		r0.RequestURI = bc.target // origin-form, as Caddy's requests have
		r0.Header.Set("User-Agent", bc.ua)
		browserHeaders(r0.Header)
		r0.RemoteAddr = "192.0.2.1:1234"
		w := &nopWriter{h: http.Header{}}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				r := caddyhttp.PrepareRequest(r0, caddy.NewReplacer(), w, nil)
				if bc.guard {
					_ = g.ServeHTTP(w, r, next)
				} else {
					_ = next.ServeHTTP(w, r)
				}
			}
		})
	}
}

// BenchmarkParallelServeHTTP is BenchmarkServeHTTP from GOMAXPROCS
// goroutines, each cycling over 16 requests of its own, prepared anew each
// time as Caddy's server does ("caddy only": that alone); run it with -cpu
// 1,2. "logged" writes the
// denial lines through a real zap core (JSON to io.Discard) behind the
// module's sampler. Denied and throttled requests come from 250 addresses,
// "many UAs" cycles over 235 browser headers, "many sites" over 50 Hosts.
func BenchmarkParallelServeHTTP(b *testing.B) {
	g := benchGuard(b)
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	fixed := func(ua, target string) func(int) (string, string, string) {
		return func(int) (string, string, string) { return ua, target, "example.com" }
	}
	for _, bc := range []struct {
		name   string
		req    func(i int) (ua, target, host string)
		logged bool
	}{
		{"caddy only", fixed(chrome, "/private/x?y=1"), false},
		{"browser", fixed(chrome, "/private/x?y=1"), false},
		{"bot allowed", fixed("Mozilla/5.0 (compatible; FooBot/1.0; +https://foo.example/bot)", "/blog/post?id=7"), false},
		{"bot denied", fixed(gptUA, "/blog/post"), false},
		{"bot denied logged", fixed(gptUA, "/blog/post"), true},
		{"bot throttled", fixed("SlowBot/1.0", "/blog/post"), false},
		{"many UAs", func(i int) (string, string, string) {
			return fmt.Sprintf("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/%d.0 Safari/537.36", 100+i%235), "/page", "example.com"
		}, false},
		{"many sites", func(i int) (string, string, string) {
			return "Mozilla/5.0 (compatible; FooBot/1.0; +https://foo.example/bot)", "/blog/post", "site" + strconv.Itoa(i%50) + ".example"
		}, false},
	} {
		if bc.logged {
			g.state.log.set(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zapcore.InfoLevel))
		} else {
			g.state.log.set(zapcore.NewNopCore())
		}
		var n atomic.Int64
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				base := int(n.Add(1)) * 1000
				reqs := make([]*http.Request, 16)
				for j := range reqs {
					ua, target, host := bc.req(base + j)
					r := httptest.NewRequest(http.MethodGet, "http://"+host+target, nil)
					r.RequestURI = target
					r.Header.Set("User-Agent", ua)
					browserHeaders(r.Header)
					r.RemoteAddr = "192.0.2." + strconv.Itoa((base+j)%250) + ":1234"
					reqs[j] = r
				}
				w := &nopWriter{h: http.Header{}}
				i := 0
				for pb.Next() {
					clear(w.h)
					r := caddyhttp.PrepareRequest(reqs[i&15], caddy.NewReplacer(), w, nil)
					if bc.name == "caddy only" {
						_ = next.ServeHTTP(w, r)
					} else {
						_ = g.ServeHTTP(w, r, next)
					}
					i++
				}
			})
		})
	}
}

type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) WriteHeader(int)             {}
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// benchGuard provisions a robots_guard for testorigin.Sample, cleaned up when the
// benchmark ends.
func benchGuard(b *testing.B) *RobotsGuard {
	file := testorigin.WriteFile(b, testorigin.Sample)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	b.Cleanup(cancel)
	g := &RobotsGuard{Config: guard.Config{RobotsTxt: sites.Config{Source: file}}}
	if err := g.Provision(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Cleanup() })
	return g
}
