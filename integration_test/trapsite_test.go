package integration_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestTrapLinkBoundToSite: a trap link names the site that showed it. One
// Caddy serves site A and site B, both guarded, with one ban list. A link
// that A showed a client, presented on B (by curl, and by real Chromium
// loading it as an <img> of B's page), bans nobody; presented on A by its
// own client, it bans, and the ban names A.
func TestTrapLinkBoundToSite(t *testing.T) {
	portA, portB := freePort(t), freePort(t)
	siteB := trapSitePage(portB, "", `<p>site b</p><img src="{{.Req.URL.Query.Get "l"}}" alt="">`)
	tc := load(t, proxies, trapLinkSite(portA, "")+siteB)
	get(t, tc, portA, "/", "FooBot/1.0", "X-Forwarded-For", "192.0.2.200")
	get(t, tc, portB, "/", "FooBot/1.0", "X-Forwarded-For", "192.0.2.200")

	// curl: a scraper's own link of A, presented on B.
	scraper := []string{"X-Forwarded-For", "198.51.100.80"}
	unbanAfter(t, "198.51.100.80")
	link := linkIn(t, get(t, tc, portA, "/page", browserUA, scraper...).body)
	get(t, tc, portB, link, browserUA, scraper...).check(t, "A's link on B", 403, "disallows this path for every bot")
	get(t, tc, portB, "/page", browserUA, scraper...).check(t, "B afterwards", 200, "site b")
	get(t, tc, portA, "/page", browserUA, scraper...).check(t, "A afterwards", 200, "page")

	// Chromium (client 127.0.0.1): the link A shows it, loaded by B's page.
	mine := linkIn(t, get(t, tc, portA, "/page", browserUA).body)
	p := openPage(t, chromium(t), 800, 600, 60*time.Second)
	pageB := fmt.Sprintf("http://127.0.0.1:%d/page?l=%s", portB, url.QueryEscape(mine))
	if err := chromedp.Do(p.ctx, chromedp.Navigate(pageB)); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	waitFor(t, func() bool {
		reqs, _ := p.seen()
		for _, r := range reqs {
			if strings.Contains(r, mine) {
				return true
			}
		}
		return false
	})
	if err := chromedp.Do(p.ctx, chromedp.Navigate(fmt.Sprintf("http://127.0.0.1:%d/page", portA))); err != nil {
		t.Fatalf("chromium on A: %v", err)
	}
	body, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil || !strings.Contains(body, "page") {
		t.Errorf("Chromium refused on A after B's page loaded A's link: %q %v", body, err)
	}
	// Other tests of this process may have banned other clients.
	ours := func() []string {
		var bans []struct{ Client, Reason string }
		adminJSON(t, "GET", "/robots_guard/bans", &bans)
		var out []string
		for _, b := range bans {
			if strings.HasPrefix(b.Client, "198.51.100.80/") || strings.HasPrefix(b.Client, "127.0.0.1/") {
				out = append(out, b.Reason)
			}
		}
		return out
	}
	if bans := ours(); len(bans) != 0 {
		t.Fatalf("bans after links presented on the wrong site: %q", bans)
	}

	// The scraper's own link on A bans it, and the ban names A.
	get(t, tc, portA, link, browserUA, scraper...).check(t, "own link on A", 403, "banned until")
	get(t, tc, portB, "/page", browserUA, scraper...).check(t, "banned on B too", 403, "banned until")
	if bans := ours(); len(bans) != 1 || !strings.Contains(bans[0], fmt.Sprintf("on http://127.0.0.1:%d", portA)) {
		t.Errorf("the ban: %q", bans)
	}
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("timed out")
}

