package identity

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/sfv"
	"github.com/robotsguard/robotsguard/internal/testkeys"
)

// vector is one signed request of testdata/webbotauth (see its SOURCES.md).
type vector struct {
	Key            json.RawMessage `json:"key"`
	TargetURL      string          `json:"target_url"`
	CreatedMS      int64           `json:"created_ms"`
	ExpiresMS      int64           `json:"expires_ms"`
	Label          string          `json:"label"`
	Signature      string          `json:"signature"`
	SignatureInput string          `json:"signature_input"`
	SignatureAgent string          `json:"signature_agent"`
}

func loadVectors(t testing.TB) []vector {
	var all []vector
	for _, f := range []string{"web_bot_auth_architecture_v1.json", "web_bot_auth_architecture_v2.json", "web_bot_auth_interop_cloudflare.json"} {
		b, err := os.ReadFile("testdata/webbotauth/" + f)
		if err != nil {
			t.Fatal(err)
		}
		var vs []vector
		if err := json.Unmarshal(b, &vs); err != nil {
			t.Fatal(err)
		}
		all = append(all, vs...)
	}
	return all
}

func (v vector) request(t testing.TB) *SignedRequest {
	u, err := url.Parse(v.TargetURL)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("Signature", v.Signature)
	h.Set("Signature-Input", v.SignatureInput)
	if v.SignatureAgent != "" {
		h.Set("Signature-Agent", v.SignatureAgent)
	}
	return &SignedRequest{Method: "GET", Scheme: u.Scheme, Authority: u.Host, Path: u.EscapedPath(), Query: u.RawQuery, Header: h}
}

func keysOf(k PublicKey) KeyLookup {
	return func(_, keyid string) (PublicKey, bool) { return k, keyid == k.Thumbprint }
}

func TestWebBotAuthVectors(t *testing.T) {
	for i, v := range loadVectors(t) {
		key, err := ParseJWK(v.Key)
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		now := time.UnixMilli(v.CreatedMS).Add(time.Minute)
		window := time.Duration(v.ExpiresMS-v.CreatedMS) * time.Millisecond
		sig, err := VerifySignature(v.request(t), now, window, keysOf(key))
		if err != nil {
			t.Fatalf("vector %d (%s, %s): %v", i, key.Alg, v.SignatureInput[:40], err)
		}
		if sig.Label != v.Label || sig.KeyID != key.Thumbprint {
			t.Fatalf("vector %d: %+v", i, sig)
		}
		if v.SignatureAgent != "" && sig.Agent != "https://signature-agent.test" {
			t.Fatalf("vector %d: agent %q", i, sig.Agent)
		}
		// Each change fails.
		for _, mut := range []struct {
			name string
			f    func(r *SignedRequest) (time.Time, time.Duration)
			want string
		}{
			{"authority", func(r *SignedRequest) (time.Time, time.Duration) { r.Authority = "example.org"; return now, window }, "does not verify"},
			{"signature-agent", func(r *SignedRequest) (time.Time, time.Duration) {
				if v.SignatureAgent == "" {
					r.Authority = "EXAMPLE.com:444"
					return now, window
				}
				r.Header.Set("Signature-Agent", strings.Replace(v.SignatureAgent, "signature-agent.test", "evil.test", 1))
				return now, window
			}, "does not verify"},
			{"expired", func(r *SignedRequest) (time.Time, time.Duration) {
				return time.UnixMilli(v.ExpiresMS).Add(time.Second), window
			}, "expired"},
			{"created in the future", func(r *SignedRequest) (time.Time, time.Duration) {
				return time.UnixMilli(v.CreatedMS).Add(-2 * ClockSkew), window
			}, "in the future"},
			{"window too long", func(r *SignedRequest) (time.Time, time.Duration) { return now, window - time.Second }, "window"},
			{"tag", func(r *SignedRequest) (time.Time, time.Duration) {
				r.Header.Set("Signature-Input", strings.Replace(v.SignatureInput, `tag="web-bot-auth"`, `tag="other"`, 1))
				return now, window
			}, "no Signature-Input with tag"},
			{"key id", func(r *SignedRequest) (time.Time, time.Duration) {
				r.Header.Set("Signature-Input", strings.Replace(v.SignatureInput, key.Thumbprint, "AAAA", 1))
				return now, window
			}, "unknown key id"},
			{"one byte", func(r *SignedRequest) (time.Time, time.Duration) {
				s := []byte(v.Signature)
				j := strings.Index(v.Signature, ":") + 5
				if s[j] == 'A' {
					s[j] = 'B'
				} else {
					s[j] = 'A'
				}
				r.Header.Set("Signature", string(s))
				return now, window
			}, "does not verify"},
		} {
			r := v.request(t)
			at, w := mut.f(r)
			if _, err := VerifySignature(r, at, w, keysOf(key)); err == nil || !strings.Contains(err.Error(), mut.want) {
				t.Errorf("vector %d, changed %s: %v, want %q", i, mut.name, err, mut.want)
			}
		}
	}
}

