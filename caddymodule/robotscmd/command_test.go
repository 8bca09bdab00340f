package robotscmd

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testdns"
	"github.com/robotsguard/robotsguard/internal/testkeys"
	"github.com/robotsguard/robotsguard/internal/testorigin"
)

func TestRobotsTest(t *testing.T) {
	file := testorigin.WriteFile(t, testorigin.Sample)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			w.Write([]byte(testorigin.Sample))
		case "/moved":
			http.Redirect(w, r, "/robots.txt", http.StatusMovedPermanently)
		case "/broken":
			http.Error(w, "down", http.StatusBadGateway)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, ua, file, url, stdin string
		paths                      []string
		code                       int
		want                       []string // substrings of the output, in order
		wantErr                    string
	}{
		{name: "allowed", ua: "FooBot/1.0", file: file, paths: []string{"/", "/private/open"}, code: 0,
			want: []string{"PATH", "/ ", "allowed", "*", "/private/open", "allowed", "line 10: Allow: /private/open"}},
		{name: "disallowed with line", ua: "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)", file: file, paths: []string{"/blog/"}, code: 1,
			want: []string{"/blog/", "DISALLOWED", "GPTBot", "line 2: Disallow: /"}},
		{name: "crawl-delay shown", ua: "SlowBot", file: file, paths: []string{"/blog/", "/private/x"}, code: 1,
			want: []string{"/blog/", "allowed", "SlowBot", "5s", "/private/x", "DISALLOWED", "line 6: Disallow: /private/", "5s"}},
		{name: "an HTML page", ua: "GPTBot", stdin: "<!doctype html><html><head><title>Shop</title></head><body>Disallow: /</body></html>", paths: []string{"/x"}, code: 0,
			want: []string{"# warning: this is an HTML page, not a robots.txt", "/x", "allowed"}},
		{name: "the views the guard judges", ua: "FooBot/1.0", file: file, paths: []string{"/public/../private/x", "//private/x", "/./private/x", "/private%2Fx", "/Private/x"}, code: 1,
			want: []string{"/public/../private/x", "DISALLOWED", "line 9: Disallow: /private/", "//private/x", "DISALLOWED", "line 9", "/./private/x", "DISALLOWED", "line 9",
				"/private%2Fx", "DISALLOWED", "line 9", "/Private/x", "allowed"}},
		{name: "a browser passes", ua: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36", file: file, paths: []string{"/private/x"}, code: 0,
			want: []string{"# not a bot", "/private/x", "allowed"}},
		{name: "robots.txt exempt", ua: "GPTBot", file: file, paths: []string{"/robots.txt"}, code: 0,
			want: []string{"/robots.txt", "allowed", "/robots.txt is always allowed"}},
		{name: "url", ua: "GPTBot", url: srv.URL + "/robots.txt", paths: []string{"/x"}, code: 1, want: []string{"DISALLOWED"}},
		{name: "url redirect", ua: "GPTBot", url: srv.URL + "/moved", paths: []string{"/x"}, code: 1, want: []string{"DISALLOWED"}},
		{name: "url 404 allows all", ua: "GPTBot", url: srv.URL + "/missing", paths: []string{"/x"}, code: 0, want: []string{"404", "everything is allowed", "/x", "allowed", "(none)"}},
		{name: "url 502 is an error", ua: "GPTBot", url: srv.URL + "/broken", paths: []string{"/x"}, code: 2, wantErr: "502"},
		{name: "stdin", ua: "GPTBot", stdin: testorigin.Sample, paths: []string{"/x"}, code: 1, want: []string{"DISALLOWED"}},
		{name: "no ua", file: file, paths: []string{"/x"}, code: 2, wantErr: "--ua is required"},
		{name: "file and url", ua: "x", file: file, url: srv.URL, paths: []string{"/x"}, code: 2, wantErr: "not both"},
		{name: "missing file", ua: "x", file: filepath.Join(t.TempDir(), "nope"), paths: []string{"/x"}, code: 2, wantErr: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code, err := runTest(&out, strings.NewReader(tc.stdin), tc.ua, tc.file, tc.url, tc.paths, verifyOpts{})
			if code != tc.code {
				t.Errorf("exit code %d, want %d (err %v)\n%s", code, tc.code, err, out.String())
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if w, ok := containsInOrder(out.String(), tc.want); !ok {
				t.Fatalf("output lacks %q (in order):\n%s", w, out.String())
			}
		})
	}
}

