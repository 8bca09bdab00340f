// Package bench compares the robotsguard policy package with
// github.com/temoto/robotstxt on the real robots.txt files of
// ../testdata/robots. It is a separate module so that the main module does
// not depend on the peer library.
//
// Run it with
//
//	cd bench && go test -bench . -benchmem
//
// Benchmarks:
//
//   - BenchmarkParse/<lib>/<file>: one parse of the whole file per op.
//   - BenchmarkDecide/<lib>/<file>: one query (user agent + target) per op;
//     the loop walks a fixed query mix round-robin (see queryMix).
//   - BenchmarkDecideWorstCase/<lib>: one query per op against 100
//     adversarial wildcard patterns and a 4 KiB path of 'a's.
//
// TestAgreement logs how often the two libraries agree when temoto is given
// the bare product token; it never fails on disagreement.
package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/policy"
	"github.com/temoto/robotstxt"
)

// robotsDir holds the real robots.txt files of the corpus.
const robotsDir = "../testdata/robots"

// The user agents of the query mix. They are whole User-Agent headers, as a
// server sees them.
//
// temoto/robotstxt does not extract product tokens from a full header: its
// FindGroup lower-cases the string and picks the longest group name that is
// a *prefix* of it, so "Mozilla/5.0 (compatible; Googlebot/2.1; ...)" never
// selects a "Googlebot" group (it only selects "*", or a group whose name is
// a prefix of "mozilla/5.0 ...", such as "Mozilla"). Its group choice
// therefore differs from policy's (SEMANTICS.md §5) for the Googlebot and
// GPTBot headers. We still give it the same strings: the work per query
// (group lookup + rule scan) is of the same kind, so the timing is
// comparable. TestAgreement compares verdicts with bare tokens instead.
var agents = []string{
	"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36",
	"FooBot/1.0",
}

// tokens are the bare product tokens used by TestAgreement.
var tokens = []string{"Googlebot", "GPTBot", "FooBot"}

// misses are targets that most files have no rule for.
var misses = []string{
	"/",
	"/about",
	"/products/123?ref=x",
	"/static/css/site.css",
	"/blog/2024/05/hello-world",
}

// patternsPerFile is the number of the file's Allow/Disallow patterns that
// the query mix is derived from (spread evenly over the file, with a few
// extra wildcard patterns when the file has any).
const (
	plainPicks    = 12
	wildcardPicks = 4
)

type corpusFile struct {
	name string // file name without ".txt"
	body []byte
}

var corpusCache []corpusFile

// corpus returns every *.txt file of robotsDir, sorted by name.
func corpus(tb testing.TB) []corpusFile {
	tb.Helper()
	if corpusCache != nil {
		return corpusCache
	}
	paths, err := filepath.Glob(filepath.Join(robotsDir, "*.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(paths) == 0 {
		tb.Fatalf("no robots.txt files in %s", robotsDir)
	}
	sort.Strings(paths)
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		corpusCache = append(corpusCache, corpusFile{
			name: strings.TrimSuffix(filepath.Base(p), ".txt"),
			body: body,
		})
	}
	return corpusCache
}

// rulePatterns returns the values of the Allow and Disallow lines of body,
// in file order, without duplicates. It is a deliberately simple scanner of
// its own so that the query mix does not depend on either library.
func rulePatterns(body []byte) []string {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "allow", "disallow":
		default:
			continue
		}
		val = strings.TrimSpace(val)
		if val == "" || seen[val] {
			continue
		}
		seen[val] = true
		out = append(out, val)
	}
	return out
}

// spread picks n elements of s, evenly spaced, first and last included.
func spread(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, s[i*(len(s)-1)/(n-1)])
	}
	return out
}

