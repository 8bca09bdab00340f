package guard

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/internal/testorigin"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/report"
	"github.com/robotsguard/robotsguard/sites"
	"github.com/robotsguard/robotsguard/traps"
)

const trapRobots = `User-agent: *
Disallow: /no-robots/
Disallow: /private/

User-agent: Googlebot
Disallow: /no-robots/
Crawl-delay: 1
`

// trapEngine has the trap /no-robots/ and bans of 1 h (2 h max).
func trapEngine(t testing.TB, robots string, clk *testclock.Clock, mod func(*Config), opts ...Option) (*Engine, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	zero := duration.Duration(0)
	cfg := Config{Traps: traps.Config{Paths: []string{"/no-robots/"}, Grace: &zero}, Bans: limit.BansConfig{For: duration.Duration(time.Hour), Max: duration.Duration(2 * time.Hour)}}
	if mod != nil {
		mod(&cfg)
	}
	opts = append([]Option{WithSource(sites.BytesSource([]byte(robots))), WithClock(clk.Now), WithLogger(zap.New(core))}, opts...)
	e := mustNew(t, cfg, opts...)
	t.Cleanup(func() { e.Close() })
	// A bot's request waits for the site's first fetch (a browser's does
	// not), so the tests start with the robots.txt in force.
	at(e, "WarmupBot/1.0", "/", "192.0.2.250:1")
	return e, logs
}

func at(e *Engine, ua, target, ip string) Verdict {
	return e.Decide(context.Background(), Request{Host: "example.com", Target: target, UserAgent: ua, ClientIP: ip})
}

