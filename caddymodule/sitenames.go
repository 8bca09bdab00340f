package caddymodule

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
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
		for _, set := range r.MatcherSets {
			for _, m := range set {
				switch m := m.(type) {
				case caddyhttp.MatchHost:
					names = appendNames(names, m)
				case *caddyhttp.MatchHost:
					names = appendNames(names, *m)
				}
			}
		}
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
