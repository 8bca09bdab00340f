package identity

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/settings"
)

// Values of VerifyConfig.OnSpoofed, VerifyConfig.OnDNSError and
// VerifyConfig.FetchFeeds.
const (
	SpoofedDeny    = "deny"
	SpoofedStar    = "star"
	DNSErrorStar   = "star"
	DNSErrorHeader = "header"
	FeedsAtStart   = "at_start"
	FeedsOnDemand  = "on_demand"
)

// maxFeedWait bounds VerifyConfig.FeedWait.
const maxFeedWait = time.Minute

// MaxDNSTimeout bounds VerifyConfig.DNSTimeout.
const MaxDNSTimeout = 30 * time.Second

// VerifyConfig configures crawler verification (Config.Verify), which is on
// unless Off is set. What it changes: a Verified claim is judged by the
// group its header names and, with crawl_delay_key "group", shares one
// budget per operator and group. A claim that is not verified never earns
// more than "*" and never escapes its own group: a Spoofed one (the
// operator publishes a check, its data is loaded, and the address fails
// it) is refused (OnSpoofed), and an Unverifiable one (no check published,
// feeds not loaded, DNS failing, an address that is not globally
// reachable) is judged by both its group and "*": a path is allowed only
// where both allow it, the longer Crawl-delay applies, and the budget is
// per address.
type VerifyConfig struct {
	// Off turns verification off: every User-Agent header is believed.
	// No other field may be set with it.
	Off bool `json:"off,omitempty"`

	// OnSpoofed says what a spoofed claim gets: "deny" (the default) answers
	// 403 with a body that says why; "star" judges it as an unverifiable
	// claim, by both its group and "*".
	OnSpoofed string `json:"on_spoofed,omitempty"`

	// OnDNSError says how a claim is judged when its reverse-DNS check
	// fails (a DNS error or timeout, too many checks at once) and no
	// loaded feed of the operator decides it: "star" (the default) judges
	// it as unverifiable, by both its group and "*", since the owner of an
	// address controls its reverse zone and can make the check fail;
	// "header" judges it by the group its header names alone, as if
	// verified (with a per-address budget). Neither answers 403 for the
	// failure itself.
	OnDNSError string `json:"on_dns_error,omitempty"`

	// FetchFeeds says when the operators' IP-range feeds are first
	// fetched: "on_demand" (the default, whatever else is written) fetches
	// an operator's feeds at the first claim of it from a globally
	// reachable address (or, for an operator of Operators, from any
	// address), so that a server no crawler reaches sends nothing;
	// "at_start" fetches every feed when the configuration loads. Either
	// way the stored copies (Caddy's storage, or CacheDir) are read at
	// start, the feeds are refreshed every Refresh, and a claim made
	// before its operator's feeds have loaded waits for them (FeedWait),
	// then is unverifiable, never spoofed.
	FetchFeeds string `json:"fetch_feeds,omitempty"`

	// FeedWait bounds how long a crawler's claim waits for an operator's
	// feed that has never loaded (no stored copy, and its first fetch
	// under way), as a new site's first request waits for its
	// robots.txt: a real crawler's first request after a start is judged
	// by its own group, not refused by "*" while its feed arrives. A
	// claim still unproven when the bound runs out is unverifiable
	// (judged by its group and "*"). A feed whose first fetch has ended,
	// loaded or failed, is never waited for. Default 5s; at most 1m.
	FeedWait duration.Duration `json:"feed_wait,omitempty"`

	// Refresh is how often each IP-range feed is fetched again
	// (conditionally). Default 24h; at least 1h. A shorter Cache-Control
	// max-age of a feed shortens it, down to 1h.
	Refresh duration.Duration `json:"refresh,omitempty"`

	// DNSTimeout bounds one forward-confirmed reverse-DNS check (PTR and
	// forward lookups). Default 2s; at most 30s.
	DNSTimeout duration.Duration `json:"dns_timeout,omitempty"`

	// Resolver is the host:port of the DNS server to ask, with the
	// verifier's own DNS client: one query per lookup, TCP after a
	// truncated answer, no /etc/hosts and no resolv.conf options; for a loopback IP
	// address (127.0.0.53:53, not localhost:53) its UDP sockets are
	// reused. Default: the system's resolver (Go's, reading
	// /etc/resolv.conf and /etc/hosts).
	Resolver string `json:"resolver,omitempty"`

	// DNSCacheSize bounds the cached reverse-DNS answers (one per address
	// and operator). Default 10000.
	DNSCacheSize int `json:"dns_cache_size,omitempty"`

	// Builtin keeps the built-in registry of operators (Builtin).
	// Default true; false leaves only Operators.
	Builtin *bool `json:"builtin,omitempty"`

	// Operators adds operators to the registry; one with the name of a
	// built-in operator replaces it whole.
	Operators []Operator `json:"operators,omitempty"`

	// WebBotAuth turns on Web Bot Auth: requests signed with HTTP Message
	// Signatures (RFC 9421, tag "web-bot-auth") by a known signature agent
	// are verified as its operator's, whatever their address. nil: off.
	WebBotAuth *WebBotAuthSettings `json:"web_bot_auth,omitempty"`

	// CacheDir is a directory where the last good copy of each feed is
	// kept, so that a restart without network still verifies. The Caddy
	// module uses Caddy's storage instead when it is empty. Default: none.
	CacheDir string `json:"cache_dir,omitempty"`
}

