package caddymodule

import (
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/license"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
	"github.com/robotsguard/robotsguard/traps"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("robots_guard", parseCaddyfile)
	// Before redir (and so before rewrite, handle and every handler that
	// answers): users need no order line.
	httpcaddyfile.RegisterDirectiveOrder("robots_guard", httpcaddyfile.Before, "redir")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	g := new(RobotsGuard)
	err := g.UnmarshalCaddyfile(h.Dispenser)
	return g, err
}

// UnmarshalCaddyfile reads the robots_guard directive. Its settings come
// in blocks, one per subject, in the order of the JSON configuration:
//
//	robots_guard [<matcher>] {
//	    robots_txt [<url or file path>] [{
//	        refresh <duration>
//	        fetch_timeout <duration>
//	        on_unreachable disallow|allow
//	        max_sites <n>
//	        max_bytes <size, e.g. 256MiB>
//	        new_sites_per_second <n>
//	        site_names <host...>
//	        origin <http:// or https:// address>
//	    }]
//	    bots [<token...>] [{
//	        tokens <token...>
//	        empty_user_agent [on|off]
//	        http_tools [on|off]
//	        cache_size <n>
//	        person_agents own|star
//	        undeclared on|off|report
//	        apps <token...>
//	    }]
//	    licenses [enforce|report|off] [{
//	        refresh <duration>
//	        fetch_timeout <duration>
//	        max_documents <n>
//	        token_cache_size <n>
//	    }]
//	    verify off | verify [{
//	        on_spoofed deny|star
//	        on_dns_error star|header
//	        fetch_feeds on_demand|at_start
//	        refresh <duration>
//	        dns_timeout <duration>
//	        feed_wait <duration>
//	        resolver <host:port>
//	        dns_cache_size <n>
//	        builtin on|off
//	        cache_dir <directory>
//	        web_bot_auth {
//	            agent <origin> [<operator>] [{ key <jwk file...> }]
//	            discover [on|off]
//	            max_window <duration>
//	            allow_private_directories [on|off]
//	            accept_signature [on|off]
//	            ca_file <pem file>
//	        }
//	        operator <name> {
//	            tokens <token...>
//	            ip_ranges <url or file...>
//	            rdns <domain...>
//	            signature_agents <origin...>
//	            source <url>
//	        }
//	    }]
//	    crawl_delay {
//	        key ip|group
//	        scope site|block
//	        tolerance <delays, e.g. 2.5, 0.25 or 25%>
//	        max_keys <n>
//	    }
//	    clients {
//	        ipv4_prefix <bits>
//	        ipv6_prefix <bits>
//	    }
//	    traps <path-pattern...> [{
//	        grace <duration>
//	        links client|static
//	        secret <at least 16 bytes>
//	    }]
//	    bans {
//	        for <duration>
//	        max <duration>
//	        after <denials> <window>
//	        max_entries <n>
//	    }
//	    store redis <redis:// or rediss:// URL> [{
//	        cluster
//	        key_prefix <prefix>
//	        timeout <duration>
//	        on_store_error allow|deny
//	    }]
//	    content_signals enforce|report|off
//	    dry_run
//	    log_query
//	}
//
// A bare robots_guard line uses every default, and so does a bare verify
// line. A <duration> is a Go duration that may count days too (90s,
// 1h30m, 1d12h), as everywhere in Caddy. Values are checked here, so
// "caddy adapt" already names a bad one, and a keyword of the earlier flat
// form fails with its new spelling.
func (g *RobotsGuard) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if d.NextArg() {
		return d.Errf("robots_guard takes no arguments (only a matcher and a block), got %q", d.Val())
	}
	for d.NextBlock(0) {
		if err := g.parseSetting(d); err != nil {
			return err
		}
	}
	if err := g.Config.Validate(); err != nil {
		return d.Err(err.Error())
	}
	return nil
}

