package guard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/internal/testorigin"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
)

const (
	uaChrome  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	uaGPTBot  = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	uaGoogle  = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	uaBing    = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
	uaAhrefs  = "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)"
	uaCurl    = "curl/8.5.0"
	uaFooBot  = "FooAgent/1.0"
	uaFooApp  = "FooApp/1.0 (iPhone; iOS 17.4; Scale/3.00)"
	robotsTxt = `User-agent: *
Disallow: /private/

User-agent: GPTBot
Disallow: /
Allow: /public/

User-agent: Googlebot
Disallow: /nogoogle/

User-agent: bingbot
Crawl-delay: 10
Disallow: /a/b
`
)

func TestDecisions(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		ua, path string
		code     int
		body     string // substring of the body
	}{
		{"browser passes * disallow", Config{}, uaChrome, "/private/x", 200, "ok"},
		{"unknown bot gets * rules", Config{}, uaAhrefs, "/private/x", 403, "line 2 for *"},
		{"unknown bot allowed elsewhere", Config{}, uaAhrefs, "/open", 200, "ok"},
		{"GPTBot disallowed with line", Config{}, uaGPTBot, "/anything", 403, "Disallowed by robots.txt line 5 for GPTBot"},
		{"GPTBot allowed by longer Allow", Config{}, uaGPTBot, "/public/page", 200, "ok"},
		{"own group overrides *", Config{}, uaGoogle, "/private/x", 200, "ok"},
		{"own group disallow", Config{}, uaGoogle, "/nogoogle/x", 403, "line 9 for Googlebot"},
		{"robots.txt always allowed", Config{}, uaGPTBot, "/robots.txt", 200, "User-agent"},
		{"robots.txt with query", Config{}, uaGPTBot, "/robots.txt?x=1", 200, "User-agent"},
		{"escaped slash", Config{}, uaBing, "/a%2Fb", 403, "(decoded path)"},
		{"dot segments", Config{}, uaBing, "/x/../a/b", 403, "line 13 for bingbot"},
		{"double slash", Config{}, uaBing, "//a/b", 403, "(decoded path)"},
		{"encoded dot segments", Config{}, uaBing, "/x/%2E%2E/a/b", 403, "(decoded path)"},
		{"path parameter dropped", Config{}, uaAhrefs, "/private;x/y", 403, "(decoded path)"},
		{"session parameter dropped", Config{}, uaAhrefs, "/private;jsessionid=1/x", 403, "(decoded path)"},
		{"session parameter alone", Config{}, uaAhrefs, "/private;jsessionid=1", 200, "ok"},
		{"dot segment with a parameter", Config{}, uaAhrefs, "/public/..;/private/x", 403, "(decoded path)"},
		{"parameters on every segment", Config{}, uaAhrefs, "/a;b/..;c/private/", 403, "(decoded path)"},
		{"escaped semicolon is data", Config{}, uaAhrefs, "/private%3Bx/y", 200, "ok"},
		{"unreserved escape RFC view", Config{}, uaGPTBot, "/%70ublic/x", 200, "ok"},
		{"encoded private for *", Config{}, uaAhrefs, "/%70rivate/", 403, "Disallowed"},
		{"dry run passes", Config{DryRun: true}, uaGPTBot, "/anything", 200, "ok"},
		{"extra bot token", Config{Bots: classify.Config{Tokens: []string{"fooapp"}}}, uaFooApp, "/private/", 403, "for *"},
		{"an app's header not a bot", Config{}, uaFooApp, "/private/", 200, "ok"},
		{"a header with no platform a bot", Config{}, "FooThing/1.0", "/private/", 403, "for *"},
		{"an app the operator names not a bot", Config{Bots: classify.Config{Apps: []string{"foothing"}}}, "FooThing/1.0", "/private/", 200, "ok"},
		{"an app the operator names wins over the markers", Config{Bots: classify.Config{Apps: []string{"foothing"}}}, "FooThing/1.0 FooCrawler", "/private/", 200, "ok"},
		{"a known crawler wins over apps", Config{Bots: classify.Config{Apps: []string{"foothing"}}}, "FooThing/1.0 AhrefsBot/7.0", "/private/", 403, "Disallowed"},
		{"tool passes by default", Config{}, uaCurl, "/private/", 200, "ok"},
		{"tool bound when opted in", Config{Bots: classify.Config{HTTPTools: true}}, uaCurl, "/private/", 403, "for *"},
		{"empty UA passes by default", Config{}, "", "/private/", 200, "ok"},
		{"empty UA bound when opted in", Config{Bots: classify.Config{EmptyUserAgent: true}}, "", "/private/", 403, "for *"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// RFC 9309's group choice, every header believed: what
			// verification (on by default) changes is in TestVerify* and
			// TestDefaultVerification.
			tt.cfg.Verify = &identity.VerifyConfig{Off: true}
			h := serve(mustNew(t, tt.cfg), site(robotsTxt))
			rec := do(h, tt.ua, tt.path)
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.body) {
				t.Fatalf("got %d %q, want %d containing %q", rec.Code, rec.Body.String(), tt.code, tt.body)
			}
			if rec.Code == 403 {
				if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
					t.Errorf("Content-Type = %q", ct)
				}
				if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
					t.Errorf("Cache-Control = %q", cc)
				}
			}
		})
	}
}

