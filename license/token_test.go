package license

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testlicense"
)

// clock is a Verifier clock that tests move forward.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

const (
	site    = "https://example.com"
	pageURL = "https://example.com/articles/x?page=2"
)

func setup(t *testing.T) (*testlicense.Server, *Verifier, *clock) {
	t.Helper()
	srv := testlicense.Start(t)
	c := &clock{}
	return srv, NewVerifier(VerifierConfig{Now: c.Now}), c
}

// wantInvalid fails unless err wraps ErrInvalidToken and holds why.
func wantInvalid(t *testing.T, err error, why string) {
	t.Helper()
	if !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("Verify: %v, want an invalid token (%s)", err, why)
	}
	if !strings.Contains(err.Error(), why) {
		t.Errorf("Verify: %q, want it to say %q", err, why)
	}
}

func TestVerifyJWT(t *testing.T) {
	ctx := context.Background()
	srv, v, _ := setup(t)
	now := time.Now()
	claims := func(change map[string]any) map[string]any { return srv.Claims(site, change) }
	tests := []struct {
		name  string
		token string
		url   string
		why   string // "" for valid
	}{
		{"valid", srv.Token(site, time.Hour), pageURL, ""},
		{"valid, origin with a slash", srv.Token(site+"/", time.Hour), pageURL, ""},
		{"valid, path prefix", srv.Token(site+"/articles", time.Hour), "https://example.com/articles", ""},
		{"valid, path prefix and more", srv.Token(site+"/articles", time.Hour), pageURL, ""},
		{"valid, path prefix and query", srv.Token(site+"/articles", time.Hour), "https://example.com/articles?x", ""},
		{"valid, case and default port", srv.Token("HTTPS://EXAMPLE.com:443", time.Hour), pageURL, ""},
		{"valid, aud array", srv.Sign(claims(map[string]any{"aud": []string{"https://other.example", site + "/articles/"}})), pageURL, ""},
		{"valid, iss with a slash", srv.Sign(claims(map[string]any{"iss": srv.URL + "/"})), pageURL, ""},
		{"valid, no iss", srv.Sign(claims(map[string]any{"iss": nil})), pageURL, ""},
		{"valid, fractional exp", srv.Sign(claims(map[string]any{"exp": float64(now.Add(time.Hour).UnixMilli()) / 1000})), pageURL, ""},
		{"valid within the skew", srv.Token(site, -30*time.Second), pageURL, ""},
		{"expired", srv.Token(site, -2*time.Minute), pageURL, "token expired"},
		{"another site", srv.Token("https://other.example", time.Hour), pageURL, `audience "https://other.example" does not cover`},
		{"another port", srv.Token("https://example.com:8443", time.Hour), pageURL, "does not cover"},
		{"another scheme", srv.Token("http://example.com", time.Hour), pageURL, "does not cover"},
		{"not at a path boundary", srv.Token(site+"/art", time.Hour), pageURL, "does not cover"},
		{"another path", srv.Token(site+"/news/", time.Hour), pageURL, "does not cover"},
		{"bare host", srv.Token("example.com", time.Hour), pageURL, "does not cover"},
		{"aud with a query", srv.Token(site+"/articles/x?page=1", time.Hour), pageURL, "does not cover"},
		{"no aud", srv.Sign(claims(map[string]any{"aud": nil})), pageURL, "no aud claim"},
		{"empty aud", srv.Sign(claims(map[string]any{"aud": []string{}})), pageURL, "no aud claim"},
		{"aud of numbers", srv.Sign(claims(map[string]any{"aud": []int{1}})), pageURL, "aud is not a string"},
		{"no exp", srv.Sign(claims(map[string]any{"exp": nil})), pageURL, "no exp claim"},
		{"exp a string", srv.Sign(claims(map[string]any{"exp": "tomorrow"})), pageURL, "exp is not a number"},
		{"not yet valid", srv.Sign(claims(map[string]any{"nbf": now.Add(10 * time.Minute).Unix()})), pageURL, "not valid before"},
		{"nbf within the skew", srv.Sign(claims(map[string]any{"nbf": now.Add(30 * time.Second).Unix()})), pageURL, ""},
		{"another issuer", srv.Sign(claims(map[string]any{"iss": "https://evil.example"})), pageURL, `issued by "https://evil.example"`},
		{"bad signature", testlicense.TamperSignature(srv.Token(site, time.Hour)), pageURL, "bad signature"},
		{"alg none", testlicense.Unsigned(`{"alg":"none","typ":"JWT"}`, claims(nil)), pageURL, `algorithm "none" is not accepted`},
		{"alg HS256", testlicense.Unsigned(`{"alg":"HS256","kid":"`+srv.KeyID()+`"}`, claims(nil)) + "c2ln", pageURL, `algorithm "HS256" is not accepted`},
		{"crit", testlicense.Unsigned(`{"alg":"ES256","crit":["exp"],"exp":1}`, claims(nil)) + "c2ln", pageURL, "crit"},
		{"unknown key", testlicense.SignWith(testlicense.ECKey(), "nobody", claims(nil)), pageURL, `unknown key id "nobody"`},
		{"no key of the alg", testlicense.SignWith(testlicense.EdKey(), "", claims(nil)), pageURL, "no EdDSA key"},
		{"unsigned ES256", testlicense.Unsigned(`{"alg":"ES256"}`, claims(nil)), pageURL, "JWS without a signature"},
		{"header not JSON", base64.RawURLEncoding.EncodeToString([]byte("{not json")) + ".e30.c2ln", pageURL, "malformed JWS header"},
		{"payload not base64", "eyJhbGciOiJFUzI1NiJ9.a.c2ln", pageURL, "malformed JWS payload"},
		{"signature not base64", srv.Token(site, time.Hour) + "AAA", pageURL, "malformed JWS signature"},
		{"too long", strings.Repeat("a", MaxTokenLength+1), pageURL, "more than 4096"},
		{"empty", "", pageURL, "empty token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Verify(ctx, srv.URL, tt.url, tt.token)
			if tt.why == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			wantInvalid(t, err, tt.why)
		})
	}
	if n := srv.Requests("/key"); n != 1 {
		t.Errorf("%d key fetches, want 1", n)
	}
	if n := srv.Requests("/introspect"); n != 0 {
		t.Errorf("%d introspections of JWTs, want 0", n)
	}
}

