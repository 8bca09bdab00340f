package identity

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// Web Bot Auth (draft-ietf-webbotauth-httpsig-protocol): a bot signs its
// requests with HTTP Message Signatures (RFC 9421) under the tag
// "web-bot-auth", names its key directory in Signature-Agent, and the key
// id is the RFC 7638 thumbprint of its JWK.

// WebBotAuthTag is the tag of Web Bot Auth signatures.
const WebBotAuthTag = "web-bot-auth"

// Bounds of a signature's window.
const (
	// DefaultMaxWindow bounds expires − created.
	DefaultMaxWindow = 24 * time.Hour
	// ClockSkew is how far in the future created may lie.
	ClockSkew = 60 * time.Second
)

// PublicKey is a verification key: its algorithm and key, and its RFC 7638
// thumbprint (the key id bots send).
type PublicKey struct {
	// Thumbprint is the base64url RFC 7638 SHA-256 thumbprint.
	Thumbprint string
	// Alg is "ed25519", "rsa-pss-sha512" or "ecdsa-p256-sha256".
	Alg string
	key crypto.PublicKey
}

// jwk is the JSON form of a key (public members only are used).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Alg string `json:"alg,omitempty"`
	Kid string `json:"kid,omitempty"`
}

// ParseJWK reads a public key from a JWK (private members are ignored):
// OKP Ed25519, RSA, or EC P-256.
func ParseJWK(b []byte) (PublicKey, error) {
	var k jwk
	if err := json.Unmarshal(b, &k); err != nil {
		return PublicKey{}, fmt.Errorf("jwk: %w", err)
	}
	return k.public()
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func (k jwk) public() (PublicKey, error) {
	tp, err := k.thumbprint()
	if err != nil {
		return PublicKey{}, err
	}
	switch k.Kty {
	case "OKP":
		x, err := b64(k.X)
		if k.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return PublicKey{}, errors.New("jwk: OKP keys must be Ed25519 with a 32-byte x")
		}
		return PublicKey{Thumbprint: tp, Alg: "ed25519", key: ed25519.PublicKey(x)}, nil
	case "RSA":
		n, err1 := b64(k.N)
		e, err2 := b64(k.E)
		// 2048 to 8192 bits and e = 65537: a huge modulus or exponent
		// would make each verification cost seconds.
		if err1 != nil || err2 != nil || len(n) < 256 || len(n) > 1024 || string(e) != "\x01\x00\x01" {
			return PublicKey{}, errors.New("jwk: RSA keys need n of 2048 to 8192 bits and e = 65537")
		}
		ei := 0
		for _, c := range e {
			ei = ei<<8 | int(c)
		}
		return PublicKey{Thumbprint: tp, Alg: "rsa-pss-sha512", key: &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: ei}}, nil
	case "EC":
		x, err1 := b64(k.X)
		y, err2 := b64(k.Y)
		if k.Crv != "P-256" || err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return PublicKey{}, errors.New("jwk: EC keys must be P-256")
		}
		pk, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return PublicKey{}, fmt.Errorf("jwk: EC point: %w", err)
		}
		return PublicKey{Thumbprint: tp, Alg: "ecdsa-p256-sha256", key: pk}, nil
	}
	return PublicKey{}, fmt.Errorf("jwk: key type %q is not supported", k.Kty)
}

