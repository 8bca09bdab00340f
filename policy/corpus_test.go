package policy_test

// Tests over the real robots.txt files of ../testdata/robots: every file
// parses and lints, Groups and Sitemaps agree with the text, and spot
// decisions, each checked by reading the file, name the deciding line.

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/policy"
)

// Real User-Agent headers.
const (
	hdrGooglebot  = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	hdrGPTBot     = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	hdrChrome     = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	hdrAdsBot     = "AdsBot-Google (+http://www.google.com/adsbot.html)"
	hdrBytespider = "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)"
	hdrMJ12       = "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)"
	hdrAhrefs     = "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)"
	hdrApplebot   = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)"
	hdrSemrush    = "Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)"
)

func corpusFile(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "robots", name))
	if err != nil {
		tb.Fatalf("read corpus file: %v", err)
	}
	return b
}

func corpusNames(tb testing.TB) []string {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "robots", "*.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(paths) < 20 {
		tb.Fatalf("found %d corpus files, want at least 20", len(paths))
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	return names
}

var lineEndRE = regexp.MustCompile("\r\n|\r|\n")

// splitLines splits text at LF, CR and CRLF, as SEMANTICS.md §2 says; the
// text after the last line end is a line too (possibly empty).
func splitLines(text string) []string { return lineEndRE.Split(text, -1) }

// TestCorpusParses checks every corpus file: Parse and Lint do not panic,
// only the 3.7 MB file is truncated, and Groups and Sitemaps agree with the
// text of the file.
func TestCorpusParses(t *testing.T) {
	for _, name := range corpusNames(t) {
		t.Run(name, func(t *testing.T) {
			body := corpusFile(t, name)
			r := policy.Parse(body)
			if r == nil {
				t.Fatal("Parse returned nil")
			}
			ds := r.Lint()
			checkLintOutput(t, r, ds)

			wantTrunc := len(body) > policy.MaxBodySize
			if got := r.Truncated(); got != wantTrunc {
				t.Errorf("Truncated() = %v for %d bytes, want %v", got, len(body), wantTrunc)
			}
			if name == "xuexi-cn.txt" && !r.Truncated() {
				t.Errorf("xuexi-cn.txt (%d bytes) is not truncated", len(body))
			}
			read := body[:min(len(body), policy.MaxBodySize)]
			lines := splitLines(string(read))
			checkGroups(t, r.Groups(), lines)

			// Sitemaps: every line whose key starts with "sitemap" or
			// "site-map", in order, and each value is on its line.
			var wantN int
			for _, l := range lines {
				l = strings.ToLower(strings.TrimLeft(l, " \t\ufeff"))
				if strings.HasPrefix(l, "sitemap") || strings.HasPrefix(l, "site-map") {
					wantN++
				}
			}
			sm := r.Sitemaps()
			if len(sm) != wantN {
				t.Errorf("len(Sitemaps()) = %d, want %d lines starting with sitemap", len(sm), wantN)
			}
			for _, s := range sm {
				if s == "" || strings.ContainsAny(s, "#\r\n") || !strings.Contains(string(read), s) {
					t.Errorf("Sitemaps() holds %q, which is not a sitemap value of the file", s)
				}
			}
			if len(sm) > 0 {
				sm[0] = "changed"
				if r.Sitemaps()[0] == "changed" {
					t.Errorf("Sitemaps() does not return a copy")
				}
			}
		})
	}
}

