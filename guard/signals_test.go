package guard

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/sites"
)

// Real headers of the crawlers of issue 22's acceptance list.
var signalUAs = map[string]string{
	"GPTBot":        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
	"ClaudeBot":     "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
	"Bytespider":    "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)",
	"Googlebot":     uaGoogle,
	"Bingbot":       uaBing,
	"OAI-SearchBot": "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot",
	"ChatGPT-User":  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot",
	"browser":       uaChrome,
}

// TestContentSignals: with search=yes, ai-input=yes, ai-train=no under *
// (Content-Signal, and the same preferences as aipref Content-Usage), the
// training crawlers get 403 content_signal on every path * allows, with a
// body naming the line; search crawlers, an AI answer fetcher and a
// browser pass; under content_signals report all pass and the would-be
// denials are counted; a disallowed path is still a robots.txt denial.
func TestContentSignals(t *testing.T) {
	for _, file := range []struct{ name, robots, text string }{
		{"Content-Signal", "User-Agent: *\nContent-Signal: search=yes, ai-input=yes, ai-train=no\nAllow: /\nDisallow: /private/\n", "Content-Signal ai-train=no (robots.txt line 2)"},
		{"Content-Usage", "User-Agent: *\nAllow: /\nDisallow: /private/\nContent-Usage: train-ai=n, search=y\n", "Content-Usage train-ai=n (robots.txt line 4)"},
	} {
		for _, mode := range []string{SignalsEnforce, SignalsReport, SignalsOff} {
			t.Run(file.name+"/"+mode, func(t *testing.T) {
				obs := &countObserver{}
				// Claims from 192.0.2.1 (not globally reachable) are
				// unverifiable: judged by their group and "*" together.
				h := serve(mustNew(t, Config{ContentSignals: mode}, WithObserver(obs)), site(file.robots))
				for name, ua := range signalUAs {
					for _, path := range []string{"/", "/blog/post?id=1"} {
						rec := do(h, ua, path)
						training := name == "GPTBot" || name == "ClaudeBot" || name == "Bytespider"
						want := 200
						if training && mode == SignalsEnforce {
							want = 403
						}
						if rec.Code != want {
							t.Fatalf("%s %s: %d %q, want %d", name, path, rec.Code, rec.Body, want)
						}
						if want == 403 {
							kind := "a training crawler"
							if body := rec.Body.String(); !strings.Contains(body, file.text+" applies to "+name+", "+kind) {
								t.Errorf("%s: body %q", name, body)
							}
						}
					}
					if name != "browser" {
						if rec := do(h, ua, "/private/x"); rec.Code != 403 || !strings.Contains(rec.Body.String(), "Disallowed by robots.txt") {
							t.Errorf("%s /private/x: %d %q, want the robots.txt denial", name, rec.Code, rec.Body)
						}
					}
				}
				want := map[string]int{SignalsEnforce: 0, SignalsReport: 6, SignalsOff: 0}[mode]
				if got := obs.get("dry_run_deny/content_signal"); got != want {
					t.Errorf("dry_run_deny/content_signal counted %d, want %d; %v", got, want, obs.m)
				}
				want = map[string]int{SignalsEnforce: 6, SignalsReport: 0, SignalsOff: 0}[mode]
				if got := obs.get("deny/content_signal"); got != want {
					t.Errorf("deny/content_signal counted %d, want %d", got, want)
				}
			})
		}
	}
}

