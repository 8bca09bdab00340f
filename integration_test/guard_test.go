// Package integration_test runs robots_guard in a real Caddy (in-process,
// through caddytest, with the admin API on a free localhost port) in front of real
// upstream servers, and runs the cmd/caddy binary with Caddyfile.example.
// Everything listens on loopback only.
package integration_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddytest"

	_ "github.com/robotsguard/robotsguard/caddymodule"
	"github.com/robotsguard/robotsguard/internal/testport"
	"github.com/robotsguard/robotsguard/limit"
)

const (
	browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	gptbotUA  = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
)

// browserHeaders sets on h the headers that real browsers send on every
// request, beside their User-Agent: Accept-Language (every browser, any
// scheme), and the Sec-CH-UA client hint and Sec-Fetch-Mode fetch metadata
// that Chrome (and Firefox, fetch metadata) send to secure origins. Without
// them a request whose User-Agent names a browser is an undeclared bot
// (issue 47, classify.UndeclaredRules), judged by the "*" group; the tests'
// simulated browsers send them so that they stay browsers (real Chromium,
// in the chromedp tests, sends its own). A bot is a bot whatever it sends,
// and over http nothing reads the last two, so they are set on every
// request.
func browserHeaders(h http.Header) {
	for _, f := range browserFields {
		h.Set(f[0], f[1])
	}
}

// browserFields are the headers browserHeaders sets, as name and value.
var browserFields = [][2]string{
	{"Accept-Language", "en-US,en;q=0.9"},
	{"Sec-CH-UA", `"Chromium";v="137", "Not/A)Brand";v="24"`},
	{"Sec-Fetch-Mode", "navigate"},
}

// browserHeaderLines are browserHeaders as raw header lines, for the
// tests that write a request's bytes themselves.
const browserHeaderLines = "Accept-Language: en-US,en;q=0.9\r\n" +
	"Sec-CH-UA: \"Chromium\";v=\"137\", \"Not/A)Brand\";v=\"24\"\r\n" +
	"Sec-Fetch-Mode: navigate\r\n"

// upstream is a real HTTP server behind reverse_proxy: it serves a
// robots.txt that tests can change, and a page for every other path.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	robots string
	status int
}

func newUpstream(t *testing.T, robots string) *upstream {
	u := &upstream{robots: robots, status: http.StatusOK}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			u.mu.Lock()
			status, body := u.status, u.robots
			u.mu.Unlock()
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
		fmt.Fprintf(w, "page %s", r.URL.Path)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) set(status int, robots string) {
	u.mu.Lock()
	u.status, u.robots = status, robots
	u.mu.Unlock()
}

func (u *upstream) addr() string { return strings.TrimPrefix(u.URL, "http://") }

// freePort returns a loopback port that was free a moment ago. Each test
// uses new ports, so that no robots.txt cached by an earlier test applies.
func freePort(t *testing.T) int { return testport.Free(t) }

// load starts (or reconfigures) the in-process Caddy with the given site
// blocks and extra global options.
func load(t *testing.T, globals, sites string) *caddytest.Tester {
	t.Helper()
	return loadWithStorage(t, storageDir(t), globals, sites)
}

// storageDir is a directory for Caddy's storage, removed when the test
// ends. Not t.TempDir: the in-process Caddy keeps running after the test,
// and its background work (the robots.txt fetch of every configured site
// when a configuration starts, which stores trap clocks) may write there
// while the directory is removed, which t.TempDir reports as a failure (CI
// saw "directory not empty"). The sites are stopped first, and removal is
// retried for a second.
func storageDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "robotsguard-caddy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Stop the in-process Caddy's sites first, keeping its admin
		// endpoint for the next test: their guards' background writes
		// (robots.txt histories, trap clocks) would make the directory
		// again after its removal, and leave it behind.
		if err := caddy.Load([]byte(fmt.Sprintf(`{"admin":{"listen":"localhost:%d"}}`, adminPort)), true); err != nil {
			t.Logf("stopping the sites before removing %s: %v", dir, err)
		}
		for range 20 {
			if os.RemoveAll(dir) == nil {
				if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("storage %s not removed", dir)
	})
	return dir
}

