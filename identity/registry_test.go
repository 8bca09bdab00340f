package identity

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// builtinVerifier compiles the built-in registry without starting feed
// fetches (tests touch no network beyond loopback).
func builtinVerifier(t testing.TB) *Verifier {
	t.Helper()
	ops := Builtin()
	if err := Validate(ops); err != nil {
		t.Fatalf("the built-in registry does not validate: %v", err)
	}
	return &Verifier{ops: compile(ops)}
}

func TestBuiltinRegistry(t *testing.T) {
	v := builtinVerifier(t)
	want := []string{"google", "bing", "openai", "anthropic", "perplexity", "apple", "duckduckgo", "commoncrawl", "mistral", "amazon", "yandex", "baidu"}
	have := map[string]bool{}
	tokens := 0
	for _, op := range v.ops {
		have[op.Name] = true
		if !strings.HasPrefix(op.Source, "https://") {
			t.Errorf("%s: source %q is not an https URL", op.Name, op.Source)
		}
		if len(op.IPRanges) == 0 && len(op.RDNS) == 0 {
			t.Errorf("%s: publishes no check", op.Name)
		}
		for _, f := range op.IPRanges {
			if !strings.HasPrefix(f, "https://") {
				t.Errorf("%s: feed %q is not an https URL", op.Name, f)
			}
		}
		// Every built-in token maps to exactly one operator: its own.
		for _, tok := range op.Tokens {
			tokens++
			for _, form := range []string{tok, strings.ToLower(tok), "Mozilla/5.0 (compatible; " + tok + "/1.0; +https://example.com/bot)"} {
				if got := v.OperatorNames(v.Claims(form)); len(got) != 1 || got[0] != op.Name {
					t.Errorf("%q claims %v, want [%s]", form, got, op.Name)
				}
			}
		}
	}
	for _, n := range want {
		if !have[n] {
			t.Errorf("operator %s is missing", n)
		}
	}
	t.Logf("%d operators, %d tokens", len(v.ops), tokens)
	for _, tok := range []string{"Google-Extended", "Applebot-Extended"} {
		// robots.txt-only tokens are not listed as such; Applebot-Extended
		// still falls back to Applebot by the hyphen rule, as a robots.txt
		// group would.
		if op := v.OperatorNames(v.Claims(tok)); tok == "Google-Extended" && len(op) != 0 {
			t.Errorf("%s claims %v", tok, op)
		}
	}
}

// Real headers, copied from testdata/useragents/crawlers.json.
func TestBuiltinRealHeaders(t *testing.T) {
	v := builtinVerifier(t)
	for ua, want := range map[string]string{
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)":                                                                                                              "google",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko; compatible; Google-Agent)":                                                                                      "google",
		"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)":                                                                                                               "bing",
		"MicrosoftPreview/2.0; +https://aka.ms/MicrosoftPreview":                                                                                                                                "bing",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.0; +https://openai.com/gptbot)":                                                                                "openai",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot":                                                                      "openai",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)":                                                                               "anthropic",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)":                                                               "perplexity",
		"Mozilla/5.0 (compatible; Applebot/0.3; +http://www.apple.com/go/applebot)":                                                                                                             "apple",
		"DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)":                                                                                                                            "duckduckgo",
		"CCBot/2.0 (https://commoncrawl.org/faq/)":                                                                                                                                              "commoncrawl",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-User/1.0; +https://docs.mistral.ai/robots)":                                                                   "mistral",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_10_1) AppleWebKit/600.2.5 (KHTML, like Gecko) Version/8.0.2 Safari/600.2.5 (Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot)": "amazon",
		"Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)":                                                                                                                      "yandex",
		"Mozilla/5.0 (compatible; Baiduspider-render/2.0; +http://www.baidu.com/search/spider.html)":                                                                                            "baidu",
	} {
		if got := v.OperatorNames(v.Claims(ua)); len(got) != 1 || got[0] != want {
			t.Errorf("%q claims %v, want [%s]", ua, got, want)
		}
	}
}

