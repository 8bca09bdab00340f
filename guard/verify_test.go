package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/internal/testdns"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
)

const verifyRobots = `User-agent: Googlebot
Disallow: /nogoogle/
Crawl-delay: 2

User-agent: AcmeBot
Disallow: /noacme/

User-agent: *
Disallow: /private/
`

// Addresses of the tests: the feed holds 66.249.64.0/27 and
// 2001:4860:4801:10::/64.
const (
	googleIP      = "66.249.64.5:4000"
	googleIP2     = "66.249.64.6:4000"
	spoofIP       = "11.0.113.9:4000"
	uaGoogleImage = "Googlebot-Image/1.0"
)

// verifyConfig writes a feed file and returns a Config that verifies
// Googlebot against it (and AcmeBot by reverse DNS against resolver, when
// given), without the built-in registry (tests touch no network).
func verifyConfig(t testing.TB, onSpoofed, resolver string) Config {
	t.Helper()
	feed := filepath.Join(t.TempDir(), "google.json")
	body := `{"creationTime":"2026-11-01T00:00:00","prefixes":[{"ipv4Prefix":"66.249.64.0/27"},{"ipv6Prefix":"2001:4860:4801:10::/64"}]}`
	if err := os.WriteFile(feed, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	off := false
	ops := []identity.Operator{{Name: "google", Tokens: []string{"Googlebot", "Googlebot-Image"}, IPRanges: []string{feed}}}
	if resolver != "" {
		ops = append(ops, identity.Operator{Name: "acme", Tokens: []string{"AcmeBot"}, RDNS: []string{"crawl.acme.example"}})
	}
	return Config{Verify: &identity.VerifyConfig{OnSpoofed: onSpoofed, Builtin: &off, Operators: ops, Resolver: resolver, FetchFeeds: identity.FeedsAtStart}}
}

// newVerifying builds an Engine with verification and waits for its feeds.
func newVerifying(t testing.TB, cfg Config, opts ...Option) *Engine {
	t.Helper()
	e := mustNew(t, cfg, append([]Option{WithSource(sites.BytesSource([]byte(verifyRobots)))}, opts...)...)
	t.Cleanup(func() { e.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for _, f := range e.Verifier().Feeds() {
		for !f.Loaded {
			if time.Now().After(deadline) {
				t.Fatalf("feed %s did not load", f.Source)
			}
			time.Sleep(2 * time.Millisecond)
			f = e.Verifier().Feeds()[0]
		}
	}
	return e
}

func decideAt(e *Engine, ua, target, ip string) Verdict {
	return e.Decide(context.Background(), Request{Host: "example.com", Target: target, UserAgent: ua, ClientIP: ip})
}

func TestVerifyDecisions(t *testing.T) {
	for _, tc := range []struct {
		name, onSpoofed, ua, target, ip string
		action                          Action
		reason                          Reason
		group                           string
		verdict                         identity.Verdict
	}{
		{"verified gets its group", "", uaGoogle, "/private/x", googleIP, Allow, ReasonAllowed, "Googlebot", identity.Verified},
		{"verified, its own Disallow", "", uaGoogle, "/nogoogle/x", googleIP, Deny, ReasonDisallowed, "Googlebot", identity.Verified},
		{"verified over IPv6", "", uaGoogle, "/private/x", "[2001:4860:4801:10::7]:4000", Allow, ReasonAllowed, "Googlebot", identity.Verified},
		{"hyphen fallback claims too", "", "Googlebot-News/1.0", "/private/x", spoofIP, Deny, ReasonSpoofed, "Googlebot", identity.Spoofed},
		{"spoofed: deny", "", uaGoogle, "/private/x", spoofIP, Deny, ReasonSpoofed, "Googlebot", identity.Spoofed},
		{"spoofed: deny on a path * allows", "deny", uaGoogle, "/public", spoofIP, Deny, ReasonSpoofed, "Googlebot", identity.Spoofed},
		{"spoofed: star", "star", uaGoogle, "/private/x", spoofIP, Deny, ReasonDisallowed, "*", identity.Spoofed},
		{"spoofed: star keeps its own group's Disallow", "star", uaGoogle, "/nogoogle/x", spoofIP, Deny, ReasonDisallowed, "Googlebot", identity.Spoofed},
		{"spoofed: star allows what both allow", "star", uaGoogle, "/public", spoofIP, Allow, ReasonAllowed, "Googlebot", identity.Spoofed},
		{"no address: unverifiable, * applies too", "", uaGoogle, "/private/x", "", Deny, ReasonDisallowed, "*", identity.Unverifiable},
		{"no address: unverifiable, its own group applies too", "", uaGoogle, "/nogoogle/x", "", Deny, ReasonDisallowed, "Googlebot", identity.Unverifiable},
		{"no address: unverifiable, allowed where both allow", "", uaGoogle, "/public", "", Allow, ReasonAllowed, "Googlebot", identity.Unverifiable},
		{"a loopback address: unverifiable, * applies too", "", uaGoogle, "/private/x", "127.0.0.1:9", Deny, ReasonDisallowed, "*", identity.Unverifiable},
		{"no claim", "", uaGPTBot, "/private/x", spoofIP, Deny, ReasonDisallowed, "*", identity.None},
		{"browser", "", uaChrome, "/private/x", spoofIP, Allow, ReasonNotBot, "", identity.None},
		{"robots.txt is always served", "", uaGoogle, "/robots.txt", spoofIP, Allow, ReasonRobotsTxt, "", identity.None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newVerifying(t, verifyConfig(t, tc.onSpoofed, ""))
			v := decideAt(e, tc.ua, tc.target, tc.ip)
			if v.Action != tc.action || v.Reason != tc.reason || v.Group != tc.group || v.Verification != tc.verdict {
				t.Fatalf("got %v/%v group %q verification %v, want %v/%v %q %v", v.Action, v.Reason, v.Group, v.Verification, tc.action, tc.reason, tc.group, tc.verdict)
			}
			if tc.verdict == identity.Verified && (v.Operator != "google" || v.Method != identity.MethodIPRange) {
				t.Fatalf("operator %q method %v", v.Operator, v.Method)
			}
		})
	}
}

// The 403 a spoofer gets says why.
func TestVerifySpoofedAnswer(t *testing.T) {
	e := newVerifying(t, verifyConfig(t, "", ""))
	h := serve(e, site(verifyRobots))
	rec := doIP(h, uaGoogle, "/", spoofIP)
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), "names a crawler of google, but this request does not come from an address that google publishes") {
		t.Fatalf("%d %q", rec.Code, rec.Body)
	}
	if rec := doIP(h, uaGoogle, "/", googleIP); rec.Code != 200 {
		t.Fatalf("verified: %d", rec.Code)
	}
}

