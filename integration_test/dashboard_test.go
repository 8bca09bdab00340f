package integration_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"
)

const dashRobots = `User-agent: *
Disallow: /private/
Disallow: /no-robots/

User-agent: GPTBot
Disallow: /

User-agent: SlowBot
Disallow: /no-robots/
Crawl-delay: 30
`

// TestDashboardInBrowser: a Caddy with robots_guard in front of a real
// upstream gets traffic of every kind (allowed, denied, throttled,
// unverifiable claims, a trap and a ban); its dashboard, mounted behind
// basic_auth with robots_guard_dashboard, is loaded in headless Chromium
// and must show what /robots_guard/report says at the same moment, the
// top offender with its verdict, the tester's deciding line highlighted,
// and a ban that an Unban click lifts; with no console error and no
// request to anything but the dashboard itself. A screenshot of each page
// is written to $ROBOTSGUARD_SCREENSHOTS (default: a temporary directory,
// logged).
func TestDashboardInBrowser(t *testing.T) {
	chrome := chromium(t)
	up := newUpstream(t, dashRobots)
	port, dashPort := freePort(t), freePort(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	tc := load(t, "servers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t\tclient_ip_headers X-Forwarded-For\n\t}", fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard {
		traps /no-robots/ {
			links static
			grace 0
		}
	}
	reverse_proxy %s
}

http://127.0.0.1:%d {
	basic_auth {
		ops %s
	}
	robots_guard_dashboard {
		title "robots_guard test"
	}
}
`, port, up.addr(), dashPort, hash))
	site := fmt.Sprintf("http://127.0.0.1:%d", port)
	xff := func(ip string) []string { return []string{"X-Forwarded-For", ip} }

	// Traffic of every kind.
	get(t, tc, port, "/", "FooBot/1.0", xff("192.0.2.1")...).check(t, "FooBot", 200, "page")
	for i := range 6 {
		get(t, tc, port, fmt.Sprintf("/blog/%d", i), gptbotUA, xff("192.0.2.66")...).check(t, "GPTBot", 403, "Disallowed")
	}
	get(t, tc, port, "/private/x", "FooBot/1.0", xff("192.0.2.2")...).check(t, "FooBot private", 403, "Disallowed")
	spend(t, tc, port, "/a", "SlowBot/1.0", xff("192.0.2.3")...)
	get(t, tc, port, "/a", "SlowBot/1.0", xff("192.0.2.3")...).check(t, "SlowBot throttled", 429, "Crawl-delay")
	googlebot := "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	get(t, tc, port, "/page", googlebot, xff("192.0.2.4")...).check(t, "unverifiable Googlebot", 200, "page")
	get(t, tc, port, "/no-robots/x", browserUA, xff("198.51.100.7")...).check(t, "the trap", 403, "banned until")
	get(t, tc, port, "/page", browserUA, xff("198.51.100.7")...).check(t, "banned", 403, "ignoring")

	shots := os.Getenv("ROBOTSGUARD_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "robotsguard-screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	page := openPage(t, chrome, 1280, 1000, 2*time.Minute)
	ctx := page.ctx
	dash := fmt.Sprintf("http://127.0.0.1:%d/", dashPort)
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:s3cret"))
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		must("screenshot "+name, err)
		p := filepath.Join(shots, name)
		must("screenshot "+name, os.WriteFile(p, png, 0o644))
		t.Logf("screenshot: %s", p)
	}
	_, err = chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}})
	must("headers", err)

	// The overview: the site's last-hour counts are the report's.
	must("overview", chromedp.Do(ctx, chromedp.Navigate(dash), chromedp.WaitVisible(chromedp.ID("sites"))))
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](fmt.Sprintf(
		`Object.fromEntries(Array.from(document.querySelectorAll('#sites tr[data-site=%q] td[data-k]')).map(td => [td.dataset.k, td.textContent]))`, site)))
	must("overview cells", err)
	shot("dashboard-overview.png")
	var rep struct {
		Sites []struct {
			Site     string
			LastHour []struct {
				Client, Group, Verification       string
				Denials, Throttles, Traps, Banned int64
			} `json:"last_hour"`
			Traffic struct {
				LastHour []map[string]any `json:"last_hour"`
			}
		}
	}
	adminJSON(t, "GET", "/robots_guard/report", &rep)
	sr := -1
	for i, s := range rep.Sites {
		if s.Site == site {
			sr = i
		}
	}
	if sr < 0 {
		t.Fatalf("the report has no %s: %+v", site, rep)
	}
	want := map[string]int64{}
	for _, sl := range rep.Sites[sr].Traffic.LastHour {
		for _, k := range []string{"allowed", "denied", "throttled", "trapped", "banned"} {
			for _, n := range sl[k].(map[string]any) {
				want[k] += int64(n.(float64))
			}
		}
	}
	for k, n := range want {
		if got := strings.ReplaceAll(cells[k], ",", ""); got != strconv.FormatInt(n, 10) {
			t.Errorf("overview %s: the page says %q, the report %d", k, cells[k], n)
		}
	}
	if want["allowed"] < 4 || want["denied"] != 7 || want["throttled"] != 1 || want["trapped"] != 1 || want["banned"] != 1 {
		t.Errorf("the report's last hour: %v", want)
	}

	// The site page: the top offender, as the report has it.
	must("site page", chromedp.Do(ctx, chromedp.Navigate(dash+"?"+url.Values{"site": {site}}.Encode()), chromedp.WaitVisible(chromedp.ID("last-hour"))))
	top, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#last-hour tbody tr:first-child td')).map(td => td.textContent)`))
	must("top offender", err)
	shot("dashboard-site.png")
	first := rep.Sites[sr].LastHour[0]
	if len(top) < 4 || top[0] != first.Client || top[1] != first.Group || top[2] != first.Verification || top[3] != strconv.FormatInt(first.Denials, 10) {
		t.Errorf("top offender on the page %q, in the report %+v", top, first)
	}
	if len(top) < 2 || top[0] != "192.0.2.66/32" || top[1] != "GPTBot" {
		t.Errorf("top offender %q, want GPTBot's 192.0.2.66/32", top)
	}

	// The tester: GPTBot on /blog/x is denied by line 6, highlighted.
	must("tester", chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("ua"), gptbotUA), chromedp.SetValue(chromedp.ID("path"), "/blog/x"),
		chromedp.Click(chromedp.CSS("form.tester button")), chromedp.WaitVisible(chromedp.ID("verdict"))))
	decides, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("tr.decides")))
	must("highlighted line", err)
	verdict, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("verdict")))
	must("verdict", err)
	shot("dashboard-tester.png")
	if !strings.HasPrefix(strings.TrimSpace(decides), "6") || !strings.Contains(decides, "Disallow: /") || !strings.Contains(verdict, "deny") {
		t.Errorf("tester: highlighted line %q, verdict %q", decides, verdict)
	}

	// A ban that disappears after Unban.
	const banRow = `!!document.querySelector('tr[data-client="198.51.100.7/32"]')`
	must("bans", chromedp.Do(ctx, chromedp.Navigate(dash), chromedp.WaitVisible(chromedp.ID("bans"))))
	banned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](banRow))
	must("ban row", err)
	if !banned {
		t.Fatal("the ban is not on the page")
	}
	must("unban", chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-client="198.51.100.7/32"] button`)), chromedp.WaitVisible(chromedp.ID("flash"))))
	flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("flash")))
	must("flash", err)
	banned, err = chromedp.Run(ctx, chromedp.Evaluate[bool](banRow))
	must("ban row after", err)
	shot("dashboard-unbanned.png")
	if banned || !strings.Contains(flash, "198.51.100.7/32") {
		t.Errorf("after Unban: still listed %v, flash %q", banned, flash)
	}
	var bans []struct{ Client string }
	adminJSON(t, "GET", "/robots_guard/bans", &bans)
	if len(bans) != 0 {
		t.Errorf("bans after Unban: %+v", bans)
	}
	get(t, tc, port, "/page", browserUA, xff("198.51.100.7")...).check(t, "after Unban", 200, "page")

	requests, problems := page.seen()
	for _, u := range requests {
		if !strings.HasPrefix(u, dash) {
			t.Errorf("the page made a request to %s", u)
		}
	}
	if len(problems) > 0 {
		t.Errorf("console errors or warnings: %q", problems)
	}
	t.Logf("%d requests, all to %s", len(requests), dash)
}

// TestDashboardOnAdminAPI: the admin API serves the same page at
// /robots_guard/ (and 404 under it where no endpoint is); Caddy's admin
// refuses what a browser sends by navigation (fetch metadata without an
// Origin), as it does for every admin endpoint, which is why
// robots_guard_dashboard exists for browsers.
func TestDashboardOnAdminAPI(t *testing.T) {
	up := newUpstream(t, dashRobots)
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard\n\treverse_proxy %s\n}\n", port, up.addr()))
	get(t, tc, port, "/blog/", gptbotUA).check(t, "GPTBot", 403, "Disallowed")
	code, body := adminDo(t, "GET", "/robots_guard/")
	if code != 200 || !strings.Contains(string(body), fmt.Sprintf(`data-site="http://127.0.0.1:%d"`, port)) {
		t.Fatalf("GET /robots_guard/: %d %.300s", code, body)
	}
	if code, _ := adminDo(t, "GET", "/robots_guard/nothing"); code != 404 {
		t.Errorf("GET /robots_guard/nothing: %d", code)
	}
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://localhost:%d/robots_guard/", adminPort), nil)
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	req.Header.Set("Sec-Fetch-Site", "none")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a browser's navigation to the admin API: %d; Caddy's origin check changed, update docs/dashboard.md", resp.StatusCode)
	}
}
