package caddymodule

import (
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/middleware"
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
//	    }]
//	    bots [<token...>] [{
//	        tokens <token...>
//	        empty_user_agent [on|off]
//	        http_tools [on|off]
//	        cache_size <n>
//	    }]
//	    verify off | verify [{
//	        on_spoofed deny|star
//	        on_dns_error star|header
//	        fetch_feeds on_demand|at_start
//	        refresh <duration>
//	        dns_timeout <duration>
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

func (v values) dur(dst *middleware.Duration) error {
	s, err := v.one()
	if err != nil {
		return err
	}
	t, err := middleware.ParseDuration(s)
	if err != nil {
		return v.d.Errf("%s: %q is not a duration: %v", v.name, s, err)
	}
	*dst = middleware.Duration(t)
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
func parseRobotsTxt(d *caddyfile.Dispenser, v values, c *middleware.RobotsTxtConfig) error {
	switch len(v.args) {
	case 0:
	case 1:
		c.Source = v.args[0]
	default:
		return d.Errf("robots_txt: want at most one source (a URL or a file path), got %d", len(v.args))
	}
	return subBlock(d, "robots_txt", func(v values) error {
		switch v.key() {
		case "refresh":
			return v.dur(&c.Refresh)
		case "fetch_timeout":
			return v.dur(&c.FetchTimeout)
		case "on_unreachable":
			var err error
			c.OnUnreachable, err = v.one()
			return err
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
		}
		return v.unknown("refresh, fetch_timeout, on_unreachable, max_sites, max_bytes, new_sites_per_second or site_names")
	})
}

// parseBots reads "bots [<token...>] [{ ... }]".
func parseBots(d *caddyfile.Dispenser, v values, c *middleware.BotsConfig) error {
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
		}
		return v.unknown("tokens, empty_user_agent, http_tools or cache_size")
	})
}