// A browser-header client that fetches the trap is refused everything but
// /robots.txt for the ban time; a repeat offender twice as long, up to the
// cap; other clients are not affected.
func TestTrapBansBrowserHeader(t *testing.T) {
	clk := testclock.New()
	e, logs := trapEngine(t, trapRobots, clk, nil)
	const ip = "198.51.100.7:1234"
	if v := at(e, uaChrome, "/page", ip); v.Action != Allow {
		t.Fatalf("before: %v", v.Action)
	}
	v := at(e, uaChrome, e.TrapLinkFor(exampleSite, ip), ip)
	if v.Action != Deny || v.Reason != ReasonTrap || !strings.Contains(v.Message(), "banned until 2026-01-01T01:00:00Z for ignoring this site's robots.txt") {
		t.Fatalf("trap: %v %v %q", v.Action, v.Reason, v.Message())
	}
	for _, target := range []string{"/page", "/", "/public/x?y=1"} {
		v := at(e, uaChrome, target, ip)
		if v.Action != Deny || v.Reason != ReasonBanned || !strings.Contains(v.Message(), "banned until 2026-01-01T01:00:00Z") {
			t.Fatalf("%s while banned: %v %v", target, v.Action, v.Reason)
		}
	}
	if v := at(e, uaChrome, "/robots.txt", ip); v.Action != Allow {
		t.Fatal("/robots.txt must stay open to a banned client")
	}
	if v := at(e, uaChrome, "/page", "198.51.100.8:1"); v.Action != Allow {
		t.Fatal("another address is not banned")
	}
	if n := logs.FilterMessage("robots_guard: banned for ignoring robots.txt").Len(); n != 1 {
		t.Fatalf("%d ban lines", n)
	}
	clk.Add(time.Hour)
	if v := at(e, uaChrome, "/page", ip); v.Action != Allow {
		t.Fatalf("after the ban: %v", v.Action)
	}
	// Again: 2 h (doubled), then 2 h (the cap).
	for _, want := range []time.Duration{2 * time.Hour, 2 * time.Hour} {
		v := at(e, uaChrome, e.TrapLinkFor(exampleSite, ip), ip)
		if got := time.Duration(v.BanUntil - clk.Now().UnixNano()); v.Reason != ReasonTrap || got != want {
			t.Fatalf("repeat: %v for %v, want %v", v.Reason, got, want)
		}
		clk.Add(want)
	}
	// The HTTP answer: 403, Retry-After, the reason in the body.
	h := serve(e, site(trapRobots))
	rec := doIP(h, uaChrome, e.TrapLinkFor(exampleSite, "198.51.100.9:1"), "198.51.100.9:1")
	if rec.Code != 403 || rec.Header().Get("Retry-After") != "3600" || !strings.Contains(rec.Body.String(), "banned until") {
		t.Fatalf("%d %q %q", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	// Unban.
	if bans := e.Bans(context.Background()); len(bans) != 1 || bans[0].Client != "198.51.100.9/32" || !strings.HasPrefix(bans[0].Reason, "trap /no-robots/") {
		t.Fatalf("bans %+v", bans)
	}
	if ok, err := e.Unban(context.Background(), "198.51.100.9"); !ok || err != nil {
		t.Fatalf("unban: %v %v", ok, err)
	}
	if rec := doIP(h, uaChrome, "/page", "198.51.100.9:1"); rec.Code != 200 {
		t.Fatalf("after unban: %d", rec.Code)
	}
	if _, err := e.Unban(context.Background(), "not-an-ip"); err == nil {
		t.Fatal("a bad address must be an error")
	}
}

// A trap that robots.txt does not disallow for every bot is not armed: a
// warning names it and the group that allows it, and nobody is banned.
func TestTrapNotArmed(t *testing.T) {
	for _, tc := range []struct{ name, robots, allowedFor string }{
		{"a group allows it", "User-agent: *\nDisallow: /no-robots/\n\nUser-agent: Googlebot\nDisallow: /private/\n", "Googlebot"},
		{"an Allow in *", "User-agent: *\nDisallow: /no-robots/\nAllow: /no-robots/open\n", ""},
		{"no * group", "User-agent: Googlebot\nDisallow: /no-robots/\n", "bots no group names (there is no User-agent: * group)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.New()
			e, logs := trapEngine(t, tc.robots, clk, nil)
			target := "/no-robots/x"
			if tc.allowedFor == "" {
				target = "/no-robots/open"
			}
			if v := at(e, uaChrome, target, "198.51.100.7:1"); v.Reason == ReasonTrap || v.Reason == ReasonBanned {
				t.Fatalf("an unarmed trap banned: %v", v.Reason)
			}
			if v := at(e, uaChrome, "/page", "198.51.100.7:1"); v.Action != Allow {
				t.Fatal("banned")
			}
			if tc.allowedFor != "" {
				w := logs.FilterMessageSnippet("trap not armed").All()
				if len(w) != 1 || w[0].ContextMap()["trap"] != "/no-robots/" || w[0].ContextMap()["allowed_for"] != tc.allowedFor {
					t.Fatalf("warning: %v", logs.All())
				}
			}
		})
	}
}

// Verified crawlers are never banned: their request for a trap gets the
// normal 403. A bot that claims Googlebot from elsewhere is banned.
func TestTrapSparesVerified(t *testing.T) {
	clk := testclock.New()
	vc := verifyConfig(t, identity.SpoofedStar, "")
	e, _ := trapEngine(t, trapRobots, clk, func(c *Config) { c.Verify = vc.Verify })
	deadline := time.Now().Add(5 * time.Second)
	for !e.Verifier().Feeds()[0].Loaded {
		if time.Now().After(deadline) {
			t.Fatal("feed")
		}
		time.Sleep(time.Millisecond)
	}
	v := at(e, uaGoogle, e.TrapLinkFor(exampleSite, googleIP), googleIP)
	if v.Action != Deny || v.Reason != ReasonDisallowed || v.Verification != identity.Verified {
		t.Fatalf("verified: %v %v %v", v.Action, v.Reason, v.Verification)
	}
	if v := at(e, uaGoogle, "/page", googleIP); v.Reason == ReasonBanned {
		t.Fatal("a verified crawler was banned")
	}
	if v := at(e, uaGoogle, e.TrapLinkFor(exampleSite, spoofIP), spoofIP); v.Reason != ReasonTrap {
		t.Fatalf("spoofer: %v", v.Reason)
	}
}

// ban_after: N robots.txt denials within the window ban; fewer, or spread
// wider, do not.
func TestBanAfter(t *testing.T) {
	clk := testclock.New()
	e, _ := trapEngine(t, trapRobots, clk, func(c *Config) {
		c.Traps.Paths = nil
		c.Bans.After = &limit.BanAfter{Denials: 3, Window: duration.Duration(time.Minute)}
	})
	const bot = "Mozilla/5.0 (compatible; AhrefsBot/7.0)"
	for i := range 2 {
		at(e, bot, "/private/a", "203.0.113.1:1")
		clk.Add(50 * time.Second) // two denials per minute at most
		_ = i
	}
	at(e, bot, "/private/a", "203.0.113.1:1")
	if v := at(e, bot, "/page", "203.0.113.1:1"); v.Reason == ReasonBanned {
		t.Fatal("denials spread over more than the window banned")
	}
	for range 3 {
		at(e, bot, "/private/b", "203.0.113.2:1")
	}
	if v := at(e, bot, "/page", "203.0.113.2:1"); v.Reason != ReasonBanned {
		t.Fatalf("3 denials in a minute: %v", v.Reason)
	}
	// A Googlebot whose claim cannot be verified (its address is not
	// globally reachable here) is refused /private/, which only "*"
	// disallows, but its own group allows it: no strikes for that.
	for range 5 {
		if v := at(e, uaGoogle, "/private/a", "203.0.113.3:1"); v.Action != Deny || v.Group != "*" {
			t.Fatalf("an unverified Googlebot on a path only * disallows: %v %q", v.Action, v.Group)
		}
		clk.Add(time.Second)
	}
	if v := at(e, uaGoogle, "/page", "203.0.113.3:1"); v.Reason == ReasonBanned {
		t.Fatal("an unverified crawler was banned for paths its own group allows")
	}
	// Its own group's Disallow counts as usual.
	for range 3 {
		at(e, uaGoogle, "/no-robots/x", "203.0.113.4:1")
	}
	if v := at(e, uaGoogle, "/page", "203.0.113.4:1"); v.Reason != ReasonBanned {
		t.Fatalf("3 denials by its own group: %v", v.Reason)
	}
}

// dry_run logs bans without enforcing them.
func TestTrapDryRun(t *testing.T) {
	clk := testclock.New()
	e, logs := trapEngine(t, trapRobots, clk, func(c *Config) { c.DryRun = true })
	v := at(e, uaChrome, e.TrapLinkFor(exampleSite, "198.51.100.7:1"), "198.51.100.7:1")
	if v.Reason != ReasonTrap || v.Enforced() {
		t.Fatalf("dry run trap: %v %v", v.Reason, v.Enforced())
	}
	if v := at(e, uaChrome, "/page", "198.51.100.7:1"); v.Reason == ReasonBanned {
		t.Fatal("dry run banned")
	}
	if logs.FilterMessage("robots_guard: dry run: would ban for ignoring robots.txt").Len() != 1 {
		t.Fatalf("logs %v", logs.All())
	}
}

// The report after a scripted mix of traffic has the exact counts.
func TestReportCounts(t *testing.T) {
	clk := testclock.New()
	e, _ := trapEngine(t, trapRobots, clk, nil)
	const bot = "Mozilla/5.0 (compatible; AhrefsBot/7.0)"
	for range 3 {
		at(e, bot, "/private/x", "203.0.113.1:1") // line 3, group *
	}
	at(e, uaGoogle, e.TrapLinkFor(exampleSite, "203.0.113.2:1"), "203.0.113.2:1") // a trap: banned (no verification: none)
	at(e, uaGoogle, "/page", "203.0.113.2:1")                                     // banned
	at(e, uaGoogle, "/page", "203.0.113.2:1")                                     // banned
	for range burst {
		at(e, uaGoogle, "/page", "203.0.113.3:1") // allowed (the burst of the tolerance)
	}
	at(e, uaGoogle, "/page", "203.0.113.3:1") // throttled (Crawl-delay 1)
	clk.Add(2 * time.Hour)                    // out of the last hour, in the last day
	at(e, bot, "/private/y", "203.0.113.1:1")
	r := e.Report()
	if len(r.Sites) != 1 {
		t.Fatalf("%+v", r)
	}
	s := r.Sites[0]
	row := func(rows []report.ClientReport, client string) report.ClientReport {
		for _, c := range rows {
			if c.Client == client {
				return c
			}
		}
		return report.ClientReport{}
	}
	if h := row(s.LastHour, "203.0.113.1/32"); h.Denials != 1 || h.Group != "*" {
		t.Fatalf("last hour, client 1: %+v (all %+v)", h, s.LastHour)
	}
	if len(s.LastHour) != 1 {
		t.Fatalf("last hour: %+v", s.LastHour)
	}
	d1, d2, d3 := row(s.LastDay, "203.0.113.1/32"), row(s.LastDay, "203.0.113.2/32"), row(s.LastDay, "203.0.113.3/32")
	if d1.Denials != 4 || d1.Error != 0 || d2.Traps != 1 || d2.Banned != 2 || d2.Group != "Googlebot" || d3.Throttles != 1 || d3.Denials != 0 {
		t.Fatalf("last day: %+v %+v %+v", d1, d2, d3)
	}
	if len(s.Lines) != 1 || s.Lines[0].Line != 3 || s.Lines[0].Count != 4 || s.Lines[0].Rule != "Disallow: /private/" ||
		len(s.Lines[0].Whom) != 1 || s.Lines[0].Whom[0].Group != "*" || s.Lines[0].Whom[0].Count != 4 {
		t.Fatalf("lines: %+v", s.Lines)
	}
}

// A trap arms only after the site's robots.txt has disallowed it for
// trap_grace without a break (crawlers may hold a copy for 24 h); a copy
// that does not arm it restarts the clock. Browsers made to load it by
// another page (fetch metadata) are not banned.
func TestTrapGraceAndFetchMetadata(t *testing.T) {
	clk := testclock.New()
	src := testorigin.NewEditable(trapRobots)
	e := mustNew(t, Config{RobotsTxt: sites.Config{Refresh: duration.Duration(time.Minute)}, Traps: traps.Config{Paths: []string{"/no-robots/"}, Links: traps.LinksStatic}}, WithClock(clk.Now))
	defer e.Close()
	at := func(e *Engine, ua, target, ip string) Verdict {
		return e.Decide(context.Background(), Request{Host: "example.com", Target: target, UserAgent: ua, ClientIP: ip, Origin: src})
	}
	at(e, "WarmupBot/1.0", "/", "192.0.2.250:1")
	if v := at(e, uaChrome, "/no-robots/x", "198.51.100.1:1"); v.Reason == ReasonTrap {
		t.Fatal("armed before the grace")
	}
	clk.Add(24 * time.Hour)
	refresh := func() { e.Invalidate(""); at(e, "WarmupBot/1.0", "/", "192.0.2.250:1") }
	refresh() // same copy (304): the clock runs on
	if v := at(e, uaChrome, "/no-robots/x", "198.51.100.2:1"); v.Reason != ReasonTrap {
		t.Fatalf("after 24 h: %v", v.Reason)
	}
	// The Disallow goes away for a while: the clock starts again.
	src.Set("User-agent: *\nDisallow: /private/\n")
	clk.Add(2 * time.Minute)
	refresh()
	src.Set(trapRobots)
	clk.Add(2 * time.Minute)
	refresh()
	if v := at(e, uaChrome, "/no-robots/x", "198.51.100.3:1"); v.Reason == ReasonTrap {
		t.Fatal("armed right after the Disallow came back")
	}
	clk.Add(24 * time.Hour)
	refresh()
	for _, tc := range []struct {
		method, site, dest string
		ban                bool
	}{
		{"GET", "", "", true},                    // a scraper: no fetch metadata
		{"GET", "none", "document", false},       // a link opened from a mail or chat app
		{"GET", "same-origin", "document", true}, // the hidden link followed
		{"GET", "cross-site", "document", false}, // a link on someone else's page
		{"GET", "same-site", "document", false},
		{"GET", "cross-site", "image", false}, // <img src=/no-robots/> elsewhere
		{"GET", "same-origin", "image", false},
		{"POST", "", "", false},
		{"GET", "same-origin", "document-prefetch", false}, // a prefetch (Sec-Purpose below)
	} {
		ip := fmt.Sprintf("198.51.100.%d:1", 50+len(tc.site)+len(tc.dest)+len(tc.method))
		req := Request{Host: "example.com", Target: "/no-robots/x", UserAgent: uaChrome, ClientIP: ip,
			Method: tc.method, SecFetchSite: tc.site, SecFetchDest: tc.dest, Origin: src}
		if tc.dest == "document-prefetch" {
			req.SecFetchDest, req.SecPurpose = "document", "prefetch"
		}
		v := e.Decide(context.Background(), req)
		if got := v.Reason == ReasonTrap; got != tc.ban {
			t.Errorf("%+v: trap %v, want %v", tc, got, tc.ban)
		}
		e.Unban(context.Background(), ip[:strings.IndexByte(ip, ':')])
	}
}

// BenchmarkTrapsBrowser is a browser request with traps configured and no
// ban in force: the cost of traps on every visitor (compare BenchmarkBrowser).
func BenchmarkTrapsBrowser(b *testing.B) {
	clk := testclock.New()
	e, _ := trapEngine(b, trapRobots, clk, nil, WithLogger(zap.NewNop()))
	r := benchRequest(uaChrome, "/public/page?id=42")
	runBench(b, serve(e, okHandler), r, 200)
}

// BenchmarkBannedRequest is a request of a banned client, refused.
func BenchmarkBannedRequest(b *testing.B) {
	clk := testclock.New()
	e, _ := trapEngine(b, trapRobots, clk, nil, WithLogger(zap.NewNop()))
	at(e, uaChrome, e.TrapLinkFor(exampleSite, "192.0.2.1:1234"), "192.0.2.1:1234")
	r := benchRequest(uaChrome, "/public/page?id=42")
	r.RemoteAddr = "192.0.2.1:1234"
	runBench(b, serve(e, okHandler), r, 403)
}

// banCounter counts ObserveBan calls by trigger and outcome.
type banCounter struct {
	countObserver
	mu   sync.Mutex
	bans map[string]int
}

func (o *banCounter) ObserveBan(trigger, outcome string, dryRun bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bans == nil {
		o.bans = map[string]int{}
	}
	o.bans[trigger+"/"+outcome]++
}

// With max_bans live bans held, a new trap hit is refused (403) but bans
// nobody and lifts nobody's ban; it is counted as dropped and logged.
func TestBanDroppedWhenFull(t *testing.T) {
	clk := testclock.New()
	obs := &banCounter{}
	e, logs := trapEngine(t, trapRobots, clk, func(c *Config) { c.Bans.MaxEntries = 2 }, WithObserver(obs))
	for _, ip := range []string{"198.51.100.1:1", "198.51.100.2:1"} {
		if v := at(e, uaChrome, e.TrapLinkFor(exampleSite, ip), ip); v.BanUntil == 0 {
			t.Fatalf("%s: not banned", ip)
		}
	}
	v := at(e, uaChrome, e.TrapLinkFor(exampleSite, "198.51.100.3:1"), "198.51.100.3:1")
	if v.Action != Deny || v.Reason != ReasonTrap || v.BanUntil != 0 {
		t.Fatalf("a trap hit with the list full: %v %v until %d", v.Action, v.Reason, v.BanUntil)
	}
	if v := at(e, uaChrome, "/page", "198.51.100.1:1"); v.Reason != ReasonBanned {
		t.Fatal("the first ban was lifted to make room")
	}
	if v := at(e, uaChrome, "/page", "198.51.100.3:1"); v.Action != Allow {
		t.Fatalf("the refused client: %v %v", v.Action, v.Reason)
	}
	if obs.bans["trap/banned"] != 2 || obs.bans["trap/dropped"] != 1 {
		t.Fatalf("ban outcomes %v", obs.bans)
	}
	if logs.FilterMessage("robots_guard: ban dropped: the ban list is full of live bans").Len() != 1 {
		t.Fatalf("logs %v", logs.All())
	}
}

// A browser-header client stopped by a trap and its ban is reported as
// "(browser)", not as the "*" group its header falls to.
func TestReportNamesBrowsers(t *testing.T) {
	e, _ := trapEngine(t, trapRobots, testclock.New(), nil)
	at(e, uaChrome, e.TrapLinkFor(exampleSite, "198.51.100.7:1"), "198.51.100.7:1")
	at(e, uaChrome, "/page", "198.51.100.7:1")
	rows := e.Report().Sites[0].LastHour
	if len(rows) != 1 || rows[0].Group != browserGroup || rows[0].Traps != 1 || rows[0].Banned != 1 {
		t.Fatalf("rows %+v", rows)
	}
}

// With per-client trap links (the default), a client's own link bans it
// whatever its fetch metadata says (a scraper cannot dodge with two
// headers), yesterday's link too; anything else under the trap path (the
// bare path, another client's link, a made-up or stale token) is refused
// and bans nobody, so no third party can aim the trap at a visitor.
func TestTrapLinksPerClient(t *testing.T) {
	clk := testclock.New()
	e, _ := trapEngine(t, trapRobots, clk, nil)
	const scraper, visitor = "198.51.100.20:1", "198.51.100.21:1"
	link := e.TrapLinkFor(exampleSite, scraper)
	if !strings.HasPrefix(link, "/no-robots/") || len(link) != len("/no-robots/")+traps.TokenLen || link == e.TrapLinkFor(exampleSite, visitor) {
		t.Fatalf("links %q and %q", link, e.TrapLinkFor(exampleSite, visitor))
	}
	try := func(target, ip string, meta ...string) Verdict {
		req := Request{Host: "example.com", Target: target, UserAgent: uaChrome, ClientIP: ip, Method: "GET"}
		if len(meta) == 2 {
			req.SecFetchSite, req.SecFetchDest = meta[0], meta[1]
		}
		return e.Decide(context.Background(), req)
	}
	for _, c := range []struct {
		name, target, ip string
		meta             []string
	}{
		{"the bare trap path", "/no-robots/", visitor, nil},
		{"another client's link", link, visitor, nil},
		{"another client's link, embedded cross-site", link, visitor, []string{"cross-site", "image"}},
		{"a made-up token", "/no-robots/AAAAAAAAAAAAAAAA", visitor, nil},
		{"a token of the wrong length", link + "x", scraper, nil},
		{"the scraper's own link of another site", e.TrapLinkFor("https://other.example", scraper), scraper, nil},
	} {
		if v := try(c.target, c.ip, c.meta...); v.Action != Deny || v.Reason != ReasonTrapUnattributed || v.BanUntil != 0 {
			t.Errorf("%s: %v %v until %d, want 403 trap_unattributed and no ban", c.name, v.Action, v.Reason, v.BanUntil)
		}
	}
	if v := try("/page", visitor); v.Action != Allow {
		t.Fatalf("the visitor was banned: %v %v", v.Action, v.Reason)
	}
	rows := e.Report().Sites[0].LastHour
	unattributed := int64(0)
	for _, r := range rows {
		unattributed += r.UnattributedTraps
	}
	if unattributed != 6 {
		t.Fatalf("%d unattributed trap requests in the report, want 6: %+v", unattributed, rows)
	}
	// The scraper's own link, fetched with a browser's cross-site image
	// metadata: banned all the same.
	if v := try(link, scraper, "cross-site", "image"); v.Reason != ReasonTrap || v.BanUntil == 0 {
		t.Fatalf("own link with cross-site metadata: %v %v", v.Action, v.Reason)
	}
	// Yesterday's link still bans (a page rendered before midnight);
	// one of two days ago does not.
	old := e.TrapLinkFor(exampleSite, visitor)
	clk.Add(24 * time.Hour)
	if v := try(old, visitor); v.Reason != ReasonTrap {
		t.Fatalf("yesterday's link: %v", v.Reason)
	}
	e.Unban(context.Background(), "198.51.100.21")
	clk.Add(24 * time.Hour)
	if v := try(old, visitor); v.Reason != ReasonTrapUnattributed {
		t.Fatalf("a link of two days ago: %v", v.Reason)
	}
}

// Two Engines with one trap_secret make the same links (a fleet, or a
// restart); different secrets do not.
func TestTrapSecret(t *testing.T) {
	mk := func(secret string) *Engine {
		return mustNew(t, Config{Traps: traps.Config{Paths: []string{"/no-robots"}, Secret: secret}}, WithSource(sites.BytesSource([]byte(trapRobots))))
	}
	a, b, c := mk("0123456789abcdef0123"), mk("0123456789abcdef0123"), mk("another secret of enough bytes")
	if la := a.TrapLinkFor(exampleSite, "192.0.2.1"); la != b.TrapLinkFor(exampleSite, "192.0.2.1") || la == c.TrapLinkFor(exampleSite, "192.0.2.1") || !strings.HasPrefix(la, "/no-robots/") {
		t.Fatalf("links %q %q %q", la, b.TrapLinkFor(exampleSite, "192.0.2.1"), c.TrapLinkFor(exampleSite, "192.0.2.1"))
	}
	if l := mustNew(t, Config{Traps: traps.Config{Paths: []string{"/no-robots/"}, Links: traps.LinksStatic}}).TrapLinkFor(exampleSite, "192.0.2.1"); l != "" {
		t.Fatalf("static mode link %q", l)
	}
	for cfg, want := range map[*Config]string{
		{Traps: traps.Config{Paths: []string{"/*/print$"}}}:             "robots_guard: traps: links: per-client trap links need a trap that is a plain path",
		{Traps: traps.Config{Paths: []string{"/t/"}, Secret: "short"}}:  "robots_guard: traps: secret: must be at least 16 bytes, got 5",
		{Traps: traps.Config{Paths: []string{"/t/"}, Links: "dynamic"}}: `robots_guard: traps: links: must be "client" or "static", got "dynamic"`,
	} {
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", *cfg, err, want)
		}
	}
}