// TestVerifyAlgorithms checks EdDSA (also named Ed25519) and RS256
// tokens, with and without a kid.
func TestVerifyAlgorithms(t *testing.T) {
	ctx := context.Background()
	srv, v, _ := setup(t)
	ed, rs := testlicense.EdKey(), testlicense.RSAKey()
	srv.Publish("ed", ed.Public())
	srv.Publish("rs", rs.Public())
	claims := map[string]any{"aud": site, "exp": time.Now().Add(time.Hour).Unix()}
	for name, tok := range map[string]string{
		"EdDSA":        testlicense.SignWith(ed, "ed", claims),
		"EdDSA no kid": testlicense.SignWith(ed, "", claims),
		"RS256":        testlicense.SignWith(rs, "rs", claims),
		"RS256 no kid": testlicense.SignWith(rs, "", claims),
		"ES256 no kid": testlicense.SignWith(testlicense.ECKey(), "", claims),
	} {
		err := v.Verify(ctx, srv.URL, pageURL, tok)
		if name == "ES256 no kid" {
			wantInvalid(t, err, "bad signature")
		} else if err != nil {
			t.Errorf("%s: Verify: %v", name, err)
		}
	}
	// A key published for EdDSA does not verify an RS256 token of its kid.
	wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, testlicense.SignWith(rs, "ed", claims)), `unknown key id "ed"`)
	// RFC 9864's "Ed25519" names EdDSA on Ed25519 (jose 6 signs with it).
	enc := base64.RawURLEncoding
	payload, _ := json.Marshal(claims)
	signed := enc.EncodeToString([]byte(`{"alg":"Ed25519","kid":"ed"}`)) + "." + enc.EncodeToString(payload)
	if err := v.Verify(ctx, srv.URL, pageURL, signed+"."+enc.EncodeToString(ed25519.Sign(ed, []byte(signed)))); err != nil {
		t.Errorf("alg Ed25519: Verify: %v", err)
	}
}