// TestContentSignalComposition: a crawler's own group decides for it, an
// unverified claim answers to "*" too, and explain says the purpose, the
// signal and its line.
func TestContentSignalComposition(t *testing.T) {
	robots := "User-agent: *\nContent-Signal: search=no\n\nUser-agent: Googlebot\nContent-Signal: search=yes\nAllow: /\n\nUser-agent: GPTBot\nAllow: /\n"
	believed := mustNew(t, Config{Verify: &identity.VerifyConfig{Off: true}}, WithSource(sites.BytesSource([]byte(robots))))
	checked := mustNew(t, Config{}, WithSource(sites.BytesSource([]byte(robots))))
	req := func(ua string) Request {
		return Request{Host: "example.com", Target: "/x", UserAgent: ua, ClientIP: "192.0.2.1"}
	}
	if v := believed.Decide(context.Background(), req(uaGoogle)); v.Action != Allow {
		t.Errorf("a believed Googlebot, its group says search=yes: %v %v", v.Action, v.Reason)
	}
	// Unverifiable (192.0.2.1 is not globally reachable): "*" says
	// search=no, and no from either wins.
	if v := checked.Decide(context.Background(), req(uaGoogle)); v.Action != Deny || v.Reason != ReasonContentSignal || v.Signal == nil || v.Signal.Line != 2 {
		t.Errorf("an unverified Googlebot: %v %v %+v, want deny content_signal line 2", v.Action, v.Reason, v.Signal)
	}
	// GPTBot's own group says nothing: "*"'s search=no is not inherited,
	// and GPTBot is not a search crawler anyway.
	if v := believed.Decide(context.Background(), req(signalUAs["GPTBot"])); v.Action != Allow {
		t.Errorf("GPTBot: %v %v", v.Action, v.Reason)
	}
	x, err := checked.Explain(context.Background(), req(uaGoogle))
	if err != nil || x.ContentSignal == nil {
		t.Fatalf("explain: %+v %v", x, err)
	}
	if s := x.ContentSignal; s.Crawler != "Googlebot" || s.Purpose != "search" || s.Signal != "no" || s.Line != 2 || s.Text != "Content-Signal search=no" || !s.Enforced || !strings.HasPrefix(s.Source, "https://") {
		t.Errorf("explain content_signal %+v", s)
	}
	x, _ = believed.Explain(context.Background(), req(uaGoogle))
	if s := x.ContentSignal; s == nil || s.Signal != "yes" || s.Line != 5 {
		t.Errorf("explain, believed: %+v", s)
	}
	if x, _ := believed.Explain(context.Background(), req(uaChrome)); x.ContentSignal != nil {
		t.Errorf("explain of a browser: %+v", x.ContentSignal)
	}
}

// BenchmarkBotAllowedWithSignal is BenchmarkBotAllowed's request (GPTBot
// on an allowed path, unverifiable from 192.0.2.1) on a file whose groups
// carry Content-Signal lines, so both its group's and "*"'s are checked.
func BenchmarkBotAllowedWithSignal(b *testing.B) {
	robots := strings.Replace(robotsTxt, "User-agent: GPTBot\n", "User-agent: GPTBot\nContent-Signal: ai-train=yes\n", 1)
	robots = strings.Replace(robots, "User-agent: *\n", "User-agent: *\nContent-Signal: search=yes, ai-input=yes\n", 1)
	e := mustNew(b, Config{}, WithSource(sites.BytesSource([]byte(robots))))
	runBench(b, serve(e, okHandler), benchRequest(uaGPTBot, "/public/page?id=42"), 200)
}

// TestSignalPurposeOfTwoTokens: a header that names GPTBot and a second
// known crawler gets GPTBot's group and GPTBot's purpose, not the second
// crawler's: 403 under ai-train=no, whether the site has a group for
// GPTBot or only "*"; a group chosen for the looser crawler does not
// loosen the strictest purpose the header names either.
func TestSignalPurposeOfTwoTokens(t *testing.T) {
	const two = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot) Googlebot/2.1"
	for _, robots := range []string{
		"User-agent: GPTBot\nContent-Signal: ai-train=no\nAllow: /\n\nUser-agent: *\nAllow: /\n",
		"User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n",
		"User-agent: Googlebot\nContent-Signal: search=yes, ai-train=no\nAllow: /\n",
	} {
		h := serve(mustNew(t, Config{ContentSignals: SignalsEnforce}), site(robots))
		if rec := do(h, two, "/page"); rec.Code != 403 || !strings.Contains(rec.Body.String(), "GPTBot, a training crawler") {
			t.Errorf("%q: %d %q, want GPTBot's 403", robots, rec.Code, rec.Body)
		}
	}
}

// TestSignalReportKeepsCrawlDelay: under content_signals report, a
// crawler the signal says no to passes (a dry run), and its group's
// Crawl-delay still applies: it is throttled (429, enforced) at the same
// request as with content_signals off (the signal's dry run returned
// before the Crawl-delay before: never throttled).
func TestSignalReportKeepsCrawlDelay(t *testing.T) {
	const robots = "User-Agent: *\nContent-Signal: ai-train=no\nCrawl-delay: 60\nAllow: /\n"
	first429 := func(mode string) int {
		h := serve(mustNew(t, Config{ContentSignals: mode}), site(robots))
		for i := 1; i <= 10; i++ {
			rec := do(h, signalUAs["GPTBot"], "/p"+strconv.Itoa(i))
			switch rec.Code {
			case 429:
				if rec.Header().Get("Retry-After") == "" {
					t.Errorf("%s: 429 without Retry-After", mode)
				}
				return i
			case 200:
			default:
				t.Fatalf("%s, request %d: %d %q", mode, i, rec.Code, rec.Body)
			}
		}
		return 0
	}
	off, report := first429(SignalsOff), first429(SignalsReport)
	if off == 0 || report != off {
		t.Errorf("first 429: request %d under report, %d with signals off; want the same, within 10", report, off)
	}
}
