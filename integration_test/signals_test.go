package integration_test

import (
	"fmt"
	"strings"
	"testing"
)

// Headers of the crawlers of issue 22's acceptance list.
var crawlerUAs = map[string]string{
	"GPTBot":        gptbotUA,
	"ClaudeBot":     "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
	"Bytespider":    "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)",
	"Googlebot":     "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"Bingbot":       "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
	"OAI-SearchBot": "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot",
	"ChatGPT-User":  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot",
	"browser":       browserUA,
}

// TestContentSignalsThroughCaddy: issue 22's acceptance, through Caddy and
// a real upstream, with the Content-Signal form and the aipref
// Content-Usage form of search=yes, ai-input=yes, ai-train=no under *:
// the training crawlers get 403 content_signal on the paths * allows,
// the search crawlers, ChatGPT-User and a browser get 200; with
// content_signals report everyone gets 200 and the would-be denials are
// in the report.
func TestContentSignalsThroughCaddy(t *testing.T) {
	for _, form := range []struct{ name, robots, body string }{
		{"Content-Signal", "User-Agent: *\nContent-Signal: search=yes, ai-input=yes, ai-train=no\nAllow: /\n", "Content-Signal ai-train=no (robots.txt line 2) applies to %s, a training crawler"},
		{"Content-Usage", "User-Agent: *\nAllow: /\nContent-Usage: train-ai=n, search=y\n", "Content-Usage train-ai=n (robots.txt line 3) applies to %s, a training crawler"},
	} {
		t.Run(form.name, func(t *testing.T) {
			up := newUpstream(t, form.robots)
			for _, mode := range []string{"", "report"} {
				port := freePort(t)
				block := "robots_guard"
				if mode != "" {
					block = "robots_guard {\n\t\tcontent_signals " + mode + "\n\t}"
				}
				tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d {\n\t%s\n\treverse_proxy %s\n}\n", port, block, up.addr()))
				for name, ua := range crawlerUAs {
					training := name == "GPTBot" || name == "ClaudeBot" || name == "Bytespider"
					for _, path := range []string{"/", "/blog/post"} {
						a := get(t, tc, port, path, ua)
						switch {
						case training && mode == "":
							a.check(t, name+" "+path, 403, fmt.Sprintf(form.body, name))
						default:
							a.check(t, name+" "+path+" ("+mode+")", 200, "page")
						}
					}
				}
				if mode == "report" {
					var rep struct {
						Sites []struct {
							Site     string
							LastHour []struct{ Denials int64 } `json:"last_hour"`
						}
					}
					adminJSON(t, "GET", "/robots_guard/report", &rep)
					var n int64
					for _, s := range rep.Sites {
						if strings.HasSuffix(s.Site, fmt.Sprintf(":%d", port)) {
							for _, r := range s.LastHour {
								n += r.Denials
							}
						}
					}
					if n != 6 {
						t.Errorf("report mode: %d would-be denials in the report, want 6 (3 crawlers × 2 paths)", n)
					}
				}
			}
		})
	}
}
