// Package policy is robotsguard's robots.txt library: pure robots.txt
// logic, with no HTTP, no logging and no clock.
//
// Parse reads a robots.txt body (at most MaxBodySize bytes, as RFC 9309
// §2.5 allows) into a compiled Robots and never fails: lines it cannot read
// are skipped and reported as diagnostics. Robots.Agent chooses the group
// that a User-Agent header's product token names (case-insensitively, the
// most specific group, "*" as the fallback; docs/SEMANTICS.md §5), and
// Agent.Decide judges a request-target by that group's rules: the longest
// match wins, Allow wins a tie, and /robots.txt is always allowed. Matching
// is linear in the length of the path whatever the patterns (one radix
// trie per rule set, and each wildcard pattern's segments found at their
// leftmost occurrences, without backtracking; see match.go), and a
// decision makes no allocation. Crawl-delay belongs to the agents that
// SEMANTICS.md §8 says.
//
// The package also reads request-targets as a Go server hands them on
// (RequestTarget, SplitTarget) and builds the second, decoded view of a
// path that an enforcer judges too (AppendDecodedView, SEMANTICS.md §6a);
// Lint reports what a site operator should fix in a file, and every
// Decision names the deciding Rule with its line number.
package policy
