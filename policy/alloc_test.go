package policy_test

import (
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/policy"
)

// TestDecideDoesNotAllocate checks the documented promise of Agent.Decide
// ("Decide does not allocate") through Robots.Decide, which also chooses
// the group from the header, on real files, headers and targets.
func TestDecideDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("skipped under the race detector: sync.Pool drops items at random, so the matcher's scratch buffers are reallocated")
	}
	files := []string{"google.txt", "nytimes.txt", "github.txt", "wikipedia-en.txt", "shopify.txt", "venture-gr.txt", "ai-robots-txt.txt", "linkedin.txt", "xuexi-cn.txt"}
	agents := []string{hdrGooglebot, hdrGPTBot, hdrChrome, "FooBot"}
	targets := []string{
		"/search/about",                         // plain
		"/products/123?ref=x&utm_source=feed",   // with a query
		"/wiki/L%c3%b6schpr%c3%bcfung/a%20b%2F", // percent-encoded, lower-case hex
		"/caf\xc3\xa9/*$",                       // raw UTF-8, '*' and '$' to escape
		"https://www.example.com/a/b/raw/x?q=1", // absolute URL
		"/robots.txt?x=1",                       // exempt
		"",                                      // empty
		"/" + strings.Repeat("deep/", 100) + "?" + strings.Repeat("k=v&", 100), // longer than the scratch buffer's first size
	}
	bodies := map[string][]byte{
		// Two groups of equally long tokens in one header are merged per
		// call (the Agent.multi path).
		"two equal tokens": []byte("User-agent: FooBot\nDisallow: /a\n\nUser-agent: BarBot\nDisallow: /b\nAllow: /b/*.html$\n"),
	}
	for _, name := range files {
		bodies[name] = corpusFile(t, name)
	}
	agents = append(agents, "Mozilla/5.0 (compatible; FooBot/1.0; BarBot/2.0)")
	for name, body := range bodies {
		r := policy.Parse(body)
		for _, ua := range agents {
			for _, target := range targets {
				r.Decide(ua, target) // warm the pool
				allocs := testing.AllocsPerRun(50, func() {
					_ = r.Decide(ua, target)
				})
				if allocs != 0 {
					t.Errorf("%s: Decide(%q, %q) allocates %v times per call, want 0", name, ua, target, allocs)
				}
			}
		}
	}
}

// TestAgentDecideDoesNotAllocate checks Agent and Agent.Decide separately,
// the way a server computes the agent once per request.
func TestAgentDecideDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("skipped under the race detector: sync.Pool drops items at random, so the matcher's scratch buffers are reallocated")
	}
	r := policy.Parse(corpusFile(t, "nytimes.txt"))
	for _, ua := range []string{hdrGooglebot, hdrGPTBot, hdrChrome, "FooBot"} {
		allocs := testing.AllocsPerRun(50, func() {
			a := r.Agent(ua)
			_ = a.Decide("/athletic/x?adgroupid=1")
			_ = a.Decide("/ads/%7Ex")
			_ = a.CrawlDelay()
			_ = a.Group()
		})
		if allocs != 0 {
			t.Errorf("Agent(%q) and Decide allocate %v times per call, want 0", ua, allocs)
		}
	}
}
