package guard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/internal/testlicense"
	"github.com/robotsguard/robotsguard/license"
	"github.com/robotsguard/robotsguard/sites"
)

// licensedSite is a site whose robots.txt names an RSL document: its
// /articles/ are licensed by the licence server ls (payment as given),
// /free/ under terms with no licence server, the rest not licensed.
func licensedSite(ls *testlicense.Server, payment string) http.Handler {
	rsl := `<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/articles/*" server="` + ls.URL + `"><license><permits type="usage">all</permits>` + payment + `</license></content>
  <content url="/free/*"><license><payment type="free"/></license></content>
</rsl>`
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "License: http://example.com/license.xml\nUser-agent: *\nDisallow: /private/\n")
	})
	mux.HandleFunc("/license.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/rsl+xml")
		io.WriteString(w, rsl)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	return mux
}

// licenseRequest is a GET of target on example.com with the User-Agent
// ua, a browser's other headers and, unless token is "", an
// Authorization: License header.
func licenseRequest(ua, target, token string) *http.Request {
	r := httptest.NewRequest("GET", "http://example.com"+target, nil)
	r.RequestURI = target
	r.Header.Set("User-Agent", ua)
	browserHeaders(r.Header)
	if token != "" {
		r.Header.Set("Authorization", "License "+token)
	}
	return r
}

// TestLicenses: a bot that fetches content a licence with a licence
// server covers needs a valid token of that server (RSL's CAP): without
// one 401 (402 where the licence asks payment) with the WWW-Authenticate:
// License challenge; with a valid token it passes; an expired one, or one
// for another site, is 401 invalid_token; every answer to the bot on
// licensed content links the document; a browser is never asked; a path
// robots.txt disallows stays 403; licenses off and report change it.
func TestLicenses(t *testing.T) {
	ls := testlicense.Start(t)
	origin := licensedSite(ls, "")
	const gpt = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	serve := func(e *Engine, ua, target, token string) *httptest.ResponseRecorder {
		r := licenseRequest(ua, target, token)
		w := httptest.NewRecorder()
		v := e.DecideHTTP(r, nil, "192.0.2.9", origin)
		if v.Enforced() {
			e.Respond(w, r, v)
		} else {
			SetLicenseHeaders(w.Header(), v)
			w.WriteHeader(200)
		}
		return w
	}
	// The licence server is on this machine, the site example.com: a
	// fetch the site's file chose may reach public addresses only, so
	// the test's own transport stands in (TestLicenseServerPrivate holds
	// the refusal).
	local := WithTransport(http.DefaultTransport)
	e := mustNew(t, Config{}, local)
	defer e.Close()
	link := `<http://example.com/license.xml>; rel="license"; type="application/rsl+xml"`

	w := serve(e, gpt, "/articles/1", "")
	if w.Code != 401 || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "License") || w.Header().Get("Link") != link ||
		!strings.Contains(w.Header().Get("WWW-Authenticate"), ls.URL+"/token") {
		t.Errorf("no token: %d, WWW-Authenticate %q, Link %q; want 401, a License challenge naming the token endpoint, the Link", w.Code, w.Header().Get("WWW-Authenticate"), w.Header().Get("Link"))
	}
	w = serve(e, gpt, "/articles/1", ls.Token("http://example.com/", time.Hour))
	if w.Code != 200 || w.Header().Get("Link") != link {
		t.Errorf("a valid token: %d, Link %q; want 200 with the Link", w.Code, w.Header().Get("Link"))
	}
	for name, token := range map[string]string{
		"expired":      ls.Token("http://example.com/", -time.Hour),
		"another site": ls.Token("http://other.example/", time.Hour),
		"garbage":      "not-a-token",
	} {
		w := serve(e, gpt, "/articles/2", token)
		if w.Code != 401 || !strings.Contains(w.Header().Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s token: %d, WWW-Authenticate %q; want 401 invalid_token", name, w.Code, w.Header().Get("WWW-Authenticate"))
		}
	}
	if w := serve(e, gpt, "/free/x", ""); w.Code != 200 || w.Header().Get("Link") != link {
		t.Errorf("content under terms without a licence server: %d, Link %q; want 200 with the Link", w.Code, w.Header().Get("Link"))
	}
	if w := serve(e, gpt, "/other", ""); w.Code != 200 || w.Header().Get("Link") != "" {
		t.Errorf("content no licence covers: %d, Link %q; want 200 without a Link", w.Code, w.Header().Get("Link"))
	}
	if w := serve(e, gpt, "/license.xml", ""); w.Code != 200 || w.Header().Get("Link") != "" {
		t.Errorf("the licence's own document: %d, Link %q; want 200: the terms are everyone's to read", w.Code, w.Header().Get("Link"))
	}
	if w := serve(e, gpt, "/private/x", ""); w.Code != 403 {
		t.Errorf("a path robots.txt disallows: %d; want 403 whatever the licence", w.Code)
	}
	const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	if w := serve(e, chrome, "/articles/1", ""); w.Code != 200 || w.Header().Get("WWW-Authenticate") != "" {
		t.Errorf("a browser: %d, %q; want 200 and no challenge", w.Code, w.Header().Get("WWW-Authenticate"))
	}
	if w := serve(e, gpt, "/articles/3", ls.Opaque("http://example.com/", time.Hour)); w.Code != 200 {
		t.Errorf("an opaque token, introspected: %d; want 200", w.Code)
	}
	ls.SetDown(true)
	if w := serve(e, gpt, "/articles/3", ls.Opaque("http://example.com/", time.Hour)); w.Code != 503 {
		t.Errorf("licence server down, a new opaque token: %d; want 503", w.Code)
	}
	if w := serve(e, gpt, "/articles/4", ls.Token("http://example.com/", time.Hour)); w.Code != 200 {
		t.Errorf("licence server down, a signed token (its keys known): %d; want 200", w.Code)
	}
	ls.SetDown(false)

	paidOrigin := licensedSite(ls, `<payment type="purchase"><amount currency="USD">10</amount></payment>`)
	paid := mustNew(t, Config{}, local)
	defer paid.Close()
	origin = paidOrigin
	if w := serve(paid, gpt, "/articles/1", ""); w.Code != 402 {
		t.Errorf("a licence that asks payment, no token: %d; want 402", w.Code)
	}
	origin = licensedSite(ls, "")
	report := mustNew(t, Config{Licenses: license.Config{Mode: license.ModeReport}}, local)
	defer report.Close()
	if w := serve(report, gpt, "/articles/1", ""); w.Code != 200 || w.Header().Get("Link") != link {
		t.Errorf("licenses report: %d, Link %q; want 200 (a dry run) with the Link", w.Code, w.Header().Get("Link"))
	}
	off := mustNew(t, Config{Licenses: license.Config{Mode: license.ModeOff}})
	defer off.Close()
	if w := serve(off, gpt, "/articles/1", ""); w.Code != 200 || w.Header().Get("Link") != "" {
		t.Errorf("licenses off: %d, Link %q; want 200, no Link", w.Code, w.Header().Get("Link"))
	}
}

