// Package testlicense runs an RSL licence server on a loopback port for
// tests of licence tokens (package license): it issues signed JSON Web
// Tokens and opaque tokens, serves the Open License Protocol's token
// endpoint (OAuth 2.0 client credentials), token introspection (RFC 7662)
// and its public keys as a JWK Set, counts the requests it gets, and can
// rotate its key or be made to fail.
//
// Its endpoints, relative to URL:
//   - POST /token: form grant_type=client_credentials, client_id and
//     client_secret (or HTTP Basic), and resource, an absolute URL whose
//     '*' or '$' and what follows are cut off to make the token's aud;
//     it answers {"access_token", "token_type": "License", "expires_in"}
//     with a JWT valid for an hour, or an OAuth error;
//   - POST /introspect: form token and optional resource; it answers
//     {"active": false} for a token it did not issue or that expired, and
//     otherwise active, token_type, iss, aud, exp and iat, with the OLP
//     "permitted" (whether aud covers resource) when resource is given;
//   - GET /key: the current and the previous signing key, as a JWK Set.
package testlicense

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TokenTTL is the lifetime of the tokens that POST /token issues.
const TokenTTL = time.Hour

// Server is a licence server on 127.0.0.1.
type Server struct {
	// URL is the server's base URL ("http://127.0.0.1:port"), the value of
	// a <content server> attribute.
	URL string

	mu      sync.Mutex
	keys    []signingKey // the last one signs
	extra   []publicKey  // published by Publish
	opaque  map[string]opaqueToken
	clients map[string]string
	down    bool

	counts sync.Map // path -> *atomic.Int64
}

type signingKey struct {
	kid  string
	priv *ecdsa.PrivateKey
}

type publicKey struct {
	kid string
	pub crypto.PublicKey
}

type opaqueToken struct {
	aud      string
	iat, exp time.Time
}

// Start starts a server that stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{opaque: map[string]opaqueToken{}, clients: map[string]string{}}
	s.Rotate()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /introspect", s.introspect)
	mux.HandleFunc("GET /key", s.key)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.counter(r.URL.Path).Add(1)
		s.mu.Lock()
		down := s.down
		s.mu.Unlock()
		if down {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "temporarily_unavailable"})
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *Server) counter(path string) *atomic.Int64 {
	c, ok := s.counts.Load(path)
	if !ok {
		c, _ = s.counts.LoadOrStore(path, new(atomic.Int64))
	}
	return c.(*atomic.Int64)
}

// Requests returns the number of requests for path ("/key", "/introspect",
// "/token") so far, failed ones included.
func (s *Server) Requests(path string) int64 { return s.counter(path).Load() }

// SetDown makes every endpoint answer 503 (down) or work again.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// Client registers a client of POST /token with its secret.
func (s *Server) Client(id, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[id] = secret
}

// Rotate makes a new ES256 signing key with a new key id. GET /key serves
// it with the previous one, so that tokens already issued stay valid.
func (s *Server) Rotate() {
	priv := ECKey()
	var id [6]byte
	rand.Read(id[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, signingKey{kid: "k-" + hex.EncodeToString(id[:]), priv: priv})
}

// KeyID returns the key id of the current signing key.
func (s *Server) KeyID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1].kid
}

// Publish adds a public key (*ecdsa.PublicKey on P-256, ed25519.PublicKey
// or *rsa.PublicKey) to those GET /key serves, for tokens a test signs
// itself with SignWith.
func (s *Server) Publish(kid string, pub crypto.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra = append(s.extra, publicKey{kid: kid, pub: pub})
}

// Token returns a JWT signed with the current key (ES256, with its kid)
// whose claims are iss (URL), aud, iat (now), exp (now + ttl) and a random
// jti. A negative ttl gives an expired token.
func (s *Server) Token(aud string, ttl time.Duration) string {
	return s.Sign(s.Claims(aud, map[string]any{"exp": time.Now().Add(ttl).Unix(), "jti": randomString(12)}))
}

// Sign returns a JWT of the claims signed with the current key (ES256,
// with its kid).
func (s *Server) Sign(claims map[string]any) string {
	s.mu.Lock()
	k := s.keys[len(s.keys)-1]
	s.mu.Unlock()
	return SignWith(k.priv, k.kid, claims)
}

// SignWith returns a JWT of the claims signed with key: ES256 for an ECDSA
// P-256 key, EdDSA for an Ed25519 key, RS256 for an RSA key. kid is left
// out of the header when it is "".
func SignWith(key crypto.Signer, kid string, claims any) string {
	header := map[string]any{"typ": "JWT"}
	if kid != "" {
		header["kid"] = kid
	}
	switch key.(type) {
	case *ecdsa.PrivateKey:
		header["alg"] = "ES256"
	case ed25519.PrivateKey:
		header["alg"] = "EdDSA"
	case *rsa.PrivateKey:
		header["alg"] = "RS256"
	default:
		panic(fmt.Sprintf("testlicense: unsupported key %T", key))
	}
	h, err := json.Marshal(header)
	if err != nil {
		panic(err)
	}
	c, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	signed := b64(h) + "." + b64(c)
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		d := sha256.Sum256([]byte(signed))
		r, s, err := ecdsa.Sign(rand.Reader, k, d[:])
		if err != nil {
			panic(err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, []byte(signed))
	case *rsa.PrivateKey:
		d := sha256.Sum256([]byte(signed))
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, d[:])
		if err != nil {
			panic(err)
		}
	}
	return signed + "." + b64(sig)
}

