package caddymodule

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/robotsguard/robotsguard/internal/testorigin"
	"github.com/robotsguard/robotsguard/internal/testport"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int { return testport.Free(t) }

// TestErrorRoutesThroughCaddy pins the behaviour of Caddy that
// errorRouteTakes depends on, through a Caddy server run in the test
// (caddy.Load, with the admin endpoint off so that it can run beside the
// integration tests' Caddy): which handle_errors routes
// answer a stopped request (with the guard's answer headers either way),
// and that Caddy answers an error no route takes with the status alone.
func TestErrorRoutesThroughCaddy(t *testing.T) {
	robots := testorigin.WriteFile(t, "User-agent: GPTBot\nDisallow: /\n")
	const own = "Disallowed by robots.txt line 2 for GPTBot"
	guardBlock := "robots_guard {\n\t\trobots_txt " + robots + "\n\t\tverify {\n\t\t\tweb_bot_auth\n\t\t}\n\t}"
	cases := []struct {
		name  string
		site  string // the site block's body
		body  string // what the answer to GPTBot holds; "" for nothing
		exact bool   // the body is exactly body
	}{
		{"no handle_errors", guardBlock + "\n\trespond page", own, false},
		{"handle_errors 404", guardBlock + "\n\trespond page\n\thandle_errors 404 {\n\t\trespond \"error route {err.status_code}\"\n\t}", own, false},
		{"bare handle_errors", guardBlock + "\n\trespond page\n\thandle_errors {\n\t\trespond \"error route {err.status_code}\"\n\t}", "error route 403", true},
		{"handle_errors 403", guardBlock + "\n\trespond page\n\thandle_errors 403 {\n\t\trespond \"error route {err.status_code}\"\n\t}", "error route 403", true},
		{"handle_errors 4xx", guardBlock + "\n\trespond page\n\thandle_errors 4xx {\n\t\trespond \"error route {err.status_code}\"\n\t}", "error route 403", true},
		{"handle_errors 403 for another path", guardBlock + "\n\trespond page\n\thandle_errors 403 {\n\t\thandle /elsewhere/* {\n\t\t\trespond \"error route {err.status_code}\"\n\t\t}\n\t}", own, false},
		{"handle_errors 404 then bare", guardBlock + "\n\trespond page\n\thandle_errors 404 {\n\t\trespond \"not found\"\n\t}\n\thandle_errors {\n\t\trespond \"error route {err.status_code}\"\n\t}", "error route 403", true},
		// Caddy itself: an error no route answers gets the status alone.
		{"Caddy: error, no handle_errors", "error \"forbidden\" 403", "", true},
		{"Caddy: error beside handle_errors 404", "error \"forbidden\" 403\n\thandle_errors 404 {\n\t\trespond \"error route {err.status_code}\"\n\t}", "", true},
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "{\n\tadmin off\n\tpersist_config off\n\tstorage file_system %s\n}\n", filepath.ToSlash(t.TempDir()))
	ports := make([]int, len(cases))
	for i, c := range cases {
		ports[i] = freePort(t)
		fmt.Fprintf(&cfg, "http://127.0.0.1:%d {\n\t%s\n}\n", ports[i], c.site)
	}
	js, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cfg.String()), nil)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("adapt: %v %v\n%s", err, warnings, cfg.String())
	}
	if err := caddy.Load(js, true); err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(func() { caddy.Stop() })
	client := &http.Client{Timeout: 5 * time.Second}
	for i, c := range cases {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/x", ports[i]), nil)
		req.Header.Set("User-Agent", gptUA)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		if resp.StatusCode != 403 || (c.exact && body != c.body) || (!c.exact && !strings.Contains(body, c.body)) {
			t.Errorf("%s: %d %q, want 403 with %q", c.name, resp.StatusCode, body, c.body)
		}
		// The guard's answer headers, whoever writes the body: GPTBot's
		// operator signs (Web Bot Auth), so an unsigned claim is told
		// what to sign.
		if !strings.HasPrefix(c.name, "Caddy:") && (resp.Header.Get("Cache-Control") != "no-store" || !strings.Contains(resp.Header.Get("Accept-Signature"), `tag="web-bot-auth"`)) {
			t.Errorf("%s: answer headers %v", c.name, resp.Header)
		}
	}
}

// TestErrorRouteTakesOutsideCaddy: without error routes the guard answers
// itself; outside a Caddy request, Caddy decides.
func TestErrorRouteTakesOutsideCaddy(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	herr := caddyhttp.Error(403, nil)
	if errorRouteTakes(nil, r, herr) {
		t.Error("no server: taken")
	}
	if errorRouteTakes(&caddyhttp.Server{}, r, herr) {
		t.Error("no error routes: taken")
	}
	srv := &caddyhttp.Server{Errors: &caddyhttp.HTTPErrorConfig{Routes: caddyhttp.RouteList{{}}}}
	if !errorRouteTakes(srv, r, herr) {
		t.Error("error routes, no Caddy request: not left to Caddy")
	}
}
