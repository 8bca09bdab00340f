package nethttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/internal/testlicense"
	"github.com/robotsguard/robotsguard/sites"
)

// licenseSite is the transport of an engine whose sites' robots.txt
// names http://example.com/license.xml: it serves that RSL document
// (/articles/* licensed by the licence server ls, /paid/* by ls for a
// purchase) and sends every other request, the licence server's, on.
type licenseSite struct{ ls *testlicense.Server }

func (s licenseSite) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != "example.com" {
		return http.DefaultTransport.RoundTrip(r)
	}
	rec := httptest.NewRecorder()
	if r.URL.Path != "/license.xml" {
		rec.WriteHeader(http.StatusNotFound)
		return rec.Result(), nil
	}
	rec.Header().Set("Content-Type", "application/rsl+xml")
	io.WriteString(rec, `<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/articles/*" server="`+s.ls.URL+`"><license><permits type="usage">search</permits></license></content>
  <content url="/paid/*" server="`+s.ls.URL+`"><license><payment type="purchase"><amount currency="USD">10</amount></payment></license></content>
</rsl>`)
	return rec.Result(), nil
}

// TestCheckLicenses: the decision service answers a bot on licensed
// content (RSL 1.0) as the module does: the Link to the licence's
// document on every answer, once; without a token 401 with the
// WWW-Authenticate: License challenge, as is in nginx's contract too
// (auth_request takes a 401 and passes its challenge on); 402 for a
// purchase and 503 when the token cannot be checked, which nginx gets as
// 403 with X-Robots-Guard-Status 402 or 503 and the same headers; a valid
// token passes with the Link; a browser gets neither.
func TestCheckLicenses(t *testing.T) {
	ls := testlicense.Start(t)
	e := newEngine(t, guard.WithSource(sites.BytesSource([]byte("License: http://example.com/license.xml\nUser-agent: *\nDisallow: /private/\n"))),
		guard.WithTransport(licenseSite{ls}))
	h := mustCheck(t, e, CheckConfig{})
	const link = `<http://example.com/license.xml>; rel="license"; type="application/rsl+xml"`
	check := func(contract, target, ua, token string) *httptest.ResponseRecorder {
		hdr := []string{"User-Agent", ua, contract, target, "X-Forwarded-Host", "example.com", "X-Forwarded-For", "192.0.2.7"}
		if token != "" {
			hdr = append(hdr, "Authorization", "License "+token)
		}
		return ask(h, "127.0.0.1:1", "/", hdr...)
	}
	for _, c := range []struct {
		name, contract, target, ua, token string
		code                              int
		status, challenge                 string // X-Robots-Guard-Status; a part of WWW-Authenticate ("" for none)
		link                              bool
	}{
		{"nginx, no token", "X-Original-URI", "/articles/1", uaGPTBot, "", 401, "401", `License authorization_uri="` + ls.URL + `/token"`, true},
		{"traefik, no token", "X-Forwarded-Uri", "/articles/1", uaGPTBot, "", 401, "401", `License authorization_uri="` + ls.URL + `/token"`, true},
		{"nginx, a valid token", "X-Original-URI", "/articles/2", uaGPTBot, ls.Token("http://example.com/", time.Hour), 200, "200", "", true},
		{"traefik, a valid token", "X-Forwarded-Uri", "/articles/2", uaGPTBot, ls.Token("http://example.com/", time.Hour), 200, "200", "", true},
		{"nginx, an expired token", "X-Original-URI", "/articles/3", uaGPTBot, ls.Token("http://example.com/", -time.Hour), 401, "401", `error="invalid_token"`, true},
		{"nginx, a purchase", "X-Original-URI", "/paid/x", uaGPTBot, "", 403, "402", "License", true},
		{"traefik, a purchase", "X-Forwarded-Uri", "/paid/x", uaGPTBot, "", 402, "402", "License", true},
		{"nginx, no licence", "X-Original-URI", "/other", uaGPTBot, "", 200, "200", "", false},
		{"nginx, disallowed", "X-Original-URI", "/private/x", uaGPTBot, "", 403, "403", "", false},
		{"nginx, a browser", "X-Original-URI", "/articles/1", uaChrome, "", 200, "200", "", false},
	} {
		rec := check(c.contract, c.target, c.ua, c.token)
		got := rec.Header()
		if rec.Code != c.code || got.Get("X-Robots-Guard-Status") != c.status {
			t.Errorf("%s: %d, X-Robots-Guard-Status %q; want %d, %s", c.name, rec.Code, got.Get("X-Robots-Guard-Status"), c.code, c.status)
		}
		if challenge := got.Get("WWW-Authenticate"); c.challenge == "" && challenge != "" || !strings.Contains(challenge, c.challenge) {
			t.Errorf("%s: WWW-Authenticate %q, want one with %q", c.name, challenge, c.challenge)
		}
		var want []string
		if c.link {
			want = []string{link}
		}
		if !slices.Equal(got["Link"], want) {
			t.Errorf("%s: Link %q; want %q", c.name, got["Link"], want)
		}
	}

	// The licence server does not answer: an opaque token cannot be
	// checked, 503 (to nginx, 403 that says 503).
	ls.SetDown(true)
	for contract, code := range map[string]int{"X-Original-URI": 403, "X-Forwarded-Uri": 503} {
		rec := check(contract, "/articles/4", uaGPTBot, ls.Opaque("http://example.com/", time.Hour))
		if rec.Code != code || rec.Header().Get("X-Robots-Guard-Status") != "503" ||
			!strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="server_error"`) || rec.Header().Get("Link") != link {
			t.Errorf("%s, licence server down: %d %v; want %d, X-Robots-Guard-Status 503, the challenge and the Link", contract, rec.Code, rec.Header(), code)
		}
	}
}
