package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/robotsguard/robotsguard/internal/testdns"
)

// TestPersonAgentsThroughCaddy: agents that fetch for a person (a
// user-triggered fetcher, a link preview) answer to their own groups once
// verified, not to "*": under "User-agent: *" / "Disallow: /" a
// ChatGPT-User request from an address of its published list (a local
// feed), a Google-Read-Aloud request from Google's user-triggered list and
// a Slackbot-LinkExpanding request verified by forward-confirmed reverse
// DNS get 200; the same headers from other addresses get 403; and a group
// that names the agent ("User-agent: ChatGPT-User" / "Disallow: /")
// refuses even the verified one.
func TestPersonAgentsThroughCaddy(t *testing.T) {
	dir := t.TempDir()
	feed := func(name, prefix string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(fmt.Sprintf(`{"creationTime":"2026-11-01T00:00:00","prefixes":[{"ipv4Prefix":%q}]}`, prefix)), 0o644)
		return filepath.ToSlash(p)
	}
	openaiFeed, googleFeed := feed("chatgpt-user.json", "23.98.142.176/28"), feed("user-triggered-fetchers.json", "66.102.8.0/24")
	dns := testdns.Start(t)
	dns.PTR("54.90.10.20", "slackbot-link-54-90-10-20.slack.com")
	dns.Host("slackbot-link-54-90-10-20.slack.com", "54.90.10.20")
	star := newUpstream(t, "User-agent: *\nDisallow: /\n")
	named := newUpstream(t, "User-agent: ChatGPT-User\nDisallow: /\n\nUser-agent: *\nDisallow: /\n")
	starPort, namedPort := freePort(t), freePort(t)
	site := func(port int, up *upstream) string {
		return fmt.Sprintf(`http://127.0.0.1:%d {
	robots_guard {
		verify {
			builtin off
			fetch_feeds at_start
			resolver %s
			operator openai {
				tokens ChatGPT-User
				ip_ranges %s
			}
			operator google {
				tokens Google-Read-Aloud
				ip_ranges %s
			}
			operator slack {
				tokens Slackbot-LinkExpanding
				rdns slack.com
			}
		}
	}
	reverse_proxy %s
}
`, port, dns.Addr, openaiFeed, googleFeed, up.addr())
	}
	tc := load(t, proxies, site(starPort, star)+site(namedPort, named))
	const (
		chatgpt = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot"
		google  = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko; Google-Read-Aloud; +https://support.google.com/webmasters/answer/1061943) Chrome/136.0.0.0 Safari/537.36"
		slack   = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
	)
	xff := func(ip string) []string { return []string{"X-Forwarded-For", ip} }
	for _, c := range []struct {
		name, ua, ip string
		port, status int
		body         string
	}{
		{"verified ChatGPT-User, * only", chatgpt, "23.98.142.180", starPort, 200, "page /article"},
		{"ChatGPT-User from elsewhere", chatgpt, "11.0.113.9", starPort, 403, "names a crawler of openai"},
		{"verified ChatGPT-User, its own group", chatgpt, "23.98.142.180", namedPort, 403, "Disallowed by robots.txt line 2 for ChatGPT-User"},
		{"verified Google-Read-Aloud", google, "66.102.8.9", starPort, 200, "page /article"},
		{"Google-Read-Aloud from elsewhere", google, "11.0.113.9", starPort, 403, "names a crawler of google"},
		{"Slackbot verified by FCrDNS", slack, "54.90.10.20", starPort, 200, "page /article"},
		{"Slackbot from elsewhere", slack, "11.0.113.10", starPort, 403, ""},
		{"a crawler, for contrast", "FooBot/1.0 (+https://foo.example)", "54.90.10.20", starPort, 403, "Disallowed by robots.txt line 2 for *"},
	} {
		get(t, tc, c.port, "/article", c.ua, xff(c.ip)...).check(t, c.name, c.status, c.body)
	}
	var x struct{ Reason, Class string }
	adminJSON(t, "GET", fmt.Sprintf("/robots_guard/explain?site=127.0.0.1:%d&ua=%s&path=/article&ip=23.98.142.180", starPort, "ChatGPT-User/1.0"), &x)
	if x.Reason != "person_agent" || x.Class != "fetcher" {
		t.Errorf("explain: %+v", x)
	}
}
