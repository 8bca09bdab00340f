package integration_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const trapSiteRobots = `User-agent: *
Disallow: /no-robots/
Disallow: /private/

User-agent: FooBot
Disallow: /no-robots/
`

// TestTrapsThroughCaddy: a browser-header client that fetches the trap is
// refused everything but /robots.txt for the ban time; the admin API lists
// and lifts bans and reports the hits; a trap that robots.txt allows for
// one group bans nobody.
func TestTrapsThroughCaddy(t *testing.T) {
	up := newUpstream(t, trapSiteRobots)
	loose := newUpstream(t, "User-agent: *\nDisallow: /no-robots/\n\nUser-agent: FooBot\nAllow: /\n")
	port, loosePort := freePort(t), freePort(t)
	site := func(port int, upstream string) string {
		return fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard {\n\t\ttraps /no-robots/ {\n\t\t\tlinks static\n\t\t\tgrace 0\n\t\t}\n\t\tbans {\n\t\t\tfor 1s\n\t\t\tmax 1h\n\t\t}\n\t}\n\treverse_proxy %s\n}\n", port, upstream)
	}
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	tc := load(t, proxies+"\n\tlog {\n\t\toutput file "+filepath.ToSlash(logFile)+"\n\t\tlevel INFO\n\t}",
		site(port, up.addr())+site(loosePort, loose.addr()))
	xff := func(ip string) []string { return []string{"X-Forwarded-For", ip} }
	// Warm both sites' robots.txt with a bot request (browsers do not wait
	// for the first fetch).
	get(t, tc, port, "/", "FooBot/1.0", xff("192.0.2.200")...)
	get(t, tc, loosePort, "/", "FooBot/1.0", xff("192.0.2.200")...)

	get(t, tc, port, "/page", browserUA, xff("198.51.100.7")...).check(t, "before", 200, "page /page")
	get(t, tc, port, "/no-robots/x", browserUA, xff("198.51.100.7")...).check(t, "the trap", 403, "banned until")
	a := get(t, tc, port, "/page", browserUA, xff("198.51.100.7")...)
	a.check(t, "banned", 403, "for ignoring this site's robots.txt")
	if a.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q", a.header.Get("Retry-After"))
	}
	get(t, tc, port, "/robots.txt", browserUA, xff("198.51.100.7")...).check(t, "robots.txt while banned", 200, "Disallow")
	get(t, tc, port, "/page", browserUA, xff("198.51.100.8")...).check(t, "another client", 200, "page")

	var bans []struct {
		Client, Reason string
		Strikes        int
	}
	adminJSON(t, "GET", "/robots_guard/bans", &bans)
	if len(bans) != 1 || bans[0].Client != "198.51.100.7/32" || bans[0].Strikes != 1 {
		t.Fatalf("bans: %+v", bans)
	}
	time.Sleep(1100 * time.Millisecond)
	get(t, tc, port, "/page", browserUA, xff("198.51.100.7")...).check(t, "after the ban", 200, "page")

	// Again: 2 s (doubled); lifted by the admin API.
	get(t, tc, port, "/no-robots/y", browserUA, xff("198.51.100.7")...).check(t, "the trap again", 403, "banned until")
	adminJSON(t, "GET", "/robots_guard/bans", &bans)
	if len(bans) != 1 || bans[0].Strikes != 2 {
		t.Fatalf("bans: %+v", bans)
	}
	if code, b := adminDo(t, "DELETE", "/robots_guard/bans/198.51.100.7"); code != 200 {
		t.Fatalf("unban: %d %s", code, b)
	}
	get(t, tc, port, "/page", browserUA, xff("198.51.100.7")...).check(t, "after unban", 200, "page")
	if code, _ := adminDo(t, "DELETE", "/robots_guard/bans/198.51.100.7"); code != 404 {
		t.Fatalf("unban of a client not banned: %d", code)
	}
	if code, b := adminDo(t, "DELETE", "/robots_guard/bans/garbage"); code != 400 || strings.Count(string(b), "robots_guard:") != 1 {
		t.Fatalf("unban of garbage: %d %s, want 400 saying robots_guard: once", code, b)
	}

	// Not armed where FooBot may fetch it: nobody is banned, and Caddy's
	// log says why.
	get(t, tc, loosePort, "/no-robots/x", browserUA, xff("198.51.100.9")...).check(t, "unarmed trap, browser", 200, "page")
	get(t, tc, loosePort, "/page", browserUA, xff("198.51.100.9")...).check(t, "after an unarmed trap", 200, "page")
	logs, _ := os.ReadFile(logFile)
	if !strings.Contains(string(logs), "trap not armed") || !strings.Contains(string(logs), `"allowed_for":"FooBot"`) {
		t.Errorf("no warning for the unarmed trap in Caddy's log:\n%s", logs)
	}

	// The report.
	code, b := adminDo(t, "GET", "/robots_guard/report")
	var rep struct {
		Sites []struct {
			Site     string
			LastHour []struct {
				Client        string
				Traps, Banned int64
			} `json:"last_hour"`
		}
	}
	if code != 200 || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report: %d %s", code, b)
	}
	found := false
	for _, s := range rep.Sites {
		for _, c := range s.LastHour {
			if strings.HasSuffix(s.Site, fmt.Sprint(port)) && c.Client == "198.51.100.7/32" && c.Traps == 2 && c.Banned >= 1 {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("report: %s", b)
	}
}

// TestBanHoldsOnEveryBlock: a ban made by a block with a trap is enforced
// by another robots_guard block of the same Caddy with default options
// (no trap, other settings): one ban list per instance.
func TestBanHoldsOnEveryBlock(t *testing.T) {
	up := newUpstream(t, trapSiteRobots)
	trapPort, plainPort := freePort(t), freePort(t)
	tc := load(t, proxies, fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard {
		traps /no-robots/ {
			links static
			grace 0
		}
	}
	reverse_proxy %s
}
http://127.0.0.1:%d {
	robots_guard {
		crawl_delay {
			max_keys 5000
		}
	}
	reverse_proxy %s
}
`, trapPort, up.addr(), plainPort, up.addr()))
	xff := []string{"X-Forwarded-For", "198.51.100.40"}
	get(t, tc, trapPort, "/", "FooBot/1.0", "X-Forwarded-For", "192.0.2.200")
	get(t, tc, plainPort, "/page", browserUA, xff...).check(t, "the other block, before", 200, "page")
	get(t, tc, trapPort, "/no-robots/x", browserUA, xff...).check(t, "the trap", 403, "banned until")
	get(t, tc, plainPort, "/page", browserUA, xff...).check(t, "the other block, after the ban", 403, "banned until")
	get(t, tc, plainPort, "/page", browserUA, "X-Forwarded-For", "198.51.100.41").check(t, "another client on the other block", 200, "page")
}

// TestLooseTrustedProxiesWarn: a server that trusts forwarded addresses
// without trusted_proxies_strict gets one warning, at the first forwarded
// request, saying what a client can do; with trusted_proxies_strict, none.
func TestLooseTrustedProxiesWarn(t *testing.T) {
	up := newUpstream(t, trapSiteRobots)
	for _, strict := range []bool{false, true} {
		logFile := filepath.Join(t.TempDir(), "caddy.log")
		servers := proxies
		if strict {
			servers = strings.Replace(proxies, "client_ip_headers", "trusted_proxies_strict\n\t\tclient_ip_headers", 1)
		}
		port := freePort(t)
		sites := fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard {\n\t\ttraps /no-robots/\n\t}\n\treverse_proxy %s\n}\n", port, up.addr())
		tc := load(t, servers+"\n\tlog {\n\t\toutput file "+filepath.ToSlash(logFile)+"\n\t\tlevel INFO\n\t}", sites)
		for range 3 {
			get(t, tc, port, "/page", browserUA)                                     // not forwarded
			get(t, tc, port, "/page", browserUA, "X-Forwarded-For", "198.51.100.90") // through a trusted proxy
		}
		logs, _ := os.ReadFile(logFile)
		n := strings.Count(string(logs), "trusted_proxies without trusted_proxies_strict")
		if want := map[bool]int{false: 1, true: 0}[strict]; n != want {
			t.Errorf("strict %v: %d warnings, want %d\n%s", strict, n, want, logs)
		}
	}
}

// TestStrictProxiesBanTheSender: with the README's proxy recipe
// (trusted_proxies_strict), a scraper that prepends someone else's address
// to X-Forwarded-For bans itself (the address its proxy appended), not
// the address it wrote.
func TestStrictProxiesBanTheSender(t *testing.T) {
	up := newUpstream(t, trapSiteRobots)
	port := freePort(t)
	strict := strings.Replace(proxies, "client_ip_headers", "trusted_proxies_strict\n\t\tclient_ip_headers", 1)
	tc := load(t, strict, fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard {\n\t\ttraps /no-robots/ {\n\t\t\tlinks static\n\t\t\tgrace 0\n\t\t}\n\t}\n\treverse_proxy %s\n}\n", port, up.addr()))
	get(t, tc, port, "/", "FooBot/1.0", "X-Forwarded-For", "192.0.2.200")
	get(t, tc, port, "/no-robots/x", browserUA, "X-Forwarded-For", "203.0.113.9, 198.51.100.50").check(t, "the trap, with a forged first hop", 403, "banned until")
	get(t, tc, port, "/page", browserUA, "X-Forwarded-For", "198.51.100.50").check(t, "the sender", 403, "banned until")
	get(t, tc, port, "/page", browserUA, "X-Forwarded-For", "203.0.113.9").check(t, "the address it named", 200, "page")
}

// trapLinkSite is a site whose page renders the client's own trap link
// with Caddy's templates, as docs/traps.md shows.
func trapLinkSite(port int, extra string) string {
	return trapSitePage(port, extra, `<p>page</p><a href="{{placeholder "http.robots_guard.trap_link"}}" rel="nofollow" style="display:none">do not follow</a>`)
}

// trapSitePage is trapLinkSite with its page's HTML (a template).
func trapSitePage(port int, extra, page string) string {
	if !strings.Contains(extra, "grace") {
		extra += "\n\t\t\tgrace 0"
	}
	return fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard {
		traps /no-robots/ {
			%s
		}
	}
	handle /robots.txt {
		respond "User-agent: *
Disallow: /no-robots/
"
	}
	handle {
		templates
		header Content-Type text/html
		respond <<HTML
			%s
			HTML 200
	}
}
`, port, extra, page)
}

