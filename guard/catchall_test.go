package guard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/sites"
	"github.com/robotsguard/robotsguard/traps"
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

// TestTrapGraceNotBorrowedByAChangedSite: the rules' clock that a fresh
// name adopts is not lent to a site whose earlier copy allowed the trap:
// a crawler may still hold that copy, so the site's own grace runs.
func TestTrapGraceNotBorrowedByAChangedSite(t *testing.T) {
	const armed, open = "User-agent: *\nDisallow: /no-robots/\n", "User-agent: *\nDisallow:\n"
	var yBody atomic.Value
	yBody.Store(open)
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Host, "y.example") {
			io.WriteString(w, yBody.Load().(string))
			return
		}
		io.WriteString(w, armed)
	})
	clk := testclock.New()
	obs := &countObserver{}
	day := duration.Duration(24 * time.Hour)
	e := mustNew(t, Config{Traps: traps.Config{Paths: []string{"/no-robots/"}, Grace: &day},
		Bans: limit.BansConfig{For: duration.Duration(time.Hour), Max: duration.Duration(2 * time.Hour)}, RobotsTxt: sites.Config{Refresh: duration.Duration(time.Minute)}},
		WithClock(clk.Now), WithObserver(obs))
	t.Cleanup(func() { e.Close() })
	decide := func(host, target, ua, ip string) Verdict {
		r := httptest.NewRequest("GET", "http://"+host+target, nil)
		r.Header.Set("User-Agent", ua)
		browserHeaders(r.Header)
		return e.DecideHTTP(r, nil, ip, origin)
	}
	decide("x.example", "/", "WarmupBot/1.0", "192.0.2.250:1") // x's rules arm the trap from now
	decide("y.example", "/", "WarmupBot/1.0", "192.0.2.250:1") // y's copy allows it
	clk.Add(25 * time.Hour)
	yBody.Store(armed) // y now has x's rules, armed under x for a day
	before := obs.get("fetch/ok")
	testclock.WaitDoing(t, func() { decide("y.example", "/", uaChrome, "192.0.2.251:1") }, func() bool { return obs.get("fetch/ok") > before })
	if v := decide("y.example", e.TrapLinkFor("http://y.example", "198.51.100.9:1"), "Scraper/1.0", "198.51.100.9:1"); v.Reason == ReasonTrap || v.BanUntil != 0 {
		t.Fatalf("y's trap armed at once with x's clock: %v %v", v.Action, v.Reason)
	}
	// A fresh name with those rules adopts their clock (TestTrapsUnderFreshHostNames).
	if v := decide("z.example", e.TrapLinkFor("http://z.example", "198.51.101.9:1"), "Scraper/1.0", "198.51.101.9:1"); v.Reason != ReasonTrap {
		t.Fatalf("a fresh name: %v %v", v.Action, v.Reason)
	}
}
