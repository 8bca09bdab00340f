package policy_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/policy"
)

// TestManyWildcardsAgainstReference checks files with many wildcard
// patterns under one head, which the matcher indexes by bigram and prunes
// by priority (FuzzDecide rarely builds lists that long), against the
// reference matcher of fuzz_decide_test.go.
func TestManyWildcardsAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab/?=.x"
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for file := 0; file < 300; file++ {
		var body strings.Builder
		body.WriteString("User-agent: *\n")
		heads := []string{"/", "/a", "/a/b"}
		for range 8 + rng.IntN(50) {
			kind := "Disallow"
			if rng.IntN(3) == 0 {
				kind = "Allow"
			}
			p := heads[rng.IntN(len(heads))]
			for range 1 + rng.IntN(3) {
				p += "*" + word(rng.IntN(4))
			}
			if rng.IntN(4) == 0 {
				p += "$"
			}
			body.WriteString(kind + ": " + p + "\n")
		}
		if rng.IntN(2) == 0 {
			body.WriteString("Disallow: /" + word(2) + "\n")
		}
		r := policy.Parse([]byte(body.String()))
		chosen, _ := refChoose(r.Groups(), "AnyBot")
		for range 60 {
			target := "/" + word(rng.IntN(14))
			want := refAllowed(chosen, target)
			d := r.Decide("AnyBot", target)
			if d.Allowed != want {
				t.Fatalf("file:\n%s\ntarget %q: Allowed = %v, reference %v (decision: %s)", body.String(), target, d.Allowed, want, d)
			}
			if d.Rule != nil && !refMatch(refNorm(d.Rule.Pattern), refNorm(target)) && refIndex(d.Rule.Pattern) == "" {
				t.Fatalf("file:\n%s\ntarget %q: deciding rule %s does not match it", body.String(), target, d.Rule)
			}
		}
	}
}

// TestLiteralDollarAndStar pins how a target's literal '$' and '*' meet
// patterns (SEMANTICS.md §6): %24 and %2A in a pattern match them and their
// escapes; a '$' inside a pattern matches a literal '$' only; and no other
// pattern byte matches them, so "*2" does not match the "2" of an escape the
// client never sent.
func TestLiteralDollarAndStar(t *testing.T) {
	for _, row := range []struct {
		pattern, target string
		match           bool
	}{
		{"*2", "/$", false},
		{"*2", "/%24", true},
		{"*A", "/*", false},
		{"/a%24", "/a$", true},
		{"/a%24", "/a%24", true},
		{"/a%2A", "/a*", true},
		{"/a%2a", "/a%2A", true},
		{"/a$b", "/a$b", true},
		{"/a$b", "/a%24b", false},
		{"/a*$", "/a$", true},
		{"/%24%24%24%24$", "/$$$%24", true}, // the first three escapes are choices, the fourth matches itself
		{"/%24%24%24%24$", "/$$$$", false},
	} {
		r := policy.Parse([]byte("User-agent: *\nDisallow: " + row.pattern + "\n"))
		if got := !r.Allowed("AnyBot", row.target); got != row.match {
			t.Errorf("Disallow: %s, target %s: match = %v, want %v", row.pattern, row.target, got, row.match)
		}
	}
}
