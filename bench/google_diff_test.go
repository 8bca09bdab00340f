package bench

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jimsmart/grobotstxt"

	"github.com/robotsguard/robotsguard/policy"
)

// TestGoogleParity is a differential run against grobotstxt, a Go port of
// Google's reference matcher (robots.cc): random files of Allow and
// Disallow rules over a small alphabet rich in wildcards, '$' and
// index.html rules, and random paths. The alphabet stays clear of the
// project's documented departures from Google (SEMANTICS.md §9:
// percent-escapes, /robots.txt, digits in agent names, '$' and '*' in
// targets), so every difference is a bug. Before the implied
// "<dir>/$" Allow was ranked at its own length (SEMANTICS.md §7), this
// found 148 differences in 200,000 queries.
func TestGoogleParity(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"/", "a", "b", "/shop", "/index.html", "/index.htm", "index.html", "*", "**", "$", "/a/", "x"}
	pathPieces := []string{"/", "a", "b", "shop", "index.html", "index.htm", "?", "x", "/shop/"}
	pattern := func() string {
		var b strings.Builder
		b.WriteString([]string{"/", "*"}[rng.IntN(2)])
		for k := rng.IntN(5); k > 0; k-- {
			p := pieces[rng.IntN(len(pieces))]
			b.WriteString(p)
			if p == "$" {
				break
			}
		}
		return b.String()
	}
	path := func() string {
		var b strings.Builder
		b.WriteString("/")
		for k := rng.IntN(5); k > 0; k-- {
			b.WriteString(pathPieces[rng.IntN(len(pathPieces))])
		}
		return b.String()
	}
	diffs := 0
	for range n {
		var b strings.Builder
		b.WriteString("User-agent: *\n")
		for r := 1 + rng.IntN(4); r > 0; r-- {
			b.WriteString([]string{"Allow: ", "Disallow: "}[rng.IntN(2)])
			b.WriteString(pattern())
			b.WriteString("\n")
		}
		body, p := b.String(), path()
		google := grobotstxt.AgentAllowed(body, "FooBot", "http://example.com"+p)
		ours := policy.Parse([]byte(body)).Allowed("FooBot", p)
		if google != ours {
			if diffs++; diffs <= 5 {
				t.Errorf("path %q: Google allowed=%v, policy allowed=%v, robots.txt:\n%s", p, google, ours, body)
			}
		}
	}
	t.Logf("%d queries, %d differences from Google's matcher", n, diffs)
}
