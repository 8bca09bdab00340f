package policy_test

// FuzzParse feeds arbitrary bodies to Parse and checks that Parse, Lint and
// Decide never panic and that what they report hangs together: decisions
// agree with Allowed and Agent, deciding rules are rules of Groups(), and
// every line number lies inside the body.

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/policy"
)

// fuzzSeedBodies are hand-written inputs that stress the reader.
var fuzzSeedBodies = []string{
	"",
	"\n\n\n",
	"#",
	"User-agent: *\nDisallow: /\n",
	// AI-use preferences (SEMANTICS.md §8a).
	"User-Agent: *\nContent-Signal: search=yes, ai-input=yes, ai-train=no\nAllow: /\n",
	"User-agent: A\nUser-agent: B\nContent-Usage: /x/ train-ai=n;p=1, search=y\nContent-Usage: /x/y$ train-ai=y\nUser-agent: C\nContent-signals: ai_train=maybe,use=full\n",
	// BOMs: leading, partial, doubled, double-encoded, inside lines.
	"\xEF\xBB\xBF",
	"\xEF\xBB",
	"\xEF\xBB\xBFUser-agent: *\nDisallow: /a\xEF\xBB\xBF\n\xEF\xBB\xBFAllow: /a/b\n",
	"\xEF\xBB\xBF\xEF\xBB\xBFUser-agent: *\nDisallow: /\n",
	"\xC3\xAF\xC2\xBB\xC2\xBFUser-agent: *\r\nDisallow: /wp-admin/\r\nAllow: /wp-admin/admin-ajax.php\r\nUser-agent: FooBot\r\nDisallow:/",
	// Line ends: CR only, mixed, LF CR.
	"User-agent: *\rDisallow: /a\rAllow: /a/b\rCrawl-delay: 3\r",
	"User-agent: A\r\n\rUser-agent: B\n\r\nDisallow: /x\r\rAllow: /x/y",
	// NULs and control bytes.
	"User-agent: *\x00\nDisallow: /\x00a\n\x00\x00\nAllow: /\x01\x7f\n",
	"\x00\x00\x00\x00",
	// '*' soup and '$' soup.
	"User-agent: *\nDisallow: /" + strings.Repeat("*", 200) + "\nAllow: *\nDisallow: *$\nAllow: /**$**$\nDisallow: /a*b*c*d*e*f*g*h$\n",
	"User-agent: *\nDisallow: /$\nAllow: /$$\nDisallow: $\nAllow: /a$b$\nDisallow: /*$*$*$\n",
	// '%' soup.
	"User-agent: *\nDisallow: /%\nDisallow: /%%\nAllow: /%2\nDisallow: /%zz%41%2f%2F%c3%a9%\nAllow: /%2A\nDisallow: /%24\nAllow: /%25%\n",
	// Non-ASCII in patterns and agents.
	"User-agent: Bötchen\nUser-agent: 机器人\nDisallow: /é\nAllow: /%C3%A9/x\nDisallow: /wiki/Löschkandidaten/\n",
	// HTML served as robots.txt.
	"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n<body><h1>Not Found</h1><p>The requested URL was not found: <a href=\"/\">home</a></p></body></html>\n",
	// Missing colons, typos, prefixes, other records.
	"User-agent *\nDisallow /x\nuseragent: y\nDissallow: /z\nUser-agents: w\nDisallowed: /v\nHost: h\nClean-param: a /b\nFoo bar\nthree words here\n",
	// Groups: blank lines, Crawl-delay glue, rules first, empty rules.
	"Disallow: /early\nUser-agent: A\nCrawl-delay: 5\n\nUser-agent: *\nDisallow: /\n\nUser-agent: A\nAllow: /a\nDisallow:\nAllow:\n",
	"User-agent: a\nUser-agent: b\nUser-agent: A\nUser-agent: *Bot\nUser-agent: * x\nUser-agent:\n",
	// Index.html rule and order conflicts.
	"User-agent: *\nDisallow: /shop/\nAllow: /shop/index.html\nAllow: /index.htm\nDisallow: /\nAllow: /x/index.html$\n",
	// Crawl-delay values.
	"User-agent: *\nCrawl-delay: 1.5\nCrawl-delay: -1\nCrawl-delay: 99999999999999999999999\nCrawl-delay: .\nCrawl-delay: 1.99999999999\n",
	// A line over MaxLineLength, a comment cut by it.
	"User-agent: *\nDisallow: /" + strings.Repeat("a", policy.MaxLineLength) + "# comment\nAllow: /a\n",
	// Robots.txt itself.
	"User-agent: *\nDisallow: /robots.txt\nDisallow: /\n",
}

