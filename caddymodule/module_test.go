package caddymodule

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/internal/testorigin"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
)

const gptUA = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"

func provisioned(t *testing.T, g *RobotsGuard) *RobotsGuard {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := g.Provision(ctx); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if err := g.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	t.Cleanup(func() { g.Cleanup() })
	return g
}

// browserHeaders sets on h the headers that real browsers send on every
// request, beside their User-Agent: Accept-Language (every browser, any
// scheme), and the Sec-CH-UA client hint and Sec-Fetch-Mode fetch metadata
// that Chrome (and Firefox, fetch metadata) send to secure origins. Without
// them a request whose User-Agent names a browser is an undeclared bot
// (issue 47, classify.UndeclaredRules), judged by the "*" group; the tests'
// simulated browsers send them so that they stay browsers. A bot is a bot
// whatever it sends, and over http nothing reads the last two, so they are
// set on every request.
func browserHeaders(h http.Header) {
	h.Set("Accept-Language", "en-US,en;q=0.9")
	h.Set("Sec-CH-UA", `"Chromium";v="137", "Not/A)Brand";v="24"`)
	h.Set("Sec-Fetch-Mode", "navigate")
}

func serve(g *RobotsGuard, ua, target string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "http://example.com"+target, nil)
	r.Header.Set("User-Agent", ua)
	browserHeaders(r.Header)
	repl := caddy.NewReplacer()
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	w := httptest.NewRecorder()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		fmt.Fprintf(w, "next %s", r.URL.Path)
		return nil
	})
	if err := g.ServeHTTP(w, r, next); err != nil {
		w.Code = -1
		w.Body.WriteString(err.Error())
	}
	group, _ := repl.Get(phGroup)
	action, _ := repl.Get(phAction)
	w.Header().Set("X-Test-Group", fmt.Sprint(group))
	w.Header().Set("X-Test-Action", fmt.Sprint(action))
	// The rule placeholder must be a string, not merely print as one:
	// CEL expressions and log filters take it as it is.
	rule, _ := repl.Get(phRule)
	if s, ok := rule.(string); ok {
		w.Header().Set("X-Test-Rule", s)
	} else {
		w.Header().Set("X-Test-Rule", fmt.Sprintf("not a string: %T", rule))
	}
	return w
}

// TestServeHTTPWithoutServer covers the module outside a Caddy server (no
// handle_errors): it answers stopped requests itself, with the body.
func TestServeHTTPWithoutServer(t *testing.T) {
	file := testorigin.WriteFile(t, testorigin.Sample)
	g := provisioned(t, &RobotsGuard{Config: guard.Config{RobotsTxt: sites.Config{Source: file}}})
	for _, tc := range []struct {
		ua, target string
		code       int
		body       string
		group      string
		action     string
		rule       string
	}{
		{"Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0", "/private/x", 200, "next /private/x", "", "allow", ""},
		{gptUA, "/blog/", 403, "Disallowed by robots.txt line 2 for GPTBot", "GPTBot", "deny", "2: Disallow: /"},
		{gptUA, "/blog/", 403, "Disallowed by robots.txt line 2 for GPTBot", "GPTBot", "deny", "2: Disallow: /"}, // from the cache
		{gptUA, "/robots.txt", 200, "next /robots.txt", "", "allow", ""},
		{"FooBot/1.0", "/private/open/x", 200, "next", "*", "allow", ""},
		{"FooBot/1.0", "/private/x", 403, "line 9 for *", "*", "deny", "9: Disallow: /private/"},
	} {
		w := serve(g, tc.ua, tc.target)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("%s %s: %d %q, want %d containing %q", tc.ua, tc.target, w.Code, w.Body, tc.code, tc.body)
		}
		if got := w.Header().Get("X-Test-Group"); got != tc.group {
			t.Errorf("%s %s: group placeholder %q, want %q", tc.ua, tc.target, got, tc.group)
		}
		if got := w.Header().Get("X-Test-Action"); got != tc.action {
			t.Errorf("%s %s: action placeholder %q, want %q", tc.ua, tc.target, got, tc.action)
		}
		if got := w.Header().Get("X-Test-Rule"); got != tc.rule {
			t.Errorf("%s %s: rule placeholder %q, want %q", tc.ua, tc.target, got, tc.rule)
		}
	}
	// Crawl-delay 5s: three requests at once pass (the tolerance of 2.5
	// delays), the fourth is throttled with Retry-After 3 (3 × 5s less the
	// 12.5s tolerance, rounded up).
	for i := range burst {
		if w := serve(g, "SlowBot/1", "/a"); w.Code != 200 {
			t.Fatalf("SlowBot request %d: %d", i+1, w.Code)
		}
	}
	w := serve(g, "SlowBot/1", "/a")
	if w.Code != 429 || w.Header().Get("Retry-After") != "3" || w.Header().Get("X-Test-Action") != "throttle" {
		t.Errorf("SlowBot request after the burst: %d Retry-After %q action %q", w.Code, w.Header().Get("Retry-After"), w.Header().Get("X-Test-Action"))
	}
}

