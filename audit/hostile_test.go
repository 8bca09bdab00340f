package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testdns"
)

// hostileCase is a log of issue 46's corpus: lines that stopped the
// audit, wrapped its times, went uncounted or would reach a terminal raw,
// and what each is counted as.
type hostileCase struct {
	name, log                          string
	entries, blank, skipped, malformed int64
	// reason is part of the first malformed line's reason.
	reason string
}

// t46 is the time of the corpus's requests.
var t46 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// caddyJSON is a line of Caddy's JSON access log with ts written as it
// is (a JSON number), and the other fields as JSON strings.
func caddyJSON(ts, client, host, uri, ua string) string {
	js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return fmt.Sprintf(`{"level":"info","ts":%s,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"127.0.0.1","client_ip":%s,"method":"GET","host":%s,"uri":%s,"headers":{"User-Agent":[%s]}},"status":200}`+"\n",
		ts, js(client), js(host), js(uri), js(ua))
}

// clf is a Combined line with its [time] and target written as they are.
func clf(ip, when, target, ua string) string {
	return fmt.Sprintf("%s - - [%s] \"GET %s HTTP/1.1\" 200 12 \"-\" \"%s\"\n", ip, when, target, ua)
}

// hostileCases is issue 46's corpus, in the tests and the fuzz targets'
// seeds.
func hostileCases() []hostileCase {
	ts := fmt.Sprint(t46.Unix())
	tomorrowPlus := fmt.Sprint(time.Now().Add(48 * time.Hour).Unix())
	good := clf("192.0.2.1", "01/Nov/2026:10:00:00 +0000", "/a", "FooBot/1.0")
	osc8 := "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\"
	return []hostileCase{
		{name: "ts 1e300, three lines", log: strings.Repeat(caddyJSON("1e300", "192.0.2.1", "example.com", "/a", "FooBot/1.0"), 3), malformed: 3, reason: "time out of range"},
		{name: "ts in 2200", log: caddyJSON("7258118400.5", "192.0.2.1", "example.com", "/a", "FooBot/1.0"), malformed: 1, reason: "time out of range"},
		{name: "ts two days from now", log: caddyJSON(tomorrowPlus, "192.0.2.1", "example.com", "/a", "FooBot/1.0"), malformed: 1, reason: "time out of range"},
		{name: "ts negative", log: caddyJSON("-5", "192.0.2.1", "example.com", "/a", "FooBot/1.0"), malformed: 1, reason: "time out of range"},
		{name: "ts 1e-300", log: caddyJSON("1e-300", "192.0.2.1", "example.com", "/a", "FooBot/1.0"), malformed: 1, reason: "time out of range"},
		{name: "ts -1e300", log: caddyJSON("-1e300", "192.0.2.1", "example.com", "/a", "FooBot/1.0"), malformed: 1, reason: "time out of range"},
		{name: "caddy client not an address", log: caddyJSON(ts, "\x1b[2J", "example.com", "/a", "FooBot/1.0"), malformed: 1, reason: "not an IP address"},
		{name: "caddy ESC in host, target and UA", log: caddyJSON(ts, "192.0.2.1", "ex\x1b[2Jample.com", "/\x1b]0;title\x07", "Bot\x1b[31m"), entries: 1},
		{name: "caddy access line without request", log: `{"level":"info","ts":1795780000,"logger":"http.log.access"}` + "\n", malformed: 1, reason: "without its request"},
		{name: "caddy other logger", log: `{"level":"info","ts":1795780000,"logger":"tls","msg":"certificate obtained"}` + "\n" + caddyJSON(ts, "192.0.2.1", "example.com", "/a", "FooBot/1.0"), entries: 1, skipped: 1},
		{name: "caddy cut line", log: caddyJSON(ts, "192.0.2.1", "example.com", "/a", "FooBot/1.0") + `{"ts":` + "\n", entries: 1, malformed: 1, reason: "unexpected end of JSON"},
		{name: "year 1600", log: clf("192.0.2.1", "10/Oct/1600:13:55:36 +0000", "/a", "FooBot/1.0"), malformed: 1, reason: "time out of range"},
		{name: "year 9999", log: clf("192.0.2.1", "10/Oct/9999:13:55:36 +0000", "/a", "FooBot/1.0"), malformed: 1, reason: "time out of range"},
		{name: "year 1989", log: clf("192.0.2.1", "31/Dec/1989:23:59:59 +0000", "/a", "FooBot/1.0"), malformed: 1, reason: "time out of range"},
		{name: "1990 in +14:00: 1989 in UTC", log: clf("192.0.2.1", "01/Jan/1990:00:00:00 +1400", "/a", "FooBot/1.0"), malformed: 1, reason: "time out of range"},
		{name: "year 2262", log: clf("192.0.2.1", "12/Apr/2262:00:00:00 +0000", "/a", "FooBot/1.0"), malformed: 1, reason: "time out of range"},
		{name: "zone +9999", log: clf("192.0.2.1", "01/Nov/2026:10:00:00 +9999", "/a", "FooBot/1.0"), malformed: 1, reason: "bad time zone"},
		{name: "zone +1401", log: clf("192.0.2.1", "01/Nov/2026:10:00:00 +1401", "/a", "FooBot/1.0"), malformed: 1, reason: "bad time zone"},
		{name: "zone -1500", log: clf("192.0.2.1", "01/Nov/2026:10:00:00 -1500", "/a", "FooBot/1.0"), malformed: 1, reason: "bad time zone"},
		{name: "zones ±14:00 and -12:00", log: clf("192.0.2.1", "01/Nov/2026:10:00:00 +1400", "/a", "FooBot/1.0") +
			clf("192.0.2.1", "01/Nov/2026:10:00:00 -1400", "/a", "FooBot/1.0") + clf("192.0.2.1", "01/Nov/2026:10:00:00 -1200", "/a", "FooBot/1.0"), entries: 3},
		{name: "31 February", log: clf("192.0.2.1", "31/Feb/2026:10:00:00 +0000", "/a", "FooBot/1.0"), malformed: 1, reason: "bad time"},
		{name: "29 February", log: clf("192.0.2.1", "29/Feb/2024:10:00:00 +0000", "/a", "FooBot/1.0") + clf("192.0.2.1", "29/Feb/2000:10:00:00 +0000", "/a", "FooBot/1.0") +
			clf("192.0.2.1", "29/Feb/2025:10:00:00 +0000", "/a", "FooBot/1.0") + clf("192.0.2.1", "29/Feb/2100:10:00:00 +0000", "/a", "FooBot/1.0"), entries: 2, malformed: 2, reason: "bad time"},
		{name: "a leap second", log: clf("192.0.2.1", "31/Dec/2016:23:59:60 +0000", "/a", "FooBot/1.0"), entries: 1},
		{name: "ESC and OSC in the target", log: clf("192.0.2.1", "01/Nov/2026:10:00:00 +0000", "/\x1b[2J\x1b]0;pwned\x07"+osc8[:8], "FooBot/1.0"), entries: 1},
		{name: "ESC in the UA, nginx's escape", log: clf("192.0.2.1", "01/Nov/2026:10:00:00 +0000", "/a", `Bot\x1b]0;pwned\x07`), entries: 1},
		{name: "OSC 8 in a malformed line", log: good + osc8 + "\n", entries: 1, malformed: 1, reason: "is not an IP address"},
		{name: "NUL and no UTF-8", log: clf("192.0.2.1", "01/Nov/2026:10:00:00 +0000", "/\xff\x00\xc2\x9b", "\xfe\xffBot\x00"), entries: 1},
		{name: "an IPv6 zone with ESC", log: clf("fe80::1%\x1b]0;x\x07", "01/Nov/2026:10:00:00 +0000", "/a", "FooBot/1.0"), entries: 1},
		{name: "blank lines", log: good + "\n\n   \n\t\n\r\n" + good + "\r", entries: 2, blank: 6},
		{name: "only blank lines", log: "\n\n\n", blank: 3},
		{name: "two bots behind one address", log: clf("203.0.113.7", "01/Nov/2026:10:00:00 +0000", "/a", "Mozilla/4.5 (compatible; HTTrack 3.0x; Windows 98)") +
			clf("203.0.113.7", "01/Nov/2026:10:00:01 +0000", "/private/1", "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/137.0.0.0 Safari/537.36"), entries: 2},
		{name: "a Googlebot offline", log: clf("11.0.113.9", "01/Nov/2026:10:00:00 +0000", "/private/y", googleUA), entries: 1},
		{name: "a lone CR", log: "\r", blank: 1},
	}
}