func TestRobotsLint(t *testing.T) {
	clean := testorigin.WriteFile(t, "User-agent: *\nDisallow: /private/\n")
	warn := testorigin.WriteFile(t, "Disallow: /early\nUser-agent: *\nDisalow: /x\nDisallow: /\nAllow: /public\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("User-agent: *\nCrawl-delay: soon\n"))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, src string
		o         lintOpts
		code      int
		want      []string
	}{
		{"clean", clean, lintOpts{}, 0, []string{"no findings"}},
		{"an error", warn, lintOpts{}, 1, []string{"line 1: error:", "rule-before-user-agent", "line 3: warning:", "accepted-typo", "1 errors, 1 warnings, 0 info; 1 more not shown"}},
		{"all", warn, lintOpts{all: true}, 1, []string{"line 1", "rule-before-user-agent", "line 3", "accepted-typo", "match-order", "1 errors, 1 warnings, 1 info"}},
		{"only a category", warn, lintOpts{only: []string{"syntax"}}, 0, []string{"accepted-typo", "0 errors, 1 warnings"}},
		{"ignore a code", warn, lintOpts{ignore: []string{"rule-before-user-agent"}}, 0, []string{"accepted-typo"}},
		{"strict", warn, lintOpts{ignore: []string{"rules"}, strict: true}, 1, []string{"accepted-typo"}},
		{"only info by code", warn, lintOpts{only: []string{"match-order"}}, 0, []string{"match-order", "0 errors, 0 warnings, 1 info"}},
		{"url", srv.URL + "/robots.txt", lintOpts{}, 1, []string{"line 2", "bad-crawl-delay"}},
		{"missing", filepath.Join(t.TempDir(), "nope"), lintOpts{}, 2, nil},
		{"bad category", clean, lintOpts{only: []string{"style"}}, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code, err := runLint(&out, tc.src, tc.o)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d (err %v)\n%s", code, tc.code, err, out.String())
			}
			if w, ok := containsInOrder(out.String(), tc.want); !ok {
				t.Fatalf("output lacks %q (in order):\n%s", w, out.String())
			}
		})
	}
}

// containsInOrder reports whether s holds every string of want, in order;
// if not, it returns the first one missing.
func containsInOrder(s string, want []string) (string, bool) {
	for _, w := range want {
		i := strings.Index(s, w)
		if i < 0 {
			return w, false
		}
		s = s[i+len(w):]
	}
	return "", true
}

func TestRobotsTestVerify(t *testing.T) {
	dir := t.TempDir()
	feed := filepath.Join(dir, "google.json")
	os.WriteFile(feed, []byte(`{"creationTime":"2026-11-01","prefixes":[{"ipv4Prefix":"66.249.64.0/27"}]}`), 0o644)
	ops := filepath.Join(dir, "ops.json")
	os.WriteFile(ops, []byte(`[{"name":"google","tokens":["Googlebot"],"ip_ranges":["`+feed+`"]},
		{"name":"acme","tokens":["AcmeBot"],"rdns":["crawl.acme.example"]}]`), 0o644)
	dns := testdns.Start(t)
	dns.PTR("11.51.100.7", "bot-7.crawl.acme.example")
	dns.Host("bot-7.crawl.acme.example", "11.51.100.7")
	robots := testorigin.WriteFile(t, "User-agent: Googlebot\nUser-agent: AcmeBot\nAllow: /\n\nUser-agent: *\nDisallow: /private/\n")
	vo := func(ip, onSpoofed string) verifyOpts {
		return verifyOpts{ip: ip, resolver: dns.Addr, operators: ops, onSpoofed: onSpoofed}
	}
	for _, tc := range []struct {
		name, ua string
		vo       verifyOpts
		code     int
		want     []string
		wantErr  string
	}{
		{"verified by feed", "Googlebot/2.1", vo("66.249.64.5", "deny"), 0,
			[]string{"# verification: verified (google, ip_range)", "66.249.64.5 is in 66.249.64.0/27 of the feed " + feed, "/private/x", "allowed", "Googlebot"}, ""},
		{"spoofed, deny", "Googlebot/2.1", vo("11.0.113.9", "deny"), 1,
			[]string{"# verification: spoofed (google)", "in none of google's 1 loaded IP-range feeds", "/private/x", "DISALLOWED", "spoofed: not an address of google", "/robots.txt", "allowed"}, ""},
		{"spoofed, star", "Googlebot/2.1", vo("11.0.113.9", "star"), 1,
			[]string{"# verification: spoofed (google)", "/private/x", "DISALLOWED", "*", "line 6: Disallow: /private/"}, ""},
		{"verified by reverse DNS", "AcmeBot", vo("11.51.100.7", "deny"), 0,
			[]string{"# verification: verified (acme, rdns)", "PTR bot-7.crawl.acme.example, whose A/AAAA records include 11.51.100.7"}, ""},
		{"no claim", "FooBot", vo("11.0.113.9", "deny"), 1, []string{"# verification: none", "/private/x", "DISALLOWED"}, ""},
		{"bad ip", "Googlebot", vo("nowhere", "deny"), 2, nil, `--ip: "nowhere" is not an IP address`},
		{"bad on-spoofed", "Googlebot", vo("1.2.3.4", "block"), 2, nil, `--on-spoofed: want deny or star`},
		{"missing operators", "Googlebot", verifyOpts{ip: "1.2.3.4", onSpoofed: "deny", operators: filepath.Join(dir, "nope.json")}, 2, nil, "--operators"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code, err := runTest(&out, nil, tc.ua, robots, "", []string{"/private/x", "/robots.txt"}, tc.vo)
			if code != tc.code {
				t.Errorf("exit code %d, want %d (err %v)\n%s", code, tc.code, err, out.String())
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if w, ok := containsInOrder(out.String(), tc.want); !ok {
				t.Fatalf("output lacks %q (in order):\n%s", w, out.String())
			}
		})
	}
}