// With crawl_delay_key group, a verified crawler spread over several
// addresses shares one budget, and spoofers cannot spend it: not a single
// 429 for the real crawler however hard they try.
func TestVerifyGroupBudget(t *testing.T) {
	for _, onSpoofed := range []string{identity.SpoofedDeny, identity.SpoofedStar} {
		t.Run(onSpoofed, func(t *testing.T) {
			clk := testclock.New()
			cfg := verifyConfig(t, onSpoofed, "")
			cfg.CrawlDelay.Key = limit.KeyGroup
			e := newVerifying(t, cfg, WithClock(clk.Now))
			for i := range 50 {
				// Ten spoofers, from ten addresses, between each of the
				// real crawler's requests.
				for j := range 10 {
					v := decideAt(e, uaGoogle, "/page", fmt.Sprintf("11.0.113.%d:1", j))
					if v.Verification != identity.Spoofed || onSpoofed == identity.SpoofedDeny && v.Action != Deny {
						t.Fatalf("a spoofer: %+v", v)
					}
				}
				ip := googleIP
				if i%2 == 1 {
					ip = googleIP2
				}
				if v := decideAt(e, uaGoogle, "/page", ip); v.Action != Allow || v.Verification != identity.Verified {
					t.Fatalf("request %d of the verified crawler: %v %v", i, v.Action, v.Reason)
				}
				clk.Add(2 * time.Second)
			}
			// One budget for the operator: once the burst is spent, from
			// either address, the other address is throttled too.
			for i := range burst {
				decideAt(e, uaGoogle, "/page", []string{googleIP, googleIP2}[i%2])
			}
			if v := decideAt(e, uaGoogle, "/page", googleIP2); v.Action != Throttle {
				t.Fatalf("a verified crawler's second address: %v, want throttle (one budget)", v.Action)
			}
		})
	}
}