func TestGroupTokenMakesBot(t *testing.T) {
	// FooAgent is unknown to every list, but the site names it.
	h := serve(mustNew(t, Config{}), site("User-agent: FooAgent\nDisallow: /\n"))
	if rec := do(h, uaFooBot, "/x"); rec.Code != 403 {
		t.Fatalf("FooBot: got %d", rec.Code)
	}
	if rec := do(h, uaChrome, "/x"); rec.Code != 200 {
		t.Fatalf("browser: got %d", rec.Code)
	}
}

func TestCrawlDelay(t *testing.T) {
	clk := testclock.New()
	e := mustNew(t, Config{}, WithClock(clk.Now))
	h := serve(e, site(robotsTxt))
	if rec := do(h, uaBing, "/page"); rec.Code != 200 {
		t.Fatalf("first: %d", rec.Code)
	}
	clk.Add(3500 * time.Millisecond)
	// Crawl-delay 10s, tolerance 2.5 delays (25s): the theoretical arrival
	// time is 10s after the first; the second and third pass at 3.5s (20s
	// and 30s less 25s are not after 3.5s), the fourth waits for 30s - 25s.
	for i := range 2 {
		if rec := do(h, uaBing, "/page"); rec.Code != 200 {
			t.Fatalf("request %d at 3.5s: %d, want 200 (within the tolerance)", i+2, rec.Code)
		}
	}
	rec := do(h, uaBing, "/page")
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "2" {
		t.Fatalf("fourth: %d Retry-After %q, want 429 and 2 (30s - 25s tolerance - 3.5s = 1.5s)", rec.Code, rec.Header().Get("Retry-After"))
	}
	// A disallowed path answers 403 and spends nothing.
	if rec := do(h, uaBing, "/a/b"); rec.Code != 403 {
		t.Fatalf("disallowed: %d", rec.Code)
	}
	// Another address has its own budget; the same /64 shares one.
	if rec := doIP(h, uaBing, "/page", "198.51.100.7:1"); rec.Code != 200 {
		t.Fatalf("other IP: %d", rec.Code)
	}
	spend(t, h, uaBing, "/page", "[2001:db8::1]:1")
	if rec := doIP(h, uaBing, "/page", "[2001:db8::ffff]:1"); rec.Code != 429 {
		t.Fatalf("same /64: %d", rec.Code)
	}
	clk.Add(2 * time.Second)
	if rec := do(h, uaBing, "/page"); rec.Code != 200 {
		t.Fatalf("after the wait: %d", rec.Code)
	}
	// The throttle answer of Decide carries the real wait: admitted at
	// 5.5s, the theoretical arrival time is 40s, less the 25s tolerance
	// 9.5s away.
	v := e.Decide(context.Background(), Request{Host: "example.com", Target: "/p", UserAgent: uaBing, ClientIP: "192.0.2.1", Origin: site(robotsTxt)})
	if v.Action != Throttle || v.RetryAfter != 9500*time.Millisecond || v.RetryAfterSeconds() != 10 {
		t.Fatalf("verdict %+v", v)
	}
}

