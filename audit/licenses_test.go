package audit

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/internal/testlicense"
	"github.com/robotsguard/robotsguard/license"
)

// licensedDoc is an RSL document whose /articles/ are licensed by the
// licence server at server, /free/ under terms with no licence server.
func licensedDoc(server string) string {
	return `<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/articles/*" server="` + server + `"><license><permits type="usage">all</permits></license></content>
  <content url="/free/*"><license><payment type="free"/></license></content>
</rsl>`
}

// docServer serves doc at /license.xml and counts the requests it gets.
func docServer(t *testing.T, doc string) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/license.xml" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/rsl+xml")
		io.WriteString(w, doc)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// withHeaders is a Caddy JSON line with the headers given (JSON members)
// added to the User-Agent.
func withHeaders(line, headers string) string {
	return strings.Replace(line, `"headers":{`, `"headers":{`+headers+`,`, 1)
}

// TestAuditLicenses: against a robots.txt with a License line whose
// document is given (Options.Licenses), a Caddy log's bot on licensed
// content without an Authorization header is unlicensed (a stopped
// request: the guard's 401), one with it (REDACTED, or a License token
// shown) a token unchecked, one with another scheme's credentials
// unlicensed; a browser, content not licensed and terms without a
// licence server count nothing. A Combined log's bots on licensed content
// count as token unknown, not as stopped. Neither the document's server
// nor the licence server is asked anything.
func TestAuditLicenses(t *testing.T) {
	ls := testlicense.Start(t)
	doc := licensedDoc(ls.URL)
	srv, hits := docServer(t, doc)
	docURL := srv.URL + "/license.xml"
	versions := []Version{{Name: "robots.txt", Body: []byte("License: " + docURL + "\nUser-agent: *\nDisallow: /private/\n")}}
	opts := Options{Versions: versions, Licenses: map[string][]byte{docURL: []byte(doc)}}

	ts := strconv.FormatInt(t46.Unix(), 10)
	const bot = "FooBot/1.0"
	// The log's site is the document's host: an engine that fetched it
	// would reach it.
	host := strings.TrimPrefix(srv.URL, "http://")
	log := caddyJSON(ts, "192.0.2.1", host, "/articles/a", bot) + // no token
		caddyJSON(ts, "192.0.2.1", host, "/articles/b", bot) +
		withHeaders(caddyJSON(ts, "192.0.2.2", host, "/articles/a", bot), `"Authorization":["REDACTED"]`) +
		withHeaders(caddyJSON(ts, "192.0.2.3", host, "/articles/a", bot), `"Authorization":["License abc.def.ghi"]`) + // log_credentials
		withHeaders(caddyJSON(ts, "192.0.2.4", host, "/articles/a", bot), `"Authorization":["Basic dTpw"]`) + // no licence token
		withHeaders(caddyJSON(ts, "192.0.2.5", host, "/articles/a", chromeUA), `"Accept-Language":["en"]`) + // a browser
		caddyJSON(ts, "192.0.2.6", host, "/other", bot) + // not licensed
		caddyJSON(ts, "192.0.2.6", host, "/free/x", bot) + // terms only
		caddyJSON(ts, "192.0.2.7", host, "/license.xml", bot) // the document itself: every crawler may read it
	a := newTestAuditor(t, guard.Config{}, opts)
	if err := a.Read(context.Background(), strings.NewReader(log), "caddy.log"); err != nil {
		t.Fatal(err)
	}
	res := a.Result()
	if len(res.Warnings) != 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
	s := res.Sites[0]
	if s.Unlicensed != 3 || s.TokenUnchecked != 2 || s.TokenUnknown != 0 {
		t.Errorf("site: unlicensed %d, token unchecked %d, unknown %d; want 3, 2, 0", s.Unlicensed, s.TokenUnchecked, s.TokenUnknown)
	}
	got := map[string]string{}
	for _, r := range append(s.Offenders, s.Compliant...) {
		got[r.Client] = strconv.FormatInt(r.Unlicensed, 10) + " " + strconv.FormatInt(r.TokenUnchecked, 10) + " " +
			strconv.FormatInt(r.TokenUnknown, 10) + " " + strconv.FormatInt(r.Stopped(), 10)
	}
	want := map[string]string{
		"192.0.2.1/32": "2 0 0 2", // refused twice
		"192.0.2.2/32": "0 1 0 0",
		"192.0.2.3/32": "0 1 0 0",
		"192.0.2.4/32": "1 0 0 1",
		"192.0.2.6/32": "0 0 0 0",
		"192.0.2.7/32": "0 0 0 0",
	}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s: unlicensed, unchecked, unknown, stopped = %q; want %q", c, got[c], w)
		}
	}
	if _, ok := got["192.0.2.5/32"]; ok || len(s.Offenders) != 2 {
		t.Errorf("rows %v; offenders %d, want 2 (the browser no row)", got, len(s.Offenders))
	}
	if x := s.Offenders[0].Examples; len(x) == 0 || x[0].Reason != guard.ReasonLicense.String() {
		t.Errorf("examples %+v; want the licence refusal", x)
	}

	// The Combined Log Format carries no Authorization: the token is
	// unknown, and no request is refused for it.
	c := newTestAuditor(t, guard.Config{}, Options{Site: srv.URL, Versions: versions, Licenses: opts.Licenses})
	clog := combined("192.0.2.1", t46, "/articles/a", bot) + combined("192.0.2.1", t46, "/articles/b", bot) +
		combined("192.0.2.5", t46, "/articles/a", chromeUA) + combined("192.0.2.6", t46, "/other", bot)
	if err := c.Read(context.Background(), strings.NewReader(clog), "access.log"); err != nil {
		t.Fatal(err)
	}
	s = c.Result().Sites[0]
	if s.Unlicensed != 0 || s.TokenUnknown != 2 || s.TokenUnchecked != 0 || len(s.Offenders) != 0 {
		t.Errorf("combined: unlicensed %d, unknown %d, unchecked %d, offenders %+v; want 0, 2, 0, none", s.Unlicensed, s.TokenUnknown, s.TokenUnchecked, s.Offenders)
	}
	for _, r := range s.Compliant {
		if r.Client == "192.0.2.1/32" && r.TokenUnknown != 2 {
			t.Errorf("combined row %+v; want 2 with token unknown", r)
		}
	}

	for _, path := range []string{"/key", "/introspect", "/token"} {
		if n := ls.Requests(path); n != 0 {
			t.Errorf("the licence server was asked %s %d times; want none", path, n)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the document was fetched %d times, though given", n)
	}
}

