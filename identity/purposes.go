package identity

import (
	"strings"

	"github.com/robotsguard/robotsguard/policy"
)

// CrawlerPurpose is what an operator documents one of its crawlers (a
// product token) for: the use of a site's content that a Content-Signal or
// Content-Usage line grants or refuses (SEMANTICS.md §8a).
type CrawlerPurpose struct {
	// Token is the product token, as in a User-Agent header.
	Token string `json:"token"`
	// Operator names who runs it.
	Operator string `json:"operator"`
	// Purpose is its documented purpose.
	Purpose policy.Purpose `json:"-"`
	// Kind describes it in a few words, for messages ("a training
	// crawler").
	Kind string `json:"kind"`
	// Source is the page that documents the purpose.
	Source string `json:"source"`
	// Note says what the source leaves open, if anything.
	Note string `json:"note,omitempty"`
}

// Kinds of crawler, by purpose, for messages.
const (
	kindSearch = "a search crawler"
	kindInput  = "an AI answer fetcher"
	kindTrain  = "a training crawler"
)

// builtinPurposes is the registry of crawler purposes, a fresh copy each
// call. One purpose per token: the one its operator documents first. A
// crawler whose data serves several uses (Googlebot's feeds Search and its
// AI features; Applebot's, Spotlight, Siri and AI context) is listed under
// its primary one, and docs/content-signals.md says so. Tokens that exist
// only in robots.txt (Google-Extended, Applebot-Extended) are not listed:
// no request carries them. Ads checkers (OAI-AdsBot) are not listed:
// signals speak of no such use. The research notes, with the operators'
// own sentences, are in docs/content-signals.md.
func builtinPurposes() []CrawlerPurpose {
	const (
		google     = "https://developers.google.com/crawling/docs/crawlers-fetchers/google-common-crawlers"
		bing       = "https://www.bing.com/webmaster/help/which-crawlers-does-bing-use-8c184ec0"
		openai     = "https://developers.openai.com/api/docs/bots"
		anthropic  = "https://support.claude.com/en/articles/8896518-does-anthropic-crawl-data-from-the-web-and-how-can-site-owners-block-the-crawler"
		perplexity = "https://docs.perplexity.ai/guides/bots"
		apple      = "https://support.apple.com/en-us/119829"
		mistral    = "https://docs.mistral.ai/en/robots"
		meta       = "https://developers.facebook.com/docs/sharing/webmasters/web-crawlers/"
	)
	s, in, tr := policy.PurposeSearch, policy.PurposeAIInput, policy.PurposeAITrain
	return []CrawlerPurpose{
		{"Googlebot", "google", s, kindSearch, google, "Google's AI features in Search (AI Overviews) also use what Googlebot fetches; Google-Extended, a robots.txt-only token, controls Gemini training and grounding"},
		{"Bingbot", "bing", s, kindSearch, bing, ""},
		{"OAI-SearchBot", "openai", s, kindSearch, openai, ""},
		{"Claude-SearchBot", "anthropic", s, kindSearch, anthropic, ""},
		{"PerplexityBot", "perplexity", s, kindSearch, perplexity, ""},
		{"Applebot", "apple", s, kindSearch, apple, "Apple may also use Applebot's data as context for AI output; Applebot-Extended, a robots.txt-only token, controls training"},
		{"DuckDuckBot", "duckduckgo", s, kindSearch, "https://duckduckgo.com/duckduckgo-help-pages/results/duckduckbot", ""},
		{"MistralAI-Index", "mistral", s, kindSearch, mistral, ""},
		{"YandexBot", "yandex", s, kindSearch, "https://yandex.com/support/webmaster/robot-workings/check-yandex-robots.html", ""},
		{"Baiduspider", "baidu", s, kindSearch, "https://www.baidu.com/search/spider.html", ""},
		{"PetalBot", "petal", s, kindSearch, "https://aspiegel.com/petalbot", ""},
		{"SeznamBot", "seznam", s, kindSearch, "https://napoveda.seznam.cz/en/seznambot-crawler", ""},

		{"ChatGPT-User", "openai", in, kindInput, openai, "user-triggered; OpenAI says robots.txt rules may not apply to it"},
		{"Claude-User", "anthropic", in, kindInput, anthropic, "user-triggered"},
		{"Perplexity-User", "perplexity", in, kindInput, perplexity, "user-triggered; Perplexity says it generally ignores robots.txt"},
		{"DuckAssistBot", "duckduckgo", in, kindInput, "https://duckduckgo.com/duckduckgo-help-pages/results/duckassistbot", ""},
		{"MistralAI-User", "mistral", in, kindInput, mistral, "user-triggered"},
		{"Meta-ExternalFetcher", "meta", in, kindInput, meta, "user-triggered; Meta says it may bypass robots.txt"},

		{"GPTBot", "openai", tr, kindTrain, openai, ""},
		{"ClaudeBot", "anthropic", tr, kindTrain, anthropic, ""},
		{"MistralAI-Training", "mistral", tr, kindTrain, mistral, ""},
		{"Meta-ExternalAgent", "meta", tr, kindTrain, meta, "Meta also names indexing to improve its products"},
		{"Amazonbot", "amazon", tr, kindTrain, "https://developer.amazon.com/amazonbot", "Amazon names product improvement first and says the data may be used to train Amazon AI models"},
		{"CCBot", "commoncrawl", tr, kindTrain, "https://commoncrawl.org/faq", "Common Crawl publishes an open corpus for research and analysis, a main source of AI training data; it documents no narrower use"},
		{"Bytespider", "bytedance", tr, kindTrain, "https://darkvisitors.com/agents/bytespider", "ByteDance documents no purpose; the source is a third-party directory, which lists it as an AI data scraper"},
	}
}