// WebBotAuthSettings configures Web Bot Auth (VerifyConfig.WebBotAuth).
type WebBotAuthSettings struct {
	// Agents pins signature agents: their origin, the registry operator
	// they stand for, and optionally their keys (JWK files); an agent
	// without keys has its key directory fetched. The registry's own
	// agents (e.g. https://chatgpt.com for openai) need no entry.
	Agents []SignatureAgent `json:"agents,omitempty"`
	// Discover fetches the key directories of agents that neither the
	// registry nor Agents name (on port 443 only), and reports them
	// verified as "agent <origin>": that proves who signed, not that the
	// signer is a crawler anyone vouches for, so such requests keep
	// per-address budgets and stay subject to traps and bans. Default
	// false: only known agents are trusted.
	Discover bool `json:"discover,omitempty"`
	// MaxWindow bounds expires − created of a signature. Default 24h.
	MaxWindow duration.Duration `json:"max_window,omitempty"`
	// AllowPrivateDirectories lets key directories be fetched from
	// private, loopback and link-local addresses. Default false.
	AllowPrivateDirectories bool `json:"allow_private_directories,omitempty"`
	// CAFile is a PEM file of CA certificates that key directories'
	// certificates may chain to, for agents under a private CA. Default:
	// the system's roots.
	CAFile string `json:"ca_file,omitempty"`
	// AcceptSignature adds, to a 403 or 429 for a request that claims an
	// operator with signature agents but carries no valid signature, the
	// Accept-Signature header (RFC 9421 §5.1) that says what to sign, as
	// draft-ietf-webbotauth-httpsig-protocol-01 lets an origin do, so that
	// a client that signs only when asked (a 401, 403 or 429 carrying the
	// header) signs its next request. Default true; false leaves the
	// header out.
	AcceptSignature *bool `json:"accept_signature,omitempty"`
}

// SignatureAgent is a pinned Web Bot Auth agent.
type SignatureAgent struct {
	// Origin is the agent's origin, e.g. "https://bot.example.com", or
	// the https URI of its JWK Set ("https://bot.example.com/keys.json").
	Origin string `json:"origin"`
	// Operator names the registry operator it stands for.
	Operator string `json:"operator,omitempty"`
	// Keys are JWK files of its public keys.
	Keys []string `json:"keys,omitempty"`
}

// Registry returns the operators in force: the built-in ones (unless
// Builtin is false) merged with Operators.
func (c *VerifyConfig) Registry() []Operator {
	var base []Operator
	if c.Builtin == nil || *c.Builtin {
		base = Builtin()
	}
	return Merge(base, c.Operators)
}

// WithDefaults returns a copy of c with defaults applied, or an error
// naming the first invalid field, e.g. "robots_guard: verify: refresh: ...".
func (c VerifyConfig) WithDefaults() (*VerifyConfig, error) {
	errf := func(field, format string, args ...any) error {
		return fmt.Errorf("robots_guard: verify: %s: "+format, append([]any{field}, args...)...)
	}
	if c.Off {
		if !reflect.DeepEqual(c, VerifyConfig{Off: true}) {
			return nil, errf("off", "verification is off: remove the other verify settings, or the off")
		}
		return &c, nil
	}
	if err := settings.Either(&c.FetchFeeds, FeedsOnDemand, FeedsAtStart, "verify", "fetch_feeds"); err != nil {
		return nil, err
	}
	if err := settings.Either(&c.OnSpoofed, SpoofedDeny, SpoofedStar, "verify", "on_spoofed"); err != nil {
		return nil, err
	}
	if err := settings.Either(&c.OnDNSError, DNSErrorStar, DNSErrorHeader, "verify", "on_dns_error"); err != nil {
		return nil, err
	}
	switch r := time.Duration(c.Refresh); {
	case r == 0:
		c.Refresh = duration.Duration(DefaultRefresh)
	case r < MinRefresh:
		return nil, errf("refresh", "must be at least 1h (the operators' feeds change slowly), got %s", r)
	}
	switch d := time.Duration(c.FeedWait); {
	case d == 0:
		c.FeedWait = duration.Duration(DefaultFeedWait)
	case d < 0 || d > maxFeedWait:
		return nil, errf("feed_wait", "must be at most 1m (0: the default, 5s), got %s", d)
	}
	switch d := time.Duration(c.DNSTimeout); {
	case d == 0:
		c.DNSTimeout = duration.Duration(DefaultDNSTimeout)
	case d < 0 || d > MaxDNSTimeout:
		return nil, errf("dns_timeout", "must be between 0 and 30s, got %s", d)
	}
	if err := CheckResolver(c.Resolver); err != nil {
		return nil, errf("resolver", "%v", err)
	}
	switch {
	case c.DNSCacheSize == 0:
		c.DNSCacheSize = DefaultCacheSize
	case c.DNSCacheSize < 0:
		return nil, errf("dns_cache_size", "must be positive, got %d", c.DNSCacheSize)
	}
	if w := c.WebBotAuth; w != nil {
		for i, a := range w.Agents {
			field := fmt.Sprintf("web_bot_auth: agents[%d]", i)
			o, err := checkAgent(a.Origin)
			switch {
			case err != nil:
				return nil, errf(field, "%v", err)
			case a.Operator == "" && len(a.Keys) == 0:
				return nil, errf(field, "%s: give the operator it stands for, its keys, or both", o)
			case strings.HasPrefix(o, "http://") && len(a.Keys) == 0:
				return nil, errf(field, "%s: key directories are fetched over https only; pin its keys", o)
			}
		}
		w2 := *w // the caller's block stays as it was
		switch d := time.Duration(w.MaxWindow); {
		case d == 0:
			w2.MaxWindow = duration.Duration(DefaultMaxWindow)
		case d < time.Minute || d > 7*24*time.Hour:
			return nil, errf("web_bot_auth: max_window", "must be between 1m and 168h, got %s", d)
		}
		if w2.AcceptSignature == nil {
			on := true
			w2.AcceptSignature = &on
		}
		c.WebBotAuth = &w2
	}
	ops := c.Registry()
	if err := Validate(ops); err != nil {
		return nil, fmt.Errorf("robots_guard: verify: %w", err)
	}
	if len(ops) == 0 {
		return nil, errf("operators", "the registry is empty (builtin is off and no operator is given)")
	}
	return &c, nil
}

