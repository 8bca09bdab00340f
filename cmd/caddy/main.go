// Command caddy is Caddy with its standard modules plus robots_guard, so
// that robotsguard can be tried without xcaddy:
//
//	go run ./cmd/caddy run --config Caddyfile.example
//	go run ./cmd/caddy robots test --ua "GPTBot/1.2" --file robots.txt /private/
//
// For deployments, build your own Caddy with xcaddy:
//
//	xcaddy build --with github.com/robotsguard/robotsguard/caddymodule
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/robotsguard/robotsguard/caddymodule"
)

func main() {
	caddycmd.Main()
}
