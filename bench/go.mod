module github.com/robotsguard/robotsguard/bench

go 1.26.0

require (
	github.com/robotsguard/robotsguard v0.0.0-00010101000000-000000000000
	github.com/temoto/robotstxt v1.1.2
)

require github.com/jimsmart/grobotstxt v1.0.3

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dunglas/httpsfv v1.1.1 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/mileusna/useragent v1.3.5 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/robotsguard/robotsguard => ../