// loadWithStorage is load with Caddy's storage in dir, for tests that
// reload with the same storage.
func loadWithStorage(t *testing.T, dir, globals, sites string) *caddytest.Tester {
	t.Helper()
	tc := newTester(t)
	tc.InitServer(fmt.Sprintf(`{
	admin localhost:%d
	persist_config off
	storage file_system %s
	%s
}
%s`, adminPort, filepath.ToSlash(dir), globals, sites), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return tc
}

// adminPort is the admin API port of the in-process Caddy the tests
// load configurations into: a free one, chosen once per test process, so
// that the tests run beside another Caddy (or another test run) on the
// usual ports (2019, caddytest's 2999).
var adminPort = func() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return caddytest.Default.AdminPort
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}()

// newTester is caddytest.NewTester with adminPort.
func newTester(t *testing.T) *caddytest.Tester {
	return caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{AdminPort: adminPort})
}

type answer struct {
	status int
	body   string
	header http.Header
}

// get sends GET path to the Caddy site on port with the User-Agent and
// extra headers (name, value, ...).
func get(t *testing.T, tc *caddytest.Tester, port int, path, ua string, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", ua)
	browserHeaders(req.Header)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := tc.Client.Do(req)
	if err != nil && closedUnanswered(err) {
		// A Caddy reload hands the shared listener to the new server and
		// shuts the old one down; a connection the old server accepted in
		// that instant is closed unanswered (CI saw it once, right after a
		// load). No handler ran, so sending again is what a client does.
		t.Logf("GET %s: %v; sending it again", path, err)
		resp, err = tc.Client.Do(req)
	}
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

// burst is how many requests of one bot the default crawl_delay_tolerance
// (limit.DefaultTolerance, 2.5 delays) admits at once; the next one within
// the Crawl-delay is answered 429.
var burst = 1 + int(math.Floor(limit.DefaultTolerance))

// spend sends burst requests at once, as get does, and fails unless each
// is answered 200.
func spend(t *testing.T, tc *caddytest.Tester, port int, path, ua string, headers ...string) {
	t.Helper()
	for i := range burst {
		get(t, tc, port, path, ua, headers...).check(t, fmt.Sprintf("%s %s, request %d of the burst of %d", ua, path, i+1, burst), 200, "")
	}
}

// closedUnanswered reports whether err is a connection closed before any
// answer: EOF or a reset.
func closedUnanswered(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

func (a answer) check(t *testing.T, what string, status int, bodyHas string) {
	t.Helper()
	if a.status != status || !strings.Contains(a.body, bodyHas) {
		t.Errorf("%s: %d %q, want %d with %q", what, a.status, a.body, status, bodyHas)
	}
}

const siteRobots = `User-agent: GPTBot
Disallow: /

User-agent: FooBot
Allow: /

User-agent: *
Disallow: /private/
`

func TestEnforcement(t *testing.T) {
	up := newUpstream(t, siteRobots)
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard\n\treverse_proxy %s\n}\n", port, up.addr()))
	for _, row := range []struct {
		name, ua, path string
		status         int
		bodyHas        string
	}{
		{"browser passes a path * disallows", browserUA, "/private/report", 200, "page /private/report"},
		{"GPTBot gets 403 with the line", gptbotUA, "/blog/post", 403, "Disallowed by robots.txt line 2 for GPTBot"},
		{"a bot's own group overrides *", "FooBot/2.0 (+https://foo.example)", "/private/report", 200, "page /private/report"},
		{"other bots follow *", "OtherBot/1.0", "/private/report", 403, "line 8 for *"},
		{"other bots elsewhere", "OtherBot/1.0", "/public", 200, "page /public"},
		{"robots.txt for a fully banned bot", gptbotUA, "/robots.txt", 200, "User-agent: GPTBot"},
		{"robots.txt with a query", gptbotUA, "/robots.txt?x=1", 200, "Disallow"},
		{"encoded path does not get past the rule", "OtherBot/1.0", "/%70rivate/report", 403, "line 8"},
		{"dot-segments do not get past the rule", "OtherBot/1.0", "/public/../private/report", 403, "line 8"},
	} {
		t.Run(row.name, func(t *testing.T) {
			get(t, tc, port, row.path, row.ua).check(t, row.ua+" "+row.path, row.status, row.bodyHas)
		})
	}
}

func TestCrawlDelay(t *testing.T) {
	up := newUpstream(t, "User-agent: SlowBot\nCrawl-delay: 1\nDisallow: /private/\n")
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard\n\treverse_proxy %s\n}\n", port, up.addr()))
	// Crawl-delay 1 s, tolerance 2.5 delays: three requests at once pass,
	// the fourth waits 3 s - 2.5 s (Retry-After 1).
	spend(t, tc, port, "/a", "SlowBot/1.0")
	a := get(t, tc, port, "/b", "SlowBot/1.0")
	a.check(t, "after the burst, at once", 429, "Crawl-delay of robots.txt for SlowBot exceeded")
	if got := a.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	// A disallowed path answers 403 and does not spend the budget.
	get(t, tc, port, "/private/x", "SlowBot/1.0").check(t, "disallowed path", 403, "Disallowed")
	time.Sleep(1100 * time.Millisecond)
	get(t, tc, port, "/c", "SlowBot/1.0").check(t, "after the wait", 200, "page /c")
	get(t, tc, port, "/d", "SlowBot/1.0").check(t, "at once after one admitted at the wait's end", 429, "Crawl-delay")
	// Browsers are never throttled.
	for i := 0; i < 3; i++ {
		get(t, tc, port, "/c", browserUA).check(t, "browser", 200, "page /c")
	}
}

