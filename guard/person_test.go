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
