package limit

import (
	"fmt"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/settings"
)

// Defaults and bounds of the crawl_delay, clients and bans blocks. A zero
// field takes its default.
const (
	DefaultIPv4Prefix = 32
	DefaultIPv6Prefix = 64
	DefaultMaxKeys    = 100000
	DefaultBanFor     = time.Hour
	DefaultBanMax     = 24 * time.Hour
	MaxBanMax         = 30 * 24 * time.Hour
)

// Values of CrawlDelayConfig.Key and CrawlDelayConfig.Scope.
const (
	KeyIP      = "ip"
	KeyGroup   = "group"
	ScopeSite  = "site"
	ScopeBlock = "block"
)

// CrawlDelayConfig is Config.CrawlDelay, the crawl_delay block: how the
// groups' Crawl-delay is enforced.
type CrawlDelayConfig struct {
	// Key selects the key of the Crawl-delay limiter: "ip" (the default)
	// keys by site, group and client-IP prefix; "group" keys by site and
	// group for verified crawlers, so that one crawler spread over many
	// addresses shares one budget that nobody else can spend (other
	// clients keep per-address budgets; with verification off, every
	// header that names the group shares it).
	Key string `json:"key,omitempty"`

	// Scope says what one Crawl-delay clock covers besides the group and
	// the client: "site" (the default) one clock per site (scheme, host
	// and port), as robots.txt is per site; "block" one clock for every
	// host this configuration serves, for a catch-all server that answers
	// any Host with the same content, where a bot that rotates Host names
	// (m1.example, m2.example, ...) would otherwise get a fresh clock with
	// each name (50 of 50 requests in 5 s admitted at Crawl-delay 10 with
	// "site", 1 of 50 with "block": TestCrawlDelayScope). Blocks with the
	// same configuration share their clocks; with a store, so do the
	// instances of a fleet.
	Scope string `json:"scope,omitempty"`

	// Tolerance is how far ahead of its Crawl-delay a bot may run and
	// still pass, counted in delays, so that a crawler that keeps the
	// delay on average but randomises its spacing (Scrapy and wget
	// --random-wait space requests 0.5–1.5 × the delay apart) or meets
	// network jitter is not refused: with delay d the tolerance is this
	// many d, and at least 250ms or d/2, whichever is smaller (see package
	// limit). The long-run rate stays one request per d: over any interval
	// T at most ⌈T/d⌉ + 1 + ⌊tolerance⌋ requests pass (⌈T/d⌉ + 3 by
	// default), and a bot can send at most 1 + ⌊tolerance⌋ at once.
	// Default 2.5 (nil); 0 asks for strict spacing; at most 4.
	Tolerance *float64 `json:"tolerance,omitempty"`

	// MaxKeys caps the number of Crawl-delay limiter keys. Default 100000,
	// in 16 shards of MaxKeys/16. In a full shard, expired keys are evicted
	// first, then arbitrary ones (about 1% of the shard). One key costs about 85 bytes (see the package
	// documentation). Engines that share a limiter (WithLimiter; in
	// Caddy, handlers with the same max_keys, tolerance and store) share
	// this bound. It also bounds bans.after's denial counts.
	MaxKeys int `json:"max_keys,omitempty"`
}

// ClientsConfig is Config.Clients, the clients block: how client
// addresses are grouped into one client, in Crawl-delay keys, bans and
// the report.
type ClientsConfig struct {
	// IPv4Prefix is the prefix length that groups IPv4 clients. Default 32
	// (one address); 1 to 32.
	IPv4Prefix int `json:"ipv4_prefix,omitempty"`

	// IPv6Prefix is the prefix length that groups IPv6 clients. Default 64
	// (one subnet, the usual smallest allocation); 1 to 128.
	IPv6Prefix int `json:"ipv6_prefix,omitempty"`
}

