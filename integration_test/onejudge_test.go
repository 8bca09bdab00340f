package integration_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/nethttp"
	"github.com/robotsguard/robotsguard/sites"
)

// judgeRobots is the robots.txt of TestOneJudge; its line numbers are the
// deciding lines the table names.
const judgeRobots = `User-agent: FooBot
Disallow: /private/
Allow: /private/open
Disallow: /*.pdf$
Disallow: /search
Disallow: /a;b
Disallow: /index.html$
Disallow: /~user/
Disallow: /café/
Disallow: /cgi-bin/*?id=
Disallow: /Admin
Disallow: /*/print$

User-agent: *
Disallow: /
`

// judgeCase is one request-target and what robots_guard answers FooBot for
// it: line is the deciding Disallow line of a refusal, 0 for an allowed
// target. path is what the command line and explain are given for an
// absolute-form target (they take a path); empty means target itself.
type judgeCase struct {
	target string
	line   int
	path   string
}

func judgeCases() []judgeCase {
	long := strings.Repeat("a", 6000)
	return []judgeCase{
		{target: "/"}, {target: "/public/"}, {target: "/private"}, {target: "/Private/x"}, {target: "/PRIVATE/x"},
		{target: "/private/x", line: 2}, {target: "/private/", line: 2}, {target: "/private//x", line: 2},
		{target: "/private/open"}, {target: "/private/open/x"}, {target: "/private/opener"},
		// dot segments, doubled and encoded slashes: the decoded view
		{target: "/public/../private/x", line: 2}, {target: "//private/x", line: 2}, {target: "/./private/x", line: 2},
		{target: "/private%2Fx", line: 2}, {target: "/private%2fx", line: 2}, {target: "/%2Fprivate/x", line: 2},
		{target: "/public/%2e%2e/private/x", line: 2}, {target: "/public/..%2Fprivate/x", line: 2},
		{target: "/private/%2e%2e/public", line: 2}, {target: "/private/open/../x", line: 2},
		{target: "/private/open%2F..%2Fsecret", line: 2}, {target: "/public/./x"}, {target: "/PRIVATE%2Fx"},
		// %-case and unreserved escapes (the RFC view)
		{target: "/%70rivate/x", line: 2}, {target: "/%7Euser/x", line: 8}, {target: "/%7euser/x", line: 8},
		{target: "/~user/x", line: 8}, {target: "/~user"}, {target: "/%7Euser"},
		{target: "/caf%C3%A9/x", line: 9}, {target: "/caf%c3%a9/x", line: 9}, {target: "/doc%2Epdf", line: 4},
		// queries
		{target: "/private/x?q=1", line: 2}, {target: "/private/x?y=/public", line: 2}, {target: "/public?next=/private/x"},
		{target: "/search", line: 5}, {target: "/search?q=x", line: 5}, {target: "/searching", line: 5},
		{target: "/Search"}, {target: "/search%3Fq", line: 5}, {target: "//search", line: 5}, {target: "/x/../search", line: 5},
		{target: "/cgi-bin/run?id=1", line: 10}, {target: "/cgi-bin/?id=", line: 10}, {target: "/cgi-bin/run?x=1&id=1"},
		{target: "/CGI-BIN/run?id=1"},
		// ';' parameters
		{target: "/a;b", line: 6}, {target: "/a;b/c", line: 6}, {target: "/a;b?x", line: 6}, {target: "/a%3Bb", line: 6}, {target: "/a;c"},
		// '$' rules and index.html
		{target: "/doc.pdf", line: 4}, {target: "/dir/doc.pdf", line: 4}, {target: "/doc.pdf?x=1"}, {target: "/doc.PDF"},
		// a ';' parameter dropped, as servlet containers read it (SEMANTICS.md §6a)
		{target: "/doc.pdf/"}, {target: "/doc.pdf;v=1", line: 4},
		{target: "/index.html", line: 7}, {target: "/index.html?x"}, {target: "/index.htm"}, {target: "/dir/index.html"},
		{target: "/index.html;x", line: 7},
		{target: "/x/print", line: 12}, {target: "/x/y/print", line: 12}, {target: "/x/print/"}, {target: "/print"},
		{target: "/Admin", line: 11}, {target: "/Admin/x", line: 11}, {target: "/admin"},
		// robots.txt itself, very long paths, absolute-form
		{target: "/robots.txt"}, {target: "/robots.txt?x=1"},
		{target: "/private/" + long, line: 2}, {target: "/" + long},
		{target: "http://HOST/private/x", line: 2, path: "/private/x"}, {target: "http://HOST/public/", path: "/public/"},
		{target: "http://HOST//private/x", line: 2, path: "//private/x"},
	}
}

