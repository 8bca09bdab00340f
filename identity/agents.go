package identity

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"
)

// Bounds of key directories.
const (
	// DirectoryPath is where an agent serves its keys (the webbotauth
	// draft's well-known URI).
	DirectoryPath = "/.well-known/http-message-signatures-directory"
	// MaxDirectoryBytes caps a key directory.
	MaxDirectoryBytes = 64 << 10
	// DirectoryTimeout bounds one directory fetch.
	DirectoryTimeout = 5 * time.Second
	// Directory TTLs: the Cache-Control max-age, within these bounds.
	MinDirectoryTTL     = 5 * time.Minute
	DefaultDirectoryTTL = time.Hour
	MaxDirectoryTTL     = 24 * time.Hour
	// failedDirectoryTTL is how long a failed fetch is not retried.
	failedDirectoryTTL = time.Minute
)

// WebBotAuthConfig configures signature verification (Config.WebBotAuth).
type WebBotAuthConfig struct {
	// Agents pins agents: an origin ("https://chatgpt.com"), the operator
	// of the registry it stands for, and its keys. An agent without keys
	// has its directory fetched.
	Agents []Agent
	// Discover fetches the directories of agents that neither the
	// registry nor Agents name. Default false: only known agents are
	// trusted.
	Discover bool
	// MaxWindow bounds expires − created of a signature. Default 24h.
	MaxWindow time.Duration
	// AllowPrivate lets key directories be fetched from private, loopback
	// and link-local addresses (for tests and private deployments).
	// Default false: such addresses are refused at connection time, so a
	// Signature-Agent cannot point the guard into the private network.
	AllowPrivate bool
	// TLS replaces the TLS configuration of directory fetches (a private
	// CA).
	TLS *tls.Config
}

// Agent is a pinned signature agent.
type Agent struct {
	// Origin is the agent's origin, "https://host[:port]".
	Origin string
	// Operator names the registry operator the agent stands for.
	Operator string
	// Keys are its keys; empty: fetched from its directory.
	Keys []PublicKey
}

// NormalizeOrigin returns the origin of u ("https://host[:port]", lower
// case, no default port, no path), or an error.
func NormalizeOrigin(u string) (string, error) {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil {
		return "", fmt.Errorf("%q is not an https:// origin", u)
	}
	return originOf(p, u)
}

// originOf is NormalizeOrigin of a parsed URL (u, its text, for the error).
func originOf(p *url.URL, u string) (string, error) {
	if p.Host == "" || (p.Scheme != "https" && p.Scheme != "http") {
		return "", fmt.Errorf("%q is not an https:// origin", u)
	}
	host := strings.ToLower(p.Hostname())
	port := p.Port()
	if port == "443" && p.Scheme == "https" || port == "80" && p.Scheme == "http" {
		port = ""
	}
	o := p.Scheme + "://" + host
	if strings.Contains(host, ":") {
		o = p.Scheme + "://[" + host + "]"
	}
	if port != "" {
		o += ":" + port
	}
	return o, nil
}

// normalizeAgent returns the normal form of a signature agent reference:
// an origin (NormalizeOrigin: its key directory), or the https URI of a
// JWK Set as a draft -01 member may name (the origin's normal form and the
// path as written; no query or fragment). "" when it is neither.
func normalizeAgent(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil {
		return ""
	}
	return normalizeParsed(p, u)
}

// normalizeParsed is normalizeAgent of a parsed URL.
func normalizeParsed(p *url.URL, u string) string {
	if p.RawQuery != "" || p.Fragment != "" || p.User != nil {
		return ""
	}
	o, err := originOf(p, u)
	if err != nil {
		return ""
	}
	if path := p.EscapedPath(); path != "" && path != "/" {
		if !strings.HasPrefix(o, "https://") {
			return "" // key sets are fetched over https only
		}
		return o + path
	}
	return o
}

// checkAgent checks a signature agent of configuration: an https origin,
// or the https URI of a JWK Set. It returns its normal form.
func checkAgent(u string) (string, error) {
	if a := normalizeAgent(u); a != "" {
		return a, nil
	}
	return "", fmt.Errorf("%q is not an https:// origin or the https:// URI of a JWK Set (no query or fragment)", u)
}

