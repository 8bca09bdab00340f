package guard

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/duration"
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
	c.Traps.Paths = slices.Clone(c.Traps.Paths)
	for _, check := range [...]func() error{c.robotsTxtDefaults, c.botDefaults, c.limitDefaults,
		c.Traps.withDefaults, c.signalDefaults} {
		if err := check(); err != nil {
			return c, err
		}
	}
	if c.Store != nil {
		st, err := c.Store.WithDefaults()
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

// limitDefaults checks and defaults the blocks of package limit:
// crawl_delay, clients and bans.
func (c *Config) limitDefaults() (err error) {
	if c.CrawlDelay, err = c.CrawlDelay.WithDefaults(); err != nil {
		return err
	}
	if c.Clients, err = c.Clients.WithDefaults(); err != nil {
		return err
	}
	c.Bans, err = c.Bans.WithDefaults()
	return err
}

// robotsTxtDefaults checks and defaults the robots_txt block (package
// sites).
func (c *Config) robotsTxtDefaults() (err error) {
	c.RobotsTxt, err = c.RobotsTxt.WithDefaults()
	return err
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
		d := duration.Duration(defaultTrapGrace)
		c.Grace = &d
	case *g < 0 || time.Duration(*g) > 7*24*time.Hour:
		return errf("grace", "must be between 0 and 168h, got %s", time.Duration(*g))
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