// parseSetting reads one line of the robots_guard block, and the block
// that follows it.
func (g *RobotsGuard) parseSetting(d *caddyfile.Dispenser) error {
	v := line(d, "")
	var err error
	switch v.name {
	case "robots_txt":
		return parseRobotsTxt(d, v, &g.RobotsTxt)
	case "bots":
		return parseBots(d, v, &g.Bots)
	case "verify":
		g.Verify, err = parseVerifyLine(d, v)
	case "crawl_delay":
		return parseCrawlDelay(d, v, &g.CrawlDelay)
	case "clients":
		return parseClients(d, v, &g.Clients)
	case "traps":
		return parseTraps(d, v, &g.Traps)
	case "bans":
		return parseBans(d, v, &g.Bans)
	case "store":
		if len(v.args) != 2 || v.args[0] != "redis" {
			return d.Errf("store: want \"store redis <redis:// or rediss:// URL>\"")
		}
		g.Store, err = parseStore(d, v.args[1])
	case "content_signals":
		g.ContentSignals, err = v.one()
	case "licenses":
		return parseLicenses(d, v, &g.Licenses)
	case "dry_run":
		err = v.flag(&g.DryRun)
	case "log_query":
		err = v.flag(&g.LogQuery)
	default:
		if to, ok := movedSettings[v.name]; ok {
			return d.Errf("%s is now written %q (settings are grouped in blocks: see the robots_guard docs)", v.name, to)
		}
		return d.Errf("unknown robots_guard subdirective %q", v.name)
	}
	return err
}

// movedSettings gives the new spelling of each keyword of the earlier flat
// form, so that an old Caddyfile fails at "caddy adapt" with a message
// that says what to write instead.
var movedSettings = map[string]string{
	"refresh":                 "robots_txt { refresh <duration> }",
	"fetch_timeout":           "robots_txt { fetch_timeout <duration> }",
	"on_unreachable":          "robots_txt { on_unreachable disallow|allow }",
	"max_sites":               "robots_txt { max_sites <n> }",
	"max_robots_bytes":        "robots_txt { max_bytes <size> }",
	"new_sites_per_second":    "robots_txt { new_sites_per_second <n> }",
	"site_names":              "robots_txt { site_names <host...> }",
	"ua_cache_size":           "bots { cache_size <n> }",
	"empty_user_agent_is_bot": "bots { empty_user_agent }",
	"http_tools_are_bots":     "bots { http_tools }",
	"crawl_delay_key":         "crawl_delay { key ip|group }",
	"crawl_delay_scope":       "crawl_delay { scope site|block }",
	"crawl_delay_tolerance":   "crawl_delay { tolerance <delays> }",
	"max_keys":                "crawl_delay { max_keys <n> }",
	"ipv4_prefix":             "clients { ipv4_prefix <bits> }",
	"ipv6_prefix":             "clients { ipv6_prefix <bits> }",
	"trap":                    "traps <path-pattern...>",
	"trap_grace":              "traps <path-pattern...> { grace <duration> }",
	"trap_links":              "traps <path-pattern...> { links client|static }",
	"trap_secret":             "traps <path-pattern...> { secret <key> }",
	"ban_for":                 "bans { for <duration> }",
	"ban_max":                 "bans { max <duration> }",
	"ban_after":               "bans { after <denials> <window> }",
	"max_bans":                "bans { max_entries <n> }",
}

// values is one line of a block: its keyword and arguments, with the
// readers of its value. name carries the block's prefix ("bans: for") for
// error messages.
type values struct {
	d    *caddyfile.Dispenser
	name string
	args []string
}

// line reads the current line of d, its keyword prefixed with block.
func line(d *caddyfile.Dispenser, block string) values {
	name := d.Val()
	if block != "" {
		name = block + ": " + name
	}
	return values{d: d, name: name, args: d.RemainingArgs()}
}

// key is the keyword alone, without its block's prefix.
func (v values) key() string { return v.name[strings.LastIndex(v.name, " ")+1:] }

func (v values) one() (string, error) {
	if len(v.args) != 1 {
		return "", v.d.Errf("%s: want exactly one value, got %d", v.name, len(v.args))
	}
	return v.args[0], nil
}

// str reads the line's one value into dst.
func (v values) str(dst *string) error {
	s, err := v.one()
	if err == nil {
		*dst = s
	}
	return err
}

// optional reads the line's value, if it has one, into dst; more values
// fail with usage, a format given their number.
func (v values) optional(dst *string, usage string) error {
	switch len(v.args) {
	case 0:
	case 1:
		*dst = v.args[0]
	default:
		return v.d.Errf(usage, len(v.args))
	}
	return nil
}