func TestRobotsLintTraps(t *testing.T) {
	file := testorigin.WriteFile(t, "User-agent: *\nDisallow: /no-robots/\n\nUser-agent: Googlebot\nDisallow: /private/\n")
	armed := testorigin.WriteFile(t, "User-agent: *\nDisallow: /no-robots/\n")
	var out bytes.Buffer
	code, err := runLint(&out, file, lintOpts{traps: []string{"/no-robots/"}})
	if code != 1 || err != nil || !strings.Contains(out.String(), "trap /no-robots/: NOT armed: allowed for Googlebot") {
		t.Fatalf("%d %v\n%s", code, err, out.String())
	}
	out.Reset()
	code, err = runLint(&out, armed, lintOpts{traps: []string{"/no-robots/", "/no-robots/*.html"}})
	if code != 0 || err != nil || strings.Count(out.String(), ": disallowed for every group") != 2 {
		t.Fatalf("%d %v\n%s", code, err, out.String())
	}
	if code, err := runLint(&out, armed, lintOpts{traps: []string{"no-robots"}}); code != 2 || err == nil {
		t.Fatalf("a bad trap: %d %v", code, err)
	}
}

func TestRobotsReport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots_guard/report" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"since":"2026-11-22T10:00:00Z","sites":[{"site":"https://example.com",
			"last_hour":[{"client":"11.0.113.7/32","group":"*","verification":"none","denials":12,"throttles":0,"traps":1,"banned":30}],
			"last_day":[{"client":"11.0.113.7/32","group":"*","verification":"none","denials":40,"throttles":2,"traps":1,"banned":30,"error":3},
				{"client":"11.51.100.0/24","group":"","verification":"none","denials":0,"throttles":0,"traps":1,"banned":5}],
			"lines":[{"line":3,"rule":"Disallow: /private/","count":40,"whom":[{"group":"*","verification":"none","count":40}]}]}]}`))
	}))
	defer srv.Close()
	var out bytes.Buffer
	code, err := runReport(&out, strings.TrimPrefix(srv.URL, "http://"))
	if code != 0 || err != nil {
		t.Fatalf("%d %v", code, err)
	}
	want := []string{"since 2026-11-22T10:00:00Z", "https://example.com", "last hour:", "11.0.113.7/32", "12", "last day:", "40 (+≤3)",
		"11.51.100.0/24", "(browser)", "lines that denied:", "Disallow: /private/", "* (none) 40"}
	if w, ok := containsInOrder(out.String(), want); !ok {
		t.Fatalf("output lacks %q:\n%s", w, out.String())
	}
	if code, err := runReport(&out, "127.0.0.1:1"); code != 2 || err == nil || !strings.Contains(err.Error(), "--address") {
		t.Fatalf("no Caddy: %d %v", code, err)
	}
}

func TestRobotsTestSignature(t *testing.T) {
	keyJSON := testkeys.PrivateJWK
	dir, _ := testkeys.DirectoryServer(t)
	ops := filepath.Join(t.TempDir(), "ops.json")
	os.WriteFile(ops, []byte(`[{"name":"acme","tokens":["AcmeBot"],"signature_agents":["`+dir.URL+`"]}]`), 0o644)
	priv, _ := identity.PrivateJWK(keyJSON)
	tp, _ := identity.Thumbprint(keyJSON)
	sign := func(created time.Time) []string {
		sr := &identity.SignedRequest{Method: "GET", Scheme: "https", Authority: "shop.example", Path: "/x", Header: http.Header{}}
		if err := identity.Sign(sr, priv, tp, dir.URL, created, created.Add(time.Minute), "n"); err != nil {
			t.Fatal(err)
		}
		var hs []string
		for _, k := range []string{"Signature", "Signature-Input", "Signature-Agent"} {
			hs = append(hs, k+": "+sr.Header.Get(k))
		}
		return hs
	}
	robots := testorigin.WriteFile(t, "User-agent: AcmeBot\nAllow: /\n\nUser-agent: *\nDisallow: /\n")
	vo := verifyOpts{ip: "11.0.113.9", operators: ops, onSpoofed: "deny", authority: "shop.example", allowPrivate: true,
		tls: &tls.Config{RootCAs: dir.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}
	var out bytes.Buffer
	vo.headers = sign(time.Now())
	code, err := runTest(&out, nil, "AcmeBot/1.0", robots, "", []string{"/x"}, vo)
	if code != 0 || err != nil || !strings.Contains(out.String(), "# verification: verified (acme, signature)") || !strings.Contains(out.String(), "signature: verified: key") {
		t.Fatalf("%d %v\n%s", code, err, out.String())
	}
	out.Reset()
	vo.headers = sign(time.Now().Add(-time.Hour))
	code, _ = runTest(&out, nil, "AcmeBot/1.0", robots, "", []string{"/x"}, vo)
	if !strings.Contains(out.String(), "signature: not verified: expired") {
		t.Fatalf("%d\n%s", code, out.String())
	}
}

// lint --trap --address prints each site's trap state from a running
// Caddy's admin API, and exits 1 when one is not armed.
func TestRobotsLintTrapStates(t *testing.T) {
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots_guard/sites" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `[{"site":"http://a.example","outcome":"ok","has_rules":true,"age":"1s","traps":[{"trap":"/no-robots/","state":"armed"}]},
{"site":"http://b.example","outcome":"ok","has_rules":true,"age":"1s","traps":[{"trap":"/no-robots/","state":"waiting","arms_at":"2026-11-25T10:00:00Z"}]},
{"site":"http://c.example","outcome":"ok","has_rules":true,"age":"1s","traps":[{"trap":"/no-robots/","state":"not_armed","allowed_for":"Googlebot"},{"trap":"/other/","state":"armed"}]}]`)
	}))
	defer admin.Close()
	var out bytes.Buffer
	code, err := runTrapStates(&out, strings.TrimPrefix(admin.URL, "http://"), []string{"/no-robots/"})
	for _, want := range []string{
		"trap /no-robots/ at http://a.example: armed",
		"trap /no-robots/ at http://b.example: waiting until 2026-11-25T10:00:00Z",
		"trap /no-robots/ at http://c.example: NOT armed: allowed for Googlebot",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	if code != exitFinding || err != nil || strings.Contains(out.String(), "/other/") {
		t.Fatalf("%d %v\n%s", code, err, out.String())
	}
}

// TestLintRealFiles: with the default options, "caddy robots lint" on the
// project's 30 real robots.txt files fails (exit 1) only on the files with
// a real error, and shows only what an operator should act on.
func TestLintRealFiles(t *testing.T) {
	files, err := filepath.Glob("../../testdata/robots/*.txt")
	if err != nil || len(files) != 30 {
		t.Fatalf("%d files (%v)", len(files), err)
	}
	failing := map[string]bool{"venture-gr.txt": true, "xuexi-cn.txt": true} // rules before any user-agent; content past the size cap
	shown, hidden := 0, 0
	for _, f := range files {
		var out bytes.Buffer
		code, err := runLint(&out, f, lintOpts{})
		if err != nil || code != map[bool]int{false: 0, true: 1}[failing[filepath.Base(f)]] {
			t.Errorf("%s: exit %d (%v)\n%s", filepath.Base(f), code, err, out.String())
		}
		for line := range strings.Lines(out.String()) {
			if strings.HasPrefix(line, "line ") {
				shown++
			}
		}
		var all bytes.Buffer
		runLint(&all, f, lintOpts{all: true})
		for line := range strings.Lines(all.String()) {
			if strings.HasPrefix(line, "line ") {
				hidden++
			}
		}
	}
	hidden -= shown
	t.Logf("30 real files: %d findings shown by default, %d more with --all", shown, hidden)
}