// checkGroups checks Groups() against the file's lines: groups in file
// order, rule lines in order and inside their group, each rule's pattern
// on its line, and the user-agent lines where the groups start.
func checkGroups(t *testing.T, groups []policy.Group, lines []string) {
	t.Helper()
	prevLine := 0
	for gi, g := range groups {
		if g.Line <= prevLine || g.Line > len(lines) {
			t.Errorf("group %d: Line %d out of order or past the %d lines", gi, g.Line, len(lines))
			continue
		}
		if !strings.Contains(strings.ToLower(lines[g.Line-1]), "user") {
			t.Errorf("group %d: line %d %q is not a user-agent line", gi, g.Line, lines[g.Line-1])
		}
		if len(g.Agents) == 0 {
			t.Errorf("group %d (line %d) has no agents", gi, g.Line)
		}
		for _, a := range g.Agents {
			if a != "*" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
				t.Errorf("group %d: agent token %q has characters outside [A-Za-z0-9_-]", gi, a)
			}
		}
		if g.CrawlDelay < 0 {
			t.Errorf("group %d: CrawlDelay %v < 0", gi, g.CrawlDelay)
		}
		next := len(lines) + 1
		if gi+1 < len(groups) {
			next = groups[gi+1].Line
		}
		prevRule := g.Line
		for _, rule := range g.Rules {
			if rule.Line <= prevRule || rule.Line >= next {
				t.Errorf("group %d (lines %d..%d): rule %s at line %d out of order", gi, g.Line, next-1, &rule, rule.Line)
				continue
			}
			prevRule = rule.Line
			if rule.Kind != policy.Allow && rule.Kind != policy.Disallow {
				t.Errorf("line %d: rule kind %v", rule.Line, rule.Kind)
			}
			if (rule.Priority == 0) != (rule.Pattern == "") || rule.Priority < 0 {
				t.Errorf("line %d: pattern %q with priority %d", rule.Line, rule.Pattern, rule.Priority)
			}
			if !strings.Contains(lines[rule.Line-1], rule.Pattern) {
				t.Errorf("line %d %q does not hold the pattern %q", rule.Line, lines[rule.Line-1], rule.Pattern)
			}
		}
		prevLine = g.Line
	}
}

// corpusDecision is one spot decision on a corpus file.
type corpusDecision struct {
	ua, target string
	allowed    bool
	group      string // expected Decision.Group; noGroup for ""
	lines      []int  // expected Decision.Rule.Line (any of them, for equal rules); nil: Rule == nil
	delay      time.Duration
	exempt     bool
}