// No real browser header claims an operator, and no real crawler header
// claims two.
func TestBuiltinCorpus(t *testing.T) {
	v := builtinVerifier(t)
	f, err := os.Open("../testdata/useragents/browsers.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	browsers := 0
	for sc := bufio.NewScanner(f); sc.Scan(); browsers++ {
		if c := v.Claims(sc.Text()); c != 0 {
			t.Errorf("browser header %q claims %v", sc.Text(), v.OperatorNames(c))
		}
	}
	b, err := os.ReadFile("../testdata/useragents/crawlers.json")
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct{ Instances []string }
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatal(err)
	}
	claimed, all := 0, 0
	for _, e := range entries {
		for _, ua := range e.Instances {
			all++
			switch n := len(v.OperatorNames(v.Claims(ua))); {
			case n == 1:
				claimed++
			case n > 1:
				t.Errorf("%q claims %v", ua, v.OperatorNames(v.Claims(ua)))
			}
		}
	}
	t.Logf("%d browser headers claim nothing; %d of %d crawler headers claim one operator", browsers, claimed, all)
	if claimed < 50 {
		t.Errorf("only %d crawler headers claim an operator", claimed)
	}
}

func TestValidate(t *testing.T) {
	ok := func() Operator {
		return Operator{Name: "acme", Tokens: []string{"AcmeBot"}, RDNS: []string{"crawl.acme.example"}, IPRanges: []string{"https://acme.example/ranges.json", "/etc/acme.json"}}
	}
	if err := Validate([]Operator{ok()}); err != nil {
		t.Fatal(err)
	}
	many := make([]Operator, MaxOperators+1)
	for i := range many {
		many[i] = Operator{Name: fmt.Sprintf("op%d", i), Tokens: []string{fmt.Sprintf("Bot%d", i)}}
	}
	for _, tc := range []struct {
		name string
		ops  []Operator
		want string
	}{
		{"bad name", []Operator{{Name: "Acme Corp", Tokens: []string{"A1"}}}, `operator "Acme Corp": name`},
		{"twice", []Operator{ok(), ok()}, `operator "acme": name: defined twice`},
		{"no tokens", []Operator{{Name: "acme"}}, `operator "acme": tokens: at least one`},
		{"bad token", []Operator{{Name: "acme", Tokens: []string{"Acme Bot"}}}, `tokens: "Acme Bot" is not a product token`},
		{"token twice", []Operator{{Name: "acme", Tokens: []string{"AcmeBot", "acmebot"}}}, `"acmebot" is listed twice`},
		{"token of another", []Operator{ok(), {Name: "evil", Tokens: []string{"ACMEBOT"}}}, `operator "evil": tokens: "ACMEBOT" is also a token of "acme"`},
		{"bad domain", []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, RDNS: []string{"acme"}}}, `rdns: "acme" is not a domain`},
		{"bad domain chars", []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, RDNS: []string{"ac_me.com"}}}, `rdns`},
		{"file URL", []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{"file:///x.json"}}}, `ip_ranges: "file:///x.json"`},
		{"ftp", []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{"ftp://x/y"}}}, `ip_ranges`},
		{"too many", many, "at most 64 operators"},
		{"hyphen fallback", []Operator{{Name: "pro", Tokens: []string{"AcmeBot-Pro"}}, ok()}, `operator "pro": tokens: "AcmeBot-Pro" also names "acmebot" of "acme"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.ops)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	got := Merge(Builtin(), []Operator{
		{Name: "google", Tokens: []string{"Googlebot"}, RDNS: []string{"googlebot.com"}},
		{Name: "acme", Tokens: []string{"AcmeBot"}, RDNS: []string{"acme.example"}},
	})
	if err := Validate(got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(Builtin())+1 || got[0].Name != "google" || len(got[0].Tokens) != 1 || got[len(got)-1].Name != "acme" {
		t.Fatalf("merge: %d operators, first %+v", len(got), got[0])
	}
}

func TestUnderDomain(t *testing.T) {
	op := compile([]Operator{{Name: "g", Tokens: []string{"G1"}, RDNS: []string{"googlebot.com", ".Google.COM."}}})[0]
	for name, want := range map[string]bool{
		"crawl-66-249-66-1.googlebot.com": true,
		"googlebot.com":                   true,
		"a.b.google.com":                  true,
		"evilgooglebot.com":               false,
		"googlebot.com.evil.example":      false,
		"xgoogle.com":                     false,
		"com":                             false,
		"":                                false,
	} {
		if got := op.underDomain(name); got != want {
			t.Errorf("underDomain(%q) = %v, want %v", name, got, want)
		}
	}
}