func (v values) some() ([]string, error) {
	if len(v.args) == 0 {
		return nil, v.d.Errf("%s: want at least one value", v.name)
	}
	return v.args, nil
}

// flag reads "keyword", "keyword on" or "keyword off".
func (v values) flag(dst *bool) error {
	switch {
	case len(v.args) == 0:
		*dst = true
	case len(v.args) == 1 && (v.args[0] == "on" || v.args[0] == "off"):
		*dst = v.args[0] == "on"
	default:
		return v.d.Errf("%s: want no value, on or off, got %q", v.name, strings.Join(v.args, " "))
	}
	return nil
}

func (v values) num(dst *int) error {
	s, err := v.one()
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return v.d.Errf("%s: %q is not a whole number", v.name, s)
	}
	*dst = n
	return nil
}

func (v values) dur(dst *duration.Duration) error {
	s, err := v.one()
	if err != nil {
		return err
	}
	t, err := duration.Parse(s)
	if err != nil {
		return v.d.Errf("%s: %q is not a duration: %v", v.name, s, err)
	}
	*dst = duration.Duration(t)
	return nil
}

func (v values) unknown(want string) error {
	return v.d.Errf("%s: unknown subdirective (want %s)", v.name, want)
}

// subBlock calls f with each line of the block that follows the current
// line, if any.
func subBlock(d *caddyfile.Dispenser, block string, f func(v values) error) error {
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		if err := f(line(d, block)); err != nil {
			return err
		}
	}
	return nil
}

// parseRobotsTxt reads "robots_txt [<source>] [{ ... }]".
func parseRobotsTxt(d *caddyfile.Dispenser, v values, c *sites.Config) error {
	if err := v.optional(&c.Source, "robots_txt: want at most one source (a URL or a file path), got %d"); err != nil {
		return err
	}
	return subBlock(d, "robots_txt", func(v values) error {
		switch v.key() {
		case "refresh":
			return v.dur(&c.Refresh)
		case "fetch_timeout":
			return v.dur(&c.FetchTimeout)
		case "on_unreachable":
			return v.str(&c.OnUnreachable)
		case "max_sites":
			return v.num(&c.MaxSites)
		case "new_sites_per_second":
			return v.num(&c.NewSitesPerSecond)
		case "max_bytes":
			s, err := v.one()
			if err != nil {
				return err
			}
			n, err := humanize.ParseBytes(s)
			if err != nil || n > 1<<50 {
				return d.Errf("%s: %q is not a size such as 256MiB or 100000000", v.name, s)
			}
			c.MaxBytes = int64(n)
			return nil
		case "site_names":
			names, err := v.some()
			c.SiteNames = append(c.SiteNames, names...)
			return err
		case "origin":
			return v.str(&c.Origin)
		}
		return v.unknown("refresh, fetch_timeout, on_unreachable, max_sites, max_bytes, new_sites_per_second, site_names or origin")
	})
}

// parseLicenses reads "licenses [enforce|report|off] [{ ... }]".
func parseLicenses(d *caddyfile.Dispenser, v values, c *license.Config) error {
	if err := v.optional(&c.Mode, "licenses: want \"licenses [enforce|report|off]\" and an optional block, got %d arguments"); err != nil {
		return err
	}
	return subBlock(d, "licenses", func(v values) error {
		switch v.key() {
		case "mode":
			return v.str(&c.Mode)
		case "refresh":
			return v.dur(&c.Refresh)
		case "fetch_timeout":
			return v.dur(&c.FetchTimeout)
		case "max_documents":
			return v.num(&c.MaxDocuments)
		case "token_cache_size":
			return v.num(&c.TokenCacheSize)
		}
		return v.unknown("mode, refresh, fetch_timeout, max_documents or token_cache_size")
	})
}