// Unverifiable claims (the feed has not loaded) are judged by their group
// and "*" together, with per-address budgets even with crawl_delay_key
// group.
func TestVerifyUnverifiable(t *testing.T) {
	clk := testclock.New()
	off := false
	cfg := Config{Verify: &identity.VerifyConfig{Builtin: &off, Operators: []identity.Operator{
		{Name: "google", Tokens: []string{"Googlebot"}, IPRanges: []string{filepath.Join(t.TempDir(), "missing.json")}},
	}}, CrawlDelay: limit.CrawlDelayConfig{Key: limit.KeyGroup},
	}
	core, logs := observer.New(zap.WarnLevel)
	e := mustNew(t, cfg, WithClock(clk.Now), WithSource(sites.BytesSource([]byte(verifyRobots))), WithLogger(zap.New(core)))
	defer e.Close()
	for _, ip := range []string{googleIP, spoofIP} {
		for path, want := range map[string]Action{"/private/x": Deny, "/nogoogle/x": Deny, "/public": Allow} {
			v := decideAt(e, uaGoogle, path, ip)
			if v.Action != want || v.Verification != identity.Unverifiable {
				t.Fatalf("%s %s: %v %q %v, want %v", ip, path, v.Action, v.Group, v.Verification, want)
			}
		}
		// Per address: the other address was not throttled.
		for range burst - 1 {
			decideAt(e, uaGoogle, "/public", ip)
		}
		if v := decideAt(e, uaGoogle, "/public", ip); v.Action != Throttle || v.CrawlDelay != 2*time.Second {
			t.Fatalf("%s: a request after the burst: %v %v", ip, v.Action, v.CrawlDelay)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for logs.FilterMessage("robots_guard: verify: feed not updated").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a missing feed must be logged")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Reverse DNS through the middleware: a PTR in the attacker's zone earns
// nothing.
func TestVerifyRDNS(t *testing.T) {
	dns := testdns.Start(t)
	dns.PTR("11.51.100.7", "bot-7.crawl.acme.example")
	dns.Host("bot-7.crawl.acme.example", "11.51.100.7")
	dns.PTR("11.0.113.9", "crawl.acme.example.evil.example")
	dns.Host("crawl.acme.example.evil.example", "11.0.113.9")
	obs := &countObserver{m: map[string]int{}}
	e := newVerifying(t, verifyConfig(t, "", dns.Addr), WithObserver(obs))
	if v := decideAt(e, "AcmeBot/3.1", "/private/x", "11.51.100.7:1"); v.Action != Allow || v.Method != identity.MethodRDNS {
		t.Fatalf("%+v", v)
	}
	if v := decideAt(e, "AcmeBot/3.1", "/x", spoofIP); v.Reason != ReasonSpoofed {
		t.Fatalf("%+v", v)
	}
	if obs.get("verification/verified") != 1 || obs.get("verification/spoofed") != 1 {
		t.Fatalf("observer %v", obs.m)
	}
	x, err := e.Explain(context.Background(), Request{Host: "example.com", Target: "/x", UserAgent: "AcmeBot", ClientIP: "11.0.113.9"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(x.Verification)
	if x.Verification == nil || x.Verification.Verdict != "spoofed" || !strings.Contains(string(b), "crawl.acme.example.evil.example is not under crawl.acme.example") {
		t.Fatalf("explain %s", b)
	}
	x, _ = e.Explain(context.Background(), Request{Host: "example.com", Target: "/x", UserAgent: uaGoogle, ClientIP: googleIP})
	if b, _ := json.Marshal(x.Verification); x.Verification.Verdict != "verified" || !strings.Contains(string(b), "66.249.64.0/27 of the feed") {
		t.Fatalf("explain %s", b)
	}
}

// A denial line says what verification found.
func TestVerifyLogLine(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	e := newVerifying(t, verifyConfig(t, "", ""), WithLogger(zap.New(core)))
	decideAt(e, uaGoogle, "/", spoofIP)
	l := logs.FilterMessage("robots_guard: denied").All()
	if len(l) != 1 || l[0].ContextMap()["verification"] != "spoofed" || l[0].ContextMap()["reason"] != "spoofed" || l[0].ContextMap()["operator"] != "google" {
		t.Fatalf("%v", logs.All())
	}
}

func TestVerifyConfigErrors(t *testing.T) {
	off := false
	for _, tc := range []struct {
		v    identity.VerifyConfig
		want string
	}{
		{identity.VerifyConfig{OnSpoofed: "block"}, `robots_guard: verify: on_spoofed: must be "deny" or "star", got "block"`},
		{identity.VerifyConfig{OnDNSError: "deny"}, `robots_guard: verify: on_dns_error: must be "star" or "header", got "deny"`},
		{identity.VerifyConfig{Refresh: duration.Duration(time.Minute)}, "robots_guard: verify: refresh: must be at least 1h"},
		{identity.VerifyConfig{DNSTimeout: duration.Duration(time.Hour)}, "robots_guard: verify: dns_timeout: must be between 0 and 30s"},
		{identity.VerifyConfig{Resolver: "127.0.0.1"}, "robots_guard: verify: resolver:"},
		{identity.VerifyConfig{DNSCacheSize: -1}, "robots_guard: verify: dns_cache_size: must be positive"},
		{identity.VerifyConfig{Builtin: &off}, "robots_guard: verify: operators: the registry is empty"},
		{identity.VerifyConfig{Operators: []identity.Operator{{Name: "evil", Tokens: []string{"googlebot"}}}}, `robots_guard: verify: operator "evil": tokens: "googlebot" is also a token of "google"`},
		{identity.VerifyConfig{Operators: []identity.Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, RDNS: []string{"x"}}}}, `operator "acme": rdns`},
	} {
		_, err := New(Config{Verify: &tc.v})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.v, err, tc.want)
		}
	}
}

// noDelayRobots is verifyRobots without the Crawl-delay, for benchmarks
// of allowed requests.
var noDelayRobots = strings.Replace(verifyRobots, "Crawl-delay: 2\n", "", 1)

// BenchmarkVerifiedBot is an allowed request of a verified crawler (warm
// caches) through Handler; compare BenchmarkBotAllowed (no verification).
func BenchmarkVerifiedBot(b *testing.B) {
	e := newVerifying(b, verifyConfig(b, "", ""), WithSource(sites.BytesSource([]byte(noDelayRobots))))
	r := benchRequest(uaGoogle, "/public/page?id=42")
	r.RemoteAddr = googleIP
	runBench(b, serve(e, okHandler), r, 200)
}

// BenchmarkSpoofedBot is a spoofer's request, denied.
func BenchmarkSpoofedBot(b *testing.B) {
	e := newVerifying(b, verifyConfig(b, "", ""))
	r := benchRequest(uaGoogle, "/public/page?id=42")
	r.RemoteAddr = spoofIP
	runBench(b, serve(e, okHandler), r, http.StatusForbidden)
}

// BenchmarkUnverifiedBotAllowed is BenchmarkBotAllowed's request with the
// same robots.txt and Googlebot's header, without verification: the
// baseline of BenchmarkVerifiedBot.
func BenchmarkUnverifiedBotAllowed(b *testing.B) {
	e := mustNew(b, Config{Verify: &identity.VerifyConfig{Off: true}}, WithSource(sites.BytesSource([]byte(noDelayRobots))))
	r := benchRequest(uaGoogle, "/public/page?id=42")
	r.RemoteAddr = googleIP
	runBench(b, serve(e, okHandler), r, 200)
}

// A reverse-DNS check that fails earns nothing by default: the request is
// judged by "*" (not refused for it); on_dns_error header keeps the
// header's group.
func TestVerifyDNSError(t *testing.T) {
	dns := testdns.Start(t)
	dns.SetDelay(time.Second) // never in time
	for _, tc := range []struct {
		mode   string
		action Action
		group  string
	}{
		{"", Deny, "*"},
		{identity.DNSErrorStar, Deny, "*"},
		{identity.DNSErrorHeader, Allow, "AcmeBot"},
	} {
		cfg := verifyConfig(t, "", dns.Addr)
		cfg.Verify.OnDNSError = tc.mode
		cfg.Verify.DNSTimeout = duration.Duration(100 * time.Millisecond)
		e := newVerifying(t, cfg)
		v := decideAt(e, "AcmeBot/3.1", "/private/x", "11.51.100.8:1")
		if v.Action != tc.action || v.Group != tc.group || v.Verification != identity.Unverifiable {
			t.Errorf("on_dns_error %q: %v %q %v, want %v %q unverifiable", tc.mode, v.Action, v.Group, v.Verification, tc.action, tc.group)
		}
	}
}

// noNetwork is an http.RoundTripper for a machine without network: every
// request fails.
type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("dial tcp: connect: network is unreachable")
}

