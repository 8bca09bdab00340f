package policy

import (
	"strings"
	"testing"
)

// TestCompiledSizeIsLinear checks that the compiled matcher grows at most
// linearly with the input, whatever the patterns: the "bounded work per
// input byte" half of FuzzParse's promise, on inputs built to blow up
// tries, wildcard lists and their indexes.
func TestCompiledSizeIsLinear(t *testing.T) {
	var many strings.Builder
	many.WriteString("User-agent: *\n")
	for i := 0; i < 5000; i++ {
		many.WriteString("Disallow: /*" + strings.Repeat("ab", i%17) + "*x" + string(rune('a'+i%26)) + "\n")
	}
	var agents strings.Builder
	for i := 0; i < 3000; i++ {
		agents.WriteString("User-agent: bot" + strings.Repeat("x", i%40) + string(rune('a'+i%26)) + "\n")
	}
	agents.WriteString("Disallow: /*a*b*c*d$\nAllow: /index.html\n")
	var groups strings.Builder
	for i := 0; i < 2000; i++ {
		groups.WriteString("User-agent: g" + strings.Repeat("y", i%50) + "\nDisallow: /" + strings.Repeat("*q", i%30) + "\n\n")
	}
	for name, body := range map[string]string{
		"wildcards": many.String(),
		"agents":    agents.String(),
		"groups":    groups.String(),
		"stars":     "User-agent: *\nDisallow: " + strings.Repeat("*", MaxLineLength-20) + "\n",
		"escapes":   "User-agent: *\nDisallow: /" + strings.Repeat("%zz\xff", 4000) + "\n",
		"choices":   "User-agent: *\n" + strings.Repeat("Disallow: /*%24%2A%24x%24\nAllow: /%2a%24%2A%24%2A%24\n", 3000),
	} {
		r := Parse([]byte(body))
		if size, limit := r.m.size(), 8*len(body)+64; size > limit {
			t.Errorf("%s: compiled size %d for a %d-byte body, want at most %d", name, size, len(body), limit)
		}
		// Lint walks every rule once more; it must stay bounded too.
		_ = r.Lint()
	}
}