// directory is a cached key directory.
type directory struct {
	mu         sync.Mutex // guards the fields; never held during a fetch
	fetchMu    sync.Mutex // one fetch at a time
	refreshing bool
	keys       map[string]PublicKey
	expires    time.Time
	err        error
	fetched    time.Time
}

// signers holds what signature verification needs: pinned keys, known
// agents and the directory cache.
type signers struct {
	// nonces are the discovered agents' nonces; agentNonces those of
	// each agent configuration names (maxNonces), made in newSigners and
	// only read after: SHA-256 of keyid and nonce -> its window and first
	// client.
	nonces      *lru.Cache[[32]byte, seenNonce]
	agentNonces map[string]*lru.Cache[[32]byte, seenNonce]
	cfg         WebBotAuthConfig
	pinned      map[string]map[string]PublicKey // origin → thumbprint → key
	opOf        map[string]*opEntry             // origin → operator
	client      *http.Client
	mu          sync.Mutex
	dirs        map[string]*directory // at most maxDirectories
	screen      atomic.Pointer[keyScreen]
	log         *zap.Logger
	now         func() time.Time
}

const maxDirectories = 1000

// guardedDial refuses private, loopback, link-local and unspecified
// addresses at connection time (after DNS), unless allowed.
func guardedDial(allow bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: DirectoryTimeout}
	if !allow {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			a := ap.Addr().Unmap()
			if a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() || a.IsMulticast() || inReserved(a) {
				return fmt.Errorf("refusing to fetch a key directory from %s (a private, loopback or link-local address)", a)
			}
			return nil
		}
	}
	return d.DialContext
}

// reserved are ranges that are not on the public Internet beyond what
// netip's predicates cover: carrier-grade NAT (cloud metadata services
// live there), IETF protocol assignments, benchmarking, NAT64 of private
// IPv4, deprecated site-local IPv6.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("fec0::/10"),
}

