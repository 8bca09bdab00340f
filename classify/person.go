package classify

import (
	"strings"

	"github.com/robotsguard/robotsguard/identity"
)

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

// personAgents are the agents of identity's registry that fetch for a
// person (CrawlerPurpose.Class), the one registry of agents by token,
// which content signals read too. A verified claim of one of them is
// judged only by a group that names it (Config.PersonAgents), since a
// site's "*" group is about crawls, not about a person's own fetch;
// verification is the operator's (the verify block's registry): those
// without published addresses or reverse-DNS domains cannot be verified
// today, and their claims are judged by "*" as every unverified claim
// is.
var personAgents = func() []personAgent {
	var out []personAgent
	for _, c := range identity.NewPurposes().List() {
		if c.Class != "" {
			out = append(out, personAgent{token: c.Token, class: c.Class, operator: c.Operator, stance: c.Note, source: c.Source})
		}
	}
	return out
}()

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
