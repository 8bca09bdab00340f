package caddymodule

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestCheckCaddyfile: robots_guard_check reads robots_guard's block and
// path_prefix, into the JSON of both.
func TestCheckCaddyfile(t *testing.T) {
	in := "robots_guard_check {\n robots_txt {\n origin http://127.0.0.1:9000\n site_names example.com *.example.com\n }\n path_prefix /check\n request_ids\n dry_run\n}"
	c := new(RobotsGuardCheck)
	if err := c.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c)
	want := `{"robots_txt":{"site_names":["example.com","*.example.com"],"origin":"http://127.0.0.1:9000"},"dry_run":true,"check":{"path_prefix":"/check","request_ids":true}}`
	if string(b) != want {
		t.Errorf("JSON %s\nwant %s", b, want)
	}
	for _, bad := range []struct{ in, want string }{
		{"robots_guard_check {\n path_prefix\n}", "wrong argument count"},
		{"robots_guard_check /x", "takes no arguments"},
		{"robots_guard_check {\n robots_txt {\n origin http://a/robots.txt\n site_names a.test\n }\n}", "robots_txt: origin"},
		{"robots_guard_check {\n robots_txt {\n origin http://a\n }\n}", "needs site_names"},
		{"robots_guard_check {\n path_prefix check/\n}", "path_prefix: must start with /"},
		{"robots_guard_check {\n request_ids on\n}", "wrong argument count"},
	} {
		err := new(RobotsGuardCheck).UnmarshalCaddyfile(caddyfile.NewTestDispenser(bad.in))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.in, err, bad.want)
		}
	}
}

// TestCheckProvision: the service needs a robots.txt source of its own
// (it serves no site), a well-formed path_prefix, and answers through
// Caddy's trusted_proxies and client_ip.
func TestCheckProvision(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := new(RobotsGuardCheck).Provision(ctx); err == nil || !strings.Contains(err.Error(), "set origin") {
		t.Errorf("no source: %v", err)
	}
	c := new(RobotsGuardCheck)
	c.RobotsTxt.Source = "https://example.com/robots.txt"
	c.Check.PathPrefix = "check/"
	if err := c.Provision(ctx); err == nil || !strings.Contains(err.Error(), "path_prefix") {
		t.Errorf("bad path_prefix: %v", err)
	}
	c.Cleanup()

	c = new(RobotsGuardCheck)
	c.RobotsTxt.Origin, c.RobotsTxt.SiteNames = "http://127.0.0.1:1", []string{"example.com"}
	if err := c.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Cleanup()
	ask := func(trusted bool, clientIP, host string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "http://check/", nil)
		r.RemoteAddr = "127.0.0.1:5000"
		r.Header.Set("User-Agent", "FooBot/1.0")
		r.Header.Set("X-Forwarded-Uri", "/a")
		r.Header.Set("X-Forwarded-Host", host)
		vars := map[string]any{caddyhttp.TrustedProxyVarKey: trusted, caddyhttp.ClientIPVarKey: clientIP}
		r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
		w := httptest.NewRecorder()
		if err := c.ServeHTTP(w, r, nil); err != nil {
			t.Fatal(err)
		}
		return w
	}
	if w := ask(false, "192.0.2.1", "example.com"); w.Code != 403 || !strings.Contains(w.Body.String(), "not a proxy this service trusts") {
		t.Errorf("untrusted: %d %q", w.Code, w.Body.String())
	}
	if w := ask(true, "192.0.2.1", "evil.test"); w.Code != 403 || w.Header().Get("X-Robots-Guard-Reason") != "unknown_site" {
		t.Errorf("unknown site: %d %v", w.Code, w.Header())
	}
	// The origin does not answer: robots.txt unreachable, bots refused.
	if w := ask(true, "192.0.2.1", "example.com"); w.Code != 403 || w.Header().Get("X-Robots-Guard-Reason") != "unreachable" {
		t.Errorf("unreachable origin: %d %v", w.Code, w.Header())
	}

	// A question that names no client address is judged by the proxy's,
	// and a WARN says so; a forwarded address on a server without
	// trusted_proxies_strict gets robots_guard's warning.
	core, logs := observer.New(zap.WarnLevel)
	c.logger = zap.New(core)
	// A client on the proxy's own machine: its address is forwarded, and
	// is the proxy's; nothing to warn about.
	local := httptest.NewRequest(http.MethodGet, "http://check/", nil)
	local.RemoteAddr = "127.0.0.1:5000"
	local.Header.Set("User-Agent", "FooBot/1.0")
	local.Header.Set("X-Forwarded-Uri", "/a")
	local.Header.Set("X-Forwarded-For", "127.0.0.1")
	localVars := map[string]any{caddyhttp.TrustedProxyVarKey: true, caddyhttp.ClientIPVarKey: "127.0.0.1"}
	c.ServeHTTP(httptest.NewRecorder(), local.WithContext(context.WithValue(local.Context(), caddyhttp.VarsCtxKey, localVars)), nil)
	if n := logs.FilterMessageSnippet("carries no X-Forwarded-For").Len(); n != 0 {
		t.Errorf("a forwarded address that is the proxy's own: %d WARNs that it names none", n)
	}
	ask(true, "127.0.0.1", "example.com")
	r := httptest.NewRequest(http.MethodGet, "http://check/", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	r.Header.Set("User-Agent", "FooBot/1.0")
	r.Header.Set("X-Forwarded-Uri", "/a")
	vars := map[string]any{caddyhttp.TrustedProxyVarKey: true, caddyhttp.ClientIPVarKey: "192.0.2.9"}
	r = r.WithContext(context.WithValue(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars), caddyhttp.ServerCtxKey, &caddyhttp.Server{}))
	c.ServeHTTP(httptest.NewRecorder(), r, nil)
	for _, want := range []string{"carries no X-Forwarded-For or X-Real-IP", "without trusted_proxies_strict"} {
		if logs.FilterMessageSnippet(want).Len() != 1 {
			t.Errorf("no WARN %q: %v", want, logs.All())
		}
	}
}