// fuzzSeedCorpus are corpus files whose first fuzzSeedCorpusBytes bytes
// are seeds.
var fuzzSeedCorpus = []string{"google.txt", "github.txt", "nytimes.txt", "stackoverflow.txt", "shopify.txt", "venture-gr.txt", "wikipedia-en.txt", "ai-robots-txt.txt", "drupal.txt"}

const fuzzSeedCorpusBytes = 2048

// fuzzMaxTarget caps the length of targets taken from patterns, to keep
// the work per input small.
const fuzzMaxTarget = 512

// Agents every input is decided for, besides agents taken from the input.
var fuzzAgents = []string{"FooBot", hdrGooglebot, hdrChrome}

// countLines returns the number of lines of the part of body that Parse
// reads: line ends are LF, CR and CRLF, and the text after the last line
// end is one more line.
func countLines(body []byte) int {
	if len(body) > policy.MaxBodySize {
		body = body[:policy.MaxBodySize]
	}
	n := 1
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\n':
			n++
		case '\r':
			n++
			if i+1 < len(body) && body[i+1] == '\n' {
				i++
			}
		}
	}
	return n
}

// fuzzTargets derives a few request targets from the rules of groups: the
// pattern as written (cut to fuzzMaxTarget bytes), with wildcards filled
// in, with a query, and as an absolute URL.
func fuzzTargets(groups []policy.Group) []string {
	targets := []string{"/", "/robots.txt", "/index.html?x=1", "/%41%2f*$"}
	n := 0
	for _, g := range groups {
		for _, r := range g.Rules {
			if n == 2 {
				return targets
			}
			if r.Pattern == "" {
				continue
			}
			n++
			p := r.Pattern[:min(len(r.Pattern), fuzzMaxTarget)]
			filled := strings.TrimSuffix(strings.ReplaceAll(p, "*", "x"), "$")
			targets = append(targets, p, filled, filled+"?q=1", "https://example.com"+filled)
		}
	}
	return targets
}

// fuzzAgentsFor adds up to two agents named by the input's groups, bare and
// inside a header.
func fuzzAgentsFor(groups []policy.Group) []string {
	agents := fuzzAgents
	n := 0
	for _, g := range groups {
		for _, a := range g.Agents {
			if a == "" || a == "*" || n == 2 {
				continue
			}
			n++
			agents = append(agents, a, "Mozilla/5.0 (compatible; "+a+"/1.0; +http://example.com/bot)")
		}
	}
	return agents
}