// TestAuditLicensesFetched: without Options.Licenses the audit fetches
// each document of the License lines once, at the start (the document
// on the site's own host, loopback here, as the guard reaches it), and
// judges by it; one that cannot be fetched, or read, is a warning, never
// fatal, and so is a document given that no robots.txt names or one
// named that none gives; offline, nothing is fetched, and a warning says
// the licences were not read; with licenses off, nothing is read.
func TestAuditLicensesFetched(t *testing.T) {
	ls := testlicense.Start(t)
	srv, hits := docServer(t, licensedDoc(ls.URL))
	docURL := srv.URL + "/license.xml"
	robotsOf := func(urls ...string) []Version {
		body := ""
		for _, u := range urls {
			body += "License: " + u + "\n"
		}
		return []Version{{Name: "robots.txt", Body: []byte(body + "User-agent: *\nDisallow: /private/\n")}}
	}
	clog := combined("192.0.2.1", t46, "/articles/a", "FooBot/1.0")
	site := "http://127.0.0.1"
	read := func(cfg guard.Config, opts Options) Result {
		t.Helper()
		a := newTestAuditor(t, cfg, opts)
		if err := a.Read(context.Background(), strings.NewReader(clog), "access.log"); err != nil {
			t.Fatal(err)
		}
		return a.Result()
	}

	// Twice named (two versions): fetched once; a 404 is a warning.
	vs := append(robotsOf(docURL, srv.URL+"/missing.xml"), Version{Name: "new", Since: t46.Add(-1), Body: []byte("License: " + docURL + "\n")})
	res := read(guard.Config{}, Options{Site: site, Versions: vs})
	if s := res.Sites[0]; s.TokenUnknown != 1 {
		t.Errorf("fetched: token unknown %d; want 1", s.TokenUnknown)
	}
	if hits.Load() != 2 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "missing.xml could not be fetched") {
		t.Errorf("%d fetches (want 2: the document once, the missing one once), warnings %q", hits.Load(), res.Warnings)
	}

	// A document that is none: a warning.
	bad := srv.URL + "/bad.xml"
	res = read(guard.Config{}, Options{Site: site, Versions: robotsOf(bad), Licenses: map[string][]byte{bad: []byte("<html>")}})
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "no RSL document") || res.Sites[0].TokenUnknown != 0 {
		t.Errorf("a bad document: warnings %q, site %+v", res.Warnings, res.Sites[0])
	}

	// Given but named by none, named but not given.
	res = read(guard.Config{}, Options{Site: site, Versions: robotsOf(docURL), Licenses: map[string][]byte{"https://elsewhere.example/l.xml": []byte(licensedDoc(ls.URL))}})
	if len(res.Warnings) != 2 || !strings.Contains(res.Warnings[0], "no License line") || !strings.Contains(res.Warnings[1], "no --license gives it") {
		t.Errorf("warnings %q", res.Warnings)
	}

	before := hits.Load()
	res = read(guard.Config{}, Options{Site: site, Versions: robotsOf(docURL), Offline: true})
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "--offline read no RSL document") || res.Sites[0].TokenUnknown != 0 {
		t.Errorf("offline: warnings %q, site %+v", res.Warnings, res.Sites[0])
	}
	res = read(guard.Config{Licenses: license.Config{Mode: license.ModeOff}}, Options{Site: site, Versions: robotsOf(docURL)})
	if len(res.Warnings) != 0 || res.Sites[0].TokenUnknown != 0 {
		t.Errorf("licenses off: warnings %q, site %+v", res.Warnings, res.Sites[0])
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("offline or off: %d fetches", n)
	}
	for _, path := range []string{"/key", "/introspect", "/token"} {
		if n := ls.Requests(path); n != 0 {
			t.Errorf("the licence server was asked %s %d times; want none", path, n)
		}
	}
}
