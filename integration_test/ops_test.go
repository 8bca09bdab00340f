package integration_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// adminURL is the admin endpoint of caddytest's in-process Caddy.
var adminURL = fmt.Sprintf("http://localhost:%d", adminPort)

func adminDo(t *testing.T, method, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, adminURL+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func adminJSON(t *testing.T, method, path string, v any) {
	t.Helper()
	code, b := adminDo(t, method, path)
	if code != 200 {
		t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s %s: %v in %s", method, path, err, b)
	}
}

// TestReloadAppliesRobotsTxtEdits: a config reload, with the robots_guard
// block unchanged or changed, revalidates every cached robots.txt before
// the next bot request (refresh is an hour here), and keeps the
// Crawl-delay clocks.
func TestReloadAppliesRobotsTxtEdits(t *testing.T) {
	up := newUpstream(t, "User-agent: GPTBot\nDisallow: /old/\n\nUser-agent: SlowBot\nCrawl-delay: 30\n")
	port := freePort(t)
	site := func(opts string) string {
		return fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard {\n\t\trobots_txt {\n\t\t\trefresh 1h\n\t\t}\n%s\t}\n\treverse_proxy %s\n}\n", port, opts, up.addr())
	}
	tc := load(t, "", site(""))
	get(t, tc, port, "/old/x", gptbotUA).check(t, "old rule", 403, "line 2")
	spend(t, tc, port, "/a", "SlowBot/1.0")

	up.set(200, "User-agent: GPTBot\nDisallow: /new/\n\nUser-agent: SlowBot\nCrawl-delay: 30\n")
	get(t, tc, port, "/new/x", gptbotUA).check(t, "before the reload the copy is in force", 200, "page")
	tc = load(t, "", site("")) // same robots_guard block
	get(t, tc, port, "/new/x", gptbotUA).check(t, "first bot request after a reload, same block", 403, "line 2")
	get(t, tc, port, "/old/x", gptbotUA).check(t, "old rule gone", 200, "page")

	up.set(200, "User-agent: GPTBot\nDisallow: /newer/\n\nUser-agent: SlowBot\nCrawl-delay: 30\n")
	tc = load(t, "", site("\t\trobots_txt {\n\t\t\tfetch_timeout 4s\n\t\t}\n")) // a changed block: a new Engine
	get(t, tc, port, "/newer/x", gptbotUA).check(t, "first bot request after a reload, changed block", 403, "line 2")
	get(t, tc, port, "/b", "SlowBot/1.0").check(t, "Crawl-delay clock kept across a changed block", 429, "Crawl-delay")
}

