package classify

import "strings"

// Classes of agents that fetch a page because a person asked.
const (
	// Unfurler: a link preview, fetched when a person posts or receives
	// a link (Slackbot-LinkExpanding, Twitterbot, facebookexternalhit).
	Unfurler = "unfurler"
	// Fetcher: a user-triggered fetcher, fetching for a person's request
	// (ChatGPT-User, Perplexity-User, Google-Read-Aloud).
	Fetcher = "fetcher"
	// Reader: a feed or podcast reader, fetching the feeds and episodes a
	// person subscribed to (NetNewsWire, Liferea, Feeder, AntennaPod):
	// the readers of the list of people's apps (apps.txt), on the
	// person's own device, which no operator vouches for
	// (Info.UnverifiablePersonAgent).
	Reader = "reader"
)

// personAgent is one agent of the registry of agents that fetch for a
// person: its product token, class, operator, what the operator says of
// robots.txt, and where it says so.
type personAgent struct {
	token, class, operator, stance, source string
}

// personAgents is the registry. A verified claim of one of them is judged
// only by a group that names it (Config.PersonAgents), since a site's "*"
// group is about crawls, not about a person's own fetch; verification is
// the operator's (the verify block's registry): those without published
// addresses or reverse-DNS domains cannot be verified today, and their
// claims are judged by "*" as every unverified claim is.
var personAgents = []personAgent{
	{"ChatGPT-User", Fetcher, "openai", "ChatGPT-User fetches pages a user asks about; robots.txt rules may not apply (OpenAI)", "https://developers.openai.com/api/docs/bots"},
	{"Perplexity-User", Fetcher, "perplexity", "fetches for a user's question; generally ignores robots.txt (Perplexity)", "https://docs.perplexity.ai/docs/resources/perplexity-crawlers"},
	{"Claude-User", Fetcher, "anthropic", "fetches for a user's request (Anthropic)", "https://support.anthropic.com/en/articles/8896518"},
	{"MistralAI-User", Fetcher, "mistral", "fetches for a user's request (Mistral)", "https://docs.mistral.ai/robots"},
	{"Google-Read-Aloud", Fetcher, "google", "user-triggered fetchers generally ignore robots.txt (Google)", "https://developers.google.com/crawling/docs/crawlers-fetchers/google-user-triggered-fetchers"},
	{"FeedFetcher-Google", Fetcher, "google", "user-triggered fetchers generally ignore robots.txt (Google)", "https://developers.google.com/crawling/docs/crawlers-fetchers/google-user-triggered-fetchers"},
	{"Google-Site-Verification", Fetcher, "google", "user-triggered fetchers generally ignore robots.txt (Google)", "https://developers.google.com/crawling/docs/crawlers-fetchers/google-user-triggered-fetchers"},
	{"Slackbot-LinkExpanding", Unfurler, "slack", "link previews; Slack publishes no addresses (unverifiable today)", "https://api.slack.com/robots"},
	{"Twitterbot", Unfurler, "x", "link cards; no published addresses (unverifiable today)", "https://developer.x.com/en/docs/x-for-websites/cards/guides/getting-started"},
	{"facebookexternalhit", Unfurler, "meta", "link previews; addresses by ASN only (unverifiable today)", "https://developers.facebook.com/docs/sharing/webmasters/web-crawlers"},
	{"Discordbot", Unfurler, "discord", "link embeds; no published addresses (unverifiable today)", "https://discord.com/developers/docs"},
	{"LinkedInBot", Unfurler, "linkedin", "link previews; no published addresses (unverifiable today)", "https://www.linkedin.com/help/linkedin/answer/a521928"},
}

// personTokens are the registry's tokens, lower-cased once, in its order.
var personTokens = func() []knownToken {
	t := make([]knownToken, len(personAgents))
	for i, a := range personAgents {
		t[i] = knownToken{tok: strings.ToLower(a.token), kind: 1}
	}
	return t
}()

// personClass returns the agent of the registry that the lower-cased
// header h names (as a whole word), nil for none.
func personClass(h []byte) *personAgent {
	for i, t := range personTokens {
		if t.in(h) {
			return &personAgents[i]
		}
	}
	return nil
}

// in reports whether t occurs in h on word boundaries.
func (t knownToken) in(h []byte) bool {
	for i := 0; i+len(t.tok) <= len(h); i++ {
		if t.at(h, i, i == 0 || !isAlnum(h[i-1])) != 0 {
			return true
		}
	}
	return false
}
