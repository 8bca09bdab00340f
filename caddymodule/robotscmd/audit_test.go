package robotscmd

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/robotsguard/robotsguard/audit"
	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
)

// logLine is a Combined Log Format line.
func logLine(ip string, at time.Time, target, ua string) string {
	return fmt.Sprintf("%s - - [%s] \"GET %s HTTP/1.1\" 200 12 \"-\" %q\n", ip, at.Format("02/Jan/2006:15:04:05 -0700"), target, ua)
}

// TestAudit: "caddy robots audit" over two rotations given newest first
// (one gzip-compressed), with two dated robots.txt copies (a file and a
// URL); exit status 1 with offenders, 0 without, 2 on a usage error.
func TestAudit(t *testing.T) {
	dir := t.TempDir()
	jan := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	feb := time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC)
	old := filepath.Join(dir, "old.txt")
	os.WriteFile(old, []byte("User-agent: *\nDisallow: /old/\n"), 0o644)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /new/\n")
	}))
	defer srv.Close()

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(logLine("192.0.2.1", jan, "/old/a", "FooBot/1.0") + logLine("192.0.2.1", jan.Add(time.Hour), "/new/a", "FooBot/1.0")))
	zw.Close()
	os.WriteFile(filepath.Join(dir, "access.log.1.gz"), gz.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "access.log"), []byte(logLine("192.0.2.1", feb, "/new/b", "FooBot/1.0")+logLine("192.0.2.1", feb, "/old/b", "FooBot/1.0")), 0o644)
	logs := []string{filepath.Join(dir, "access.log"), filepath.Join(dir, "access.log.1.gz")}

	var out bytes.Buffer
	code, err := runAudit(context.Background(), &out, io.Discard, logs, auditOpts{offline: true, site: "https://example.com",
		robots: []string{old + "@2026-01-01", srv.URL + "/robots.txt@2026-02-01"}})
	if err != nil || code != exitFinding {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	for _, want := range []string{"access.log.1.gz: combined, 2 lines, 2 requests", "192.0.2.1/32", "https://example.com: 4 requests, 4 of bots; 1 clients would have been stopped",
		"/old/a (disallowed, line 2)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// The rotations ran oldest first: /old/a (January) and /new/b
	// (February) were disallowed, 2 in all.
	if !strings.Contains(out.String(), "4         2           0") {
		t.Errorf("counts:\n%s", out.String())
	}

	out.Reset()
	code, err = runAudit(context.Background(), &out, io.Discard, logs, auditOpts{offline: true, robots: []string{old + "@2025-01-01"}, asJSON: true, all: true})
	if err != nil || code != exitFinding || !strings.Contains(out.String(), `"disallowed": 2`) {
		t.Errorf("JSON: exit %d, %v\n%s", code, err, out.String())
	}
	out.Reset()
	code, _ = runAudit(context.Background(), &out, io.Discard, logs, auditOpts{offline: true, robots: []string{filepath.Join(dir, "missing.txt")}})
	if code != exitError {
		t.Errorf("missing robots.txt: exit %d", code)
	}
	code, _ = runAudit(context.Background(), &out, io.Discard, logs, auditOpts{offline: true})
	if code != exitError {
		t.Errorf("no robots.txt: exit %d", code)
	}
	os.WriteFile(old, []byte("User-agent: *\nDisallow: /nothing-here/\n"), 0o644)
	if code, err = runAudit(context.Background(), &out, io.Discard, logs, auditOpts{offline: true, robots: []string{old}}); code != exitOK {
		t.Errorf("no offender: exit %d, %v", code, err)
	}
}

// TestProgressLine: what the progress display says.
func TestProgressLine(t *testing.T) {
	dir := t.TempDir()
	robots := filepath.Join(dir, "r.txt")
	os.WriteFile(robots, []byte("User-agent: *\nDisallow: /x\n"), 0o644)
	a, err := audit.New(guard.Config{Verify: &identity.VerifyConfig{Off: true}}, audit.Options{Versions: []audit.Version{{Name: "r", Body: []byte("")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var log strings.Builder
	for i := range 10000 {
		log.WriteString(logLine("192.0.2.1", time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), "/", "FooBot/1.0"))
	}
	half := int64(log.Len())
	if err := a.Read(context.Background(), strings.NewReader(log.String()), "x"); err != nil {
		t.Fatal(err)
	}
	got := progressLine(a, 2*half, 2*time.Second)
	if !strings.HasPrefix(got, " 50% · ") || !strings.Contains(got, "lines/s · 2s left") {
		t.Errorf("progress: %q", got)
	}
	if got := progressLine(a, 0, time.Second); !strings.Contains(got, "MB · 0.01M lines/s") {
		t.Errorf("progress without a total: %q", got)
	}
	// Not a terminal: no display.
	f, _ := os.Create(filepath.Join(dir, "out"))
	defer f.Close()
	if showProgress(f, a, nil) != nil {
		t.Error("a progress display on a file")
	}
}

// hostileLog is a Combined log whose fields would act on a terminal:
// ESC and OSC sequences (clear the screen, set the window's title, draw
// a link) in a target, a User-Agent and a malformed line, C1 controls, a
// bidirectional override and bytes that are no UTF-8.
func hostileLog(at time.Time) string {
	when := at.Format("02/Jan/2006:15:04:05 -0700")
	return fmt.Sprintf("192.0.2.1 - - [%s] \"GET /private/\x1b[2J\x1b]0;pwned\x07 HTTP/1.1\" 200 1 \"-\" \"EvilBot\\x1b]8;;https://evil.example/\\x1b\\\\\"\n", when) +
		fmt.Sprintf("192.0.2.2 - - [%s] \"GET /private/\xc2\x9b31m\xe2\x80\xae\xff HTTP/1.1\" 200 1 \"-\" \"Bot\xc2\x85\tTab\"\n", when) +
		"\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\\n"
}

// TestAuditTerminalSafe: no byte of a log reaches the terminal as a
// control: the table shows each as an escape (\x1b), whatever the field
// (target, User-Agent, Host, malformed line, file name).
func TestAuditTerminalSafe(t *testing.T) {
	dir := t.TempDir()
	robots := filepath.Join(dir, "robots.txt")
	os.WriteFile(robots, []byte("User-agent: *\nDisallow: /private/\n"), 0o644)
	combinedLog := filepath.Join(dir, "access\x1b[2J.log")
	os.WriteFile(combinedLog, []byte(hostileLog(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))), 0o644)
	caddyLog := filepath.Join(dir, "caddy.log")
	os.WriteFile(caddyLog, []byte(`{"ts":1793527200,"logger":"http.log.access","request":{"client_ip":"192.0.2.3","method":"GET","host":"ex\u001b]0;title\u0007ample.com","uri":"/private/\u001b[2J","headers":{"User-Agent":["Bot\u001b[5m"]}},"status":200}`+"\n"), 0o644)
	var out, errOut bytes.Buffer
	code, err := runAudit(context.Background(), &out, &errOut, []string{combinedLog, caddyLog}, auditOpts{offline: true, robots: []string{robots}, all: true})
	if err != nil || code != exitFinding {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	for i, c := range out.String() {
		if c != '\n' && (c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0 || c == 0x202e || c == utf8.RuneError) {
			t.Fatalf("a control (%U) at byte %d:\n%q", c, i, out.String())
		}
	}
	for _, want := range []string{`/private/\x1b[2J\x1b]0;pwned\x07`, `EvilBot\x1b]8;;https://evil.example/\x1b\`, `\u009b31m\u202e\xff`, `Bot\u0085\x09Tab`,
		`line 3: no client address: \x1b]8;;https://evil.example/\x1b\click\x1b]8;;\x1b\`, `access\x1b[2J.log`, `ex\x1b]0;title\x07ample.com`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, out.String())
		}
	}
}

// TestTermSafe: what termSafe escapes, and what it leaves.
func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"/a?b=c d":                   "/a?b=c d",
		"Mozilla/5.0 (Gecko)":        "Mozilla/5.0 (Gecko)",
		"\x1b[2J":                    `\x1b[2J`,
		"a\nb\rc\td\x00e\x7f":        `a\x0ab\x0dc\x09d\x00e\x7f`,
		"\xc2\x9b\xe2\x80\xae\u2028": `\u009b\u202e\u2028`,
		"\xff\xfe":                   `\xff\xfe`,
		"café 日本 🤖":                  "café 日本 🤖",
	} {
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestAuditOffline: --offline judges a claim it cannot check as the guard
// judges an unverifiable one, by its group and "*": the spoofed Googlebot
// on a path "*" disallows is stopped, and the table says why.
func TestAuditOffline(t *testing.T) {
	dir := t.TempDir()
	robots := filepath.Join(dir, "robots.txt")
	os.WriteFile(robots, []byte("User-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nAllow: /\n"), 0o644)
	log := filepath.Join(dir, "access.log")
	os.WriteFile(log, []byte(logLine("11.0.113.9", time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC), "/private/x",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")), 0o644)
	var out bytes.Buffer
	code, err := runAudit(context.Background(), &out, io.Discard, []string{log}, auditOpts{offline: true, robots: []string{robots}})
	if err != nil || code != exitFinding || !strings.Contains(out.String(), "1 clients would have been stopped") ||
		!strings.Contains(out.String(), "unverifiable (offline) google") {
		t.Errorf("exit %d, %v\n%s", code, err, out.String())
	}
}

// TestAuditStreams: warnings go to standard error, never into the table
// or the JSON on standard output.
func TestAuditStreams(t *testing.T) {
	dir := t.TempDir()
	robots, cfg, log := filepath.Join(dir, "robots.txt"), filepath.Join(dir, "guard.json"), filepath.Join(dir, "access.log")
	os.WriteFile(robots, []byte("User-agent: *\nDisallow: /private/\n"), 0o644)
	// A feed that cannot load: a warning, one line per feed.
	os.WriteFile(cfg, []byte(`{"verify":{"builtin":false,"operators":[{"name":"a","tokens":["ABot"],"ip_ranges":["/nonexistent/a.json"]},{"name":"b","tokens":["BBot"],"ip_ranges":["/nonexistent/b.json"]}]}}`), 0o644)
	os.WriteFile(log, []byte(logLine("192.0.2.1", time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC), "/private/x", "ABot/1.0")), 0o644)
	for _, asJSON := range []bool{false, true} {
		var out, errOut bytes.Buffer
		code, err := runAudit(context.Background(), &out, &errOut, []string{log}, auditOpts{robots: []string{robots}, config: cfg, asJSON: asJSON})
		if err != nil || code != exitFinding {
			t.Fatalf("exit %d, %v", code, err)
		}
		if strings.Contains(out.String(), "warning: ") || !strings.HasPrefix(errOut.String(), "warning: crawler verification") ||
			!strings.Contains(errOut.String(), "\n  ") || !strings.Contains(errOut.String(), "b.json") {
			t.Errorf("json %v: standard output:\n%s\nstandard error:\n%s", asJSON, out.String(), errOut.String())
		}
		if asJSON && !json.Valid(out.Bytes()) {
			t.Errorf("not JSON:\n%s", out.String())
		}
	}
}

// TestAuditCounts: the headline counts every client that would have been
// stopped, those beyond the row bound too; the file line counts blank
// lines and other loggers' lines; each row shows its User-Agent.
func TestAuditCounts(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	row := audit.Row{Client: "192.0.2.1/32", Group: "*", Verification: "none", UserAgent: "HeadlessChrome/137 " + strings.Repeat("x", 100), Requests: 2, Disallowed: 2, First: at, Last: at}
	res := audit.Result{Files: []audit.FileResult{{Name: "a.log", Format: "combined", Lines: 10, Entries: 5, Blank: 3, Skipped: 1, Malformed: 1}},
		Sites: []audit.SiteResult{{Site: "https://example.com", Requests: 5, BotRequests: 5, Offenders: []audit.Row{row, row}, Unlisted: 999_998, Others: 999_998}}}
	var out bytes.Buffer
	printAudit(&out, res, false, 50)
	for _, want := range []string{"a.log: combined, 10 lines, 5 requests, 3 blank lines, 1 lines of other loggers skipped, 1 malformed lines skipped",
		"1000000 clients would have been stopped (999998 of them beyond the row bound, not listed)", "USER-AGENT", "HeadlessChrome/137 xxx",
		"999998 requests of clients beyond the row bound are not listed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), strings.Repeat("x", 60)) {
		t.Errorf("the whole User-Agent in the table:\n%s", out.String())
	}
	res.Sites[0].UnlistedAtLeast = true
	out.Reset()
	printAudit(&out, res, false, 50)
	if !strings.Contains(out.String(), "at least 1000000 clients") {
		t.Errorf("a lower bound not said:\n%s", out.String())
	}
}

// TestNoUserAgentHint: a log without User-Agents is told how its own
// server logs them.
func TestNoUserAgentHint(t *testing.T) {
	for format, want := range map[string]string{audit.FormatCombined: "Combined format", audit.FormatTraefik: "User-Agent: keep", audit.FormatHAProxy: "capture request header User-Agent"} {
		if got := noUserAgentHint(format); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q in it", format, got, want)
		}
	}
}

// TestAuditLicenses: "caddy robots audit --license URL=FILE" judges a
// Caddy log's bots on licensed content by the document given: the table
// says what they did (a line, and the licence columns), the JSON counts
// them per row and site, the page shows them; without --license,
// --offline reads no document and says so; a --license that is not
// URL=FILE, or whose file is missing, is an error.
func TestAuditLicenses(t *testing.T) {
	dir := t.TempDir()
	const docURL = "https://example.com/license.xml"
	robots, doc, log, page := filepath.Join(dir, "robots.txt"), filepath.Join(dir, "license.xml"), filepath.Join(dir, "access.log"), filepath.Join(dir, "audit.html")
	os.WriteFile(robots, []byte("License: "+docURL+"\nUser-agent: *\nDisallow: /private/\n"), 0o644)
	os.WriteFile(doc, []byte(`<rsl xmlns="https://rslstandard.org/rsl"><content url="/articles/*" server="https://licenses.example"><license/></content></rsl>`), 0o644)
	line := func(client, headers string) string {
		return `{"level":"info","ts":1795780000.5,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"127.0.0.1","client_ip":"` + client +
			`","method":"GET","host":"example.com","uri":"/articles/a","headers":{"User-Agent":["FooBot/1.0"]` + headers + `},"tls":{}},"status":200}` + "\n"
	}
	os.WriteFile(log, []byte(line("192.0.2.1", "")+line("192.0.2.2", `,"Authorization":["REDACTED"]`)), 0o644)
	o := auditOpts{offline: true, robots: []string{robots}, licenses: []string{docURL + "=" + doc}, html: page}

	var out, errOut bytes.Buffer
	code, err := runAudit(context.Background(), &out, &errOut, []string{log}, o)
	if err != nil || code != exitFinding {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	for _, want := range []string{"1 clients would have been stopped", "licensed content (RSL): 1 requests of bots without a licence token or for a use no licence grants (the guard's 401, 402 or 403), 1 requests of bots with a token the audit cannot check",
		"UNLICENSED  TOKEN UNCHECKED  TOKEN UNKNOWN", "/articles/a (license)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("warnings: %s", errOut.String())
	}
	b, _ := os.ReadFile(page)
	for _, want := range []string{"<th class=num>unlicensed</th>", "<th class=num>token unchecked</th>", "1 requests without a licence token"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(string(b), "<th class=num>token unknown</th>") {
		t.Error("page: a token unknown column without any")
	}

	out.Reset()
	o.asJSON, o.all, o.html = true, true, ""
	if _, err := runAudit(context.Background(), &out, io.Discard, []string{log}, o); err != nil {
		t.Fatal(err)
	}
	var res audit.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Sites) != 1 || res.Sites[0].Unlicensed != 1 || res.Sites[0].TokenUnchecked != 1 ||
		!strings.Contains(out.String(), `"unlicensed": 1`) || !strings.Contains(out.String(), `"token_unchecked": 1`) || strings.Contains(out.String(), `"token_unknown"`) {
		t.Errorf("JSON (%v):\n%s", err, out.String())
	}

	// No document given, offline: none read, and a warning says so.
	out.Reset()
	errOut.Reset()
	o.licenses, o.asJSON = nil, false
	code, err = runAudit(context.Background(), &out, &errOut, []string{log}, o)
	if err != nil || code != exitOK || !strings.Contains(errOut.String(), "--offline read no RSL document ("+docURL+")") || strings.Contains(out.String(), "licensed content") {
		t.Errorf("offline without --license: exit %d, %v\n%s\n%s", code, err, errOut.String(), out.String())
	}
	for _, bad := range []string{"license.xml", docURL + "=" + filepath.Join(dir, "missing.xml")} {
		o.licenses = []string{bad}
		if code, _ := runAudit(context.Background(), io.Discard, io.Discard, []string{log}, o); code != exitError {
			t.Errorf("--license %s: exit %d", bad, code)
		}
	}
}
