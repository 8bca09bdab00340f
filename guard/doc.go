// Package middleware enforces a site's own robots.txt on the bots that visit
// it: a bot gets 403 Forbidden for a path its group may not fetch and 429 Too
// Many Requests with Retry-After when it is faster than its group's
// Crawl-delay; browsers pass untouched.
//
// The Engine is the one engine behind the net/http middleware (Handler,
// Middleware) and the Caddy module. Decide holds the whole decision and
// writes nothing, so other front ends can answer in their own way.
//
// # Where robots.txt comes from
//
// Package sites fetches, revalidates and caches each site's robots.txt:
// by default the site's own /robots.txt, asked through the handler that
// serves it (Request.Origin); a URL or a file can be configured instead
// (Config.RobotsTxt.Source), or any sites.Source (WithSource). A copy is
// revalidated every Config.RobotsTxt.Refresh; Invalidate makes the next bot request
// of a site wait for a fresh fetch (the Caddy module calls it on every
// reload). While a site's robots.txt is unreachable and no copy is known,
// bots are refused everything (Config.RobotsTxt.OnUnreachable).
//
// # Who is a bot
//
// A client is bound when its User-Agent header names a specific group of the
// site's robots.txt (as a whole word, SEMANTICS.md §5), when
// mileusna/useragent marks it as a bot, when it holds a token of the
// embedded list of known crawlers (package classify, derived from
// monperrus/crawler-user-agents and ai-robots-txt/ai.robots.txt), or a token
// of Config.Bots.Tokens. Tokens match case-insensitively on word boundaries, never
// as raw substrings. Empty User-Agent headers and HTTP tools (curl,
// python-requests, ...) are bound only on request. Classifications are kept
// in a bounded LRU cache, so a repeated header costs one lookup.
//
// # Decisions
//
// A disallowed path gets 403 whether the path is read as sent (RFC 9309) or
// decoded (percent-decoding of every escape, dot-segments removed, repeated
// slashes collapsed), so encoding tricks do not get past a rule. Crawl-delay
// is enforced on allowed paths by package limit: GCRA with a tolerance
// counted in delays (Config.CrawlDelay.Tolerance, 2.5 by default) so that a
// crawler that keeps the delay on average but randomises its spacing, as
// real ones do, is rarely refused, while at most ⌈T/delay⌉+3 requests pass
// in any interval T; Retry-After is the real remaining wait rounded up to
// whole seconds, and a retry after it passes. The key is site, group and client-IP prefix (/32 for IPv4, /64 for
// IPv6 by default), or site and group (Config.CrawlDelay.Key).
//
// # Memory and logging
//
// The limiter keeps one int64 per key in 16 maps keyed by a 48-byte struct
// whose strings are shared with the site cache; measured at about 85 bytes
// per key (limit.BenchmarkKeys), so the default cap of 100,000 keys costs
// about 8.5 MB. When a shard is full, its expired keys are dropped first,
// then about 1% of its keys.
//
// Each denial and throttle is logged at Info level ("robots_guard: denied",
// "robots_guard: throttled", or "robots_guard: dry run: would deny" and
// "would throttle" in dry-run mode) with site, group, action, rule line,
// client IP and User-Agent, through a sampler: per second and per
// message, about the first 10 lines are written (their share on each
// CPU, at least one) and then one in 100, so a flood cannot fill a disk. Metrics belong in an Observer.
package guard
