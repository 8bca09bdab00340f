module github.com/robotsguard/robotsguard

go 1.26.0

require (
	github.com/hashicorp/golang-lru/v2 v2.0.7
	github.com/mileusna/useragent v1.3.5
	go.uber.org/zap v1.28.0
	golang.org/x/sync v0.24.0
)

require go.uber.org/multierr v1.10.0 // indirect
