package license

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// ErrInvalidToken is wrapped by the errors of Verifier.Verify that reject a
// token: the request's credential is at fault, and the caller answers 401
// with error="invalid_token". Its text is that error code.
var ErrInvalidToken = errors.New("invalid_token")

// Limits and lifetimes of a Verifier.
const (
	// MaxTokenLength is the longest token Verify reads, in bytes.
	MaxTokenLength = 4096

	// maxJSON is the most Verify reads of a licence server's answer.
	maxJSON = 64 << 10
	// keysTTL is how long a licence server's keys are used before they
	// are fetched again.
	keysTTL = time.Hour
	// keysRetry is the least time between two fetches of a server's keys
	// (also after an unknown key id, or a failure).
	keysRetry = time.Minute
	// maxStale is how long keys are still used when they cannot be
	// fetched again.
	maxStale = 24 * time.Hour
	// maxKeys is the most keys of a key set that are kept.
	maxKeys = 32
	// maxAudiences is the most audiences a token may name.
	maxAudiences = 64
	// negativeTTL is how long a rejected token stays rejected without
	// another look.
	negativeTTL = time.Minute
	// introspectionTTL is the longest an active introspection answer is
	// reused, so that a revoked token is refused soon.
	introspectionTTL = 5 * time.Minute
	// callTimeout bounds one check of a token at the licence server
	// (shared by the requests that wait for it).
	callTimeout = 10 * time.Second
)

// VerifierConfig configures a Verifier. The zero value is usable.
type VerifierConfig struct {
	// Client makes the calls to licence servers. Nil means a client with a
	// 5 s timeout. The Verifier uses a copy that follows no redirect and
	// keeps no cookies.
	Client *http.Client
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Skew is the clock skew tolerated on exp and nbf: 0 means 60 s, a
	// negative value none.
	Skew time.Duration
	// CacheSize is the number of token results kept; 0 or less means
	// 10000.
	CacheSize int
}

// Verifier verifies licence tokens. It is safe for concurrent use.
type Verifier struct {
	client *http.Client
	now    func() time.Time
	skew   time.Duration

	results *lru.Cache[[32]byte, *result]
	flight  singleflight.Group

	mu      sync.Mutex
	keySets *lru.Cache[string, *keySet]
}

// result is the outcome of checking a token at its licence server, before
// the audience of a request is compared.
type result struct {
	// err is nil for a valid token, else the reason it is invalid (it
	// wraps ErrInvalidToken).
	err error
	// aud holds the token's audiences; hasAud is false when the token
	// has none (an introspected token without aud), which any request
	// matches.
	aud    []string
	hasAud bool
	// notAfter is the token's exp plus the skew; zero when it has none.
	notAfter time.Time
	// until is when the result is forgotten.
	until time.Time
	// resource is the request URL the result holds for, when the licence
	// server answered for that resource only (introspection's
	// "permitted"); "" when it holds for every URL.
	resource string
}

// NewVerifier returns a Verifier configured by cfg.
func NewVerifier(cfg VerifierConfig) *Verifier {
	v := &Verifier{now: cfg.Now, skew: cfg.Skew}
	if cfg.Client != nil {
		c := *cfg.Client
		v.client = &c
	} else {
		v.client = &http.Client{Timeout: 5 * time.Second}
	}
	v.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	v.client.Jar = nil
	if v.now == nil {
		v.now = time.Now
	}
	switch {
	case v.skew == 0:
		v.skew = 60 * time.Second
	case v.skew < 0:
		v.skew = 0
	}
	size := cfg.CacheSize
	if size <= 0 {
		size = DefaultTokenCacheSize
	}
	v.results, _ = lru.New[[32]byte, *result](size)
	v.keySets, _ = lru.New[string, *keySet](1024)
	return v
}