// thumbprint is the RFC 7638 SHA-256 thumbprint: the required members in
// lexicographic order, no white space.
func (k jwk) thumbprint() (string, error) {
	var s string
	switch k.Kty {
	case "OKP":
		s = `{"crv":` + jsonString(k.Crv) + `,"kty":"OKP","x":` + jsonString(k.X) + `}`
	case "RSA":
		s = `{"e":` + jsonString(k.E) + `,"kty":"RSA","n":` + jsonString(k.N) + `}`
	case "EC":
		s = `{"crv":` + jsonString(k.Crv) + `,"kty":"EC","x":` + jsonString(k.X) + `,"y":` + jsonString(k.Y) + `}`
	default:
		return "", fmt.Errorf("jwk: key type %q is not supported", k.Kty)
	}
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// Thumbprint returns the RFC 7638 thumbprint of a JWK.
func Thumbprint(b []byte) (string, error) {
	var k jwk
	if err := json.Unmarshal(b, &k); err != nil {
		return "", fmt.Errorf("jwk: %w", err)
	}
	return k.thumbprint()
}

// SignedRequest is what a signature covers: the request's method, target
// URI and headers.
type SignedRequest struct {
	Method    string
	Scheme    string // "https" or "http"
	Authority string // host[:port], as the client sent it
	Path      string // escaped path
	Query     string // raw query, without '?'
	Header    http.Header
}

// Signature is a verified (or not) Web Bot Auth signature.
type Signature struct {
	Label   string
	KeyID   string
	Alg     string
	Created time.Time
	Expires time.Time
	Nonce   string
	// Agent is the Signature-Agent URI the signature names (its key
	// directory's origin), "" when none.
	Agent string
}

// Errors of VerifySignature.
var (
	ErrNoSignature  = errors.New("no Signature-Input with tag web-bot-auth")
	ErrUnknownKey   = errors.New("unknown key id")
	ErrBadSignature = errors.New("signature does not verify")
)

// KeyLookup finds the key of a key id, for the agent the signature names
// ("" when it names none).
type KeyLookup func(agent, keyid string) (PublicKey, bool)

// VerifySignature checks the Web Bot Auth signature of r at now: the first
// Signature-Input member tagged web-bot-auth, its window (created not in
// the future beyond ClockSkew, expires not past, expires − created at most
// maxWindow), its covered components (@authority required), its key (from
// keys) and its signature. It returns the signature's parameters.
func VerifySignature(r *SignedRequest, now time.Time, maxWindow time.Duration, keys KeyLookup) (Signature, error) {
	var sig Signature
	inputs := r.Header.Values("Signature-Input")
	if len(inputs) == 0 {
		return sig, ErrNoSignature
	}
	// The work a signature can cause is bounded before any of it: the
	// headers' bytes, then the covered components, and the key is found
	// before the signature base is built.
	for _, h := range [...]string{"Signature-Input", "Signature", "Signature-Agent"} {
		if n := headerBytes(r.Header, h); n > MaxSignatureHeader {
			return sig, fmt.Errorf("%s: %d bytes, more than the %d read", h, n, MaxSignatureHeader)
		}
	}
	in, err := httpsfv.UnmarshalDictionary(inputs)
	if err != nil {
		return sig, fmt.Errorf("Signature-Input: %w", err)
	}
	sigs, err := httpsfv.UnmarshalDictionary(r.Header.Values("Signature"))
	if err != nil {
		return sig, fmt.Errorf("Signature: %w", err)
	}
	// Each web-bot-auth signature is tried on its own (the draft's
	// §5.2.2), at most MaxSignatures of them: the first that verifies
	// wins; without one, the first one's error says why.
	var first error
	tried := 0
	for _, label := range in.Names() {
		m, _ := in.Get(label)
		il, ok := m.(httpsfv.InnerList)
		if !ok {
			continue
		}
		if tag, _ := il.Params.Get("tag"); tag != WebBotAuthTag {
			continue
		}
		if tried++; tried > MaxSignatures {
			break
		}
		s, err := verifyOne(r, now, maxWindow, keys, label, il, sigs)
		if err == nil {
			return s, nil
		}
		if first == nil {
			sig, first = s, err
		}
	}
	if first == nil {
		return sig, ErrNoSignature
	}
	return sig, first
}

// verifyOne checks the signature of r that Signature-Input member label
// (il) describes.
func verifyOne(r *SignedRequest, now time.Time, maxWindow time.Duration, keys KeyLookup, label string, il httpsfv.InnerList, sigs *httpsfv.Dictionary) (Signature, error) {
	sig := Signature{Label: label}
	str := func(name string) string { v, _ := il.Params.Get(name); s, _ := v.(string); return s }
	num := func(name string) (int64, bool) {
		v, ok := il.Params.Get(name)
		n, ok2 := v.(int64)
		return n, ok && ok2
	}
	sig.KeyID, sig.Alg, sig.Nonce = str("keyid"), str("alg"), str("nonce")
	created, okc := num("created")
	expires, oke := num("expires")
	switch {
	case !okc || !oke:
		return sig, errors.New("created and expires are required")
	case sig.KeyID == "":
		return sig, errors.New("keyid is required")
	}
	sig.Created, sig.Expires = time.Unix(created, 0), time.Unix(expires, 0)
	switch {
	case sig.Created.After(now.Add(ClockSkew)):
		return sig, fmt.Errorf("created %s is in the future", sig.Created.UTC().Format(time.RFC3339))
	case !sig.Expires.After(now):
		return sig, fmt.Errorf("expired at %s", sig.Expires.UTC().Format(time.RFC3339))
	case sig.Expires.Sub(sig.Created) > maxWindow:
		return sig, fmt.Errorf("window of %s is longer than %s", sig.Expires.Sub(sig.Created), maxWindow)
	case !sig.Expires.After(sig.Created):
		return sig, errors.New("expires is not after created")
	}
	if n := len(il.Items); n > MaxCoveredComponents {
		return sig, fmt.Errorf("%d covered components, more than %d", n, MaxCoveredComponents)
	}
	sm, ok := sigs.Get(sig.Label)
	if !ok {
		return sig, fmt.Errorf("no Signature member %q", sig.Label)
	}
	si, ok := sm.(httpsfv.Item)
	raw, ok2 := si.Value.([]byte)
	if !ok || !ok2 {
		return sig, fmt.Errorf("Signature member %q is not a byte sequence", sig.Label)
	}
	agentValue, agent, err := signatureAgent(r, il)
	if err != nil {
		return sig, err
	}
	sig.Agent = agent
	key, ok := keys(agent, sig.KeyID)
	if !ok {
		return sig, ErrUnknownKey
	}
	if sig.Alg != "" && sig.Alg != key.Alg {
		return sig, fmt.Errorf("alg %q does not match the key's %q", sig.Alg, key.Alg)
	}
	// Duplicates are looked for once the key is known (pairs of at most
	// 24 components), before the base is built.
	if err := checkComponents(il); err != nil {
		return sig, err
	}
	base, err := signatureBase(r, il, agentValue)
	if err != nil {
		return sig, err
	}
	if !verifyWith(key, base, raw) {
		return sig, ErrBadSignature
	}
	return sig, nil
}

// Bounds of the work a signature can cause (VerifySignature).
const (
	// MaxSignatureHeader is the most bytes of each of Signature-Input,
	// Signature and Signature-Agent that are read; a signature over it is
	// refused unread. Web Bot Auth signatures take a few hundred.
	MaxSignatureHeader = 8 << 10
	// MaxCoveredComponents is the most components a signature may cover;
	// Web Bot Auth's cover two or three.
	MaxCoveredComponents = 24
	// MaxSignatures is the most web-bot-auth signatures of one request
	// that are tried.
	MaxSignatures = 4
)

// headerBytes returns the bytes of all the values of header name.
func headerBytes(h http.Header, name string) int {
	n := 0
	for _, v := range h.Values(name) {
		n += len(v)
	}
	return n
}

// checkComponents refuses a signature that covers too many components, or
// one of them twice.
func checkComponents(il httpsfv.InnerList) error {
	items := il.Items
	if len(items) > MaxCoveredComponents {
		return fmt.Errorf("%d covered components, more than %d", len(items), MaxCoveredComponents)
	}
	for i := range items {
		for j := range i { // at most 276 pairs, compared in place
			if sameComponent(items[i], items[j]) {
				a, _ := httpsfv.Marshal(items[i])
				return fmt.Errorf("covered component %s appears twice", a)
			}
		}
	}
	return nil
}

// sameComponent reports whether two covered components are one: the same
// name and the same parameters (in any order).
func sameComponent(a, b httpsfv.Item) bool {
	if !sameBareItem(a.Value, b.Value) {
		return false
	}
	var an, bn []string
	if a.Params != nil {
		an = a.Params.Names()
	}
	if b.Params != nil {
		bn = b.Params.Names()
	}
	if len(an) != len(bn) {
		return false
	}
	for _, k := range an {
		av, _ := a.Params.Get(k)
		bv, ok := b.Params.Get(k)
		if !ok || !sameBareItem(av, bv) {
			return false
		}
	}
	return true
}

// sameBareItem compares two bare items: byte sequences by content, the
// others (strings, tokens, numbers, booleans, dates) with ==.
func sameBareItem(a, b any) bool {
	ab, aBytes := a.([]byte)
	bb, bBytes := b.([]byte)
	if aBytes || bBytes {
		return aBytes && bBytes && bytes.Equal(ab, bb)
	}
	return a == b
}

// signatureAgent returns, when il covers signature-agent, its value as the
// signature base has it and the key directory origin it names.
func signatureAgent(r *SignedRequest, il httpsfv.InnerList) (value, agent string, err error) {
	for _, it := range il.Items {
		if name, _ := it.Value.(string); name != "signature-agent" {
			continue
		}
		vals := r.Header.Values("Signature-Agent")
		if len(vals) == 0 {
			return "", "", errors.New("signature-agent is covered but absent")
		}
		key, hasKey := it.Params.Get("key")
		if !hasKey {
			if item, err := httpsfv.UnmarshalItem(vals); err == nil {
				agent, _ = item.Value.(string)
			}
			return joinValues(vals), agent, nil
		}
		d, err := httpsfv.UnmarshalDictionary(vals)
		if err != nil {
			return "", "", fmt.Errorf("Signature-Agent: %w", err)
		}
		ks, _ := key.(string)
		m, ok := d.Get(ks)
		mi, ok2 := m.(httpsfv.Item)
		if !ok || !ok2 {
			return "", "", fmt.Errorf("Signature-Agent has no member %q", ks)
		}
		if value, err = httpsfv.Marshal(mi); err != nil {
			return "", "", err
		}
		return value, agentURI(mi), nil
	}
	return "", "", nil
}

// joinValues joins the values of a header as RFC 9421 §2.1 does, in one
// pass: each trimmed, ", " between them.
func joinValues(vals []string) string {
	n := 0
	for _, v := range vals {
		n += len(v) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for i, v := range vals {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strings.TrimSpace(v))
	}
	return b.String()
}

// agentURI returns the key directory origin a Signature-Agent member names:
// its URI when it has no "type" parameter or type=directory; "" for the
// other types (jwks_uri, cimd), which robots_guard does not read.
func agentURI(mi httpsfv.Item) string {
	if t, ok := mi.Params.Get("type"); ok && t != httpsfv.Token("directory") && t != "directory" {
		return ""
	}
	u, _ := mi.Value.(string)
	// An agent is an origin: a member with a path (or query) is ignored,
	// as the draft says, not cut to its origin.
	if p, err := url.Parse(u); err != nil || p.Host == "" || (p.Path != "" && p.Path != "/") || p.RawQuery != "" || p.Fragment != "" {
		return ""
	}
	return u
}

// canonicalAuthority is the authority as a signature covers it (RFC 9421
// §2.2.3): lower case, without the scheme's default port (RFC 9110 §4.2.3).
func canonicalAuthority(scheme, authority string) string {
	a := strings.ToLower(authority)
	switch strings.ToLower(scheme) {
	case "https":
		return strings.TrimSuffix(a, ":443")
	case "http":
		return strings.TrimSuffix(a, ":80")
	}
	return a
}

// verifyWith checks raw over base with key.
func verifyWith(key PublicKey, base []byte, raw []byte) bool {
	switch k := key.key.(type) {
	case ed25519.PublicKey:
		return ed25519.Verify(k, base, raw)
	case *rsa.PublicKey:
		h := sha512.Sum512(base)
		return rsa.VerifyPSS(k, crypto.SHA512, h[:], raw, &rsa.PSSOptions{SaltLength: 64, Hash: crypto.SHA512}) == nil
	case *ecdsa.PublicKey:
		if len(raw) != 64 {
			return false
		}
		h := sha256.Sum256(base)
		return ecdsa.Verify(k, h[:], new(big.Int).SetBytes(raw[:32]), new(big.Int).SetBytes(raw[32:]))
	}
	return false
}

// signatureBase builds the RFC 9421 §2.5 signature base of r for the
// covered components of il; agentValue is the signature-agent component's
// value (signatureAgent). Its size is bounded by the headers it reads,
// which VerifySignature bounds first.
func signatureBase(r *SignedRequest, il httpsfv.InnerList, agentValue string) ([]byte, error) {
	var b []byte
	authority := false
	for _, it := range il.Items {
		name, ok := it.Value.(string)
		if !ok {
			return nil, errors.New("a covered component is not a string")
		}
		id, err := httpsfv.Marshal(it)
		if err != nil {
			return nil, err
		}
		var v string
		switch name {
		case "@authority":
			v, authority = canonicalAuthority(r.Scheme, r.Authority), true
		case "@method":
			v = strings.ToUpper(r.Method)
		case "@scheme":
			v = strings.ToLower(r.Scheme)
		case "@path":
			v = r.Path
			if v == "" {
				v = "/"
			}
		case "@query":
			v = "?" + r.Query
		case "@target-uri":
			path := r.Path
			if path == "" {
				path = "/"
			}
			v = strings.ToLower(r.Scheme) + "://" + canonicalAuthority(r.Scheme, r.Authority) + path
			if r.Query != "" {
				v += "?" + r.Query
			}
			authority = true // the draft's §5.2: @authority or @target-uri
		case "signature-agent":
			v = agentValue
		default:
			if strings.HasPrefix(name, "@") || it.Params != nil && len(it.Params.Names()) > 0 {
				return nil, fmt.Errorf("covered component %s is not supported", id)
			}
			vals := r.Header.Values(name)
			if len(vals) == 0 {
				return nil, fmt.Errorf("covered header %s is absent", name)
			}
			v = joinValues(vals)
		}
		b = append(b, id...)
		b = append(b, ": "...)
		b = append(b, v...)
		b = append(b, '\n')
	}
	if !authority {
		return nil, errors.New("neither @authority nor @target-uri is covered")
	}
	params, err := httpsfv.Marshal(il)
	if err != nil {
		return nil, err
	}
	b = append(b, `"@signature-params": `...)
	b = append(b, params...)
	return b, nil
}

// Sign signs sr the way Web Bot Auth bots do, with an Ed25519 key: it sets
// Signature-Agent (when agent is not empty, as a structured-field string,
// the form Cloudflare's web-bot-auth 0.1.3 and http-message-sig 0.3.0
// verify; VerifySignature also reads the newer dictionary form),
// Signature-Input covering @authority (and signature-agent) with created,
// expires, keyid, alg, nonce and tag, and Signature. It is what tests and
// Go clients that want to be verified need; robots_guard never signs.
func Sign(sr *SignedRequest, key ed25519.PrivateKey, keyid, agent string, created, expires time.Time, nonce string) error {
	const label = "sig1"
	covered := `("@authority")`
	if agent != "" {
		sr.Header.Set("Signature-Agent", strconvQuote(agent))
		covered = `("@authority" "signature-agent")`
	}
	in := fmt.Sprintf(`%s;created=%d;expires=%d;keyid=%s;alg="ed25519";nonce=%s;tag="%s"`,
		covered, created.Unix(), expires.Unix(), strconvQuote(keyid), strconvQuote(nonce), WebBotAuthTag)
	d, err := httpsfv.UnmarshalDictionary([]string{label + "=" + in})
	if err != nil {
		return err
	}
	m, _ := d.Get(label)
	il := m.(httpsfv.InnerList)
	agentValue, _, err := signatureAgent(sr, il)
	if err != nil {
		return err
	}
	base, err := signatureBase(sr, il, agentValue)
	if err != nil {
		return err
	}
	sr.Header.Set("Signature-Input", label+"="+in)
	sr.Header.Set("Signature", label+"=:"+base64.StdEncoding.EncodeToString(ed25519.Sign(key, base))+":")
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
