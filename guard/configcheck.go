package guard

import (
	"fmt"

	"github.com/robotsguard/robotsguard/identity"
)

// Validation of Config: each block checks and defaults its own fields,
// and Config composes them.

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
	for _, check := range [...]func() error{c.robotsTxtDefaults, c.botDefaults, c.limitDefaults,
		c.trapDefaults, c.signalDefaults, c.licenseDefaults} {
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
		c.Verify = &identity.VerifyConfig{}
	}
	v, err := c.Verify.WithDefaults()
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

// trapDefaults checks and defaults the traps block (package traps).
func (c *Config) trapDefaults() (err error) {
	c.Traps, err = c.Traps.WithDefaults()
	return err
}

// licenseDefaults checks and defaults the licenses block (package
// license).
func (c *Config) licenseDefaults() (err error) {
	c.Licenses, err = c.Licenses.WithDefaults()
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

// configErr is the error of an invalid field: "robots_guard: <field>: ...".
func configErr(field, format string, args ...any) error {
	return fmt.Errorf("robots_guard: %s: "+format, append([]any{field}, args...)...)
}
