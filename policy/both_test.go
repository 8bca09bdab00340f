package policy

import (
	"testing"
	"time"
)

// TestBoth: a client bound by two groups (an unproven claim: its group and
// "*") may fetch a target only when both allow it, under the longer
// Crawl-delay, and the decision names the rule that refused it.
func TestBoth(t *testing.T) {
	r := Parse([]byte("User-agent: *\nDisallow: /private/\nCrawl-delay: 5\n\nUser-agent: GPTBot\nDisallow: /gpt/\nAllow: /private/open/\nCrawl-delay: 2\n\nUser-agent: Googlebot\nAllow: /\n"))
	star := r.Agent("")
	for _, c := range []struct {
		ua, target string
		allowed    bool
		group      string
		line       int
		delay      time.Duration
		exempt     bool
	}{
		{"GPTBot", "/open", true, "GPTBot", 0, 5 * time.Second, false},
		{"GPTBot", "/gpt/x", false, "GPTBot", 6, 5 * time.Second, false},
		{"GPTBot", "/private/x", false, "*", 2, 5 * time.Second, false},
		{"GPTBot", "/private/open/x", false, "*", 2, 5 * time.Second, false}, // GPTBot's Allow earns nothing "*" refuses
		{"Googlebot", "/private/x", false, "*", 2, 5 * time.Second, false},
		{"Googlebot", "/x", true, "Googlebot", 11, 5 * time.Second, false},
		{"GPTBot", "/robots.txt", true, "GPTBot", 0, 2 * time.Second, true},
	} {
		d := Both(r.Agent(c.ua).Decide(c.target), star.Decide(c.target))
		line := 0
		if d.Rule != nil {
			line = d.Rule.Line
		}
		if d.Allowed != c.allowed || d.Group != c.group || d.CrawlDelay != c.delay || d.Exempt != c.exempt || (!d.Allowed && line != c.line) {
			t.Errorf("%s %s: %+v (line %d), want allowed %v group %q line %d delay %v", c.ua, c.target, d, line, c.allowed, c.group, c.line, c.delay)
		}
	}
}

// TestCrawlDelayLine: a decision names the line of the Crawl-delay that
// applies (the largest of merged groups), so that a throttled request can
// be told which line throttled it; Both keeps the line of the longer delay.
func TestCrawlDelayLine(t *testing.T) {
	r := Parse([]byte("User-agent: a\nCrawl-delay: 2\n\nUser-agent: a\nCrawl-delay: 7\nDisallow: /x\n\nUser-agent: b\nUser-agent: c\nCrawl-delay: 3\nCrawl-delay: 1\n\nUser-agent: *\nCrawl-delay: 4\n"))
	for _, c := range []struct {
		ua    string
		delay time.Duration
		line  int
	}{
		{"a", 7 * time.Second, 5}, {"b", 3 * time.Second, 10}, {"c", 3 * time.Second, 10}, {"z", 4 * time.Second, 14},
	} {
		if d := r.Agent(c.ua).Decide("/p"); d.CrawlDelay != c.delay || d.CrawlDelayLine != c.line {
			t.Errorf("%s: delay %v line %d, want %v line %d", c.ua, d.CrawlDelay, d.CrawlDelayLine, c.delay, c.line)
		}
	}
	if d := Both(r.Agent("b").Decide("/p"), r.Agent("").Decide("/p")); d.CrawlDelay != 4*time.Second || d.CrawlDelayLine != 14 {
		t.Errorf("Both: %v line %d, want 4s line 14", d.CrawlDelay, d.CrawlDelayLine)
	}
	if d := Parse([]byte("User-agent: a\nDisallow: /x\n")).Agent("a").Decide("/p"); d.CrawlDelayLine != 0 {
		t.Errorf("no Crawl-delay: line %d", d.CrawlDelayLine)
	}
}

// TestAgentEmpty checks Agent's short cut for the empty header (the "*"
// group, or none) against the scan that any other header takes.
func TestAgentEmpty(t *testing.T) {
	for _, txt := range []string{
		"",
		"User-agent: *\nDisallow: /a\n",
		"User-agent: b\nDisallow: /b\n",
		"User-agent: b\nDisallow: /b\n\nUser-agent: *\nCrawl-delay: 3\nDisallow: /s\n",
		"User-agent: *\nUser-agent: b\nDisallow: /x\n",
		"User-agent:\nDisallow: /empty\n",
	} {
		r := Parse([]byte(txt))
		got, want := r.Agent(""), r.Agent(" ")
		want.ua = ""
		if got != want {
			t.Errorf("%q: Agent(\"\") = %+v, the scan gives %+v", txt, got, want)
		}
	}
}
