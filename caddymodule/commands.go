package caddymodule

// The "caddy robots" command lives in a package of its own; importing the
// module (xcaddy build --with .../caddymodule) brings it along.
import _ "github.com/robotsguard/robotsguard/caddymodule/robotscmd"
