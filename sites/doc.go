// Package sites acquires the robots.txt of each site that robotsguard
// protects: where it comes from (Source: the site itself, a URL, a file),
// the fetch with its redirects and the RFC 9309 §2.3.1 reading of the
// answer, conditional revalidation, and the bounded cache of compiled
// copies. It knows nothing of bots' verdicts, traps or bans: the enforcer
// in package guard asks it for a site's copy and decides.
//
// # Where robots.txt comes from
//
// By default (SelfSource) each site (scheme and host, port kept) is asked
// for its own /robots.txt through the handler that serves it: a virtual
// GET with a private response writer and fresh headers, whose context is
// marked (IsInternal) so that the enforcer lets it pass. A URL or a file
// can be used instead (URLSource, FileSource), or any Source.
//
// # Fetches and revalidation
//
// A copy is revalidated every Config.Refresh with If-None-Match and
// If-Modified-Since (a file by its size and modification time), so an
// unchanged file costs a 304 and no parse; one fetch runs per site at a
// time, and requests keep using the previous copy while it runs.
// Invalidate makes the next waiting request of a site wait for a fresh
// fetch. Answers follow RFC 9309 §2.3.1: 2xx is parsed (the first 500 KiB;
// an HTML page too, flagged as such), redirects are followed up to five
// hops, 4xx other than 429 means no rules, and 5xx, 429, network errors,
// timeouts and unreadable files keep the last good copy or, without one,
// leave the site Unreachable. Every state in which a site has no rules is
// logged once per site and per change.
//
// # Memory
//
// The cache holds at most Config.MaxSites sites, in two LRU segments with
// a frequency sketch for admission (W-TinyLFU, see segLRU), so that a
// flood of one-hit Host names cannot push out the sites that get traffic,
// and at most Config.MaxBytes of compiled files, estimated, counted once
// per distinct file however many sites share it. First fetches of new
// sites are rate-limited (Config.NewSitesPerSecond).
package sites
