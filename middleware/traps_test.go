package middleware

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/robotsguard/robotsguard/identity"
)

const trapRobots = `User-agent: *
Disallow: /no-robots/
Disallow: /private/

User-agent: Googlebot
Disallow: /no-robots/
Crawl-delay: 1
`

// trapEnforcer has the trap /no-robots/ and bans of 1 h (2 h max).
func trapEnforcer(t testing.TB, robots string, clk *clock, mod func(*Config), opts ...Option) (*Enforcer, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	zero := Duration(0)
	cfg := Config{Traps: []string{"/no-robots/"}, BanFor: Duration(time.Hour), BanMax: Duration(2 * time.Hour), TrapGrace: &zero}
	if mod != nil {
		mod(&cfg)
	}
	opts = append([]Option{WithSource(BytesSource([]byte(robots))), WithClock(clk.Now), WithLogger(zap.New(core))}, opts...)
	e := mustNew(t, cfg, opts...)
	t.Cleanup(func() { e.Close() })
	// A bot's request waits for the site's first fetch (a browser's does
	// not), so the tests start with the robots.txt in force.
	at(e, "WarmupBot/1.0", "/", "192.0.2.250:1")
	return e, logs
}

func at(e *Enforcer, ua, target, ip string) Verdict {
	return e.Decide(context.Background(), Request{Host: "example.com", Target: target, UserAgent: ua, ClientIP: ip})
}

