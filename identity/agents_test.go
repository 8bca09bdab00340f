package identity

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testkeys"
	"go.uber.org/zap"
)

// directoryServer serves the RFC 9421 test key as a key directory over TLS
// on loopback.
func directoryServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	if DirectoryPath != "/.well-known/http-message-signatures-directory" {
		t.Fatal("testkeys serves another path")
	}
	return testkeys.DirectoryServer(t)
}

func testKey(testing.TB) ([]byte, string) { return testkeys.PrivateJWK, testkeys.Thumbprint }

// signed returns a request for https://example.com/page signed by the
// test key for agent, created at created.
func signed(t testing.TB, agent string, created time.Time) *SignedRequest {
	k, tp := testKey(t)
	priv, err := PrivateJWK(k)
	if err != nil {
		t.Fatal(err)
	}
	sr := &SignedRequest{Method: "GET", Scheme: "https", Authority: "example.com", Path: "/page", Header: http.Header{}}
	if err := Sign(sr, priv, tp, agent, created, created.Add(time.Minute), fmt.Sprint("n", nonces.Add(1))); err != nil {
		t.Fatal(err)
	}
	return sr
}

func TestWebBotAuthDirectories(t *testing.T) {
	srv, fetches := directoryServer(t)
	tlsCfg := &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	ops := []Operator{{Name: "openai", Tokens: []string{"GPTBot"}, IPRanges: []string{"/nonexistent"}, SignatureAgents: []string{srv.URL}}}
	v, _ := newTestVerifier(t, ops, func(c *Config) {
		c.WebBotAuth = &WebBotAuthConfig{AllowPrivate: true, TLS: tlsCfg}
	})
	ctx := context.Background()
	addr := netip.MustParseAddr("11.0.113.5")
	now := time.Now()
	// A signed request with a browser header (no claim): verified openai.
	r, err := v.VerifyRequest(ctx, "", 0, addr, signed(t, srv.URL, now))
	if err != nil || r.Verdict != Verified || r.Operator != "openai" || r.Method != MethodSignature {
		t.Fatalf("%+v %v", r, err)
	}
	// Claiming GPTBot from any address: verified by the signature.
	r, _ = v.VerifyRequest(ctx, "GPTBot/1.0", v.Claims("GPTBot/1.0"), addr, signed(t, srv.URL, now))
	if r.Verdict != Verified || r.Method != MethodSignature {
		t.Fatalf("%+v", r)
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d directory fetches, want 1 (cached)", n)
	}
	// Replayed outside its window: not verified, and the claim falls back
	// to the address checks (the feed is missing: unverifiable).
	r, err = v.VerifyRequest(ctx, "GPTBot/1.0", v.Claims("GPTBot/1.0"), addr, signed(t, srv.URL, now.Add(-time.Hour)))
	if err == nil || !strings.Contains(err.Error(), "expired") || r.Verdict == Verified {
		t.Fatalf("replay: %+v %v", r, err)
	}
	// An agent nobody named: not trusted (discover off).
	r, err = v.VerifyRequest(ctx, "", 0, addr, signed(t, "https://unknown.example", now))
	if err == nil || r.Verdict != None {
		t.Fatalf("unknown agent: %+v %v", r, err)
	}
	x := v.ExplainRequest(ctx, "", 0, addr, signed(t, srv.URL, now))
	if x.Verdict != Verified || !strings.Contains(strings.Join(x.Steps, " "), "signature: verified: key") {
		t.Fatalf("explain %+v", x)
	}
}

// Without the allowance, a directory at a loopback address is refused at
// connection time, whatever the Signature-Agent says.
func TestWebBotAuthSSRFGuard(t *testing.T) {
	srv, fetches := directoryServer(t)
	tlsCfg := &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	ops := []Operator{{Name: "openai", Tokens: []string{"GPTBot"}, SignatureAgents: []string{srv.URL}}}
	v, logs := newTestVerifier(t, ops, func(c *Config) { c.WebBotAuth = &WebBotAuthConfig{TLS: tlsCfg, Discover: true} })
	r, err := v.VerifyRequest(context.Background(), "", 0, netip.MustParseAddr("11.0.113.5"), signed(t, srv.URL, time.Now()))
	if r.Verdict == Verified || err == nil {
		t.Fatalf("%+v %v", r, err)
	}
	if fetches.Load() != 0 {
		t.Fatal("the directory was fetched from loopback")
	}
	if w := logs.FilterMessageSnippet("key directory not loaded").All(); len(w) != 1 || !strings.Contains(fmt.Sprint(w[0].ContextMap()["error"]), "private, loopback or link-local") {
		t.Fatalf("logs %v", logs.All())
	}
	// http:// agents are refused too.
	r, _ = v.VerifyRequest(context.Background(), "", 0, netip.MustParseAddr("11.0.113.5"), signed(t, "http://agent.example", time.Now()))
	if r.Verdict == Verified {
		t.Fatal("an http:// directory")
	}
}

