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

// UnmarshalCaddyfile reads the robots_guard directive:
//
//	robots_guard [<matcher>] {
//	    robots_txt <url or file path>
//	    refresh <duration>
//	    fetch_timeout <duration>
//	    on_unreachable disallow|allow
//	    crawl_delay_key ip|group
//	    crawl_delay_tolerance <delays, e.g. 2.5, 0.25 or 25%>
//	    content_signals enforce|report|off
//	    ipv4_prefix <bits>
//	    ipv6_prefix <bits>
//	    max_keys <n>
//	    max_sites <n>
//	    new_sites_per_second <n>
//	    max_robots_bytes <size, e.g. 256MiB>
//	    bots <token...>
//	    empty_user_agent_is_bot
//	    http_tools_are_bots
//	    ua_cache_size <n>
//	    dry_run
//	    log_query
//	    trap <path-pattern...>
//	    trap_grace <duration>
//	    trap_links client|static
//	    trap_secret <at least 16 bytes>
//	    ban_for <duration>
//	    ban_max <duration>
//	    ban_after <denials> <window>
//	    max_bans <n>
//	    store redis <redis:// or rediss:// URL> [{
//	        cluster
//	        key_prefix <prefix>
//	        timeout <duration>
//	        on_store_error allow|deny
//	    }]
//	    verify [{
//	        on_spoofed deny|star
//	        on_dns_error star|header
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
//	            source <url>
//	        }
//	    }]
//	}
//
// A bare robots_guard line uses every default; a bare verify line turns
// crawler verification on with the built-in registry. A <duration> is a Go
// duration that may count days too (90s, 1h30m, 1d12h), as everywhere in
// Caddy. Values are checked here, so "caddy adapt" already names a bad one.
func (g *RobotsGuard) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if d.NextArg() {
		return d.Errf("robots_guard takes no arguments (only a matcher and a block), got %q", d.Val())
	}
	for d.NextBlock(0) {
		name := d.Val()
		args := d.RemainingArgs()
		one := func() (string, error) {
			if len(args) != 1 {
				return "", d.Errf("%s: want exactly one value, got %d", name, len(args))
			}
			return args[0], nil
		}
		none := func() error {
			if len(args) != 0 {
				return d.Errf("%s takes no value, got %q", name, args[0])
			}
			return nil
		}
		num := func(dst *int) error {
			v, err := one()
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return d.Errf("%s: %q is not a whole number", name, v)
			}
			*dst = n
			return nil
		}
		dur := func(dst *middleware.Duration) error {
			v, err := one()
			if err != nil {
				return err
			}
			t, err := middleware.ParseDuration(v)
			if err != nil {
				return d.Errf("%s: %q is not a duration: %v", name, v, err)
			}
			*dst = middleware.Duration(t)
			return nil
		}
		var err error
		switch name {
		case "robots_txt":
			g.RobotsTxt, err = one()
		case "refresh":
			err = dur(&g.Refresh)
		case "fetch_timeout":
			err = dur(&g.FetchTimeout)
		case "on_unreachable":
			g.OnUnreachable, err = one()
		case "crawl_delay_key":
			g.CrawlDelayKey, err = one()
		case "crawl_delay_scope":
			g.CrawlDelayScope, err = one()
		case "content_signals":
			g.ContentSignals, err = one()
		case "crawl_delay_tolerance":
			var v string
			if v, err = one(); err == nil {
				f, perr := parseFraction(v)
				if perr != nil {
					return d.Errf("%s: %q is not a number of Crawl-delays such as 2.5, 0.25 or 25%%", name, v)
				}
				g.CrawlDelayTolerance = &f
			}
		case "ipv4_prefix":
			err = num(&g.IPv4Prefix)
		case "ipv6_prefix":
			err = num(&g.IPv6Prefix)
		case "max_keys":
			err = num(&g.MaxKeys)
		case "max_sites":
			err = num(&g.MaxSites)
		case "new_sites_per_second":
			err = num(&g.NewSitesPerSecond)
		case "site_names":
			if len(args) == 0 {
				return d.Errf("site_names: want at least one host name, e.g. example.com")
			}
			g.SiteNames = append(g.SiteNames, args...)
		case "max_robots_bytes":
			var v string
			if v, err = one(); err == nil {
				n, perr := humanize.ParseBytes(v)
				if perr != nil || n > 1<<50 {
					return d.Errf("%s: %q is not a size such as 256MiB or 100000000", name, v)
				}
				g.MaxRobotsBytes = int64(n)
			}
		case "ua_cache_size":
			err = num(&g.UACacheSize)
		case "bots":
			if len(args) == 0 {
				return d.Errf("bots: want at least one product token")
			}
			g.Bots = append(g.Bots, args...)
		case "empty_user_agent_is_bot":
			err = none()
			g.EmptyUserAgentIsBot = true
		case "http_tools_are_bots":
			err = none()
			g.HTTPToolsAreBots = true
		case "dry_run":
			err = none()
			g.DryRun = true
		case "log_query":
			err = none()
			g.LogQuery = true
		case "verify":
			switch {
			case len(args) == 1 && args[0] == "off":
				g.Verify = &middleware.VerifyConfig{Off: true}
				if d.NextBlock(d.Nesting()) {
					return d.Errf("verify off: takes no block")
				}
			case len(args) > 0:
				return d.Errf("verify: want a block or \"off\", got %q", strings.Join(args, " "))
			default:
				g.Verify, err = parseVerify(d)
			}
		case "trap":
			if len(args) == 0 {
				return d.Errf("trap: want at least one path pattern, e.g. /no-robots/")
			}
			g.Traps = append(g.Traps, args...)
		case "trap_links":
			g.TrapLinks, err = one()
		case "trap_secret":
			g.TrapSecret, err = one()
		case "trap_grace":
			var d middleware.Duration
			if err = dur(&d); err == nil {
				g.TrapGrace = &d
			}
		case "ban_for":
			err = dur(&g.BanFor)
		case "ban_max":
			err = dur(&g.BanMax)
		case "max_bans":
			err = num(&g.MaxBans)
		case "ban_after":
			if len(args) != 2 {
				return d.Errf("ban_after: want <denials> <window>, e.g. ban_after 20 1m")
			}
			n, perr := strconv.Atoi(args[0])
			if perr != nil {
				return d.Errf("ban_after: %q is not a whole number", args[0])
			}
			w, perr := middleware.ParseDuration(args[1])
			if perr != nil {
				return d.Errf("ban_after: %q is not a duration: %v", args[1], perr)
			}
			g.BanAfter = &middleware.BanAfter{Denials: n, Window: middleware.Duration(w)}
		case "store":
			if len(args) != 2 || args[0] != "redis" {
				return d.Errf("store: want \"store redis <redis:// or rediss:// URL>\"")
			}
			g.Store, err = parseStore(d, args[1])
		default:
			return d.Errf("unknown robots_guard subdirective %q", name)
		}
		if err != nil {
			return err
		}
	}
	if err := g.Config.Validate(); err != nil {
		return d.Err(err.Error())
	}
	return nil
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