// TestStrictTolerance: crawl_delay_tolerance 0 keeps strict spacing, one
// request per delay every time, as before the tolerance existed.
func TestStrictTolerance(t *testing.T) {
	clk := testclock.New()
	h := serve(mustNew(t, Config{CrawlDelay: limit.CrawlDelayConfig{Tolerance: ptr(0.0)}}, WithClock(clk.Now)), site(robotsTxt))
	if rec := do(h, uaBing, "/page"); rec.Code != 200 {
		t.Fatalf("first: %d", rec.Code)
	}
	clk.Add(9 * time.Second)
	if rec := do(h, uaBing, "/page"); rec.Code != 429 || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("9 s later under Crawl-delay 10: %d Retry-After %q, want 429 and 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	clk.Add(time.Second)
	if rec := do(h, uaBing, "/page"); rec.Code != 200 {
		t.Fatalf("10 s later: %d", rec.Code)
	}
}

func TestCrawlDelayKeyGroup(t *testing.T) {
	clk := testclock.New()
	// With verification off, every header that names the group shares its
	// budget; with it on, only verified crawlers do (TestVerifyGroupBudget).
	h := serve(mustNew(t, Config{Verify: &identity.VerifyConfig{Off: true}, CrawlDelay: limit.CrawlDelayConfig{Key: limit.KeyGroup}}, WithClock(clk.Now)), site(robotsTxt))
	spend(t, h, uaBing, "/p", "192.0.2.1:1234")
	if rec := doIP(h, uaBing, "/p", "203.0.113.9:5"); rec.Code != 429 {
		t.Fatalf("group key: other IP got %d", rec.Code)
	}
}

// TestDryRunObserves: a dry run is told apart from enforcement in metrics
// (action dry_run_deny, dry_run_throttle) and in the log.
func TestDryRunObserves(t *testing.T) {
	obs := &countObserver{}
	core, logs := observer.New(zapcore.InfoLevel)
	h := serve(mustNew(t, Config{DryRun: true}, WithObserver(obs), WithLogger(zap.New(core))), site(robotsTxt))
	do(h, uaGPTBot, "/x")
	do(h, uaChrome, "/x")
	for range burst + 1 {
		do(h, uaBing, "/page")
	}
	if got := obs.get("dry_run_deny/disallowed"); got != 1 {
		t.Fatalf("dry_run_deny observed %d times, want 1; %v", got, obs.m)
	}
	if got := obs.get("dry_run_throttle/crawl_delay"); got != 1 {
		t.Fatalf("dry_run_throttle observed %d times, want 1; %v", got, obs.m)
	}
	if got := obs.get("deny/disallowed") + obs.get("throttle/crawl_delay"); got != 0 {
		t.Fatalf("a dry run was counted as enforcement: %v", obs.m)
	}
	for msg, action := range map[string]string{"robots_guard: dry run: would deny": "dry_run_deny", "robots_guard: dry run: would throttle": "dry_run_throttle"} {
		l := logs.FilterMessage(msg).All()
		if len(l) != 1 || l[0].ContextMap()["action"] != action {
			t.Errorf("log lines %q: %v", msg, l)
		}
	}
	if n := logs.FilterMessage("robots_guard: denied").Len() + logs.FilterMessage("robots_guard: throttled").Len(); n != 0 {
		t.Errorf("%d dry-run lines read like enforcement", n)
	}
	if got := obs.get("allow/not_bot"); got != 1 {
		t.Fatalf("not_bot observed %d times", got)
	}
	if got := obs.get("fetch/ok"); got != 1 {
		t.Fatalf("fetch observed %d times", got)
	}
}

func TestStatusHandling(t *testing.T) {
	big := strings.Repeat("# padding\n", 52000) + "User-agent: *\nDisallow: /late/\n" // rule after 500 KiB
	tests := []struct {
		name   string
		cfg    Config
		robots http.HandlerFunc
		path   string
		code   int
	}{
		{"2xx parsed", Config{}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "User-agent: *\nDisallow: /x\n") }, "/x", 403},
		{"404 allows all", Config{}, http.NotFound, "/x", 200},
		{"403 allows all", Config{}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) }, "/x", 200},
		{"500 disallows bots", Config{}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, "/x", 403},
		{"503 allow when configured", Config{RobotsTxt: sites.Config{OnUnreachable: sites.UnreachableAllow}}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }, "/x", 200},
		{"429 disallows bots", Config{}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) }, "/x", 403},
		{"panic disallows bots", Config{}, func(w http.ResponseWriter, r *http.Request) { panic("boom") }, "/x", 403},
		{"3 redirects followed", Config{}, testorigin.Redirects(3, "User-agent: *\nDisallow: /x\n"), "/x", 403},
		{"5 redirects followed", Config{}, testorigin.Redirects(5, "User-agent: *\nDisallow: /x\n"), "/x", 403},
		{"6 redirects: unavailable", Config{}, testorigin.Redirects(6, "User-agent: *\nDisallow: /x\n"), "/x", 200},
		{"redirect without Location", Config{}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(302) }, "/x", 200},
		{"huge body truncated", Config{}, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }, "/late/x", 200},
		{"garbage", Config{}, func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("\x00\xff<html>Disallow /x</html>\x89PNG"))
		}, "/x", 200},
		{"html page with rules", Config{}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<html>\nUser-agent: *\nDisallow: /x\n</html>")
		}, "/x", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := serve(mustNew(t, tt.cfg), testorigin.Status(tt.robots))
			if rec := do(h, uaAhrefs, tt.path); rec.Code != tt.code {
				t.Fatalf("got %d, want %d (%s)", rec.Code, tt.code, rec.Body.String())
			}
		})
	}
}