// Verify checks the token of an "Authorization: License <token>" header
// for requestURL, the full URL of the request (scheme://host/path?query),
// under the licence server server, the base URL that the site's RSL
// document names (never one the token names). It returns nil when the
// token is valid for requestURL; an error wrapping ErrInvalidToken, saying
// why, when it is not (malformed, too long, expired, not yet valid, issued
// by another server, badly signed, inactive, or for another audience); and
// any other error when it could not be checked (the licence server is
// unreachable or answers with an error, or ctx ends): the caller answers
// 503 then.
//
// A token of three base64url segments separated by dots, the first of
// which decodes to a JSON object, is a JSON Web Signature (RFC 7515),
// verified locally; one that is malformed is refused without any call to
// the server. Its alg must be ES256, EdDSA or
// RS256; its key is taken from the server's key set at server + "/key" (a
// JWK or a JWK Set), by kid when the token names one; its claims must
// hold exp (honoured with the configured skew) and aud; nbf is honoured
// and iss, when present, must equal server (a trailing slash aside). Any
// other token is opaque and is checked by token introspection (RFC 7662)
// at server + "/introspect": active must be true, exp is honoured and aud
// checked when present, and an OLP "permitted": false refuses it.
//
// An audience covers requestURL when it is the request's origin
// ("https://example.com") or a URL prefix of requestURL ending at a path
// boundary ("https://example.com/articles" covers /articles and
// /articles/x but not /articles-old).
//
// Results are cached by server and token: a valid token until it expires
// (an introspected one for at most five minutes), an invalid one for a
// minute, so that the server is not asked again and again about the same
// bad token. A server's keys are fetched at most once a minute, also for
// an unknown kid, and kept for an hour.
func (v *Verifier) Verify(ctx context.Context, server, requestURL, token string) error {
	if err := checkServer(server); err != nil {
		return fmt.Errorf("license: licence server: %w", err)
	}
	base := strings.TrimRight(server, "/")
	req, ok := splitURL(requestURL)
	if !ok {
		return fmt.Errorf("license: request URL %q is not an absolute http(s) URL", clip(requestURL))
	}
	switch {
	case token == "":
		return fmt.Errorf("%w: empty token", ErrInvalidToken)
	case len(token) > MaxTokenLength:
		return fmt.Errorf("%w: token is %d bytes, more than %d", ErrInvalidToken, len(token), MaxTokenLength)
	}
	key := cacheKey(base, token)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("license: checking a token: %w", err)
	}
	if r, ok := v.cached(key, requestURL); ok {
		return r.check(v.now(), req)
	}
	// Concurrent checks of one token share one call to the server. An
	// opaque token's answer may hold for one resource only, so those
	// share by resource too.
	fk := string(key[:])
	jws := looksLikeJWS(token)
	if !jws {
		fk += requestURL
	}
	ch := v.flight.DoChan(fk, func() (any, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
		defer cancel()
		var r *result
		var err error
		if jws {
			r, err = v.checkJWS(cctx, base, token)
		} else {
			r, err = v.introspect(cctx, base, requestURL, token)
		}
		if err != nil {
			return nil, err
		}
		v.results.Add(key, r)
		return r, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return res.Err
		}
		return res.Val.(*result).check(v.now(), req)
	case <-ctx.Done():
		return fmt.Errorf("license: checking a token: %w", ctx.Err())
	}
}

// Cached returns what Verify would answer from its cache alone, and true;
// false when Verify would have to ask the licence server (or the
// arguments are not ones it checks from its cache). A caller that must
// prepare the outbound call (its address rules) asks it first.
func (v *Verifier) Cached(server, requestURL, token string) (bool, error) {
	req, ok := splitURL(requestURL)
	if !ok || token == "" || len(token) > MaxTokenLength || checkServer(server) != nil {
		return false, nil
	}
	r, ok := v.cached(cacheKey(strings.TrimRight(server, "/"), token), requestURL)
	if !ok {
		return false, nil
	}
	return true, r.check(v.now(), req)
}

// cached is the cached result of key for requestURL, if it holds now.
func (v *Verifier) cached(key [32]byte, requestURL string) (*result, bool) {
	r, ok := v.results.Get(key)
	if !ok || !v.now().Before(r.until) || r.resource != "" && r.resource != requestURL {
		return nil, false
	}
	return r, true
}

// cacheKey hashes a server's base URL and a token.
func cacheKey(server, token string) [32]byte {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(server)))
	h.Write(n[:])
	io.WriteString(h, server)
	io.WriteString(h, token)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// check applies a result to one request at now.
func (r *result) check(now time.Time, req parsedURL) error {
	if r.err != nil {
		return r.err
	}
	if !r.notAfter.IsZero() && now.After(r.notAfter) {
		return fmt.Errorf("%w: token expired", ErrInvalidToken)
	}
	if r.hasAud && !audienceCovers(r.aud, req) {
		return fmt.Errorf("%w: the token's audience %s does not cover %s", ErrInvalidToken, audienceList(r.aud), req.origin+clip(req.rest))
	}
	return nil
}

// audienceCovers reports whether one of auds covers the request: it is the
// request's origin, or a URL prefix of it ending at a path boundary. An
// audience with a query covers only the same URL.
func audienceCovers(auds []string, req parsedURL) bool {
	for _, a := range auds {
		u, ok := splitURL(a)
		if !ok || u.origin != req.origin {
			continue
		}
		p := u.rest
		switch {
		case p == "/":
			return true
		case strings.IndexByte(p, '?') >= 0:
			if p == req.rest {
				return true
			}
		case strings.HasPrefix(req.rest, p):
			if next := req.rest[len(p):]; p[len(p)-1] == '/' || next == "" || next[0] == '/' || next[0] == '?' {
				return true
			}
		}
	}
	return false
}