// corpusDecisions lists, per file, decisions checked by reading the file
// (line numbers from grep -n).
var corpusDecisions = map[string][]corpusDecision{
	"google.txt": {
		// 1 "User-agent: *", 2 "Disallow: /search", 3 "Allow: /search/about".
		{ua: "Googlebot", target: "/search", allowed: false, group: "*", lines: []int{2}},
		{ua: hdrGooglebot, target: "/search/about", allowed: true, group: "*", lines: []int{3}},
		{ua: hdrGooglebot, target: "/search?q=robots", allowed: false, group: "*", lines: []int{2}},
		// 9 "Disallow: /?", 10 "Allow: /?hl=", 11 "Disallow: /?hl=*&",
		// 12 "Allow: /?hl=*&gws_rd=ssl$".
		{ua: "FooBot", target: "/?hl=en", allowed: true, group: "*", lines: []int{10}},
		{ua: "FooBot", target: "/?hl=en&x=1", allowed: false, group: "*", lines: []int{11}},
		{ua: "FooBot", target: "/?hl=en&gws_rd=ssl", allowed: true, group: "*", lines: []int{12}},
		// 56 "Disallow: /books?*q=*" (11) loses to 64 "Allow: /books?*q=editions:*" (20).
		{ua: "FooBot", target: "https://www.google.com/books?id=1&q=editions:abc", allowed: true, group: "*", lines: []int{64}},
		// 306 "User-agent: AdsBot-Google", 307 "Disallow: /maps/api/js/",
		// 308 "Allow: /maps/api/js"; AdsBot's group has no /search rule.
		{ua: hdrAdsBot, target: "/maps/api/js", allowed: true, group: "AdsBot-Google", lines: []int{308}},
		{ua: "AdsBot-Google", target: "/maps/api/js/x", allowed: false, group: "AdsBot-Google", lines: []int{307}},
		{ua: "AdsBot-Google", target: "/search", allowed: true, group: "AdsBot-Google"},
		// 314 "User-agent: Twitterbot", 315 "Allow: /imgres".
		{ua: "Twitterbot/1.0", target: "/imgres/x", allowed: true, group: "Twitterbot", lines: []int{315}},
		{ua: "FooBot", target: "/robots.txt", allowed: true, group: "*", exempt: true},
	},
	"github.txt": {
		// 3 "User-agent: baidu", 4 "crawl-delay: 1", 7 "User-agent: *": one
		// group, so both share the rules (SEMANTICS.md §3), but the delay
		// belongs to baidu alone, the run above it (§8).
		// 9 "Disallow: /*/*/pulse".
		{ua: "baidu", target: "/a/b/pulse", allowed: false, group: "baidu", lines: []int{9}, delay: time.Second},
		{ua: "Baiduspider", target: "/a/b/pulse", allowed: false, group: "*", lines: []int{9}},
		// 64 "Disallow: /*tab=*", 65 "Allow: /*?tab=achievements&achievement=*".
		{ua: "FooBot", target: "/u?tab=achievements&achievement=x", allowed: true, group: "*", lines: []int{65}},
		{ua: "FooBot", target: "/u?tab=repos", allowed: false, group: "*", lines: []int{64}},
		// 37 "Disallow: /*.git$"; 36 "Disallow: */.git/" needs "/.git/".
		{ua: "FooBot", target: "/x.git", allowed: false, group: "*", lines: []int{37}},
		{ua: "FooBot", target: "/x.git/y", allowed: true, group: "*"},
		// 33 "Disallow: /*/raw/".
		{ua: hdrGooglebot, target: "https://github.com/a/b/raw/main/x", allowed: false, group: "*", lines: []int{33}},
	},
	"nytimes.txt": {
		// 15 "User-agent: *", 16 "User-agent: Googlebot" share lines 17..102;
		// 107 "User-agent: Googlebot" adds 108 "Disallow: /athletic*adgroupid*".
		{ua: hdrGooglebot, target: "/athletic/x?adgroupid=1", allowed: false, group: "Googlebot", lines: []int{108}},
		{ua: "FooBot", target: "/athletic/x?adgroupid=1", allowed: true, group: "*"},
		{ua: hdrGooglebot, target: "/athletic/wp/wp-admin/admin-ajax.php", allowed: true, group: "Googlebot", lines: []int{20}},
		{ua: hdrGooglebot, target: "/athletic/wp/wp-admin/x", allowed: false, group: "Googlebot", lines: []int{19}},
		// 17 "Disallow: /ads/".
		{ua: hdrChrome, target: "/ads/x", allowed: false, group: "*", lines: []int{17}},
		// 159 "User-agent: GPTBot", 160 "Disallow: /".
		{ua: hdrGPTBot, target: "/anything", allowed: false, group: "GPTBot", lines: []int{160}},
		// 196 "User-agent: Twitterbot", 197 "Allow: /*?*smid=".
		{ua: "Twitterbot/1.0", target: "/a?smid=1", allowed: true, group: "Twitterbot", lines: []int{197}},
	},
	"amazon.txt": {
		// 52 "Disallow: /wishlist/", 53 "Allow: /wishlist/universal*".
		{ua: "FooBot", target: "/wishlist/universal/x", allowed: true, group: "*", lines: []int{53}},
		{ua: "FooBot", target: "/wishlist/other", allowed: false, group: "*", lines: []int{52}},
		// 47 "Disallow: /gp/registry/wishlist/*/reserve" beats 51 "Disallow: /gp/registry/wishlist/".
		{ua: hdrGooglebot, target: "/gp/registry/wishlist/abc/reserve", allowed: false, group: "*", lines: []int{47}},
	},
	"stackoverflow.txt": {
		// 2 "Disallow: /posts/".
		{ua: hdrGooglebot, target: "/posts/1", allowed: false, group: "*", lines: []int{2}},
		// 79 "User-agent: Googlebot-Image", 81 "Disallow: /users/flair/".
		{ua: "Googlebot-Image/1.0", target: "/users/flair/x", allowed: false, group: "Googlebot-Image", lines: []int{81}},
		{ua: "Googlebot-Image/1.0", target: "/posts/1", allowed: true, group: "Googlebot-Image"},
		// 73 "User-agent: Bytespider", 74 "Disallow: /"; the e-mail item is ignored.
		{ua: hdrBytespider, target: "/", allowed: false, group: "Bytespider", lines: []int{74}},
		// 67 "User-agent: Yahoo Pipes 1.0" names "Yahoo"; 68 "Disallow: /".
		{ua: "Yahoo Pipes 1.0", target: "/posts/", allowed: false, group: "Yahoo", lines: []int{68}},
		// 45 "Disallow: /questions/tagged/*%20*": a raw space is encoded.
		{ua: hdrChrome, target: "/questions/tagged/a%20b", allowed: false, group: "*", lines: []int{45}},
		{ua: "FooBot", target: "/questions/tagged/a b", allowed: false, group: "*", lines: []int{45}},
	},
	"shopify.txt": {
		// 33 "User-agent: *", 35 "Disallow /500" (no colon, read as Google does).
		{ua: "FooBot", target: "/500", allowed: false, group: "*", lines: []int{35}},
		{ua: "FooBot", target: "/5001", allowed: false, group: "*", lines: []int{35}},
		// 27 "User-agent: adsbot-google", 28 "Disallow: */store/checkouts/",
		// 29 "Disallow: */store/checkout".
		{ua: hdrAdsBot, target: "/store/checkout", allowed: false, group: "adsbot-google", lines: []int{29}},
		{ua: hdrAdsBot, target: "/a/store/checkouts/x", allowed: false, group: "adsbot-google", lines: []int{28}},
		// 24 "User-agent:  alexa site audit #..." names "alexa"; 25 "Disallow: /".
		{ua: "alexa site audit", target: "/x", allowed: false, group: "alexa", lines: []int{25}},
		// 60 "Disallow: /blog/search$".
		{ua: "FooBot", target: "/blog/search", allowed: false, group: "*", lines: []int{60}},
		{ua: "FooBot", target: "/blog/search/x", allowed: true, group: "*"},
	},
	"venture-gr.txt": {
		// Line 1 is spoiled by a doubly encoded BOM: there is no "*" group.
		{ua: hdrGooglebot, target: "/wp-admin/", allowed: true, group: noGroup},
		// 12 "User-agent: 360Spider" (digits kept), 13 "Disallow:/".
		{ua: "360Spider", target: "/", allowed: false, group: "360Spider", lines: []int{13}},
		// 90 "User-agent: AhrefsBot", 91 "Disallow:/" (88 "Ahrefs" is shorter).
		{ua: hdrAhrefs, target: "/x", allowed: false, group: "AhrefsBot", lines: []int{91}},
		// 1790 "User-agent: MJ12bot", 1791 "Disallow:/".
		{ua: hdrMJ12, target: "/x", allowed: false, group: "MJ12bot", lines: []int{1791}},
		// 3548 "User-agent: Zyte", 3549 "Disallow:/" without a final line end.
		{ua: "Zyte", target: "/a", allowed: false, group: "Zyte", lines: []int{3549}},
	},
	"wikipedia-en.txt": {
		// 148 "User-agent: *", 150 "Allow: /w/load.php?", 152 "Disallow: /w/".
		{ua: "FooBot", target: "/w/load.php?x", allowed: true, group: "*", lines: []int{150}},
		{ua: "FooBot", target: "/w/index.php", allowed: false, group: "*", lines: []int{152}},
		// 181 ".../Löschprüfung/", 182 ".../L%C3%B6schprüfung/", 185
		// ".../L%C3%B6schpr%C3%BCfung/" are the same pattern once normalised.
		{ua: "FooBot", target: "/wiki/Wikipedia:L%c3%b6schpr%c3%bcfung/x", allowed: false, group: "*", lines: []int{181, 182, 185}},
		// 155 "Disallow: /wiki/Special:", 158 "Disallow: /wiki/Special%3A":
		// %3A stays encoded, so each matches only its own spelling.
		{ua: "FooBot", target: "/wiki/Special:Random", allowed: false, group: "*", lines: []int{155}},
		{ua: "FooBot", target: "/wiki/Special%3ARandom", allowed: false, group: "*", lines: []int{158}},
		// 11 "User-agent: MJ12bot", 12 "Disallow: /".
		{ua: hdrMJ12, target: "/wiki/X", allowed: false, group: "MJ12bot", lines: []int{12}},
		// 15 "User-agent: Mediapartners-Google*", 16 "Disallow: /".
		{ua: "Mediapartners-Google", target: "/x", allowed: false, group: "Mediapartners-Google", lines: []int{16}},
		// 19 "User-agent: IsraBot", 20 "Disallow:": the empty rule is reported.
		{ua: "IsraBot", target: "/w/x", allowed: true, group: "IsraBot", lines: []int{20}},
		// 38 "User-agent: sitecheck.internetseer.com" names "sitecheck"; in a
		// header "sitecheck." is not a whole word (§5), so "*" applies.
		{ua: "sitecheck.internetseer.com", target: "/x", allowed: true, group: "*"},
		{ua: "sitecheck", target: "/x", allowed: false, group: "sitecheck", lines: []int{39}},
	},
	"ai-robots-txt.txt": {
		// Lines 1-166 are user-agent lines of one group, 167 "Disallow: /".
		{ua: hdrGPTBot, target: "/", allowed: false, group: "GPTBot", lines: []int{167}},
		{ua: hdrApplebot, target: "/x", allowed: false, group: "Applebot", lines: []int{167}},
		{ua: hdrGooglebot, target: "/x", allowed: true, group: noGroup},
		{ua: "FooBot", target: "/robots.txt", allowed: true, group: noGroup, exempt: true},
	},
	"wikimedia-config.txt": {
		// 129 "User-agent: SemrushBot", 130 "Crawl-delay: 5", 148
		// "User-agent: *" joins that group, but not its delay (§8); 150 "Allow: /w/load.php?", 153 "Disallow: /w/".
		{ua: hdrSemrush, target: "/w/index.php", allowed: false, group: "SemrushBot", lines: []int{153}, delay: 5 * time.Second},
		{ua: "FooBot", target: "/w/load.php?a=1", allowed: true, group: "*", lines: []int{150}},
		{ua: "FooBot", target: "/wiki/Main_Page", allowed: true, group: "*"},
	},
	"drupal.txt": {
		// 19 "User-agent: *", 20 "Crawl-delay: 10", 28 "Disallow: /admin/",
		// 38 "Disallow: /index.php/admin/".
		{ua: "FooBot", target: "/admin/x", allowed: false, group: "*", lines: []int{28}, delay: 10 * time.Second},
		{ua: hdrChrome, target: "/index.php/admin/", allowed: false, group: "*", lines: []int{38}, delay: 10 * time.Second},
		{ua: "FooBot", target: "/node/1", allowed: true, group: "*", delay: 10 * time.Second},
	},
}