func TestVerifyRotation(t *testing.T) {
	ctx := context.Background()
	srv, v, clk := setup(t)
	old := srv.Token(site, time.Hour)
	if err := v.Verify(ctx, srv.URL, pageURL, old); err != nil {
		t.Fatal(err)
	}
	srv.Rotate()
	fresh := srv.Token(site, time.Hour)
	// The keys were fetched less than a minute ago: the new kid is
	// unknown for now.
	wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, fresh), "unknown key id")
	if n := srv.Requests("/key"); n != 1 {
		t.Fatalf("%d key fetches, want 1", n)
	}
	clk.Advance(61 * time.Second)
	fresher := srv.Token(site, time.Hour)
	if err := v.Verify(ctx, srv.URL, pageURL, fresher); err != nil {
		t.Fatalf("after a minute: %v", err)
	}
	if n := srv.Requests("/key"); n != 2 {
		t.Fatalf("%d key fetches, want 2", n)
	}
	// The token refused before is refused for a minute, then accepted.
	if err := v.Verify(ctx, srv.URL, pageURL, fresh); err != nil {
		t.Errorf("the rejection outlived its minute: %v", err)
	}
	if err := v.Verify(ctx, srv.URL, pageURL, old); err != nil {
		t.Errorf("the previous key's token: %v", err)
	}
	// Unknown kids do not make the verifier fetch more than once a minute.
	for range 10 {
		v.Verify(ctx, srv.URL, pageURL, testlicense.SignWith(testlicense.ECKey(), "random-"+randomKid(), map[string]any{"aud": site, "exp": time.Now().Add(time.Hour).Unix()}))
	}
	if n := srv.Requests("/key"); n != 2 {
		t.Errorf("%d key fetches after unknown kids, want 2", n)
	}
	// After an hour the keys are fetched again.
	clk.Advance(time.Hour)
	if err := v.Verify(ctx, srv.URL, pageURL, srv.Token(site, 3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests("/key"); n != 3 {
		t.Errorf("%d key fetches an hour later, want 3", n)
	}
}

func TestVerifyOpaque(t *testing.T) {
	ctx := context.Background()
	srv, v, clk := setup(t)
	tok := srv.Opaque(site, time.Hour)
	for range 3 {
		if err := v.Verify(ctx, srv.URL, pageURL, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Requests("/introspect"); n != 1 {
		t.Errorf("%d introspections, want 1", n)
	}
	// The server bound its answer to the resource: another URL asks again.
	if err := v.Verify(ctx, srv.URL, site+"/other", tok); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests("/introspect"); n != 2 {
		t.Errorf("%d introspections, want 2", n)
	}
	wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, srv.Opaque("https://other.example", time.Hour)), "does not permit this resource")
	// Tokens with two dots that are no JWS (their first segment is not
	// a JSON object, or they hold other characters) are opaque.
	for _, tok := range []string{"abc.def.ghi", srv.Token(site, time.Hour) + "="} {
		before := srv.Requests("/introspect")
		wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, tok), "not active")
		if n := srv.Requests("/introspect") - before; n != 1 {
			t.Errorf("%q: %d introspections, want 1", tok, n)
		}
	}
	// Inactive: unknown, expired.
	bad := "never-issued"
	wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, bad), "not active")
	wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, srv.Opaque(site, -time.Minute)), "not active")
	before := srv.Requests("/introspect")
	for range 5 {
		wantInvalid(t, v.Verify(ctx, srv.URL, site+"/elsewhere", bad), "not active")
	}
	if n := srv.Requests("/introspect") - before; n != 0 {
		t.Errorf("%d more introspections of a known bad token, want 0", n)
	}
	clk.Advance(61 * time.Second)
	wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, bad), "not active")
	if n := srv.Requests("/introspect") - before; n != 1 {
		t.Errorf("%d more introspections after a minute, want 1", n)
	}
	// Not a b64token: refused without asking.
	before = srv.Requests("/introspect")
	wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, "a b"), "malformed token")
	wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, "a.b.c.d=x"), "malformed token")
	if n := srv.Requests("/introspect") - before; n != 0 {
		t.Errorf("%d introspections of malformed tokens, want 0", n)
	}
	// A valid answer is reused for at most five minutes.
	before = srv.Requests("/introspect")
	v.Verify(ctx, srv.URL, pageURL, tok)
	clk.Advance(6 * time.Minute)
	if err := v.Verify(ctx, srv.URL, pageURL, tok); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests("/introspect") - before; n != 2 {
		t.Errorf("%d introspections over six minutes, want 2", n)
	}
}

