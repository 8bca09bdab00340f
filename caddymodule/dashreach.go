package caddymodule

import (
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// dashboardRoutes are the ways into a server's robots_guard_dashboard
// handlers: for each, the matcher sets of the routes that lead to it, from
// the server's top route down (the site block's host, a handle's path).
type dashboardRoutes struct {
	srv    *caddyhttp.Server
	chains [][]caddyhttp.MatcherSets
}

// maxRouteDepth bounds the walk of nested subroutes (a configuration is
// finite; this keeps a pathological one from costing a request much).
const maxRouteDepth = 16

// findDashboards adds to d the chains of matcher sets that lead to a
// Dashboard handler in routes, below the chain above.
func (d *dashboardRoutes) find(routes caddyhttp.RouteList, above []caddyhttp.MatcherSets, depth int) {
	if depth > maxRouteDepth {
		return
	}
	for _, rt := range routes {
		chain := above
		if len(rt.MatcherSets) > 0 {
			chain = append(slices.Clip(above), rt.MatcherSets)
		}
		for _, h := range rt.Handlers {
			switch h := h.(type) {
			case *Dashboard:
				d.chains = append(d.chains, chain)
			case *caddyhttp.Subroute:
				d.find(h.Routes, chain, depth+1)
			}
		}
	}
}

// toDashboard reports whether r is on its way to a robots_guard_dashboard
// of srv: every route on the way there matches it. Such a request is
// never refused by a ban or a robots.txt verdict, so that an operator
// whose own address was banned can still reach the page and lift the ban.
// The routes are read once per server; a server without a dashboard costs
// an atomic load.
func toDashboard(cache *atomic.Pointer[dashboardRoutes], srv *caddyhttp.Server, r *http.Request) bool {
	if srv == nil || cache == nil {
		return false
	}
	d := cache.Load()
	if d == nil || d.srv != srv {
		d = &dashboardRoutes{srv: srv}
		d.find(srv.Routes, nil, 0)
		cache.Store(d)
	}
	for _, chain := range d.chains {
		if matchesAll(chain, r) {
			return true
		}
	}
	return false
}

// matchesAll reports whether r matches every set of chain (a matcher's
// error counts as no match).
func matchesAll(chain []caddyhttp.MatcherSets, r *http.Request) bool {
	for _, ms := range chain {
		if ok, err := ms.AnyMatchWithError(r); err != nil || !ok {
			return false
		}
	}
	return true
}