// memClocks is a traps.ClockStore in a map, standing for storage that
// outlives an Engine.
type memClocks struct {
	mu sync.Mutex
	m  map[string][2]time.Time
}

func (c *memClocks) LoadTrapClock(site, trap string) (since, confirmed time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[site+" "+trap]
	return t[0], t[1], ok
}

func (c *memClocks) StoreTrapClock(site, trap string, since, confirmed time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[site+" "+trap] = [2]time.Time{since, confirmed}
}

func (c *memClocks) DeleteTrapClock(site, trap string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, site+" "+trap)
}

// The grace clock of a trap is visible (Sites), announced in the log, and
// kept in a traps.ClockStore: an Engine that starts again with the same
// store goes on with the clock instead of waiting trap_grace again.
func TestTrapGraceVisibleAndKept(t *testing.T) {
	clk := testclock.New()
	store := &memClocks{m: map[string][2]time.Time{}}
	grace := duration.Duration(time.Hour)
	mk := func() (*Engine, *observer.ObservedLogs) {
		return trapEngine(t, trapRobots, clk, func(c *Config) { c.Traps.Grace = &grace }, WithTrapClocks(store))
	}
	state := func(e *Engine) traps.Status {
		t.Helper()
		s := e.Sites()
		if len(s) != 1 || len(s[0].Traps) != 1 {
			t.Fatalf("sites %+v", s)
		}
		return s[0].Traps[0]
	}
	start := clk.Now()
	e, logs := mk()
	if st := state(e); st.State != "waiting" || !st.ArmsAt.Equal(start.Add(time.Hour)) {
		t.Fatalf("at start: %+v", st)
	}
	if logs.FilterMessageSnippet("trap waiting").Len() != 1 {
		t.Fatalf("no line says the trap waits: %v", logs.All())
	}
	clk.Add(40 * time.Minute)
	e.Close()
	e2, _ := mk() // a restart, 40 minutes in
	if st := state(e2); st.State != "waiting" || !st.ArmsAt.Equal(start.Add(time.Hour)) {
		t.Fatalf("after a restart: %+v, want the clock of the first run", st)
	}
	clk.Add(21 * time.Minute)
	if st := state(e2); st.State != "armed" {
		t.Fatalf("an hour after the first run: %+v", st)
	}
	// A start long after the clock was last confirmed: the Disallow may
	// have gone and come back meanwhile, so the grace starts again.
	clk.Add(3 * time.Hour)
	e4, _ := mk()
	if st := state(e4); st.State != "waiting" {
		t.Fatalf("a start 3 h after the clock was last confirmed: %+v", st)
	}
	// Fetches that confirm the copy keep the stored clock fresh.
	restarted := clk.Now()
	for range 3 {
		clk.Add(20 * time.Minute)
		e4.Invalidate("")
		at(e4, "WarmupBot/1.0", "/", "192.0.2.250:1")
	}
	clk.Add(30 * time.Minute)
	e5, _ := mk()
	if st := state(e5); st.State != "armed" {
		t.Fatalf("a start 30 min after the last confirmation, %v after the clock started: %+v", clk.Now().Sub(restarted), st)
	}
	if v := at(e5, uaChrome, e5.TrapLinkFor(exampleSite, "198.51.100.70:1"), "198.51.100.70:1"); v.Reason != ReasonTrap || v.BanUntil == 0 {
		t.Fatalf("the armed trap: %v %v", v.Action, v.Reason)
	}
	// A copy that stops disallowing it: not armed, and the kept clock goes.
	e3, _ := trapEngine(t, "User-agent: *\nDisallow: /private/\n", clk, func(c *Config) { c.Traps.Grace = &grace }, WithTrapClocks(store))
	if st := state(e3); st.State != "not_armed" || st.AllowedFor == "" {
		t.Fatalf("not disallowed: %+v", st)
	}
	if len(store.m) != 0 {
		t.Fatalf("the clock is kept for a trap that is not disallowed: %v", store.m)
	}
}

