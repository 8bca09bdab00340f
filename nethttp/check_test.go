package nethttp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/sites"
	"github.com/robotsguard/robotsguard/traps"
)

// checkEngine judges robotsTxt for every site.
func checkEngine(t *testing.T) *guard.Engine {
	t.Helper()
	return newEngine(t, guard.WithSource(sites.BytesSource([]byte(robotsTxt))))
}

// mustCheck is Check for an engine and a cfg that it accepts.
func mustCheck(tb testing.TB, e *guard.Engine, cfg CheckConfig, opts ...Option) http.Handler {
	tb.Helper()
	h, err := Check(e, cfg, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// TestCheckRefuses: the service refuses an engine that would ask each site
// itself for its robots.txt (the default, or sites.SelfSource given
// explicitly), which it does not serve, with the Caddy module's error, and
// a cfg that fails Validate; another source passes.
func TestCheckRefuses(t *testing.T) {
	const want = "robots_guard_check: robots_txt: set origin (the address each site's /robots.txt is asked of, with site_names), " +
		"a URL or a file: the decision service does not serve the sites it protects"
	for name, e := range map[string]*guard.Engine{
		"default":    newEngine(t),
		"SelfSource": newEngine(t, guard.WithSource(sites.SelfSource())),
	} {
		if h, err := Check(e, CheckConfig{}); h != nil || !errors.Is(err, ErrSelfSource) || err.Error() != want {
			t.Errorf("%s: Check = %v, %v; want %q", name, h, err, want)
		}
	}
	if h, err := Check(checkEngine(t), CheckConfig{PathPrefix: "check/"}); h != nil || err == nil || !strings.Contains(err.Error(), "path_prefix") {
		t.Errorf("bad path_prefix: Check = %v, %v", h, err)
	}

	fromURL, err := guard.New(guard.Config{Verify: &identity.VerifyConfig{Off: true}, RobotsTxt: sites.Config{Source: "https://example.com/robots.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fromURL.Close() })
	for name, e := range map[string]*guard.Engine{"WithSource": checkEngine(t), "a URL": fromURL} {
		if _, err := Check(e, CheckConfig{PathPrefix: "/check"}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// ask sends a question from peer with the headers h (name, value pairs)
// to the check handler and returns the answer.
func ask(h http.Handler, peer, target string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "http://check.internal"+target, nil)
	r.RemoteAddr = peer
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// TestCheckContracts: each proxy's documented question is read as the
// request it stands for, and answered as the Engine decides it.
func TestCheckContracts(t *testing.T) {
	h := mustCheck(t, checkEngine(t), CheckConfig{PathPrefix: "/check"})
	const proxy = "127.0.0.1:40000"
	cases := []struct {
		name   string
		target string
		hdr    []string
		status int
		body   string
	}{
		// nginx auth_request, as docs/proxies/nginx.conf writes it.
		{"nginx allow", "/.robots_guard", []string{"User-Agent", "FooBot/1.0", "X-Original-URI", "/public", "X-Original-Method", "GET",
			"X-Forwarded-Host", "example.com", "X-Forwarded-Proto", "http", "X-Forwarded-Port", "80", "X-Forwarded-For", "192.0.2.7"}, 200, ""},
		{"nginx deny", "/.robots_guard", []string{"User-Agent", "FooBot/1.0", "X-Original-URI", "/private/x",
			"X-Forwarded-Host", "example.com", "X-Forwarded-For", "192.0.2.7"}, 403, "Disallowed by robots.txt line 8 for *"},
		// Traefik forwardAuth: the original headers plus X-Forwarded-*
		// (Method, Proto, Host, Uri, For), the question sent to the
		// configured address.
		{"traefik deny", "/", []string{"User-Agent", uaGPTBot, "X-Forwarded-Method", "GET", "X-Forwarded-Proto", "https",
			"X-Forwarded-Host", "example.com", "X-Forwarded-Uri", "/anything?q=1", "X-Forwarded-For", "192.0.2.8"}, 403, "for GPTBot"},
		{"traefik browser", "/", []string{"User-Agent", uaChrome, "X-Forwarded-Method", "GET", "X-Forwarded-Proto", "https",
			"X-Forwarded-Host", "example.com", "X-Forwarded-Uri", "/private/x", "X-Forwarded-For", "192.0.2.8"}, 200, ""},
		// Caddy forward_auth: X-Forwarded-Method and -Uri, with
		// reverse_proxy's X-Forwarded-For, -Proto and -Host.
		{"caddy forward_auth deny", "/", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/private/%2e%2e/private/x",
			"X-Forwarded-Host", "example.com", "X-Forwarded-Proto", "http", "X-Forwarded-For", "192.0.2.9"}, 403, "Disallowed by robots.txt"},
		// Envoy ext_authz: the original method and path after path_prefix,
		// the original Host, and the allowed headers.
		{"envoy deny", "/check/private/x?y=1", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Proto", "http", "X-Forwarded-For", "192.0.2.10"}, 403, "line 8 for *"},
		{"envoy allow", "/check/public", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-For", "192.0.2.10"}, 200, ""},
		{"envoy robots.txt", "/check/robots.txt", []string{"User-Agent", uaGPTBot}, 200, ""},
		// Questions the service cannot place: never an allow.
		{"no target", "/", []string{"User-Agent", uaChrome}, 400, "names no request"},
		{"absolute-form target", "/", []string{"User-Agent", uaChrome, "X-Forwarded-Uri", "http://example.com/"}, 400, "not in origin form"},
		{"asterisk target", "/", []string{"User-Agent", uaChrome, "X-Forwarded-Uri", "*"}, 400, "not in origin form"},
		// A Host the proxy and the site may read as different sites.
		{"host list", "/", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Uri", "/", "X-Forwarded-Host", "example.com,open.example.com"}, 400, "not one host name"},
		{"host list with a space", "/", []string{"User-Agent", uaChrome, "X-Forwarded-Uri", "/", "X-Forwarded-Host", "example.com, a.test"}, 400, "not one host name"},
		{"host with a trailing dot", "/", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Uri", "/", "X-Forwarded-Host", "example.com."}, 400, "not one host name"},
		{"host with an empty label", "/", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Uri", "/", "X-Forwarded-Host", "a..example.com"}, 400, "not one host name"},
		{"host with an empty port", "/", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Uri", "/", "X-Forwarded-Host", "example.com:"}, 400, "not one host name"},
		{"host with a user", "/", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Uri", "/", "X-Forwarded-Host", "a@example.com"}, 400, "not one host name"},
		{"host with a port", "/", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Uri", "/public", "X-Forwarded-Host", "Example.COM:8443"}, 200, ""},
		{"IPv6 host", "/", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Uri", "/public", "X-Forwarded-Host", "[::1]:8443"}, 200, ""},
		{"both contracts", "/", []string{"User-Agent", uaChrome, "X-Original-URI", "/private/x", "X-Forwarded-Uri", "/public"}, 400, "both"},
		{"bad proto", "/", []string{"User-Agent", uaChrome, "X-Forwarded-Uri", "/", "X-Forwarded-Proto", "gopher"}, 400, "neither http nor https"},
		// A comma is part of the target, never a list separator.
		{"comma in the query", "/", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Uri", "/private/x?a=,/public", "X-Forwarded-Host", "example.com"}, 403, "line 8 for *"},
		{"comma in the path", "/", []string{"User-Agent", "FooBot/1.0", "X-Original-URI", "/private/x,/", "X-Forwarded-Host", "example.com"}, 403, "line 8 for *"},
		{"comma, allowed", "/", []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Uri", "/a,b?c=/private/", "X-Forwarded-Host", "example.com"}, 200, ""},
		{"target sent twice", "/", []string{"User-Agent", uaChrome, "X-Forwarded-Uri", "/private/x", "X-Forwarded-Uri", "/public"}, 400, "X-Forwarded-Uri twice"},
		{"host sent twice", "/", []string{"User-Agent", uaChrome, "X-Forwarded-Uri", "/", "X-Forwarded-Host", "a.test", "X-Forwarded-Host", "example.com"}, 400, "twice"},
		{"bad port", "/", []string{"User-Agent", uaChrome, "X-Forwarded-Uri", "/", "X-Forwarded-Port", "99999"}, 400, "not a port"},
	}
	for _, c := range cases {
		rec := ask(h, proxy, c.target, c.hdr...)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.body) {
			t.Errorf("%s: %d %q, want %d with %q", c.name, rec.Code, rec.Body.String(), c.status, c.body)
		}
		if got := rec.Header().Get("X-Robots-Guard-Status"); got != itoa(c.status) {
			t.Errorf("%s: X-Robots-Guard-Status %q, want %d", c.name, got, c.status)
		}
	}
}

// TestCheckRefusesNginx: nginx's auth_request takes 401 and 403 only (any
// other status is its own 500), so a question in its contract that the
// service cannot place gets 403 with X-Robots-Guard-Status 400 and the
// reason in X-Robots-Guard-Message, which the recipe answers.
func TestCheckRefusesNginx(t *testing.T) {
	h := mustCheck(t, checkEngine(t), CheckConfig{})
	rec := ask(h, "127.0.0.1:4000", "/", "User-Agent", uaChrome, "X-Original-URI", "*")
	if rec.Code != 403 || rec.Header().Get("X-Robots-Guard-Status") != "400" ||
		!strings.Contains(rec.Header().Get("X-Robots-Guard-Message"), "not in origin form") {
		t.Errorf("nginx, asterisk target: %d %v", rec.Code, rec.Header())
	}
}

func itoa(n int) string {
	return map[int]string{200: "200", 400: "400", 403: "403", 429: "429"}[n]
}

// TestCheckUntrusted: a question from an address the service does not
// trust is refused whatever it names, browser or bot.
func TestCheckUntrusted(t *testing.T) {
	h := mustCheck(t, checkEngine(t), CheckConfig{})
	for _, ua := range []string{uaChrome, "FooBot/1.0"} {
		rec := ask(h, "203.0.113.5:4000", "/", "User-Agent", ua, "X-Forwarded-Uri", "/public", "X-Forwarded-Host", "example.com")
		if rec.Code != 403 || !strings.Contains(rec.Body.String(), "not a proxy this service trusts") {
			t.Errorf("%s from an untrusted address: %d %q", ua, rec.Code, rec.Body.String())
		}
	}
	// WithTrustedProxy widens it.
	h = mustCheck(t, checkEngine(t), CheckConfig{}, WithTrustedProxy(func(r *http.Request) bool { return strings.HasPrefix(r.RemoteAddr, "203.0.113.") }))
	if rec := ask(h, "203.0.113.5:4000", "/", "User-Agent", uaChrome, "X-Forwarded-Uri", "/public"); rec.Code != 200 {
		t.Errorf("trusted proxy: %d %q", rec.Code, rec.Body.String())
	}
}

// TestCheckAnswerHeaders: the X-Robots-Guard-* headers a proxy copies,
// and the client address read from the proxy's X-Forwarded-For (the last
// value: the one the proxy wrote).
func TestCheckAnswerHeaders(t *testing.T) {
	h := mustCheck(t, checkEngine(t), CheckConfig{})
	rec := ask(h, "127.0.0.1:1", "/", "User-Agent", "FooBot/1.0", "X-Forwarded-Uri", "/private/a", "X-Forwarded-Host", "example.com")
	want := map[string]string{
		"X-Robots-Guard-Action":  "deny",
		"X-Robots-Guard-Reason":  "disallowed",
		"X-Robots-Guard-Group":   "*",
		"X-Robots-Guard-Rule":    "line 8: Disallow: /private/",
		"X-Robots-Guard-Message": "Disallowed by robots.txt line 8 for *",
		"Cache-Control":          "no-store",
	}
	for k, v := range want {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	rec = ask(h, "127.0.0.1:1", "/", "User-Agent", uaChrome, "X-Forwarded-Uri", "/private/a", "X-Forwarded-Host", "example.com")
	if rec.Header().Get("X-Robots-Guard-Action") != "allow" || rec.Header().Get("X-Robots-Guard-Reason") != "not_bot" || rec.Header().Get("X-Robots-Guard-Group") != "" {
		t.Errorf("browser: %v", rec.Header())
	}
	// Crawl-delay budgets follow the forwarded address, not the proxy's.
	bing := func(xff string) int {
		return ask(h, "127.0.0.1:1", "/", "User-Agent", uaBing, "X-Forwarded-Uri", "/a", "X-Forwarded-Host", "example.com", "X-Forwarded-For", xff).Code
	}
	for range 5 {
		bing("198.51.100.1, 192.0.2.1")
	}
	if got := bing("192.0.2.1"); got != 429 {
		t.Errorf("the same forwarded client after a burst: %d, want 429", got)
	}
	if got := bing("198.51.100.1, 192.0.2.2"); got != 200 {
		t.Errorf("another forwarded client (a client's own X-Forwarded-For value first): %d, want 200", got)
	}
}

// TestCheckNginxThrottle: nginx's auth_request takes 2xx, 401 and 403
// only, so a throttle in its contract is a 403 that says 429, with
// Retry-After; in the other contracts it is the 429 itself.
func TestCheckNginxThrottle(t *testing.T) {
	h := mustCheck(t, checkEngine(t), CheckConfig{})
	throttled := func(uri string, ip string) *httptest.ResponseRecorder {
		var rec *httptest.ResponseRecorder
		for range 10 {
			if rec = ask(h, "127.0.0.1:1", "/", "User-Agent", uaBing, uri, "/a", "X-Forwarded-Host", "example.com", "X-Forwarded-For", ip); rec.Header().Get("X-Robots-Guard-Status") == "429" {
				break
			}
		}
		return rec
	}
	rec := throttled("X-Original-URI", "192.0.2.30")
	if rec.Code != 403 || rec.Header().Get("X-Robots-Guard-Status") != "429" || rec.Header().Get("Retry-After") == "" ||
		rec.Header().Get("X-Robots-Guard-Action") != "throttle" {
		t.Errorf("nginx throttle: %d %v", rec.Code, rec.Header())
	}
	rec = throttled("X-Forwarded-Uri", "192.0.2.31")
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("traefik throttle: %d %v", rec.Code, rec.Header())
	}
}

// TestCheckBadSignature: unreadable signature headers of a request that
// sends Signature-Agent get 400; in nginx's contract, a 403 that says 400
// (the recipe answers the 400).
func TestCheckBadSignature(t *testing.T) {
	off := false
	e, err := guard.New(guard.Config{Verify: &identity.VerifyConfig{Builtin: &off, WebBotAuth: &identity.WebBotAuthSettings{},
		Operators: []identity.Operator{{Name: "acme", Tokens: []string{"AcmeBot"}}}}},
		guard.WithSource(sites.BytesSource([]byte(robotsTxt))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h := mustCheck(t, e, CheckConfig{})
	bad := []string{"User-Agent", "FooBot/1.0", "X-Forwarded-Host", "example.com", "Signature-Agent", `sig1="https://bot.example"`,
		"Signature-Input", `sig1=("@authority";tag="web-bot-auth"`, "Signature", "sig1=:AAAA:"}
	if rec := ask(h, "127.0.0.1:1", "/", append([]string{"X-Original-URI", "/public"}, bad...)...); rec.Code != 403 || rec.Header().Get("X-Robots-Guard-Status") != "400" ||
		rec.Header().Get("X-Robots-Guard-Reason") != "bad_signature" {
		t.Errorf("nginx: %d %v", rec.Code, rec.Header())
	}
	if rec := ask(h, "127.0.0.1:1", "/", append([]string{"X-Forwarded-Uri", "/public"}, bad...)...); rec.Code != 400 || rec.Header().Get("X-Robots-Guard-Status") != "400" {
		t.Errorf("traefik: %d %v", rec.Code, rec.Header())
	}
}

// TestCheckBrowserAllocs: a browser's question allocates nothing in the
// service (the answer's header map and the question are the caller's).
func TestCheckBrowserAllocs(t *testing.T) {
	h := mustCheck(t, checkEngine(t), CheckConfig{})
	r := question(uaChrome, "/private/a?b=1")
	w := &headerOnly{h: make(http.Header, 8)}
	h.ServeHTTP(w, r) // the site's first fetch
	allocs := testing.AllocsPerRun(200, func() {
		clear(w.h)
		h.ServeHTTP(w, r)
	})
	if allocs != 0 || w.status != 200 {
		t.Errorf("a browser's check: %v allocations, status %d", allocs, w.status)
	}

	// With per-client trap links (the default once traps are set), a
	// browser's subresources get no link and cost nothing; its page does.
	e, err := guard.New(guard.Config{Verify: &identity.VerifyConfig{Off: true}, Traps: traps.Config{Paths: []string{"/no-robots/"}}},
		guard.WithSource(sites.BytesSource([]byte(robotsTxt+"\nUser-agent: *\nDisallow: /no-robots/\n"))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h = mustCheck(t, e, CheckConfig{})
	r.Header.Set("Sec-Fetch-Dest", "image")
	h.ServeHTTP(w, r)
	allocs = testing.AllocsPerRun(200, func() {
		clear(w.h)
		h.ServeHTTP(w, r)
	})
	if allocs != 0 || w.h.Get("X-Robots-Guard-Trap-Link") != "" {
		t.Errorf("a browser's image with trap links: %v allocations, link %q", allocs, w.h.Get("X-Robots-Guard-Trap-Link"))
	}
	r.Header.Set("Sec-Fetch-Dest", "document")
	clear(w.h)
	h.ServeHTTP(w, r)
	if w.h.Get("X-Robots-Guard-Trap-Link") == "" {
		t.Errorf("a browser's page gets no trap link: %v", w.h)
	}
}

// question is a Traefik-style question from a loopback proxy about a GET
// of target on example.com by ua from 192.0.2.1.
func question(ua, target string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://check.internal/", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set("User-Agent", ua)
	browserHeaders(r.Header) // what a proxy that forwards every header passes on
	r.Header.Set("X-Forwarded-Uri", target)
	r.Header.Set("X-Forwarded-Host", "example.com")
	r.Header.Set("X-Forwarded-For", "192.0.2.1")
	return r
}

// headerOnly is a ResponseWriter that keeps one header map.
type headerOnly struct {
	h      http.Header
	status int
}

func (w *headerOnly) Header() http.Header         { return w.h }
func (w *headerOnly) WriteHeader(code int)        { w.status = code }
func (w *headerOnly) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkCheckBrowser and BenchmarkCheckBot: the service's own cost per
// question (docs/performance.md).
func BenchmarkCheckBrowser(b *testing.B) { benchCheck(b, uaChrome) }

// BenchmarkCheckBot is a bot on an allowed path without a Crawl-delay.
func BenchmarkCheckBot(b *testing.B) { benchCheck(b, "FooBot/1.0") }

func benchCheck(b *testing.B, ua string) {
	e, err := guard.New(guard.Config{}, guard.WithSource(sites.BytesSource([]byte(robotsTxt))))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	h := mustCheck(b, e, CheckConfig{})
	r := question(ua, "/public/page?b=1")
	w := &headerOnly{h: make(http.Header, 8)}
	h.ServeHTTP(w, r)
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// FuzzReadForwarded: whatever headers a question carries, reading it
// never panics, and a question it places names an origin-form target, a
// known scheme and a port in range.
func FuzzReadForwarded(f *testing.F) {
	f.Add("/a?b", "", "example.com", "https", "443", "/check/x")
	f.Add("", "/private/x", "", "http", "", "/")
	f.Add("http://x/", "*", "a,b", "HTTPS", "0", "/check")
	f.Add("/a", "/b", "x", "gopher", "99999", "")
	f.Add("/a", "", "example.com.", "http", "", "")
	f.Add("", "/a", "[::1]:80", "http", "80", "")
	f.Fuzz(func(t *testing.T, fwdURI, origURI, host, proto, port, path string) {
		r := httptest.NewRequest(http.MethodGet, "http://check/", nil)
		r.RequestURI = path
		for k, v := range map[string]string{"X-Forwarded-Uri": fwdURI, "X-Original-Uri": origURI,
			"X-Forwarded-Host": host, "X-Forwarded-Proto": proto, "X-Forwarded-Port": port} {
			if v != "" {
				r.Header[k] = []string{v}
			}
		}
		f, _, msg := readForwarded(r, "/check")
		if msg != "" {
			return
		}
		if !originForm(f.Target) || (f.Scheme != "http" && f.Scheme != "https") || f.Port < 0 || f.Port > 65535 {
			t.Errorf("placed %+v", f)
		}
		// A placed host is one name every server reads alike.
		if strings.ContainsAny(f.Host, ", \t") || strings.HasSuffix(f.Host, ".") || strings.Contains(f.Host, "..") || f.Host == "" {
			t.Errorf("placed the host %q", f.Host)
		}
	})
}

// TestPlainHost: the hosts the service places, and those it refuses as
// servers read them differently.
func TestPlainHost(t *testing.T) {
	for h, want := range map[string]bool{
		"example.com": true, "Example.COM": true, "example.com:8080": true, "a-b_c.example": true, "localhost": true,
		"127.0.0.1:80": true, "[::1]": true, "[::1]:8443": true, "[2001:db8::1]": true, "xn--bcher-kva.example": true,
		"": false, "example.com.": false, "example.com..": false, ".example.com": false, "a..b": false,
		"example.com,open.example.com": false, "example.com, a": false, "example.com ": false, "example.com:": false,
		"example.com:123456": false, "example.com:8a": false, "a@b": false, "[::1": false, "[]": false, "[::g]": false,
		"example.com%2e": false, "exa\x00mple": false, "ex\u00e4mple.com": false, ":80": false,
	} {
		if got := plainHost(h); got != want {
			t.Errorf("plainHost(%q) = %v, want %v", h, got, want)
		}
	}
}
