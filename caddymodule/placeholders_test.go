package caddymodule

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/policy"
)

// placeholderValues reads every placeholder of phNames from repl.
func placeholderValues(repl *caddy.Replacer) map[string]string {
	m := map[string]string{}
	for _, n := range phNames {
		if v, ok := repl.Get(n); ok {
			m[n] = fmt.Sprintf("%T %v", v, v)
		}
	}
	return m
}

// TestPlaceholderProvider: the values a request's replacer gets from a
// cached provider are those that setting them one by one gives (types
// included: the rule is a string), for verdicts of every kind, with
// verification on and off; a hit is the same provider and allocates
// nothing.
func TestPlaceholderProvider(t *testing.T) {
	rule := &policy.Rule{Kind: policy.Disallow, Pattern: "/private/", Line: 12}
	verdicts := []guard.Verdict{
		{},             // a browser
		{DryRun: true}, // a browser, dry run
		{Group: "*", Bot: true},
		{Group: "GPTBot", Bot: true, Action: guard.Deny, Rule: rule},
		{Group: "GPTBot", Bot: true, Action: guard.Deny, Rule: rule, DryRun: true},
		{Group: "SlowBot", Bot: true, Action: guard.Throttle},
		{Group: "Googlebot", Bot: true, Verification: identity.Verified, Operator: "google"},
		{Group: "GPTBot", Bot: true, Action: guard.Deny, Verification: identity.Spoofed, Operator: "openai"},
	}
	for _, verify := range []bool{true, false} {
		s := &state{}
		for i, v := range verdicts {
			want := caddy.NewEmptyReplacer()
			s.setPlaceholders(want, &v, verify)
			p := s.ph.find(s, &v, verify)
			if p == nil {
				t.Fatalf("verify %v, verdict %d: no provider in an empty cache", verify, i)
			}
			got := caddy.NewEmptyReplacer()
			got.Map(p.get)
			w, g := placeholderValues(want), placeholderValues(got)
			if fmt.Sprint(w) != fmt.Sprint(g) {
				t.Errorf("verify %v, verdict %d: provider gives %v, set values %v", verify, i, g, w)
			}
			if !verify && len(g) != 3 {
				t.Errorf("verification off: %d placeholders provided (%v), want group, rule and action", len(g), g)
			}
			if q := s.ph.find(s, &v, verify); q != p {
				t.Errorf("verify %v, verdict %d: found again, another provider", verify, i)
			}
			if _, ok := p.value("http.robots_guard.nothing"); ok {
				t.Error("an unknown name has a value")
			}
			if _, ok := p.value("http.request.uri"); ok {
				t.Error("another module's name has a value")
			}
		}
		v := verdicts[3]
		if n := testing.AllocsPerRun(100, func() { s.ph.find(s, &v, verify) }); n != 0 {
			t.Errorf("a hit: %v allocs", n)
		}
	}
}

// TestPlaceholderCacheHoldsNothing: a provider in the cache keeps neither
// the robots.txt text its group name came from nor its rule alive, and a
// rule freed and replaced by another at the same address does not match.
func TestPlaceholderCacheHoldsNothing(t *testing.T) {
	s := &state{}
	text := new([1 << 16]byte)
	copy(text[100:], "HeldBot")
	freed := make(chan struct{})
	runtime.AddCleanup(text, func(ch chan struct{}) { close(ch) }, freed)
	rule := &policy.Rule{Kind: policy.Disallow, Pattern: "/x", Line: 3}
	ruleFreed := make(chan struct{})
	runtime.AddCleanup(rule, func(ch chan struct{}) { close(ch) }, ruleFreed)
	v := guard.Verdict{Group: unsafe.String(&text[100], 7), Rule: rule, Action: guard.Deny, Bot: true}
	p := s.ph.find(s, &v, true)
	if p == nil || p.groupName != "HeldBot" {
		t.Fatalf("provider %+v", p)
	}
	v, text, rule = guard.Verdict{}, nil, nil
	for _, ch := range []chan struct{}{freed, ruleFreed} {
		select {
		case <-ch:
		case <-gcUntil(ch):
			t.Fatal("a cached provider keeps its robots.txt text or rule alive")
		}
	}
	// The provider's rule is gone: a new rule that took its address (as
	// if the allocator reused it) does not match it.
	if p.ruleRef.Value() != nil {
		t.Fatal("weak rule still set")
	}
	r2 := &policy.Rule{Kind: policy.Disallow, Pattern: "/x", Line: 3}
	p.ruleAddr = uintptr(unsafe.Pointer(r2))
	if p.matches(&guard.Verdict{Group: "HeldBot", Rule: r2, Action: guard.Deny, Bot: true}) {
		t.Error("a freed rule's provider matches a rule at its address")
	}
}

// gcUntil runs the garbage collector until ch closes, for up to a second;
// the channel it returns closes when that time is up.
func gcUntil(ch chan struct{}) <-chan struct{} {
	late := make(chan struct{})
	go func() {
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
			runtime.GC()
			select {
			case <-ch:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		close(late)
	}()
	return late
}

// TestPlaceholdersTwoGuards: in a request that passes two robots_guard
// handlers, the placeholders hold the second one's values, whether the
// first handed its values as a provider or set them, and so on for a
// third.
func TestPlaceholdersTwoGuards(t *testing.T) {
	deny := provisioned(t, &RobotsGuard{Config: guard.Config{DryRun: true, RobotsTxt: guard.RobotsTxtConfig{Source: writeRobots(t, "User-agent: GPTBot\nDisallow: /\n")}}})
	allow := provisioned(t, &RobotsGuard{Config: guard.Config{RobotsTxt: guard.RobotsTxtConfig{Source: writeRobots(t, "User-agent: *\nAllow: /\n")}}})
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
		for round := range 3 { // later rounds find the providers cached
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

// TestPlaceholderCacheBounded: verdicts a client can make distinct at will
// (an agent-only signature names its operator per request) neither grow
// the cache, which is a fixed table, nor allocate per request beyond one
// slot taken now and then, and their values stay right when their slot
// holds another's.
func TestPlaceholderCacheBounded(t *testing.T) {
	s := &state{}
	const n = 4000
	vs := make([]guard.Verdict, n)
	for i := range vs {
		vs[i] = guard.Verdict{Group: "*", Bot: true, Verification: identity.Unverifiable, Operator: fmt.Sprintf("agent https://%d.example", i)}
	}
	for i := range vs[:n/2] { // fill the table
		s.ph.find(s, &vs[i], true)
	}
	i := n / 2
	allocs := testing.AllocsPerRun(n/2-1, func() {
		s.ph.find(s, &vs[i], true)
		i++
	})
	// A slot is taken at one miss in phSlotTurn: a handful of allocations
	// then (the values, the copied names, the boxed operator).
	if allocs > 0.5 {
		t.Errorf("%.2f allocations per new verdict, want at most one slot's in phSlotTurn misses", allocs)
	}
	for _, v := range []guard.Verdict{vs[0], vs[n-1], {}} {
		want, got := caddy.NewEmptyReplacer(), caddy.NewEmptyReplacer()
		s.setPlaceholders(want, &v, true)
		if p := s.ph.find(s, &v, true); p != nil {
			got.Map(p.get)
		} else {
			s.setPlaceholders(got, &v, true)
		}
		if w, g := placeholderValues(want), placeholderValues(got); fmt.Sprint(w) != fmt.Sprint(g) {
			t.Errorf("verdict %+v: %v, want %v", v, g, w)
		}
	}
}
