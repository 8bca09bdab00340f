// Package identity says who a client that names a known crawler really is.
//
// A User-Agent header costs nothing to fake, and robots.txt files commonly
// give the big crawlers more than everyone else. The operators of those
// crawlers publish how to check a claim: JSON feeds of the address ranges
// their crawlers use, reverse-DNS domains, or both. A Verifier holds a
// registry of operators (Builtin, extendable), keeps each operator's feeds
// fresh in the background, and checks a claim against them: an address in
// the operator's ranges, or an address whose reverse-DNS name lies under one
// of the operator's domains and resolves back to the address (forward-
// confirmed reverse DNS), is Verified; an address that fails every check the
// operator publishes is Spoofed; a claim that cannot be checked (the operator
// publishes nothing, its feeds have not arrived yet, DNS failed) is
// Unverifiable, so that a feed that is late never turns the real crawler into
// a spoofer.
//
// The package has no HTTP front end and no Caddy import: package guard
// calls it for each request whose User-Agent names a registered token.
//
// Costs: Claims scans a header once per operator and is meant to be cached
// with the header's other classification; Verify for an address in a loaded
// feed is a binary search (no allocation); a reverse-DNS answer is cached per
// address and operator (CacheSize entries, first in first out, with TTLs of
// VerifiedTTL, SpoofedTTL and ErrorTTL), looked up at most once at a time per
// address, at most MaxConcurrentLookups at a time in all, each bounded by
// Config.DNSTimeout.
package identity
