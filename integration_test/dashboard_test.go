package integration_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
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
// top offender with its verdict and User-Agent, the tester's deciding line
// highlighted, and a ban that an Unban click lifts; with no console error
// and no request to anything but the dashboard itself. The overview must
// put the problems, the sites and the offenders before the bans and the
// feeds, fold the idle feeds away, draw the day's chart as wide as the
// content column, and say when the copy of a site served as the demo's is
// (a file_server, whose ETag makes each refresh a 304) was checked, not
// only when it was fetched (see dashboardFreshness). A screenshot of each
// page is written to $ROBOTSGUARD_SCREENSHOTS (default: a temporary
// directory, logged).
func TestDashboardInBrowser(t *testing.T) {
	chrome := chromium(t)
	up := newUpstream(t, dashRobots)
	port, dashPort, demoPort, gonePort := freePort(t), freePort(t), freePort(t), freePort(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	demoRoot := t.TempDir()
	for name, body := range map[string]string{"robots.txt": dashRobots, "index.html": "<p>the demo's page</p>\n"} {
		if err := os.WriteFile(filepath.Join(demoRoot, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
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

http://127.0.0.1:%d {
	robots_guard {
		robots_txt {
			refresh 1s
		}
	}
	root * %s
	file_server
}

http://127.0.0.1:%d {
	robots_guard
	respond 404
}
`, port, up.addr(), dashPort, hash, demoPort, demoRoot, gonePort))
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

	// The demo's site: its copy, fetched at start, falls due after a
	// second; a request then starts a refresh, which the file_server
	// answers 304; no request comes after it, and it falls due again.
	demoSite := fmt.Sprintf("http://127.0.0.1:%d", demoPort)
	time.Sleep(1200 * time.Millisecond)
	waitChecked(t, demoSite, func() { get(t, tc, demoPort, "/", browserUA).check(t, "the demo's page", 200, "the demo's page") })
	time.Sleep(1100 * time.Millisecond)

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
	overviewLayout(t, ctx, site)
	dashboardFreshness(t, ctx, dash, demoSite)
	must("overview", chromedp.Do(ctx, chromedp.Navigate(dash), chromedp.WaitVisible(chromedp.ID("sites"))))
	var rep struct {
		Sites []struct {
			Site     string
			LastHour []struct {
				Client, Group, Verification       string
				UserAgent                         string `json:"user_agent"`
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
	if len(top) != 8 || top[7] != gptbotUA || first.UserAgent != gptbotUA {
		t.Errorf("top offender's User-Agent: the page says %q, the report %q; want %q", top[len(top)-1], first.UserAgent, gptbotUA)
	}
	widths, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[...document.querySelectorAll('figure.chart')].map(f => f.querySelectorAll('line.axis')[1].getBoundingClientRect().width)
		.concat([document.getElementById('last-hour').getBoundingClientRect().width])`))
	must("chart widths", err)
	if len(widths) != 4 || widths[1] != widths[0] || widths[0] < 0.9*widths[3] {
		t.Errorf("site page: the charts' x axes are %v pixels wide (hour, day, claims), the content column %v", widths[:len(widths)-1], widths[len(widths)-1])
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

// overviewLayout checks the overview of TestDashboardInBrowser as an
// operator reads it: the problems (the site whose robots.txt is a 404),
// the sites and the top offenders (GPTBot's address first, with its
// User-Agent) before the bans and the feeds; the idle feeds folded
// behind one line; the day's chart as wide as the content column, with
// labels of at least 11 pixels.
func overviewLayout(t *testing.T, ctx context.Context, site string) {
	t.Helper()
	tops, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`['problems', 'sites', 'offenders', 'bans', 'feeds-h']
		.map(id => document.getElementById(id)).map(e => e ? e.getBoundingClientRect().top + window.scrollY : -1)`))
	if err != nil {
		t.Fatal(err)
	}
	for i, y := range tops {
		if y < 0 || i > 0 && y <= tops[i-1] {
			t.Errorf("overview order: the tops of problems, sites, offenders, bans and feeds are %v", tops)
			break
		}
	}
	type fold struct {
		Open, Visible bool
		Summary       string
		Rows          int
	}
	idle, err := chromedp.Run(ctx, chromedp.Evaluate[fold](`(() => { const d = document.getElementById('idle-feeds');
		return d ? {open: d.open, visible: d.querySelector('table').checkVisibility(), summary: d.querySelector('summary').textContent, rows: d.querySelectorAll('tbody tr').length} : {}; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if idle.Open || idle.Visible || idle.Rows == 0 || idle.Summary != fmt.Sprintf("%d idle feeds (no crawler of theirs has come)", idle.Rows) {
		t.Errorf("idle feeds: %+v; want them folded behind their count", idle)
	}
	off, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#offenders tbody tr:first-child td')).map(td => td.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(off) != 9 || off[0] != "192.0.2.66/32" || off[1] != site || off[2] != "GPTBot" || off[4] != "6" || off[8] != gptbotUA {
		t.Errorf("the overview's top offender: %q", off)
	}
	chart, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const f = document.querySelector('figure.chart');
		return [f.querySelectorAll('line.axis')[1].getBoundingClientRect().width, document.getElementById('sites').getBoundingClientRect().width,
			Math.min(...[...f.querySelectorAll('text.tick')].map(e => e.getBoundingClientRect().height)), f.querySelectorAll('text[text-anchor=middle]').length]; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(chart) != 4 || chart[0] < 0.9*chart[1] || chart[2] < 11 || chart[3] != 8 {
		t.Errorf("the day's chart: x axis %v px wide in a %v px column, labels %v px high, %v hour labels", chart[0], chart[1], chart[2], chart[3])
	}
}

// waitChecked makes requests to site (visit) until its copy has been
// checked (a refresh that kept it) a second or more after it was fetched.
func waitChecked(t *testing.T, site string, visit func()) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		visit()
		var ss []struct {
			Site             string
			Fetched, Checked time.Time
		}
		adminJSON(t, "GET", "/robots_guard/sites", &ss)
		for _, s := range ss {
			if s.Site == site && s.Checked.Sub(s.Fetched) >= time.Second {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no refresh kept the copy: %+v", site, ss)
		}
	}
}

// dashboardFreshness: the demo's site (robots.txt from a file_server,
// refreshed every second) had its copy fetched at start, kept by a 304 a
// second later, and no request since: "fetched N ago" alone (what the
// page said) looked stale. The overview says when it was checked, when the
// copy was fetched, and that the refresh due waits for the next request;
// the site page says the same, by the admin API's times.
func dashboardFreshness(t *testing.T, ctx context.Context, dash, demoSite string) {
	t.Helper()
	cell, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector('#sites tr[data-site=%q] td.fresh').innerText`, demoSite)))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^checked (\S+) ago\ncopy fetched (\S+) ago\nrefresh due (\S+) ago: at the next request$`).FindStringSubmatch(cell)
	if m == nil {
		t.Fatalf("the demo site's copy: %q", cell)
	}
	checked, err1 := time.ParseDuration(m[1])
	fetched, err2 := time.ParseDuration(m[2])
	if err1 != nil || err2 != nil || fetched < checked+time.Second {
		t.Errorf("the demo site's copy: %q: fetched %v ago, checked %v ago", cell, fetched, checked)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(dash+"?"+url.Values{"site": {demoSite}}.Encode()), chromedp.WaitVisible(chromedp.ID("copy"))); err != nil {
		t.Fatal(err)
	}
	dd, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`['fetched', 'checked', 'next-refresh'].map(id => document.getElementById(id).textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	var ss []struct {
		Site             string
		Fetched, Checked time.Time
	}
	adminJSON(t, "GET", "/robots_guard/sites", &ss)
	for _, s := range ss {
		if s.Site != demoSite {
			continue
		}
		stamp := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }
		if len(dd) != 3 || !strings.HasPrefix(dd[0], stamp(s.Fetched)) || !strings.HasSuffix(dd[0], "the copy in force; the checks since kept it") ||
			!strings.HasPrefix(dd[1], stamp(s.Checked)) || !strings.HasPrefix(dd[2], "due since ") || !strings.HasSuffix(dd[2], "the site's next request, any client's, starts it") {
			t.Errorf("the demo site's page: %q; the admin API: fetched %v, checked %v", dd, s.Fetched, s.Checked)
		}
	}
}
