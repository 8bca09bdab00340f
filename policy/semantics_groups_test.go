package policy_test

// Independent table tests of /work/shared/SEMANTICS.md §2–§8 and the
// "Project" column of §9 and §10. Every row names the section it checks.

import (
	"reflect"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/policy"
)

type delayCase struct {
	name   string
	robots string
	ua     string
	want   time.Duration
}

func TestSemanticsCrawlDelay(t *testing.T) { // §8
	const (
		ab     = "User-agent: A\nDisallow: /\nCrawl-delay: 2\n\nUser-agent: B\nDisallow: /\n"
		bing   = "User-agent: bingbot\nCrawl-delay: 1\nDisallow: /x\n\nUser-agent: *\nCrawl-delay: 9\nDisallow: /y\n"
		spec   = "User-agent: *\nDisallow: /s\nCrawl-delay: 10\n\nUser-agent: X\nDisallow: /x\n"
		github = "User-agent: baidu\ncrawl-delay: 1\n\nUser-agent: *\nDisallow: /x\n"
		ab510  = "User-agent: A\nCrawl-delay: 5\nUser-agent: B\nCrawl-delay: 10\nDisallow: /\n"
		mrg    = "User-agent: X\nCrawl-delay: 2\nDisallow: /a\n\nUser-agent: x\nCrawl-delay: 7\nDisallow: /b\n\nUser-agent: X\nCrawl-delay: 3\nDisallow: /c\n"
	)
	cases := []delayCase{
		{"§8 decimal seconds 0.5", star + "Crawl-delay: 0.5\n", "FooBot", 500 * time.Millisecond},
		{"§8 decimal seconds 10", star + "Crawl-delay: 10\n", "FooBot", 10 * time.Second},
		{"§8 decimal seconds 1.25", star + "Crawl-delay: 1.25\n", "FooBot", 1250 * time.Millisecond},
		{"§8 negative value ignored", star + "Crawl-delay: -1\n", "FooBot", 0},
		{"§8 unparsable value ignored", star + "Crawl-delay: soon\n", "FooBot", 0},
		{"§8 unit suffix 5s is unparsable", star + "Crawl-delay: 5s\n", "FooBot", 0},
		{"§8 comma decimal 1,5 is unparsable", star + "Crawl-delay: 1,5\n", "FooBot", 0},
		{"§8 NaN is not decimal seconds", star + "Crawl-delay: NaN\n", "FooBot", 0},
		{"§8 Inf is not decimal seconds", star + "Crawl-delay: Inf\n", "FooBot", 0},
		{"§8 hexadecimal 0x10 is not decimal seconds", star + "Crawl-delay: 0x10\n", "FooBot", 0},
		{"§8 empty value ignored", star + "Crawl-delay:\n", "FooBot", 0},
		{"§8 unparsable value does not erase a valid one", star + "Crawl-delay: 5\nCrawl-delay: x\n", "FooBot", 5 * time.Second},
		{"§8 negative value does not erase a valid one", star + "Crawl-delay: 5\nCrawl-delay: -3\n", "FooBot", 5 * time.Second},
		{"§8 comment after the value", star + "Crawl-delay: 3 # slow down\n", "FooBot", 3 * time.Second},
		{"§8 key case-insensitive", star + "CRAWL-DELAY: 4\n", "FooBot", 4 * time.Second},
		{"§8 belongs to the open group: first agent", "User-agent: A\nUser-agent: B\nCrawl-delay: 3\nDisallow: /\n", "A", 3 * time.Second},
		{"§8 belongs to the open group: second agent", "User-agent: A\nUser-agent: B\nCrawl-delay: 3\nDisallow: /\n", "B", 3 * time.Second},
		{"§8 after the rules, still the open group", ab, "A", 2 * time.Second},
		{"§8 next group does not get it", ab, "B", 0},
		{"§8 nearest run above: A keeps its delay", "User-agent: A\nCrawl-delay: 5\n\nUser-agent: *\nDisallow: /\n", "A", 5 * time.Second},
		{"§8 nearest run above: * joining later gets none", "User-agent: A\nCrawl-delay: 5\n\nUser-agent: *\nDisallow: /\n", "Other", 0},
		{"§8 github.com: baidu has the delay", github, "baidu", time.Second},
		{"§8 github.com: * has none", github, "FooBot", 0},
		{"§8 A 5 s, B 10 s: A", ab510, "A", 5 * time.Second},
		{"§8 A 5 s, B 10 s: B", ab510, "B", 10 * time.Second},
		{"§8 run spans blank lines and comments", "User-agent: A\n\n# c\nUser-agent: B\nCrawl-delay: 4\nDisallow: /\n", "A", 4 * time.Second},
		{"§8 walks up past Allow, Disallow and other records", "User-agent: A\nUser-agent: B\nDisallow: /x\nAllow: /y\nSitemap: /s.xml\nHost: h\n\nCrawl-delay: 6\n", "B", 6 * time.Second},
		{"§8 an unparsable line between user-agent lines breaks the run", "User-agent: A\n<br>\nUser-agent: B\nCrawl-delay: 5\nDisallow: /\n", "A", 0},
		{"§8 an unparsable line: the run after it has the delay", "User-agent: A\n<br>\nUser-agent: B\nCrawl-delay: 5\nDisallow: /\n", "B", 5 * time.Second},
		{"§8 a record between user-agent lines breaks the run", "User-agent: A\nHost: h\nUser-agent: B\nCrawl-delay: 6\nDisallow: /\n", "A", 0},
		{"§8 a record between user-agent lines: later run has it", "User-agent: A\nHost: h\nUser-agent: B\nCrawl-delay: 6\nDisallow: /\n", "B", 6 * time.Second},
		{"§8 after the rules: the run above the rules", "User-agent: A\nDisallow: /\nCrawl-delay: 2\nUser-agent: B\nDisallow: /b\n", "B", 0},
		{"§8 second delay line for the same run: largest", "User-agent: A\nCrawl-delay: 2\nDisallow: /\nCrawl-delay: 3\n", "A", 3 * time.Second},
		{"§8 token named in two runs: largest of its runs", "User-agent: A\nCrawl-delay: 2\nUser-agent: B\nUser-agent: a\nCrawl-delay: 9\nDisallow: /\n", "A", 9 * time.Second},
		{"§8 chosen with §5 (full header)", bing, "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", 1 * time.Second},
		{"§8 chosen with §5 (* for others)", bing, "FooBot", 9 * time.Second},
		{"§8 chosen with §5 (hyphen fallback)", "User-agent: Googlebot\nCrawl-delay: 4\nDisallow: /g\n", "Googlebot-Image/1.0", 4 * time.Second},
		{"§8 specific group does not inherit * delay", spec, "X", 0},
		{"§8 * delay for others", spec, "Other", 10 * time.Second},
		{"§8 largest of merged same-token values", mrg, "X", 7 * time.Second},
		{"§8 largest of merged * values", star + "Crawl-delay: 1\nDisallow: /a\n\n" + star + "Crawl-delay: 6\nDisallow: /b\n", "FooBot", 6 * time.Second},
		{"§8 largest within one group", star + "Crawl-delay: 2\nCrawl-delay: 1\n", "FooBot", 2 * time.Second},
		{"§8 before any user-agent: no group, ignored", "Crawl-delay: 5\nUser-agent: *\nDisallow: /a\n", "FooBot", 0},
		{"§8 no group applies: 0", "User-agent: X\nCrawl-delay: 5\n", "Y", 0},
		{"§8 bare group has no delay, * not consulted", star + "Disallow: /s\nCrawl-delay: 8\n\nUser-agent: X\n", "X", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := policy.Parse([]byte(c.robots))
			if got := r.Agent(c.ua).CrawlDelay(); got != c.want {
				t.Errorf("robots=%s ua=%q: Agent().CrawlDelay() = %v, want %v", semQuote(c.robots), c.ua, got, c.want)
			}
			if got := r.Decide(c.ua, "/some/path").CrawlDelay; got != c.want {
				t.Errorf("robots=%s ua=%q: Decide().CrawlDelay = %v, want %v", semQuote(c.robots), c.ua, got, c.want)
			}
		})
	}
}

