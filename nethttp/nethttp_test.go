package nethttp

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/sites"
)

const robotsTxt = "User-agent: GPTBot\nDisallow: /\n\nUser-agent: bingbot\nCrawl-delay: 10\n\nUser-agent: *\nDisallow: /private/\n"

// site serves robotsTxt at /robots.txt and "ok" elsewhere.
func site() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, robotsTxt) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	return mux
}

func newEngine(t *testing.T, opts ...guard.Option) *guard.Engine {
	t.Helper()
	e, err := guard.New(guard.Config{Verify: &identity.VerifyConfig{Off: true}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestHandler: a browser reaches the site, a disallowed bot gets the 403
// the engine decides, with its body and headers, and robots.txt itself is
// served from the site to everyone; Middleware is the same front.
func TestHandler(t *testing.T) {
	e := newEngine(t)
	for name, h := range map[string]http.Handler{"Handler": Handler(e, site()), "Middleware": Middleware(e)(site())} {
		if rec := do(h, uaChrome, "/private/x"); rec.Code != 200 || rec.Body.String() != "ok" {
			t.Errorf("%s: a browser: %d %q", name, rec.Code, rec.Body)
		}
		rec := do(h, uaGPTBot, "/page")
		if rec.Code != 403 || !strings.Contains(rec.Body.String(), "Disallowed by robots.txt line 2 for GPTBot") ||
			rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("%s: GPTBot: %d %q %v", name, rec.Code, rec.Body, rec.Header())
		}
		if rec := do(h, uaGPTBot, "/robots.txt"); rec.Code != 200 || !strings.Contains(rec.Body.String(), "User-agent: GPTBot") {
			t.Errorf("%s: robots.txt: %d %q", name, rec.Code, rec.Body)
		}
	}
}

// TestCustomResponders: WithDenyHandler and WithThrottleHandler answer the
// requests the engine stops.
func TestCustomResponders(t *testing.T) {
	clk := testclock.New()
	e := newEngine(t, guard.WithClock(clk.Now))
	h := Handler(e, site(),
		WithDenyHandler(func(w http.ResponseWriter, r *http.Request, v guard.Verdict) { w.WriteHeader(451) }),
		WithThrottleHandler(func(w http.ResponseWriter, r *http.Request, v guard.Verdict) { w.WriteHeader(503) }),
	)
	if c := do(h, uaGPTBot, "/x").Code; c != 451 {
		t.Fatalf("deny: %d", c)
	}
	codes := []int{}
	for range 5 {
		codes = append(codes, do(h, uaBing, "/p").Code)
	}
	if codes[len(codes)-1] != 503 {
		t.Fatalf("throttle: %v", codes)
	}
	clk.Add(time.Minute)
	if c := do(h, uaBing, "/p").Code; c != 200 {
		t.Fatalf("after the delay: %d", c)
	}
}

// TestClientIP: WithClientIP chooses whose budget and trap link a request
// spends: two clients behind one address are two clients.
func TestClientIP(t *testing.T) {
	clk := testclock.New()
	e := newEngine(t, guard.WithClock(clk.Now), guard.WithSource(sites.BytesSource([]byte(robotsTxt))))
	fromHeader := WithClientIP(func(r *http.Request) string { return r.Header.Get("X-Client") })
	h := Handler(e, site(), fromHeader)
	get := func(client string) int {
		r, _ := http.NewRequest(http.MethodGet, "http://example.com/p", nil)
		r.Header.Set("User-Agent", uaBing)
		r.Header.Set("X-Client", client)
		r.RemoteAddr = "192.0.2.1:1"
		rec := newRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	n := 0
	for ; n < 10 && get("203.0.113.1") == 200; n++ {
	}
	if n == 10 {
		t.Fatal("one client was never throttled")
	}
	if c := get("203.0.113.2"); c != 200 {
		t.Fatalf("another client behind the same address: %d", c)
	}
	traps := trapEngine(t, trapRobots, clk)
	r, _ := http.NewRequest(http.MethodGet, "http://example.com/", nil)
	r.Header.Set("X-Client", "203.0.113.9")
	if l := TrapLink(traps, r, fromHeader); l == "" || l != traps.TrapLinkFor(exampleSite, "203.0.113.9") || l == traps.TrapLinkFor(exampleSite, "192.0.2.1") {
		t.Fatalf("the trap link of the client the option names: %q", l)
	}
}