// parseCrawlDelay reads "crawl_delay { ... }".
func parseCrawlDelay(d *caddyfile.Dispenser, v values, c *middleware.CrawlDelayConfig) error {
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
func parseClients(d *caddyfile.Dispenser, v values, c *middleware.ClientsConfig) error {
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
func parseTraps(d *caddyfile.Dispenser, v values, c *middleware.TrapsConfig) error {
	if len(v.args) == 0 {
		return d.Errf("traps: want at least one path pattern, e.g. traps /no-robots/")
	}
	c.Paths = append(c.Paths, v.args...)
	return subBlock(d, "traps", func(v values) error {
		var err error
		switch v.key() {
		case "grace":
			var g middleware.Duration
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
func parseBans(d *caddyfile.Dispenser, v values, c *middleware.BansConfig) error {
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
			w, err := middleware.ParseDuration(v.args[1])
			if err != nil {
				return d.Errf("bans: after: %q is not a duration: %v", v.args[1], err)
			}
			c.After = &middleware.BanAfter{Denials: n, Window: middleware.Duration(w)}
			return nil
		}
		return v.unknown("for, max, after or max_entries")
	})
}

// parseVerifyLine reads "verify off" or "verify [{ ... }]".
func parseVerifyLine(d *caddyfile.Dispenser, v values) (*middleware.VerifyConfig, error) {
	switch {
	case len(v.args) == 1 && v.args[0] == "off":
		if d.NextBlock(d.Nesting()) {
			return nil, d.Errf("verify off: takes no block")
		}
		return &middleware.VerifyConfig{Off: true}, nil
	case len(v.args) > 0:
		return nil, d.Errf("verify: want a block or \"off\", got %q", strings.Join(v.args, " "))
	}
	return parseVerify(d)
}

// parseStore reads the block of the store subdirective, if any.
func parseStore(d *caddyfile.Dispenser, url string) (*middleware.StoreConfig, error) {
	sc := &middleware.StoreConfig{Redis: url}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		args := d.RemainingArgs()
		if name == "cluster" {
			if len(args) != 0 {
				return nil, d.Errf("store: cluster takes no value (the nodes go in the URL: redis://host1:port?addr=host2:port&addr=host3:port)")
			}
			sc.Cluster = true
			continue
		}
		if len(args) != 1 {
			return nil, d.Errf("store: %s: want exactly one value, got %d", name, len(args))
		}
		switch name {
		case "key_prefix":
			sc.KeyPrefix = args[0]
		case "timeout":
			t, err := middleware.ParseDuration(args[0])
			if err != nil {
				return nil, d.Errf("store: timeout: %q is not a duration: %v", args[0], err)
			}
			sc.Timeout = middleware.Duration(t)
		case "on_store_error":
			sc.OnStoreError = args[0]
		default:
			return nil, d.Errf("store: unknown subdirective %q (want cluster, key_prefix, timeout or on_store_error)", name)
		}
	}
	return sc, nil
}

// parseWebBotAuth reads the web_bot_auth block of verify.
func parseWebBotAuth(d *caddyfile.Dispenser) (*middleware.WebBotAuthSettings, error) {
	w := &middleware.WebBotAuthSettings{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		args := d.RemainingArgs()
		switch name {
		case "agent":
			if len(args) < 1 || len(args) > 2 {
				return nil, d.Errf("web_bot_auth: agent <origin> [<operator>] [{ key <jwk file> }]")
			}
			a := middleware.SignatureAgent{Origin: args[0]}
			if len(args) == 2 {
				a.Operator = args[1]
			}
			for n2 := d.Nesting(); d.NextBlock(n2); {
				if d.Val() != "key" {
					return nil, d.Errf("web_bot_auth: agent %s: unknown field %q (want key)", a.Origin, d.Val())
				}
				keys := d.RemainingArgs()
				if len(keys) == 0 {
					return nil, d.Errf("web_bot_auth: agent %s: key: want a JWK file", a.Origin)
				}
				a.Keys = append(a.Keys, keys...)
			}
			w.Agents = append(w.Agents, a)
		case "discover", "allow_private_directories", "accept_signature":
			on := true
			switch {
			case len(args) == 0:
			case len(args) == 1 && (args[0] == "on" || args[0] == "off"):
				on = args[0] == "on"
			default:
				return nil, d.Errf("web_bot_auth: %s: want no value, on or off, got %q", name, strings.Join(args, " "))
			}
			switch name {
			case "discover":
				w.Discover = on
			case "allow_private_directories":
				w.AllowPrivateDirectories = on
			default:
				w.AcceptSignature = on
			}
		case "ca_file":
			if len(args) != 1 {
				return nil, d.Errf("web_bot_auth: ca_file: want one PEM file")
			}
			w.CAFile = args[0]
		case "max_window":
			if len(args) != 1 {
				return nil, d.Errf("web_bot_auth: max_window: want one duration")
			}
			t, err := middleware.ParseDuration(args[0])
			if err != nil {
				return nil, d.Errf("web_bot_auth: max_window: %q is not a duration: %v", args[0], err)
			}
			w.MaxWindow = middleware.Duration(t)
		default:
			return nil, d.Errf("web_bot_auth: unknown subdirective %q", name)
		}
	}
	return w, nil
}

// parseVerify reads the block of the verify subdirective, if any.
func parseVerify(d *caddyfile.Dispenser) (*middleware.VerifyConfig, error) {
	vc := &middleware.VerifyConfig{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		args := d.RemainingArgs()
		one := func() (string, error) {
			if len(args) != 1 {
				return "", d.Errf("verify: %s: want exactly one value, got %d", name, len(args))
			}
			return args[0], nil
		}
		dur := func(dst *middleware.Duration) error {
			v, err := one()
			if err != nil {
				return err
			}
			t, err := middleware.ParseDuration(v)
			if err != nil {
				return d.Errf("verify: %s: %q is not a duration: %v", name, v, err)
			}
			*dst = middleware.Duration(t)
			return nil
		}
		var err error
		switch name {
		case "on_spoofed":
			vc.OnSpoofed, err = one()
		case "on_dns_error":
			vc.OnDNSError, err = one()
		case "fetch_feeds":
			vc.FetchFeeds, err = one()
		case "refresh":
			err = dur(&vc.Refresh)
		case "dns_timeout":
			err = dur(&vc.DNSTimeout)
		case "resolver":
			vc.Resolver, err = one()
		case "cache_dir":
			vc.CacheDir, err = one()
		case "dns_cache_size":
			var v string
			if v, err = one(); err == nil {
				n, perr := strconv.Atoi(v)
				if perr != nil {
					return nil, d.Errf("verify: dns_cache_size: %q is not a whole number", v)
				}
				vc.DNSCacheSize = n
			}
		case "builtin":
			var v string
			if v, err = one(); err == nil {
				switch v {
				case "on", "off":
					on := v == "on"
					vc.Builtin = &on
				default:
					return nil, d.Errf("verify: builtin: want on or off, got %q", v)
				}
			}
		case "web_bot_auth":
			if len(args) != 0 {
				return nil, d.Errf("verify: web_bot_auth takes a block, not %q", args[0])
			}
			if vc.WebBotAuth, err = parseWebBotAuth(d); err != nil {
				return nil, err
			}
		case "operator":
			var op identity.Operator
			if op.Name, err = one(); err != nil {
				return nil, err
			}
			for n2 := d.Nesting(); d.NextBlock(n2); {
				field := d.Val()
				vals := d.RemainingArgs()
				if len(vals) == 0 {
					return nil, d.Errf("verify: operator %s: %s: want at least one value", op.Name, field)
				}
				switch field {
				case "tokens":
					op.Tokens = append(op.Tokens, vals...)
				case "ip_ranges":
					op.IPRanges = append(op.IPRanges, vals...)
				case "rdns":
					op.RDNS = append(op.RDNS, vals...)
				case "source":
					op.Source = vals[0]
				case "signature_agents":
					op.SignatureAgents = append(op.SignatureAgents, vals...)
				default:
					return nil, d.Errf("verify: operator %s: unknown field %q (want tokens, ip_ranges, rdns, signature_agents or source)", op.Name, field)
				}
			}
			vc.Operators = append(vc.Operators, op)
		default:
			return nil, d.Errf("verify: unknown subdirective %q", name)
		}
		if err != nil {
			return nil, err
		}
	}
	return vc, nil
}

// parseFraction reads "0.25" or "25%".
func parseFraction(v string) (float64, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		return f / 100, err
	}
	return strconv.ParseFloat(v, 64)
}

// Interface guard.
var _ caddyfile.Unmarshaler = (*RobotsGuard)(nil)