func inReserved(a netip.Addr) bool {
	for _, p := range reserved {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func newSigners(cfg WebBotAuthConfig, ops []*opEntry, log *zap.Logger, now func() time.Time) (*signers, error) {
	if cfg.MaxWindow <= 0 {
		cfg.MaxWindow = DefaultMaxWindow
	}
	s := &signers{cfg: cfg, pinned: map[string]map[string]PublicKey{}, opOf: map[string]*opEntry{}, dirs: map[string]*directory{}, log: log, now: now}
	s.nonces, _ = lru.New[[32]byte, seenNonce](maxNonces)
	for _, op := range ops {
		for _, a := range op.SignatureAgents {
			o, err := checkAgent(a)
			if err != nil {
				return nil, fmt.Errorf("operator %q: signature_agents: %w", op.Name, err)
			}
			s.opOf[o] = op
		}
	}
	for _, a := range cfg.Agents {
		o, err := checkAgent(a.Origin)
		if err != nil {
			return nil, fmt.Errorf("web_bot_auth: agent: %w", err)
		}
		if a.Operator != "" {
			found := false
			for _, op := range ops {
				if op.Name == a.Operator {
					s.opOf[o], found = op, true
				}
			}
			if !found {
				return nil, fmt.Errorf("web_bot_auth: agent %s: operator %q is not in the registry", o, a.Operator)
			}
		}
		if len(a.Keys) > 0 {
			m := map[string]PublicKey{}
			for _, k := range a.Keys {
				m[k.Thumbprint] = k
			}
			s.pinned[o] = m
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = guardedDial(cfg.AllowPrivate)
	tr.Proxy = nil
	if cfg.TLS != nil {
		tr.TLSClientConfig = cfg.TLS
	}
	s.client = &http.Client{Transport: tr, Timeout: DirectoryTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("key directories are not followed through redirects")
	}}
	s.agentNonces = map[string]*lru.Cache[[32]byte, seenNonce]{"": nil} // "": keys pinned without an agent
	for o := range s.opOf {
		s.agentNonces[o] = nil
	}
	for _, a := range cfg.Agents {
		o, _ := checkAgent(a.Origin) // checked above
		s.agentNonces[o] = nil
	}
	for o := range s.agentNonces {
		s.agentNonces[o], _ = lru.New[[32]byte, seenNonce](maxNonces)
	}
	s.rebuildScreen()
	return s, nil
}

// named reports whether origin is pinned or named by the registry.
func (s *signers) named(origin string) bool {
	_, p := s.pinned[origin]
	_, r := s.opOf[origin]
	return p || r
}

// known reports whether keys of an agent (an origin or a JWK Set URI,
// normalizeAgent's) may be fetched and trusted: named by configuration
// (a JWK Set URI exactly: a client's Signature-Agent never chooses what
// the guard fetches from a named origin), or discovered (Discover, https
// on the default port only, so a Signature-Agent cannot choose the
// guard's outbound ports).
func (s *signers) known(agent string) bool {
	if s.named(agent) {
		return true
	}
	host, _, _ := strings.Cut(strings.TrimPrefix(agent, "https://"), "/")
	return s.cfg.Discover && strings.HasPrefix(agent, "https://") && !strings.Contains(host, ":")
}

// lookup is the KeyLookup of verification: pinned keys first, then the
// agent's directory (fetched when needed, if the agent is known).
func (s *signers) lookup(ctx context.Context) KeyLookup {
	return func(agent, keyid string) (PublicKey, bool) {
		if agent == "" {
			for _, m := range s.pinned {
				if k, ok := m[keyid]; ok {
					return k, true
				}
			}
			return PublicKey{}, false
		}
		// Keys are looked up by (URL, key): a JWK Set the member names,
		// or the origin's key directory (agent is agentRef's: normal).
		src := agent
		if !s.known(src) {
			return PublicKey{}, false
		}
		if m, ok := s.pinned[src]; ok {
			k, ok := m[keyid]
			return k, ok
		}
		keys := s.directoryKeys(ctx, src)
		k, ok := keys[keyid]
		return k, ok
	}
}

// directoryKeys returns the keys of origin's directory. The first request
// for an agent fetches it (bounded by DirectoryTimeout, not cancelled with
// the request, so a client that hangs up cannot leave a failure cached);
// later ones get the cached keys, and an expired copy is refreshed in the
// background while it still serves. Registry and pinned agents are never
// evicted; discovered ones are, at random, beyond maxDirectories.
func (s *signers) directoryKeys(ctx context.Context, origin string) map[string]PublicKey {
	s.mu.Lock()
	d, ok := s.dirs[origin]
	if !ok {
		if len(s.dirs) >= maxDirectories {
			for k := range s.dirs {
				if !s.named(k) {
					delete(s.dirs, k)
					break
				}
			}
		}
		d = &directory{}
		s.dirs[origin] = d
	}
	s.mu.Unlock()
	d.mu.Lock()
	now := s.now()
	switch {
	case d.keys != nil && now.Before(d.expires):
		k := d.keys
		d.mu.Unlock()
		return k
	case d.keys != nil:
		// Expired: serve the copy, refresh it in the background once.
		k := d.keys
		if !d.refreshing {
			d.refreshing = true
			go func() {
				s.load(context.Background(), origin, d)
				d.mu.Lock()
				d.refreshing = false
				d.mu.Unlock()
			}()
		}
		d.mu.Unlock()
		return k
	case d.err != nil && now.Before(d.expires):
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	return s.load(context.WithoutCancel(ctx), origin, d)
}

// load fetches origin's directory into d, one fetch at a time.
func (s *signers) load(ctx context.Context, origin string, d *directory) map[string]PublicKey {
	d.fetchMu.Lock()
	defer d.fetchMu.Unlock()
	d.mu.Lock()
	if d.keys != nil && s.now().Before(d.expires) { // another caller loaded it
		k := d.keys
		d.mu.Unlock()
		return k
	}
	d.mu.Unlock()
	keys, ttl, err := s.fetch(ctx, origin)
	now := s.now()
	d.mu.Lock()
	if err != nil {
		s.log.Warn("robots_guard: web bot auth: key directory not loaded", zap.String("agent", origin), zap.Error(err))
		d.err = err
		if d.keys == nil {
			d.expires = now.Add(failedDirectoryTTL)
		} else {
			d.expires = now.Add(MinDirectoryTTL) // the last good keys serve a while longer
		}
		keys = d.keys
	} else {
		d.keys, d.err, d.expires, d.fetched = keys, nil, now.Add(ttl), now
	}
	d.mu.Unlock()
	s.rebuildScreen()
	return keys
}

// keyScreen is what screenKeyIDs reads without a lock: the key ids of the
// trusted agents, valid until until; open when it cannot refuse anything
// (discovery is on, or a registry agent's keys are not loaded, failed to
// load, or are due for a refresh: only a lookup fetches them).
type keyScreen struct {
	ids   map[string]struct{}
	open  bool
	until time.Time
}

// rebuildScreen makes the keyScreen of the pinned keys and the directories
// as they are now.
func (s *signers) rebuildScreen() {
	ks := &keyScreen{ids: map[string]struct{}{}, open: s.cfg.Discover}
	for _, m := range s.pinned {
		for id := range m {
			ks.ids[id] = struct{}{}
		}
	}
	now := s.now()
	ks.until = now.Add(24 * 365 * time.Hour)
	for o := range s.opOf {
		if _, ok := s.pinned[o]; ok {
			continue
		}
		s.mu.Lock()
		d := s.dirs[o]
		s.mu.Unlock()
		if d == nil {
			ks.open = true // never asked for: its keys are not known yet
			continue
		}
		d.mu.Lock()
		if d.keys == nil || !now.Before(d.expires) {
			ks.open = true
		}
		for id := range d.keys {
			ks.ids[id] = struct{}{}
		}
		if d.expires.Before(ks.until) {
			ks.until = d.expires
		}
		d.mu.Unlock()
	}
	s.screen.Store(ks)
}

// keyScreen returns the key ids that are trusted now, or nil when the
// screen cannot refuse anything.
func (s *signers) currentScreen() *keyScreen {
	ks := s.screen.Load()
	if ks == nil || ks.open || !s.now().Before(ks.until) {
		return nil
	}
	return ks
}

// directoryMediaType is the media type a key directory must be served
// with at the well-known path (draft-ietf-webbotauth-httpsig-protocol).
const directoryMediaType = "application/http-message-signatures-directory+json"

// fetch gets and parses the keys of src: an origin's key directory (at
// DirectoryPath, served as directoryMediaType), or a JWK Set at a URI of
// its own (served as JSON: application/jwk-set+json, application/json or
// another +json type). Only a 200 answer counts: redirects are not
// followed (the client refuses them), and every other status fails.
func (s *signers) fetch(ctx context.Context, src string) (map[string]PublicKey, time.Duration, error) {
	if !strings.HasPrefix(src, "https://") {
		return nil, 0, fmt.Errorf("%s: key directories are fetched over https only", src)
	}
	u, want := src+DirectoryPath, directoryMediaType
	if isKeySetURI(src) {
		u, want = src, ""
	}
	ctx, cancel := context.WithTimeout(ctx, DirectoryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", directoryMediaType+", application/jwk-set+json, application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%s answered %s", u, resp.Status)
	}
	if err := checkKeysType(resp.Header.Get("Content-Type"), want); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", u, err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDirectoryBytes+1))
	if err != nil {
		return nil, 0, err
	}
	if len(body) > MaxDirectoryBytes {
		return nil, 0, fmt.Errorf("key directory larger than %d bytes", MaxDirectoryBytes)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, 0, fmt.Errorf("key directory: %w", err)
	}
	keys := map[string]PublicKey{}
	for _, raw := range set.Keys {
		if k, err := ParseJWK(raw); err == nil {
			keys[k.Thumbprint] = k
		}
	}
	if len(keys) == 0 {
		return nil, 0, errors.New("key directory holds no usable key")
	}
	ttl := DefaultDirectoryTTL
	if ma := parseMaxAge(resp.Header.Get("Cache-Control")); ma > 0 {
		ttl = min(max(ma, MinDirectoryTTL), MaxDirectoryTTL)
	}
	return keys, ttl, nil
}

// checkKeysType checks the media type of keys: want when it is set (a key
// directory), else a JSON type.
func checkKeysType(contentType, want string) error {
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
		return fmt.Errorf("no media type (Content-Type %q)", contentType)
	case want != "" && mt != want:
		return fmt.Errorf("served as %s, not %s", mt, want)
	case want == "" && mt != "application/json" && !strings.HasSuffix(mt, "+json"):
		return fmt.Errorf("served as %s, not JSON", mt)
	}
	return nil
}
