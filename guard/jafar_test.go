package guard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/sites"
)

// jafarFeed is a JAFAR document of one operator's crawlers: a /16 shared
// by its training and search crawlers, a /24 inside it for search only,
// one for training only, and a /24 that names no service (any of its
// crawlers).
const jafarFeed = `{
  "creationTime": "2026-11-27T00:00:00Z",
  "synctoken": "7",
  "notes": "test feed",
  "prefixes": [
    {"ipv4Prefix": "11.1.0.0/16", "services": ["GPTBot", "OAI-SearchBot"]},
    {"ipv4Prefix": "11.1.2.0/24", "services": ["OAI-SearchBot"]},
    {"ipv4Prefix": "11.1.3.0/24"},
    {"ipv4Prefix": "11.1.4.0/24", "services": ["GPTBot"]},
    {"ipv6Prefix": "2001:db8:1::/48", "services": ["ChatGPT-User"]}
  ]
}`

// jafarServer serves body as a JAFAR feed of the given version, with an
// ETag; it counts the requests and the conditional ones.
func jafarServer(t *testing.T, body, version string) (srv *httptest.Server, gets, conditional *atomic.Int32) {
	gets, conditional = new(atomic.Int32), new(atomic.Int32)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		if !strings.Contains(r.Header.Get("Accept"), "application/jafar+json") {
			t.Errorf("Accept %q does not ask for JAFAR", r.Header.Get("Accept"))
		}
		w.Header().Set("ETag", `"v7"`)
		w.Header().Set("Cache-Control", "max-age=7200")
		if r.Header.Get("If-None-Match") == `"v7"` {
			conditional.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/jafar+json; version="+version)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, gets, conditional
}

// jafarEngine is an Engine whose only operator, openai, has its addresses
// in the feed at url, and whose site allows search and refuses training.
func jafarEngine(t *testing.T, url string) *Engine {
	off := false
	cfg := Config{Verify: &identity.VerifyConfig{Builtin: &off, FetchFeeds: identity.FeedsAtStart,
		Operators: []identity.Operator{{Name: "openai", Tokens: []string{"GPTBot", "OAI-SearchBot", "ChatGPT-User"}, IPRanges: []string{url}}}}}
	e := mustNew(t, cfg, WithSource(sites.BytesSource([]byte("User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n"))))
	t.Cleanup(func() { e.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for !e.Verifier().Feeds()[0].Loaded {
		if time.Now().After(deadline) {
			t.Fatalf("feed %s did not load: %+v", url, e.Verifier().Feeds()[0])
		}
		time.Sleep(2 * time.Millisecond)
	}
	return e
}

// TestJAFARFeed: a JAFAR feed served by a local server drives
// verification (an address verifies only the crawlers its most specific
// entry lists) and so purposes (a search crawler's header from a training
// crawler's addresses is spoofed, not read as search; the training
// crawler from there is judged for training); it is polled conditionally,
// and a major version this reader does not know is not read.
func TestJAFARFeed(t *testing.T) {
	srv, gets, conditional := jafarServer(t, jafarFeed, "1.0")
	e := jafarEngine(t, srv.URL)
	const (
		gpt    = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
		search = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot)"
		user   = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot"
	)
	for _, tc := range []struct {
		name, ua, ip string
		verdict      identity.Verdict
		action       Action
		reason       Reason
		crawler      string
	}{
		{"search crawler in its own /24", search, "11.1.2.9", identity.Verified, Allow, ReasonAllowed, "OAI-SearchBot"},
		{"training crawler in the search /24", gpt, "11.1.2.9", identity.Spoofed, Deny, ReasonSpoofed, ""},
		{"training crawler in the shared /16", gpt, "11.1.9.9", identity.Verified, Deny, ReasonContentSignal, "GPTBot"},
		{"search crawler in the shared /16", search, "11.1.9.9", identity.Verified, Allow, ReasonAllowed, "OAI-SearchBot"},
		{"search crawler in the training /24", search, "11.1.4.4", identity.Spoofed, Deny, ReasonSpoofed, ""},
		{"training crawler in the training /24", gpt, "11.1.4.4", identity.Verified, Deny, ReasonContentSignal, "GPTBot"},
		{"user fetcher in the shared /16", user, "11.1.9.9", identity.Spoofed, Deny, ReasonSpoofed, ""},
		{"any crawler where no service is listed", gpt, "11.1.3.3", identity.Verified, Deny, ReasonContentSignal, "GPTBot"},
		{"any crawler where no service is listed (2)", search, "11.1.3.3", identity.Verified, Allow, ReasonAllowed, "OAI-SearchBot"},
		// A verified user-triggered fetch answers to its own group only.
		{"user fetcher in its IPv6 /48", user, "2001:db8:1::5", identity.Verified, Allow, ReasonPersonAgent, ""},
		{"outside the feed", search, "11.2.0.1", identity.Spoofed, Deny, ReasonSpoofed, ""},
	} {
		v := decideAt(e, tc.ua, "/page", tc.ip)
		crawler := ""
		if v.Crawler != nil {
			crawler = v.Crawler.Token
		}
		if v.Verification != tc.verdict || v.Action != tc.action || v.Reason != tc.reason || tc.crawler != "" && crawler != tc.crawler {
			t.Errorf("%s: %v %v %v crawler %q, want %v %v %v %q", tc.name, v.Verification, v.Action, v.Reason, crawler, tc.verdict, tc.action, tc.reason, tc.crawler)
		}
	}
	x, err := e.Explain(context.Background(), Request{Host: "example.com", Target: "/page", UserAgent: gpt, ClientIP: "11.1.2.9"})
	if err != nil || x.Verification == nil || !strings.Contains(strings.Join(x.Verification.Steps, "\n"), "lists for OAI-SearchBot only; the header names none of them: spoofed") {
		t.Errorf("explain: %+v %v", x.Verification, err)
	}
	// Polled again: a conditional request, answered 304, keeps the copy.
	if err := e.Verifier().RefreshFeeds(context.Background()); err != nil {
		t.Fatal(err)
	}
	if gets.Load() != 2 || conditional.Load() != 1 {
		t.Errorf("%d fetches, %d conditional; want 2 and 1", gets.Load(), conditional.Load())
	}
	if v := decideAt(e, search, "/page", "11.1.2.9"); v.Verification != identity.Verified {
		t.Errorf("after a 304: %v", v.Verification)
	}
	if f := e.Verifier().Feeds()[0]; !f.Loaded || f.Prefixes != 5 || f.WithServices != 4 || f.SyncToken != "7" || f.CreationTime != "2026-11-27T00:00:00Z" {
		t.Errorf("feed status %+v", f)
	}

	// Version 2.0 of the format: not read; claims stay unverifiable (no
	// copy), and the feed's status says why.
	newer, _, _ := jafarServer(t, jafarFeed, "2.0")
	off := false
	e2 := mustNew(t, Config{Verify: &identity.VerifyConfig{Builtin: &off, FetchFeeds: identity.FeedsAtStart,
		Operators: []identity.Operator{{Name: "openai", Tokens: []string{"GPTBot"}, IPRanges: []string{newer.URL}}}}},
		WithSource(sites.BytesSource([]byte("User-agent: *\nAllow: /\n"))))
	t.Cleanup(func() { e2.Close() })
	if err := e2.Verifier().RefreshFeeds(context.Background()); err == nil || !strings.Contains(err.Error(), "version 2.0") {
		t.Fatalf("a feed of version 2.0: %v", err)
	}
	if f := e2.Verifier().Feeds()[0]; f.Loaded || !strings.Contains(f.LastError, "this reader knows 1.x") {
		t.Errorf("feed status %+v", f)
	}
	if v := decideAt(e2, gpt, "/page", "11.1.9.9"); v.Verification != identity.Unverifiable {
		t.Errorf("with the feed unread: %v", v.Verification)
	}
	// A newer minor version is read.
	minor, _, _ := jafarServer(t, jafarFeed, "1.7")
	if v := decideAt(jafarEngine(t, minor.URL), search, "/page", "11.1.2.9"); v.Verification != identity.Verified {
		t.Errorf("version 1.7: %v", v.Verification)
	}
}