func TestSemanticsAgentSpecific(t *testing.T) { // §3, §5: Agent.Group and Agent.Specific
	const body = "User-agent: X\nDisallow: /x\n\nUser-agent: *\nDisallow: /\n\nUser-agent: Bare\n"
	cases := []struct {
		name, robots, ua, group string
		specific                bool
	}{
		{"§5 specific group matched", body, "Mozilla/5.0 (compatible; x/1.0)", "X", true},
		{"§5 * group is not specific", body, "Y", "*", false},
		{"§3 bare matched group is specific", body, "bare", "Bare", true},
		{"§5 no group at all", "", "Y", "", false},
		{"§5 no matching group and no *", "User-agent: X\nDisallow: /\n", "Y", "", false},
		{"§5 empty header gets *", body, "", "*", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := policy.Parse([]byte(c.robots)).Agent(c.ua)
			if a.Group() != c.group || a.Specific() != c.specific {
				t.Errorf("robots=%s ua=%q: Group() = %q Specific() = %v, want %q %v", semQuote(c.robots), c.ua, a.Group(), a.Specific(), c.group, c.specific)
			}
		})
	}
}

func TestSemanticsGroupsAsWritten(t *testing.T) { // §3, §4, §7, §8: Robots.Groups
	body := "Disallow: /before\n" + // 1: before any user-agent, ignored
		"User-agent: Googlebot/2.1\n" + // 2
		"User-agent: *Bot\n" + // 3
		"User-agent: * foo\n" + // 4
		"Disallow: /x # c\n" + // 5
		"Allow: /é\n" + // 6
		"Crawl-delay: 2\n" + // 7
		"\n" + // 8
		"User-agent: foobot\n" + // 9
		"Disallow:\n" + // 10
		"User-agent: MJ12bot\r\n" + // 11
		"User-agent: Hal-9000\r" + // 12
		"Dissallow: /a b\n" // 13
	want := []policy.Group{
		{Agents: []string{"Googlebot", "", "*"}, Delays: []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second}, Line: 2, Rules: []policy.Rule{
			{Kind: policy.Disallow, Pattern: "/x", Line: 5, Priority: 2},
			{Kind: policy.Allow, Pattern: "/é", Line: 6, Priority: 7},
		}, CrawlDelay: 2 * time.Second},
		{Agents: []string{"foobot"}, Delays: []time.Duration{0}, Line: 9, Rules: []policy.Rule{{Kind: policy.Disallow, Pattern: "", Line: 10, Priority: 0}}},
		{Agents: []string{"MJ12bot", "Hal-9000"}, Delays: []time.Duration{0, 0}, Line: 11, Rules: []policy.Rule{{Kind: policy.Disallow, Pattern: "/a b", Line: 13, Priority: 6}}},
	}
	got := policy.Parse([]byte(body)).Groups()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("§3/§4 Groups() =\n%#v\nwant\n%#v", got, want)
	}
}

