package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap/zapcore"
)

// BenchmarkServeHTTP measures what the module adds to a request inside
// Caddy: the decision, the placeholders and the hand-over to next (a no-op
// here). A proxied request costs Caddy about 140-200 µs of CPU on the
// machines this was measured on; see bench/loadtest for the end-to-end
// comparison.
func BenchmarkServeHTTP(b *testing.B) {
	file := writeRobots(b, testRobots)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	g := &RobotsGuard{RobotsTxt: file}
	if err := g.Provision(ctx); err != nil {
		b.Fatal(err)
	}
	defer g.Cleanup()
	g.state.log.set(zapcore.NewNopCore()) // keep denial lines out of the output
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	for _, bc := range []struct{ name, ua, target string }{
		{"browser", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36", "/private/x?y=1"},
		{"bot allowed", "Mozilla/5.0 (compatible; FooBot/1.0; +https://foo.example/bot)", "/blog/post?id=7"},
		{"bot denied", gptUA, "/blog/post"},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://example.com"+bc.target, nil)
		r.RequestURI = bc.target // origin-form, as Caddy's requests have
		r.Header.Set("User-Agent", bc.ua)
		r.RemoteAddr = "192.0.2.1:1234"
		repl := caddy.NewReplacer()
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
		w := httptest.NewRecorder()
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w.Body.Reset()
				_ = g.ServeHTTP(w, r, next)
			}
		})
	}
}
