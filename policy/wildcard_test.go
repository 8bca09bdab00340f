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