func TestJWKThumbprints(t *testing.T) {
	b, err := os.ReadFile("testdata/webbotauth/jwk-thumbprint-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct{ Name, JWK, Thumbprint string }
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		got, err := Thumbprint([]byte(v.JWK))
		if err != nil || got != v.Thumbprint {
			t.Errorf("%s: %q %v, want %q", v.Name, got, err, v.Thumbprint)
		}
	}
	k, err := os.ReadFile("testdata/webbotauth/rfc9421-test-key-ed25519.json")
	if err != nil {
		t.Fatal(err)
	}
	if pk, err := ParseJWK(k); err != nil || pk.Alg != "ed25519" || pk.Thumbprint != "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U" {
		t.Fatalf("%+v %v", pk, err)
	}
}

// BenchmarkVerifySignature is one Ed25519 verification, signature base
// construction and header parsing included.
func BenchmarkVerifySignature(b *testing.B) {
	var v vector
	for _, x := range loadVectors(b) {
		if strings.Contains(x.SignatureInput, "ed25519") && x.SignatureAgent != "" && strings.Contains(x.SignatureInput, "key=") {
			v = x
		}
	}
	key, err := ParseJWK(v.Key)
	if err != nil {
		b.Fatal(err)
	}
	r := v.request(b)
	now := time.UnixMilli(v.CreatedMS).Add(time.Minute)
	window := time.Duration(v.ExpiresMS-v.CreatedMS) * time.Millisecond
	keys := keysOf(key)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VerifySignature(r, now, window, keys); err != nil {
			b.Fatal(err)
		}
	}
}

// The Signature-Agent forms of testdata/webbotauth/web_bot_auth_signature_agent_v1.json
// (draft -00's types): a directory is an origin whose well-known directory
// is read, a jwks_uri a JWK Set read at its URI; cimd is not read (no
// agent).
func TestSignatureAgentForms(t *testing.T) {
	b, err := os.ReadFile("testdata/webbotauth/web_bot_auth_signature_agent_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct {
		Name, Header string
		Entries      []struct{ Label, URI, Type string }
	}
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		var f sfv.Field
		if err := f.ParseDictionary([]string{v.Header}); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		m, _ := f.Get(v.Entries[0].Label)
		got := agentURI(&f, &m.Item)
		want := ""
		if v.Entries[0].Type == "directory" || v.Entries[0].Type == "jwks_uri" {
			want = v.Entries[0].URI
		}
		if got != want {
			t.Errorf("%s: agent %q, want %q", v.Name, got, want)
		}
	}
}

