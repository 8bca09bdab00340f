package caddymodule

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testorigin"
	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/sites"
)

// replacerValues reads every placeholder of phNames from repl.
func replacerValues(repl *caddy.Replacer) map[string]string {
	m := map[string]string{}
	for _, n := range phNames {
		if v, ok := repl.Get(n); ok {
			m[n] = fmt.Sprintf("%T %v", v, v)
		}
	}
	return m
}

// TestPlaceholderProvider: the values a request's replacer gets from a
// fixed provider are those that setting them one by one gives (types
// included: the rule is a string), for every verdict without a group, rule
// or operator, with verification on and off; any other verdict has no
// fixed provider; finding one allocates nothing.
func TestPlaceholderProvider(t *testing.T) {
	rule := &policy.Rule{Kind: policy.Disallow, Pattern: "/private/", Line: 12}
	fixed := []guard.Verdict{
		{},             // a browser
		{DryRun: true}, // a browser, dry run
		{Action: guard.Deny, Reason: guard.ReasonBadTarget, Bot: true},
		{Action: guard.Throttle, DryRun: true, Verification: identity.Unverifiable},
	}
	others := []guard.Verdict{
		{Group: "*", Bot: true},
		{Group: "GPTBot", Bot: true, Action: guard.Deny, Rule: rule},
		{Rule: rule, Action: guard.Deny},
		{Group: "Googlebot", Bot: true, Verification: identity.Verified, Operator: "google"},
		{Bot: true, Verification: identity.Spoofed, Operator: "openai"},
	}
	for _, verify := range []bool{true, false} {
		for i, v := range fixed {
			want := caddy.NewEmptyReplacer()
			setPlaceholders(want, &v, verify)
			p := fixedProvider(&v, verify)
			if p == nil {
				t.Fatalf("verify %v, verdict %d: no fixed provider", verify, i)
			}
			got := caddy.NewEmptyReplacer()
			got.Map(p)
			w, g := replacerValues(want), replacerValues(got)
			if fmt.Sprint(w) != fmt.Sprint(g) {
				t.Errorf("verify %v, verdict %d: provider gives %v, set values %v", verify, i, g, w)
			}
			if n := len(g); !verify && n != 3 || verify && n != 5 {
				t.Errorf("verify %v: %d placeholders provided (%v)", verify, n, g)
			}
			if _, ok := p("http.robots_guard.nothing"); ok {
				t.Error("an unknown name has a value")
			}
			if _, ok := p("http.request.uri"); ok {
				t.Error("another module's name has a value")
			}
		}
		for i, v := range others {
			if fixedProvider(&v, verify) != nil {
				t.Errorf("verify %v, verdict %d: a fixed provider for %+v", verify, i, v)
			}
		}
		v := fixed[0]
		if n := testing.AllocsPerRun(100, func() { fixedProvider(&v, verify) }); n != 0 {
			t.Errorf("finding a fixed provider: %v allocs", n)
		}
	}
	want := caddy.NewEmptyReplacer()
	setPlaceholders(want, &others[1], true)
	if got := replacerValues(want)[phRule]; got != "string 12: Disallow: /private/" {
		t.Errorf("rule placeholder %q", got)
	}
}

// TestPlaceholdersTwoGuards: in a request that passes two robots_guard
// handlers, the placeholders hold the second one's values, whether the
// first handed its values as a provider or set them, and so on for a
// third.
func TestPlaceholdersTwoGuards(t *testing.T) {
	deny := provisioned(t, &RobotsGuard{Config: guard.Config{DryRun: true, RobotsTxt: sites.Config{Source: testorigin.WriteFile(t, "User-agent: GPTBot\nDisallow: /\n")}}})
	allow := provisioned(t, &RobotsGuard{Config: guard.Config{RobotsTxt: sites.Config{Source: testorigin.WriteFile(t, "User-agent: *\nAllow: /\n")}}})
	type want struct{ group, action string }
	for _, tc := range []struct {
		name   string
		guards []*RobotsGuard
		want   want
	}{
		{"dry-run deny, then allow", []*RobotsGuard{deny, allow}, want{"*", "allow"}},
		{"allow, then dry-run deny", []*RobotsGuard{allow, deny}, want{"GPTBot", "dry_run_deny"}},
		{"allow, dry-run deny, allow", []*RobotsGuard{allow, deny, allow}, want{"*", "allow"}},
		{"one guard", []*RobotsGuard{deny}, want{"GPTBot", "dry_run_deny"}},
	} {
		for round := range 2 {
			r := httptest.NewRequest(http.MethodGet, "http://example.com/page", nil)
			r.Header.Set("User-Agent", gptUA)
			repl := caddy.NewReplacer()
			w := httptest.NewRecorder()
			r = caddyhttp.PrepareRequest(r, repl, w, nil)
			var h caddyhttp.Handler = caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
			for i := len(tc.guards) - 1; i >= 0; i-- {
				g, next := tc.guards[i], h
				h = caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return g.ServeHTTP(w, r, next) })
			}
			if err := h.ServeHTTP(w, r); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			got := want{repl.ReplaceKnown("{http.robots_guard.group}", ""), repl.ReplaceKnown("{http.robots_guard.action}", "")}
			if got != tc.want {
				t.Errorf("%s, round %d: group %q action %q, want %q %q", tc.name, round, got.group, got.action, tc.want.group, tc.want.action)
			}
		}
	}
}
