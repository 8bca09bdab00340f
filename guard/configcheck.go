package guard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/limit"
)

// Validation of Config: each block checks and defaults its own fields,
// and Config composes them.

// checkTrap checks the form of a trap pattern.
func checkTrap(p string) error {
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

// Validate reports the first invalid field of c, by name, or nil. New
// calls it; front ends call it to reject a configuration early (the Caddy
// module does at adapt time).
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// WithDefaults returns a copy of c with every zero field set to its
// default, as New applies them, or an error naming the first invalid field.
func (c Config) WithDefaults() (Config, error) { return c.withDefaults() }

// withDefaults returns a copy of c with zero fields set to their defaults,
// or an error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	c.RobotsTxt.SiteNames = slices.Clone(c.RobotsTxt.SiteNames)
	c.Traps.Paths = slices.Clone(c.Traps.Paths)
	for _, check := range [...]func() error{c.RobotsTxt.withDefaults, c.botDefaults, c.CrawlDelay.withDefaults,
		c.Clients.withDefaults, c.Traps.withDefaults, c.Bans.withDefaults, c.signalDefaults} {
		if err := check(); err != nil {
			return c, err
		}
	}
	if c.Store != nil {
		st, err := c.Store.withDefaults()
		if err != nil {
			return c, err
		}
		c.Store = st
	}
	if c.Verify == nil {
		c.Verify = &VerifyConfig{}
	}
	v, err := c.Verify.withDefaults()
	if err != nil {
		return c, err
	}
	c.Verify = v
	return c, nil
}

// botDefaults checks and defaults the bots block (package classify).
func (c *Config) botDefaults() (err error) {
	c.Bots, err = c.Bots.WithDefaults()
	return err
}

// signalDefaults checks and defaults ContentSignals.
func (c *Config) signalDefaults() error {
	switch c.ContentSignals {
	case "":
		c.ContentSignals = SignalsEnforce
	case SignalsEnforce, SignalsReport, SignalsOff:
	default:
		return configErr("content_signals", "must be %q, %q or %q, got %q", SignalsEnforce, SignalsReport, SignalsOff, c.ContentSignals)
	}
	return nil
}

// either sets an empty *v to def and refuses a value other than def and
// other, with errf naming field.
func either(v *string, def, other string, errf func(field, format string, args ...any) error, field string) error {
	switch *v {
	case "":
		*v = def
	case def, other:
	default:
		return errf(field, "must be %q or %q, got %q", def, other, *v)
	}
	return nil
}

// configErr is the error of an invalid field: "robots_guard: <field>: ...".
func configErr(field, format string, args ...any) error {
	return fmt.Errorf("robots_guard: %s: "+format, append([]any{field}, args...)...)
}

// fetchDefaults checks and defaults the robots_txt block.
func (c *RobotsTxtConfig) withDefaults() error {
	errf := func(field, format string, args ...any) error {
		return configErr("robots_txt: "+field, format, args...)
	}
	if err := checkRobotsTxt(c.Source); err != nil {
		return err
	}
	switch {
	case c.Refresh < 0:
		return errf("refresh", "must be positive, got %s", time.Duration(c.Refresh))
	case c.Refresh == 0:
		c.Refresh = duration.Duration(DefaultRefresh)
	case time.Duration(c.Refresh) > MaxRefresh:
		return errf("refresh", "must be at most 24h, got %s", time.Duration(c.Refresh))
	}
	switch {
	case c.FetchTimeout < 0:
		return errf("fetch_timeout", "must be positive, got %s", time.Duration(c.FetchTimeout))
	case c.FetchTimeout == 0:
		c.FetchTimeout = duration.Duration(DefaultFetchTimeout)
	case time.Duration(c.FetchTimeout) > MaxFetchTimeout:
		return errf("fetch_timeout", "must be at most 1m, got %s", time.Duration(c.FetchTimeout))
	}
	if err := either(&c.OnUnreachable, UnreachableDisallow, UnreachableAllow, errf, "on_unreachable"); err != nil {
		return err
	}
	if err := orDefault(&c.MaxBytes, DefaultMaxRobotsBytes, "robots_txt: max_bytes"); err != nil {
		return err
	}
	if c.MaxBytes < MinMaxRobotsBytes {
		return errf("max_bytes", "must be at least %d (4 MiB: one robots.txt of the largest size read, 500 KiB, compiled), got %d", MinMaxRobotsBytes, c.MaxBytes)
	}
	if err := orDefault(&c.NewSitesPerSecond, DefaultNewSitesPerSecond, "robots_txt: new_sites_per_second"); err != nil {
		return err
	}
	return orDefault(&c.MaxSites, DefaultMaxSites, "robots_txt: max_sites")
}