func TestSemanticsSitemaps(t *testing.T) { // §2: sitemap, site-map
	body := "Sitemap: https://a.example/s1.xml\n" + star + "site-map: https://a.example/s2.xml\nDisallow: /\nSITEMAP:https://a.example/s3.xml # c\nSitemaps: https://a.example/s4.xml\n"
	r := policy.Parse([]byte(body))
	want := []string{"https://a.example/s1.xml", "https://a.example/s2.xml", "https://a.example/s3.xml", "https://a.example/s4.xml"}
	if got := r.Sitemaps(); !reflect.DeepEqual(got, want) {
		t.Errorf("§2 Sitemaps() = %q, want %q", got, want)
	}
	if r.Allowed("FooBot", "/s1.xml") {
		t.Errorf("§2 sitemap lines must not break the group")
	}
}

func TestSemanticsTruncated(t *testing.T) { // §1 body cap
	for _, c := range []struct {
		name string
		body string
		want bool
	}{
		{"§1 body over 512,000 bytes is truncated", bodyOverCap, true},
		{"§1 body of exactly 512,000 bytes is not truncated", bodyAtCap, false},
		{"§1 small body is not truncated", star + "Disallow: /\n", false},
	} {
		if got := policy.Parse([]byte(c.body)).Truncated(); got != c.want {
			t.Errorf("%s: Truncated() = %v, want %v", c.name, got, c.want)
		}
	}
}