// newTestAuditor is an Auditor of robots, verification off unless cfg
// says otherwise, closed with the test.
func newTestAuditor(t testing.TB, cfg guard.Config, opts Options) *Auditor {
	t.Helper()
	if cfg.Verify == nil && !opts.Offline {
		cfg.Verify = &identity.VerifyConfig{Off: true}
	}
	if opts.Versions == nil {
		opts.Versions = []Version{{Name: "robots.txt", Body: []byte(robots)}}
	}
	a, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestHostileCorpus: each log of the corpus is read to its end, without a
// panic, and each line counted as what it is: a request, a blank line,
// another logger's line or a malformed one with its reason; no judged
// time is outside 1990 to a day after now.
func TestHostileCorpus(t *testing.T) {
	for _, c := range hostileCases() {
		a := newTestAuditor(t, guard.Config{}, Options{Site: "https://example.com"})
		if err := a.Read(context.Background(), strings.NewReader(c.log), "hostile.log"); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		res := a.Result()
		f := res.Files[0]
		if f.Entries != c.entries || f.Blank != c.blank || f.Skipped != c.skipped || f.Malformed != c.malformed {
			t.Errorf("%s: %d requests, %d blank, %d skipped, %d malformed; want %d, %d, %d, %d (%+v)", c.name,
				f.Entries, f.Blank, f.Skipped, f.Malformed, c.entries, c.blank, c.skipped, c.malformed, f.Examples)
		}
		if c.reason != "" && (len(f.Examples) == 0 || !strings.Contains(f.Examples[0].Reason, c.reason)) {
			t.Errorf("%s: reasons %+v, want %q", c.name, f.Examples, c.reason)
		}
		checkResult(t, a, res)
	}
}

// checkResult fails on a result whose counts do not add up: every line is
// one of request, blank, skipped or malformed; every request is a site's
// or not judged; a site's bot requests are its timeline's; times are in
// the window.
func checkResult(t *testing.T, a *Auditor, res Result) {
	t.Helper()
	var entries, requests int64
	for _, f := range res.Files {
		if f.Lines != f.Entries+f.Blank+f.Skipped+f.Malformed {
			t.Errorf("%s: %d lines = %d requests + %d blank + %d skipped + %d malformed?", f.Name, f.Lines, f.Entries, f.Blank, f.Skipped, f.Malformed)
		}
		entries += f.Entries
	}
	inWindow := func(at time.Time) bool {
		return !at.Before(time.Unix(0, minTime)) && at.UnixNano() <= a.notAfter
	}
	if entries > 0 && (!inWindow(res.From) || !inWindow(res.To) || res.To.Before(res.From)) {
		t.Errorf("from %s to %s", res.From, res.To)
	}
	for _, s := range res.Sites {
		requests += s.Requests
		var bots int64
		for _, sl := range s.Timeline {
			for _, b := range []any{sl.Allowed, sl.Denied, sl.Throttled, sl.Trapped, sl.Banned} {
				var n struct{ None, Verified, Spoofed, Unverifiable int64 }
				raw, _ := json.Marshal(b)
				json.Unmarshal(raw, &n)
				bots += n.None + n.Verified + n.Spoofed + n.Unverifiable
			}
		}
		if bots != s.BotRequests || s.BotRequests > s.Requests {
			t.Errorf("%s: %d bot requests of %d, the timeline has %d", s.Site, s.BotRequests, s.Requests, bots)
		}
		for _, r := range append(append([]Row(nil), s.Offenders...), s.Compliant...) {
			if r.Stopped() > r.Requests || r.Last.Before(r.First) || !inWindow(r.First) || !inWindow(r.Last) {
				t.Errorf("%s: row %+v", s.Site, r)
			}
		}
	}
	if requests+res.BeforeHistory != entries {
		t.Errorf("%d requests of sites + %d not judged, of %d", requests, res.BeforeHistory, entries)
	}
}

// TestTwoAgentsOneAddress: two bots behind one address (a NAT, a proxy)
// are two rows, each with its own User-Agent: the one that fetched a
// disallowed path is named, not the first seen.
func TestTwoAgentsOneAddress(t *testing.T) {
	a := newTestAuditor(t, guard.Config{}, Options{Site: "https://example.com"})
	httrack := "Mozilla/4.5 (compatible; HTTrack 3.0x; Windows 98)"
	headless := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/137.0.0.0 Safari/537.36"
	log := combined("203.0.113.7", t46, "/a", httrack) + combined("203.0.113.7", t46.Add(time.Minute), "/private/1", headless) +
		combined("203.0.113.7", t46.Add(2*time.Minute), "/private/2", headless) + combined("203.0.113.7", t46.Add(3*time.Minute), "/b", httrack)
	if err := a.Read(context.Background(), strings.NewReader(log), "nat.log"); err != nil {
		t.Fatal(err)
	}
	s := a.Result().Sites[0]
	if len(s.Offenders) != 1 || s.Offenders[0].UserAgent != headless || s.Offenders[0].Disallowed != 2 || s.Offenders[0].Requests != 2 {
		t.Errorf("offenders: %+v", s.Offenders)
	}
	if len(s.Compliant) != 1 || s.Compliant[0].UserAgent != httrack || s.Compliant[0].Requests != 2 {
		t.Errorf("compliant: %+v", s.Compliant)
	}
}

// TestOfflineUnverifiable: offline, a claim to be Googlebot is judged as
// the guard judges one it cannot check (its group and "*"), so the spoofed
// claim that fetched a path "*" disallows is stopped, unverifiable, as
// the live guard would stop it without its feeds; nothing is fetched or
// looked up. Online, with the feed, the same claim is spoofed.
func TestOfflineUnverifiable(t *testing.T) {
	log := combined("11.0.113.9", t46, "/private/y", googleUA) + combined("192.0.2.5", t46, "/private/z", "FooBot/1.0")
	for _, c := range []struct {
		name    string
		cfg     guard.Config
		offline bool
		want    string
	}{
		{"offline", guard.Config{}, true, "unverifiable google disallowed=1 spoofed=0"},
		{"offline, the guard's verify block", verifyConfig(t), true, "unverifiable google disallowed=1 spoofed=0"},
		{"online", verifyConfig(t), false, "spoofed google disallowed=0 spoofed=1"},
		{"verification off: believed", guard.Config{Verify: &identity.VerifyConfig{Off: true}}, true, ""},
	} {
		a := newTestAuditor(t, c.cfg, Options{Site: "https://example.com", Offline: c.offline})
		if err := a.Read(context.Background(), strings.NewReader(log), "spoof.log"); err != nil {
			t.Fatal(err)
		}
		res := a.Result()
		got := ""
		for _, r := range res.Sites[0].Offenders {
			if r.Client == "11.0.113.9/32" {
				got = fmt.Sprintf("%s %s disallowed=%d spoofed=%d", r.Verification, r.Operator, r.Disallowed, r.Spoofed)
			}
		}
		if got != c.want || res.Offline != (c.offline && c.cfg.Verifying()) || len(res.Warnings) > 0 {
			t.Errorf("%s: %q (offline %v, warnings %q), want %q", c.name, got, res.Offline, res.Warnings, c.want)
		}
	}
}

// TestTimelineAnyTime: a timeline takes any time, the ends of int64
// included, without a panic, and keeps every request.
func TestTimelineAnyTime(t *testing.T) {
	var tl timeline
	v := guard.Verdict{Action: guard.Deny, Reason: guard.ReasonDisallowed}
	ats := []int64{math.MinInt64, -1, 0, 1, minTime, t46.UnixNano(), maxTime, math.MaxInt64}
	for i := range 5000 {
		ats = append(ats, minTime+int64(i)*int64(15*24*time.Hour)) // 205 years of fortnights
	}
	for _, at := range ats {
		tl.add(at, &v)
	}
	ss, w := tl.Slices(96)
	var total int64
	for _, s := range ss {
		total += s.Denied.None
	}
	if len(tl.slices) > maxSlices || len(ss) > 96 || total != int64(len(ats)) || w <= 0 {
		t.Errorf("%d slices, %d bars of %s, %d of %d requests", len(tl.slices), len(ss), w, total, len(ats))
	}
}

// TestUnlistedCounted: the clients beyond the row bound that would have
// been stopped are counted, each once, whatever the bound.
func TestUnlistedCounted(t *testing.T) {
	a := newTestAuditor(t, guard.Config{}, Options{MaxRows: 2})
	var log strings.Builder
	for i := range 10 {
		for j := range 2 { // each client twice: counted once
			log.WriteString(combined(fmt.Sprintf("192.0.2.%d", i+1), t46.Add(time.Duration(2*i+j)*time.Minute), "/private/a", "FooBot/1.0"))
		}
	}
	log.WriteString(combined("192.0.2.99", t46.Add(time.Hour), "/a", "FooBot/1.0")) // compliant: not counted
	if err := a.Read(context.Background(), strings.NewReader(log.String()), "many.log"); err != nil {
		t.Fatal(err)
	}
	// Which clients have the two rows depends on the order the shards
	// reach them (the compliant one may hold one); the offenders are
	// counted all the same, each once.
	s := a.Result().Sites[0]
	rows, inRows := len(s.Offenders)+len(s.Compliant), int64(0)
	for _, r := range append(s.Offenders, s.Compliant...) {
		inRows += r.Requests
	}
	if rows != 2 || int64(len(s.Offenders))+s.Unlisted != 10 || s.UnlistedAtLeast || s.Others+inRows != 21 {
		t.Errorf("%d rows, %d offenders listed, %d unlisted (at least: %v), %d others and %d requests in rows; want 2 rows, 10 offenders in all, 21 requests",
			rows, len(s.Offenders), s.Unlisted, s.UnlistedAtLeast, s.Others, inRows)
	}
}

// FuzzParseCaddy: no line makes the parser fail other than with an
// error, and a line it reads has a target, a method, a client address and
// a time from 1990 to 2200.
func FuzzParseCaddy(f *testing.F) {
	for _, c := range hostileCases() {
		for line := range strings.Lines(c.log) {
			if strings.HasPrefix(line, "{") {
				f.Add([]byte(strings.TrimSuffix(line, "\n")))
			}
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := parseCaddy(line)
		if err == nil && (e.Target == "" || e.Method == "" || e.ClientIP == "" || e.At < minTime || e.At >= maxTime) {
			t.Errorf("read %+v", e)
		}
	})
}

// FuzzAudit: any log, in either format, is judged to its end by the whole
// audit (read, parse, judge with claims checked offline, count, the rows
// bounded at three), and the result's counts add up (checkResult). Only a
// file of no known format (100 malformed lines first) or a broken gzip
// stream is an error.
func FuzzAudit(f *testing.F) {
	for _, c := range hostileCases() {
		f.Add(c.log)
	}
	f.Add(combined("11.0.113.9", t46, "/private/y", googleUA) + combined("192.0.2.5", t46, "/x", "FooBot/1.0") + "\n" +
		combined("192.0.2.5", t46.Add(time.Second), "/private/z", "FooBot/1.0") + combined("192.0.2.6", t46, "/", chromeUA))
	for _, s := range []string{vhostSample, traefikSample, cloudflareSample, envoySample, albHTTPS} { // the proxies' formats
		f.Add(s + "\n" + s + "\n")
	}
	off := false // one operator's registry: New costs less
	cfg := guard.Config{Verify: &identity.VerifyConfig{Builtin: &off, Operators: []identity.Operator{{Name: "google", Tokens: []string{"Googlebot"}}}}}
	f.Fuzz(func(t *testing.T, log string) {
		a := newTestAuditor(t, cfg, Options{Offline: true, MaxRows: 3})
		err := a.Read(context.Background(), strings.NewReader(log), "fuzz.log")
		if err != nil && !strings.Contains(err.Error(), "none of the formats") && !strings.Contains(err.Error(), "gzip") {
			t.Fatal(err)
		}
		checkResult(t, a, a.Result())
	})
}

// TestResolverGivenUp: against a resolver that drops every query, the
// audit's claims do not each wait their own dns_timeout one after the
// other: after dnsGiveUp failures in a row no more are asked, the rest of
// the claims are unverifiable at once (judged by their group and "*"),
// and a warning says so.
func TestResolverGivenUp(t *testing.T) {
	dns := testdns.Start(t)
	dns.Drop(netip.MustParsePrefix("11.0.0.0/8"))
	cfg := googleOnly(dns.Addr, 300*time.Millisecond)
	var log strings.Builder
	const clients = 400 // in 400 networks: no per-network memory of failures helps
	for i := range clients {
		log.WriteString(combined(fmt.Sprintf("11.%d.%d.9", i/200, i%200), t46.Add(time.Duration(i)*time.Second), "/private/y", googleUA))
	}
	a := newTestAuditor(t, cfg, Options{Site: "https://example.com"})
	start := time.Now()
	if err := a.Read(context.Background(), strings.NewReader(log.String()), "dropped.log"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	res := a.Result()
	stopped := 0
	for _, r := range res.Sites[0].Offenders {
		if r.Verification == "unverifiable" && r.Disallowed > 0 {
			stopped++
		}
	}
	if took > 3*time.Second || stopped != clients || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "does not answer") }) {
		t.Errorf("%d claims against a silent resolver: %s, %d stopped as unverifiable, warnings %q; want one wave of lookups (%d × 300 ms at most), all %d stopped, a warning",
			clients, took.Round(time.Millisecond), stopped, res.Warnings, dnsGiveUp, clients)
	}
	// The claims checked at once (the prefetch's and the shards'), each
	// asked twice at most by the Go resolver, before the first failures
	// end the asking.
	if n, most := dns.Dropped(), int64(2*(prefetchWorkers+shards)); n > most {
		t.Errorf("%d queries sent to a resolver that was given up on after %d failures in a row; want at most %d, the first wave of the %d claims at once",
			n, dnsGiveUp, most, prefetchWorkers+shards)
	}
}

