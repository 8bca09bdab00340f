package nethttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
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
// purchase, /search-only/* by ls for search only) and sends every other request, the licence server's, on.
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
  <content url="/articles/*" server="`+s.ls.URL+`"><license><permits type="usage">all</permits></license></content>
  <content url="/paid/*" server="`+s.ls.URL+`"><license><payment type="purchase"><amount currency="USD">10</amount></payment></license></content>
  <content url="/search-only/*" server="`+s.ls.URL+`"><license><permits type="usage">search</permits></license></content>
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
		{"nginx, no token", "X-Original-URI", "/articles/1", uaGPTBot, "", 401, "401", noTokenChallenge(ls.URL), true},
		{"traefik, no token", "X-Forwarded-Uri", "/articles/1", uaGPTBot, "", 401, "401", noTokenChallenge(ls.URL), true},
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

// licenseCheck is a decision service (path_prefix /check, as
// check.Caddyfile) for sites whose robots.txt names the RSL document that
// licenseSite serves, and its licence server.
func licenseCheck(t *testing.T) (http.Handler, *testlicense.Server) {
	t.Helper()
	ls := testlicense.Start(t)
	e := newEngine(t, guard.WithSource(sites.BytesSource([]byte("License: http://example.com/license.xml\nUser-agent: *\nDisallow: /private/\n"))),
		guard.WithTransport(licenseSite{ls}))
	return mustCheck(t, e, CheckConfig{PathPrefix: "/check"}), ls
}

// TestCheckLicenseContracts: licences through a question shaped as
// Traefik's forwardAuth (docs/proxies/traefik.yml: the headers of
// authRequestHeaders, Authorization among them, plus its X-Forwarded-*,
// asked of the configured address) and as Envoy's ext_authz HTTP service
// (docs/proxies/envoy.yaml: the original method, Host and path after
// path_prefix, the allowed headers and Authorization). A bot without a
// token gets 401 with the License challenge and the Link, and so does one
// with a Basic credential (the service reads the License scheme only); a
// valid token passes with the Link and no challenge; a browser passes
// with neither, also with a Bearer credential for the site.
func TestCheckLicenseContracts(t *testing.T) {
	h, ls := licenseCheck(t)
	const link = `<http://example.com/license.xml>; rel="license"; type="application/rsl+xml"`
	challenge := noTokenChallenge(ls.URL)
	asks := map[string]func(target, ua, authorization string) *httptest.ResponseRecorder{
		"traefik": func(target, ua, authorization string) *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9180/", nil)
			r.Header.Set("User-Agent", ua)
			if authorization != "" {
				r.Header.Set("Authorization", authorization)
			}
			r.Header.Set("X-Forwarded-For", "192.0.2.7")
			r.Header.Set("X-Forwarded-Method", http.MethodGet)
			r.Header.Set("X-Forwarded-Proto", "http")
			r.Header.Set("X-Forwarded-Host", "example.com")
			r.Header.Set("X-Forwarded-Uri", target)
			return askRequest(h, r)
		},
		"envoy": func(target, ua, authorization string) *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodGet, "http://example.com/check"+target, nil)
			r.Header.Set("User-Agent", ua)
			if authorization != "" {
				r.Header.Set("Authorization", authorization)
			}
			r.Header.Set("X-Forwarded-For", "192.0.2.8")
			r.Header.Set("X-Forwarded-Proto", "http")
			r.Header.Set("Content-Length", "0")
			return askRequest(h, r)
		},
	}
	for proxy, ask := range asks {
		for _, c := range []struct {
			name, target, ua, authorization string
			code                            int
			challenge                       string // a part of WWW-Authenticate, "" for none
			link                            bool
		}{
			{"no token", "/articles/1", uaGPTBot, "", 401, challenge, true},
			{"a Basic credential", "/articles/1", uaGPTBot, "Basic dXNlcjpwYXNz", 401, challenge, true},
			{"a valid token", "/articles/2", uaGPTBot, "License " + ls.Token("http://example.com/", time.Hour), 200, "", true},
			{"an expired token", "/articles/3", uaGPTBot, "License " + ls.Token("http://example.com/", -time.Hour), 401, `error="invalid_token"`, true},
			{"a purchase", "/paid/x", uaGPTBot, "", 402, "License", true},
			{"a use no licence grants, a valid token", "/search-only/1", uaGPTBot, "License " + ls.Token("http://example.com/", time.Hour), 403, "", true},
			{"a browser", "/articles/1", uaChrome, "", 200, "", false},
			{"a browser with a Bearer credential", "/articles/1", uaChrome, "Bearer abc", 200, "", false},
		} {
			rec := ask(c.target, c.ua, c.authorization)
			got := rec.Header()
			if rec.Code != c.code || got.Get("X-Robots-Guard-Status") != strconv.Itoa(c.code) {
				t.Errorf("%s, %s: %d, X-Robots-Guard-Status %q; want %d", proxy, c.name, rec.Code, got.Get("X-Robots-Guard-Status"), c.code)
			}
			if w := got.Values("WWW-Authenticate"); c.challenge == "" && len(w) > 0 || c.challenge != "" && (len(w) != 1 || !strings.Contains(w[0], c.challenge)) {
				t.Errorf("%s, %s: WWW-Authenticate %q; want one with %q", proxy, c.name, w, c.challenge)
			}
			var want []string
			if c.link {
				want = []string{link}
			}
			if !slices.Equal(got["Link"], want) {
				t.Errorf("%s, %s: Link %q; want %q", proxy, c.name, got["Link"], want)
			}
		}
	}

	// The licence server does not answer: 503 with the challenge and the
	// Link (which Traefik passes on; Envoy takes a 5xx for its own
	// failure, docs/proxies/envoy.yaml).
	ls.SetDown(true)
	for proxy, ask := range asks {
		rec := ask("/articles/4", uaGPTBot, "License "+ls.Opaque("http://example.com/", time.Hour))
		if rec.Code != 503 || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="server_error"`) || rec.Header().Get("Link") != link {
			t.Errorf("%s, licence server down: %d %v; want 503, the challenge and the Link", proxy, rec.Code, rec.Header())
		}
	}
}

// askRequest sends the question r from a loopback proxy.
func askRequest(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	r.RemoteAddr = "127.0.0.1:40000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// noTokenChallenge is the challenge of an answer to a request without a
// licence token, for the licence server at server (RSL CAP's own example:
// error="invalid_request").
func noTokenChallenge(server string) string {
	return `License error="invalid_request", error_description="Access to this resource requires a valid license", authorization_uri="` + server + `/token"`
}
