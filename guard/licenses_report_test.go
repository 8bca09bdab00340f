package guard

import (
	"net/http"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testlicense"
	"github.com/robotsguard/robotsguard/report"
)

// TestLicensesReported: the violations report counts the licence
// decisions in the bot's row, each in its own field and none as a
// robots.txt denial: a request without a token (unlicensed), one with an
// invalid token, one whose token could not be checked (the licence server
// down), and one that passed with a valid token (licensed, recorded
// though it passed); the timeline counts the refusals as denied and the
// licensed request as allowed; a browser that passes on licensed content
// is not recorded.
func TestLicensesReported(t *testing.T) {
	ls := testlicense.Start(t)
	origin := licensedSite(ls, "")
	const gpt = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	e := mustNew(t, Config{}, WithTransport(http.DefaultTransport))
	defer e.Close()
	decide := func(ua, target, token, client string) Verdict {
		return e.DecideHTTP(licenseRequest(ua, target, token), nil, client, origin)
	}
	for _, c := range []struct {
		name, ua, target, token string
		status                  int
	}{
		{"no token", gpt, "/articles/1", "", 401},
		{"an invalid token", gpt, "/articles/2", ls.Token("http://other.example/", time.Hour), 401},
		{"a valid token", gpt, "/articles/3", ls.Token("http://example.com/", time.Hour), 200},
		{"content no licence covers", gpt, "/other", "", 200},
		{"a browser", chrome, "/articles/1", "", 200},
	} {
		client := "192.0.2.9"
		if c.ua == chrome {
			client = "192.0.2.10"
		}
		if v := decide(c.ua, c.target, c.token, client); v.StatusCode() != c.status {
			t.Fatalf("%s: %d, want %d", c.name, v.StatusCode(), c.status)
		}
	}
	ls.SetDown(true)
	if v := decide(gpt, "/articles/4", ls.Opaque("http://example.com/", time.Hour), "192.0.2.9"); v.StatusCode() != 503 {
		t.Fatalf("licence server down, an opaque token: %d, want 503", v.StatusCode())
	}
	ls.SetDown(false)

	rep := e.Report()
	if len(rep.Sites) != 1 || rep.Sites[0].Site != "http://example.com" {
		t.Fatalf("%+v", rep)
	}
	s := rep.Sites[0]
	for _, rows := range [][]report.ClientReport{s.LastHour, s.LastDay} {
		if len(rows) != 1 {
			t.Fatalf("%d rows, want GPTBot's only (a browser that passes is not recorded): %+v", len(rows), rows)
		}
		r := rows[0]
		// The site's robots.txt has a "*" group only: GPTBot's row is
		// of "*", with its User-Agent.
		if r.Client != "192.0.2.9/32" || r.Group != "*" || r.UserAgent != gpt ||
			r.Unlicensed != 1 || r.InvalidTokens != 1 || r.LicenseUnavailable != 1 || r.Licensed != 1 ||
			r.Denials+r.Throttles+r.Traps+r.Banned+r.UnattributedTraps+r.Error != 0 {
			t.Errorf("GPTBot's row: %+v; want 1 unlicensed, 1 invalid token, 1 unavailable, 1 licensed, no denial", r)
		}
	}
	if len(s.Lines) != 0 {
		t.Errorf("licence refusals counted in robots.txt's lines: %+v", s.Lines)
	}
	var allowed, denied int64
	for _, sl := range s.Traffic.LastHour {
		allowed += sl.Allowed.Total()
		denied += sl.Denied.Total()
	}
	if allowed != 2 || denied != 3 {
		t.Errorf("timeline: %d allowed, %d denied; want 2 (the licensed request and /other) and 3 (the licence refusals)", allowed, denied)
	}
}
