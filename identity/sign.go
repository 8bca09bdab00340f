package identity

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sign signs sr the way Web Bot Auth bots do (draft -01), with an Ed25519
// key: it sets Signature-Agent (when agent is not empty) as a dictionary
// whose member sig1 is agent (an origin, whose key directory holds the
// key, or the URI of a JWK Set), Signature-Input covering @authority and
// "signature-agent";key="sig1" with created, expires, keyid, alg, nonce
// and tag, and Signature. It is what tests and Go clients that want to be
// verified need; robots_guard never signs. SignLegacy writes the string
// form of earlier drafts.
func Sign(sr *SignedRequest, key ed25519.PrivateKey, keyid, agent string, created, expires time.Time, nonce string) error {
	return sign(sr, key, keyid, agent, created, expires, nonce, false)
}

// SignLegacy is Sign with Signature-Agent as a structured-field string
// covered as "signature-agent", the form of drafts before -01, which
// verifiers that predate the dictionary form read (Cloudflare's
// web-bot-auth 0.1.3 with http-message-sig 0.2.0).
func SignLegacy(sr *SignedRequest, key ed25519.PrivateKey, keyid, agent string, created, expires time.Time, nonce string) error {
	return sign(sr, key, keyid, agent, created, expires, nonce, true)
}

func sign(sr *SignedRequest, key ed25519.PrivateKey, keyid, agent string, created, expires time.Time, nonce string, legacy bool) error {
	if err := checkSignArgs(key, keyid, agent, nonce, created, expires); err != nil {
		return err
	}
	const label = "sig1"
	covered := `("@authority")`
	switch {
	case agent != "" && legacy:
		sr.Header.Set("Signature-Agent", strconvQuote(agent))
		covered = `("@authority" "signature-agent")`
	case agent != "":
		sr.Header.Set("Signature-Agent", label+"="+strconvQuote(agent))
		covered = `("@authority" "signature-agent";key="` + label + `")`
	}
	in := fmt.Sprintf(`%s;created=%d;expires=%d;keyid=%s;alg="ed25519";nonce=%s;tag="%s"`,
		covered, created.Unix(), expires.Unix(), strconvQuote(keyid), strconvQuote(nonce), WebBotAuthTag)
	var h sigHeaders
	if err := h.input.ParseDictionary([]string{label + "=" + in}); err != nil {
		return fmt.Errorf("identity: sign: Signature-Input: %w", err)
	}
	m := h.input.Member(0)
	if _, err := signatureAgent(sr, &h, m); err != nil {
		return fmt.Errorf("identity: sign: agent %q: %w", agent, err)
	}
	base, err := signatureBase(nil, sr, &h, m)
	if err != nil {
		return fmt.Errorf("identity: sign: the signature base: %w", err)
	}
	sr.Header.Set("Signature-Input", label+"="+in)
	sr.Header.Set("Signature", label+"=:"+base64.StdEncoding.EncodeToString(ed25519.Sign(key, base))+":")
	return nil
}

// checkSignArgs refuses, naming the argument, what Sign cannot put into
// a signature: a key that is no Ed25519 private key, an empty key id, a
// key id, agent or nonce that a structured-field string cannot hold
// (control characters, bytes beyond ASCII), an expiry before creation.
func checkSignArgs(key ed25519.PrivateKey, keyid, agent, nonce string, created, expires time.Time) error {
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("identity: sign: key: %d bytes, not an Ed25519 private key (%d)", len(key), ed25519.PrivateKeySize)
	}
	if keyid == "" {
		return errors.New("identity: sign: keyid: empty (the key's JWK thumbprint)")
	}
	for _, f := range [...]struct{ name, v string }{{"keyid", keyid}, {"agent", agent}, {"nonce", nonce}} {
		for i := 0; i < len(f.v); i++ {
			if c := f.v[i]; c < 0x20 || c > 0x7e {
				return fmt.Errorf("identity: sign: %s: byte %#x at %d: a structured-field string holds visible ASCII and spaces only", f.name, c, i)
			}
		}
	}
	if expires.Before(created) {
		return fmt.Errorf("identity: sign: expires %s is before created %s", expires.Format(time.RFC3339), created.Format(time.RFC3339))
	}
	return nil
}

// strconvQuote writes s as a structured-field string.
func strconvQuote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

// PrivateJWK reads an Ed25519 private key (its "d") from a JWK, for Sign.
func PrivateJWK(b []byte) (ed25519.PrivateKey, error) {
	var k struct {
		Kty, Crv, D string
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, err
	}
	d, err := b64(k.D)
	if k.Kty != "OKP" || k.Crv != "Ed25519" || err != nil || len(d) != ed25519.SeedSize {
		return nil, errors.New("jwk: not an Ed25519 private key")
	}
	return ed25519.NewKeyFromSeed(d), nil
}