// TestAdminAPI: the admin.api.robots_guard endpoints on a real Caddy admin
// listener.
func TestAdminAPI(t *testing.T) {
	up := newUpstream(t, "User-agent: GPTBot\nDisallow: /private/\n\nUser-agent: SlowBot\nCrawl-delay: 20\n")
	port, other := freePort(t), freePort(t)
	tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d, http://127.0.0.1:%d {\n\trobots_guard {\n\t\trobots_txt {\n\t\t\trefresh 1h\n\t\t}\n\t}\n\treverse_proxy %s\n}\n", port, other, up.addr()))
	get(t, tc, port, "/", "FooBot/1.0").check(t, "first request (a bot: it waits for the fetch) caches the site", 200, "page")
	site := fmt.Sprintf("127.0.0.1:%d", port)

	var sites []map[string]any
	adminJSON(t, "GET", "/robots_guard/sites", &sites)
	found := false
	for _, s := range sites {
		if s["site"] == "http://"+site {
			found = s["outcome"] == "ok" && s["has_rules"] == true
		}
	}
	if !found {
		t.Fatalf("sites: %v", sites)
	}

	var x map[string]any
	adminJSON(t, "GET", "/robots_guard/explain?site="+site+"&ua=GPTBot/1.2&path=/private/a", &x)
	rule, _ := x["rule"].(map[string]any)
	if x["action"] != "deny" || x["status"] != 403.0 || x["group"] != "GPTBot" || rule["line"] != 2.0 || rule["text"] != "Disallow: /private/" {
		t.Fatalf("explain: %v", x)
	}
	if rt, _ := x["robots_txt"].(map[string]any); rt["outcome"] != "ok" || rt["age"] == nil {
		t.Fatalf("explain robots_txt: %v", x["robots_txt"])
	}
	// Explain spends no Crawl-delay budget; a real request does.
	q := "/robots_guard/explain?site=" + site + "&ua=SlowBot/1.0&path=/x&ip=127.0.0.1"
	adminJSON(t, "GET", q, &x)
	if x["action"] != "allow" || x["crawl_delay"] != "20s" {
		t.Fatalf("explain SlowBot before a request: %v", x)
	}
	spend(t, tc, port, "/x", "SlowBot/1.0")
	adminJSON(t, "GET", q, &x)
	if x["action"] != "throttle" || x["status"] != 429.0 {
		t.Fatalf("explain SlowBot after a burst of requests: %v", x)
	}
	// A site not cached yet is fetched through the server that serves it.
	adminJSON(t, "GET", fmt.Sprintf("/robots_guard/explain?site=127.0.0.1:%d&ua=GPTBot&path=/private/", other), &x)
	if x["action"] != "deny" {
		t.Fatalf("explain of an uncached site: %v", x)
	}

	// Refresh applies an edit now.
	up.set(200, "User-agent: GPTBot\nDisallow: /\n")
	var r struct {
		Refreshed []map[string]any `json:"refreshed"`
	}
	adminJSON(t, "POST", "/robots_guard/refresh?site="+site, &r)
	if len(r.Refreshed) != 1 || r.Refreshed[0]["outcome"] != "ok" || r.Refreshed[0]["error"] != nil {
		t.Fatalf("refresh: %v", r)
	}
	get(t, tc, port, "/public", gptbotUA).check(t, "after POST refresh", 403, "line 2")
	adminJSON(t, "POST", "/robots_guard/refresh", &r)
	if len(r.Refreshed) < 2 {
		t.Fatalf("refresh of all sites: %v", r)
	}

	for _, c := range []struct {
		method, path string
		code         int
		has          string
	}{
		{"POST", "/robots_guard/explain?site=x&ua=y", 405, "use GET"},
		{"GET", "/robots_guard/refresh", 405, "use POST"},
		{"GET", "/robots_guard/explain?ua=GPTBot", 400, "site parameter is required"},
		{"GET", "/robots_guard/explain?site=" + site, 400, "ua parameter is required"},
		{"GET", "/robots_guard/explain?site=" + site + "&ua=x&path=nope", 400, "must start with '/'"},
		{"GET", "/robots_guard/explain?site=ftp://x&ua=x", 400, "want host[:port]"},
		{"POST", "/robots_guard/refresh?site=never.example", 404, "no cached robots.txt"},
	} {
		code, b := adminDo(t, c.method, c.path)
		if code != c.code || !strings.Contains(string(b), c.has) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.method, c.path, code, b, c.code, c.has)
		}
	}
}