func TestRobotsTxtStatus(t *testing.T) {
	for _, row := range []struct {
		name          string
		status        int
		bot, browser  int
		botBodyHas    string
		onUnreachable string
	}{
		{"404 allows everything", 404, 200, 200, "page", ""},
		{"500 disallows bots", 500, 403, 200, "unreachable", ""},
		{"500 with on_unreachable allow", 500, 200, 200, "page", "allow"},
	} {
		t.Run(row.name, func(t *testing.T) {
			up := newUpstream(t, "User-agent: *\nDisallow: /\n")
			up.set(row.status, "error page")
			port := freePort(t)
			block := "robots_guard"
			if row.onUnreachable != "" {
				block = "robots_guard {\n\t\trobots_txt {\n\t\t\ton_unreachable " + row.onUnreachable + "\n\t\t}\n\t}"
			}
			tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d {\n\t%s\n\treverse_proxy %s\n}\n", port, block, up.addr()))
			get(t, tc, port, "/x", gptbotUA).check(t, "bot", row.bot, row.botBodyHas)
			get(t, tc, port, "/x", browserUA).check(t, "browser", row.browser, "page /x")
		})
	}
}

func TestRefreshPicksUpEdits(t *testing.T) {
	up := newUpstream(t, "User-agent: GPTBot\nDisallow: /old/\n")
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard {\n\t\trobots_txt {\n\t\t\trefresh 1s\n\t\t}\n\t}\n\treverse_proxy %s\n}\n", port, up.addr()))
	get(t, tc, port, "/old/x", gptbotUA).check(t, "old rule", 403, "line 2")
	get(t, tc, port, "/new/x", gptbotUA).check(t, "new path before the edit", 200, "page")
	up.set(200, "User-agent: GPTBot\nDisallow: /new/\n")
	deadline := time.Now().Add(6 * time.Second)
	for {
		a := get(t, tc, port, "/new/x", gptbotUA)
		if a.status == 403 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("robots.txt edit not picked up within 6 s (refresh 1s): %d %q", a.status, a.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	get(t, tc, port, "/old/x", gptbotUA).check(t, "old rule after the edit", 200, "page")
}

func TestReloadKeepsCrawlDelayClock(t *testing.T) {
	up := newUpstream(t, "User-agent: SlowBot\nCrawl-delay: 30\n")
	port, other := freePort(t), freePort(t)
	site := fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard\n\treverse_proxy %s\n}\n", port, up.addr())
	tc := load(t, "", site)
	spend(t, tc, port, "/a", "SlowBot/1.0")
	// A reload that leaves the robots_guard block alone keeps its state.
	tc = load(t, "", site+fmt.Sprintf("http://127.0.0.1:%d {\n\trespond \"other site\"\n}\n", other))
	get(t, tc, other, "/", browserUA).check(t, "the new site is live", 200, "other site")
	a := get(t, tc, port, "/b", "SlowBot/1.0")
	a.check(t, "after the reload", 429, "Crawl-delay")
	if n, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || n < 1 || n > 30 {
		t.Errorf("Retry-After %q, want 1 to 30", a.header.Get("Retry-After"))
	}
}

