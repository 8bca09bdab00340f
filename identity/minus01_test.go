package identity

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testkeys"
)

// signMember signs a request for https://example.com/page with the test
// key, its Signature-Agent a dictionary whose member sig1 is member (with
// any parameters), covered as "signature-agent";key="sig1" (draft -01).
func signMember(t *testing.T, member, nonce string) *SignedRequest {
	t.Helper()
	priv, err := PrivateJWK(testkeys.PrivateJWK)
	if err != nil {
		t.Fatal(err)
	}
	sr := &SignedRequest{Method: "GET", Scheme: "https", Authority: "example.com", Path: "/page", Header: http.Header{}}
	sr.Header.Set("Signature-Agent", "sig1="+member)
	now := time.Now()
	in := fmt.Sprintf(`("@authority" "signature-agent";key="sig1");created=%d;expires=%d;keyid=%q;alg="ed25519";nonce=%q;tag="web-bot-auth"`,
		now.Unix(), now.Add(time.Minute).Unix(), testkeys.Thumbprint, nonce)
	h, m := parseInput(t, "sig1="+in, "sig1")
	if _, err := signatureAgent(sr, h, m); err != nil {
		t.Fatal(err)
	}
	base, err := signatureBase(nil, sr, h, m)
	if err != nil {
		t.Fatal(err)
	}
	sr.Header.Set("Signature-Input", "sig1="+in)
	sr.Header.Set("Signature", "sig1=:"+base64.StdEncoding.EncodeToString(ed25519.Sign(priv, base))+":")
	return sr
}