func audienceList(auds []string) string {
	if len(auds) == 1 {
		return strconv.Quote(clip(auds[0]))
	}
	q := make([]string, 0, min(len(auds), 4))
	for _, a := range auds[:min(len(auds), 4)] {
		q = append(q, strconv.Quote(clip(a)))
	}
	if len(auds) > 4 {
		q = append(q, "...")
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// invalid returns the cached result of a token rejected at now.
func (v *Verifier) invalid(now time.Time, err error) *result {
	return &result{err: err, until: now.Add(negativeTTL)}
}

// checkJWS verifies a JSON Web Signature token. Its error is for a token
// that could not be checked; an invalid token is a result.
func (v *Verifier) checkJWS(ctx context.Context, server, token string) (*result, error) {
	now := v.now()
	t, err := parseJWS(token)
	if err != nil {
		return v.invalid(now, err), nil
	}
	c := &t.claims
	switch {
	case !c.hasExp:
		return v.invalid(now, fmt.Errorf("%w: no exp claim", ErrInvalidToken)), nil
	case now.After(c.exp.Add(v.skew)):
		return v.invalid(now, fmt.Errorf("%w: token expired at %s", ErrInvalidToken, c.exp.UTC().Format(time.RFC3339))), nil
	case c.hasNbf && now.Add(v.skew).Before(c.nbf):
		r := v.invalid(now, fmt.Errorf("%w: token not valid before %s", ErrInvalidToken, c.nbf.UTC().Format(time.RFC3339)))
		if until := c.nbf.Add(-v.skew); until.Before(r.until) {
			r.until = until
		}
		return r, nil
	case c.hasIss && strings.TrimRight(c.iss, "/") != server:
		return v.invalid(now, fmt.Errorf("%w: token issued by %q, not by the licence server %q", ErrInvalidToken, clip(c.iss), clip(server))), nil
	case len(c.aud) == 0:
		return v.invalid(now, fmt.Errorf("%w: no aud claim", ErrInvalidToken)), nil
	}
	keys, err := v.keys(ctx, server, t.kid)
	if err != nil {
		return nil, err
	}
	found := false
	for _, k := range keys {
		if k.alg != t.alg || t.kid != "" && k.kid != t.kid {
			continue
		}
		found = true
		if k.verify(t.signed, t.sig) {
			notAfter := c.exp.Add(v.skew)
			return &result{aud: c.aud, hasAud: true, notAfter: notAfter, until: notAfter}, nil
		}
	}
	switch {
	case found:
		return v.invalid(now, fmt.Errorf("%w: bad signature", ErrInvalidToken)), nil
	case t.kid != "":
		return v.invalid(now, fmt.Errorf("%w: unknown key id %q", ErrInvalidToken, clip(t.kid))), nil
	}
	return v.invalid(now, fmt.Errorf("%w: the licence server has no %s key", ErrInvalidToken, t.alg)), nil
}

// introspect checks an opaque token at the licence server (RFC 7662).
func (v *Verifier) introspect(ctx context.Context, server, requestURL, token string) (*result, error) {
	now := v.now()
	if !isB64Token(token) {
		return v.invalid(now, fmt.Errorf("%w: malformed token", ErrInvalidToken)), nil
	}
	endpoint := server + "/introspect"
	form := url.Values{"token": {token}, "resource": {requestURL}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("license: introspection at %s: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	status, body, err := v.do(req)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	jsonErr := json.Unmarshal(body, &m)
	if status != http.StatusOK {
		// RFC 7662 answers an invalid token with active: false; an OAuth
		// error "invalid_token" says the same.
		var e struct {
			Error string `json:"error"`
		}
		if status == http.StatusBadRequest || status == http.StatusUnauthorized {
			if json.Unmarshal(body, &e) == nil && e.Error == "invalid_token" {
				return v.invalid(now, fmt.Errorf("%w: the licence server refused the token", ErrInvalidToken)), nil
			}
		}
		return nil, fmt.Errorf("license: introspection at %s: status %d%s", endpoint, status, oauthError(body))
	}
	if jsonErr != nil || m == nil {
		return nil, fmt.Errorf("license: introspection at %s: the answer is not a JSON object", endpoint)
	}
	var active bool
	if raw, ok := m["active"]; !ok || json.Unmarshal(raw, &active) != nil {
		return nil, fmt.Errorf("license: introspection at %s: the answer has no boolean \"active\"", endpoint)
	}
	if !active {
		return v.invalid(now, fmt.Errorf("%w: the licence server says the token is not active", ErrInvalidToken)), nil
	}
	var c claims
	if err := c.read(m); err != nil {
		return nil, fmt.Errorf("license: introspection at %s: %w", endpoint, err)
	}
	r := &result{until: now.Add(introspectionTTL)}
	if c.hasExp {
		r.notAfter = c.exp.Add(v.skew)
		if now.After(r.notAfter) {
			return v.invalid(now, fmt.Errorf("%w: token expired at %s", ErrInvalidToken, c.exp.UTC().Format(time.RFC3339))), nil
		}
		if r.notAfter.Before(r.until) {
			r.until = r.notAfter
		}
	}
	if c.hasNbf && now.Add(v.skew).Before(c.nbf) {
		return v.invalid(now, fmt.Errorf("%w: token not valid before %s", ErrInvalidToken, c.nbf.UTC().Format(time.RFC3339))), nil
	}
	if raw, ok := m["aud"]; ok && string(raw) != "null" {
		if len(c.aud) == 0 {
			return nil, fmt.Errorf("license: introspection at %s: empty aud", endpoint)
		}
		r.aud, r.hasAud = c.aud, true
	} else {
		// The server judged the token for this resource only: without
		// an audience, the answer is not reused for another.
		r.resource = requestURL
	}
	if raw, ok := m["permitted"]; ok {
		var permitted bool
		if json.Unmarshal(raw, &permitted) != nil {
			return nil, fmt.Errorf("license: introspection at %s: \"permitted\" is not a boolean", endpoint)
		}
		if !permitted {
			r = v.invalid(now, fmt.Errorf("%w: the licence server says the token does not permit this resource%s", ErrInvalidToken, reason(m)))
		}
		r.resource = requestURL
	}
	return r, nil
}

// reason returns an introspection answer's OLP "reason", for a message.
func reason(m map[string]json.RawMessage) string {
	var s string
	if json.Unmarshal(m["reason"], &s) == nil && s != "" {
		return " (" + strconv.Quote(clip(s)) + ")"
	}
	return ""
}

// oauthError returns the OAuth error code of an error answer, for a
// message.
func oauthError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return " (" + strconv.Quote(clip(e.Error)) + ")"
	}
	return ""
}

// do sends req and reads at most maxJSON bytes of the answer.
func (v *Verifier) do(req *http.Request) (status int, body []byte, err error) {
	resp, err := v.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("license: %s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxJSON+1))
	if err != nil {
		return 0, nil, fmt.Errorf("license: %s %s: reading the answer: %w", req.Method, req.URL.Redacted(), err)
	}
	if len(body) > maxJSON {
		return 0, nil, fmt.Errorf("license: %s %s: the answer is longer than %d bytes", req.Method, req.URL.Redacted(), maxJSON)
	}
	return resp.StatusCode, body, nil
}

// isB64Token reports whether s is an RFC 6750 b64token, the syntax of a
// credential in an Authorization header.
func isB64Token(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

// claims are the claims of a token that Verify reads (RFC 7519 §4.1).
type claims struct {
	exp, nbf       time.Time
	hasExp, hasNbf bool
	iss            string
	hasIss         bool
	aud            []string
}

// read reads the claims from a JSON object's members (by their exact
// names, unlike encoding/json's case-insensitive fields). It fails on a
// claim of the wrong type.
func (c *claims) read(m map[string]json.RawMessage) error {
	var err error
	if c.exp, c.hasExp, err = numericDate(m, "exp"); err != nil {
		return err
	}
	if c.nbf, c.hasNbf, err = numericDate(m, "nbf"); err != nil {
		return err
	}
	if raw, ok := m["iss"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &c.iss) != nil {
			return errors.New("iss is not a string")
		}
		c.hasIss = true
	}
	if raw, ok := m["aud"]; ok && string(raw) != "null" {
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return errors.New("aud is not a string or an array of strings")
			}
			c.aud = []string{s}
		} else if json.Unmarshal(raw, &c.aud) != nil {
			return errors.New("aud is not a string or an array of strings")
		}
		if len(c.aud) > maxAudiences {
			return fmt.Errorf("aud names %d audiences, more than %d", len(c.aud), maxAudiences)
		}
	}
	return nil
}

// numericDate reads the NumericDate (seconds since the epoch, maybe with
// a fraction) m[name].
func numericDate(m map[string]json.RawMessage, name string) (time.Time, bool, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return time.Time{}, false, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return time.Time{}, false, fmt.Errorf("%s is not a number", name)
	}
	// Past year 33658, or before 1970: clamped, as no clock gets there.
	f = math.Max(0, math.Min(f, 1e12))
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}