// TestLicenseServerPrivate: a licence server that the site's document
// names on a private address, for a public site, is not asked (the
// document chose the URL): the token cannot be checked, 503, and nothing
// reaches the server.
func TestLicenseServerPrivate(t *testing.T) {
	ls := testlicense.Start(t)
	e := mustNew(t, Config{})
	defer e.Close()
	r := httptest.NewRequest("GET", "http://example.com/articles/1", nil)
	r.RequestURI = "/articles/1"
	r.Header.Set("User-Agent", "GPTBot/1.2")
	r.Header.Set("Authorization", "License "+ls.Token("http://example.com/", time.Hour))
	v := e.DecideHTTP(r, nil, "192.0.2.9", licensedSite(ls, ""))
	if v.StatusCode() != 503 || !strings.Contains(v.LicenseDetail, "no public address") || ls.Requests("/key")+ls.Requests("/introspect") != 0 {
		t.Errorf("%d %q, %d requests to the server; want 503 naming the refusal, none", v.StatusCode(), v.LicenseDetail, ls.Requests("/key")+ls.Requests("/introspect"))
	}
}

// TestLicenseExplained: explain names the licence that covers the content
// and the licence server whose token a bot needs, and answers 401.
func TestLicenseExplained(t *testing.T) {
	ls := testlicense.Start(t)
	e := mustNew(t, Config{})
	defer e.Close()
	x, err := e.Explain(t.Context(), Request{Scheme: "http", Host: "example.com", Target: "/articles/1", UserAgent: "GPTBot/1.2", Origin: licensedSite(ls, "")})
	if err != nil || x.License != "http://example.com/license.xml" || x.LicenseServer != ls.URL || x.Status != 401 || x.Reason != "license" ||
		x.LicensePurpose != "ai-train" {
		t.Errorf("explain: %+v, %v; want the document, the licence server, 401 for reason license, GPTBot's purpose", x, err)
	}
}