// materialize turns a pattern into a plausible request target: every '*'
// becomes some text, a final '$' is dropped, and the result starts with '/'.
func materialize(p string) string {
	p = strings.TrimSuffix(p, "$")
	p = strings.ReplaceAll(p, "*", "item-42")
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// targetsFor derives the target list of one file from its own rules.
func targetsFor(body []byte) []string {
	all := rulePatterns(body)
	var wild []string
	for _, p := range all {
		if strings.ContainsAny(p, "*$") {
			wild = append(wild, p)
		}
	}
	picked := spread(all, plainPicks)
	picked = append(append([]string(nil), picked...), spread(wild, wildcardPicks)...)

	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, p := range picked {
		m := materialize(p)
		// The pattern itself, a shorter prefix of it (a near miss), a
		// deeper path below it, and both with a query string.
		add(m)
		if len(m) > 4 {
			add(m[:(len(m)+1)/2])
		}
		var deeper, query string
		if strings.Contains(m, "?") {
			deeper = m + "&page=2"
			query = m + "&utm_source=newsletter"
		} else {
			if strings.HasSuffix(m, "/") {
				deeper = m + "deep/page-2.html"
			} else {
				deeper = m + "/deep/page-2.html"
			}
			query = m + "?q=shoes&utm_source=newsletter"
		}
		add(deeper)
		add(query)
		if strings.Contains(deeper, "?") {
			add(deeper + "&ref=x")
		} else {
			add(deeper + "?ref=x")
		}
	}
	for _, t := range misses {
		add(t)
	}
	return out
}

type query struct {
	agent, target string
}

// queryMix crosses the targets of a file with the four agents. Agents vary
// fastest, so consecutive queries hit different groups.
func queryMix(body []byte) []query {
	var mix []query
	for _, t := range targetsFor(body) {
		for _, a := range agents {
			mix = append(mix, query{a, t})
		}
	}
	return mix
}

// policyDecide calls r.Decide and turns a panic into an error.
func policyDecide(r *policy.Robots, agent, target string) (d policy.Decision, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("policy Decide(%q, %q) panicked: %v", agent, target, p)
		}
	}()
	return r.Decide(agent, target), nil
}

// policyParse calls policy.Parse and turns a panic into an error.
func policyParse(body []byte) (r *policy.Robots, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("policy.Parse panicked: %v", p)
		}
	}()
	return policy.Parse(body), nil
}

// Sinks keep the compiler from dropping the measured calls.
var (
	sinkPolicy *policy.Robots
	sinkTemoto *robotstxt.RobotsData
	sinkBool   bool
)

func BenchmarkParse(b *testing.B) {
	files := corpus(b)
	b.Run("policy", func(b *testing.B) {
		for _, f := range files {
			b.Run(f.name, func(b *testing.B) {
				if _, err := policyParse(f.body); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					sinkPolicy = policy.Parse(f.body)
				}
			})
		}
	})
	b.Run("temoto", func(b *testing.B) {
		for _, f := range files {
			b.Run(f.name, func(b *testing.B) {
				if _, err := robotstxt.FromBytes(f.body); err != nil {
					b.Skipf("temoto rejects the file: %v", err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					sinkTemoto, _ = robotstxt.FromBytes(f.body)
				}
			})
		}
	})
}

