package guard

//go:generate go run ../internal/configref -root ..

import (
	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/license"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/traps"

	"github.com/robotsguard/robotsguard/sites"
)

// Values of Config.ContentSignals.
const (
	SignalsEnforce = "enforce"
	SignalsReport  = "report"
	SignalsOff     = "off"
)

// Config is the serialisable configuration of an Engine. Its JSON form is
// what the Caddy module reads (the module embeds it), so every field has a
// snake_case tag and every zero value means "use the default". Settings
// are grouped by what they are about, one block each, in the Caddyfile as
// in JSON (robots_txt { }, bots { }, verify { }, crawl_delay { }, ...).
// Every duration, nested ones included, is a Duration: "90s", "1h30m",
// "1d" or integer nanoseconds.
type Config struct {
	// RobotsTxt says where each site's robots.txt comes from and how it
	// is fetched and cached.
	RobotsTxt sites.Config `json:"robots_txt,omitzero"`

	// Bots says which clients are bots besides those the built-in
	// crawler list and the User-Agent parser recognise.
	Bots classify.Config `json:"bots,omitzero"`

	// Verify configures crawler verification, which is on by default: a
	// request whose User-Agent names a registered crawler operator's token
	// (Googlebot, GPTBot, ...) is checked against the operator's published
	// IP ranges and reverse-DNS domains (package identity), so that no
	// header that names a registered operator earns more than the "*"
	// group unless its address proves it (a name no operator registers is
	// judged by its group, as ever).
	// nil: on, with the built-in operators and every default, feeds
	// fetched on demand (identity.VerifyConfig.FetchFeeds). {"off": true} turns it
	// off, and every header is believed.
	Verify *identity.VerifyConfig `json:"verify,omitempty"`

	// CrawlDelay says how the groups' Crawl-delay is enforced.
	CrawlDelay limit.CrawlDelayConfig `json:"crawl_delay,omitzero"`

	// Clients says how client addresses are grouped into one client: in
	// Crawl-delay keys, bans and the report.
	Clients limit.ClientsConfig `json:"clients,omitzero"`

	// Traps are paths that robots.txt disallows for every bot: a client
	// that fetches one ignores robots.txt and is banned. Default: none.
	Traps traps.Config `json:"traps,omitzero"`

	// Bans says how long a client caught by a trap or by bans.after is
	// refused, and how many bans are held.
	Bans limit.BansConfig `json:"bans,omitzero"`

	// Store keeps the Crawl-delay clocks and the bans in a shared store,
	// so that a bot spreading its requests over several instances gets one
	// budget, not one per instance. nil (the default) keeps them in memory,
	// per instance. In Caddy, the connections survive reloads that keep
	// this block.
	Store *limit.StoreConfig `json:"store,omitempty"`

	// ContentSignals says what to do with the AI-use preferences of
	// robots.txt (Content-Signal and Content-Usage lines, SEMANTICS.md
	// §8a): "enforce" (the default) answers 403 (reason content_signal) to
	// a crawler whose documented purpose (search, ai-input, ai-train; the
	// registry in package identity, each entry with its source) the group
	// of its request says no to, on paths the group allows; "report"
	// counts and logs such requests as a dry run's denials and lets them
	// pass; "off" reads the lines and ignores them. Unknown crawlers,
	// crawlers with no listed purpose and browsers are never affected.
	ContentSignals string `json:"content_signals,omitempty"`

	// Licenses says how the licences that a site's robots.txt names
	// (RSL 1.0 License lines) are enforced on bots: a bot that fetches
	// content a licence with a licence server covers needs a valid token
	// of it (docs/licensing.md).
	Licenses license.Config `json:"licenses,omitzero"`

	// DryRun decides, logs and reports every request but lets all of them
	// through, to try a configuration on live traffic.
	DryRun bool `json:"dry_run,omitempty"`

	// LogQuery writes the query string of a denied or throttled request's
	// target into its log line. Default false: the line shows the path and
	// "?…", since queries carry tokens and e-mail addresses.
	LogQuery bool `json:"log_query,omitempty"`
}

// Verifying reports whether crawler verification is on: Verify is nil (the
// default) or not Off.
func (c Config) Verifying() bool { return c.Verify == nil || !c.Verify.Off }
