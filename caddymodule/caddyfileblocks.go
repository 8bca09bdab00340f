package caddymodule

import (
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
)

// parseVerifyLine reads "verify off" or "verify [{ ... }]".
func parseVerifyLine(d *caddyfile.Dispenser, v values) (*identity.VerifyConfig, error) {
	switch {
	case len(v.args) == 1 && v.args[0] == "off":
		if d.NextBlock(d.Nesting()) {
			return nil, d.Errf("verify off: takes no block")
		}
		return &identity.VerifyConfig{Off: true}, nil
	case len(v.args) > 0:
		return nil, d.Errf("verify: want a block or \"off\", got %q", strings.Join(v.args, " "))
	}
	return parseVerify(d)
}

// parseStore reads the block of the store subdirective, if any.
func parseStore(d *caddyfile.Dispenser, url string) (*limit.StoreConfig, error) {
	sc := &limit.StoreConfig{Redis: url}
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
			t, err := duration.Parse(args[0])
			if err != nil {
				return nil, d.Errf("store: timeout: %q is not a duration: %v", args[0], err)
			}
			sc.Timeout = duration.Duration(t)
		case "on_store_error":
			sc.OnStoreError = args[0]
		default:
			return nil, d.Errf("store: unknown subdirective %q (want cluster, key_prefix, timeout or on_store_error)", name)
		}
	}
	return sc, nil
}

// parseWebBotAuth reads the web_bot_auth block of verify.
func parseWebBotAuth(d *caddyfile.Dispenser) (*identity.WebBotAuthSettings, error) {
	w := &identity.WebBotAuthSettings{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		args := d.RemainingArgs()
		switch name {
		case "agent":
			if len(args) < 1 || len(args) > 2 {
				return nil, d.Errf("web_bot_auth: agent <origin> [<operator>] [{ key <jwk file> }]")
			}
			a := identity.SignatureAgent{Origin: args[0]}
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
				w.AcceptSignature = &on
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
			t, err := duration.Parse(args[0])
			if err != nil {
				return nil, d.Errf("web_bot_auth: max_window: %q is not a duration: %v", args[0], err)
			}
			w.MaxWindow = duration.Duration(t)
		default:
			return nil, d.Errf("web_bot_auth: unknown subdirective %q", name)
		}
	}
	return w, nil
}

// parseVerify reads the block of the verify subdirective, if any.
func parseVerify(d *caddyfile.Dispenser) (*identity.VerifyConfig, error) {
	vc := &identity.VerifyConfig{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		args := d.RemainingArgs()
		one := func() (string, error) {
			if len(args) != 1 {
				return "", d.Errf("verify: %s: want exactly one value, got %d", name, len(args))
			}
			return args[0], nil
		}
		dur := func(dst *duration.Duration) error {
			v, err := one()
			if err != nil {
				return err
			}
			t, err := duration.Parse(v)
			if err != nil {
				return d.Errf("verify: %s: %q is not a duration: %v", name, v, err)
			}
			*dst = duration.Duration(t)
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
		case "feed_wait":
			err = dur(&vc.FeedWait)
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
			var name string
			if name, err = one(); err == nil {
				var op identity.Operator
				op, err = parseOperator(d, name)
				vc.Operators = append(vc.Operators, op)
			}
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

// parseOperator reads the block of "operator <name> { ... }" in verify.
func parseOperator(d *caddyfile.Dispenser, name string) (identity.Operator, error) {
	op := identity.Operator{Name: name}
	for n2 := d.Nesting(); d.NextBlock(n2); {
		field := d.Val()
		vals := d.RemainingArgs()
		if len(vals) == 0 {
			return op, d.Errf("verify: operator %s: %s: want at least one value", op.Name, field)
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
			return op, d.Errf("verify: operator %s: unknown field %q (want tokens, ip_ranges, rdns, signature_agents or source)", op.Name, field)
		}
	}
	return op, nil
}