// Deps is what a Verifier built from a VerifyConfig runs with besides it.
type Deps struct {
	// Storage keeps the last good copy of each feed; nil: CacheDir's
	// directory, or none.
	Storage Storage
	// Logger receives feed warnings and state changes; nil: none.
	Logger *zap.Logger
	// Observer receives feed and lookup outcomes; nil: none.
	Observer Observer
	// Now tells the time; nil: time.Now.
	Now func() time.Time
	// TLS, when not nil, is the TLS configuration of key directory
	// fetches (tests, a private CA given in code); else CAFile's roots,
	// or the system's.
	TLS *tls.Config
}

// NewVerifier returns the Verifier of c (with its defaults applied, see
// WithDefaults): its registry, feeds and DNS settings, and Web Bot Auth
// with the agents' key files and CA file read now.
func (c VerifyConfig) NewVerifier(d Deps) (*Verifier, error) {
	ic := Config{
		Operators:  c.Registry(),
		Refresh:    time.Duration(c.Refresh),
		DNSTimeout: time.Duration(c.DNSTimeout),
		FeedWait:   time.Duration(c.FeedWait),
		Resolver:   c.Resolver,
		CacheSize:  c.DNSCacheSize,
		Storage:    d.Storage,
		Logger:     d.Logger,
		Observer:   d.Observer,
		Now:        d.Now,
		OnDemand:   c.FetchFeeds == FeedsOnDemand,
	}
	if w := c.WebBotAuth; w != nil {
		wc, err := w.runtime(d.TLS)
		if err != nil {
			return nil, err
		}
		ic.WebBotAuth = wc
	}
	if ic.Storage == nil && c.CacheDir != "" {
		ic.Storage = DirStorage(c.CacheDir)
	}
	v, err := New(ic)
	if err != nil {
		return nil, fmt.Errorf("robots_guard: verify: %w", err)
	}
	return v, nil
}

// runtime reads the agents' key files and the CA file of w.
func (w *WebBotAuthSettings) runtime(tlsCfg *tls.Config) (*WebBotAuthConfig, error) {
	wc := &WebBotAuthConfig{Discover: w.Discover, MaxWindow: time.Duration(w.MaxWindow), AllowPrivate: w.AllowPrivateDirectories, TLS: tlsCfg}
	if w.CAFile != "" && wc.TLS == nil {
		pem, err := os.ReadFile(w.CAFile)
		if err != nil {
			return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: ca_file: %s holds no PEM certificate", w.CAFile)
		}
		wc.TLS = &tls.Config{RootCAs: pool}
	}
	for _, a := range w.Agents {
		ag := Agent{Origin: a.Origin, Operator: a.Operator}
		for _, f := range a.Keys {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: agent %s: key: %w", a.Origin, err)
			}
			k, err := ParseJWK(b)
			if err != nil {
				return nil, fmt.Errorf("robots_guard: verify: web_bot_auth: agent %s: key %s: %w", a.Origin, f, err)
			}
			ag.Keys = append(ag.Keys, k)
		}
		wc.Agents = append(wc.Agents, ag)
	}
	return wc, nil
}