func TestCorpusDecisions(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(corpusDecisions)) {
		t.Run(name, func(t *testing.T) {
			r := policy.Parse(corpusFile(t, name))
			for _, c := range corpusDecisions[name] {
				d := r.Decide(c.ua, c.target)
				in := "ua=" + c.ua + " target=" + c.target
				if d.Allowed != c.allowed {
					t.Errorf("%s: Allowed = %v, want %v (%s)", in, d.Allowed, c.allowed, d)
				}
				wantGroup := c.group
				if wantGroup == noGroup {
					wantGroup = ""
				}
				if d.Group != wantGroup {
					t.Errorf("%s: Group = %q, want %q (%s)", in, d.Group, wantGroup, d)
				}
				switch {
				case c.lines == nil && d.Rule != nil:
					t.Errorf("%s: Rule = %s (line %d), want nil", in, d.Rule, d.Rule.Line)
				case c.lines != nil && d.Rule == nil:
					t.Errorf("%s: Rule = nil, want line %v", in, c.lines)
				case c.lines != nil && !slices.Contains(c.lines, d.Rule.Line):
					t.Errorf("%s: Rule = %s at line %d, want line %v", in, d.Rule, d.Rule.Line, c.lines)
				}
				if d.Exempt != c.exempt {
					t.Errorf("%s: Exempt = %v, want %v", in, d.Exempt, c.exempt)
				}
				if d.CrawlDelay != c.delay {
					t.Errorf("%s: CrawlDelay = %v, want %v", in, d.CrawlDelay, c.delay)
				}
				if got := r.Allowed(c.ua, c.target); got != d.Allowed {
					t.Errorf("%s: Allowed() = %v, Decide().Allowed = %v", in, got, d.Allowed)
				}
				if a := r.Agent(c.ua); a.Group() != d.Group || a.Decide(c.target) != d {
					t.Errorf("%s: Agent(ua) gives group %q / %s, Decide gives %s", in, a.Group(), a.Decide(c.target), d)
				}
				if d.Rule != nil && !ruleInGroups(r.Groups(), d.Rule) {
					t.Errorf("%s: Rule %s (line %d) is not a rule of Groups()", in, d.Rule, d.Rule.Line)
				}
			}
		})
	}
}

