package license

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// b64 is the base64url encoding of JWS segments: no padding, and the
// unused bits zero.
var b64 = base64.RawURLEncoding.Strict()

// jws is a parsed JSON Web Signature token in compact serialisation.
type jws struct {
	alg, kid string
	claims   claims
	signed   string // the signing input: header.payload
	sig      []byte
}

// looksLikeJWS reports whether a token is meant as a JSON Web Signature:
// three segments of base64url characters, the first of which decodes to a
// JSON object (its first bytes, as far as they decode, start with '{').
// Any other token is opaque.
func looksLikeJWS(token string) bool {
	if strings.Count(token, ".") != 2 {
		return false
	}
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	h, _, _ := strings.Cut(token, ".")
	var buf [12]byte
	n, _ := base64.RawURLEncoding.Decode(buf[:], []byte(h[:min(len(h), 16)]))
	for _, c := range buf[:n] {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// parseJWS reads a token of three base64url segments. Its errors wrap
// ErrInvalidToken.
func parseJWS(token string) (*jws, error) {
	h, rest, _ := strings.Cut(token, ".")
	p, s, ok := strings.Cut(rest, ".")
	if !ok || strings.IndexByte(s, '.') >= 0 {
		return nil, fmt.Errorf("%w: not a JWS of three segments", ErrInvalidToken)
	}
	t := &jws{signed: token[:len(h)+1+len(p)]}
	hm, err := jsonSegment(h, "header")
	if err != nil {
		return nil, err
	}
	if json.Unmarshal(hm["alg"], &t.alg) != nil {
		return nil, fmt.Errorf("%w: malformed JWS header: no alg", ErrInvalidToken)
	}
	switch t.alg {
	case "ES256", "EdDSA", "RS256":
	case "Ed25519":
		// RFC 9864's fully-specified name of EdDSA on Ed25519, the one
		// curve of EdDSA keys read here (jose 6 signs with it).
		t.alg = "EdDSA"
	default:
		return nil, fmt.Errorf("%w: JWS algorithm %q is not accepted (ES256, EdDSA or Ed25519, RS256)", ErrInvalidToken, clip(t.alg))
	}
	if raw, ok := hm["kid"]; ok && json.Unmarshal(raw, &t.kid) != nil {
		return nil, fmt.Errorf("%w: malformed JWS header: kid is not a string", ErrInvalidToken)
	}
	if _, ok := hm["crit"]; ok {
		return nil, fmt.Errorf("%w: JWS header extensions (crit) are not understood", ErrInvalidToken)
	}
	if raw, ok := hm["b64"]; ok && string(raw) != "true" {
		return nil, fmt.Errorf("%w: unencoded JWS payloads are not accepted", ErrInvalidToken)
	}
	pm, err := jsonSegment(p, "payload")
	if err != nil {
		return nil, err
	}
	if err := t.claims.read(pm); err != nil {
		return nil, fmt.Errorf("%w: malformed claims: %w", ErrInvalidToken, err)
	}
	if t.sig, err = b64.DecodeString(s); err != nil {
		return nil, fmt.Errorf("%w: malformed JWS signature: not base64url", ErrInvalidToken)
	}
	if len(t.sig) == 0 {
		return nil, fmt.Errorf("%w: JWS without a signature", ErrInvalidToken)
	}
	return t, nil
}

// jsonSegment reads a JWS segment that holds a JSON object, the header
// or the payload (what, for errors, which wrap ErrInvalidToken).
func jsonSegment(seg, what string) (map[string]json.RawMessage, error) {
	b, err := b64.DecodeString(seg)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed JWS %s: not base64url", ErrInvalidToken, what)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: malformed JWS %s: not a JSON object", ErrInvalidToken, what)
	}
	return m, nil
}

// jwk is a public key of a licence server.
type jwk struct {
	kid string
	alg string // the JWS algorithm it verifies: ES256, EdDSA or RS256
	key crypto.PublicKey
}

// verify reports whether sig is k's signature of signed.
func (k *jwk) verify(signed string, sig []byte) bool {
	switch pub := k.key.(type) {
	case *ecdsa.PublicKey:
		if len(sig) != 64 {
			return false
		}
		h := sha256.Sum256([]byte(signed))
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(pub, h[:], r, s)
	case ed25519.PublicKey:
		return ed25519.Verify(pub, []byte(signed), sig)
	case *rsa.PublicKey:
		h := sha256.Sum256([]byte(signed))
		return rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig) == nil
	}
	return false
}

// keySet holds a licence server's keys.
type keySet struct {
	// sem, a one-slot semaphore, lets one request at a time look at the
	// set and fetch it; the others wait (or give up with their context).
	sem     chan struct{}
	keys    []jwk
	fetched time.Time // the last successful fetch; zero: none
	tried   time.Time // the last fetch; zero: none
	err     error     // the last fetch's error
}