// TestHandleErrorsKeepsAnswer: a handle_errors block that does not take
// 403 (here: 404 only) leaves the guard's own answer, body included; one
// that restyles 403 and 429 keeps Cache-Control and Retry-After.
func TestHandleErrorsKeepsAnswer(t *testing.T) {
	up := newUpstream(t, siteRobots+"\nUser-agent: SlowBot\nCrawl-delay: 30\n")
	port, styled := freePort(t), freePort(t)
	tc := load(t, "", fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard
	reverse_proxy %s
	handle_errors 404 {
		respond "not found page"
	}
}

http://127.0.0.1:%d {
	robots_guard
	reverse_proxy %s
	handle_errors 403 429 {
		respond "<h1>{err.status_code}</h1><p>{err.message}</p>"
	}
}
`, port, up.addr(), styled, up.addr()))
	a := get(t, tc, port, "/x", gptbotUA)
	a.check(t, "403 beside handle_errors 404", 403, "Disallowed by robots.txt line 2 for GPTBot")
	if a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("403 beside handle_errors 404: Cache-Control %q", a.header.Get("Cache-Control"))
	}
	a = get(t, tc, styled, "/x", gptbotUA)
	a.check(t, "restyled 403", 403, "<h1>403</h1><p>Disallowed by robots.txt line 2 for GPTBot")
	if a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("restyled 403: Cache-Control %q", a.header.Get("Cache-Control"))
	}
	spend(t, tc, styled, "/x", "SlowBot/1.0")
	a = get(t, tc, styled, "/x", "SlowBot/1.0")
	a.check(t, "restyled 429", 429, "<h1>429</h1>")
	if a.header.Get("Cache-Control") != "no-store" || a.header.Get("Retry-After") == "" {
		t.Errorf("restyled 429: Cache-Control %q Retry-After %q", a.header.Get("Cache-Control"), a.header.Get("Retry-After"))
	}
}

// TestHTMLRobotsTxt: an upstream that answers /robots.txt with its HTML
// page (a single-page app) is seen as such: fetch outcome html, no rules.
func TestHTMLRobotsTxt(t *testing.T) {
	spa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><html><body><div id=app></div></body></html>")
	}))
	defer spa.Close()
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard\n\treverse_proxy %s\n}\n", port, strings.TrimPrefix(spa.URL, "http://")))
	get(t, tc, port, "/anything", gptbotUA).check(t, "GPTBot on an SPA without robots.txt", 200, "id=app")
	var sites []map[string]any
	adminJSON(t, "GET", "/robots_guard/sites", &sites)
	for _, s := range sites {
		if s["site"] == fmt.Sprintf("http://127.0.0.1:%d", port) {
			if s["outcome"] != "html" || s["has_rules"] != false {
				t.Fatalf("site %v", s)
			}
			return
		}
	}
	t.Fatalf("site not listed: %v", sites)
}

// TestAccessLog: the self-fetch shows in Caddy's access log as a request
// for /robots.txt from 127.0.0.1, and log_append puts the decision into
// the bot's access log line, as docs/configuration.md shows.
func TestAccessLog(t *testing.T) {
	up := newUpstream(t, siteRobots)
	port := freePort(t)
	logFile := t.TempDir() + "/access.log"
	tc := load(t, "", fmt.Sprintf(`http://127.0.0.1:%d {
	log {
		output file %s
		format json
	}
	log_append robots_guard_group {http.robots_guard.group}
	log_append robots_guard_action {http.robots_guard.action}
	log_append robots_guard_rule {http.robots_guard.rule}
	robots_guard
	reverse_proxy %s
}
`, port, logFile, up.addr()))
	get(t, tc, port, "/blog/post", gptbotUA).check(t, "GPTBot", 403, "line 2")
	var self, bot map[string]any
	deadline := time.Now().Add(5 * time.Second)
	for (self == nil || bot == nil) && time.Now().Before(deadline) {
		b, _ := os.ReadFile(logFile)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) != nil {
				continue
			}
			req, _ := m["request"].(map[string]any)
			switch req["uri"] {
			case "/robots.txt":
				self = m
			case "/blog/post":
				bot = m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if self == nil || bot == nil {
		b, _ := os.ReadFile(logFile)
		t.Fatalf("access log lacks the self-fetch or the bot request:\n%s", b)
	}
	req := self["request"].(map[string]any)
	if req["remote_ip"] != "127.0.0.1" || req["uri"] != "/robots.txt" {
		t.Errorf("self-fetch logged as %v", req)
	}
	if h, _ := req["headers"].(map[string]any); h == nil || fmt.Sprint(h["User-Agent"]) != "[robotsguard (robots.txt self-fetch)]" {
		t.Errorf("self-fetch headers %v", req["headers"])
	}
	if bot["robots_guard_group"] != "GPTBot" || bot["robots_guard_action"] != "deny" || bot["robots_guard_rule"] != "2: Disallow: /" || bot["status"] != 403.0 {
		t.Errorf("bot line: group %v action %v rule %v status %v", bot["robots_guard_group"], bot["robots_guard_action"], bot["robots_guard_rule"], bot["status"])
	}
}

// TestForcedReloadOfSameConfig: "caddy reload --force" with a
// byte-identical configuration (Caddy reprovisions it) applies a
// robots.txt edit at once. A plain reload of an unchanged config is
// skipped by Caddy itself.
func TestForcedReloadOfSameConfig(t *testing.T) {
	up := newUpstream(t, "User-agent: GPTBot\nDisallow: /old/\n")
	port := freePort(t)
	storage := storageDir(t)
	cfg := fmt.Sprintf("{\n\tadmin localhost:%d\n\tpersist_config off\n\tstorage file_system %s\n}\nhttp://127.0.0.1:%d {\n\trobots_guard {\n\t\trobots_txt {\n\t\t\trefresh 1h\n\t\t}\n\t}\n\treverse_proxy %s\n}\n", adminPort, storage, port, up.addr())
	tc := newTester(t)
	tc.InitServer(cfg, "caddyfile")
	get(t, tc, port, "/old/x", gptbotUA).check(t, "old rule", 403, "line 2")
	up.set(200, "User-agent: GPTBot\nDisallow: /new/\n")
	req, _ := http.NewRequest("POST", adminURL+"/load", strings.NewReader(cfg))
	req.Header.Set("Content-Type", "text/caddyfile")
	req.Header.Set("Cache-Control", "must-revalidate") // what caddy reload --force sends
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("forced reload: %d %s", resp.StatusCode, b)
	}
	get(t, tc, port, "/new/x", gptbotUA).check(t, "after a forced reload of the same config", 403, "line 2")
}

// TestReloadRefetchesRightAway: after a reload the robots.txt of every
// cached site is fetched again at once, without waiting for a request.
func TestReloadRefetchesRightAway(t *testing.T) {
	var fetches atomic.Int32
	up := newUpstream(t, "User-agent: GPTBot\nDisallow: /\n")
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fetches.Add(1)
		}
		up.Config.Handler.ServeHTTP(w, r)
	}))
	defer counting.Close()
	port := freePort(t)
	site := fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard {\n\t\trobots_txt {\n\t\t\trefresh 1h\n\t\t}\n\t}\n\treverse_proxy %s\n}\n", port, strings.TrimPrefix(counting.URL, "http://"))
	tc := load(t, "", site)
	get(t, tc, port, "/", "FooBot/1.0").check(t, "first request (a bot: it waits for the fetch)", 200, "page")
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches before the reload", n)
	}
	load(t, "", site)
	deadline := time.Now().Add(5 * time.Second)
	for fetches.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("robots.txt not fetched again within 5 s of the reload, with no request")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTwoGuardsOneRequest: a request that passes two robots_guard handlers
// spends its Crawl-delay budget once.
func TestTwoGuardsOneRequest(t *testing.T) {
	up := newUpstream(t, "User-agent: SlowBot\nCrawl-delay: 30\n")
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard
	route {
		robots_guard {
			robots_txt {
				fetch_timeout 4s
			}
		}
		reverse_proxy %s
	}
}
`, port, up.addr()))
	spend(t, tc, port, "/a", "SlowBot/1.0") // each spends one request, not two
	get(t, tc, port, "/b", "SlowBot/1.0").check(t, "the request after the burst", 429, "Crawl-delay")
}

