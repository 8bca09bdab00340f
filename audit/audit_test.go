package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
)

const (
	chromeUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	googleUA = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	robots   = "User-agent: *\nDisallow: /private/\nCrawl-delay: 10\n\nUser-agent: Googlebot\nAllow: /\n"
)

// TestParseCombined: the formats nginx and Apache write, and the lines
// that are not one.
func TestParseCombined(t *testing.T) {
	at := time.Date(2026, 10, 10, 13, 55, 36, 0, time.FixedZone("", -7*3600)).UnixNano()
	checkParse(t, parseCombined, []parseCase{
		{"combined", `192.0.2.1 - frank [10/Oct/2026:13:55:36 -0700] "GET /a?b=1 HTTP/1.1" 200 2326 "http://x/" "FooBot/1.0"`,
			Entry{At: at, ClientIP: "192.0.2.1", Method: "GET", Target: "/a?b=1", Status: 200, UserAgent: "FooBot/1.0"}, ""},
		{"common", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "HEAD / HTTP/1.0" 304 -`,
			Entry{At: at, ClientIP: "192.0.2.1", Method: "HEAD", Target: "/", Status: 304}, ""},
		{"nginx escapes", `2001:db8::1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/2.0" 403 5 "-" "a \x22quoted\x22 bot"`,
			Entry{At: at, ClientIP: "2001:db8::1", Method: "GET", Target: "/x", Status: 403, UserAgent: `a "quoted" bot`}, ""},
		{"apache escapes", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/1.1" 200 5 "-" "a \"q\" bot"`,
			Entry{At: at, ClientIP: "192.0.2.1", Method: "GET", Target: "/x", Status: 200, UserAgent: `a "q" bot`}, ""},
		{"fields after the UA", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/1.1" 200 5 "-" "Bot" "198.51.100.1" rt=0.001`,
			Entry{At: at, ClientIP: "192.0.2.1", Method: "GET", Target: "/x", Status: 200, UserAgent: "Bot"}, ""},
		{"UA dash", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /x HTTP/1.1" 200 5 "-" "-"`,
			Entry{At: at, ClientIP: "192.0.2.1", Method: "GET", Target: "/x", Status: 200}, ""},
		{"HTTP/0.9 line", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /x" 200 5`,
			Entry{At: at, ClientIP: "192.0.2.1", Method: "GET", Target: "/x", Status: 200}, ""},
		{"TLS on the HTTP port", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "\x16\x03\x01" 400 157 "-" "-"`, Entry{}, "request line"},
		{"bad time", `192.0.2.1 - - [10/Oct/2026 13:55:36] "GET / HTTP/1.1" 200 1`, Entry{}, "bad time"},
		{"no time", `192.0.2.1 - - "GET / HTTP/1.1" 200 1`, Entry{}, "no [time]"},
		{"garbage", `hello`, Entry{}, "no client address"},
		{"host name", `crawler.example - - [10/Oct/2026:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "-" "Bot"`, Entry{}, "not an IP address"},
		{"asterisk", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "OPTIONS * HTTP/1.1" 200 0 "-" "Bot"`,
			Entry{At: at, ClientIP: "192.0.2.1", Method: "OPTIONS", Target: "*", Status: 200, UserAgent: "Bot"}, ""},
		{"no status", `192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET / HTTP/1.1" abc 1`, Entry{}, "no status"},
	})
}

// TestParseCaddy: Caddy's JSON access log, with client_ip (trusted
// proxies applied) before remote_ip; other loggers' lines are skipped.
func TestParseCaddy(t *testing.T) {
	line := `{"level":"info","ts":1795780545.5,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"127.0.0.1","remote_port":"4000","client_ip":"66.249.64.5","proto":"HTTP/2.0","method":"GET","host":"example.com","uri":"/a?b","headers":{"User-Agent":["Googlebot/2.1"]},"tls":{"resumed":false}},"status":403}`
	e, err := parseCaddy([]byte(line))
	want := Entry{At: 1795780545500000000, ClientIP: "66.249.64.5", Method: "GET", Target: "/a?b", Host: "example.com", HTTPS: true, UserAgent: "Googlebot/2.1", Status: 403,
		Evidence: classify.Evidence{Read: true}} // the headers are logged: their absence is known
	if err != nil || e != want {
		t.Errorf("got %+v, %v\nwant %+v", e, err, want)
	}
	if _, err := parseCaddy([]byte(`{"level":"info","ts":1,"logger":"tls","msg":"x"}`)); err != errSkip {
		t.Errorf("another logger's line: %v", err)
	}
	errorLog := `{"level":"error","ts":1795780545.5,"logger":"http.log.error","msg":"x","request":{"client_ip":"192.0.2.1","method":"GET","host":"a","uri":"/"}}`
	if _, err := parseCaddy([]byte(errorLog)); err != errSkip {
		t.Errorf("the error log's line of a request (counted twice): %v", err)
	}
	if _, err := parseCaddy([]byte(`{"ts":`)); err == nil {
		t.Error("a cut line read")
	}
}

// combined is a Combined Log Format line of ua from ip at t.
func combined(ip string, t time.Time, target, ua string) string {
	return fmt.Sprintf("%s - - [%s] \"GET %s HTTP/1.1\" 200 12 \"-\" %q\n", ip, t.Format("02/Jan/2006:15:04:05 -0700"), target, ua)
}

// verifyConfig verifies Googlebot by a feed file of 66.249.64.0/27 only.
func verifyConfig(t *testing.T) guard.Config {
	feed := filepath.Join(t.TempDir(), "google.json")
	os.WriteFile(feed, []byte(`{"creationTime":"2026-11-01T00:00:00","prefixes":[{"ipv4Prefix":"66.249.64.0/27"}]}`), 0o644)
	off := false
	return guard.Config{Verify: &identity.VerifyConfig{Builtin: &off, FetchFeeds: "at_start",
		Operators: []identity.Operator{{Name: "google", Tokens: []string{"Googlebot"}, IPRanges: []string{feed}}}}}
}

// TestAuditMixture: a known mixture of clients; the audit finds exactly
// the offenders and their counts, as the guard would have judged them.
func TestAuditMixture(t *testing.T) {
	a, err := New(verifyConfig(t), Options{Site: "https://example.com", Versions: []Version{{Name: "robots.txt", Body: []byte(robots)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var log strings.Builder
	for i := range 10 {
		at := t0.Add(time.Duration(i) * time.Second)
		log.WriteString(combined("198.51.100.7", at, "/private/page", chromeUA))                              // a browser
		log.WriteString(combined("192.0.2.10", t0.Add(time.Duration(i)*20*time.Second), "/a", "GoodBot/1.0")) // compliant, 20 s apart
		log.WriteString(combined("192.0.2.20", at, "/b", "FastBot/1.0"))                                      // 1 s apart: Crawl-delay 10
		if i < 2 {
			log.WriteString(combined("192.0.2.30", at.Add(30*time.Second*time.Duration(i)), "/private/x", "BadBot/1.0"))
			log.WriteString(combined("11.0.113.9", at, "/private/y", googleUA))  // spoofed
			log.WriteString(combined("66.249.64.5", at, "/private/z", googleUA)) // verified
		}
	}
	log.WriteString("not a log line\n")
	log.WriteString(strings.Replace(combined("192.0.2.40", t0, "/x", "StarBot/1.0"), "GET /x", "OPTIONS *", 1)) // a bot's target without a path
	log.WriteString(combined("192.0.2.30", t0.Add(time.Hour), "/robots.txt", "BadBot/1.0"))
	if err := a.Read(context.Background(), strings.NewReader(log.String()), "access.log"); err != nil {
		t.Fatal(err)
	}
	res := a.Result()
	if len(res.Files) != 1 || res.Files[0].Malformed != 1 || res.Files[0].Examples[0].Line != 37 || res.Files[0].Format != FormatCombined {
		t.Errorf("files: %+v", res.Files)
	}
	if len(res.Sites) != 1 || res.Sites[0].Site != "https://example.com" || res.Sites[0].Requests != 38 {
		t.Fatalf("sites: %+v", res.Sites)
	}
	got := map[string]string{}
	for _, r := range res.Sites[0].Offenders {
		got[r.UserAgent] = fmt.Sprintf("%s disallowed=%d spoofed=%d throttled=%d other=%d requests=%d", r.Client, r.Disallowed, r.Spoofed, r.Throttled, r.Other, r.Requests)
	}
	want := map[string]string{
		"BadBot/1.0":  "192.0.2.30/32 disallowed=2 spoofed=0 throttled=0 other=0 requests=2", // /robots.txt is no bot request
		googleUA:      "11.0.113.9/32 disallowed=0 spoofed=2 throttled=0 other=0 requests=2",
		"FastBot/1.0": "192.0.2.20/32 disallowed=0 spoofed=0 throttled=6 other=0 requests=10", // GCRA, tolerance 2.5 delays: 0, 1, 2 and 5 s pass
		"StarBot/1.0": "192.0.2.40/32 disallowed=0 spoofed=0 throttled=0 other=1 requests=1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("offenders:\n got %v\nwant %v", got, want)
	}
	compliant := map[string]int64{}
	for _, r := range res.Sites[0].Compliant {
		compliant[r.Client+" "+r.Verification] = r.Requests
	}
	if fmt.Sprint(compliant) != fmt.Sprint(map[string]int64{"192.0.2.10/32 none": 10, "66.249.64.5/32 verified": 2}) {
		t.Errorf("compliant: %v", compliant)
	}
	bad := res.Sites[0].Offenders[0]
	if bad.UserAgent != "FastBot/1.0" || bad.Examples[0].Reason != "crawl_delay" || bad.First != t0 || bad.Last != t0.Add(9*time.Second) {
		t.Errorf("first offender: %+v", bad)
	}
}

// TestAuditVersions: each request is judged by the robots.txt in force
// when it was made; requests before the first dated one are counted
// apart; gzip-compressed logs are read as they are.
func TestAuditVersions(t *testing.T) {
	jan, feb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	a, err := New(guard.Config{Verify: &identity.VerifyConfig{Off: true}}, Options{Versions: []Version{
		{Name: "new", Since: feb, Body: []byte("User-agent: *\nDisallow: /new/\n")},
		{Name: "old", Since: jan, Body: []byte("User-agent: *\nDisallow: /old/\n")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var log bytes.Buffer
	zw := gzip.NewWriter(&log)
	for _, l := range []struct {
		at     time.Time
		target string
	}{
		{jan.Add(-time.Hour), "/old/before"},
		{jan.Add(time.Hour), "/old/a"}, {jan.Add(2 * time.Hour), "/new/a"},
		{feb.Add(time.Hour), "/old/b"}, {feb.Add(2 * time.Hour), "/new/b"}, {feb.Add(3 * time.Hour), "/new/c"},
	} {
		zw.Write([]byte(combined("192.0.2.1", l.at, l.target, "FooBot/1.0")))
	}
	zw.Close()
	if err := a.Read(context.Background(), &log, "access.log.1.gz"); err != nil {
		t.Fatal(err)
	}
	res := a.Result()
	if res.BeforeHistory != 1 || res.Versions[0].Name != "old" || res.Versions[0].Requests != 2 || res.Versions[1].Requests != 3 {
		t.Errorf("versions: %+v, before history %d", res.Versions, res.BeforeHistory)
	}
	r := res.Sites[0].Offenders[0]
	var targets []string
	for _, x := range r.Examples {
		targets = append(targets, x.Target)
	}
	if r.Disallowed != 3 || strings.Join(targets, " ") != "/old/a /new/b /new/c" {
		t.Errorf("judged: %+v", r)
	}
}

// TestAuditBadOptions: options that cannot work fail at New, naming what
// to write.
func TestAuditBadOptions(t *testing.T) {
	v := []Version{{Name: "a", Body: []byte("")}}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, "give the robots.txt"},
		{Options{Versions: v, Format: "apache"}, "want one of auto, caddy, combined"},
		{Options{Versions: v, Site: "example.com"}, "https://host"},
		{Options{Versions: append(v, Version{Name: "b"})}, "different date"},
	} {
		if _, err := New(guard.Config{}, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// FuzzParseCombined: no line makes the parser fail other than with an
// error, and a line it reads has an origin- or absolute-form target and
// a time from 1990 to 2200 (issue 46's corpus among the seeds).
func FuzzParseCombined(f *testing.F) {
	f.Add(`192.0.2.1 - - [10/Oct/2026:13:55:36 -0700] "GET /a HTTP/1.1" 200 1 "-" "Bot"`)
	f.Add(`x [10/Oct/2026:13:55:36 +0000] "\"" 200`)
	for _, c := range hostileCases() {
		for line := range strings.Lines(c.log) {
			if !strings.HasPrefix(line, "{") {
				f.Add(strings.TrimRight(line, "\r\n"))
			}
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		e, err := parseCombined(line)
		if err == nil && (e.Target == "" || e.Method == "" || strings.ContainsRune(e.Target, ' ') || e.At < minTime || e.At >= maxTime) {
			t.Errorf("read %+v", e)
		}
	})
}

// TestAuditCaddyLog: Caddy's JSON access log, each request on its own
// site (host and TLS from the log), read by format detection.
func TestAuditCaddyLog(t *testing.T) {
	a, err := New(guard.Config{Verify: &identity.VerifyConfig{Off: true}}, Options{Versions: []Version{{Name: "r", Body: []byte(robots)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	line := func(ts int, host, uri, ua string, tls bool) string {
		t := ""
		if tls {
			t = `,"tls":{"resumed":false}`
		}
		return fmt.Sprintf(`{"level":"info","ts":%d.25,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"127.0.0.1","client_ip":"192.0.2.9","method":"GET","host":%q,"uri":%q,"headers":{"User-Agent":[%q]}%s},"status":200}`+"\n", ts, host, uri, ua, t)
	}
	log := line(1795780000, "example.com", "/private/a", "FooBot/1.0", true) +
		`{"level":"info","ts":1795780001,"logger":"tls","msg":"certificate obtained"}` + "\n" +
		line(1795780002, "other.example", "/private/a", "FooBot/1.0", false) +
		line(1795780003, "example.com", "/private/a", chromeUA, true)
	if err := a.Read(context.Background(), strings.NewReader(log), "caddy.log"); err != nil {
		t.Fatal(err)
	}
	res := a.Result()
	if f := res.Files[0]; f.Format != FormatCaddy || f.Entries != 3 || f.Skipped != 1 || f.Malformed != 0 {
		t.Errorf("file: %+v", f)
	}
	got := map[string]int64{}
	for _, s := range res.Sites {
		for _, r := range s.Offenders {
			got[s.Site+" "+r.Client] = r.Disallowed
		}
	}
	if fmt.Sprint(got) != "map[http://other.example 192.0.2.9/32:1 https://example.com 192.0.2.9/32:1]" {
		t.Errorf("offenders: %v", got)
	}
}

// TestTimeline: a timeline's slices widen as the log spans more time, so
// that it holds at most maxSlices; what it shows keeps every request.
func TestTimeline(t *testing.T) {
	var tl timeline
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	v := guard.Verdict{Action: guard.Deny, Reason: guard.ReasonDisallowed}
	const n = 10000
	for i := range n {
		tl.add(t0+int64(i)*int64(time.Minute), &v) // a week of minutes
	}
	if len(tl.slices) > maxSlices || timelineSteps[tl.step] != 5*time.Minute {
		t.Errorf("%d slices of %s", len(tl.slices), timelineSteps[tl.step])
	}
	ss, w := tl.Slices(96)
	var total int64
	for _, s := range ss {
		total += s.Denied.None
	}
	if len(ss) > 96 || total != n || w%(5*time.Minute) != 0 || !ss[0].Start.Equal(time.Unix(0, t0).UTC()) {
		t.Errorf("%d bars of %s, %d requests", len(ss), w, total)
	}
}

// TestUnknownFormat: a file none of whose first lines is a request in a
// format the audit reads is refused, naming the formats; a few bad lines
// among good ones are skipped.
func TestUnknownFormat(t *testing.T) {
	a, err := New(guard.Config{Verify: &identity.VerifyConfig{Off: true}}, Options{Versions: []Version{{Name: "r", Body: []byte(robots)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	err = a.Read(context.Background(), strings.NewReader(strings.Repeat("2026-11-01 10:00:00 GET /a 200 FooBot\n", 200)), "w3c.log")
	if err == nil || !strings.Contains(err.Error(), "none of the formats") || !strings.Contains(err.Error(), "Combined") {
		t.Errorf("unknown format: %v", err)
	}
	good := combined("192.0.2.1", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), "/", "FooBot/1.0")
	if err := a.Read(context.Background(), strings.NewReader(good+strings.Repeat("junk\n", 300)), "mixed.log"); err != nil {
		t.Errorf("bad lines after a good one: %v", err)
	}
}

// TestLongLine: a line longer than 1 MiB (a client's 2 MiB User-Agent, as
// a log may hold) is counted malformed and skipped whole; the lines
// around it are judged, and memory stays bounded by maxLine.
func TestLongLine(t *testing.T) {
	a, err := New(guard.Config{Verify: &identity.VerifyConfig{Off: true}}, Options{Versions: []Version{{Name: "r", Body: []byte(robots)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	huge := combined("192.0.2.2", t0, "/private/x", strings.Repeat("A", 2<<20))
	log := combined("192.0.2.1", t0, "/private/a", "FooBot/1.0") + huge + combined("192.0.2.1", t0.Add(time.Minute), "/private/b", "FooBot/1.0")
	if err := a.Read(context.Background(), strings.NewReader(log), "long.log"); err != nil {
		t.Fatal(err)
	}
	res := a.Result()
	if f := res.Files[0]; f.Lines != 3 || f.Entries != 2 || f.Malformed != 1 || f.Examples[0].Reason != errLong.Error() {
		t.Errorf("file: %+v", f)
	}
	if r := res.Sites[0].Offenders; len(r) != 1 || r[0].Disallowed != 2 {
		t.Errorf("offenders: %+v", r)
	}
}

// TestMaxRows: a log written by many clients keeps at most MaxRows rows;
// the requests of the clients beyond it are counted in Others.
func TestMaxRows(t *testing.T) {
	a, err := New(guard.Config{Verify: &identity.VerifyConfig{Off: true}}, Options{MaxRows: 2, Versions: []Version{{Name: "r", Body: []byte(robots)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var log strings.Builder
	for i := range 5 {
		log.WriteString(combined(fmt.Sprintf("192.0.2.%d", i+1), t0.Add(time.Duration(i)*time.Minute), "/private/a", "FooBot/1.0"))
	}
	if err := a.Read(context.Background(), strings.NewReader(log.String()), "many.log"); err != nil {
		t.Fatal(err)
	}
	s := a.Result().Sites[0]
	if rows := len(s.Offenders) + len(s.Compliant); rows != 2 || s.Others != 3 || s.Requests != 5 {
		t.Errorf("rows %d, others %d, requests %d; want 2, 3, 5", rows, s.Others, s.Requests)
	}
}