// TestDefaultVerification: with no verify setting, verification is on with
// the built-in operators. A header earns no more than "*" unless its
// address proves it, and escapes none of its own group's rules; a machine
// with no network changes nothing of that.
func TestDefaultVerification(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nAllow: /\n\nUser-agent: GPTBot\nDisallow: /gpt/\n"
	check := func(t *testing.T, h http.Handler, ip string) {
		t.Helper()
		for _, c := range []struct {
			ua, path string
			code     int
			body     string
		}{
			{uaGoogle, "/private/x", 403, "Disallowed by robots.txt line 2 for *"},
			{uaGoogle, "/open", 200, "ok"},
			{uaGPTBot, "/gpt/x", 403, "line 8 for GPTBot"},
			{uaGPTBot, "/private/x", 403, "line 2 for *"},
			{uaGPTBot, "/open", 200, "ok"},
			{uaChrome, "/private/x", 200, "ok"},
		} {
			if rec := doIP(h, c.ua, c.path, ip); rec.Code != c.code || !strings.Contains(rec.Body.String(), c.body) {
				t.Errorf("%s %s from %s: %d %q, want %d with %q", c.ua, c.path, ip, rec.Code, rec.Body, c.code, c.body)
			}
		}
	}

	t.Run("zero config", func(t *testing.T) {
		core, logs := observer.New(zap.WarnLevel)
		e := mustNew(t, Config{}, WithLogger(zap.New(core)))
		defer e.Close()
		if e.Verifier() == nil {
			t.Fatal("verification is off by default")
		}
		check(t, serve(e, site(robots)), "192.0.2.1:1234")
		check(t, serve(e, site(robots)), "127.0.0.1:1234")
		// Claims from addresses that are not globally reachable look
		// nothing up, so no feed was fetched: nothing went out.
		for _, f := range e.Verifier().Feeds() {
			if !f.Idle {
				t.Errorf("feed %s was started by claims no feed can decide", f.Source)
			}
		}
		x, err := e.Explain(context.Background(), Request{Host: "example.com", Target: "/private/x", UserAgent: uaGoogle, ClientIP: "127.0.0.1", Origin: site(robots)})
		if err != nil || x.Action != "deny" || x.Group != "*" || x.Verification == nil || !x.Verification.AlsoStar || x.Verification.Verdict != "unverifiable" {
			t.Errorf("explain: %+v %+v %v", x, x.Verification, err)
		}
		if logs.FilterMessageSnippet("not globally reachable").Len() != 1 {
			t.Errorf("one warning about claims from addresses that are not globally reachable, got %v", logs.All())
		}
	})

	t.Run("public address, no network", func(t *testing.T) {
		// The built-in registry, with the network gone: feeds cannot be
		// fetched, and the resolver never answers.
		dns := testdns.Start(t)
		dns.SetDelay(time.Second)
		v, err := identity.New(identity.Config{Operators: identity.Builtin(), HTTPClient: &http.Client{Transport: noNetwork{}},
			Resolver: dns.Addr, DNSTimeout: 50 * time.Millisecond, OnDemand: true})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		e := mustNew(t, Config{}, WithVerifier(v))
		defer e.Close()
		check(t, serve(e, site(robots)), "8.8.4.4:1234")
		if v := decideAt(e, uaGoogle, "/private/x", "8.8.4.4:1"); v.Verification != identity.Unverifiable {
			t.Errorf("verification %v", v.Verification)
		}
	})

	t.Run("verify off believes every header", func(t *testing.T) {
		e := mustNew(t, Config{Verify: &identity.VerifyConfig{Off: true}})
		defer e.Close()
		if e.Verifier() != nil {
			t.Fatal("a verifier with verify off")
		}
		if rec := do(serve(e, site(robots)), uaGoogle, "/private/x"); rec.Code != 200 {
			t.Fatalf("Googlebot with verify off: %d", rec.Code)
		}
	})
}