// A million distinct addresses hitting the trap after a scraper was banned
// do not lift its ban: once max_bans live bans are held, new ones are
// refused. The ban list stays at its bound in memory, and a browser's
// request meanwhile costs what it costs without the flood (the figures
// are logged; the ban check is O(1) and making room O(log n)).
func TestTrapFloodCannotLiftABan(t *testing.T) {
	if testing.Short() {
		t.Skip("a million trap hits")
	}
	clk := testclock.New()
	n := 1_000_000
	if raceEnabled {
		n = 150_000
	}
	e, _ := trapEngine(t, trapRobots, clk, func(c *Config) { c.Traps.Links = traps.LinksStatic }, WithLogger(zap.NewNop()))
	const scraper = "198.51.100.99:1"
	if v := at(e, uaChrome, "/no-robots/", scraper); v.BanUntil == 0 {
		t.Fatal("the scraper was not banned")
	}
	browse := func(k int) []time.Duration {
		lat := make([]time.Duration, k)
		for i := range lat {
			start := time.Now()
			at(e, uaChrome, "/page", "192.0.2.1:1")
			lat[i] = time.Since(start)
		}
		slices.Sort(lat)
		return lat
	}
	base := browse(20000)
	runtime.GC()
	before := heapAlloc()
	var flood []time.Duration
	for i := range n {
		at(e, uaChrome, "/no-robots/", fmt.Sprintf("10.%d.%d.%d:1", byte(i>>16), byte(i>>8), byte(i)))
		if i%50 == 0 {
			start := time.Now()
			at(e, uaChrome, "/page", "192.0.2.1:1")
			flood = append(flood, time.Since(start))
		}
	}
	grown := int64(heapAlloc()) - int64(before)
	slices.Sort(flood)
	p := func(l []time.Duration, q float64) time.Duration { return l[int(q*float64(len(l)-1))] }
	t.Logf("browser p50/p99 %v/%v alone, %v/%v during %d trap hits; heap +%.1f MB with max_bans %d",
		p(base, 0.5), p(base, 0.99), p(flood, 0.5), p(flood, 0.99), n, float64(grown)/(1<<20), limit.DefaultMaxBans)
	if v := at(e, uaChrome, "/page", scraper); v.Reason != ReasonBanned {
		t.Fatalf("after %d other trap hits the scraper's ban is gone: %v %v", n, v.Action, v.Reason)
	}
	if grown > 40<<20 {
		t.Fatalf("heap grew %d MB during the flood", grown>>20)
	}
}
