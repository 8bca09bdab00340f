package guard

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testkeys"
	"github.com/robotsguard/robotsguard/sites"
)

// rfcKey returns the RFC 9421 test key (internal/testkeys), its public part
// written to a JWK file, and its thumbprint.
func rfcKey(t testing.TB) (priv []byte, pubFile, thumbprint string) {
	t.Helper()
	pubFile = filepath.Join(t.TempDir(), "agent.jwk")
	if err := os.WriteFile(pubFile, testkeys.PublicJWK, 0o644); err != nil {
		t.Fatal(err)
	}
	return testkeys.PrivateJWK, pubFile, testkeys.Thumbprint
}

const wbaRobots = `User-agent: AcmeBot
Disallow: /noacme/

User-agent: *
Disallow: /private/
`

// signedGet returns a request for http://example.com/path signed for agent
// (created now), with the User-Agent ua.
func signedGet(t testing.TB, path, ua, agent string, created time.Time) *http.Request {
	t.Helper()
	priv, _, tp := rfcKey(t)
	key, err := identity.PrivateJWK(priv)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "http://example.com"+path, nil)
	r.RequestURI = path
	r.RemoteAddr = "11.0.113.77:5555"
	r.Header.Set("User-Agent", ua)
	browserHeaders(r.Header)
	if err := identity.Sign(signedRequestOf(r, "http"), key, tp, agent, created, created.Add(time.Minute), fmt.Sprint("nonce-", nonces.Add(1))); err != nil {
		t.Fatal(err)
	}
	return r
}

// wbaEngine is an Engine with agent https://bot.acme.example pinned for
// operator acme; accept is its accept_signature (nil: the default).
func wbaEngine(t testing.TB, accept *bool) *Engine {
	_, pubFile, _ := rfcKey(t)
	off := false
	cfg := Config{Verify: &identity.VerifyConfig{Builtin: &off,
		Operators:  []identity.Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{"/nonexistent/acme.json"}}},
		WebBotAuth: &identity.WebBotAuthSettings{AcceptSignature: accept, Agents: []identity.SignatureAgent{{Origin: "https://bot.acme.example", Operator: "acme", Keys: []string{pubFile}}}},
	}}
	e := mustNew(t, cfg, WithSource(sites.BytesSource([]byte(wbaRobots))))
	t.Cleanup(func() { e.Close() })
	return e
}

// A request signed by a pinned agent is verified as its operator's from
// any address; its group applies; an unsigned or replayed one is not.
func TestWebBotAuthThroughHandler(t *testing.T) {
	e := wbaEngine(t, nil)
	var got Verdict
	h := serve(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	obs := func(r *http.Request) Verdict {
		v := e.Decide(context.Background(), Request{Host: r.Host, Target: r.RequestURI, UserAgent: r.UserAgent(), ClientIP: r.RemoteAddr,
			Method: r.Method, Signed: signedRequestOf(r, "http")})
		return v
	}
	now := time.Now()
	got = obs(signedGet(t, "/private/x", "AcmeBot/2.0", "https://bot.acme.example", now))
	if got.Verification != identity.Verified || got.Method != identity.MethodSignature || got.Operator != "acme" || got.Action != Allow || got.Group != "AcmeBot" {
		t.Fatalf("signed: %+v", got)
	}
	// Through Handler: allowed (AcmeBot may fetch /private/).
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, signedGet(t, "/private/x", "AcmeBot/2.0", "https://bot.acme.example", now))
	if rec.Code != 200 {
		t.Fatalf("handler: %d", rec.Code)
	}
	// Unsigned, same header: the feed is missing, so unverifiable; the
	// AcmeBot group still applies (judged by the header) and its own
	// Disallow gives 403 with the hint what to sign.
	unsigned := httptest.NewRequest("GET", "http://example.com/noacme/x", nil)
	unsigned.RequestURI = "/noacme/x"
	unsigned.Header.Set("User-Agent", "AcmeBot/2.0")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, unsigned)
	if rec.Code != 403 || !strings.Contains(rec.Header().Get("Accept-Signature"), `tag="web-bot-auth"`) {
		t.Fatalf("unsigned: %d %q", rec.Code, rec.Header().Get("Accept-Signature"))
	}
	if v := obs(unsigned); v.Verification == identity.Verified {
		t.Fatalf("unsigned verified: %+v", v)
	}
	// accept_signature off: the same 403 without the hint; a 403 to a bot
	// that claims no signing operator never carries it.
	rec = httptest.NewRecorder()
	serve(wbaEngine(t, new(bool)), okHandler).ServeHTTP(rec, unsigned)
	if rec.Code != 403 || rec.Header().Get("Accept-Signature") != "" {
		t.Fatalf("accept_signature off: %d %q", rec.Code, rec.Header().Get("Accept-Signature"))
	}
	other := httptest.NewRequest("GET", "http://example.com/private/x", nil)
	other.Header.Set("User-Agent", "OtherBot/1.0 (+https://other.example)")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, other)
	if rec.Code != 403 || rec.Header().Get("Accept-Signature") != "" {
		t.Fatalf("a claim of no signing operator: %d %q", rec.Code, rec.Header().Get("Accept-Signature"))
	}
	// Replayed after its window.
	if v := obs(signedGet(t, "/x", "AcmeBot/2.0", "https://bot.acme.example", now.Add(-2*time.Minute))); v.Verification == identity.Verified {
		t.Fatal("a replay outside its window was verified")
	}
	// A browser header signed by the agent: verified, judged as a bot of
	// the group its header earns ("*").
	if v := obs(signedGet(t, "/private/x", uaChrome, "https://bot.acme.example", now)); v.Verification != identity.Verified || v.Action != Deny || v.Group != "*" {
		t.Fatalf("signed browser header: %+v", v)
	}
	// Explain shows the signature step.
	r := signedGet(t, "/x", "AcmeBot/2.0", "https://bot.acme.example", now)
	x, err := e.Explain(context.Background(), Request{Host: "example.com", Target: "/x", UserAgent: "AcmeBot/2.0", ClientIP: "11.0.113.77", Signed: signedRequestOf(r, "http")})
	if err != nil || x.Verification == nil || x.Verification.Method != "signature" || !strings.Contains(strings.Join(x.Verification.Steps, " "), "signature: verified") {
		t.Fatalf("explain %+v %v", x.Verification, err)
	}
}