// TestOperatorReachesDashboardWhenBanned: the dashboard mounted on a path
// of a guarded site (as docs/dashboard.md shows) is never refused by a
// ban: an operator whose address a trap banned still gets the page, and
// lifts the ban from it; the site's other paths stay refused meanwhile.
func TestOperatorReachesDashboardWhenBanned(t *testing.T) {
	port := freePort(t)
	tc := load(t, proxies, fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard {
		traps /no-robots/ {
			links static
			grace 0
		}
	}
	handle_path /ops/* {
		robots_guard_dashboard
	}
	handle /robots.txt {
		respond "User-agent: *
Disallow: /no-robots/
"
	}
	handle {
		respond "page"
	}
}
`, port))
	operator := []string{"X-Forwarded-For", "198.51.100.90"}
	get(t, tc, port, "/", "FooBot/1.0", "X-Forwarded-For", "192.0.2.200")
	get(t, tc, port, "/no-robots/x", browserUA, operator...).check(t, "the operator's trap hit", 403, "banned until")
	get(t, tc, port, "/page", browserUA, operator...).check(t, "the site", 403, "banned until")
	get(t, tc, port, "/ops/", browserUA, operator...).check(t, "the dashboard", 200, "198.51.100.90")
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/ops/", port), strings.NewReader("op=unban&client=198.51.100.90"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", "198.51.100.90")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("unban from the dashboard: %d", resp.StatusCode)
	}
	get(t, tc, port, "/page", browserUA, operator...).check(t, "the site after the unban", 200, "page")
	// The dashboard's requests were never judged: the report counts the
	// one refusal of the site's page, not the page and the form too.
	var rep struct {
		Sites []struct {
			Site     string
			LastHour []struct {
				Client string
				Banned int64
			} `json:"last_hour"`
		}
	}
	adminJSON(t, "GET", "/robots_guard/report", &rep)
	for _, s := range rep.Sites {
		for _, row := range s.LastHour {
			if row.Client == "198.51.100.90/32" && row.Banned != 1 {
				t.Errorf("%s: the operator's row counts %d requests refused by the ban, want 1 (the dashboard's are not refused)", s.Site, row.Banned)
			}
		}
	}
}

// TestCatchAllTrapUnderFreshNames: a catch-all block with a trap (grace
// 3 s) whose app answers every Host with one set of rules (its Sitemap
// line names the host). Once the rules' clock has run under one name, a
// scraper that takes a fresh Host name per request and fetches its own
// link under it is banned on its first request, 20 names of 20.
func TestCatchAllTrapUnderFreshNames(t *testing.T) {
	port := freePort(t)
	load(t, proxies, fmt.Sprintf(`http://:%d {
	robots_guard {
		traps /no-robots/ {
			grace 3s
		}
	}
	handle /robots.txt {
		respond "User-agent: *
Disallow: /no-robots/
Sitemap: http://{host}/sitemap.xml
"
	}
	handle {
		templates
		header Content-Type text/html
		respond <<HTML
			<p>page</p><a href="{{placeholder "http.robots_guard.trap_link"}}" rel="nofollow" style="display:none">do not follow</a>
			HTML 200
	}
}
`, port))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	raw := func(host, path, ip string) string {
		return rawRequest(t, addr, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\nUser-Agent: "+browserUA+"\r\n"+browserHeaderLines+"X-Forwarded-For: "+ip+"\r\nConnection: close\r\n\r\n")
	}
	raw("first.example", "/no-robots/x", "192.0.2.201") // the first name's robots.txt starts the clock
	time.Sleep(3200 * time.Millisecond)
	for n := range 20 {
		host, ip := fmt.Sprintf("fresh%d.example", n), fmt.Sprintf("198.51.%d.9", 120+n) // one /24 each: no network ban
		unbanAfter(t, ip)
		page := raw(host, "/page", ip)
		_, body, _ := strings.Cut(page, "\r\n\r\n")
		link := linkIn(t, body)
		if resp := raw(host, link, ip); !strings.HasPrefix(resp, "HTTP/1.1 403") || !strings.Contains(resp, "banned until") {
			t.Fatalf("name %d: the scraper's own link: %.200q, want banned at once", n, resp)
		}
	}
}

// unbanAfter lifts the bans of ips when the test ends: the in-process
// Caddy's ban list outlives a test (go test -count=n runs it again).
func unbanAfter(t *testing.T, ips ...string) {
	t.Cleanup(func() {
		for _, ip := range ips {
			adminDo(t, "DELETE", "/robots_guard/bans/"+ip)
		}
	})
}