func TestVerifyOffConfig(t *testing.T) {
	if _, err := New(Config{Verify: &identity.VerifyConfig{Off: true, OnSpoofed: "star"}}); err == nil || !strings.Contains(err.Error(), "verify: off") {
		t.Fatalf("off with another setting: %v", err)
	}
	if _, err := New(Config{Verify: &identity.VerifyConfig{FetchFeeds: "lazy"}}); err == nil || !strings.Contains(err.Error(), "fetch_feeds") {
		t.Fatalf("fetch_feeds lazy: %v", err)
	}
	c, err := Config{}.WithDefaults()
	if err != nil || c.Verify == nil || c.Verify.FetchFeeds != identity.FeedsOnDemand || c.Verify.OnSpoofed != identity.SpoofedDeny {
		t.Fatalf("defaults: %+v %v", c.Verify, err)
	}
	c, err = Config{Verify: &identity.VerifyConfig{}}.WithDefaults()
	if err != nil || c.Verify.FetchFeeds != identity.FeedsOnDemand {
		t.Fatalf("a verify block keeps the one default (on_demand): %+v %v", c.Verify, err)
	}
	if c2, err := c.WithDefaults(); err != nil || !reflect.DeepEqual(c2.Verify, c.Verify) {
		t.Fatalf("defaults twice: %+v %v", c2.Verify, err)
	}
}

