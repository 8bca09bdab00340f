package middleware

import (
	"net/http/httptest"
	"testing"
)

// Every stopped request's answer has header values of its own: a handler
// after the guard that rewrites a value in place (Caddy's deferred header
// replacement does) changes that answer only.
func TestAnswersShareNoHeaderValues(t *testing.T) {
	e := mustNew(t, Config{})
	v := Verdict{Action: Throttle, Reason: ReasonCrawlDelay, RetryAfter: 3e9, Site: "http://example.com"}
	first := httptest.NewRecorder()
	e.Respond(first, httptest.NewRequest("GET", "/", nil), v)
	for _, k := range []string{"Content-Type", "Cache-Control", "X-Content-Type-Options", "Retry-After"} {
		first.Header()[k][0] = "changed"
	}
	second := httptest.NewRecorder()
	e.Respond(second, httptest.NewRequest("GET", "/", nil), v)
	want := map[string]string{"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Retry-After": "3"}
	for k, w := range want {
		if got := second.Header().Get(k); got != w {
			t.Errorf("%s of the next answer: %q, want %q", k, got, w)
		}
	}
}

// The header slab hands each answer slots of its own, and a full slab is
// never handed out again.
func TestHeaderSlab(t *testing.T) {
	e := mustNew(t, Config{})
	seen := map[*respHeaders]bool{}
	for range 3 * slabSize {
		hs := e.newHeaders()
		if seen[hs] {
			t.Fatal("a slot was handed out twice")
		}
		seen[hs] = true
	}
}
