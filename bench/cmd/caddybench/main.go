// Command caddybench is the Caddy that bench/loadtest runs: Caddy's
// standard modules, robots_guard, and the modules robots_guard is compared
// with (caddy-ratelimit v0.1.0, its latest release on the Go module proxy).
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-ratelimit"

	_ "github.com/robotsguard/robotsguard/caddymodule"
)

func main() {
	caddycmd.Main()
}