// TestOfflineLicenses: an Engine of WithOfflineLicenses judges licensed
// content by the documents it is given, fetching none (not even after
// refresh) and asking no licence server: a bot without a token is refused
// as always, one with any token passes unchecked with the Link's
// document and server; a document not given leaves its content
// unenforced.
func TestOfflineLicenses(t *testing.T) {
	ls := testlicense.Start(t)
	const docURL = "https://example.com/license.xml"
	rsl := `<rsl xmlns="https://rslstandard.org/rsl"><content url="/articles/*" server="` + ls.URL + `"><license/></content></rsl>`
	var asked atomic.Int64
	docs := func(u string) ([]byte, bool) {
		asked.Add(1)
		if u == docURL {
			return []byte(rsl), true
		}
		return nil, false
	}
	clk := testclock.New()
	robots := "License: " + docURL + "\nLicense: https://example.com/other.xml\nUser-agent: *\nDisallow: /private/\n"
	// The transport fails every fetch, and reports it: none may happen.
	e := mustNew(t, Config{}, WithSource(sites.BytesSource([]byte(robots))), WithClock(clk.Now), WithTransport(fetchFails{t}), WithOfflineLicenses(docs))
	defer e.Close()
	decide := func(target, token string) Verdict {
		return e.Decide(context.Background(), Request{Scheme: "https", Host: "example.com", Target: target, UserAgent: "FooBot/1.0", ClientIP: "192.0.2.9", LicenseToken: token})
	}
	if v := decide("/articles/a", ""); v.Action != Deny || v.Reason != ReasonLicense || v.License != docURL || v.LicenseServer != ls.URL {
		t.Errorf("no token: %+v; want the licence refusal", v)
	}
	clk.Add(2 * time.Hour) // beyond refresh: given documents are not asked again
	if v := decide("/articles/a", "expired-long-ago"); v.Action != Allow || v.License != docURL || v.LicenseServer != ls.URL || v.LicenseError != "" {
		t.Errorf("a token: %+v; want it to pass unchecked, with the document and its server", v)
	}
	if v := decide("/other", ""); v.Action != Allow || v.License != "" {
		t.Errorf("content no document licenses: %+v", v)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("documents asked %d times; want 2 (each once)", n)
	}
	for _, path := range []string{"/key", "/introspect"} {
		if n := ls.Requests(path); n != 0 {
			t.Errorf("the licence server was asked %s %d times", path, n)
		}
	}
}

// fetchFails is an http.RoundTripper that fails every request, and the
// test with it.
type fetchFails struct{ t *testing.T }

func (f fetchFails) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("fetched %s", r.URL)
	return nil, io.EOF
}