// WithDefaults returns c with its zero fields set to their defaults, or
// an error that names the first invalid field, e.g. "robots_guard:
// crawl_delay: key: ...".
func (c CrawlDelayConfig) WithDefaults() (CrawlDelayConfig, error) {
	errf := func(field, format string, args ...any) error {
		return settings.Errorf("crawl_delay", field, format, args...)
	}
	if err := settings.Either(&c.Key, KeyIP, KeyGroup, "crawl_delay", "key"); err != nil {
		return c, err
	}
	if err := settings.Either(&c.Scope, ScopeSite, ScopeBlock, "crawl_delay", "scope"); err != nil {
		return c, err
	}
	switch t := c.Tolerance; {
	case t == nil:
		f := DefaultTolerance
		c.Tolerance = &f
	case !(*t >= 0 && *t <= MaxTolerance): // NaN too
		return c, errf("tolerance", "must be a number of Crawl-delays between 0 and %g (such as 2.5, or 0.25 for a quarter of the delay), got %g", MaxTolerance, *t)
	}
	return c, settings.OrDefault(&c.MaxKeys, DefaultMaxKeys, "crawl_delay", "max_keys")
}

// WithDefaults returns c with its zero fields set to their defaults, or
// an error that names the first invalid field.
func (c ClientsConfig) WithDefaults() (ClientsConfig, error) {
	if c.IPv4Prefix == 0 {
		c.IPv4Prefix = DefaultIPv4Prefix
	} else if c.IPv4Prefix < 1 || c.IPv4Prefix > 32 {
		return c, settings.Errorf("clients", "ipv4_prefix", "must be between 1 and 32, got %d", c.IPv4Prefix)
	}
	if c.IPv6Prefix == 0 {
		c.IPv6Prefix = DefaultIPv6Prefix
	} else if c.IPv6Prefix < 1 || c.IPv6Prefix > 128 {
		return c, settings.Errorf("clients", "ipv6_prefix", "must be between 1 and 128, got %d", c.IPv6Prefix)
	}
	return c, nil
}

// BansConfig is Config.Bans, the bans block.
type BansConfig struct {
	// For is how long a client (its address prefix, Clients) is refused
	// everything but /robots.txt after a trap hit or After: 403 with a
	// body that says why and until when. It doubles for each earlier ban
	// of the client within 7 days, up to Max. Default 1h.
	For duration.Duration `json:"for,omitempty"`

	// Max caps a repeat offender's ban. Default 24h; at most 30 days.
	Max duration.Duration `json:"max,omitempty"`

	// After also bans a client after a number of robots.txt denials
	// (denials) within a time (window), counted per instance. nil (the
	// default): off.
	After *BanAfter `json:"after,omitempty"`

	// MaxEntries caps the bans held (and remembered strikes). Default
	// 100000; when full, finished entries go first, then the bans that end
	// soonest.
	MaxEntries int `json:"max_entries,omitempty"`
}

// WithDefaults returns c with its zero fields set to their defaults, or
// an error that names the first invalid field.
func (c BansConfig) WithDefaults() (BansConfig, error) {
	errf := func(field, format string, args ...any) error {
		return settings.Errorf("bans", field, format, args...)
	}
	switch d := time.Duration(c.Max); {
	case d == 0:
		c.Max = duration.Duration(DefaultBanMax)
	case d < time.Second || d > MaxBanMax:
		return c, errf("max", "must be between 1s and 720h, got %s", d)
	}
	switch d := time.Duration(c.For); {
	case d == 0:
		c.For = duration.Duration(min(DefaultBanFor, time.Duration(c.Max)))
	case d < time.Second:
		return c, errf("for", "must be at least 1s, got %s", d)
	case d > time.Duration(c.Max):
		return c, errf("for", "must be at most max (%s), got %s", time.Duration(c.Max), d)
	}
	if b := c.After; b != nil {
		if b.Denials < 2 {
			return c, errf("after", "denials must be at least 2, got %d", b.Denials)
		}
		if w := time.Duration(b.Window); w <= 0 || w > 24*time.Hour {
			return c, errf("after", "window must be between 0 and 24h, got %s", w)
		}
	}
	return c, settings.OrDefault(&c.MaxEntries, DefaultMaxBans, "bans", "max_entries")
}