// TestUndeclaredInCaddyLog: Caddy's JSON log carries every header of the
// request, so a browser's header without Accept-Language is judged as an
// undeclared bot (by "*", its row of class undeclared), while one with it
// passes as the browser; a Combined line, without headers, is taken at
// its word.
func TestUndeclaredInCaddyLog(t *testing.T) {
	ts := strconv.FormatInt(t46.Unix(), 10)
	withLang := strings.Replace(caddyJSON(ts, "192.0.2.10", "example.com", "/private/a", chromeUA), `"headers":{`, `"headers":{"Accept-Language":["en-US"],`, 1)
	log := caddyJSON(ts, "192.0.2.11", "example.com", "/private/a", chromeUA) + withLang
	a := newTestAuditor(t, guard.Config{}, Options{Format: FormatCaddy})
	if err := a.Read(context.Background(), strings.NewReader(log), "caddy.log"); err != nil {
		t.Fatal(err)
	}
	s := a.Result().Sites[0]
	if len(s.Offenders) != 1 || s.Offenders[0].Client != "192.0.2.11/32" || s.Offenders[0].Class != "undeclared" || s.Offenders[0].Group != "*" || s.Offenders[0].Disallowed != 1 {
		t.Errorf("offenders %+v; want 192.0.2.11 alone, class undeclared, group *, 1 disallowed", s.Offenders)
	}
	c := newTestAuditor(t, guard.Config{}, Options{Site: "https://example.com"})
	if err := c.Read(context.Background(), strings.NewReader(combined("192.0.2.11", t46, "/private/a", chromeUA)), "combined.log"); err != nil {
		t.Fatal(err)
	}
	if s := c.Result().Sites[0]; len(s.Offenders) != 0 {
		t.Errorf("a Combined line (no headers) of a browser's header: offenders %+v; want none", s.Offenders)
	}
}
