package guard

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/sites"
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

// /robots.txt is always served, in every spelling rules read as it
// (RFC 9309 §2.2.2): to a banned client, before the site's first fetch,
// while its robots.txt is unreachable.
func TestRobotsTxtAlwaysServed(t *testing.T) {
	clk := testclock.New()
	e, _ := trapEngine(t, trapRobots, clk, nil)
	at(e, uaChrome, e.TrapLinkFor(exampleSite, "198.51.100.7:1"), "198.51.100.7:1") // banned
	for _, target := range []string{"/robots.txt", "/robots.txt?x", "/%72obots.txt", "/robots%2Etxt", "http://example.com/robots.txt"} {
		if v := at(e, uaChrome, target, "198.51.100.7:1"); v.Action != Allow || v.Reason != ReasonRobotsTxt {
			t.Errorf("%s for a banned client: %v %v", target, v.Action, v.Reason)
		}
	}
	down := mustNew(t, Config{}, WithSource(failingSource{}))
	for _, target := range []string{"/robots.txt", "/robots%2Etxt"} {
		if v := down.Decide(context.Background(), Request{Host: "example.com", Target: target, UserAgent: uaAhrefs}); v.Action != Allow {
			t.Errorf("%s while robots.txt is unreachable: %v %v", target, v.Action, v.Reason)
		}
	}
}

// failingSource is a robots.txt source that is always unreachable.
type failingSource struct{}

func (failingSource) Fetch(context.Context, sites.Request) (sites.Result, error) {
	return sites.Result{}, errors.New("down")
}