// Pinned keys need no directory.
func TestWebBotAuthPinned(t *testing.T) {
	k, _ := testKey(t)
	pk, err := ParseJWK(k)
	if err != nil {
		t.Fatal(err)
	}
	ops := []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}}}
	v, _ := newTestVerifier(t, ops, func(c *Config) {
		c.WebBotAuth = &WebBotAuthConfig{Agents: []Agent{{Origin: "https://bot.acme.example", Operator: "acme", Keys: []PublicKey{pk}}}}
	})
	r, err := v.VerifyRequest(context.Background(), "AcmeBot", v.Claims("AcmeBot"), netip.MustParseAddr("11.51.100.1"), signed(t, "https://bot.acme.example", time.Now()))
	if err != nil || r.Verdict != Verified || r.Operator != "acme" {
		t.Fatalf("%+v %v", r, err)
	}
	// Without Signature-Agent, the pinned key still names its agent.
	r, err = v.VerifyRequest(context.Background(), "", 0, netip.MustParseAddr("11.51.100.1"), signed(t, "", time.Now()))
	if err != nil || r.Operator != "acme" {
		t.Fatalf("%+v %v", r, err)
	}
}

// A pinned agent that no operator stands for is verified as "agent
// <origin>" with no privilege; discovery never contacts a non-default
// port.
func TestWebBotAuthAgentOnly(t *testing.T) {
	k, _ := testKey(t)
	pk, _ := ParseJWK(k)
	srv, fetches := directoryServer(t)
	tlsCfg := &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	v, _ := newTestVerifier(t, []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}}}, func(c *Config) {
		c.WebBotAuth = &WebBotAuthConfig{Discover: true, AllowPrivate: true, TLS: tlsCfg, Agents: []Agent{{Origin: "https://solo.example", Keys: []PublicKey{pk}}}}
	})
	r, err := v.VerifyRequest(context.Background(), "", 0, netip.MustParseAddr("11.51.100.1"), signed(t, "https://solo.example", time.Now()))
	if err != nil || r.Verdict != Verified || !r.AgentOnly || r.Operator != "agent https://solo.example" || r.ClientKey() != ([16]byte{}) {
		t.Fatalf("%+v %v", r, err)
	}
	// Discovery of an agent on a non-default port: not contacted.
	if r, _ := v.VerifyRequest(context.Background(), "", 0, netip.MustParseAddr("11.51.100.1"), signed(t, srv.URL, time.Now())); r.Verdict == Verified || fetches.Load() != 0 {
		t.Fatalf("%+v, %d fetches", r, fetches.Load())
	}
}