// Opaque returns a random opaque token that POST /introspect reports as
// active, with aud, until ttl has passed.
func (s *Server) Opaque(aud string, ttl time.Duration) string {
	tok := "olp_" + randomString(24)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opaque[tok] = opaqueToken{aud: aud, iat: now, exp: now.Add(ttl)}
	return tok
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	want, known := s.clients[id]
	s.mu.Unlock()
	if id == "" || !known || subtle.ConstantTimeCompare([]byte(secret), []byte(want)) != 1 {
		if basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="license"`)
		}
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "client_credentials":
	case "":
		oauthError(w, http.StatusBadRequest, "invalid_request", "no grant_type")
		return
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only client_credentials is supported")
		return
	}
	resource := r.PostForm.Get("resource")
	if resource == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "no resource")
		return
	}
	aud := resource
	if i := strings.IndexAny(aud, "*$"); i >= 0 {
		aud = aud[:i]
	}
	if !strings.HasPrefix(aud, "http://") && !strings.HasPrefix(aud, "https://") || len(aud) <= len("https://") {
		oauthError(w, http.StatusBadRequest, "invalid_resource", "resource must be an absolute http(s) URL")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": s.Token(aud, TokenTTL),
		"token_type":   "License",
		"expires_in":   int(TokenTTL / time.Second),
	})
}

func (s *Server) introspect(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	tok, resource := r.PostForm.Get("token"), r.PostForm.Get("resource")
	if tok == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "no token")
		return
	}
	now := time.Now()
	s.mu.Lock()
	o, ok := s.opaque[tok]
	s.mu.Unlock()
	if !ok {
		o, ok = s.readJWT(tok)
	}
	if !ok || !now.Before(o.exp) {
		writeJSON(w, http.StatusOK, map[string]any{"active": false})
		return
	}
	answer := map[string]any{
		"active": true, "token_type": "License", "iss": s.URL,
		"aud": o.aud, "exp": o.exp.Unix(), "iat": o.iat.Unix(),
	}
	if resource != "" {
		answer["resource"] = resource
		answer["permitted"] = covers(o.aud, resource)
		if !covers(o.aud, resource) {
			answer["reason"] = "License does not cover this resource"
		}
	}
	writeJSON(w, http.StatusOK, answer)
}

// readJWT reads a JWT this server signed (with any of its keys).
func (s *Server) readJWT(tok string) (opaqueToken, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return opaqueToken{}, false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return opaqueToken{}, false
	}
	d := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	rr, ss := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	s.mu.Lock()
	keys := s.keys
	s.mu.Unlock()
	ok := false
	for _, k := range keys {
		ok = ok || ecdsa.Verify(&k.priv.PublicKey, d[:], rr, ss)
	}
	if !ok {
		return opaqueToken{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return opaqueToken{}, false
	}
	var c struct {
		Aud string `json:"aud"`
		Iat int64  `json:"iat"`
		Exp int64  `json:"exp"`
	}
	if json.Unmarshal(payload, &c) != nil {
		return opaqueToken{}, false
	}
	return opaqueToken{aud: c.Aud, iat: time.Unix(c.Iat, 0), exp: time.Unix(c.Exp, 0)}, true
}

// covers reports whether the audience aud covers the URL resource: it is
// resource or a prefix of it ending at a path boundary.
func covers(aud, resource string) bool {
	if !strings.HasPrefix(resource, aud) {
		return false
	}
	next := resource[len(aud):]
	return next == "" || strings.HasSuffix(aud, "/") || next[0] == '/' || next[0] == '?'
}

func (s *Server) key(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	keys := s.keys[max(0, len(s.keys)-2):]
	extra := s.extra
	s.mu.Unlock()
	var set []map[string]any
	for i := len(keys) - 1; i >= 0; i-- {
		set = append(set, jwk(keys[i].kid, &keys[i].priv.PublicKey))
	}
	for _, k := range extra {
		set = append(set, jwk(k.kid, k.pub))
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "max-age=3600")
	b, _ := json.Marshal(map[string]any{"keys": set})
	w.Write(b)
}

// jwk returns the public JWK of pub.
func jwk(kid string, pub crypto.PublicKey) map[string]any {
	m := map[string]any{"use": "sig"}
	if kid != "" {
		m["kid"] = kid
	}
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		b, err := k.Bytes()
		if err != nil {
			panic(err)
		}
		m["kty"], m["crv"], m["alg"] = "EC", "P-256", "ES256"
		m["x"], m["y"] = b64(b[1:33]), b64(b[33:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["alg"], m["x"] = "OKP", "Ed25519", "EdDSA", b64(k)
	case *rsa.PublicKey:
		m["kty"], m["alg"] = "RSA", "RS256"
		m["n"], m["e"] = b64(k.N.Bytes()), b64(big.NewInt(int64(k.E)).Bytes())
	default:
		panic(fmt.Sprintf("testlicense: unsupported key %T", pub))
	}
	return m
}

func oauthError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]any{"error": code, "error_description": description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
