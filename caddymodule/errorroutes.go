package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// errorRouteTakes reports whether the handle_errors routes of srv would
// write the answer to herr, a stopped request's error, so that the guard
// returns the error for them to restyle; when they would not, the guard
// answers itself, with its one-line body.
//
// Returning caddyhttp.Error alone cannot do: Caddy has no way for a handler
// to return an error and keep a body of its own. This function therefore
// mirrors, and depends on, the following behaviour of Caddy v2
// (modules/caddyhttp, as of v2.11.9):
//
//   - server.go, (*Server).ServeHTTP: an error returned by the handler
//     chain is set on the request with (*HTTPErrorConfig).WithError (the
//     {http.error.*} placeholders that "handle_errors 404" matches on), and
//     then, if the server has errors routes, runs them (its
//     errorHandlerChain, compiled in app.go with errorEmptyHandler at its
//     end); with none, it writes the status alone. errorEmptyHandler
//     (caddyhttp.go) writes the status alone too: an error that no route
//     answers loses the body.
//   - routes.go, wrapRoute: a route runs when MatcherSets.AnyMatchWithError
//     matches; a matcher's error ends the chain with that error (Caddy then
//     writes the status alone); a route of a group already satisfied is
//     skipped; a terminal route ends the chain after its handlers (in
//     errorEmptyHandler).
//   - subroute.go, (*Subroute).ServeHTTP: a subroute (what a Caddyfile
//     handle_errors or handle block compiles to) runs its routes in front
//     of the rest of the chain, so one whose routes match nothing falls
//     through to the next route.
//
// Any handler other than a subroute is taken to write the answer. The
// behaviour is pinned, through a Caddy server running in the test, by
// TestErrorRoutesThroughCaddy: without handle_errors, and beside
// "handle_errors 404", a 403 keeps the guard's body; a bare handle_errors,
// "handle_errors 403" or "4xx" restyle it; an error route whose own routes
// do not match the request leaves the body; and an error returned by
// another handler ("error" directive) is answered with the status alone.
// (The integration tests TestHandleErrorsRestyles and
// TestHandleErrorsKeepsAnswer cover Retry-After and Cache-Control.)
func errorRouteTakes(srv *caddyhttp.Server, r *http.Request, herr caddyhttp.HandlerError) bool {
	if srv == nil || srv.Errors == nil || len(srv.Errors.Routes) == 0 {
		return false
	}
	if _, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); !ok {
		return true // outside a Caddy request (matchers need its replacer): let Caddy decide
	}
	r = srv.Errors.WithError(r, herr)
	groups := map[string]bool{}
	// walk follows rl as the compiled chain would: takes when a handler
	// would answer, ends when the chain would stop there.
	var walk func(rl caddyhttp.RouteList, depth int) (takes, ends bool)
	walk = func(rl caddyhttp.RouteList, depth int) (takes, ends bool) {
		if depth > 8 {
			return true, true // deeper than Caddyfile output: let Caddy decide
		}
		for _, route := range rl {
			if route.Group != "" && groups[route.Group] {
				continue
			}
			match, err := route.MatcherSets.AnyMatchWithError(r)
			if err != nil {
				return false, true
			}
			if !match {
				continue
			}
			if route.Group != "" {
				groups[route.Group] = true
			}
			for _, h := range route.Handlers {
				sub, ok := h.(*caddyhttp.Subroute)
				if !ok {
					return true, true
				}
				if takes, ends := walk(sub.Routes, depth+1); ends {
					return takes, true
				}
			}
			if route.Terminal {
				return false, true
			}
		}
		return false, false
	}
	takes, _ := walk(srv.Errors.Routes, 0)
	return takes
}