// ruleInGroups reports whether some rule of groups has rule's line, kind
// and pattern, or, for an implied rule, whether it is the "<dir>/$" of an
// index.html Allow of groups on its line (SEMANTICS.md §7).
func ruleInGroups(groups []policy.Group, rule *policy.Rule) bool {
	for _, g := range groups {
		for _, r := range g.Rules {
			if rule.Implied {
				i := strings.LastIndexByte(r.Pattern, '/')
				if r.Kind == policy.Allow && rule.Kind == policy.Allow && r.Line == rule.Line && i >= 0 &&
					strings.HasPrefix(r.Pattern[i:], "/index.htm") && rule.Pattern == r.Pattern[:i+1]+"$" {
					return true
				}
				continue
			}
			if r.Line == rule.Line && r.Pattern == rule.Pattern && r.Kind == rule.Kind && r.Priority == rule.Priority {
				return true
			}
		}
	}
	return false
}

// corpusRefTargets derives up to max targets from the rules of groups:
// each pattern with wildcards filled in, one byte longer, with a query,
// one directory deeper, and with its escapes in lower-case hex.
func corpusRefTargets(groups []policy.Group, max int) []string {
	targets := []string{"/", "/index.html", "/a?b=c", "/robots.txt"}
	step := 1
	n := 0
	for _, g := range groups {
		n += len(g.Rules)
	}
	if n > max/5 {
		step = n/(max/5) + 1
	}
	i := 0
	for _, g := range groups {
		for _, r := range g.Rules {
			i++
			if i%step != 0 || r.Pattern == "" || (r.Pattern[0] != '/' && r.Pattern[0] != '*') {
				continue
			}
			p := strings.TrimSuffix(strings.ReplaceAll(r.Pattern, "*", "x"), "$")
			if p[0] != '/' {
				p = "/" + p
			}
			targets = append(targets, p, p+"z", p+"?q=1", strings.TrimSuffix(p, "/")+"/deeper/x.html", strings.ToLower(p))
		}
	}
	return targets
}