// The guard refuses every non-public address before connecting.
func TestDirectoryGuard(t *testing.T) {
	dial := guardedDial(false)
	for _, addr := range []string{"10.1.2.3:443", "192.168.1.1:443", "172.16.0.1:443", "127.0.0.1:443", "169.254.169.254:443",
		"100.100.100.200:443", "[::1]:443", "[fe80::1%lo]:443", "[fc00::1]:443", "[64:ff9b::a01:203]:443", "0.0.0.0:443"} {
		_, err := dial(context.Background(), "tcp", addr)
		if err == nil || !strings.Contains(err.Error(), "refusing to fetch a key directory") {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

// TestScreenKeyIDs: signature headers that name only keys no trusted agent
// has are refused before they are parsed; a key id that may be trusted
// (pinned, or of an agent whose directory is not loaded yet), or one the
// scan cannot read plainly, goes on to full verification.
func TestScreenKeyIDs(t *testing.T) {
	pub, err := ParseJWK(testkeys.PublicJWK)
	if err != nil {
		t.Fatal(err)
	}
	ops := []Operator{
		{Name: "acme", Tokens: []string{"AcmeBot"}, SignatureAgents: []string{"https://bot.acme.example"}},
		{Name: "bolt", Tokens: []string{"BoltBot"}, SignatureAgents: []string{"https://bot.bolt.example"}},
	}
	pinned := &WebBotAuthConfig{Agents: []Agent{{Origin: "https://bot.acme.example", Operator: "acme", Keys: []PublicKey{pub}}}}
	v, _ := newTestVerifier(t, ops[:1], func(c *Config) { c.WebBotAuth = pinned })
	in := func(keyids ...string) []string {
		var s []string
		for i, k := range keyids {
			s = append(s, fmt.Sprintf(`sig%d=("@authority");created=1;expires=2;keyid=%s;tag="web-bot-auth"`, i, k))
		}
		return s
	}
	for _, c := range []struct {
		name   string
		inputs []string
		refuse bool
	}{
		{"an unknown key", in(`"nobody"`), true},
		{"two unknown keys", in(`"nobody"`, `"nobody-else"`), true},
		{"the pinned key second", in(`"nobody"`, `"`+testkeys.Thumbprint+`"`), false},
		{"an escape in a key id", in(`"no\"body"`), false},
		{"a key id that is a token", in(`nobody`), false},
		{"no key id", []string{`sig1=("@authority");created=1;expires=2;tag="web-bot-auth"`}, false},
	} {
		if err := v.screenKeyIDs(c.inputs); (err == ErrUnknownKey) != c.refuse {
			t.Errorf("%s: %v, refuse %v", c.name, err, c.refuse)
		}
	}
	// A registry agent whose directory is not loaded, failed to load or is
	// due for a refresh may have any key: only a lookup fetches it, so the
	// screen must let the request through to one.
	v2, _ := newTestVerifier(t, ops, func(c *Config) { c.WebBotAuth = pinned })
	s := v2.signers
	for _, c := range []struct {
		name   string
		d      *directory
		refuse bool
	}{
		{"not fetched yet", nil, false},
		{"the first fetch failed", &directory{err: errors.New("timeout"), expires: time.Now().Add(time.Minute)}, false},
		{"loaded, due for a refresh", &directory{keys: map[string]PublicKey{"k-bolt": {}}, expires: time.Now().Add(-time.Second)}, false},
		{"loaded", &directory{keys: map[string]PublicKey{"k-bolt": {}}, expires: time.Now().Add(time.Hour)}, true},
	} {
		s.mu.Lock()
		if c.d == nil {
			delete(s.dirs, "https://bot.bolt.example")
		} else {
			s.dirs["https://bot.bolt.example"] = c.d
		}
		s.mu.Unlock()
		s.rebuildScreen()
		if err := v2.screenKeyIDs(in(`"nobody"`)); (err == ErrUnknownKey) != c.refuse {
			t.Errorf("bolt's directory %s: %v, refuse %v", c.name, err, c.refuse)
		}
		if err := v2.screenKeyIDs(in(`"k-bolt"`)); err != nil {
			t.Errorf("bolt's directory %s: its key refused: %v", c.name, err)
		}
	}
	// A space after the ';' of a parameter (RFC 8941 allows it) is read.
	if err := v.screenKeyIDs([]string{`sig1=("@authority");created=1; keyid="` + testkeys.Thumbprint + `";tag="web-bot-auth", sig2=("@authority"); keyid="nobody"`}); err != nil {
		t.Errorf("a key id after '; ': %v", err)
	}
}

// nonces numbers the nonces of signed: each request a fresh one, as
// signers do (a nonce seen twice is a replay).
var nonces atomic.Int64

// TestNonceBudgets: each agent that configuration names keeps its nonces
// in a budget of its own, and discovered agents share one, so that a
// discovered agent's flood of fresh nonces (or another agent's) never
// pushes a named agent's nonce out: its replay from another address is
// still seen.
func TestNonceBudgets(t *testing.T) {
	s, err := newSigners(WebBotAuthConfig{Discover: true, Agents: []Agent{{Origin: "https://named.example"}}}, nil, zap.NewNop(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	exp := now.Add(time.Minute)
	a, b := netip.MustParseAddr("203.0.113.1"), netip.MustParseAddr("203.0.113.2")
	if s.nonceReplayed("https://named.example", "k1", "n1", exp, now, a, true) {
		t.Fatal("a first nonce taken for a replay")
	}
	for i := range maxNonces + 10 {
		s.nonceReplayed("https://discovered.example", "k2", strconv.Itoa(i), exp, now, a, true)
	}
	if !s.nonceReplayed("https://named.example", "k1", "n1", exp, now, b, true) {
		t.Error("a named agent's nonce was pushed out by a discovered agent's flood: its replay went unseen")
	}
	if s.nonceReplayed("https://discovered.example", "k2", "0", exp, now, b, true) {
		t.Error("the discovered agents' budget kept more than maxNonces")
	}
}