func TestSources(t *testing.T) {
	rules := "User-agent: *\nDisallow: /x\n"
	srv := httptest.NewServer(testorigin.Redirects(2, rules))
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "robots.txt")
	if err := os.WriteFile(file, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
		opts []Option
		code int
	}{
		{"url with redirects", Config{RobotsTxt: sites.Config{Source: srv.URL + "/robots.txt"}}, nil, 403},
		{"url 404", Config{RobotsTxt: sites.Config{Source: srv.URL + "/nothing"}}, nil, 403}, // the chain handler serves every path
		{"file", Config{RobotsTxt: sites.Config{Source: file}}, nil, 403},
		{"bytes", Config{}, []Option{WithSource(sites.BytesSource([]byte(rules)))}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustNew(t, tt.cfg, tt.opts...)
			defer e.Close()
			if rec := do(serve(e, site("")), uaAhrefs, "/x"); rec.Code != tt.code {
				t.Fatalf("got %d, want %d", rec.Code, tt.code)
			}
		})
	}
}

// TestRobotsTxtValueErrors: values of robots_txt that would leave every
// site without rules fail New with a message naming the field and saying
// what to write instead.
func TestRobotsTxtValueErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ value, want string }{
		{filepath.Join(dir, "none"), "robots_guard: robots_txt: open " + filepath.Join(dir, "none") + ": no such file or directory (give the path of a readable robots.txt"},
		{dir, "robots_guard: robots_txt: " + dir + ": not a regular file"},
		{"robots-missing.txt", "a relative path is read from the working directory"},
		{"127.0.0.1/robots.txt", `"127.0.0.1/robots.txt" looks like a host and a path: for a URL write "http://127.0.0.1/robots.txt"`},
		{"example.com/robots.txt", `for a URL write "http://example.com/robots.txt"`},
		{"localhost:8081/robots.txt", `robots_guard: robots_txt: "localhost:8081/robots.txt" looks like a host and port without a scheme; write "http://localhost:8081/robots.txt"`},
		{"127.0.0.1:8081", `write "http://127.0.0.1:8081"`},
		{"[::1]:8081/robots.txt", `write "http://[::1]:8081/robots.txt"`},
		{"ftp://example.com/robots.txt", `robots_guard: robots_txt: "ftp://example.com/robots.txt": scheme "ftp" is not supported; give an http:// or https:// URL, or a file path`},
		{"file:///srv/robots.txt", `write a file path without file://, e.g. "/srv/robots.txt"`},
		{"http://", "robots_guard: robots_txt: invalid URL"},
		{"HTTPS://", "robots_guard: robots_txt: invalid URL"},
	}
	for _, tt := range tests {
		_, err := New(Config{RobotsTxt: sites.Config{Source: tt.value}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("robots_txt %q: error %v, want one containing %q", tt.value, err, tt.want)
		}
	}
	// The form is checked without touching files (adapt time), the file at
	// New (provision time).
	if err := (Config{RobotsTxt: sites.Config{Source: filepath.Join(dir, "none")}}).Validate(); err != nil {
		t.Errorf("Validate checked the file: %v", err)
	}
	if err := (Config{RobotsTxt: sites.Config{Source: "localhost:8081/robots.txt"}}).Validate(); err == nil {
		t.Error("Validate passed a host:port without a scheme")
	}
	// A path that merely contains a colon elsewhere is a path.
	f := filepath.Join(dir, "a:b.txt")
	os.WriteFile(f, []byte("User-agent: *\nDisallow: /x\n"), 0o644)
	if _, err := New(Config{RobotsTxt: sites.Config{Source: f}}); err != nil {
		t.Errorf("file %q: %v", f, err)
	}
}