// keyServer serves the test key over TLS on loopback: its key directory
// at the well-known path with the media type given, and a JWK Set at
// /keys.json; with redirect, the well-known path redirects to another.
func keyServer(t *testing.T, mediaType, redirect string) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/other/") {
			t.Errorf("a key set no configuration names was fetched: %s", r.URL.Path)
		}
		switch r.URL.Path {
		case DirectoryPath:
			if redirect != "" {
				http.Redirect(w, r, redirect+DirectoryPath, http.StatusFound)
				return
			}
			w.Header().Set("Content-Type", mediaType)
		case "/keys.json":
			w.Header().Set("Content-Type", "application/jwk-set+json")
		default:
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"keys":[%s]}`, testkeys.PublicJWK)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWebBotAuthMinus01: the dictionary form of Signature-Agent verifies
// with a member of no type (an origin: its directory; a URI with a path:
// a JWK Set, as in -01), type=directory and type=jwks_uri (draft -00),
// keys served by local servers; a directory that redirects, one served
// with another media type, a JWK Set URI no configuration names (not
// fetched), and a nonce seen before are refused; Sign's
// own output (-01) verifies, and so does SignLegacy's string form.
func TestWebBotAuthMinus01(t *testing.T) {
	good := keyServer(t, directoryMediaType, "")
	moved := keyServer(t, directoryMediaType, good.URL)
	wrong := keyServer(t, "application/json", "")
	tlsCfg := &tls.Config{RootCAs: good.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	ops := []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{"/nonexistent"}, SignatureAgents: []string{good.URL, good.URL + "/keys.json", moved.URL, wrong.URL}}}
	v, _ := newTestVerifier(t, ops, func(c *Config) {
		c.WebBotAuth = &WebBotAuthConfig{AllowPrivate: true, TLS: tlsCfg}
	})
	ctx := context.Background()
	addr := netip.MustParseAddr("11.0.113.5")
	verify := func(sr *SignedRequest) (Result, error) { return v.VerifyRequest(ctx, "", 0, addr, sr) }
	for _, c := range []struct{ name, member string }{
		{"no type, an origin", fmt.Sprintf("%q", good.URL)},
		{"no type, a JWK Set URI (-01)", fmt.Sprintf("%q", good.URL+"/keys.json")},
		{"type=directory", fmt.Sprintf("%q;type=directory", good.URL)},
		{"type=jwks_uri", fmt.Sprintf("%q;type=jwks_uri", good.URL+"/keys.json")},
	} {
		if r, err := verify(signMember(t, c.member, "n-"+c.name)); err != nil || r.Verdict != Verified || r.Operator != "acme" {
			t.Errorf("%s: %+v %v", c.name, r, err)
		}
	}
	for _, c := range []struct{ name, member string }{
		{"a directory that redirects", fmt.Sprintf("%q", moved.URL)},
		{"a directory of another media type", fmt.Sprintf("%q", wrong.URL)},
		{"type=cimd", fmt.Sprintf("%q;type=cimd", good.URL+"/card")},
		// A JWK Set URI on a named origin that no configuration names:
		// a client's header never chooses what the guard fetches.
		{"an unnamed JWK Set URI", fmt.Sprintf("%q", good.URL+"/other/keys.json")},
	} {
		if r, err := verify(signMember(t, c.member, "n-"+c.name)); err == nil || r.Verdict == Verified {
			t.Errorf("%s: verified: %+v", c.name, r)
		}
	}
	// Why the two directories gave no key.
	for src, why := range map[string]string{moved.URL: "redirects", wrong.URL: "not " + directoryMediaType} {
		if _, _, err := v.signers.fetch(ctx, src); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("fetch of %s: %v, want %q", src, err, why)
		}
	}
	replayed := signMember(t, fmt.Sprintf("%q", good.URL), "n-once")
	if r, err := verify(replayed); err != nil || r.Verdict != Verified {
		t.Fatalf("first use: %+v %v", r, err)
	}
	// The same client again: the same request judged twice (or resent by
	// its own client), not a replay.
	if r, err := verify(replayed); err != nil || r.Verdict != Verified {
		t.Fatalf("the same nonce from the same client: %+v %v", r, err)
	}
	// Another client: a replay. Explain says so too, without recording.
	other := netip.MustParseAddr("11.0.113.6")
	if x := v.ExplainRequest(ctx, "", 0, other, replayed); !errors.Is(x.SignatureError, ErrReplayed) {
		t.Fatalf("explain of a replay: %v %q", x.SignatureError, x.Steps)
	}
	if r, err := v.VerifyRequest(ctx, "", 0, other, replayed); !errors.Is(err, ErrReplayed) || r.Verdict == Verified {
		t.Fatalf("the same nonce from another client: %+v %v, want ErrReplayed", r, err)
	}
	// An unknown address proves no sameness: always a replay.
	if _, err := v.VerifyRequest(ctx, "", 0, netip.Addr{}, replayed); !errors.Is(err, ErrReplayed) {
		t.Fatalf("the same nonce from an unknown address: %v, want ErrReplayed", err)
	}
	// Explain records nothing: a nonce it saw first is still fresh.
	fresh := signMember(t, fmt.Sprintf("%q", good.URL), "n-explained")
	if x := v.ExplainRequest(ctx, "", 0, other, fresh); x.SignatureError != nil {
		t.Fatalf("explain: %v", x.SignatureError)
	}
	if r, err := verify(fresh); err != nil || r.Verdict != Verified {
		t.Fatalf("a nonce only explained: %+v %v", r, err)
	}
	priv, _ := PrivateJWK(testkeys.PrivateJWK)
	for name, signer := range map[string]func(*SignedRequest, ed25519.PrivateKey, string, string, time.Time, time.Time, string) error{"Sign": Sign, "SignLegacy": SignLegacy} {
		sr := &SignedRequest{Method: "GET", Scheme: "https", Authority: "example.com", Path: "/page", Header: http.Header{}}
		if err := signer(sr, priv, testkeys.Thumbprint, good.URL, time.Now(), time.Now().Add(time.Minute), "n-"+name); err != nil {
			t.Fatal(err)
		}
		dict := strings.HasPrefix(sr.Header.Get("Signature-Agent"), "sig1=")
		if r, err := verify(sr); err != nil || r.Verdict != Verified || dict != (name == "Sign") {
			t.Errorf("%s (%q): %+v %v", name, sr.Header.Get("Signature-Agent"), r, err)
		}
	}
}

// TestMalformedSignatureHeaders: ErrMalformed (the draft's 400) is for
// headers that cannot be read, not for this verifier's own bounds.
func TestMalformedSignatureHeaders(t *testing.T) {
	now := time.Now()
	params := fmt.Sprintf(";created=%d;expires=%d;keyid=\"k\";tag=\"web-bot-auth\"", now.Unix(), now.Add(time.Minute).Unix())
	many := func(n int) string {
		var b strings.Builder
		b.WriteString(`("@authority"`)
		for i := range n {
			fmt.Fprintf(&b, ` "x-h%d"`, i)
		}
		return b.String() + ")" + params
	}
	members := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "s%d=(\"@authority\")%s, ", i, params)
		}
		return b.String() + `sig1=("@authority")` + params
	}
	for _, tc := range []struct {
		name, input, sig string
		malformed        bool
	}{
		{"not a structured field", `sig1=("@authority";tag="web-bot-auth"`, "sig1=:AAAA:", true},
		{"Signature not a dictionary", `sig1=("@authority")` + params, "sig1=:AAAA", true},
		{"no created", fmt.Sprintf(`sig1=("@authority");expires=%d;keyid="k";tag="web-bot-auth"`, now.Unix()), "sig1=:AAAA:", true},
		{"no Signature member", `sig1=("@authority")` + params, "sig2=:AAAA:", true},
		{"over 8 KiB", `sig1=("@authority")` + params + strings.Repeat(" ", MaxSignatureHeader), "sig1=:AAAA:", false},
		{"25 covered components", "sig1=" + many(24), "sig1=:AAAA:", false},
		{"70 covered components (past the parser's bound)", "sig1=" + many(69), "sig1=:AAAA:", false},
		{"65 members (past the parser's bound)", members(64), "sig1=:AAAA:", false},
	} {
		sr := &SignedRequest{Method: "GET", Scheme: "https", Authority: "example.com", Path: "/", Header: http.Header{}}
		sr.Header.Set("Signature-Input", tc.input)
		sr.Header.Set("Signature", tc.sig)
		_, err := VerifySignature(sr, now, time.Hour, func(string, string) (PublicKey, bool) { return PublicKey{}, false })
		if err == nil || errors.Is(err, ErrMalformed) != tc.malformed {
			t.Errorf("%s: %v, malformed %v", tc.name, err, errors.Is(err, ErrMalformed))
		}
	}
}