func (s *keySet) has(kid string) bool {
	for _, k := range s.keys {
		if k.kid == kid {
			return true
		}
	}
	return false
}

// keys returns the keys of server, fetched when they are older than an
// hour or kid names none of them, but not within a minute of the last
// fetch; keys that cannot be fetched again are used for a day.
func (v *Verifier) keys(ctx context.Context, server, kid string) ([]jwk, error) {
	v.mu.Lock()
	ks, ok := v.keySets.Get(server)
	if !ok {
		ks = &keySet{sem: make(chan struct{}, 1)}
		v.keySets.Add(server, ks)
	}
	v.mu.Unlock()
	select {
	case ks.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("license: waiting for the keys of %s: %w", server, ctx.Err())
	}
	defer func() { <-ks.sem }()
	now := v.now()
	have := !ks.fetched.IsZero()
	if have && now.Sub(ks.fetched) < keysTTL && (kid == "" || ks.has(kid)) {
		return ks.keys, nil
	}
	if ks.tried.IsZero() || now.Sub(ks.tried) >= keysRetry || now.Before(ks.tried) {
		ks.tried = now
		keys, err := v.fetchKeys(ctx, server)
		if err == nil {
			ks.keys, ks.fetched, ks.err = keys, now, nil
			return keys, nil
		}
		ks.err = err
	}
	if have && now.Sub(ks.fetched) < maxStale {
		return ks.keys, nil
	}
	if ks.err == nil {
		// Fetched within the minute, but longer ago than maxStale: only
		// a clock that jumps gets here.
		ks.err = fmt.Errorf("license: the keys of %s are out of date", server)
	}
	return nil, ks.err
}

// fetchKeys fetches a licence server's keys from server + "/key".
func (v *Verifier) fetchKeys(ctx context.Context, server string) ([]jwk, error) {
	endpoint := server + "/key"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, fmt.Errorf("license: keys at %s: %w", endpoint, err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/jwk+json, application/json")
	status, body, err := v.do(req)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("license: keys at %s: status %d", endpoint, status)
	}
	keys, err := parseKeys(body)
	if err != nil {
		return nil, fmt.Errorf("license: keys at %s: %w", endpoint, err)
	}
	return keys, nil
}

// parseKeys reads a JWK Set ({"keys": [...]}) or a single JWK. Keys it
// cannot use (other types and curves, encryption keys, RSA keys under 2048
// bits) are left out; at most maxKeys are kept.
func parseKeys(body []byte) ([]jwk, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, errors.New("not a JSON object")
	}
	raws := []json.RawMessage{body}
	if _, ok := m["keys"]; ok {
		if err := json.Unmarshal(body, &set); err != nil {
			return nil, errors.New("keys is not an array")
		}
		raws = set.Keys
	}
	var keys []jwk
	for _, raw := range raws {
		if k, ok := parseJWK(raw); ok {
			keys = append(keys, k)
			if len(keys) == maxKeys {
				break
			}
		}
	}
	return keys, nil
}

// parseJWK reads one public JWK (RFC 7517, 7518, 8037).
func parseJWK(raw []byte) (jwk, bool) {
	var j struct {
		Kty string `json:"kty"`
		Kid string `json:"kid"`
		Use string `json:"use"`
		Alg string `json:"alg"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Y   string `json:"y"`
		N   string `json:"n"`
		E   string `json:"e"`
	}
	if json.Unmarshal(raw, &j) != nil || j.Use != "" && j.Use != "sig" {
		return jwk{}, false
	}
	k := jwk{kid: j.Kid}
	switch {
	case j.Kty == "EC" && j.Crv == "P-256":
		x, err1 := b64.DecodeString(j.X)
		y, err2 := b64.DecodeString(j.Y)
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return jwk{}, false
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return jwk{}, false
		}
		k.alg, k.key = "ES256", pub
	case j.Kty == "OKP" && j.Crv == "Ed25519":
		x, err := b64.DecodeString(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return jwk{}, false
		}
		k.alg, k.key = "EdDSA", ed25519.PublicKey(x)
	case j.Kty == "RSA":
		n, err1 := b64.DecodeString(j.N)
		e, err2 := b64.DecodeString(j.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
			return jwk{}, false
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n)}
		for _, b := range e {
			pub.E = pub.E<<8 | int(b)
		}
		if bits := pub.N.BitLen(); bits < 2048 || bits > 8192 || pub.E < 3 || pub.E%2 == 0 {
			return jwk{}, false
		}
		k.alg, k.key = "RS256", pub
	default:
		return jwk{}, false
	}
	if j.Alg != "" && j.Alg != k.alg && !(j.Alg == "Ed25519" && k.alg == "EdDSA") {
		return jwk{}, false
	}
	return k, true
}
