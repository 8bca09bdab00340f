package testlicense

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// The keys, claims and tokens a test makes itself, besides the server's
// own: keys to sign with SignWith (and, for a valid token, to Publish),
// claims to change, and tokens that no verifier should accept.

// ECKey returns a new ECDSA P-256 key, for ES256.
func ECKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

// EdKey returns a new Ed25519 key, for EdDSA.
func EdKey() ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

// RSAKey returns a 2048-bit RSA key, for RS256: the same key at every call,
// as making one takes long.
func RSAKey() *rsa.PrivateKey { return rsaKey() }

var rsaKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// Claims returns the claims of a token of the server for aud, valid for
// TokenTTL from now (iss, aud, iat and exp), with the members of change
// set over them; a member whose value is nil is deleted.
func (s *Server) Claims(aud string, change map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": s.URL, "aud": aud, "iat": now.Unix(), "exp": now.Add(TokenTTL).Unix()}
	for k, v := range change {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// Unsigned returns the JWS header.claims. with an empty signature, header
// being the header's JSON.
func Unsigned(header string, claims any) string {
	c, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	return b64([]byte(header)) + "." + b64(c) + "."
}

// TamperSignature returns the JWS tok with a bit of its signature flipped
// (a character in its first bytes changed).
func TamperSignature(tok string) string {
	i := strings.LastIndexByte(tok, '.') + 10
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}