// TestLicenseUsage: a licence's usage terms (RSL 1.0 <permits>,
// <prohibits>) are read against the documented purpose of the crawler the
// User-Agent names (SEMANTICS.md §8b): a use no licence of the content
// grants is 403 with the Link, token or not; of several licences, the one
// that grants the use decides 401 or 402; a bot whose use is not known is
// asked for a token as before; licenses report makes it a dry run.
func TestLicenseUsage(t *testing.T) {
	ls := testlicense.Start(t)
	const rsl = `<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/news/*" server="%s"><license><permits type="usage">search</permits></license></content>
  <content url="/mixed/*" server="%s">
    <license><permits type="usage">ai-train</permits><payment type="purchase"/></license>
    <license><permits type="usage">search ai-input</permits><payment type="free"/></license>
  </content>
  <content url="/terms/*"><license><prohibits type="usage">ai-train</prohibits></license></content>
</rsl>`
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "License: http://example.com/license.xml\nUser-agent: *\nAllow: /\n")
	})
	mux.HandleFunc("/license.xml", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.ReplaceAll(rsl, "%s", ls.URL))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	const (
		gpt    = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
		search = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot)"
		foo    = "FooBot/1.0 (+https://foo.example/bot)"
	)
	for _, mode := range []string{license.ModeEnforce, license.ModeReport} {
		e := mustNew(t, Config{Licenses: license.Config{Mode: mode}}, WithTransport(http.DefaultTransport))
		defer e.Close()
		valid := ls.Token("http://example.com/", time.Hour)
		for _, tt := range []struct {
			name, ua, target, token string
			code                    int
			reason                  Reason
		}{
			{"a training crawler, search only", gpt, "/news/1", "", 403, ReasonLicenseUsage},
			{"a training crawler, search only, a valid token", gpt, "/news/1", valid, 403, ReasonLicenseUsage},
			{"a search crawler, search only", search, "/news/1", "", 401, ReasonLicense},
			{"a search crawler, search only, a valid token", search, "/news/1", valid, 200, ReasonAllowed},
			{"a bot whose use is not known", foo, "/news/1", "", 401, ReasonLicense},
			{"a training crawler, the paid licence", gpt, "/mixed/1", "", 402, ReasonLicense},
			{"a search crawler, the free licence", search, "/mixed/1", "", 401, ReasonLicense},
			{"terms only, training prohibited", gpt, "/terms/1", "", 403, ReasonLicenseUsage},
			{"terms only, search", search, "/terms/1", "", 200, ReasonAllowed},
		} {
			r := licenseRequest(tt.ua, tt.target, tt.token)
			v := e.DecideHTTP(r, nil, "192.0.2.9", mux)
			code := 200
			if v.Enforced() {
				code = v.StatusCode()
			}
			if mode == license.ModeReport {
				tt.code = 200
			}
			if code != tt.code || v.Reason != tt.reason || v.License != "http://example.com/license.xml" {
				t.Errorf("%s, %s: %d %s (licence %q); want %d %s", mode, tt.name, code, v.Reason, v.License, tt.code, tt.reason)
			}
			if tt.reason == ReasonLicenseUsage && mode == license.ModeEnforce {
				w := httptest.NewRecorder()
				e.Respond(w, r, v)
				if body := w.Body.String(); !strings.Contains(body, "grants no ai-train use to GPTBot") || w.Header().Get("Link") == "" || w.Header().Get("WWW-Authenticate") != "" {
					t.Errorf("%s: body %q, Link %q, WWW-Authenticate %q; want the use named, the Link, no challenge",
						tt.name, body, w.Header().Get("Link"), w.Header().Get("WWW-Authenticate"))
				}
			}
		}
	}
	// content_signals off: the usage terms are still read.
	e := mustNew(t, Config{ContentSignals: SignalsOff}, WithTransport(http.DefaultTransport))
	defer e.Close()
	if v := e.DecideHTTP(licenseRequest(gpt, "/news/1", ""), nil, "192.0.2.9", mux); v.Reason != ReasonLicenseUsage {
		t.Errorf("content_signals off: %s; want license_usage", v.Reason)
	}
	// content_signals report: a Content-Signal's dry run does not make
	// the licence's refusal one (it failed before: the licence was not
	// read once a signal had said no).
	signalled := http.NewServeMux()
	signalled.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "License: http://example.com/license.xml\nUser-agent: *\nContent-Signal: ai-train=no\nAllow: /\n")
	})
	signalled.Handle("/", mux)
	report := mustNew(t, Config{ContentSignals: SignalsReport}, WithTransport(http.DefaultTransport))
	defer report.Close()
	if v := report.DecideHTTP(licenseRequest(gpt, "/news/1", ""), nil, "192.0.2.9", signalled); !v.Enforced() || v.Reason != ReasonLicenseUsage || v.License == "" {
		t.Errorf("content_signals report, a signal's no, a licence's no: %s %s (licence %q); want an enforced license_usage", v.ActionName(), v.Reason, v.License)
	}
	if v := report.DecideHTTP(licenseRequest(gpt, "/other", ""), nil, "192.0.2.9", signalled); v.ActionName() != "dry_run_deny" || v.Reason != ReasonContentSignal {
		t.Errorf("content_signals report, no licence: %s %s; want the signal's dry run", v.ActionName(), v.Reason)
	}
	// dry_run with content_signals enforce: the dry run reports what
	// enforcement would answer, the signal's refusal (the licence is not
	// read, nor its server asked).
	dry := mustNew(t, Config{DryRun: true}, WithTransport(http.DefaultTransport))
	defer dry.Close()
	if v := dry.DecideHTTP(licenseRequest(gpt, "/news/1", ""), nil, "192.0.2.9", signalled); v.ActionName() != "dry_run_deny" || v.Reason != ReasonContentSignal {
		t.Errorf("dry_run, a signal's no: %s %s; want dry_run_deny content_signal", v.ActionName(), v.Reason)
	}
}