// withDefaults checks and defaults the crawl_delay block.
func (c *CrawlDelayConfig) withDefaults() error {
	errf := func(field, format string, args ...any) error {
		return configErr("crawl_delay: "+field, format, args...)
	}
	if err := either(&c.Key, KeyIP, KeyGroup, errf, "key"); err != nil {
		return err
	}
	if err := either(&c.Scope, ScopeSite, ScopeBlock, errf, "scope"); err != nil {
		return err
	}
	switch t := c.Tolerance; {
	case t == nil:
		f := limit.DefaultTolerance
		c.Tolerance = &f
	case !(*t >= 0 && *t <= limit.MaxTolerance): // NaN too
		return errf("tolerance", "must be a number of Crawl-delays between 0 and %g (such as 2.5, or 0.25 for a quarter of the delay), got %g", limit.MaxTolerance, *t)
	}
	return orDefault(&c.MaxKeys, DefaultMaxKeys, "crawl_delay: max_keys")
}

// withDefaults checks and defaults the clients block.
func (c *ClientsConfig) withDefaults() error {
	if c.IPv4Prefix == 0 {
		c.IPv4Prefix = DefaultIPv4Prefix
	} else if c.IPv4Prefix < 1 || c.IPv4Prefix > 32 {
		return configErr("clients: ipv4_prefix", "must be between 1 and 32, got %d", c.IPv4Prefix)
	}
	if c.IPv6Prefix == 0 {
		c.IPv6Prefix = DefaultIPv6Prefix
	} else if c.IPv6Prefix < 1 || c.IPv6Prefix > 128 {
		return configErr("clients: ipv6_prefix", "must be between 1 and 128, got %d", c.IPv6Prefix)
	}
	return nil
}

// withDefaults checks and defaults the traps block.
func (c *TrapsConfig) withDefaults() error {
	errf := func(field, format string, args ...any) error {
		return configErr("traps: "+field, format, args...)
	}
	for i, p := range c.Paths {
		if err := checkTrap(p); err != nil {
			return errf(fmt.Sprintf("paths[%d]", i), "%v", err)
		}
	}
	if err := either(&c.Links, TrapLinksClient, TrapLinksStatic, errf, "links"); err != nil {
		return err
	}
	if lt := linkTrap(c.Paths); c.Links == TrapLinksClient && lt != "" && strings.ContainsAny(lt, "?#") {
		return errf("links", "the trap that links extend, %q, holds '?': a link must end in a path segment of its own; put a plain trap path (e.g. /no-robots/) first", lt)
	}
	if c.Links == TrapLinksClient && len(c.Paths) > 0 && linkTrap(c.Paths) == "" {
		return errf("links", "per-client trap links need a trap that is a plain path (no '*' or '$'), e.g. /no-robots/; add one, or set links static")
	}
	if c.Secret != "" && len(c.Secret) < 16 {
		return errf("secret", "must be at least 16 bytes, got %d", len(c.Secret))
	}
	switch g := c.Grace; {
	case g == nil:
		d := duration.Duration(DefaultTrapGrace)
		c.Grace = &d
	case *g < 0 || time.Duration(*g) > 7*24*time.Hour:
		return errf("grace", "must be between 0 and 168h, got %s", time.Duration(*g))
	}
	return nil
}

