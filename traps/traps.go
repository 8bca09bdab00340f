// Package traps holds what robots_guard knows of traps: paths that
// robots.txt disallows for every bot, so that a client that fetches one
// ignores robots.txt whatever its User-Agent says. It owns the traps block
// (Config), the set of trap patterns (Set), whether a robots.txt arms a
// trap (Armed), the per-client link tokens (Links), the denial counter of
// bans.after (DenialCounter), and the interfaces the engine keeps grace
// clocks and reports through (ClockStore, Status). The engine (package
// guard) decides when a request springs a trap and bans.
package traps

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/policy"
)

// Set matches request targets against Config.Traps.Paths, compiled once as
// the Disallow lines of a robots.txt of one "*" group, so that trap
// patterns mean exactly what robots.txt patterns mean.
type Set struct {
	patterns []string
	match    *policy.Robots
	// prefixes are the patterns' literal starts (up to a wildcard); a
	// target that starts with none of them is no trap, which spares
	// every other request the match. nil when a pattern starts with '*'.
	prefixes []string
}

func NewSet(patterns []string) *Set {
	if len(patterns) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for _, p := range patterns {
		b.WriteString("Disallow: " + p + "\n")
	}
	t := &Set{patterns: patterns, match: policy.Parse([]byte(b.String()))}
	for _, p := range patterns {
		lit := p
		if i := strings.IndexAny(p, "*$%"); i >= 0 {
			lit = p[:i]
		}
		if lit == "" || lit == "/" {
			t.prefixes = nil
			break
		}
		t.prefixes = append(t.prefixes, lit)
	}
	return t
}

// Patterns returns the trap patterns, in the order of Hit's index.
func (t *Set) Patterns() []string { return t.patterns }

// Hit returns the index of the trap target matches, if any: trap i is
// on line i+2 of the compiled file.
func (t *Set) Hit(target string) (int, bool) {
	if t.prefixes != nil {
		// Literal prefixes up to '%': a target's escapes are compared
		// canonically by the match, so only bytes before any '%' in
		// both are compared here.
		maybe := false
		for _, p := range t.prefixes {
			n := len(p)
			if i := strings.IndexByte(target, '%'); i >= 0 && i < n {
				n = i
			}
			if len(target) >= n && target[:n] == p[:n] {
				maybe = true
				break
			}
		}
		if !maybe {
			return 0, false
		}
	}
	d := t.match.Decide("", target)
	if d.Allowed || d.Rule == nil {
		return 0, false
	}
	return d.Rule.Line - 2, true
}

// ArmedPath is Armed for a path rather than a pattern: whether r
// disallows target for every bot.
func ArmedPath(r *policy.Robots, target string) (ok bool, allowedFor string) {
	return armed(r, target)
}

// CoveredPath is a path a trap pattern covers: each '*' stands for "x",
// and a final '$' is dropped.
func CoveredPath(p string) string { return coveredPath(p) }

// armed reports whether r disallows target for every bot: every
// group, and the "*" group that judges bots no group names. When it does
// not, by names who may fetch it.
func armed(r *policy.Robots, target string) (armed bool, by string) {
	star := false
	for a := range r.Agents() {
		if a == "*" {
			star = true
		}
		if d := r.Agent(a).Decide(target); d.Allowed && !d.Exempt {
			return false, a
		}
	}
	if !star {
		return false, "bots no group names (there is no User-agent: * group)"
	}
	return true, ""
}

// coveredPath is a path a trap pattern covers, for the check of a new copy:
// each '*' stands for "x", and a final '$' is dropped.
func coveredPath(p string) string {
	p = strings.ReplaceAll(strings.TrimSuffix(p, "$"), "*", "x")
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	return p
}

// ClockStore keeps the grace clocks of traps (since when a site's
// robots.txt has disallowed a trap for every bot, without a break) across
// restarts, so that a restart does not disarm every trap for trap_grace.
// The Caddy module keeps them in Caddy's storage; without one (net/http by
// default) they live in memory. Calls come from robots.txt fetches, never
// from the request path.
type ClockStore interface {
	// LoadTrapClock returns the clock of trap at site, if one is kept:
	// since when the trap has been disallowed, and when that was last
	// confirmed by a fetch.
	LoadTrapClock(site, trap string) (since, confirmed time.Time, ok bool)
	// StoreTrapClock keeps it.
	StoreTrapClock(site, trap string, since, confirmed time.Time)
	// DeleteTrapClock forgets it: the site's robots.txt stopped
	// disallowing the trap for every bot.
	DeleteTrapClock(site, trap string)
}