func checkParsed(t *testing.T, body []byte) {
	r := policy.Parse(body)
	nLines := countLines(body)

	ds := r.Lint()
	for i, d := range ds {
		if i > 0 && d.Line < ds[i-1].Line {
			t.Fatalf("Lint not sorted by line: %s after %s", d, ds[i-1])
		}
		if d.Line < 0 || d.Line > nLines {
			t.Fatalf("diagnostic %s: line outside 0..%d", d, nLines)
		}
		if d.Code == "" || d.Message == "" || (d.Severity != policy.Info && d.Severity != policy.Warning && d.Severity != policy.Error) {
			t.Fatalf("malformed diagnostic %#v", d)
		}
	}

	// Signals: a preference's line is a line of the file.
	for _, ua := range []string{"A", "B", "C", "GPTBot", "x"} {
		for _, p := range []policy.Purpose{policy.PurposeSearch, policy.PurposeAIInput, policy.PurposeAITrain} {
			s, line := r.Agent(ua).Signal(p, "/x/y")
			if (s == policy.Unset) != (line == 0) || line < 0 || line > nLines {
				t.Fatalf("Signal(%v) for %q: %v on line %d of %d", p, ua, s, line, nLines)
			}
		}
	}

	groups := r.Groups()
	names := map[string]bool{}
	prev := 0
	for _, g := range groups {
		if g.Line <= prev || g.Line > nLines {
			t.Fatalf("group at line %d: out of order (previous %d) or past the %d lines", g.Line, prev, nLines)
		}
		prev = g.Line
		if len(g.Agents) == 0 {
			t.Fatalf("group at line %d has no agents", g.Line)
		}
		for _, a := range g.Agents {
			names[a] = true
		}
		last := g.Line
		for _, rule := range g.Rules {
			if rule.Line <= last || rule.Line > nLines {
				t.Fatalf("group at line %d: rule %s at line %d out of order or past the %d lines", g.Line, &rule, rule.Line, nLines)
			}
			last = rule.Line
			if (rule.Priority == 0) != (rule.Pattern == "") {
				t.Fatalf("rule %s at line %d has priority %d", &rule, rule.Line, rule.Priority)
			}
		}
	}
	for _, s := range r.Sitemaps() {
		if strings.ContainsAny(s, "\r\n#") {
			t.Fatalf("sitemap %q holds a line end or a comment", s)
		}
	}

	for _, ua := range fuzzAgentsFor(groups) {
		a := r.Agent(ua)
		for _, target := range fuzzTargets(groups) {
			d := r.Decide(ua, target)
			_ = d.String()
			in := "ua=" + ua + " target=" + target
			if got := r.Allowed(ua, target); got != d.Allowed {
				t.Fatalf("%s: Allowed = %v, Decide = %s", in, got, d)
			}
			if ad := a.Decide(target); ad != d {
				t.Fatalf("%s: Agent(ua).Decide = %s, Decide = %s", in, ad, d)
			}
			if d.Group != a.Group() {
				t.Fatalf("%s: Decision.Group = %q, Agent.Group = %q", in, d.Group, a.Group())
			}
			if d.Group != "" && !names[d.Group] {
				t.Fatalf("%s: Decision.Group %q is no agent of Groups()", in, d.Group)
			}
			if d.Rule != nil && !ruleInGroups(groups, d.Rule) {
				t.Fatalf("%s: Decision.Rule %s (line %d) is no rule of Groups()", in, d.Rule, d.Rule.Line)
			}
			switch {
			case d.Exempt && (!d.Allowed || d.Rule != nil):
				t.Fatalf("%s: exempt decision %s", in, d)
			case !d.Allowed && (d.Rule == nil || d.Rule.Kind != policy.Disallow || d.Rule.Priority == 0):
				t.Fatalf("%s: disallowed without a non-empty Disallow: %s", in, d)
			case d.Allowed && d.Rule != nil && d.Rule.Kind == policy.Disallow && d.Rule.Priority != 0:
				t.Fatalf("%s: allowed by a non-empty Disallow: %s", in, d)
			case d.Group == "" && (!d.Allowed || d.Rule != nil || d.CrawlDelay != 0):
				t.Fatalf("%s: no group applies, yet %s", in, d)
			case d.CrawlDelay < 0:
				t.Fatalf("%s: negative crawl-delay in %s", in, d)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeedBodies {
		f.Add([]byte(s))
	}
	for _, name := range fuzzSeedCorpus {
		b := corpusFile(f, name)
		f.Add(b[:min(len(b), fuzzSeedCorpusBytes)])
	}
	rng := rand.New(rand.NewPCG(7, 9))
	for range 3 {
		b := make([]byte, 512)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(checkParsed)
}