// burst is how many requests of one bot the default tolerance
// (limit.DefaultTolerance delays) admits at once.
var burst = 1 + int(math.Floor(limit.DefaultTolerance))

// TestStateSurvivesReprovision: a second module with the same
// configuration (a config reload) shares the Engine, so the Crawl-delay
// clock goes on; a different configuration gets its own.
func TestStateSurvivesReprovision(t *testing.T) {
	file := testorigin.WriteFile(t, testorigin.Sample)
	a := provisioned(t, &RobotsGuard{Config: guard.Config{RobotsTxt: sites.Config{Source: file}}})
	for i := range burst {
		if w := serve(a, "SlowBot/1", "/a"); w.Code != 200 {
			t.Fatalf("request %d: %d", i+1, w.Code)
		}
	}
	b := provisioned(t, &RobotsGuard{Config: guard.Config{RobotsTxt: sites.Config{
		// the old config goes away after the new one is provisioned
		Source: file}}})
	a.Cleanup()
	if a.state != b.state {
		t.Fatal("same configuration, different state")
	}
	if w := serve(b, "SlowBot/1", "/a"); w.Code != 429 {
		t.Errorf("after reload: %d, want 429 (the clock must survive)", w.Code)
	}
	c := provisioned(t, &RobotsGuard{Config: guard.Config{DryRun: true, RobotsTxt: sites.Config{Source: file}}})
	if c.state == b.state {
		t.Error("different configuration, same state")
	}
}

func TestGroupLabelsAreBounded(t *testing.T) {
	freshGroupLabels(t)
	for i := 0; i < 3*maxGroupLabels; i++ {
		groupLabel(fmt.Sprintf("bot%d", i))
	}
	if got := groupLabel("one-more-bot"); got != "_other" {
		t.Errorf("label past the cap = %q, want _other", got)
	}
	if got := groupLabel(""); got != "_none" {
		t.Errorf("empty group label = %q, want _none", got)
	}
	groupLabels.RLock()
	n := len(groupLabels.seen)
	groupLabels.RUnlock()
	if n > maxGroupLabels {
		t.Errorf("%d distinct group labels, cap %d", n, maxGroupLabels)
	}
}

func TestMetricsRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	for i := 0; i < 2; i++ {
		if err := registerMetrics(reg); err != nil {
			t.Fatalf("register #%d: %v", i+1, err)
		}
	}
	before := testutil.ToFloat64(fetchesTotal.WithLabelValues("http://x", "ok"))
	metricsObserver{}.ObserveFetch("http://x", 0)
	if got := testutil.ToFloat64(fetchesTotal.WithLabelValues("http://x", "ok")); got != before+1 {
		t.Errorf("fetches ok = %v, want %v", got, before+1)
	}
}

// TestSwapCore: the shared Engine's logger follows the latest config's
// core, also through loggers derived with With.
func TestSwapCore(t *testing.T) {
	sc := newSwapCore()
	log := zap.New(sc).Named("x").With(zap.String("k", "v"))
	log.Info("lost") // no-op core at first
	c1, o1 := observer.New(zapcore.InfoLevel)
	sc.set(c1)
	log.Info("one")
	c2, o2 := observer.New(zapcore.InfoLevel)
	sc.set(c2)
	log.Info("two")
	if o1.Len() != 1 || o1.All()[0].Message != "one" || o1.All()[0].ContextMap()["k"] != "v" {
		t.Errorf("first core got %v", o1.All())
	}
	if o2.Len() != 1 || o2.All()[0].Message != "two" {
		t.Errorf("second core got %v", o2.All())
	}
}

func TestProvisionRejectsBadConfig(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	g := &RobotsGuard{Config: guard.Config{CrawlDelay: limit.CrawlDelayConfig{Key: "ua"}}}
	err := g.Provision(ctx)
	if err == nil || !strings.Contains(err.Error(), "crawl_delay: key") {
		t.Errorf("Provision error %v, want one naming crawl_delay: key", err)
	}
}

// TestSameAddr checks the short cut in front of checkForwarded: it may
// only ever say "not forwarded" where checkForwarded would.
func TestSameAddr(t *testing.T) {
	for _, tc := range []struct {
		peer, clientIP string
		want           bool
	}{
		{"192.0.2.1:5000", "192.0.2.1", true},
		{"192.0.2.10:5000", "192.0.2.1", false},
		{"192.0.2.1", "192.0.2.1", false}, // no port: left to checkForwarded
		{"[2001:db8::1]:443", "2001:db8::1", false},
		{"198.51.100.7:5000", "192.0.2.1", false},
		{":5000", "", true}, // checkForwarded: no client address, not forwarded
		{"192.0.2.1:5000", "", false},
	} {
		if got := sameAddr(tc.peer, tc.clientIP); got != tc.want {
			t.Errorf("sameAddr(%q, %q) = %v, want %v", tc.peer, tc.clientIP, got, tc.want)
		}
	}
}