func BenchmarkDecide(b *testing.B) {
	files := corpus(b)
	b.Run("policy", func(b *testing.B) {
		for _, f := range files {
			var (
				r   *policy.Robots
				mix []query
			)
			b.Run(f.name, func(b *testing.B) {
				if r == nil { // set up once, not once per b.N round
					var err error
					if r, err = policyParse(f.body); err != nil {
						b.Fatal(err)
					}
					mix = queryMix(f.body)
					for _, q := range mix {
						if _, err := policyDecide(r, q.agent, q.target); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i, j := 0, 0; i < b.N; i++ {
					q := mix[j]
					sinkBool = r.Decide(q.agent, q.target).Allowed
					if j++; j == len(mix) {
						j = 0
					}
				}
			})
		}
	})
	b.Run("temoto", func(b *testing.B) {
		for _, f := range files {
			var (
				r   *robotstxt.RobotsData
				mix []query
			)
			b.Run(f.name, func(b *testing.B) {
				if r == nil {
					var err error
					if r, err = robotstxt.FromBytes(f.body); err != nil {
						b.Skipf("temoto rejects the file: %v", err)
					}
					mix = queryMix(f.body)
				}
				b.ReportAllocs()
				b.ResetTimer()
				// temoto gets the same full header strings; see the
				// comment on agents for why its group choice differs.
				for i, j := 0, 0; i < b.N; i++ {
					q := mix[j]
					sinkBool = r.FindGroup(q.agent).Test(q.target)
					if j++; j == len(mix) {
						j = 0
					}
				}
			})
		}
	})
}

// worstCasePatterns returns 100 adversarial wildcard patterns. None of them
// matches a path made only of 'a's, so a matcher has to prove every one a
// miss; a naive backtracking matcher needs time exponential in the number
// of '*'s for that.
func worstCasePatterns() []string {
	var ps []string
	for k := 1; k <= 30; k++ { // /*a*a...*a*b
		ps = append(ps, "/"+strings.Repeat("*a", k)+"*b")
	}
	for k := 1; k <= 20; k++ { // /a*a*...a*b$
		ps = append(ps, "/"+strings.Repeat("a*", k)+"b$")
	}
	for k := 1; k <= 20; k++ { // *aa*aa...*ab (starts with '*')
		ps = append(ps, strings.Repeat("*aa", k)+"*ab")
	}
	for k := 1; k <= 15; k++ { // /*aaa..*aaa..*c with growing runs
		ps = append(ps, "/"+strings.Repeat("*"+strings.Repeat("a", k), 5)+"*c")
	}
	for k := 1; k <= 15; k++ { // /**a**a...*a$b (double stars, literal '$')
		ps = append(ps, "/"+strings.Repeat("**a", k)+"*a$b")
	}
	return ps
}

func worstCaseInput() (body []byte, target string) {
	var sb strings.Builder
	sb.WriteString("User-agent: *\nAllow: /\n")
	for _, p := range worstCasePatterns() {
		sb.WriteString("Disallow: " + p + "\n")
	}
	return []byte(sb.String()), "/" + strings.Repeat("a", 4095)
}

func BenchmarkDecideWorstCase(b *testing.B) {
	body, target := worstCaseInput()
	const agent = "FooBot/1.0"
	b.Run("policy", func(b *testing.B) {
		r, err := policyParse(body)
		if err != nil {
			b.Fatal(err)
		}
		if g := r.Groups(); len(g) != 1 || len(g[0].Rules) != 101 {
			b.Fatalf("policy read %d groups, want 1 group with 101 rules", len(g))
		}
		d, err := policyDecide(r, agent, target)
		if err != nil {
			b.Fatal(err)
		}
		if !d.Allowed {
			b.Fatalf("policy disallowed the all-'a' path: %v", d)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sinkBool = r.Decide(agent, target).Allowed
		}
	})
	b.Run("temoto", func(b *testing.B) {
		r, err := robotstxt.FromBytes(body)
		if err != nil {
			b.Skipf("temoto rejects the file: %v", err)
		}
		// temoto compiles wildcard patterns to Go regexps (linear time,
		// but unanchored, so each is tried from every start position).
		// Skip it if a single query takes over 50ms (best of three, so a
		// cold first call is not held against it).
		best := time.Duration(1<<63 - 1)
		for range 3 {
			start := time.Now()
			sinkBool = r.FindGroup(agent).Test(target)
			best = min(best, time.Since(start))
		}
		if best > 50*time.Millisecond {
			b.Skipf("temoto skipped: one query takes %v (> 50ms)", best)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sinkBool = r.FindGroup(agent).Test(target)
		}
	})
}

// TestAgreement reports, per file, how often policy and temoto give the
// same verdict over the file's target list, when temoto is given the bare
// product token (which it can match by prefix). It is informational: it
// fails only if policy panics.
func TestAgreement(t *testing.T) {
	var sumAgree, sumTotal int
	for _, f := range corpus(t) {
		r, err := policyParse(f.body)
		if err != nil {
			t.Errorf("%s: %v", f.name, err)
			continue
		}
		tr, terr := robotstxt.FromBytes(f.body)
		targets := targetsFor(f.body)
		agree, total := 0, 0
		var examples []string
		for _, tok := range tokens {
			for _, target := range targets {
				d, err := policyDecide(r, tok, target)
				if err != nil {
					t.Errorf("%s: %v", f.name, err)
					continue
				}
				if terr != nil {
					continue
				}
				total++
				tv := tr.FindGroup(tok).Test(target)
				if tv == d.Allowed {
					agree++
				} else if len(examples) < 2 {
					examples = append(examples, fmt.Sprintf("%s %s: policy=%v (%v) temoto=%v",
						tok, target, d.Allowed, d, tv))
				}
			}
		}
		if terr != nil {
			t.Logf("%-18s temoto rejects the file (%s); policy decided %d queries",
				f.name, strings.Join(strings.Fields(terr.Error()), " "), len(tokens)*len(targets))
			continue
		}
		sumAgree += agree
		sumTotal += total
		t.Logf("%-18s agree %4d/%-4d (%5.1f%%)", f.name, agree, total, 100*float64(agree)/float64(total))
		for _, e := range examples {
			t.Logf("%-18s   differs: %s", "", e)
		}
	}
	if sumTotal > 0 {
		t.Logf("%-18s agree %4d/%-4d (%5.1f%%)", "ALL", sumAgree, sumTotal, 100*float64(sumAgree)/float64(sumTotal))
	}
}