// ECDSA P-256 keys verify (a key made here: no published vector uses one).
func TestECDSASignature(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := priv.PublicKey.Bytes()
	jwkJSON := fmt.Sprintf(`{"kty":"EC","crv":"P-256","x":%q,"y":%q}`, base64.RawURLEncoding.EncodeToString(raw[1:33]), base64.RawURLEncoding.EncodeToString(raw[33:]))
	pk, err := ParseJWK([]byte(jwkJSON))
	if err != nil || pk.Alg != "ecdsa-p256-sha256" {
		t.Fatalf("%+v %v", pk, err)
	}
	sr := &SignedRequest{Method: "GET", Scheme: "https", Authority: "example.com", Path: "/", Header: http.Header{}}
	created := time.Now()
	in := fmt.Sprintf(`sig1=("@authority" "@method");created=%d;expires=%d;keyid=%q;alg="ecdsa-p256-sha256";tag="web-bot-auth"`, created.Unix(), created.Add(time.Minute).Unix(), pk.Thumbprint)
	sh, m := parseInput(t, in, "sig1")
	base, err := signatureBase(nil, sr, sh, m)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(base)
	r, s, err := ecdsa.Sign(rand.Reader, priv, h[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	sr.Header.Set("Signature-Input", in)
	sr.Header.Set("Signature", "sig1=:"+base64.StdEncoding.EncodeToString(sig)+":")
	if _, err := VerifySignature(sr, created, time.Hour, keysOf(pk)); err != nil {
		t.Fatal(err)
	}
	sr.Method = "POST"
	if _, err := VerifySignature(sr, created, time.Hour, keysOf(pk)); err == nil {
		t.Fatal("a changed @method verified")
	}
}

// RSA keys outside 2048–8192 bits or with another exponent are refused:
// a huge key would cost seconds per verification.
func TestRSAKeyBounds(t *testing.T) {
	big := base64.RawURLEncoding.EncodeToString(make([]byte, 2048)) // 16384 bits
	for _, j := range []string{
		`{"kty":"RSA","n":"` + big + `","e":"AQAB"}`,
		`{"kty":"RSA","n":"` + base64.RawURLEncoding.EncodeToString(make([]byte, 300)) + `","e":"Aw"}`,
	} {
		if _, err := ParseJWK([]byte(j)); err == nil || !strings.Contains(err.Error(), "2048 to 8192 bits") {
			t.Errorf("err = %v", err)
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// A signature can cause only bounded work, whatever its headers: too many
// or repeated covered components and over-long signature headers are
// refused unread, an unknown key before any signature base is built, and
// a covered header of many lines is joined in one pass.
func TestSignatureWorkBounded(t *testing.T) {
	now := time.Now()
	params := fmt.Sprintf(`;created=%d;expires=%d;keyid="nobody";tag="web-bot-auth"`, now.Unix(), now.Add(time.Minute).Unix())
	req := func(components string) *SignedRequest {
		h := http.Header{}
		h.Set("Signature-Input", "sig1=("+components+")"+params)
		h.Set("Signature", "sig1=:AAAA:")
		for i := range 10000 { // a megabyte of one covered header, line by line
			h.Add("X-Big", fmt.Sprintf("%04d%s", i, strings.Repeat("v", 96)))
		}
		return &SignedRequest{Method: "GET", Scheme: "https", Authority: "example.com", Path: "/", Header: h}
	}
	none := func(string, string) (PublicKey, bool) { return PublicKey{}, false }
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	key := PublicKey{Alg: "ed25519", key: pub}
	known := func(string, string) (PublicKey, bool) { return key, true }
	many := `"@authority"`
	for i := range MaxCoveredComponents {
		many += fmt.Sprintf(` "x-big";bs;name="%d"`, i) // distinct, so only the count refuses
	}
	// Parameters RFC 9421 does not define are refused before any two
	// components are compared: byte sequences written differently (:AA==:
	// and :AB==: decode alike) made every comparison decode them.
	manyParams := `"@authority" "x-big"`
	for i := range 36 {
		manyParams += fmt.Sprintf(`;p%d=:A%c==:`, i, 'A'+i%2)
	}
	// Every pair compares all six defined parameters, the last different.
	sixParams := `"@authority"`
	for i := range MaxCoveredComponents - 1 {
		sixParams += fmt.Sprintf(` "x-big";sf;key="a";bs;req=?1;tr;name="%d"`, i)
	}
	for _, c := range []struct {
		name, components, want string
		keys                   KeyLookup
	}{
		{"too many components", many, "covered components, more than", none},
		{"a component twice, unknown key", `"@authority" "x-big" "x-big"`, "unknown key id", none},
		{"a component twice", `"@authority" "x-big" "x-big"`, "appears twice", known},
		{"a component twice, parameters in another order", `"@authority" "x-big";bs;key="a" "x-big";key="a";bs`, "appears twice", known},
		{"a component with parameters RFC 9421 does not define", manyParams, "does not define", known},
		{"many components of six parameters each", sixParams, "is not supported", known},
	} {
		var err error
		if n := allocated(func() { _, err = VerifySignature(req(c.components), now, time.Hour, c.keys) }); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		} else {
			t.Logf("%s: %d KB allocated, request headers included", c.name, n>>10)
		}
	}
	// Parameters that differ make different components.
	if _, err := VerifySignature(req(`"@authority" "x-big";bs;name="1" "x-big";bs;name="2" "x-big";bs "x-big";sf`), now, time.Hour, known); err == nil || strings.Contains(err.Error(), "twice") {
		t.Errorf("distinct components: %v", err)
	}
	// An unknown key: refused before the megabyte is joined.
	r := req(`"@authority" "x-big"`)
	var err error
	if n := allocated(func() { _, err = VerifySignature(r, now, time.Hour, none) }); err != ErrUnknownKey || n > 64<<10 {
		t.Fatalf("unknown key: %v after %d KB allocated", err, n>>10)
	}
	// A known key over the megabyte: the base is built in one pass.
	if n := allocated(func() { _, err = VerifySignature(r, now, time.Hour, known) }); err != ErrBadSignature || n > 8<<20 {
		t.Fatalf("a covered megabyte: %v after %d KB allocated", err, n>>10)
	}
	// Over-long signature headers are refused unread.
	big := req(`"@authority"`)
	big.Header.Set("Signature-Input", "sig1=(\"@authority\")"+params+strings.Repeat(" ", MaxSignatureHeader))
	if _, err := VerifySignature(big, now, time.Hour, none); err == nil || !strings.Contains(err.Error(), "more than the 8192 read") {
		t.Fatalf("an over-long Signature-Input: %v", err)
	}
}

// parseInput parses a Signature-Input and returns its member label.
func parseInput(t *testing.T, in, label string) (*sigHeaders, *sfv.Member) {
	t.Helper()
	h := new(sigHeaders)
	if err := h.input.ParseDictionary([]string{in}); err != nil {
		t.Fatal(err)
	}
	m, ok := h.input.Get(label)
	if !ok {
		t.Fatalf("no member %s in %s", label, in)
	}
	return h, m
}

// signWith signs sr under label with components (a Signature-Input inner
// list, e.g. `("@target-uri")`), appending to its Signature-Input and
// Signature headers; bad spoils the signature.
func signWith(t *testing.T, sr *SignedRequest, priv ed25519.PrivateKey, label, components string, bad bool) {
	t.Helper()
	now := time.Now()
	in := fmt.Sprintf(`%s;created=%d;expires=%d;keyid="k1";alg="ed25519";tag="web-bot-auth"`, components, now.Unix(), now.Add(time.Minute).Unix())
	h, m := parseInput(t, label+"="+in, label)
	if _, err := signatureAgent(sr, h, m); err != nil {
		t.Fatal(err)
	}
	base, err := signatureBase(nil, sr, h, m)
	if err != nil {
		base = []byte("no base: " + err.Error()) // a signature the verifier refuses before it
	}
	sig := ed25519.Sign(priv, base)
	if bad {
		sig[0] ^= 1
	}
	sr.Header.Add("Signature-Input", label+"="+in)
	sr.Header.Add("Signature", label+"=:"+base64.StdEncoding.EncodeToString(sig)+":")
}

// The draft's rules that independent signers follow: @target-uri in place
// of @authority, every web-bot-auth signature tried, default ports out of
// @authority, Signature-Agent members with a path ignored.
func TestSignatureConformance(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	keys := func(_, keyid string) (PublicKey, bool) { return PublicKey{Alg: "ed25519", key: pub}, keyid == "k1" }
	mk := func(scheme, authority string) *SignedRequest {
		return &SignedRequest{Method: "GET", Scheme: scheme, Authority: authority, Path: "/page", Query: "a=1", Header: http.Header{}}
	}
	// @target-uri alone.
	r := mk("https", "example.com")
	signWith(t, r, priv, "sig1", `("@target-uri")`, false)
	if _, err := VerifySignature(r, time.Now(), time.Hour, keys); err != nil {
		t.Errorf("@target-uri in place of @authority: %v", err)
	}
	// Neither: refused.
	r = mk("https", "example.com")
	signWith(t, r, priv, "sig1", `("@method")`, false)
	if _, err := VerifySignature(r, time.Now(), time.Hour, keys); err == nil || !strings.Contains(err.Error(), "neither @authority nor @target-uri") {
		t.Errorf("no authority covered: %v", err)
	}
	// Two signatures, the first bad: the second is tried and verifies.
	r = mk("https", "example.com")
	signWith(t, r, priv, "a", `("@authority")`, true)
	signWith(t, r, priv, "b", `("@authority")`, false)
	if s, err := VerifySignature(r, time.Now(), time.Hour, keys); err != nil || s.Label != "b" {
		t.Errorf("two signatures, the second good: %+v %v", s, err)
	}
	// Signed for example.com, sent with Host example.com:80 on http (and
	// :443 on https): the default port is not part of @authority.
	for _, c := range []struct{ scheme, signed, sent string }{{"http", "example.com", "example.com:80"}, {"https", "example.com", "EXAMPLE.com:443"}} {
		r = mk(c.scheme, c.signed)
		signWith(t, r, priv, "sig1", `("@authority" "@target-uri")`, false)
		r.Authority = c.sent
		if _, err := VerifySignature(r, time.Now(), time.Hour, keys); err != nil {
			t.Errorf("signed for %s, sent to %s: %v", c.signed, c.sent, err)
		}
	}
	// A Signature-Agent member: an origin names its directory, a URI
	// with a path a JWK Set (-01); a query, another scheme or a type that
	// the URI does not fit names no agent.
	for agent, want := range map[string]string{
		`"https://bot.example"`:                          "https://bot.example",
		`"https://bot.example/"`:                         "https://bot.example",
		`"https://bot.example/keys.json"`:                "https://bot.example/keys.json",
		`"https://bot.example/keys.json";type=jwks_uri`:  "https://bot.example/keys.json",
		`"https://bot.example/keys.json";type=directory`: "",
		`"https://bot.example";type=jwks_uri`:            "",
		`"https://bot.example/?x=1"`:                     "",
		`"http://bot.example"`:                           "",
		`"https://bot.example";type=other`:               "",
	} {
		var f sfv.Field
		if err := f.ParseDictionary([]string{"sig1=" + agent}); err != nil {
			t.Fatal(err)
		}
		m, _ := f.Get("sig1")
		if got := agentURI(&f, &m.Item); got != want {
			t.Errorf("Signature-Agent %s: agent %q, want %q", agent, got, want)
		}
	}
}

// Each signature-agent component of a signature has its own value in the
// signature base (RFC 9421 §2.1.2): the member its key names, or the
// whole header without a key.
func TestSignatureBaseAgentComponents(t *testing.T) {
	sr := &SignedRequest{Method: "GET", Scheme: "https", Authority: "Example.com:443", Path: "/x", Header: http.Header{}}
	sr.Header.Set("Signature-Agent", `a="https://a.example", b="https://b.example";type=directory`)
	in := `sig1=("@authority" "signature-agent";key="a" "signature-agent";key="b" "signature-agent");created=1;keyid="k"`
	h, m := parseInput(t, in, "sig1")
	agent, err := signatureAgent(sr, h, m)
	if err != nil || agent != "https://a.example" {
		t.Fatalf("agent %q %v", agent, err)
	}
	base, err := signatureBase(nil, sr, h, m)
	if err != nil {
		t.Fatal(err)
	}
	want := `"@authority": example.com
"signature-agent";key="a": "https://a.example"
"signature-agent";key="b": "https://b.example";type=directory
"signature-agent": a="https://a.example", b="https://b.example";type=directory
"@signature-params": ("@authority" "signature-agent";key="a" "signature-agent";key="b" "signature-agent");created=1;keyid="k"`
	if string(base) != want {
		t.Fatalf("base:\n%s\nwant:\n%s", base, want)
	}
	// A key the header does not have fails, whichever component names it.
	h, m = parseInput(t, `sig1=("@authority" "signature-agent";key="a" "signature-agent";key="c");created=1;keyid="k"`, "sig1")
	if _, err := signatureBase(nil, sr, h, m); err == nil || !strings.Contains(err.Error(), `no member "c"`) {
		t.Fatalf("err %v", err)
	}
}

// TestComponentComparisonBounded: comparing every pair of covered
// components (to refuse one covered twice) stays a few allocations even
// when every pair must compare all six parameters RFC 9421 defines; a
// component with any other parameter is refused before the comparison
// (its byte sequences, written differently but equal, used to be decoded
// for every pair: 11,937 allocations per request in this test).
func TestComponentComparisonBounded(t *testing.T) {
	now := time.Now()
	params := fmt.Sprintf(`;created=%d;expires=%d;keyid="k";tag="web-bot-auth"`, now.Unix(), now.Add(time.Minute).Unix())
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	known := func(string, string) (PublicKey, bool) { return PublicKey{Alg: "ed25519", key: pub}, true }
	six := `"@authority"`
	for i := range MaxCoveredComponents - 1 {
		six += fmt.Sprintf(` "x-big";sf;key="a";bs;req=?1;tr;name="%d"`, i)
	}
	undefined := `"@authority"`
	for i := range MaxCoveredComponents - 1 {
		undefined += ` "x-big"`
		for j := range 30 {
			undefined += fmt.Sprintf(`;p%d=:A%c==:`, j, 'A'+(i+j)%2)
		}
		undefined += fmt.Sprintf(`;n=%d`, i)
	}
	for _, c := range []struct{ name, components, want string }{
		{"six parameters on every component", six, "is not supported"},
		{"parameters RFC 9421 does not define", undefined, "does not define"},
	} {
		h := http.Header{}
		h.Set("Signature-Input", "sig1=("+c.components+")"+params)
		h.Set("Signature", "sig1=:AAAA:")
		h.Set("X-Big", "v")
		r := &SignedRequest{Method: "GET", Scheme: "https", Authority: "example.com", Path: "/", Header: h}
		if _, err := VerifySignature(r, now, time.Hour, known); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if n := testing.AllocsPerRun(50, func() { VerifySignature(r, now, time.Hour, known) }); n > 64 {
			t.Errorf("%s: %.0f allocations per request, want at most 64", c.name, n)
		}
	}
}

// TestSignErrorsNameTheField: Sign refuses what it cannot put into a
// signature with an error that names the argument.
func TestSignErrorsNameTheField(t *testing.T) {
	key, err := PrivateJWK(testkeys.PrivateJWK)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, c := range []struct {
		key                 ed25519.PrivateKey
		keyid, agent, nonce string
		created, expires    time.Time
		want                string
	}{
		{key[:10], "kid", "", "n", now, now.Add(time.Minute), "key: 10 bytes"},
		{key, "", "", "n", now, now.Add(time.Minute), "keyid: empty"},
		{key, "k\nid", "", "n", now, now.Add(time.Minute), "keyid: byte 0xa at 1"},
		{key, "kid", "https://bot.example/\x01", "n", now, now.Add(time.Minute), "agent: byte 0x1"},
		{key, "kid", "", "nonce-é", now, now.Add(time.Minute), "nonce: byte 0xc3"},
		{key, "kid", "", "n", now, now.Add(-time.Minute), "expires"},
	} {
		sr := &SignedRequest{Method: "GET", Scheme: "https", Authority: "example.com", Path: "/", Header: http.Header{}}
		err := Sign(sr, c.key, c.keyid, c.agent, c.created, c.expires, c.nonce)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "identity: sign: ") {
			t.Errorf("%q %q %q: %v, want an error with %q", c.keyid, c.agent, c.nonce, err, c.want)
		}
	}
}