// TestSignatureReplayAndMalformed: a signed request sent again with its
// nonce by another client gets 429 (sign anew), by its own client passes; unreadable signature headers get 400 on a
// claim of a signing agent (its User-Agent names an operator with
// signature agents, or it sends Signature-Agent) and change nothing for
// anyone else.
func TestSignatureReplayAndMalformed(t *testing.T) {
	e := wbaEngine(t, nil)
	h := serve(e, okHandler)
	r := signedGet(t, "/public/x", "AcmeBot/2.0", "https://bot.acme.example", time.Now())
	first, again, replay := httptest.NewRecorder(), httptest.NewRecorder(), httptest.NewRecorder()
	h.ServeHTTP(first, r)
	h.ServeHTTP(again, r) // its own client again (or judged twice): not a replay
	other := r.Clone(context.Background())
	other.RemoteAddr = "11.0.113.78:5555"
	h.ServeHTTP(replay, other)
	if first.Code != 200 || again.Code != 200 || replay.Code != 429 || replay.Header().Get("Retry-After") != "1" || !strings.Contains(replay.Body.String(), "fresh nonce") {
		t.Fatalf("replay: first %d, again %d, from another client %d %q %q", first.Code, again.Code, replay.Code, replay.Header().Get("Retry-After"), replay.Body)
	}
	if !strings.Contains(replay.Header().Get("Accept-Signature"), `tag="web-bot-auth"`) {
		t.Errorf("the replay's 429 does not say what to sign: %v", replay.Header())
	}
	garbled := func(ua string, agent bool) *http.Request {
		r := httptest.NewRequest("GET", "http://example.com/public/x", nil)
		r.Header.Set("User-Agent", ua)
		browserHeaders(r.Header)
		r.Header.Set("Signature-Input", `sig1=("@authority" ;tag="web-bot-auth"`)
		r.Header.Set("Signature", "sig1=:AAAA")
		if agent {
			r.Header.Set("Signature-Agent", `sig1="https://bot.acme.example"`)
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		ua    string
		agent bool
		code  int
	}{
		{"a claim of a signing operator", "AcmeBot/2.0", false, 400},
		{"a browser header with Signature-Agent", uaChrome, true, 400},
		{"a browser header without", uaChrome, false, 200},
		{"a bot that claims no signer", "OtherBot/1.0 (+https://other.example)", false, 200},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, garbled(tc.ua, tc.agent))
		if rec.Code != tc.code || tc.code == 400 && !strings.Contains(rec.Body.String(), "signature headers cannot be read") {
			t.Errorf("%s: %d %q, want %d", tc.name, rec.Code, rec.Body, tc.code)
		}
	}
	if v := e.Decide(context.Background(), Request{Host: "example.com", Target: "/public/x", UserAgent: "AcmeBot/2.0",
		Signed: signedRequestOf(garbled("AcmeBot/2.0", false), "http")}); v.Reason != ReasonBadSignature || v.StatusCode() != 400 {
		t.Errorf("verdict %v %v %d", v.Action, v.Reason, v.StatusCode())
	}

	// When acme publishes its addresses, they decide: from one of them the
	// claim passes whatever its signature headers hold; from another it
	// is spoofed (403, reported), not a 400.
	feed := filepath.Join(t.TempDir(), "acme.json")
	os.WriteFile(feed, []byte(`{"creationTime":"2026-11-27T00:00:00Z","prefixes":[{"ipv4Prefix":"11.0.113.0/24"}]}`), 0o644)
	_, pubFile, _ := rfcKey(t)
	off := false
	ranged := newVerifying(t, Config{Verify: &identity.VerifyConfig{Builtin: &off, FetchFeeds: identity.FeedsAtStart,
		Operators:  []identity.Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{feed}}},
		WebBotAuth: &identity.WebBotAuthSettings{Agents: []identity.SignatureAgent{{Origin: "https://bot.acme.example", Operator: "acme", Keys: []string{pubFile}}}},
	}})
	for ip, want := range map[string]Reason{"11.0.113.9": ReasonAllowed, "11.9.9.9": ReasonSpoofed} {
		v := ranged.Decide(context.Background(), Request{Host: "example.com", Target: "/x", UserAgent: "AcmeBot/2.0", ClientIP: ip,
			Signed: signedRequestOf(garbled("AcmeBot/2.0", true), "http")})
		if v.Reason != want {
			t.Errorf("garbled signature headers from %s: %v %v, want %v", ip, v.Action, v.Reason, want)
		}
	}
}

