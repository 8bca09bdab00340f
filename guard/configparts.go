package guard

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/identity"
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

// Bounds of VerifyConfig.
const (
	maxDNSTimeout = 30 * time.Second
)

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
	// way they are refreshed every Refresh, and a claim made before its
	// operator's feeds have loaded is unverifiable, never spoofed.
	FetchFeeds string `json:"fetch_feeds,omitempty"`

	// Refresh is how often each IP-range feed is fetched again
	// (conditionally). Default 24h; at least 1h. A shorter Cache-Control
	// max-age of a feed shortens it, down to 1h.
	Refresh duration.Duration `json:"refresh,omitempty"`

	// DNSTimeout bounds one forward-confirmed reverse-DNS check (PTR and
	// forward lookups). Default 2s; at most 30s.
	DNSTimeout duration.Duration `json:"dns_timeout,omitempty"`

	// Resolver is the host:port of the DNS server to ask. Default: the
	// system's resolver.
	Resolver string `json:"resolver,omitempty"`

	// DNSCacheSize bounds the cached reverse-DNS answers (one per address
	// and operator). Default 10000.
	DNSCacheSize int `json:"dns_cache_size,omitempty"`

	// Builtin keeps the built-in registry of operators (identity.Builtin).
	// Default true; false leaves only Operators.
	Builtin *bool `json:"builtin,omitempty"`

	// Operators adds operators to the registry; one with the name of a
	// built-in operator replaces it whole.
	Operators []identity.Operator `json:"operators,omitempty"`

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
	// Accept-Signature header that says what to sign (the draft's hint).
	// Default false.
	AcceptSignature bool `json:"accept_signature,omitempty"`
}

// SignatureAgent is a pinned Web Bot Auth agent.
type SignatureAgent struct {
	// Origin is the agent's origin, e.g. "https://bot.example.com".
	Origin string `json:"origin"`
	// Operator names the registry operator it stands for.
	Operator string `json:"operator,omitempty"`
	// Keys are JWK files of its public keys.
	Keys []string `json:"keys,omitempty"`
}

// Registry returns the operators in force: the built-in ones (unless
// Builtin is false) merged with Operators.
func (c *VerifyConfig) Registry() []identity.Operator {
	var base []identity.Operator
	if c.Builtin == nil || *c.Builtin {
		base = identity.Builtin()
	}
	return identity.Merge(base, c.Operators)
}

// withDefaults returns a copy of c with defaults applied, or an error
// naming the first invalid field.
func (c VerifyConfig) withDefaults() (*VerifyConfig, error) {
	errf := func(field, format string, args ...any) error {
		return fmt.Errorf("robots_guard: verify: %s: "+format, append([]any{field}, args...)...)
	}
	if c.Off {
		if !reflect.DeepEqual(c, VerifyConfig{Off: true}) {
			return nil, errf("off", "verification is off: remove the other verify settings, or the off")
		}
		return &c, nil
	}
	if err := either(&c.FetchFeeds, FeedsOnDemand, FeedsAtStart, errf, "fetch_feeds"); err != nil {
		return nil, err
	}
	if err := either(&c.OnSpoofed, SpoofedDeny, SpoofedStar, errf, "on_spoofed"); err != nil {
		return nil, err
	}
	if err := either(&c.OnDNSError, DNSErrorStar, DNSErrorHeader, errf, "on_dns_error"); err != nil {
		return nil, err
	}
	switch r := time.Duration(c.Refresh); {
	case r == 0:
		c.Refresh = duration.Duration(identity.DefaultRefresh)
	case r < identity.MinRefresh:
		return nil, errf("refresh", "must be at least 1h (the operators' feeds change slowly), got %s", r)
	}
	switch d := time.Duration(c.DNSTimeout); {
	case d == 0:
		c.DNSTimeout = duration.Duration(identity.DefaultDNSTimeout)
	case d < 0 || d > maxDNSTimeout:
		return nil, errf("dns_timeout", "must be between 0 and 30s, got %s", d)
	}
	if err := identity.CheckResolver(c.Resolver); err != nil {
		return nil, errf("resolver", "%v", err)
	}
	if err := orDefault(&c.DNSCacheSize, identity.DefaultCacheSize, "verify: dns_cache_size"); err != nil {
		return nil, err
	}
	if w := c.WebBotAuth; w != nil {
		for i, a := range w.Agents {
			field := fmt.Sprintf("web_bot_auth: agents[%d]", i)
			o, err := identity.NormalizeOrigin(a.Origin)
			switch {
			case err != nil:
				return nil, errf(field, "%v", err)
			case a.Operator == "" && len(a.Keys) == 0:
				return nil, errf(field, "%s: give the operator it stands for, its keys, or both", o)
			case strings.HasPrefix(o, "http://") && len(a.Keys) == 0:
				return nil, errf(field, "%s: key directories are fetched over https only; pin its keys", o)
			}
		}
		switch d := time.Duration(w.MaxWindow); {
		case d == 0:
			w2 := *w
			w2.MaxWindow = duration.Duration(identity.DefaultMaxWindow)
			c.WebBotAuth = &w2
		case d < time.Minute || d > 7*24*time.Hour:
			return nil, errf("web_bot_auth: max_window", "must be between 1m and 168h, got %s", d)
		}
	}
	ops := c.Registry()
	if err := identity.Validate(ops); err != nil {
		return nil, fmt.Errorf("robots_guard: verify: %w", err)
	}
	if len(ops) == 0 {
		return nil, errf("operators", "the registry is empty (builtin is off and no operator is given)")
	}
	return &c, nil
}