func TestTrustedProxiesKeyTheRightClient(t *testing.T) {
	up := newUpstream(t, "User-agent: SlowBot\nCrawl-delay: 30\n")
	port := freePort(t)
	tc := load(t, "servers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t\tclient_ip_headers X-Forwarded-For\n\t}",
		fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard\n\treverse_proxy %s\n}\n", port, up.addr()))
	spend(t, tc, port, "/a", "SlowBot/1.0", "X-Forwarded-For", "203.0.113.7")
	get(t, tc, port, "/a", "SlowBot/1.0", "X-Forwarded-For", "203.0.113.7").check(t, "client A, after its burst", 429, "Crawl-delay")
	get(t, tc, port, "/a", "SlowBot/1.0", "X-Forwarded-For", "198.51.100.9").check(t, "client B behind the same proxy", 200, "page")
}

func TestDryRun(t *testing.T) {
	up := newUpstream(t, siteRobots)
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard {\n\t\tdry_run\n\t}\n\treverse_proxy %s\n}\n", port, up.addr()))
	get(t, tc, port, "/blog/post", gptbotUA).check(t, "GPTBot in dry run", 200, "page /blog/post")
}

func TestHandleErrorsRestyles(t *testing.T) {
	up := newUpstream(t, siteRobots+"\nUser-agent: SlowBot\nCrawl-delay: 30\n")
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard
	reverse_proxy %s
	handle_errors {
		respond "custom {err.status_code} for {http.robots_guard.group} ({http.robots_guard.action}, {http.robots_guard.rule})"
	}
}
`, port, up.addr()))
	get(t, tc, port, "/blog/post", gptbotUA).check(t, "GPTBot", 403, "custom 403 for GPTBot (deny, 2: Disallow: /)")
	spend(t, tc, port, "/x", "SlowBot/1.0")
	a := get(t, tc, port, "/x", "SlowBot/1.0")
	a.check(t, "SlowBot throttled", 429, "custom 429 for SlowBot (throttle")
	if a.header.Get("Retry-After") == "" {
		t.Error("a restyled 429 lost its Retry-After header")
	}
}

func TestFileServerAndRespondSites(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{
		"robots.txt":      "User-agent: GPTBot\nDisallow: /docs/\n",
		"index.html":      "home",
		"docs/guide.html": "guide",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, resp := freePort(t), freePort(t)
	tc := load(t, "", fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard
	root * %s
	file_server
}

http://127.0.0.1:%d {
	robots_guard
	respond /robots.txt "User-agent: *
Disallow: /x
"
	respond "ok"
}
`, files, filepath.ToSlash(root), resp))
	get(t, tc, files, "/docs/guide.html", gptbotUA).check(t, "file_server, GPTBot", 403, "line 2 for GPTBot")
	get(t, tc, files, "/docs/guide.html", browserUA).check(t, "file_server, browser", 200, "guide")
	get(t, tc, files, "/", gptbotUA).check(t, "file_server, GPTBot home", 200, "home")
	get(t, tc, resp, "/x/y", "AnyBot/1.0").check(t, "respond, bot", 403, "line 2 for *")
	get(t, tc, resp, "/y", "AnyBot/1.0").check(t, "respond, bot elsewhere", 200, "ok")
	get(t, tc, resp, "/x/y", browserUA).check(t, "respond, browser", 200, "ok")
}

// TestOriginalURIIsJudged: inside a route, a rewrite may run before
// robots_guard; the rules still apply to the URI the client sent.
func TestOriginalURIIsJudged(t *testing.T) {
	up := newUpstream(t, "User-agent: *\nDisallow: /private/\n")
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf(`http://127.0.0.1:%d {
	route {
		rewrite /public/* /private/from-public
		robots_guard
		reverse_proxy %s
	}
}
`, port, up.addr()))
	get(t, tc, port, "/public/a", "AnyBot/1.0").check(t, "allowed URI rewritten to a disallowed one", 200, "page /private/from-public")
	get(t, tc, port, "/private/a", "AnyBot/1.0").check(t, "disallowed URI as sent", 403, "line 2 for *")
}