// linkIn returns the trap link a page shows.
func linkIn(t *testing.T, body string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `href="`)
	link, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 || !strings.HasPrefix(link, "/no-robots/") || len(link) != len("/no-robots/")+16 {
		t.Fatalf("no per-client trap link in the page: %q", body)
	}
	return link
}

// TestTrapLinksThroughCaddy: the page renders each client's own trap link
// (templates and the trap_link placeholder); a scraper that fetches its
// link is banned even with a browser's cross-site image metadata; another
// client fetching that link, the bare trap path or a made-up token bans
// nobody (403 unattributed).
func TestTrapLinksThroughCaddy(t *testing.T) {
	port := freePort(t)
	tc := load(t, proxies, trapLinkSite(port, ""))
	scraper, other := []string{"X-Forwarded-For", "198.51.100.60"}, []string{"X-Forwarded-For", "198.51.100.61"}
	get(t, tc, port, "/", "FooBot/1.0", "X-Forwarded-For", "192.0.2.200")
	a := get(t, tc, port, "/page", browserUA, scraper...)
	a.check(t, "the page", 200, "page")
	if cc := a.header.Get("Cache-Control"); cc != "private" {
		t.Errorf("the page that shows a client's own link: Cache-Control %q, want private", cc)
	}
	link := linkIn(t, a.body)
	if otherLink := linkIn(t, get(t, tc, port, "/page", browserUA, other...).body); otherLink == link {
		t.Fatal("two clients got the same trap link")
	}
	get(t, tc, port, link, browserUA, other...).check(t, "another client's link", 403, "disallows this path for every bot")
	get(t, tc, port, "/no-robots/", browserUA, other...).check(t, "the bare trap path", 403, "disallows this path for every bot")
	get(t, tc, port, "/no-robots/AAAAAAAAAAAAAAAA", browserUA, other...).check(t, "a made-up token", 403, "disallows")
	get(t, tc, port, "/page", browserUA, other...).check(t, "the other client afterwards", 200, "page")
	get(t, tc, port, link, browserUA, append(scraper, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Dest", "image")...).check(t, "own link, cross-site image metadata", 403, "banned until")
	get(t, tc, port, "/page", browserUA, scraper...).check(t, "the scraper afterwards", 403, "banned until")
}

// trapState returns the state of the site's trap, from the admin API.
func trapState(t *testing.T, port int) string {
	t.Helper()
	var sites []struct {
		Site  string
		Traps []struct{ State string }
	}
	adminJSON(t, "GET", "/robots_guard/sites", &sites)
	for _, s := range sites {
		if strings.HasSuffix(s.Site, fmt.Sprint(port)) && len(s.Traps) == 1 {
			return s.Traps[0].State
		}
	}
	t.Fatalf("no trap state for port %d in %+v", port, sites)
	return ""
}

// TestTrapGraceThroughCaddy: a trap with trap_grace 3s waits (visible in
// /robots_guard/sites), arms 3 s after start, and, after Caddy starts
// again with the same storage, is armed at once.
func TestTrapGraceThroughCaddy(t *testing.T) {
	dir := storageDir(t)
	port := freePort(t)
	tc := loadWithStorage(t, dir, proxies, trapLinkSite(port, "grace 3s"))
	scraper := []string{"X-Forwarded-For", "198.51.100.80"}
	get(t, tc, port, "/", "FooBot/1.0", "X-Forwarded-For", "192.0.2.200")
	if s := trapState(t, port); s != "waiting" {
		t.Fatalf("at start: %s", s)
	}
	link := linkIn(t, get(t, tc, port, "/page", browserUA, scraper...).body)
	get(t, tc, port, link, browserUA, scraper...).check(t, "the trap while it waits", 200, "page")
	time.Sleep(3100 * time.Millisecond)
	if s := trapState(t, port); s != "armed" {
		t.Fatalf("3 s after start: %s", s)
	}
	get(t, tc, port, link, browserUA, scraper...).check(t, "the armed trap", 403, "banned until")
	// Caddy runs something else, then the trap site again: a start with
	// the same storage, no Engine carried over.
	loadWithStorage(t, dir, proxies, fmt.Sprintf("http://127.0.0.1:%d {\n\trespond \"elsewhere\"\n}\n", port))
	tc = loadWithStorage(t, dir, proxies, trapLinkSite(port, "grace 3s"))
	get(t, tc, port, "/", "FooBot/1.0", "X-Forwarded-For", "192.0.2.200")
	if s := trapState(t, port); s != "armed" {
		t.Fatalf("right after a start with the same storage: %s", s)
	}
}
