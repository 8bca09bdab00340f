module github.com/robotsguard/robotsguard/bench

go 1.26.0

require (
	github.com/robotsguard/robotsguard v0.0.0-00010101000000-000000000000
	github.com/temoto/robotstxt v1.1.2
)

require github.com/jimsmart/grobotstxt v1.0.3

replace github.com/robotsguard/robotsguard => ../
