package nethttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/dashboard"
	"github.com/robotsguard/robotsguard/internal/testclock"
)

// get serves a GET of the dashboard and returns the status and page.
func dashGet(t *testing.T, h http.Handler, query string) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://ops.example/robots/"+query, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b), rec.Header()
}

// TestDashboardHandler: the net/http dashboard of an Engine shows its
// site, the robots.txt with each line's denials, the top offender, a ban
// that an Unban lifts (same origin only) and a tester whose answer
// highlights the deciding line.
func TestDashboardHandler(t *testing.T) {
	clk := testclock.New()
	e := trapEngine(t, trapRobots, clk)
	for range 3 {
		at(e, "Mozilla/5.0 (compatible; AhrefsBot/7.0)", "/private/x", "203.0.113.1:1") // line 3
	}
	at(e, uaChrome, e.TrapLinkFor(exampleSite, "198.51.100.7:1"), "198.51.100.7:1") // trapped: banned
	at(e, uaChrome, "/page", "198.51.100.7:1")                                      // banned
	h := DashboardHandler(e)

	code, body, hdr := dashGet(t, h, "")
	if code != 200 || !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'none'") || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("overview: %d, headers %v", code, hdr)
	}
	for _, want := range []string{`data-site="http://example.com"`, `data-k=denied>3<`, `data-client="198.51.100.7/32"`, ">Unban<"} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?i)<script|<link|<img|\b(src|href|action)="?(https?:)?//`).MatchString(body) {
		t.Error("the page loads a script or an external asset")
	}

	code, body, _ = dashGet(t, h, "?site=example.com")
	if code != 200 {
		t.Fatalf("site page: %d", code)
	}
	for _, want := range []string{
		`<tr id="L3"><td class=ln>3</td><td class=hits>3</td><td>Disallow: /private/</td>`,
		`<td>203.0.113.1/32</td><td>*</td>`,
		`Bot requests, last hour`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("site page lacks %q", want)
		}
	}

	q := "?" + url.Values{"site": {"example.com"}, "ua": {"AhrefsBot/7.0"}, "path": {"/private/y"}}.Encode()
	_, body, _ = dashGet(t, h, q)
	if !strings.Contains(body, `<tr id="L3" class="decides">`) || !strings.Contains(body, `id=verdict`) || !strings.Contains(body, "line 3</a>: <code>Disallow: /private/</code>") {
		t.Errorf("tester: no verdict naming line 3, highlighted:\n%s", excerpt(body, "verdict"))
	}

	// A cross-origin POST is refused; a same-origin one lifts the ban.
	post := func(hdr map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://ops.example/robots/", strings.NewReader("op=unban&client=198.51.100.7"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := post(map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}); rec.Code != http.StatusForbidden {
		t.Fatalf("cross-site POST: %d", rec.Code)
	}
	if rec := post(map[string]string{"Origin": "https://evil.example"}); rec.Code != http.StatusForbidden {
		t.Fatalf("cross-origin POST without fetch metadata: %d", rec.Code)
	}
	if len(e.Bans(t.Context())) != 1 {
		t.Fatal("a refused POST lifted the ban")
	}
	rec := post(map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://ops.example"})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "?client=198.51.100.7&unban=lifted" {
		t.Fatalf("same-origin POST: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if n := len(e.Bans(t.Context())); n != 0 {
		t.Fatalf("%d bans after Unban", n)
	}
	_, body, _ = dashGet(t, h, "?client=198.51.100.7&unban=lifted")
	if !strings.Contains(body, "Lifted the ban of 198.51.100.7.") || !strings.Contains(body, "No client is banned.") {
		t.Error("after Unban: no flash, or the ban still listed")
	}
	if code, _, _ := dashGet(t, h, "?site=nowhere.example"); code != http.StatusNotFound {
		t.Errorf("unknown site: %d", code)
	}
}

// excerpt returns the part of s around the first sub, for a failure.
func excerpt(s, sub string) string {
	i := strings.Index(s, sub)
	if i < 0 {
		return "(" + sub + " not found)"
	}
	return s[max(0, i-200):min(len(s), i+600)]
}

// TestDashboardRequest: the tester's query becomes the Request explain
// gets: the site as host or scheme and host, the path, the client, and
// signature headers as a signed request for that path would carry them.
func TestDashboardRequest(t *testing.T) {
	req, err := DashboardRequest(dashboard.Query{Site: "https://Example.com:8443", UserAgent: "Bot/1", Path: "/a?b=1", ClientIP: "[2001:db8::1]",
		Signature: "sig1=:AAAA:", SignatureInput: `sig1=("@authority");keyid="k"`, SignatureAgent: `"https://agent.example"`})
	if err != nil {
		t.Fatal(err)
	}
	if req.Scheme != "https" || req.Host != "Example.com:8443" || req.Target != "/a?b=1" || req.ClientIP != "2001:db8::1" || req.UserAgent != "Bot/1" {
		t.Fatalf("%+v", req)
	}
	s := req.Signed
	if s == nil || s.Method != "GET" || s.Scheme != "https" || s.Authority != "Example.com:8443" || s.Path != "/a" || s.Query != "b=1" ||
		s.Header.Get("Signature-Input") == "" || s.Header.Get("Signature-Agent") != `"https://agent.example"` {
		t.Fatalf("signed %+v", s)
	}
	if req, _ := DashboardRequest(dashboard.Query{Site: "example.com"}); req.Scheme != "http" || req.Target != "/" || req.Signed != nil {
		t.Fatalf("defaults: %+v", req)
	}
	for _, q := range []dashboard.Query{{Site: "ftp://example.com"}, {Site: "http://"}, {Site: "example.com", Path: "x"}} {
		if _, err := DashboardRequest(q); err == nil {
			t.Errorf("%+v accepted", q)
		}
	}
}
