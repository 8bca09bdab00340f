package policy

import (
	"bytes"
	"testing"
)

// commonPrefix agrees with a byte-by-byte comparison whatever the lengths
// and wherever the first difference falls (the word loop's boundaries).
func TestCommonPrefix(t *testing.T) {
	base := []byte("/cd/E11882_01/server.112/e10595/toc.htm")
	for la := 0; la <= len(base); la++ {
		for lb := 0; lb <= len(base); lb++ {
			for diff := -1; diff < min(la, lb); diff++ {
				a := bytes.Clone(base[:la])
				b := bytes.Clone(base[:lb])
				if diff >= 0 {
					b[diff] ^= 0x20
				}
				want := 0
				for want < la && want < lb && a[want] == b[want] {
					want++
				}
				if got := commonPrefix(a, b); got != want {
					t.Fatalf("commonPrefix(%q, %q) = %d, want %d", a, b, got, want)
				}
			}
		}
	}
}

// Kids are ordered by first byte whether a node has an index or not, and
// the flat matcher finds every inserted literal.
func TestSortKids(t *testing.T) {
	for _, n := range []int{1, 2, 5, idxFrom - 1, idxFrom, idxFrom + 1, 40, 200} {
		var body []byte
		body = append(body, "User-agent: *\n"...)
		for i := range n {
			// First bytes in a scrambled order, some repeated deeper.
			c := byte(33 + (i*37)%90)
			if c == '*' || c == '$' || c == '#' || c == '%' {
				c = 'z'
			}
			body = append(body, "Disallow: /"...)
			body = append(body, c, byte('a'+i%26))
			body = append(body, '\n')
		}
		r := Parse(body)
		for line := range bytes.Lines(body[len("User-agent: *\n"):]) {
			p := string(bytes.TrimSpace(bytes.TrimPrefix(line, []byte("Disallow: "))))
			if d := r.Agent("bot").Decide(p + "/x"); d.Allowed {
				t.Fatalf("%d kids: %s/x allowed", n, p)
			}
		}
		if kids := r.m.kidb; !sortedRuns(r) {
			t.Fatalf("%d kids: kid bytes out of order: %q", n, kids)
		}
	}
}

// sortedRuns reports whether every node's kid bytes are in ascending
// order.
func sortedRuns(r *Robots) bool {
	for _, nd := range r.m.nodes {
		kb := r.m.kidb[nd.kid0:nd.kid1]
		for i := 1; i < len(kb); i++ {
			if kb[i] <= kb[i-1] {
				return false
			}
		}
	}
	return true
}
