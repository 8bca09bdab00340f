package identity

import (
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

	"github.com/robotsguard/robotsguard/internal/sfv"
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

// KeyLookup finds the key of a key id, for the agent the signature names
// ("" when it names none).
type KeyLookup func(agent, keyid string) (PublicKey, bool)

// sigHeaders are the parsed signature headers of one request: views into
// the headers' text (package sfv), kept on the stack of VerifySignature.
type sigHeaders struct {
	input, sig, agent sfv.Field
	agentDict         bool // agent holds Signature-Agent parsed as a dictionary
}

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
	var h sigHeaders
	if err := h.input.ParseDictionary(inputs); err != nil {
		return sig, headerError("Signature-Input", err)
	}
	if err := h.sig.ParseDictionary(r.Header.Values("Signature")); err != nil {
		return sig, headerError("Signature", err)
	}
	// Each web-bot-auth signature is tried on its own (the draft's
	// §5.2.2), at most MaxSignatures of them: the first that verifies
	// wins; without one, the first one's error says why.
	var first error
	tried := 0
	for i := range h.input.Len() {
		m := h.input.Member(i)
		if !m.Inner {
			continue
		}
		if tag, _ := h.input.ListParamValue(m, "tag"); !tag.IsString(WebBotAuthTag) {
			continue
		}
		if tried++; tried > MaxSignatures {
			break
		}
		s, err := verifyOne(r, now, maxWindow, keys, &h, m)
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

// verifyOne checks the signature of r that Signature-Input member m
// describes.
func verifyOne(r *SignedRequest, now time.Time, maxWindow time.Duration, keys KeyLookup, h *sigHeaders, m *sfv.Member) (Signature, error) {
	in := &h.input
	sig := Signature{Label: m.Key}
	str := func(name string) string { v, _ := in.ListParamValue(m, name); s, _ := v.Str(); return s }
	num := func(name string) (int64, bool) {
		v, ok := in.ListParamValue(m, name)
		return v.Int, ok && v.Kind == sfv.Integer
	}
	sig.KeyID, sig.Alg, sig.Nonce = str("keyid"), str("alg"), str("nonce")
	created, okc := num("created")
	expires, oke := num("expires")
	switch {
	case !okc || !oke:
		return sig, malformed("created and expires are required")
	case sig.KeyID == "":
		return sig, malformed("keyid is required")
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
	if n := in.Items(m); n > MaxCoveredComponents {
		return sig, fmt.Errorf("%d covered components, more than %d", n, MaxCoveredComponents)
	}
	sm, ok := h.sig.Get(sig.Label)
	if !ok {
		return sig, malformed("no Signature member %q", sig.Label)
	}
	var rawBuf [64]byte // an Ed25519 or ECDSA P-256 signature; RSA's spill over
	raw, ok := sm.Item.Value.Bytes(rawBuf[:0])
	if sm.Inner || !ok {
		return sig, malformed("Signature member %q is not a byte sequence", sig.Label)
	}
	agent, err := signatureAgent(r, h, m)
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
	if err := checkComponents(in, m); err != nil {
		return sig, err
	}
	var baseBuf [512]byte
	base, err := signatureBase(baseBuf[:0], r, h, m)
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

// checkComponents refuses a signature that covers too many components, a
// component with a parameter RFC 9421 does not define (§2.1: sf, key, bs,
// req, tr, name), or one component twice (the same name and parameters, in
// any order). With the parameters known, comparing two components takes
// at most six short look-ups.
func checkComponents(in *sfv.Field, m *sfv.Member) error {
	n := in.Items(m)
	if n > MaxCoveredComponents {
		return fmt.Errorf("%d covered components, more than %d", n, MaxCoveredComponents)
	}
	for i := range n {
		it := in.Item(m, i)
		for k := range in.Params(it) {
			switch key := in.Param(it, k).Key; key {
			case "sf", "key", "bs", "req", "tr", "name":
			default:
				return fmt.Errorf("covered component %s has parameter %q, which RFC 9421 does not define", in.AppendItem(nil, it), key)
			}
		}
	}
	for i := range n {
		for j := range i { // at most 276 pairs of at most six parameters, compared in place
			if in.SameItem(in.Item(m, i), in.Item(m, j)) {
				return fmt.Errorf("covered component %s appears twice", in.AppendItem(nil, in.Item(m, i)))
			}
		}
	}
	return nil
}

// signatureAgent returns the key directory origin that the first
// signature-agent component of m names ("" when m covers none, or the
// member is of another type), and an error when the header is absent or
// lacks the member.
func signatureAgent(r *SignedRequest, h *sigHeaders, m *sfv.Member) (agent string, err error) {
	in := &h.input
	for i := range in.Items(m) {
		it := in.Item(m, i)
		if !it.Value.IsString("signature-agent") {
			continue
		}
		vals := r.Header.Values("Signature-Agent")
		if len(vals) == 0 {
			return "", malformed("signature-agent is covered but absent")
		}
		if _, hasKey := in.ItemParam(it, "key"); !hasKey {
			// The string form of drafts before -01, which verifiers may
			// still accept: one agent, read as a member with no
			// parameters.
			if item, err := h.agent.ParseItem(vals); err == nil {
				s, _ := item.Value.Str()
				agent = agentRef(s, "")
			}
			h.agentDict = false
			return agent, nil
		}
		am, err := h.agentMember(r, in, it)
		if err != nil {
			return "", err
		}
		return agentURI(&h.agent, am), nil
	}
	return "", nil
}

// agentMember returns the Signature-Agent dictionary member that
// component it (with a key parameter) names, parsing the header once.
func (h *sigHeaders) agentMember(r *SignedRequest, in *sfv.Field, it *sfv.Item) (*sfv.Item, error) {
	if !h.agentDict {
		if err := h.agent.ParseDictionary(r.Header.Values("Signature-Agent")); err != nil {
			return nil, headerError("Signature-Agent", err)
		}
		h.agentDict = true
	}
	key, _ := in.ItemParam(it, "key")
	ks, _ := key.Str()
	am, ok := h.agent.Get(ks)
	if !ok || am.Inner {
		return nil, malformed("Signature-Agent has no member %q", ks)
	}
	return &am.Item, nil
}

// appendJoined appends the values of a header joined as RFC 9421 §2.1
// does, in one pass: each trimmed, ", " between them.
func appendJoined(b []byte, vals []string) []byte {
	for i, v := range vals {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, strings.TrimSpace(v)...)
	}
	return b
}

// agentURI returns where the keys of a Signature-Agent member are (see
// agentRef), "" for a member robots_guard does not read.
func agentURI(f *sfv.Field, it *sfv.Item) string {
	u, _ := it.Value.Str()
	t, typed := f.ItemParam(it, "type")
	switch {
	case !typed:
		return agentRef(u, "")
	case t.Kind == sfv.Token && t.Text == "directory" || t.IsString("directory"):
		return agentRef(u, "directory")
	case t.Kind == sfv.Token && t.Text == "jwks_uri" || t.IsString("jwks_uri"):
		return agentRef(u, "jwks_uri")
	}
	return "" // cimd (a Client ID Metadata Document, which -01 dropped) and unknown types
}

// agentRef reads the URI of a Signature-Agent member of type typ ("" for
// none): an origin names its key directory (the well-known path; -00's
// default type "directory" and the string form), a URI with a path a JWK
// Set to fetch as it is (-01, where every member is one, and -00's
// "jwks_uri"). It returns the origin, or the URI, in normalizeAgent's
// form (so that the key lookup and the operator's attribution need no
// second parse), or "" when the member does not fit its type (a directory
// with a path, a JWK Set without one), is not https, or has a query or
// fragment (ignored, as the drafts say, never cut to fit).
func agentRef(u, typ string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "https" || p.Host == "" {
		return ""
	}
	root := p.Path == "" || p.Path == "/"
	if typ == "directory" && !root || typ == "jwks_uri" && root {
		return ""
	}
	return normalizeParsed(p, u)
}

// isKeySetURI reports whether an agent reference of agentRef names a JWK
// Set (a URI with a path) rather than a key directory (an origin).
func isKeySetURI(agent string) bool {
	rest, ok := strings.CutPrefix(agent, "https://")
	return ok && strings.Contains(rest, "/")
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

// signatureBase appends the RFC 9421 §2.5 signature base of r for the
// covered components of m to b: each signature-agent component with its
// own value (the header, or the member its key names). Its size is
// bounded by the headers it reads, which VerifySignature bounds first.
func signatureBase(b []byte, r *SignedRequest, h *sigHeaders, m *sfv.Member) ([]byte, error) {
	in := &h.input
	authority := false
	for i := range in.Items(m) {
		it := in.Item(m, i)
		name, ok := it.Value.Str()
		if !ok {
			return nil, malformed("a covered component is not a string")
		}
		b = in.AppendItem(b, it)
		b = append(b, ": "...)
		switch name {
		case "@authority":
			b, authority = appendAuthority(b, r.Scheme, r.Authority), true
		case "@method":
			b = append(b, strings.ToUpper(r.Method)...)
		case "@scheme":
			b = append(b, strings.ToLower(r.Scheme)...)
		case "@path":
			b = appendPath(b, r.Path)
		case "@query":
			b = append(append(b, '?'), r.Query...)
		case "@target-uri":
			b = append(b, strings.ToLower(r.Scheme)...)
			b = append(b, "://"...)
			b = appendPath(appendAuthority(b, r.Scheme, r.Authority), r.Path)
			if r.Query != "" {
				b = append(append(b, '?'), r.Query...)
			}
			authority = true // the draft's §5.2: @authority or @target-uri
		case "signature-agent":
			vals := r.Header.Values("Signature-Agent")
			if len(vals) == 0 {
				return nil, malformed("signature-agent is covered but absent")
			}
			if _, hasKey := in.ItemParam(it, "key"); hasKey {
				am, err := h.agentMember(r, in, it)
				if err != nil {
					return nil, err
				}
				b = h.agent.AppendItem(b, am)
			} else {
				b = appendJoined(b, vals)
			}
		default:
			if strings.HasPrefix(name, "@") || in.Params(it) > 0 {
				return nil, fmt.Errorf("covered component %s is not supported", in.AppendItem(nil, it))
			}
			vals := r.Header.Values(name)
			if len(vals) == 0 {
				return nil, fmt.Errorf("covered header %s is absent", name)
			}
			b = appendJoined(b, vals)
		}
		b = append(b, '\n')
	}
	if !authority {
		return nil, errors.New("neither @authority nor @target-uri is covered")
	}
	b = append(b, `"@signature-params": `...)
	return in.AppendInnerList(b, m), nil
}

// appendAuthority appends the authority as a signature covers it (RFC 9421
// §2.2.3) to b: lower case, without the scheme's default port (RFC 9110
// §4.2.3).
func appendAuthority(b []byte, scheme, authority string) []byte {
	n := len(authority)
	switch {
	case strings.EqualFold(scheme, "https") && strings.HasSuffix(authority, ":443"),
		strings.EqualFold(scheme, "http") && strings.HasSuffix(authority, ":80"):
		n = strings.LastIndexByte(authority, ':')
	}
	return append(b, strings.ToLower(authority[:n])...)
}

// appendPath appends the escaped path, "/" when it is empty.
func appendPath(b []byte, path string) []byte {
	if path == "" {
		return append(b, '/')
	}
	return append(b, path...)
}
