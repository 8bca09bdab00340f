package integration_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testdns"
)

const (
	googlebotUA  = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	verifyRobots = `User-agent: Googlebot
Allow: /
Crawl-delay: 1

User-agent: *
Disallow: /private/
`
)

// googleFeed serves a Google-shaped feed of 66.249.64.0/27 on loopback and
// counts its requests.
func googleFeed(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("ETag", `"1"`)
		if r.Header.Get("If-None-Match") == `"1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		fmt.Fprint(w, `{"creationTime":"2026-11-01T00:00:00","prefixes":[{"ipv4Prefix":"66.249.64.0/27"}]}`)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

// verifySite is a site block with verification against feed and resolver,
// without the built-in registry (no network beyond loopback).
func verifySite(port int, upstream, feed, resolver, extra string) string {
	return fmt.Sprintf(`http://127.0.0.1:%d {
	header >X-Verification {http.robots_guard.verification}
	robots_guard {
		crawl_delay {
			key group
		}
		verify {
			builtin off
			fetch_feeds at_start
			resolver %s
			%s
			operator google {
				tokens Googlebot
				ip_ranges %s
				rdns googlebot.com
			}
		}
	}
	reverse_proxy %s
}
`, port, resolver, extra, feed, upstream)
}

const proxies = "servers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t\tclient_ip_headers X-Forwarded-For\n\t}"

// waitVerified polls the admin explain endpoint until the claim from ip is
// verified (the feed loads in the background).
func waitVerified(t *testing.T, port int, ip string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var x struct {
			Verification *struct{ Verdict string }
		}
		q := fmt.Sprintf("/robots_guard/explain?site=127.0.0.1:%d&ua=%s&path=/&ip=%s", port, url.QueryEscape(googlebotUA), ip)
		adminJSON(t, "GET", q, &x)
		if x.Verification != nil && x.Verification.Verdict == "verified" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not verified after 10s: %+v", ip, x.Verification)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestVerifyThroughCaddy: client addresses come from X-Forwarded-For through
// trusted_proxies; a spoofed Googlebot gets 403 (deny) or the "*" rules
// (star), the verified one its group, and with crawl_delay_key group the
// spoofers do not cost the verified crawler a single 429.
func TestVerifyThroughCaddy(t *testing.T) {
	up := newUpstream(t, verifyRobots)
	feed, requests := googleFeed(t)
	dns := testdns.Start(t)
	dns.PTR("66.249.66.1", "crawl-66-249-66-1.googlebot.com")
	dns.Host("crawl-66-249-66-1.googlebot.com", "66.249.66.1")
	dns.PTR("11.0.113.66", "crawl-66-249-66-1.googlebot.com") // a lie in the attacker's reverse zone
	denyPort, starPort := freePort(t), freePort(t)
	tc := load(t, proxies,
		verifySite(denyPort, up.addr(), feed.URL, dns.Addr, "")+
			verifySite(starPort, up.addr(), feed.URL, dns.Addr, "on_spoofed star"))
	waitVerified(t, denyPort, "66.249.64.5")
	waitVerified(t, starPort, "66.249.64.5")

	xff := func(ip string) []string { return []string{"X-Forwarded-For", ip} }
	a := get(t, tc, denyPort, "/private/a", googlebotUA, xff("11.0.113.9")...)
	a.check(t, "spoofed Googlebot (deny)", 403, "names a crawler of google")
	if v := a.header.Get("X-Verification"); v != "spoofed" {
		t.Errorf("placeholder: %q", v)
	}
	get(t, tc, denyPort, "/private/a", googlebotUA, xff("11.0.113.66")...).check(t, "spoofed by a lying PTR", 403, "names a crawler of google")
	get(t, tc, starPort, "/private/a", googlebotUA, xff("11.0.113.9")...).check(t, "spoofed Googlebot (star): * rules", 403, "Disallowed by robots.txt line 6 for *")
	get(t, tc, starPort, "/a", googlebotUA, xff("11.0.113.9")...).check(t, "spoofed Googlebot (star): * allows /a", 200, "page /a")

	for _, port := range []int{denyPort, starPort} {
		// The verified crawler: its group (no Disallow), from the feed
		// and by reverse DNS, sharing one budget.
		a := get(t, tc, port, "/private/a", googlebotUA, xff("66.249.64.5")...)
		a.check(t, "verified by feed", 200, "page /private/a")
		if v := a.header.Get("X-Verification"); v != "verified" {
			t.Errorf("placeholder: %q", v)
		}
		for range burst - 1 {
			get(t, tc, port, "/b", googlebotUA, xff("66.249.66.1")...).check(t, "verified by rDNS, within the burst", 200, "page /b")
		}
		get(t, tc, port, "/b", googlebotUA, xff("66.249.66.1")...).check(t, "verified by rDNS, same budget, after the burst", 429, "Crawl-delay")
		for i := range 30 {
			ans := get(t, tc, port, "/c", googlebotUA, xff(fmt.Sprintf("11.0.113.%d", 100+i))...)
			if ans.status == 429 {
				t.Fatalf("a spoofer was throttled on the verified crawler's budget: %q", ans.body)
			}
		}
		time.Sleep(1100 * time.Millisecond)
		for i, ip := range []string{"66.249.64.6", "66.249.66.1"} {
			if i == 1 {
				time.Sleep(1100 * time.Millisecond)
			}
			get(t, tc, port, "/d", googlebotUA, xff(ip)...).check(t, "verified, after the delay, spoofers in between", 200, "page /d")
		}
	}
	// Explain says how.
	var x struct {
		Verification struct {
			Verdict, Operator, Method string
			Steps                     []string
		}
	}
	adminJSON(t, "GET", fmt.Sprintf("/robots_guard/explain?site=127.0.0.1:%d&ua=Googlebot&path=/&ip=66.249.66.1", denyPort), &x)
	if x.Verification.Verdict != "verified" || x.Verification.Method != "rdns" || !strings.Contains(strings.Join(x.Verification.Steps, " "), "crawl-66-249-66-1.googlebot.com") {
		t.Fatalf("explain: %+v", x.Verification)
	}
	// The feeds, and a refresh of them: one verifier (both sites' verify
	// blocks differ, so two), each feed loaded, a refresh answered 304.
	var feeds []struct {
		Source   string
		Loaded   bool
		Prefixes int
	}
	adminJSON(t, "GET", "/robots_guard/feeds", &feeds)
	if len(feeds) != 2 || !feeds[0].Loaded || feeds[0].Prefixes != 1 || feeds[0].Source != feed.URL {
		t.Fatalf("feeds: %+v", feeds)
	}
	before := requests.Load()
	var refreshed struct{ Feeds []struct{ Loaded bool } }
	adminJSON(t, "POST", "/robots_guard/feeds/refresh", &refreshed)
	if len(refreshed.Feeds) != 2 || requests.Load()-before != 2 {
		t.Fatalf("refresh: %+v, %d requests", refreshed, requests.Load()-before)
	}
}

// TestVerifyFeedSurvivesRestartWithoutNetwork: the last good copy of a feed
// is kept in Caddy's storage; a new verifier (a changed verify block) with
// the feed server gone still verifies.
func TestVerifyFeedSurvivesRestartWithoutNetwork(t *testing.T) {
	up := newUpstream(t, verifyRobots)
	feed, requests := googleFeed(t)
	dns := testdns.Start(t)
	storage := storageDir(t)
	port := freePort(t)
	loadWithStorage(t, storage, proxies, verifySite(port, up.addr(), feed.URL+"/feed.json", dns.Addr, ""))
	waitVerified(t, port, "66.249.64.5")
	stored, _ := filepath.Glob(filepath.Join(storage, "robots_guard", "feeds", "*.json"))
	if len(stored) != 1 {
		t.Fatalf("stored copies: %v", stored)
	}
	feed.Close() // the network is gone
	before := requests.Load()
	tc := loadWithStorage(t, storage, proxies, verifySite(port, up.addr(), feed.URL+"/feed.json", dns.Addr, "dns_timeout 1s"))
	waitVerified(t, port, "66.249.64.5")
	get(t, tc, port, "/private/a", googlebotUA, "X-Forwarded-For", "66.249.64.5").check(t, "verified from the stored feed", 200, "page")
	if n := requests.Load() - before; n != 0 {
		t.Errorf("%d feed requests after the restart; the stored copy is fresh", n)
	}
	if b, err := os.ReadFile(stored[0]); err != nil || !strings.Contains(string(b), "66.249.64.0/27") {
		t.Fatalf("stored copy: %v %s", err, b)
	}
}

// TestVerifyOnByDefault: a Caddy with a bare robots_guard verifies claims.
// A Googlebot header from an address Google does not publish (here
// loopback, so nothing is looked up and nothing goes out) gets no more than
// "*", and a GPTBot header keeps GPTBot's own Disallow; verify off believes
// headers.
func TestVerifyOnByDefault(t *testing.T) {
	up := newUpstream(t, "User-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nAllow: /\n\nUser-agent: GPTBot\nDisallow: /gpt/\n")
	port, off := freePort(t), freePort(t)
	tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d {\n\trobots_guard\n\treverse_proxy %s\n}\nhttp://127.0.0.1:%d {\n\trobots_guard {\n\t\tverify off\n\t}\n\treverse_proxy %s\n}\n", port, up.addr(), off, up.addr()))
	get(t, tc, port, "/private/x", "Googlebot/2.1 (+http://www.google.com/bot.html)").check(t, "an unproven Googlebot, a path * disallows", 403, "line 2 for *")
	get(t, tc, port, "/open", "Googlebot/2.1 (+http://www.google.com/bot.html)").check(t, "an unproven Googlebot, a path both allow", 200, "page")
	get(t, tc, port, "/gpt/x", gptbotUA).check(t, "GPTBot's own Disallow", 403, "line 8 for GPTBot")
	get(t, tc, port, "/private/x", browserUA).check(t, "a browser", 200, "page")
	get(t, tc, off, "/private/x", "Googlebot/2.1 (+http://www.google.com/bot.html)").check(t, "verify off believes the header", 200, "page")
}
