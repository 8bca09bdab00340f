package guard

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/policy"
)

// TestTrapsUnderFreshHostNames: a catch-all server answers every Host
// with one robots.txt; a scraper that sends a fresh Host name per request
// and fetches its own link under it is banned on its first request, with
// grace 0 (the request waits for the new name's robots.txt instead of
// passing) and with the default grace once the rules' clock has run under
// an earlier name (a new name does not start it again).
func TestTrapsUnderFreshHostNames(t *testing.T) {
	for _, grace := range []time.Duration{0, 24 * time.Hour} {
		t.Run(grace.String(), func(t *testing.T) {
			clk := testclock.New()
			e, _ := trapEngine(t, trapRobots, clk, func(c *Config) {
				g := duration.Duration(grace)
				c.Traps.Grace = &g
			})
			clk.Add(grace + time.Minute) // the warm-up request's name started the rules' clock
			for n := range 20 {
				host := fmt.Sprintf("name%d.example", n)
				ip := fmt.Sprintf("198.51.%d.9:1", 100+n) // one /24 each: no network ban
				link := e.TrapLinkFor("http://"+host, ip)
				v := e.Decide(context.Background(), Request{Host: host, Target: link, UserAgent: uaChrome, ClientIP: ip, Method: "GET"})
				if v.Reason != ReasonTrap || v.BanUntil == 0 {
					t.Fatalf("name %d: %v %v, want banned at the first request", n, v.Action, v.Reason)
				}
			}
		})
	}
}

// TestRulesKey: the rules' key ignores what names the host (Sitemap and
// Host lines) and comments, not the rules.
func TestRulesKey(t *testing.T) {
	a := rulesKey(policy.Parse([]byte("User-agent: *\nDisallow: /no-robots/\nSitemap: https://a.example/sitemap.xml\n")))
	b := rulesKey(policy.Parse([]byte("# b\nUser-agent: *\n\nDisallow: /no-robots/ # the trap\nSitemap: https://b.example/sitemap.xml\nHost: b.example\n")))
	c := rulesKey(policy.Parse([]byte("User-agent: *\nDisallow: /no-robots/\nDisallow: /x/\n")))
	if a != b || a == c {
		t.Errorf("keys: a == b %v, a != c %v", a == b, a != c)
	}
}