// parseBots reads "bots [<token...>] [{ ... }]".
func parseBots(d *caddyfile.Dispenser, v values, c *classify.Config) error {
	c.Tokens = append(c.Tokens, v.args...)
	return subBlock(d, "bots", func(v values) error {
		switch v.key() {
		case "tokens":
			toks, err := v.some()
			c.Tokens = append(c.Tokens, toks...)
			return err
		case "empty_user_agent":
			return v.flag(&c.EmptyUserAgent)
		case "http_tools":
			return v.flag(&c.HTTPTools)
		case "cache_size":
			return v.num(&c.CacheSize)
		case "person_agents":
			return v.str(&c.PersonAgents)
		case "undeclared":
			return v.str(&c.Undeclared)
		case "apps":
			toks, err := v.some()
			c.Apps = append(c.Apps, toks...)
			return err
		}
		return v.unknown("tokens, apps, empty_user_agent, http_tools, cache_size, person_agents or undeclared")
	})
}

// parseCrawlDelay reads "crawl_delay { ... }".
func parseCrawlDelay(d *caddyfile.Dispenser, v values, c *limit.CrawlDelayConfig) error {
	if len(v.args) != 0 {
		return d.Errf("crawl_delay takes a block, not %q", v.args[0])
	}
	return subBlock(d, "crawl_delay", func(v values) error {
		var err error
		switch v.key() {
		case "key":
			c.Key, err = v.one()
		case "scope":
			c.Scope, err = v.one()
		case "tolerance":
			var s string
			if s, err = v.one(); err == nil {
				f, perr := parseFraction(s)
				if perr != nil {
					return d.Errf("%s: %q is not a number of Crawl-delays such as 2.5, 0.25 or 25%%", v.name, s)
				}
				c.Tolerance = &f
			}
		case "max_keys":
			err = v.num(&c.MaxKeys)
		default:
			err = v.unknown("key, scope, tolerance or max_keys")
		}
		return err
	})
}

// parseClients reads "clients { ... }".
func parseClients(d *caddyfile.Dispenser, v values, c *limit.ClientsConfig) error {
	if len(v.args) != 0 {
		return d.Errf("clients takes a block, not %q", v.args[0])
	}
	return subBlock(d, "clients", func(v values) error {
		switch v.key() {
		case "ipv4_prefix":
			return v.num(&c.IPv4Prefix)
		case "ipv6_prefix":
			return v.num(&c.IPv6Prefix)
		}
		return v.unknown("ipv4_prefix or ipv6_prefix")
	})
}

// parseTraps reads "traps <path-pattern...> [{ ... }]".
func parseTraps(d *caddyfile.Dispenser, v values, c *traps.Config) error {
	if len(v.args) == 0 {
		return d.Errf("traps: want at least one path pattern, e.g. traps /no-robots/")
	}
	c.Paths = append(c.Paths, v.args...)
	return subBlock(d, "traps", func(v values) error {
		var err error
		switch v.key() {
		case "grace":
			var g duration.Duration
			if err = v.dur(&g); err == nil {
				c.Grace = &g
			}
		case "links":
			c.Links, err = v.one()
		case "secret":
			c.Secret, err = v.one()
		default:
			err = v.unknown("grace, links or secret")
		}
		return err
	})
}

// parseBans reads "bans { ... }".
func parseBans(d *caddyfile.Dispenser, v values, c *limit.BansConfig) error {
	if len(v.args) != 0 {
		return d.Errf("bans takes a block, not %q", v.args[0])
	}
	return subBlock(d, "bans", func(v values) error {
		switch v.key() {
		case "for":
			return v.dur(&c.For)
		case "max":
			return v.dur(&c.Max)
		case "max_entries":
			return v.num(&c.MaxEntries)
		case "after":
			if len(v.args) != 2 {
				return d.Errf("bans: after: want <denials> <window>, e.g. after 20 1m")
			}
			n, err := strconv.Atoi(v.args[0])
			if err != nil {
				return d.Errf("bans: after: %q is not a whole number", v.args[0])
			}
			w, err := duration.Parse(v.args[1])
			if err != nil {
				return d.Errf("bans: after: %q is not a duration: %v", v.args[1], err)
			}
			c.After = &limit.BanAfter{Denials: n, Window: duration.Duration(w)}
			return nil
		}
		return v.unknown("for, max, after or max_entries")
	})
}

// Interface guard.
var _ caddyfile.Unmarshaler = (*RobotsGuard)(nil)
