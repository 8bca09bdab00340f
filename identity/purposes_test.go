package identity

import (
	"net/url"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/policy"
)

// TestPurposesHaveSources: every registry entry has a purpose (or, for an
// agent that fetches for a person, a class), a kind and an https source
// URL, and no token is listed twice.
func TestPurposesHaveSources(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range builtinRegistry() {
		u, err := url.Parse(c.Source)
		if c.Source == "" || err != nil || u.Scheme != "https" || u.Host == "" {
			t.Errorf("%s: source %q is not an https URL", c.Token, c.Source)
		}
		if c.Purpose == policy.PurposeNone && c.Class == "" || c.Kind == "" || c.Operator == "" {
			t.Errorf("%s: purpose %v, kind %q, operator %q", c.Token, c.Purpose, c.Kind, c.Operator)
		}
		if k := strings.ToLower(c.Token); seen[k] {
			t.Errorf("%s listed twice", c.Token)
		} else {
			seen[k] = true
		}
	}
}

// TestPurposeOf: real headers find their crawler's purpose; browsers and
// unknown bots find none; the most specific token wins; tokens are found
// as robots.txt groups are chosen; an agent with no purpose (a link
// preview) is none.
func TestPurposeOf(t *testing.T) {
	x := NewPurposes()
	for ua, want := range map[string]string{
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)":                                               "GPTBot ai-train",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)":                                                                             "Googlebot search",
		"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)":                                                                              "Bingbot search",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ChatGPT-User/1.0; +https://openai.com/bot)":                                            "ChatGPT-User ai-input",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot)":                                     "OAI-SearchBot search",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)":                                              "ClaudeBot ai-train",
		"Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)": "Bytespider ai-train",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36":                                      "",
		"FooBot/1.0": "",
		// As robots.txt groups are chosen (the policy's scanner): the
		// hyphen fallback, never inside a URL, the strictest purpose of
		// several.
		"Googlebot-Image/1.0":                                        "Googlebot search",
		"MyBot/1.0 (+https://example.com/why-not-gptbot)":            "",
		"GPTBot/1.2 Googlebot/2.1":                                   "GPTBot ai-train",
		"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)": "",
	} {
		c := x.Of(ua)
		got := ""
		if c != nil {
			got = c.Token + " " + c.Purpose.String()
		}
		if got != want {
			t.Errorf("%q: %q, want %q", ua, got, want)
		}
	}
}