// Status describes a trap of a site (SiteStatus.Traps).
type Status struct {
	// Trap is the trap's pattern.
	Trap string `json:"trap"`
	// State is "armed", "waiting" (robots.txt disallows it for every bot,
	// but not yet for trap_grace: see ArmsAt) or "not_armed" (a group
	// may fetch it: see AllowedFor).
	State string `json:"state"`
	// ArmsAt is when a waiting trap arms.
	ArmsAt time.Time `json:"arms_at,omitzero"`
	// AllowedFor names who may fetch a trap that is not armed.
	AllowedFor string `json:"allowed_for,omitempty"`
}

// DenialCounter counts robots.txt denials per client within a window
// (Config.Bans.After), for at most max clients; when full, windows that are
// over go first, then arbitrary ones.
type DenialCounter struct {
	mu     sync.Mutex
	m      map[limit.Client]denials
	max    int
	window int64
	n      int
}

// NewDenialCounter returns a counter of n denials within window, for at
// most max clients.
func NewDenialCounter(max int, window time.Duration, n int) *DenialCounter {
	return &DenialCounter{m: make(map[limit.Client]denials), max: max, window: int64(window), n: n}
}

type denials struct {
	start int64
	n     int
}

// Add counts a denial of client at now and reports whether it makes n
// within the window.
func (c *DenialCounter) Add(client limit.Client, now int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[client]
	if !ok || now-d.start > c.window {
		if !ok && len(c.m) >= c.max {
			// Make room for a tenth at once: windows that are over
			// first, then arbitrary ones.
			for k, v := range c.m {
				if now-v.start > c.window {
					delete(c.m, k)
				}
			}
			for k := range c.m {
				if len(c.m) < c.max*9/10 {
					break
				}
				delete(c.m, k)
			}
		}
		d = denials{start: now}
	}
	d.n++
	if d.n >= c.n {
		delete(c.m, client)
		return true
	}
	c.m[client] = d
	return false
}

// Armed reports whether the robots.txt r arms the trap pattern: whether
// it disallows the path the pattern covers (up to its first '*') for every
// bot, every group and the "*" group. When it does not, allowedFor names
// who may fetch it. "caddy robots lint --trap" reports it.
func Armed(r *policy.Robots, trap string) (ok bool, allowedFor string) {
	return armed(r, coveredPath(trap))
}

// Check checks the form of a trap pattern, as Config.WithDefaults does.
func Check(p string) error { return check(p) }

// LinkPath returns the trap whose path per-client links extend: the first
// that is a plain path (no '*' or '$'), with a trailing '/' so that the
// token is a path segment of its own; "" when there is none.
func LinkPath(patterns []string) string {
	for _, p := range patterns {
		if !strings.ContainsAny(p, "*$") {
			if !strings.HasSuffix(p, "/") {
				p += "/"
			}
			return p
		}
	}
	return ""
}

// TokenLen is the length of a trap link token: 12 bytes of an
// HMAC-SHA256, base64url.
const TokenLen = 16

// Token is the token of client's trap link on site on day (days since the
// Unix epoch, UTC): an HMAC of the three under key, which no one without
// the key can make for another client or another site. site names the
// site that shows the link ("https://example.com"), or the block of a
// catch-all server: a link shown on one site bans nobody on another.
func Token(key []byte, client limit.Client, day int64, site string) string {
	var msg [24]byte
	copy(msg[:16], client[:])
	binary.BigEndian.PutUint64(msg[16:], uint64(day))
	mac := hmac.New(sha256.New, key)
	mac.Write(msg[:])
	mac.Write([]byte(site))
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(mac.Sum(sum[:0])[:12])
}

// check checks the form of a trap pattern.
func check(p string) error {
	switch {
	case p == "" || (p[0] != '/' && p[0] != '*'):
		return fmt.Errorf("%q: a trap is a path pattern starting with '/' (robots.txt syntax), e.g. /no-robots/", p)
	case p == "/" || p == "*" || p == "/*":
		return fmt.Errorf("%q would make every path a trap", p)
	case strings.ContainsAny(p, " \t\r\n#"):
		return fmt.Errorf("%q: no spaces or '#' in a trap pattern", p)
	case len(p) > 512:
		return fmt.Errorf("trap pattern longer than 512 bytes")
	}
	return nil
}

