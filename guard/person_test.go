package guard

import (
	"testing"

	"github.com/robotsguard/robotsguard/classify"
)

// TestPersonAgents: a verified agent that fetches for a person answers to
// a group that names it only ("own", the default); with "star" it answers
// to "*" as a crawler does; an unverified claim always does.
func TestPersonAgents(t *testing.T) {
	const readAloud = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko; Google-Read-Aloud; +https://support.google.com/webmasters/answer/1061943) Chrome/136.0.0.0 Safari/537.36"
	cfg := verifyConfig(t, "", "")
	cfg.Verify.Operators[0].Tokens = append(cfg.Verify.Operators[0].Tokens, "Google-Read-Aloud", "GoogleOther")
	own := newVerifying(t, cfg)
	if v := decideAt(own, readAloud, "/private/x", googleIP); v.Action != Allow || v.Reason != ReasonPersonAgent || v.Class != classify.Fetcher || !v.Bot {
		t.Errorf("verified, * only: %+v", v)
	}
	if v := decideAt(own, readAloud, "/private/x", spoofIP); v.Action != Deny || v.Reason != ReasonSpoofed {
		t.Errorf("spoofed: %+v", v)
	}
	// A crawler of the same operator is no person's agent.
	if v := decideAt(own, "Googlebot/2.1", "/private/x", googleIP); v.Reason == ReasonPersonAgent {
		t.Errorf("a crawler of the same operator: %+v", v)
	}
	// A crawler verified as its operator's that names another operator's
	// person agent earns nothing: the exemption is that agent's
	// operator's only.
	if v := decideAt(own, "Mozilla/5.0 (compatible; GoogleOther) Twitterbot/1.0", "/private/x", googleIP); v.Reason == ReasonPersonAgent || v.Action != Deny {
		t.Errorf("a verified crawler naming another operator's unfurler: %+v", v)
	}
	cfg.Bots.PersonAgents = classify.PersonAgentsStar
	star := newVerifying(t, cfg)
	if v := decideAt(star, readAloud, "/private/x", googleIP); v.Action != Deny || v.Reason != ReasonDisallowed || v.Class != classify.Fetcher {
		t.Errorf("person_agents star: %+v", v)
	}
	// The violations report names the class of the row.
	if r := star.Report(); len(r.Sites) != 1 || len(r.Sites[0].LastHour) != 1 || r.Sites[0].LastHour[0].Class != classify.Fetcher {
		t.Errorf("the report's row of a fetcher: %+v", r.Sites)
	}
}

// TestUnverifiablePersonAgents: a feed reader and a link preview from a
// person's own device, which no operator vouches for (issue 45), pass "*"
// as person agents (reason person_agent, their class, no bot) under
// person_agents own, answer to a group that names them, and are judged by
// "*" as crawlers under person_agents star.
func TestUnverifiablePersonAgents(t *testing.T) {
	const (
		reader  = "NetNewsWire (RSS Reader; https://netnewswire.com/)"
		preview = "WhatsApp/2.24.22.79 A"
	)
	cfg := verifyConfig(t, "", "")
	own := newVerifying(t, cfg)
	for ua, class := range map[string]string{reader: classify.Reader, preview: classify.Unfurler} {
		if v := decideAt(own, ua, "/private/x", spoofIP); v.Action != Allow || v.Reason != ReasonPersonAgent || v.Class != class || v.Bot {
			t.Errorf("own: %s: %+v", ua, v)
		}
	}
	cfg.Bots.PersonAgents = classify.PersonAgentsStar
	star := newVerifying(t, cfg)
	for _, ua := range []string{reader, preview} {
		if v := decideAt(star, ua, "/private/x", spoofIP); v.Action != Deny || v.Reason != ReasonDisallowed || !v.Bot {
			t.Errorf("star: %s: %+v", ua, v)
		}
	}
}
