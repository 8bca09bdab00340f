package dashboard

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/report"
)

// TestLicenceColumns: a site's tables show the columns of licence
// decisions (licensed, unlicensed, invalid token, licence unavailable)
// only when a row of the site counts some, each row with its counts; the
// overview's offenders show them when an offender counts some, and leave
// out a row of licensed requests only (nothing was stopped).
func TestLicenceColumns(t *testing.T) {
	f := newFixture(2, 4, 4)
	f.rep.Sites[1].LastDay = append(f.rep.Sites[1].LastDay,
		report.ClientReport{Client: "192.0.2.7/32", Group: "GPTBot", Verification: "verified", Licensed: 1234, Unlicensed: 2, InvalidTokens: 3, LicenseUnavailable: 4},
		report.ClientReport{Client: "192.0.2.8/32", Group: "ClaudeBot", Verification: "verified", Licensed: 99999})
	h := Handler(f, Options{Now: func() time.Time { return now }})
	const head = `<th class=num title="passed with a valid licence token (RSL)">licensed</th>`
	site := serve(h, http.MethodGet, "?site=site001.example", "").Body.String()
	day := regexp.MustCompile(`(?s)<table id="last-day".*?</table>`).FindString(site)
	for _, want := range []string{
		head, `>unlicensed</th>`, `>invalid token</th>`, `>licence unavailable</th>`,
		`<td class=num>0</td><td class=num>1,234</td><td class=num>2</td><td class=num>3</td><td class=num>4</td><td class=ua>`,
		`<td>192.0.2.8/32</td>`,
	} {
		if !strings.Contains(day, want) {
			t.Errorf("the last day's table of a site with licence decisions lacks %q:\n%s", want, day)
		}
	}
	hour := regexp.MustCompile(`(?s)<table id="last-hour".*?</table>`).FindString(site)
	if !strings.Contains(hour, head) || !strings.Contains(hour, `<td class=num>0</td><td class=num>0</td><td class=num>0</td><td class=num>0</td><td class=ua>`) {
		t.Errorf("the last hour's table of the same site should have the columns too (zeros):\n%s", hour)
	}
	if other := serve(h, http.MethodGet, "?site=site000.example", "").Body.String(); strings.Contains(other, "licensed</th>") {
		t.Error("a site without licence decisions shows their columns")
	}
	overview := serve(h, http.MethodGet, "", "").Body.String()
	offenders := regexp.MustCompile(`(?s)<table id="offenders".*?</table>`).FindString(overview)
	if !strings.Contains(offenders, head) || !strings.Contains(offenders, `<td>192.0.2.7/32</td>`) {
		t.Errorf("the offenders lack the licence columns or the unlicensed client:\n%s", offenders)
	}
	if strings.Contains(offenders, "192.0.2.8/32") {
		t.Error("a client of licensed requests only is listed as an offender")
	}
	f.rep.Sites[1].LastDay = f.rep.Sites[1].LastDay[:len(f.rep.Sites[1].LastDay)-2]
	if overview := serve(h, http.MethodGet, "", "").Body.String(); strings.Contains(overview, "licensed</th>") {
		t.Error("offenders without licence decisions show their columns")
	}
}