func TestVerifyCache(t *testing.T) {
	ctx := context.Background()
	srv, v, clk := setup(t)
	tok := srv.Token(site, 2*time.Minute)
	if err := v.Verify(ctx, srv.URL, pageURL, tok); err != nil {
		t.Fatal(err)
	}
	srv.SetDown(true) // a cached result needs no server
	if err := v.Verify(ctx, srv.URL, pageURL, tok); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests("/key"); n != 1 {
		t.Errorf("%d key fetches, want 1", n)
	}
	// The audience is checked per request.
	wantInvalid(t, v.Verify(ctx, srv.URL, "https://other.example/", tok), "does not cover")
	// The cached token expires.
	clk.Advance(4 * time.Minute)
	wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, tok), "expired")
	// Another server's cache entry is another: the same token under
	// another server is checked there (and fails, as it is down).
	tok = anyIssuer(srv, time.Hour)
	if err := v.Verify(ctx, srv.URL, pageURL, tok); err != nil {
		t.Fatal(err)
	}
	srv2 := testlicense.Start(t)
	srv2.SetDown(true)
	err := v.Verify(ctx, srv2.URL, pageURL, tok)
	if err == nil || errors.Is(err, ErrInvalidToken) {
		t.Errorf("under another server: %v, want a failure to check", err)
	}
}

