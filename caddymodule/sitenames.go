package caddymodule

import (
	"encoding/json"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/robotsguard/robotsguard/guard"
)

// maxSiteNames bounds the names collected from the configuration.
const maxSiteNames = 10000

// configuredNames returns the host names of the http app's host matchers
// (every server, routes and subroutes), sorted, without duplicates: the
// sites the configuration is written for, whose first robots.txt fetch no
// flood of other Host names may postpone (new_sites_per_second). The app
// is the one being provisioned, so a route may hold its matchers loaded
// (MatcherSets) or still as JSON (MatcherSetsRaw); both are read.
func configuredNames(ctx caddy.Context) []string {
	app, err := ctx.AppIfConfigured("http")
	if err != nil {
		return nil
	}
	h, ok := app.(*caddyhttp.App)
	if !ok {
		return nil
	}
	var names []string
	for _, srv := range h.Servers {
		names = routeNames(names, srv.Routes, 0)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// routeNames appends the host names of routes and their subroutes.
func routeNames(names []string, routes caddyhttp.RouteList, depth int) []string {
	if depth > 8 {
		return names
	}
	for _, r := range routes {
		names = loadedHostNames(names, r.MatcherSets)
		for _, set := range r.MatcherSetsRaw {
			var hosts []string
			if json.Unmarshal(set["host"], &hosts) == nil {
				names = appendNames(names, hosts)
			}
		}
		for _, h := range r.Handlers {
			if sr, ok := h.(*caddyhttp.Subroute); ok {
				names = routeNames(names, sr.Routes, depth+1)
			}
		}
		for _, raw := range r.HandlersRaw {
			var sr struct {
				Handler string              `json:"handler"`
				Routes  caddyhttp.RouteList `json:"routes"`
			}
			if json.Unmarshal(raw, &sr) == nil && sr.Handler == "subroute" {
				names = routeNames(names, sr.Routes, depth+1)
			}
		}
	}
	return names
}

// loadedHostNames appends the names of the host matchers of loaded
// matcher sets.
func loadedHostNames(names []string, sets caddyhttp.MatcherSets) []string {
	for _, set := range sets {
		for _, m := range set {
			switch m := m.(type) {
			case caddyhttp.MatchHost:
				names = appendNames(names, m)
			case *caddyhttp.MatchHost:
				names = appendNames(names, *m)
			}
		}
	}
	return names
}

// appendNames appends the names of a host matcher that are names, not
// placeholders, up to maxSiteNames.
func appendNames(names, hosts []string) []string {
	for _, h := range hosts {
		if len(names) < maxSiteNames && h != "" && !strings.Contains(h, "{") {
			names = append(names, strings.ToLower(h))
		}
	}
	return names
}

// servedSites returns the sites, as URLs ("https://example.com",
// "http://127.0.0.1:8080"), whose requests reach a robots_guard handler
// of e in the running http app: the exact host names of the routes
// (subroutes included) that lead to such a handler, on each listen port of
// their server, https when the server has TLS connection policies. Routes
// without a host name (a catch-all) give none: their hosts are not known
// before a request names one.
func servedSites(app *caddyhttp.App, e *guard.Engine) []string {
	var out []string
	for _, srv := range app.Servers {
		scheme := "http"
		if len(srv.TLSConnPolicies) > 0 {
			scheme = "https"
		}
		var ports []uint
		for _, l := range srv.Listen {
			na, err := caddy.ParseNetworkAddress(l)
			if err != nil || na.IsUnixNetwork() || na.EndPort-na.StartPort > 16 {
				continue
			}
			for p := na.StartPort; p <= na.EndPort; p++ {
				ports = append(ports, p)
			}
		}
		for _, host := range guardedHosts(srv.Routes, nil, e, 0) {
			for _, p := range ports {
				hp := net.JoinHostPort(host, strconv.FormatUint(uint64(p), 10))
				if scheme == "http" && p == 80 || scheme == "https" && p == 443 {
					hp = host
					if strings.Contains(host, ":") {
						hp = "[" + host + "]"
					}
				}
				out = append(out, scheme+"://"+hp)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// guardedHosts returns the exact host names of routes that lead to a
// robots_guard handler of e; hosts are those of the enclosing routes.
func guardedHosts(routes caddyhttp.RouteList, hosts []string, e *guard.Engine, depth int) []string {
	var out []string
	if depth > 8 {
		return nil
	}
	for _, r := range routes {
		own := hosts
		if named := loadedHostNames(nil, r.MatcherSets); len(named) > 0 {
			own = named
		}
		for _, h := range r.Handlers {
			switch h := h.(type) {
			case *RobotsGuard:
				if h.state != nil && h.state.enforcer == e {
					for _, n := range own {
						if !strings.ContainsAny(n, "*") {
							out = append(out, n)
						}
					}
				}
			case *caddyhttp.Subroute:
				out = append(out, guardedHosts(h.Routes, own, e, depth+1)...)
			}
		}
	}
	return out
}