// TestCorpusAgainstReference decides targets derived from each corpus
// file's rules with policy.Decide and with the reference of
// fuzz_decide_test.go (which trusts only Groups()), for several agents.
func TestCorpusAgainstReference(t *testing.T) {
	for _, name := range corpusNames(t) {
		if name == "xuexi-cn.txt" {
			continue // 5000 one-off Allow rules; covered by the spot tests
		}
		t.Run(name, func(t *testing.T) {
			r := policy.Parse(corpusFile(t, name))
			groups := r.Groups()
			agents := []string{"FooBot", hdrGooglebot, hdrGPTBot, hdrChrome, hdrBytespider, hdrAdsBot}
			for _, g := range groups {
				if len(agents) > 12 {
					break
				}
				if a := g.Agents[0]; a != "" && a != "*" {
					agents = append(agents, a+"/1.0")
				}
			}
			mismatches, compared := 0, 0
			done := map[string]bool{} // agents that choose the same groups are decided once
		agent:
			for _, ua := range agents {
				chosen, _ := refChoose(groups, ua)
				key := ""
				for _, g := range chosen {
					key += strconv.Itoa(g.Line) + ","
				}
				if done[key] {
					continue
				}
				done[key] = true
				for _, g := range chosen {
					for _, rule := range g.Rules {
						if badPercent(rule.Pattern) || (rule.Kind == policy.Allow && (refIndex(rule.Pattern) == "") != (refIndex(refNorm(rule.Pattern)) == "")) {
							continue agent // SEMANTICS.md does not say how these normalise
						}
					}
				}
				for _, target := range corpusRefTargets(chosen, 100) {
					if badPercent(target) {
						continue
					}
					compared++
					want := refAllowed(chosen, target)
					d := r.Decide(ua, target)
					if d.Allowed != want {
						mismatches++
						if mismatches <= 5 {
							t.Errorf("ua=%q target=%q: Allowed = %v, reference %v (%s)", ua, target, d.Allowed, want, d)
						}
					}
				}
			}
			if compared < 10 {
				t.Errorf("only %d decisions compared", compared)
			}
			if mismatches > 5 {
				t.Errorf("%d mismatches in all", mismatches)
			}
		})
	}
}