// TestProblemsBeforeTheFirstBot: as soon as a configuration runs, the
// robots.txt of every site written in it is fetched, so an unreachable, an
// HTML and an empty robots.txt are each logged (WARN) within 2 s, before
// any request, and /robots_guard/sites lists every site.
func TestProblemsBeforeTheFirstBot(t *testing.T) {
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><html><body>Welcome</body></html>")
	}))
	defer html.Close()
	empty := newUpstream(t, "")
	closed := freePort(t)
	pHTML, pEmpty, pClosed, pOK := freePort(t), freePort(t), freePort(t), freePort(t)
	ok := newUpstream(t, "User-agent: *\nDisallow: /private/\n")
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	load(t, "log {\n\t\toutput file "+filepath.ToSlash(logFile)+"\n\t\tlevel INFO\n\t}", fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard
	reverse_proxy %s
}
http://127.0.0.1:%d {
	robots_guard
	reverse_proxy %s
}
http://127.0.0.1:%d {
	robots_guard {
		robots_txt http://127.0.0.1:%d/robots.txt
	}
	reverse_proxy %s
}
http://127.0.0.1:%d {
	robots_guard
	reverse_proxy %s
}
`, pHTML, strings.TrimPrefix(html.URL, "http://"), pEmpty, empty.addr(), pClosed, closed, ok.addr(), pOK, ok.addr()))
	start := time.Now() // the configuration runs
	want := map[string]string{
		"robots.txt is an HTML page":           fmt.Sprintf("http://127.0.0.1:%d", pHTML),
		"an empty robots.txt":                  fmt.Sprintf("http://127.0.0.1:%d", pEmpty),
		"robots_guard: robots.txt unreachable": fmt.Sprintf("http://127.0.0.1:%d", pClosed),
	}
	for {
		logs, _ := os.ReadFile(logFile)
		found := 0
		for msg, site := range want {
			for line := range strings.Lines(string(logs)) {
				if strings.Contains(line, msg) && strings.Contains(line, `"level":"warn"`) && strings.Contains(line, `"site":"`+site+`"`) {
					found++
					break
				}
			}
		}
		if found == len(want) {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("after 2 s, not every warning is logged (want %v):\n%s", want, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("all three warnings logged within %v of the load, before any request", time.Since(start).Round(time.Millisecond))
	// Sites of earlier configurations (earlier tests) that no server
	// serves any more are not fetched again at the load.
	if logs, _ := os.ReadFile(logFile); strings.Contains(string(logs), "no origin handler") {
		t.Errorf("a reload fetched sites no server serves:\n%s", logs)
	}
	wantSites := map[int]string{pHTML: "html", pEmpty: "ok", pClosed: "unreachable", pOK: "ok"}
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var list []map[string]any
		adminJSON(t, "GET", "/robots_guard/sites", &list)
		seen := map[string]string{}
		for _, s := range list {
			seen[s["site"].(string)], _ = s["outcome"].(string)
		}
		bad := ""
		for site, outcome := range wantSites {
			if got := seen[fmt.Sprintf("http://127.0.0.1:%d", site)]; got != outcome {
				bad += fmt.Sprintf("port %d: outcome %q, want %q; ", site, got, outcome)
			}
		}
		if bad == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/robots_guard/sites, before any request: %s(%v)", bad, list)
		}
	}
}

// TestExplainAnswersAsTheRequestWouldBe: with three robots_guard blocks on
// three ports (one in dry run, one that allows the path), explain answers
// each site with its own block's verdict, as a real request gets it; a
// port no server listens on and a host no route leads to a guard for are
// errors, and leave no cache entry behind.
func TestExplainAnswersAsTheRequestWouldBe(t *testing.T) {
	up := newUpstream(t, "User-agent: BadBot\nDisallow: /\n")
	other := newUpstream(t, "User-agent: *\nAllow: /\n")
	pEnforced, pDry, pOther, pNamed := freePort(t), freePort(t), freePort(t), freePort(t)
	tc := load(t, "", fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard
	reverse_proxy %s
}
http://127.0.0.1:%d {
	robots_guard {
		dry_run
	}
	reverse_proxy %s
}
http://127.0.0.1:%d {
	robots_guard {
		robots_txt {
			refresh 2m
		}
	}
	reverse_proxy %s
}
http://named.test:%d {
	robots_guard
	reverse_proxy %s
}
`, pEnforced, up.addr(), pDry, up.addr(), pOther, other.addr(), pNamed, up.addr()))
	explain := func(site string) (int, map[string]any) {
		t.Helper()
		code, b := adminDo(t, "GET", "/robots_guard/explain?site="+site+"&ua=BadBot/1.0&path=/index.html")
		var x map[string]any
		json.Unmarshal(b, &x)
		return code, x
	}
	for _, c := range []struct {
		port   int
		action string
		real   int
	}{{pEnforced, "deny", 403}, {pDry, "dry_run_deny", 200}, {pOther, "allow", 200}} {
		site := fmt.Sprintf("127.0.0.1:%d", c.port)
		// Asked twice, before and after a real request: the same answer.
		for range 2 {
			if code, x := explain(site); code != 200 || x["action"] != c.action {
				t.Errorf("explain %s: %d %v, want %s", site, code, x, c.action)
			}
		}
		get(t, tc, c.port, "/index.html", "BadBot/1.0").check(t, "a real request to "+site, c.real, "")
		if code, x := explain(site); code != 200 || x["action"] != c.action {
			t.Errorf("explain %s after a request: %d %v, want %s", site, code, x, c.action)
		}
	}
	// The named site is fetched at the load, in the background: wait for it.
	named := fmt.Sprintf("http://named.test:%d", pNamed)
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var list []map[string]any
		adminJSON(t, "GET", "/robots_guard/sites", &list)
		if slices.ContainsFunc(list, func(s map[string]any) bool { return s["site"] == named }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not fetched at the load: %v", named, list)
		}
	}
	before := countSites(t)
	closed := freePort(t)
	if code, _ := adminDo(t, "GET", fmt.Sprintf("/robots_guard/explain?site=127.0.0.1:%d&ua=BadBot&path=/", closed)); code != http.StatusNotFound {
		t.Errorf("explain for a port no server listens on: %d, want 404", code)
	}
	if code, _ := adminDo(t, "GET", fmt.Sprintf("/robots_guard/explain?site=unknown.test:%d&ua=BadBot&path=/", pNamed)); code != http.StatusNotFound {
		t.Errorf("explain for a host no route of that port leads to a guard for: %d, want 404", code)
	}
	if code, x := explain(fmt.Sprintf("named.test:%d", pNamed)); code != 200 || x["action"] != "deny" {
		t.Errorf("explain for the named site: %d %v", code, x)
	}
	if after := countSites(t); after != before {
		t.Errorf("%d cached sites before the explains, %d after: an explain made a cache entry (the named site was fetched at the load)", before, after)
	}
}

