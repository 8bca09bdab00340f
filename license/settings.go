package license

import (
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/settings"
)

// Values of Config.Mode.
const (
	// ModeEnforce answers a bot that fetches licensed content without a
	// valid token 401 (402 where the licence asks payment).
	ModeEnforce = "enforce"
	// ModeReport judges the same in dry run: the requests pass, what
	// would have stopped them is logged and counted.
	ModeReport = "report"
	// ModeOff reads no RSL document and asks no bot for a token.
	ModeOff = "off"
)

// Defaults and bounds of the licenses block.
const (
	DefaultRefresh      = time.Hour
	DefaultMaxDocuments = 4
	MaxMaxDocuments     = 16
	DefaultFetchTimeout = 10 * time.Second
	// DefaultTokenCacheSize is the tokens whose verification is
	// remembered (Config.TokenCacheSize, VerifierConfig.CacheSize).
	DefaultTokenCacheSize = 10000
)

// Config is the licenses block: how the licences that a site's robots.txt
// names (RSL 1.0 License lines) are enforced on bots.
type Config struct {
	// Mode is "enforce" (the default), "report" or "off".
	Mode string `json:"mode,omitempty"`
	// Refresh is how long a fetched RSL document is used before it is
	// fetched again (the last good copy is kept when that fails).
	// Default 1h.
	Refresh duration.Duration `json:"refresh,omitempty"`
	// MaxDocuments bounds the License lines of one robots.txt whose
	// documents are fetched, in file order. Default 4, at most 16.
	MaxDocuments int `json:"max_documents,omitempty"`
	// FetchTimeout bounds the fetch of a document, of a licence server's
	// keys and of a token's introspection. Default 10s.
	FetchTimeout duration.Duration `json:"fetch_timeout,omitempty"`
	// TokenCacheSize bounds the tokens whose verification is remembered.
	// Default 10000.
	TokenCacheSize int `json:"token_cache_size,omitempty"`
}

// WithDefaults returns c with its zero fields set to their defaults, or an
// error that names the invalid field ("robots_guard: licenses: mode: ...").
func (c Config) WithDefaults() (Config, error) {
	switch c.Mode {
	case "":
		c.Mode = ModeEnforce
	case ModeEnforce, ModeReport, ModeOff:
	default:
		return c, settings.Errorf("licenses", "mode", "must be %q, %q or %q, got %q", ModeEnforce, ModeReport, ModeOff, c.Mode)
	}
	if c.Refresh == 0 {
		c.Refresh = duration.Duration(DefaultRefresh)
	} else if c.Refresh < duration.Duration(time.Minute) {
		return c, settings.Errorf("licenses", "refresh", "must be at least 1m, got %s", time.Duration(c.Refresh))
	}
	if c.FetchTimeout == 0 {
		c.FetchTimeout = duration.Duration(DefaultFetchTimeout)
	} else if c.FetchTimeout < 0 || c.FetchTimeout > duration.Duration(time.Minute) {
		return c, settings.Errorf("licenses", "fetch_timeout", "must be between 0 and 1m, got %s", time.Duration(c.FetchTimeout))
	}
	if err := settings.OrDefault(&c.MaxDocuments, DefaultMaxDocuments, "licenses", "max_documents"); err != nil {
		return c, err
	}
	if c.MaxDocuments > MaxMaxDocuments {
		return c, settings.Errorf("licenses", "max_documents", "must be at most %d, got %d", MaxMaxDocuments, c.MaxDocuments)
	}
	if err := settings.OrDefault(&c.TokenCacheSize, DefaultTokenCacheSize, "licenses", "token_cache_size"); err != nil {
		return c, err
	}
	return c, nil
}