// BenchmarkWebBotAuthVerified is a signed request through Handler, the
// agent's key pinned (cached).
func BenchmarkWebBotAuthVerified(b *testing.B) {
	e := wbaEngine(b, new(bool))
	r := signedGet(b, "/public/x", "AcmeBot/2.0", "https://bot.acme.example", time.Now().Add(-30*time.Second))
	runBench(b, serve(e, okHandler), r, 200)
}

// rawRequest writes a GET with a User-Agent and size bytes of other header
// lines (X-Pad, 100 bytes each) and, with sig, signature headers that name
// 24 covered components (the bound), repeat X-Pad among them, and use a
// key nobody has: the garbage a client may send to make verification
// costly.
func rawRequest(size int, sig string) []byte {
	var b strings.Builder
	b.WriteString("GET /public/x HTTP/1.1\r\nHost: example.com\r\nUser-Agent: AcmeBot/2.0\r\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "X-Pad: %06d%s\r\n", i, strings.Repeat("v", 84))
	}
	b.WriteString(sig)
	b.WriteString("\r\n")
	return []byte(b.String())
}

// garbageSignature is the signature header block of rawRequest.
func garbageSignature(keyid string) string {
	now := time.Now()
	comps := `"@authority" "signature-agent"`
	for i := range identity.MaxCoveredComponents - 2 {
		comps += fmt.Sprintf(` "x-pad";bs;n=%d`, i)
	}
	return fmt.Sprintf("Signature-Agent: \"https://bot.acme.example\"\r\nSignature-Input: sig1=(%s);created=%d;expires=%d;keyid=%q;alg=\"ed25519\";tag=\"web-bot-auth\"\r\nSignature: sig1=:%s:\r\n",
		comps, now.Unix(), now.Add(time.Minute).Unix(), keyid, strings.Repeat("A", 86)+"==")
}

// BenchmarkSignedGarbage compares, for 1 KB, 16 KB and 1 MB of headers
// (net/http's default limit), the cost of a request that carries garbage
// signature headers (unknown key) with that of the same request unsigned:
// reading the request (http.ReadRequest) and the guard's decision, with
// Web Bot Auth on. "known-key" is the worst case of a key that is pinned:
// the signature base is built over every covered header, once.
func BenchmarkSignedGarbage(b *testing.B) {
	e := wbaEngine(b, new(bool))
	h := serve(e, okHandler)
	_, _, tp := rfcKey(b)
	for _, size := range []int{1 << 10, 16 << 10, 1 << 20} {
		for _, c := range []struct{ name, sig string }{
			{"unsigned", ""},
			{"garbage", garbageSignature("nobody-has-this-key")},
			{"known-key", garbageSignature(tp)},
		} {
			raw := rawRequest(size, c.sig)
			b.Run(fmt.Sprintf("%dKB/%s", size>>10, c.name), func(b *testing.B) {
				w := &benchWriter{h: make(http.Header)}
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
					if err != nil {
						b.Fatal(err)
					}
					r.RemoteAddr = "11.0.113.77:5555"
					clear(w.h)
					h.ServeHTTP(w, r)
				}
				if w.code != 200 {
					b.Fatalf("status %d", w.code)
				}
			})
		}
	}
}

// nonces numbers the nonces of signedGet: each request a fresh one, as
// signers do (a nonce seen twice is a replay).
var nonces atomic.Int64
