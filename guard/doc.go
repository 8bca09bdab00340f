// Package guard enforces a site's own robots.txt on the bots that visit
// it: a bot gets 403 Forbidden for a path its group may not fetch and 429
// Too Many Requests with Retry-After when it is faster than its group's
// Crawl-delay; browsers and people's apps pass untouched, and /robots.txt
// is always served.
//
// The Engine is the one judge behind every front: the net/http middleware
// and the decision service (package nethttp), the Caddy modules (package
// caddymodule: robots_guard and robots_guard_check), explain, the
// dashboard's tester, the CLI and the audit of access logs. Decide holds
// the whole decision and writes nothing; DecideHTTP and DecideForwarded map
// a request (or a proxy's description of one) to it; Respond and
// SetAnswerHeaders write the answer.
//
// # Where robots.txt comes from
//
// Package sites fetches, revalidates and caches each site's robots.txt:
// by default the site's own /robots.txt, asked through the handler that
// serves it (Request.Origin); an origin with its site names (the decision
// service), a URL or a file can be configured instead (Config.RobotsTxt),
// or any sites.Source (WithSource). A copy is revalidated every
// Config.RobotsTxt.Refresh; Invalidate makes the next bot request of a
// site wait for a fresh fetch (the Caddy module calls it on every reload).
// While a site's robots.txt is unreachable and no copy is known, bots are
// refused everything (Config.RobotsTxt.OnUnreachable).
//
// # Who is a bot
//
// Package classify reads the User-Agent header: a known crawler's token
// (its list is derived from monperrus/crawler-user-agents and
// ai-robots-txt/ai.robots.txt), a token of Config.Bots.Tokens, a claim of
// a registered crawler operator, the marks automated clients leave (a
// contact URL, a scanner's payload, a crawler's words), or a header that
// neither the crawler list nor the list of people's apps (media players,
// feed readers, mail clients: derived from ua-parser/uap-core) knows and
// that names no platform or engine. HTTP tools (curl, python-requests, ...)
// and empty headers are bots only when Config.Bots says so. A header that
// names a specific group of the site's robots.txt is judged by it,
// whatever its class. Agents that fetch for a person (link previews,
// user-triggered fetchers, feed readers) answer to a group that names them,
// not to "*" (Config.Bots.PersonAgents).
//
// # Who a bot really is
//
// Package identity checks a claim of a registered operator against its
// published IP-range feeds and reverse-DNS domains, and Web Bot Auth
// signatures: a verified crawler gets its own group, a spoofed one 403
// (Config.Verify), and an unverifiable one its group and "*" together.
//
// # Decisions
//
// A disallowed path gets 403 whether the path is read as sent (RFC 9309)
// or in any of the decoded views a server may give it (every escape
// decoded, dot-segments removed, repeated slashes collapsed, backslashes
// read as '/' and as data, ';' path parameters dropped: policy.ViewOptions),
// so encoding tricks do not get past a rule. Crawl-delay is enforced on
// allowed paths by package limit: GCRA with a tolerance counted in delays
// (Config.CrawlDelay.Tolerance, 2.5 by default), so that a crawler that
// keeps the delay on average but randomises its spacing, as real ones do,
// is rarely refused, while at most ⌈T/delay⌉+3 requests pass in any
// interval T; Retry-After is the real remaining wait rounded up to whole
// seconds. The key is site, group and client-IP prefix (/32 for IPv4, /64
// for IPv6 by default), or site and group (Config.CrawlDelay.Key), kept in
// memory or in Redis for a fleet. Traps (package traps) and bans refuse a
// client that follows a link robots.txt disallows; Content-Signal lines
// refuse a crawler whose purpose a site declines; every stopped request is
// counted in the violations report (package report).
//
// # Memory and logging
//
// Every per-client table has a cap and an eviction policy: the limiter's
// keys (Config.CrawlDelay.MaxKeys), the classifier's cache, the sites, the
// bans, the untrusted peers, the report's rows. Each denial and throttle is
// logged at Info level ("robots_guard: denied", "robots_guard: throttled",
// or "robots_guard: dry run: would deny" and "would throttle" in dry-run
// mode) with site, group, action, rule line, client IP and User-Agent,
// through a sampler: per second and per message, about the first 10 lines
// are written and then one in 100, so a flood cannot fill a disk. Metrics
// belong in an Observer.
package guard
