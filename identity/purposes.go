package identity

import (
	"strings"

	"github.com/robotsguard/robotsguard/policy"
)

// CrawlerPurpose is what an operator documents one of its crawlers or
// fetchers (a product token) for: the use of a site's content that a
// Content-Signal or Content-Usage line grants or refuses (SEMANTICS.md
// §8a), and whether it fetches for a person. It is the one registry of
// agents by token: package classify reads the agents that fetch for a
// person from it.
type CrawlerPurpose struct {
	// Token is the product token, as in a User-Agent header.
	Token string `json:"token"`
	// Operator names who runs it.
	Operator string `json:"operator"`
	// Purpose is its documented purpose; PurposeNone for an agent that
	// signals do not speak of (a link preview), which Of and Group never
	// return.
	Purpose policy.Purpose `json:"-"`
	// Kind describes it in a few words, for messages ("a training
	// crawler").
	Kind string `json:"kind"`
	// Source is the page that documents the purpose.
	Source string `json:"source"`
	// Note says what the source leaves open, if anything.
	Note string `json:"note,omitempty"`
	// Class is, for an agent that fetches because a person asked,
	// "fetcher" (a user-triggered fetch) or "unfurler" (a link
	// preview); empty for a crawler.
	Class string `json:"class,omitempty"`
}

// Kinds of crawler, by purpose, for messages.
const (
	kindSearch = "a search crawler"
	kindInput  = "an AI answer fetcher"
	kindTrain  = "a training crawler"
	kindUser   = "a user-triggered fetcher"
	kindLink   = "a link preview"

	// Classes of the agents that fetch for a person (classify's Fetcher
	// and Unfurler).
	classFetcher  = "fetcher"
	classUnfurler = "unfurler"
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
	// The crawlers, each with the fields of its CrawlerPurpose but Class
	// (builtinRegistry marks those that fetch for a person).
	crawlers := []struct {
		token, operator    string
		purpose            policy.Purpose
		kind, source, note string
	}{
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
	list := make([]CrawlerPurpose, len(crawlers))
	for i, c := range crawlers {
		list[i] = CrawlerPurpose{Token: c.token, Operator: c.operator, Purpose: c.purpose, Kind: c.kind, Source: c.source, Note: c.note}
	}
	return list
}

// builtinRegistry is builtinPurposes with the agents that fetch for a
// person marked (Class) and those that signals do not speak of added:
// the one registry, a fresh copy each call.
func builtinRegistry() []CrawlerPurpose {
	const (
		googleUser     = "https://developers.google.com/crawling/docs/crawlers-fetchers/google-user-triggered-fetchers"
		googleUserNote = "user-triggered fetchers generally ignore robots.txt (Google)"
	)
	none := policy.PurposeNone
	list := builtinPurposes()
	for i := range list {
		switch list[i].Token {
		case "ChatGPT-User", "Claude-User", "Perplexity-User", "MistralAI-User":
			list[i].Class = classFetcher
		}
	}
	return append(list,
		CrawlerPurpose{"Google-Read-Aloud", "google", none, kindUser, googleUser, googleUserNote, classFetcher},
		CrawlerPurpose{"FeedFetcher-Google", "google", none, kindUser, googleUser, googleUserNote, classFetcher},
		CrawlerPurpose{"Google-Site-Verification", "google", none, kindUser, googleUser, googleUserNote, classFetcher},
		CrawlerPurpose{"Slackbot-LinkExpanding", "slack", none, kindLink, "https://api.slack.com/robots", "Slack publishes no addresses (unverifiable today)", classUnfurler},
		CrawlerPurpose{"Twitterbot", "x", none, kindLink, "https://developer.x.com/en/docs/x-for-websites/cards/guides/getting-started", "no published addresses (unverifiable today)", classUnfurler},
		CrawlerPurpose{"facebookexternalhit", "meta", none, kindLink, "https://developers.facebook.com/docs/sharing/webmasters/web-crawlers", "addresses by ASN only (unverifiable today)", classUnfurler},
		CrawlerPurpose{"Discordbot", "discord", none, kindLink, "https://discord.com/developers/docs", "no published addresses (unverifiable today)", classUnfurler},
		CrawlerPurpose{"LinkedInBot", "linkedin", none, kindLink, "https://www.linkedin.com/help/linkedin/answer/a521928", "no published addresses (unverifiable today)", classUnfurler},
	)
}

// Purposes is the registry of agents by token, which finds the crawlers a
// User-Agent header names by their purposes. It is safe for concurrent
// use.
type Purposes struct {
	list    []CrawlerPurpose
	byToken map[string]int // entries with a purpose, by lower-cased token
	// byPurpose matches, for each purpose from the strictest down, the
	// tokens of that purpose by the rules robots.txt groups are chosen
	// by (tokensMatcher): a whole token, the hyphen fallback, not inside
	// a URL, as the group a site writes for it is chosen.
	byPurpose []purposeTokens
}

// purposeTokens are the tokens of one purpose and their matcher.
type purposeTokens struct {
	matcher *policy.Robots
}

// NewPurposes returns the built-in registry.
func NewPurposes() *Purposes {
	return newPurposes(builtinRegistry())
}

func newPurposes(list []CrawlerPurpose) *Purposes {
	x := &Purposes{list: list, byToken: make(map[string]int, len(list))}
	for _, p := range [...]policy.Purpose{policy.PurposeAITrain, policy.PurposeAIInput, policy.PurposeSearch} {
		var toks []string
		for i, c := range list {
			if c.Purpose == p {
				toks = append(toks, c.Token)
				x.byToken[strings.ToLower(c.Token)] = i
			}
		}
		if len(toks) > 0 {
			x.byPurpose = append(x.byPurpose, purposeTokens{matcher: tokensMatcher(toks)})
		}
	}
	return x
}

// List returns every entry, in the registry's order: the crawlers and
// fetchers of each purpose, then the agents that signals do not speak of.
func (x *Purposes) List() []CrawlerPurpose { return append([]CrawlerPurpose(nil), x.list...) }

// Of returns the entry of the crawler that ua names, by the rules
// robots.txt groups are chosen by, nil for none. A header that names
// several ("GPTBot/1.2 Googlebot/2.1") gets the strictest of their
// purposes (training over answer-time input over search), so that naming a
// second crawler earns no looser reading of a site's Content-Signal; Group
// says which one a chosen robots.txt group stands for.
func (x *Purposes) Of(ua string) *CrawlerPurpose {
	for _, p := range x.byPurpose {
		if a := p.matcher.Agent(ua); a.Specific() {
			return x.Group(a.Group())
		}
	}
	return nil
}

// Group returns the entry of the crawler whose token names a robots.txt
// group ("GPTBot"), nil when the registry has none with a purpose.
func (x *Purposes) Group(group string) *CrawlerPurpose {
	if i, ok := x.byToken[strings.ToLower(group)]; ok {
		return &x.list[i]
	}
	return nil
}