// withDefaults checks and defaults the bans block.
func (c *BansConfig) withDefaults() error {
	errf := func(field, format string, args ...any) error {
		return configErr("bans: "+field, format, args...)
	}
	switch d := time.Duration(c.Max); {
	case d == 0:
		c.Max = duration.Duration(DefaultBanMax)
	case d < time.Second || d > MaxBanMax:
		return errf("max", "must be between 1s and 720h, got %s", d)
	}
	switch d := time.Duration(c.For); {
	case d == 0:
		c.For = duration.Duration(min(DefaultBanFor, time.Duration(c.Max)))
	case d < time.Second:
		return errf("for", "must be at least 1s, got %s", d)
	case d > time.Duration(c.Max):
		return errf("for", "must be at most max (%s), got %s", time.Duration(c.Max), d)
	}
	if b := c.After; b != nil {
		if b.Denials < 2 {
			return errf("after", "denials must be at least 2, got %d", b.Denials)
		}
		if w := time.Duration(b.Window); w <= 0 || w > 24*time.Hour {
			return errf("after", "window must be between 0 and 24h, got %s", w)
		}
	}
	return orDefault(&c.MaxEntries, limit.DefaultMaxBans, "bans: max_entries")
}

// hostPortPath matches a value that names a host and port without a scheme,
// such as "localhost:8081/robots.txt" or "[::1]:80".
var hostPortPath = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):[0-9]+(/.*)?$`)

// uriScheme matches the scheme of an absolute URI.
var uriScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// checkRobotsTxt checks the form of Config.RobotsTxt.Source: an http:// or https://
// URL with a host, or something that can be a file path. Whether the file
// exists is checked by New (CheckRobotsTxtFile), not here, so that a
// configuration can be adapted on another machine.
func checkRobotsTxt(v string) error {
	const field = "robots_guard: robots_txt: "
	if v == "" {
		return nil
	}
	if m := uriScheme.FindStringSubmatch(v); m != nil {
		switch scheme := strings.ToLower(m[1]); scheme {
		case "http", "https":
			u, err := url.Parse(v)
			if err != nil || u.Host == "" {
				return fmt.Errorf(field+"invalid URL %q: write it as http://host[:port]/robots.txt", v)
			}
			return nil
		case "file":
			return fmt.Errorf(field+"%q: write a file path without file://, e.g. %q", v, strings.TrimPrefix(v, m[0]))
		default:
			return fmt.Errorf(field+"%q: scheme %q is not supported; give an http:// or https:// URL, or a file path", v, m[1])
		}
	}
	if hostPortPath.MatchString(v) {
		return fmt.Errorf(field+"%q looks like a host and port without a scheme; write %q (or give a file path)", v, "http://"+v)
	}
	return nil
}

// looksLikeHost reports whether s, the first segment of a relative path,
// is rather a host: an IP address, localhost, or a name with a dot between
// two labels (not "." or "..").
func looksLikeHost(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil || s == "localhost" {
		return true
	}
	if name, _, err := net.SplitHostPort(s); err == nil {
		s = name
	}
	i := strings.IndexByte(s, '.')
	return i > 0 && i < len(s)-1 && !strings.ContainsAny(s, " \\")
}

// CheckRobotsTxtFile checks that a Config.RobotsTxt.Source that is a file path names
// a readable regular file; URLs and the empty value pass. New calls it, so
// that a misspelt path fails at startup with a message naming robots_txt
// instead of leaving every site without rules.
func CheckRobotsTxtFile(v string) error {
	if v == "" || uriScheme.MatchString(v) {
		return nil
	}
	hint := "give the path of a readable robots.txt, an http:// or https:// URL, or leave robots_txt out to enforce each site's own /robots.txt"
	if !filepath.IsAbs(v) {
		if wd, err := os.Getwd(); err == nil {
			hint = "a relative path is read from the working directory " + wd + "; " + hint
		}
	}
	f, err := os.Open(v)
	if err != nil {
		if first, _, ok := strings.Cut(v, "/"); ok && errors.Is(err, fs.ErrNotExist) && looksLikeHost(first) {
			hint = fmt.Sprintf("%q looks like a host and a path: for a URL write %q; %s", v, "http://"+v, hint)
		}
		return fmt.Errorf("robots_guard: robots_txt: %w (%s)", err, hint)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err == nil {
		var b [1]byte
		if _, rerr := f.Read(b[:]); rerr != nil && rerr != io.EOF {
			err = rerr
		}
	}
	if err != nil {
		return fmt.Errorf("robots_guard: robots_txt: %s: %w (%s)", v, err, hint)
	}
	return nil
}

// orDefault sets a zero *v to def and rejects a negative one, naming the
// field.
func orDefault[T int | int64](v *T, def T, field string) error {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		return fmt.Errorf("robots_guard: %s: must be positive, got %d", field, *v)
	}
	return nil
}