// TestVerifyBehindUntrustedProxy: a claim that fails verification on a
// request that carries a forwarding header whose proxy is not trusted (the
// client address is the connection's) was checked against the proxy's
// address: it is judged by its group and "*" together, with one warning,
// not refused as spoofed. A request without such a header is refused.
func TestVerifyBehindUntrustedProxy(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	clk := testclock.New()
	e := newVerifying(t, verifyConfig(t, "", ""), WithLogger(zap.New(core)), WithClock(clk.Now))
	h := serve(e, site(verifyRobots))
	get := func(path string, headers ...string) *httptest.ResponseRecorder {
		clk.Add(3 * time.Second) // Googlebot's Crawl-delay is 2 s
		req := httptest.NewRequest("GET", "http://example.com"+path, nil)
		req.RequestURI = path
		req.RemoteAddr = spoofIP
		req.Header.Set("User-Agent", uaGoogle)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := get("/public"); rec.Code != 403 || !strings.Contains(rec.Body.String(), "does not come from an address that google publishes") {
		t.Fatalf("a direct spoofer: %d %q", rec.Code, rec.Body)
	}
	for _, hdr := range []string{"X-Forwarded-For", "Forwarded", "CF-Connecting-IP"} {
		if rec := get("/public", hdr, "66.249.64.5"); rec.Code != 200 {
			t.Errorf("through an untrusted proxy (%s), a path both groups allow: %d %q", hdr, rec.Code, rec.Body)
		}
		if rec := get("/private/x", hdr, "66.249.64.5"); rec.Code != 403 || !strings.Contains(rec.Body.String(), "for *") {
			t.Errorf("through an untrusted proxy (%s), a path * disallows: %d %q", hdr, rec.Code, rec.Body)
		}
		if rec := get("/nogoogle/x", hdr, "66.249.64.5"); rec.Code != 403 || !strings.Contains(rec.Body.String(), "for Googlebot") {
			t.Errorf("through an untrusted proxy (%s), its own group's Disallow: %d %q", hdr, rec.Code, rec.Body)
		}
	}
	if n := logs.FilterMessageSnippet("proxy or CDN that is not trusted").Len(); n != 1 {
		t.Fatalf("%d warnings about the untrusted proxy, want 1", n)
	}
	// A client address that came from the header (a trusted proxy) is
	// checked as it is: a spoofed one is refused.
	req := httptest.NewRequest("GET", "http://example.com/public", nil)
	req.RequestURI, req.RemoteAddr = "/public", "127.0.0.1:9"
	req.Header.Set("User-Agent", uaGoogle)
	req.Header.Set("X-Forwarded-For", "11.0.113.9")
	if v := e.DecideHTTP(req, nil, "11.0.113.9", site(verifyRobots)); v.Reason != ReasonSpoofed {
		t.Fatalf("a spoofer behind a trusted proxy: %v", v.Reason)
	}
}
