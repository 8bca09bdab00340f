package policy_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/policy"
)

// Headers used by the benchmarks and the allocation tests.
var (
	googlebotUA = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	gptbotUA    = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	chromeUA    = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
	benchAgents = []string{googlebotUA, gptbotUA, chromeUA, "FooBot/1.0"}
)

func readCorpus(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "robots", name))
	if err != nil {
		tb.Fatalf("read corpus file: %v", err)
	}
	return b
}

// corpusTargets derives a realistic query mix from the file's own rules:
// the rules' literal prefixes, deeper paths below them, the same with a
// query string, and paths that match nothing.
func corpusTargets(r *policy.Robots) []string {
	targets := []string{"/", "/about", "/products/123?ref=x", "/index.html"}
	for _, g := range r.Groups() {
		for i, rule := range g.Rules {
			if i%7 != 0 || rule.Pattern == "" {
				continue
			}
			p := strings.NewReplacer("*", "x", "$", "").Replace(rule.Pattern)
			if !strings.HasPrefix(p, "/") {
				p = "/" + p
			}
			targets = append(targets, p, strings.TrimSuffix(p, "/")+"/deeper/page.html", p+"?page=2&sort=asc")
			if len(targets) > 60 {
				return targets
			}
		}
	}
	return targets
}

func BenchmarkDecide(b *testing.B) {
	for _, name := range []string{"nytimes.txt", "google.txt", "linkedin.txt", "oracle-docs.txt", "unesco.txt", "shopify.txt", "venture-gr.txt", "xuexi-cn.txt"} {
		r := policy.Parse(readCorpus(b, name))
		targets := corpusTargets(r)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = r.Decide(benchAgents[i%len(benchAgents)], targets[i%len(targets)])
				i++
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"nytimes.txt", "oracle-docs.txt", "unesco.txt", "xuexi-cn.txt"} {
		body := readCorpus(b, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(min(len(body), policy.MaxBodySize)))
			for b.Loop() {
				_ = policy.Parse(body)
			}
		})
	}
}

// BenchmarkDecideWorstCase matches adversarial wildcard patterns against
// long targets. ns/op must grow linearly with the target length (compare
// the sub-benchmarks): there is no backtracking.
func BenchmarkDecideWorstCase(b *testing.B) {
	var file strings.Builder
	file.WriteString("User-agent: *\n")
	for i := 0; i < 100; i++ {
		file.WriteString("Disallow: /*a*a*a*a*a*a*a*" + strings.Repeat("a", i%7) + "b\n")
	}
	file.WriteString("Allow: /*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*c$\n")
	r := policy.Parse([]byte(file.String()))
	for _, n := range []int{1 << 10, 4 << 10, 16 << 10} {
		target := "/" + strings.Repeat("a", n)
		b.Run("len="+itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				_ = r.Decide("AnyBot", target)
			}
		})
	}
}

// BenchmarkAgent measures group choice alone, from full headers.
func BenchmarkAgent(b *testing.B) {
	for _, name := range []string{"nytimes.txt", "google.txt", "shopify.txt"} {
		r := policy.Parse(readCorpus(b, name))
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = r.Agent(benchAgents[i%len(benchAgents)])
				i++
			}
		})
	}
}

// BenchmarkMatch measures path matching alone, with the group chosen once.
func BenchmarkMatch(b *testing.B) {
	for _, name := range []string{"nytimes.txt", "google.txt", "shopify.txt"} {
		r := policy.Parse(readCorpus(b, name))
		targets := corpusTargets(r)
		agents := make([]policy.Agent, len(benchAgents))
		for i, ua := range benchAgents {
			agents[i] = r.Agent(ua)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = agents[i%len(agents)].Decide(targets[i%len(targets)])
				i++
			}
		})
	}
}

func itoa(n int) string {
	if n%1024 == 0 {
		return strconv.Itoa(n/1024) + "KiB"
	}
	return strconv.Itoa(n)
}