// Purposes is a registry of crawler purposes that finds the crawlers a
// User-Agent header names. It is safe for concurrent use.
type Purposes struct {
	list    []CrawlerPurpose
	lower   []string // the tokens, lower-cased, in list's order
	byToken map[string]int
}

// NewPurposes returns the registry of the built-in purposes.
func NewPurposes() *Purposes {
	return newPurposes(builtinPurposes())
}

func newPurposes(list []CrawlerPurpose) *Purposes {
	x := &Purposes{list: list, lower: make([]string, len(list)), byToken: make(map[string]int, len(list))}
	for i, c := range list {
		x.lower[i] = strings.ToLower(c.Token)
		x.byToken[x.lower[i]] = i
	}
	return x
}

// List returns every entry, in the registry's order.
func (x *Purposes) List() []CrawlerPurpose { return append([]CrawlerPurpose(nil), x.list...) }

// Of returns the entry of the crawler that ua names (as a whole product
// token, case-insensitive), nil for none. A header that names several
// ("GPTBot/1.2 Googlebot/2.1") gets the strictest of their purposes
// (training over answer-time input over search), so that naming a second
// crawler earns no looser reading of a site's Content-Signal; Group says
// which one a chosen robots.txt group stands for.
func (x *Purposes) Of(ua string) *CrawlerPurpose {
	h := strings.ToLower(ua)
	var best *CrawlerPurpose
	for i, tok := range x.lower {
		if (best == nil || x.list[i].Purpose > best.Purpose) && hasToken(h, tok) {
			best = &x.list[i]
		}
	}
	return best
}

// Group returns the entry of the crawler whose token names a robots.txt
// group ("GPTBot"), nil when the registry has none.
func (x *Purposes) Group(group string) *CrawlerPurpose {
	if i, ok := x.byToken[strings.ToLower(group)]; ok {
		return &x.list[i]
	}
	return nil
}

// hasToken reports whether the lower-cased header h holds tok as a product
// token: not inside a longer name (letters, digits, '-' and '_' around it).
func hasToken(h, tok string) bool {
	for i := 0; ; {
		j := strings.Index(h[i:], tok)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(tok)
		if (start == 0 || !tokenByte(h[start-1])) && (end == len(h) || !tokenByte(h[end])) {
			return true
		}
		i = start + 1
	}
}

func tokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}