// TestVerifyConcurrent checks that concurrent checks of a new token share
// one introspection.
func TestVerifyConcurrent(t *testing.T) {
	ctx := context.Background()
	srv, v, _ := setup(t)
	tok := srv.Opaque(site, time.Hour)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 20 {
		wg.Go(func() {
			if err := v.Verify(ctx, srv.URL, pageURL, tok); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Errorf("%d checks failed", failed.Load())
	}
	if n := srv.Requests("/introspect"); n != 1 {
		t.Errorf("%d introspections, want 1", n)
	}
}

func TestVerifyServerDown(t *testing.T) {
	ctx := context.Background()
	srv, v, clk := setup(t)
	srv.SetDown(true)
	for _, tok := range []string{srv.Token(site, time.Hour), srv.Opaque(site, time.Hour)} {
		err := v.Verify(ctx, srv.URL, pageURL, tok)
		if err == nil || errors.Is(err, ErrInvalidToken) {
			t.Fatalf("Verify with the server down: %v, want a failure to check", err)
		}
		if !strings.Contains(err.Error(), "status 503") {
			t.Errorf("Verify: %q, want the status", err)
		}
	}
	// The failed key fetch is not repeated within the minute.
	v.Verify(ctx, srv.URL, pageURL, srv.Token(site, time.Hour))
	if n := srv.Requests("/key"); n != 1 {
		t.Errorf("%d key fetches, want 1", n)
	}
	srv.SetDown(false)
	clk.Advance(61 * time.Second)
	for _, tok := range []string{srv.Token(site, time.Hour), srv.Opaque(site, time.Hour)} {
		if err := v.Verify(ctx, srv.URL, pageURL, tok); err != nil {
			t.Fatalf("Verify with the server back: %v", err)
		}
	}
	// Keys fetched once are still used when the server fails later.
	srv.SetDown(true)
	clk.Advance(2 * time.Hour)
	if err := v.Verify(ctx, srv.URL, pageURL, srv.Token(site, 3*time.Hour)); err != nil {
		t.Errorf("Verify with stale keys: %v", err)
	}
	// A server that cannot be reached.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	err := v.Verify(ctx, dead.URL, pageURL, anyIssuer(srv, 3*time.Hour))
	if err == nil || errors.Is(err, ErrInvalidToken) {
		t.Errorf("Verify against a closed port: %v, want a failure to check", err)
	}
}

// TestVerifyNoRedirect checks that the verifier calls the licence server
// only: a redirect is an error, not followed.
func TestVerifyNoRedirect(t *testing.T) {
	ctx := context.Background()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	srv := testlicense.Start(t)
	v := NewVerifier(VerifierConfig{Client: &http.Client{}})
	for _, tok := range []string{anyIssuer(srv, time.Hour), "opaque"} {
		err := v.Verify(ctx, redirect.URL, pageURL, tok)
		if err == nil || errors.Is(err, ErrInvalidToken) {
			t.Errorf("Verify: %v, want a failure to check", err)
		}
	}
	if elsewhere.Load() != 0 {
		t.Errorf("the verifier followed a redirect")
	}
}

func TestVerifyArguments(t *testing.T) {
	ctx := context.Background()
	srv, v, _ := setup(t)
	tok := srv.Token(site, time.Hour)
	for _, server := range []string{"", "/olp", "ftp://l.example", "https://l.example/?x"} {
		if err := v.Verify(ctx, server, pageURL, tok); err == nil || errors.Is(err, ErrInvalidToken) {
			t.Errorf("server %q: %v, want an error that is not the token's", server, err)
		}
	}
	for _, u := range []string{"", "/articles/x", "example.com/x"} {
		if err := v.Verify(ctx, srv.URL, u, tok); err == nil || errors.Is(err, ErrInvalidToken) {
			t.Errorf("request URL %q: %v, want an error that is not the token's", u, err)
		}
	}
	// A trailing slash on the server's URL changes nothing.
	if err := v.Verify(ctx, srv.URL+"/", pageURL, tok); err != nil {
		t.Errorf("server with a slash: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := v.Verify(cctx, srv.URL, pageURL, srv.Opaque(site, time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// anyIssuer returns a token of srv for site without iss, which any
// licence server may vouch for.
func anyIssuer(srv *testlicense.Server, ttl time.Duration) string {
	return srv.Sign(map[string]any{"aud": site, "exp": time.Now().Add(ttl).Unix()})
}

func randomKid() string {
	var b [6]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// TestCached: Cached answers what Verify would from the cache alone, and
// says when Verify would have to ask the licence server (the guard then
// prepares the outbound call; before, it did so for every request,
// looking the site's host up in DNS each time).
func TestCached(t *testing.T) {
	ctx := context.Background()
	srv, v, _ := setup(t)
	valid, expired := srv.Token(site, time.Hour), srv.Token(site, -time.Hour)
	for _, tok := range []string{valid, expired} {
		if ok, _ := v.Cached(srv.URL, pageURL, tok); ok {
			t.Fatal("Cached before any Verify: true")
		}
	}
	if err := v.Verify(ctx, srv.URL, pageURL, valid); err != nil {
		t.Fatal(err)
	}
	if ok, err := v.Cached(srv.URL, pageURL, valid); !ok || err != nil {
		t.Errorf("Cached after Verify: %v, %v; want true, nil", ok, err)
	}
	if ok, err := v.Cached(srv.URL, "https://other.example/x", valid); !ok || !errors.Is(err, ErrInvalidToken) {
		t.Errorf("Cached for another site: %v, %v; want true, an invalid token", ok, err)
	}
	wantInvalid(t, v.Verify(ctx, srv.URL, pageURL, expired), "expired")
	if ok, err := v.Cached(srv.URL, pageURL, expired); !ok || !errors.Is(err, ErrInvalidToken) {
		t.Errorf("Cached, an expired token checked before: %v, %v; want true, an invalid token", ok, err)
	}
	if ok, _ := v.Cached("ftp://x", pageURL, valid); ok {
		t.Error("Cached of a server Verify refuses: true")
	}
}

// TestIntrospectionWithoutAudience: an introspection answer with neither
// aud nor permitted judged the token for the one resource asked about: it
// is not reused for another page (which could be another site's).
func TestIntrospectionWithoutAudience(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"active":true,"exp":`+strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)+`}`)
	}))
	defer srv.Close()
	v := NewVerifier(VerifierConfig{})
	ctx := context.Background()
	for _, u := range []string{pageURL, pageURL, "https://other.example/x"} {
		if err := v.Verify(ctx, srv.URL, u, "opaque-token"); err != nil {
			t.Fatalf("Verify %s: %v", u, err)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d introspections for two resources (one asked twice), want 2", n)
	}
}