// countSites is the number of sites /robots_guard/sites lists.
func countSites(t *testing.T) int {
	var list []map[string]any
	adminJSON(t, "GET", "/robots_guard/sites", &list)
	return len(list)
}

// TestMetricsPerSite: requests_total has a site label, so an enforced
// block and a dry-run block are told apart; a host the configuration does
// not name counts as _other.
func TestMetricsPerSite(t *testing.T) {
	up := newUpstream(t, "User-agent: BadBot\nDisallow: /\n")
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf("http://enforced.test:%[1]d {\n\trobots_guard\n\treverse_proxy %[2]s\n}\nhttp://dry.test:%[1]d {\n\trobots_guard {\n\t\tdry_run\n\t}\n\treverse_proxy %[2]s\n}\nhttp://:%[1]d {\n\trobots_guard\n\treverse_proxy %[2]s\n}\n", port, up.addr()))
	send := func(host string) int {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/x", port), nil)
		req.Host = host
		req.Header.Set("User-Agent", "BadBot/1.0")
		resp, err := tc.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		host string
		code int
	}{{"enforced.test", 403}, {"dry.test", 200}, {"random.test", 403}} {
		if got := send(c.host); got != c.code {
			t.Errorf("%s: %d, want %d", c.host, got, c.code)
		}
	}
	_, b := adminDo(t, "GET", "/metrics")
	for _, want := range []string{
		fmt.Sprintf(`action="deny",group="BadBot",reason="disallowed",site="http://enforced.test:%d"`, port),
		fmt.Sprintf(`action="dry_run_deny",group="BadBot",reason="disallowed",site="http://dry.test:%d"`, port),
		`action="deny",group="BadBot",reason="disallowed",site="_other"`,
	} {
		found := false
		for line := range strings.Lines(string(b)) {
			if strings.HasPrefix(line, "caddy_robots_guard_requests_total{") && strings.Contains(line, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no requests_total series with %s", want)
		}
	}
}