// withDefaults checks and defaults the traps block.
// WithDefaults returns c with its zero fields set to their defaults, or
// an error that names the first invalid field, e.g. "robots_guard: traps:
// grace: ...".
func (c Config) WithDefaults() (Config, error) {
	errf := func(field, format string, args ...any) error {
		return fmt.Errorf("robots_guard: traps: %s: "+format, append([]any{field}, args...)...)
	}
	for i, p := range c.Paths {
		if err := check(p); err != nil {
			return c, errf(fmt.Sprintf("paths[%d]", i), "%v", err)
		}
	}
	switch c.Links {
	case "":
		c.Links = LinksClient
	case LinksClient, LinksStatic:
	default:
		return c, errf("links", "must be %q or %q, got %q", LinksClient, LinksStatic, c.Links)
	}
	if lt := LinkPath(c.Paths); c.Links == LinksClient && lt != "" && strings.ContainsAny(lt, "?#") {
		return c, errf("links", "the trap that links extend, %q, holds '?': a link must end in a path segment of its own; put a plain trap path (e.g. /no-robots/) first", lt)
	}
	if c.Links == LinksClient && len(c.Paths) > 0 && LinkPath(c.Paths) == "" {
		return c, errf("links", "per-client trap links need a trap that is a plain path (no '*' or '$'), e.g. /no-robots/; add one, or set links static")
	}
	if c.Secret != "" && len(c.Secret) < 16 {
		return c, errf("secret", "must be at least 16 bytes, got %d", len(c.Secret))
	}
	switch g := c.Grace; {
	case g == nil:
		d := duration.Duration(DefaultGrace)
		c.Grace = &d
	case *g < 0 || time.Duration(*g) > 7*24*time.Hour:
		return c, errf("grace", "must be between 0 and 168h, got %s", time.Duration(*g))
	}
	return c, nil
}

// Values of Config.Links.
const (
	LinksClient = "client"
	LinksStatic = "static"
)

// Config is the traps block of robots_guard.
type Config struct {
	// Paths are path patterns in robots.txt syntax ("/no-robots/",
	// "/*/print-all$") that no human is led to and that robots.txt must
	// disallow for every group: a client that fetches one ignores
	// robots.txt, whatever its User-Agent says, and is banned (Bans). A
	// trap is armed for a request only when the site's current robots.txt
	// disallows that path for every group, the "*" group included (so a
	// compliant crawler can never be caught); a trap that is not is
	// logged, with the group that allows it, when a copy is loaded.
	// Verified crawlers are never banned.
	Paths []string `json:"paths,omitempty"`

	// Grace is how long the site's robots.txt must have disallowed a
	// trap, without a break, before the trap arms: crawlers may keep a
	// robots.txt for up to 24 hours (RFC 9309 §2.4), so one that fetched
	// the file before the Disallow was added may follow the new link in
	// good faith. The clock starts at the first copy the guard sees that
	// arms the trap, so after a restart traps arm again after the grace.
	// Default 24h (nil); 0 arms at once (for a Disallow added long ago);
	// at most 168h.
	Grace *duration.Duration `json:"grace,omitempty"`

	// Links says how a trap catches a client. "client" (the default):
	// each client is shown a link of its own, the first trap that is a
	// plain path (no '*' or '$') followed by a token that only that
	// client can present (Engine.TrapLink; in Caddy the placeholder
	// {http.robots_guard.trap_link}): a request for it bans, whatever its
	// fetch metadata says, and any other request under a trap path gets
	// 403 and bans nobody, so no third party can aim a trap at a visitor
	// (an <img> on another site, a link in a mail). "static": the trap
	// path itself bans, unless the request's fetch metadata shows a
	// browser made to load it (a sub-resource, another site, no page at
	// all, a prefetch); plain-http sites get no fetch metadata, so there a
	// third party can get a visitor banned.
	Links string `json:"links,omitempty"`

	// Secret is the key of the per-client trap link tokens (at least 16
	// bytes). Empty: the Caddy module keeps one in Caddy's storage (shared
	// by the instances that share it), and a plain Engine makes a random
	// one, so its links change when it restarts.
	Secret string `json:"secret,omitempty"`
}

// DefaultGrace is Config.Grace's default.
const DefaultGrace = 24 * time.Hour