// TestOneJudge sends every target of judgeCases through every front: the
// built Caddy (a real request), the net/http middleware (a real request),
// the admin API's explain and "caddy robots test" (the built binary).
// Each must give the verdict and deciding line of the table, so that no
// front judges a request-target differently from the others.
func TestOneJudge(t *testing.T) {
	cases := judgeCases()
	if len(cases) < 50 {
		t.Fatalf("%d targets, want at least 50", len(cases))
	}
	const ua = "FooBot/1.0"
	up := newUpstream(t, judgeRobots)
	port := freePort(t)
	load(t, "", fmt.Sprintf(`http://127.0.0.1:%d {
	header >X-Rule {http.robots_guard.rule}
	robots_guard {
		verify off
	}
	reverse_proxy %s
}
`, port, up.addr()))
	e, err := guard.New(guard.Config{Verify: &identity.VerifyConfig{Off: true}},
		guard.WithSource(sites.BytesSource([]byte(judgeRobots))))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	front := httptest.NewServer(nethttp.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })))
	defer front.Close()
	fronts := map[string]func(c judgeCase) (int, error){
		"caddy": func(c judgeCase) (int, error) { return wireLine(t, fmt.Sprintf("127.0.0.1:%d", port), c.target, ua) },
		"net/http": func(c judgeCase) (int, error) {
			return wireLine(t, strings.TrimPrefix(front.URL, "http://"), c.target, ua)
		},
		"explain": func(c judgeCase) (int, error) {
			code, b := adminDo(t, "GET", fmt.Sprintf("/robots_guard/explain?site=127.0.0.1:%d&ua=%s&path=%s", port, url.QueryEscape(ua), url.QueryEscape(c.cliPath())))
			var x guard.Explanation
			if err := json.Unmarshal(b, &x); code != 200 || err != nil {
				return 0, fmt.Errorf("explain: %d %s", code, b)
			}
			if x.Action == "allow" {
				return 0, nil
			}
			if x.Rule == nil {
				return -1, fmt.Errorf("explain: %s with no rule", x.Action)
			}
			return x.Rule.Line, nil
		},
	}
	cli := cliLines(t, ua, cases)
	fronts["caddy robots test"] = func(c judgeCase) (int, error) {
		l, ok := cli[c.cliPath()]
		if !ok {
			return 0, fmt.Errorf("no row for %q", c.cliPath())
		}
		return l, nil
	}
	for name, front := range fronts {
		for _, c := range cases {
			got, err := front(c)
			if err != nil || got != c.line {
				t.Errorf("%s: %.60q: line %d (%v), want %d", name, c.target, got, err, c.line)
			}
		}
	}
}

func (c judgeCase) cliPath() string {
	if c.path != "" {
		return c.path
	}
	return c.target
}

var bodyLine = regexp.MustCompile(`^Disallowed by robots\.txt line (\d+) for `)

// wireLine sends "GET target" to addr as it is written (absolute-form
// targets get addr as their host) and returns the deciding line of a 403,
// or 0 for a 200.
func wireLine(t *testing.T, addr, target, ua string) (int, error) {
	target = strings.Replace(target, "HOST", addr, 1)
	resp := rawRequest(t, addr, "GET "+target+" HTTP/1.1\r\nHost: "+addr+"\r\nUser-Agent: "+ua+"\r\n"+browserHeaderLines+"Connection: close\r\n\r\n")
	status, _, _ := strings.Cut(resp, "\r\n")
	_, body, _ := strings.Cut(resp, "\r\n\r\n")
	switch {
	case strings.HasPrefix(status, "HTTP/1.1 200"):
		return 0, nil
	case strings.HasPrefix(status, "HTTP/1.1 403"):
		m := bodyLine.FindStringSubmatch(body)
		if m == nil {
			return -1, fmt.Errorf("403 body %q", body)
		}
		return strconv.Atoi(m[1])
	}
	return -1, fmt.Errorf("answer %q", status)
}

// cliRow is a row of "caddy robots test": the path, the verdict and, for
// a refusal, the deciding line.
var cliRow = regexp.MustCompile(`^(\S+)\s+(allowed|DISALLOWED)\s+\S+\s+(?:line (\d+):)?`)

// cliLines runs the built "caddy robots test" on every case's path and
// returns the deciding line of each refusal, 0 for an allowed path.
func cliLines(t *testing.T, ua string, cases []judgeCase) map[string]int {
	t.Helper()
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte(judgeRobots), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"robots", "test", "--ua", ua, "--file", file, "--"}
	for _, c := range cases {
		args = append(args, c.cliPath())
	}
	out, err := exec.Command(buildCaddy(t), args...).Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("caddy robots test: %v\n%s", err, out)
	}
	lines := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := cliRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		lines[m[1]] = 0
		if m[2] == "DISALLOWED" {
			lines[m[1]], _ = strconv.Atoi(m[3])
		}
	}
	return lines
}
