package caddymodule

import (
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"
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
//	    crawl_delay_tolerance <fraction, e.g. 0.25 or 25%>
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
//	}
//
// A bare robots_guard line uses every default. Values are checked here, so
// "caddy adapt" already names a bad one.
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
		dur := func(dst *caddy.Duration) error {
			v, err := one()
			if err != nil {
				return err
			}
			t, err := caddy.ParseDuration(v)
			if err != nil {
				return d.Errf("%s: %q is not a duration: %v", name, v, err)
			}
			*dst = caddy.Duration(t)
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
		case "crawl_delay_tolerance":
			var v string
			if v, err = one(); err == nil {
				f, perr := parseFraction(v)
				if perr != nil {
					return d.Errf("%s: %q is not a fraction such as 0.25 or 25%%", name, v)
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
		default:
			return d.Errf("unknown robots_guard subdirective %q", name)
		}
		if err != nil {
			return err
		}
	}
	if err := g.Config().Validate(); err != nil {
		return d.Err(err.Error())
	}
	return nil
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