// A browser-header client that fetches the trap is refused everything but
// /robots.txt for the ban time; a repeat offender twice as long, up to the
// cap; other clients are not affected.
func TestTrapBansBrowserHeader(t *testing.T) {
	clk := newClock()
	e, logs := trapEnforcer(t, trapRobots, clk, nil)
	const ip = "198.51.100.7:1234"
	if v := at(e, uaChrome, "/page", ip); v.Action != Allow {
		t.Fatalf("before: %v", v.Action)
	}
	v := at(e, uaChrome, "/no-robots/secret", ip)
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
		v := at(e, uaChrome, "/no-robots/", ip)
		if got := time.Duration(v.BanUntil - clk.Now().UnixNano()); v.Reason != ReasonTrap || got != want {
			t.Fatalf("repeat: %v for %v, want %v", v.Reason, got, want)
		}
		clk.Add(want)
	}
	// The HTTP answer: 403, Retry-After, the reason in the body.
	h := e.Handler(site(trapRobots))
	rec := doIP(h, uaChrome, "/no-robots/x", "198.51.100.9:1")
	if rec.Code != 403 || rec.Header().Get("Retry-After") != "3600" || !strings.Contains(rec.Body.String(), "banned until") {
		t.Fatalf("%d %q %q", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	// Unban.
	if bans := e.Bans(); len(bans) != 1 || bans[0].Client != "198.51.100.9/32" || !strings.HasPrefix(bans[0].Reason, "trap /no-robots/") {
		t.Fatalf("bans %+v", bans)
	}
	if ok, err := e.Unban("198.51.100.9"); !ok || err != nil {
		t.Fatalf("unban: %v %v", ok, err)
	}
	if rec := doIP(h, uaChrome, "/page", "198.51.100.9:1"); rec.Code != 200 {
		t.Fatalf("after unban: %d", rec.Code)
	}
	if _, err := e.Unban("not-an-ip"); err == nil {
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
			clk := newClock()
			e, logs := trapEnforcer(t, tc.robots, clk, nil)
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
	clk := newClock()
	vc := verifyConfig(t, SpoofedStar, "")
	e, _ := trapEnforcer(t, trapRobots, clk, func(c *Config) { c.Verify = vc.Verify })
	deadline := time.Now().Add(5 * time.Second)
	for !e.Verifier().Feeds()[0].Loaded {
		if time.Now().After(deadline) {
			t.Fatal("feed")
		}
		time.Sleep(time.Millisecond)
	}
	v := at(e, uaGoogle, "/no-robots/x", googleIP)
	if v.Action != Deny || v.Reason != ReasonDisallowed || v.Verification != identity.Verified {
		t.Fatalf("verified: %v %v %v", v.Action, v.Reason, v.Verification)
	}
	if v := at(e, uaGoogle, "/page", googleIP); v.Reason == ReasonBanned {
		t.Fatal("a verified crawler was banned")
	}
	if v := at(e, uaGoogle, "/no-robots/x", spoofIP); v.Reason != ReasonTrap {
		t.Fatalf("spoofer: %v", v.Reason)
	}
}

// ban_after: N robots.txt denials within the window ban; fewer, or spread
// wider, do not.
func TestBanAfter(t *testing.T) {
	clk := newClock()
	e, _ := trapEnforcer(t, trapRobots, clk, func(c *Config) {
		c.Traps = nil
		c.BanAfter = &BanAfter{Denials: 3, Window: Duration(time.Minute)}
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
}

// dry_run logs bans without enforcing them.
func TestTrapDryRun(t *testing.T) {
	clk := newClock()
	e, logs := trapEnforcer(t, trapRobots, clk, func(c *Config) { c.DryRun = true })
	v := at(e, uaChrome, "/no-robots/x", "198.51.100.7:1")
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
	clk := newClock()
	e, _ := trapEnforcer(t, trapRobots, clk, nil)
	const bot = "Mozilla/5.0 (compatible; AhrefsBot/7.0)"
	for range 3 {
		at(e, bot, "/private/x", "203.0.113.1:1") // line 3, group *
	}
	at(e, uaGoogle, "/no-robots/", "203.0.113.2:1") // a trap: banned (no verification: none)
	at(e, uaGoogle, "/page", "203.0.113.2:1")       // banned
	at(e, uaGoogle, "/page", "203.0.113.2:1")       // banned
	at(e, uaGoogle, "/page", "203.0.113.3:1")       // allowed
	at(e, uaGoogle, "/page", "203.0.113.3:1")       // throttled (Crawl-delay 1)
	clk.Add(2 * time.Hour)                          // out of the last hour, in the last day
	at(e, bot, "/private/y", "203.0.113.1:1")
	r := e.Report()
	if len(r.Sites) != 1 {
		t.Fatalf("%+v", r)
	}
	s := r.Sites[0]
	row := func(rows []ClientReport, client string) ClientReport {
		for _, c := range rows {
			if c.Client == client {
				return c
			}
		}
		return ClientReport{}
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

// A flood of a million distinct addresses keeps the report at its bound.
func TestReportFloodBound(t *testing.T) {
	if testing.Short() {
		t.Skip("a million decisions")
	}
	clk := newClock()
	// No log sink: the test's observer would keep the sampled lines.
	e, _ := trapEnforcer(t, trapRobots, clk, nil, WithLogger(zap.NewNop()))
	const bot = "Mozilla/5.0 (compatible; AhrefsBot/7.0)"
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 1_000_000
	if raceEnabled {
		n = 100_000
	}
	for i := range n {
		at(e, bot, "/private/x", fmt.Sprintf("10.%d.%d.%d", byte(i>>16), byte(i>>8), byte(i)))
		if i%1000 == 0 {
			clk.Add(time.Second)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	rep := e.Report()
	total := int64(0)
	for _, c := range rep.Sites[0].LastDay {
		total += c.Denials + c.Error
	}
	t.Logf("%d distinct addresses: heap +%d KB, %d rows in the last day, line count %d", n, grown/1024, len(rep.Sites[0].LastDay), rep.Sites[0].Lines[0].Count)
	if grown > 4<<20 {
		t.Fatalf("heap grew by %d MB", grown>>20)
	}
	if rep.Sites[0].Lines[0].Count != int64(n) {
		t.Fatalf("line count %d", rep.Sites[0].Lines[0].Count)
	}
}

// A trap arms only after the site's robots.txt has disallowed it for
// trap_grace without a break (crawlers may hold a copy for 24 h); a copy
// that does not arm it restarts the clock. Browsers made to load it by
// another page (fetch metadata) are not banned.
func TestTrapGraceAndFetchMetadata(t *testing.T) {
	clk := newClock()
	src := newEditableSite(trapRobots)
	e := mustNew(t, Config{Traps: []string{"/no-robots/"}, Refresh: Duration(time.Minute)}, WithClock(clk.Now))
	defer e.Close()
	at := func(e *Enforcer, ua, target, ip string) Verdict {
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
	src.set("User-agent: *\nDisallow: /private/\n")
	clk.Add(2 * time.Minute)
	refresh()
	src.set(trapRobots)
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
		{"GET", "none", "document", true},        // typed or scripted navigation
		{"GET", "same-origin", "document", true}, // the hidden link followed
		{"GET", "cross-site", "document", false}, // a link on someone else's page
		{"GET", "same-site", "document", false},
		{"GET", "cross-site", "image", false}, // <img src=/no-robots/> elsewhere
		{"GET", "same-origin", "image", false},
		{"POST", "", "", false},
	} {
		ip := fmt.Sprintf("198.51.100.%d:1", 50+len(tc.site)+len(tc.dest)+len(tc.method))
		v := e.Decide(context.Background(), Request{Host: "example.com", Target: "/no-robots/x", UserAgent: uaChrome, ClientIP: ip,
			Method: tc.method, SecFetchSite: tc.site, SecFetchDest: tc.dest, Origin: src})
		if got := v.Reason == ReasonTrap; got != tc.ban {
			t.Errorf("%+v: trap %v, want %v", tc, got, tc.ban)
		}
		e.Unban(ip[:strings.IndexByte(ip, ':')])
	}
}

// BenchmarkTrapsBrowser is a browser request with traps configured and no
// ban in force: the cost of traps on every visitor (compare BenchmarkBrowser).
func BenchmarkTrapsBrowser(b *testing.B) {
	clk := newClock()
	e, _ := trapEnforcer(b, trapRobots, clk, nil, WithLogger(zap.NewNop()))
	r := benchRequest(uaChrome, "/public/page?id=42")
	runBench(b, e.Handler(okHandler), r, 200)
}

// BenchmarkBannedRequest is a request of a banned client, refused.
func BenchmarkBannedRequest(b *testing.B) {
	clk := newClock()
	e, _ := trapEnforcer(b, trapRobots, clk, nil, WithLogger(zap.NewNop()))
	at(e, uaChrome, "/no-robots/x", "192.0.2.1:1234")
	r := benchRequest(uaChrome, "/public/page?id=42")
	r.RemoteAddr = "192.0.2.1:1234"
	runBench(b, e.Handler(okHandler), r, 403)
}

// Requests decided on many goroutines at once, with garbage collections
// between and reports read meanwhile, are all in the report: none waits
// unseen in a batch, none is lost with one, and reading does not race
// with flushing.
func TestReportConcurrentBatches(t *testing.T) {
	clk := newClock()
	e, _ := trapEnforcer(t, trapRobots, clk, nil, WithLogger(zap.NewNop()))
	const bot = "Mozilla/5.0 (compatible; AhrefsBot/7.0)"
	const workers, each = 8, 1000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	reads := make(chan int)
	go func() { // reports read while records are flushed
		n := 0
		defer func() { reads <- n }()
		for {
			select {
			case <-stop:
				return
			default:
				e.Report()
				n++
			}
		}
	}()
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				at(e, bot, "/private/x", fmt.Sprintf("203.0.113.%d:1", w))
				if i%250 == 0 {
					runtime.GC()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if n := <-reads; n == 0 {
		t.Error("no report was read during the run")
	}
	rep := e.Report()
	if len(rep.Sites) != 1 {
		t.Fatalf("%+v", rep)
	}
	var total int64
	for _, c := range rep.Sites[0].LastHour {
		total += c.Denials
		if c.Denials != each || c.Error != 0 {
			t.Errorf("%s: %d denials (error %d), want %d", c.Client, c.Denials, c.Error, each)
		}
	}
	if total != workers*each || rep.Sites[0].Lines[0].Count != workers*each {
		t.Fatalf("%d denials in the last hour, line count %d, want %d", total, rep.Sites[0].Lines[0].Count, workers*each)
	}
	if n := len(e.report.batches); n > e.report.maxBatches {
		t.Fatalf("%d batches, bound %d", n, e.report.maxBatches)
	}
}

// A record that waited in a batch while its five-minute slot went to a
// later time is counted in its hourly bucket; one whose hourly slot went to
// a later hour too is dropped, not counted as new.
func TestReportLateRecord(t *testing.T) {
	var sh reportShard
	sh.lines = map[lineKey]*lineStat{}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	key := reportKey{client: [16]byte{15: 1}, group: "*"}
	add := func(at time.Duration) {
		sh.add(&reportRecord{site: "s", key: key, at: base + int64(at), kind: recordDenial}, 1)
	}
	count := func(b bucket) int64 {
		if c := b.clients.m[key]; c != nil {
			return c.denials
		}
		return 0
	}
	add(time.Hour + 5*time.Minute) // slot 1 of the five-minute ring
	add(5 * time.Minute)           // slot 1 too, an hour older: the hourly bucket of 00:00
	if mb := sh.minutes[1]; mb.start != base+int64(time.Hour+5*time.Minute) || count(mb) != 1 {
		t.Fatalf("five-minute bucket: start %d, count %d", mb.start, count(mb))
	}
	if hb := sh.hours[0]; hb.start != base || count(hb) != 1 {
		t.Fatalf("hourly bucket 0: start %d, count %d", hb.start, count(hb))
	}
	add(25*time.Hour + 5*time.Minute) // slot 1 again: 01:05 goes to hourly bucket 1
	add(26*time.Hour + 5*time.Minute) // slot 1 again: hourly bucket 1 becomes 25:00
	add(time.Hour + 7*time.Minute)    // late: both its slots hold later times
	if hb := sh.hours[1]; hb.start != base+int64(25*time.Hour) || count(hb) != 1 {
		t.Fatalf("hourly bucket 1: start %d, count %d, want the 25:05 record only", hb.start, count(hb))
	}
	if mb := sh.minutes[1]; mb.start != base+int64(26*time.Hour+5*time.Minute) || count(mb) != 1 {
		t.Fatalf("five-minute bucket: start %d, count %d", mb.start, count(mb))
	}
}

// A batch whose ref the pool dropped goes back to use with its records,
// which are counted once; past the bound, new refs share batches.
func TestReportBatchReuse(t *testing.T) {
	clk := newClock()
	r := newReporter(32, 64, clk.Now)
	ref := r.pool.New().(*reportBatchRef)
	r.add(ref.b, reportRecord{site: "http://example.com", key: reportKey{client: [16]byte{15: 1}, group: "*"}, at: clk.Now().UnixNano(), kind: recordDenial})
	r.release(ref.b) // as the cleanup does once the pool dropped ref
	if len(r.idle) != 1 || r.idle[0] != ref.b || ref.b.refs != 0 {
		t.Fatalf("idle %d, refs %d", len(r.idle), ref.b.refs)
	}
	again := r.pool.New().(*reportBatchRef)
	if again.b != ref.b || again.b.refs != 1 || len(r.idle) != 0 || len(r.batches) != 1 {
		t.Fatalf("a new ref got batch %p (refs %d), want the idle %p; %d batches", again.b, again.b.refs, ref.b, len(r.batches))
	}
	for range 2 {
		rep := r.report()
		if len(rep.Sites) != 1 || len(rep.Sites[0].LastHour) != 1 || rep.Sites[0].LastHour[0].Denials != 1 {
			t.Fatalf("%+v", rep)
		}
	}
	for range r.maxBatches + 3 {
		r.pool.New()
	}
	if len(r.batches) != r.maxBatches {
		t.Fatalf("%d batches, bound %d", len(r.batches), r.maxBatches)
	}
	refs := 0
	for _, b := range r.batches {
		refs += b.refs
	}
	if refs != r.maxBatches+4 {
		t.Fatalf("%d refs counted, want %d", refs, r.maxBatches+4)
	}
}

// A batch counts a returning client in its record of the same five-minute
// slice; across slices (60 records, more than a batch holds) the report's
// counts stay exact.
func TestReportBatchAggregates(t *testing.T) {
	clk := newClock()
	r := newReporter(32, 64, clk.Now)
	b := r.pool.New().(*reportBatchRef).b
	const clients, rounds = 20, 30 // no report shard gets more than its 8 exact counters
	for round := range rounds {
		for c := range clients {
			r.add(b, reportRecord{site: "http://example.com", key: reportKey{client: [16]byte{10: 0xff, 11: 0xff, 15: byte(c)}, group: "*"}, at: clk.Now().UnixNano(), kind: recordDenial})
		}
		if round%10 == 9 {
			clk.Add(5 * time.Minute) // three slices in all
		}
		if round == 4 && b.n != clients {
			t.Fatalf("%d records in the batch after 5 rounds of %d clients in one slice", b.n, clients)
		}
	}
	rep := r.report()
	if len(rep.Sites) != 1 || len(rep.Sites[0].LastHour) != clients {
		t.Fatalf("%+v", rep)
	}
	for _, row := range rep.Sites[0].LastHour {
		if row.Denials != rounds || row.Error != 0 {
			t.Fatalf("%+v: want %d denials, exact", row, rounds)
		}
	}
}