// BenchmarkLicensedBot is GPTBot on licensed content with a valid signed
// token (its verification cached after the first request): the cost a
// licence adds to BenchmarkBotAllowed's path, Link header included.
func BenchmarkLicensedBot(b *testing.B) {
	ls := testlicense.Start(b)
	e := mustNew(b, Config{}, WithTransport(http.DefaultTransport))
	r := benchRequest(uaGPTBot, "/articles/1")
	r.Header.Set("Authorization", "License "+ls.Token("http://example.com/", time.Hour))
	site := licensedSite(ls, "")
	origin := http.NewServeMux()
	origin.Handle("/robots.txt", site)
	origin.Handle("/license.xml", site)
	origin.Handle("/", okHandler)
	runBench(b, serve(e, origin), r, 200)
}

// BenchmarkLicenseUsage is GPTBot on content whose licence grants search
// only: 403 license_usage, read from the licence's terms.
func BenchmarkLicenseUsage(b *testing.B) {
	ls := testlicense.Start(b)
	e := mustNew(b, Config{}, WithTransport(http.DefaultTransport))
	origin := http.NewServeMux()
	origin.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "License: http://example.com/license.xml\nUser-agent: *\nAllow: /\n")
	})
	origin.HandleFunc("/license.xml", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<rsl><content url="/news/*" server="`+ls.URL+`"><license><permits type="usage">search</permits></license></content></rsl>`)
	})
	runBench(b, serve(e, origin), benchRequest(uaGPTBot, "/news/1"), 403)
}

// licenseFetchCounter is a countObserver that counts the fetches of RSL
// documents too ("license/<outcome>").
type licenseFetchCounter struct{ *countObserver }

func (o licenseFetchCounter) ObserveLicenseFetch(outcome string) { o.inc("license/" + outcome) }

// TestLicenseRevalidation: an RSL document is revalidated as robots.txt
// is: a refresh asks with the copy's ETag, a 304 keeps the copy (counted
// not_modified, not parsed again), and a document that could not be read
// is fetched whole again (its validators are not kept).
func TestLicenseRevalidation(t *testing.T) {
	ls := testlicense.Start(t)
	var full, conditional, notModified atomic.Int32
	var broken atomic.Bool
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			conditional.Add(1)
			if r.Header.Get("If-None-Match") == `"v1"` && !broken.Load() {
				notModified.Add(1)
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		full.Add(1)
		w.Header().Set("ETag", `"v1"`)
		if broken.Load() {
			w.Header().Set("ETag", `"v2"`)
			io.WriteString(w, "<html>not an RSL document</html>")
			return
		}
		io.WriteString(w, `<rsl><content url="/articles/*" server="`+ls.URL+`"><license/></content></rsl>`)
	}))
	defer docs.Close()
	clk := testclock.New()
	obs := licenseFetchCounter{&countObserver{}}
	robots := "License: " + docs.URL + "/license.xml\nUser-agent: *\nAllow: /\n"
	e := mustNew(t, Config{}, WithSource(sites.BytesSource([]byte(robots))), WithClock(clk.Now), WithTransport(http.DefaultTransport), WithObserver(obs))
	defer e.Close()
	ask := func() Verdict {
		return e.DecideHTTP(licenseRequest(uaGPTBot, "/articles/1", ""), nil, "192.0.2.9", nil)
	}
	// waitFor waits for the background refresh that a request after the
	// refresh period starts.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for range 200 {
			if cond() {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("%s: never happened", what)
	}
	if v := ask(); v.Reason != ReasonLicense {
		t.Fatalf("first request: %s, want license", v.Reason)
	}
	clk.Add(2 * time.Hour)
	ask() // due: refreshed in the background
	waitFor("a 304", func() bool { return notModified.Load() == 1 && obs.get("license/not_modified") == 1 })
	if v := ask(); v.Reason != ReasonLicense || full.Load() != 1 {
		t.Errorf("after a 304: %s, %d full fetches; want the copy kept (license), 1", v.Reason, full.Load())
	}
	broken.Store(true)
	clk.Add(2 * time.Hour)
	ask()
	waitFor("an invalid document", func() bool { return obs.get("license/invalid") == 1 })
	clk.Add(2 * time.Hour)
	ask()
	waitFor("a second invalid document", func() bool { return obs.get("license/invalid") == 2 })
	if full.Load() != 3 {
		t.Errorf("%d full fetches, want 3: a document that could not be read is asked for whole again", full.Load())
	}
}