// BanAfter is BansConfig.After.
type BanAfter struct {
	// Denials is the number of robots.txt denials that bans; at least 2.
	Denials int `json:"denials"`
	// Window is the time they must fall within; at most 24h.
	Window duration.Duration `json:"window"`
}

// StoreConfig configures the shared Crawl-delay store (Config.Store): a
// Redis-protocol server (Redis 6+, Valkey). See package limit, type Redis.
type StoreConfig struct {
	// Redis is the server's URL: redis://[:password@]host:port[/db], or
	// rediss:// for TLS; with Cluster, a cluster's nodes in go-redis's
	// form, redis://host1:port?addr=host2:port&addr=host3:port (one node
	// is enough to find the others). Required. The password never appears
	// in logs or errors.
	Redis string `json:"redis"`

	// Cluster makes Redis a Redis Cluster or Valkey cluster. Every script
	// runs on one slot (a site's Crawl-delay keys share the site's hash
	// tag, the ban list's keys one tag of their own), and bans are
	// announced through sharded pub/sub, which needs Redis 7 or Valkey 7.2.
	Cluster bool `json:"cluster,omitempty"`

	// KeyPrefix starts every key, so that several sites or apps can share
	// one server. Default "robots_guard:".
	KeyPrefix string `json:"key_prefix,omitempty"`

	// Timeout bounds one decision's round trip. Default 50ms; at most 5s.
	Timeout duration.Duration `json:"timeout,omitempty"`

	// OnStoreError is what a request gets when its call fails: "allow"
	// (the default: it passes, and a sampled warning is logged) or "deny"
	// (429, Retry-After 1). After repeated failures calls pause and each
	// instance decides with its own in-memory clocks until the store
	// answers again.
	OnStoreError string `json:"on_store_error,omitempty"`
}

// withDefaults returns a copy of c with defaults applied, or an error
// naming the first invalid field.
func (c StoreConfig) WithDefaults() (*StoreConfig, error) {
	errf := func(field, format string, args ...any) error {
		return fmt.Errorf("robots_guard: store: %s: "+format, append([]any{field}, args...)...)
	}
	if c.Redis == "" {
		return nil, errf("redis", "the server's URL is required, e.g. redis://127.0.0.1:6379")
	}
	if err := CheckStoreURL(c.Redis, c.Cluster); err != nil {
		return nil, errf("redis", "%v", err)
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if err := CheckKeyPrefix(c.KeyPrefix); err != nil {
		return nil, fmt.Errorf("robots_guard: store: %w", err) // names key_prefix
	}
	switch d := time.Duration(c.Timeout); {
	case d == 0:
		c.Timeout = duration.Duration(DefaultStoreTimeout)
	case d < 0 || d > MaxStoreTimeout:
		return nil, errf("timeout", "must be between 0 and 5s, got %s", d)
	}
	if err := settings.Either(&c.OnStoreError, OnErrorAllow, OnErrorDeny, "store", "on_store_error"); err != nil {
		return nil, err
	}
	return &c, nil
}

// RedisConfig returns the configuration of the Redis limiter that c and
// the crawl_delay block cd describe (with their defaults applied): the
// store's server and behaviour, cd's tolerance, and cd's MaxKeys as the
// bound of its local keys.
func (c StoreConfig) RedisConfig(cd CrawlDelayConfig) RedisConfig {
	rc := RedisConfig{URL: c.Redis, Cluster: c.Cluster, KeyPrefix: c.KeyPrefix, Timeout: time.Duration(c.Timeout),
		OnError: c.OnStoreError, LocalKeys: cd.MaxKeys}
	if cd.Tolerance != nil {
		rc.Tolerance = *cd.Tolerance
	}
	return rc
}