func TestVirtualFetchIsPrivate(t *testing.T) {
	var seen http.Header
	var internal bool
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			seen = r.Header.Clone()
			internal = sites.IsInternal(r.Context())
			w.Header().Set("Set-Cookie", "secret=1")
			io.WriteString(w, "User-agent: *\nDisallow: /\n")
			return
		}
		io.WriteString(w, "ok")
	})
	h := serve(mustNew(t, Config{}), origin)
	req := httptest.NewRequest("GET", "/page", nil)
	req.Header.Set("User-Agent", uaAhrefs)
	req.Header.Set("Cookie", "session=abc")
	req.Header.Set("Authorization", "Bearer x")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 403 {
		t.Fatalf("got %d", rec.Code)
	}
	if seen.Get("Cookie") != "" || seen.Get("Authorization") != "" || strings.Contains(seen.Get("User-Agent"), "Ahrefs") {
		t.Fatalf("client headers leaked into the fetch: %v", seen)
	}
	if rec.Header().Get("Set-Cookie") != "" {
		t.Fatal("fetch headers leaked into the answer")
	}
	if !internal {
		t.Fatal("fetch context not marked internal")
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{RobotsTxt: sites.Config{Refresh: duration.Duration(48 * time.Hour)}}, "robots_guard: robots_txt: refresh: must be at most 24h, got 48h0m0s"},
		{Config{RobotsTxt: sites.Config{Refresh: -1}}, "robots_guard: robots_txt: refresh:"},
		{Config{RobotsTxt: sites.Config{FetchTimeout: duration.Duration(time.Hour)}}, "robots_guard: robots_txt: fetch_timeout:"},
		{Config{RobotsTxt: sites.Config{OnUnreachable: "maybe"}}, "robots_guard: robots_txt: on_unreachable:"},
		{Config{CrawlDelay: limit.CrawlDelayConfig{Key: "ua"}}, "robots_guard: crawl_delay: key:"},
		{Config{Clients: limit.ClientsConfig{IPv4Prefix: 33}}, "robots_guard: clients: ipv4_prefix:"},
		{Config{CrawlDelay: limit.CrawlDelayConfig{Tolerance: ptr(4.5)}}, "robots_guard: crawl_delay: tolerance: must be a number of Crawl-delays between 0 and 4 (such as 2.5, or 0.25 for a quarter of the delay), got 4.5"},
		{Config{CrawlDelay: limit.CrawlDelayConfig{Tolerance: ptr(-0.1)}}, "robots_guard: crawl_delay: tolerance:"},
		{Config{Clients: limit.ClientsConfig{IPv6Prefix: -1}}, "robots_guard: clients: ipv6_prefix:"},
		{Config{CrawlDelay: limit.CrawlDelayConfig{MaxKeys: -1}}, "robots_guard: crawl_delay: max_keys:"},
		{Config{RobotsTxt: sites.Config{MaxSites: -1}}, "robots_guard: robots_txt: max_sites:"},
		{Config{Bots: classify.Config{CacheSize: -1}}, "robots_guard: bots: cache_size:"},
		{Config{Bots: classify.Config{Tokens: []string{"ok", " "}}}, "robots_guard: bots: tokens[1]:"},
		{Config{RobotsTxt: sites.Config{Source: "http://"}}, "robots_guard: robots_txt:"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want %q", tt.cfg, err, tt.want)
		}
	}
	if _, err := New(Config{RobotsTxt: sites.Config{Refresh: duration.Duration(24 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
}

func TestDurationJSON(t *testing.T) {
	var c Config
	if err := jsonUnmarshal(`{"robots_txt":{"refresh":"15m","fetch_timeout":2000000000},"dry_run":true}`, &c); err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.RobotsTxt.Refresh) != 15*time.Minute || time.Duration(c.RobotsTxt.FetchTimeout) != 2*time.Second || !c.DryRun {
		t.Fatalf("%+v", c)
	}
	if err := jsonUnmarshal(`{"robots_txt":{"refresh":"soon"}}`, &c); err == nil {
		t.Fatal("bad duration accepted")
	}
}

func ptr[T any](v T) *T { return &v }

// TestCrawlDelayScope: behind a catch-all block, a bot that rotates Host
// names gets a fresh clock with each name by default (robots.txt is per
// site); with crawl_delay_scope block, one clock covers every name.
func TestCrawlDelayScope(t *testing.T) {
	for _, c := range []struct {
		scope    string
		admitted int
	}{{limit.ScopeSite, 50}, {limit.ScopeBlock, burst}} {
		clk := testclock.New()
		e := mustNew(t, Config{CrawlDelay: limit.CrawlDelayConfig{Scope: c.scope}}, WithClock(clk.Now), WithSource(sites.BytesSource([]byte("User-agent: SlowBot\nCrawl-delay: 10\n"))))
		admitted := 0
		for i := range 50 {
			v := e.Decide(context.Background(), Request{Host: fmt.Sprintf("m%d.example", i), Target: "/page", UserAgent: "SlowBot/1.0", ClientIP: "198.51.100.7"})
			if v.Action == Allow {
				admitted++
			}
			clk.Add(100 * time.Millisecond)
		}
		if admitted != c.admitted {
			t.Errorf("crawl_delay_scope %s: %d of 50 admitted in 5 s across 50 Host names, want %d", c.scope, admitted, c.admitted)
		}
	}
	if _, err := New(Config{CrawlDelay: limit.CrawlDelayConfig{Scope: "host"}}); err == nil || !strings.Contains(err.Error(), "crawl_delay: scope") {
		t.Fatalf("a bad scope: %v", err)
	}
}

// TestThrottleLineNamesCrawlDelay: a throttled request's log line names the
// Crawl-delay line that throttled it (rule_line), and explain says it too.
func TestThrottleLineNamesCrawlDelay(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	robots := "User-agent: *\nDisallow: /private/\n\nUser-agent: SlowBot\nDisallow: /x/\nCrawl-delay: 30\n"
	e := mustNew(t, Config{}, WithSource(sites.BytesSource([]byte(robots))), WithLogger(zap.New(core)))
	req := Request{Host: "example.com", Target: "/page", UserAgent: "SlowBot/1.0", ClientIP: "198.51.100.7"}
	for range burst {
		e.Decide(context.Background(), req)
	}
	if v := e.Decide(context.Background(), req); v.Action != Throttle || v.CrawlDelayLine != 6 {
		t.Fatalf("request after the burst: %v, Crawl-delay line %d, want throttle, 6", v.Action, v.CrawlDelayLine)
	}
	l := logs.FilterMessage("robots_guard: throttled").All()
	if len(l) == 0 || l[0].ContextMap()["rule_line"] != int64(6) {
		t.Fatalf("throttle lines %v", l)
	}
	x, err := e.Explain(context.Background(), req)
	if err != nil || x.CrawlDelayLine != 6 {
		t.Fatalf("explain: %+v %v", x, err)
	}
}

// The guard's own robots.txt fetch passes a guard that stands in front of
// the server it asks (as in Caddy, where the origin is the whole server),
// redirects included; a client that comes from the fetch's address but
// without its mark is judged as any client.
func TestSelfFetchPassesTheGuard(t *testing.T) {
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.Redirect(w, r, "/rules/robots.txt", http.StatusMovedPermanently)
		case "/rules/robots.txt":
			io.WriteString(w, "User-agent: *\nDisallow: /rules/\nDisallow: /page\n")
		default:
			io.WriteString(w, "ok")
		}
	})
	e := mustNew(t, Config{})
	var internal []string
	var server http.Handler
	server = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := e.DecideHTTP(r, nil, r.RemoteAddr, server)
		if v.Reason == ReasonInternal {
			internal = append(internal, r.URL.Path)
		}
		if v.Enforced() {
			e.Respond(w, r, v)
			return
		}
		origin.ServeHTTP(w, r)
	})
	get := func(peer, path string) int {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = peer
		req.Header.Set("User-Agent", uaAhrefs)
		rec := httptest.NewRecorder()
		server.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := get("192.0.2.1:1234", "/page"); code != 403 {
		t.Fatalf("/page: %d, want 403 from the fetched rules", code)
	}
	if strings.Join(internal, " ") != "/robots.txt /rules/robots.txt" {
		t.Fatalf("passed as internal: %q", internal)
	}
	internal = nil
	if code := get(sites.SelfFetchAddr, "/rules/x"); code != 403 || len(internal) != 0 {
		t.Fatalf("a client from the fetch's address: %d (internal %q), want 403", code, internal)
	}
}

// TestReportCountsEvery403: the refusals of a site's state (here a
// robots.txt that answers 503) are counted in the report as denials, as
// the robots.txt denials are: the dashboard counts every 403 it served.
func TestReportCountsEvery403(t *testing.T) {
	e := mustNew(t, Config{})
	h := serve(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.WriteHeader(503)
			return
		}
		io.WriteString(w, "ok")
	}))
	if rec := do(h, uaGPTBot, "/x"); rec.Code != 403 {
		t.Fatalf("unreachable robots.txt: %d", rec.Code)
	}
	r := e.Report()
	if len(r.Sites) != 1 || len(r.Sites[0].LastHour) != 1 || r.Sites[0].LastHour[0].Denials != 1 {
		t.Fatalf("the report after a 403 for an unreachable robots.txt: %+v", r.Sites)
	}
	if st := e.Sites(); len(st) != 1 || st[0].DryRun {
		t.Errorf("sites: %+v", st)
	}
	dry := mustNew(t, Config{DryRun: true})
	do(serve(dry, site("User-agent: *\nDisallow: /\n")), uaGPTBot, "/x")
	if st := dry.Sites(); len(st) != 1 || !st[0].DryRun {
		t.Errorf("a dry run's sites say so: %+v", st)
	}
}
