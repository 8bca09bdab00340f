package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/report"
)

// idleFeeds adds n feeds that no claim has started to f.
func (f *fixture) idleFeeds(n int) {
	for i := range n {
		f.feeds = append(f.feeds, identity.FeedStatus{Source: fmt.Sprintf("https://op%02d.example/ranges.json", i), Operators: []string{fmt.Sprintf("op%02d", i)}, Idle: true})
	}
}

// TestOverviewOrder: the overview puts what an operator acts on first:
// the problems, the sites, the top offenders, the bans, and the feeds
// last, the idle ones folded away (a <details> that is open only when a
// feed fails).
func TestOverviewOrder(t *testing.T) {
	f := newFixture(3, 4, 4)
	f.sites[0].Outcome, f.sites[0].Text = "html", ""
	f.idleFeeds(19)
	h := Handler(f, Options{Now: func() time.Time { return now }})
	body := serve(h, http.MethodGet, "", "").Body.String()
	last := -1
	for _, id := range []string{"id=problems", "id=sites", "id=offenders", "id=bans", "id=feeds-h", "id=feeds", `id="idle-feeds"`} {
		i := strings.Index(body, id)
		if i < 0 {
			t.Fatalf("the overview has no %s", id)
		}
		if i < last {
			t.Errorf("%s comes before what should precede it", id)
		}
		last = i
	}
	if !strings.Contains(body, `<details id="idle-feeds"><summary>19 idle feeds (no crawler of theirs has come)</summary>`) {
		t.Error("the idle feeds are not folded away behind their count")
	}
	if n := strings.Count(body, "<span class=badge>idle</span>"); n != 19 {
		t.Errorf("%d idle feeds listed inside the fold, want 19", n)
	}
	if i, j := strings.Index(body, "https://example.com/gptbot.json"), strings.Index(body, `id="idle-feeds"`); i < 0 || i > j {
		t.Error("the loaded feed is not listed before the fold")
	}

	// A failing feed opens the fold, and is a problem.
	f.feeds[0].LastError = "dial tcp: connection refused"
	body = serve(h, http.MethodGet, "", "").Body.String()
	if !strings.Contains(body, `<details id="idle-feeds" open>`) {
		t.Error("the fold stays closed while a feed fails")
	}

	// Every feed idle: no table but the folded one.
	f.feeds = f.feeds[1:]
	body = serve(h, http.MethodGet, "", "").Body.String()
	if strings.Contains(body, "<table id=\"feeds\"") || !strings.Contains(body, "<summary>19 idle feeds") {
		t.Error("with every feed idle, the overview should show only the fold")
	}
}

// TestOffendersShowAgents: the overview lists the clients stopped most
// over the last day on any site, each with its site and the User-Agent of
// its latest stopped request (escaped); a site's tables show it too.
func TestOffendersShowAgents(t *testing.T) {
	f := newFixture(3, 8, 4)
	evil := `<script>alert(1)</script>`
	f.rep.Sites[2].LastDay = append(f.rep.Sites[2].LastDay, report.ClientReport{Client: "192.0.2.66/32", Group: "GPTBot", Verification: "unverifiable",
		UserAgent: "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)" + evil, Denials: 500})
	f.rep.Sites[0].LastHour[0].UserAgent = "FooBot/1.0"
	h := Handler(f, Options{Now: func() time.Time { return now }})
	body := serve(h, http.MethodGet, "", "").Body.String()
	rows := regexp.MustCompile(`(?s)<table id="offenders".*?</table>`).FindString(body)
	if got := strings.Count(rows, "<tr><td>"); got != maxOffenders {
		t.Errorf("%d offenders listed, want %d", got, maxOffenders)
	}
	want := `<tr><td>192.0.2.66/32</td><td><a href="?site=https%3A%2F%2Fsite002.example">https://site002.example</a></td><td>GPTBot</td>`
	if !strings.Contains(rows, want) || strings.Index(rows, "192.0.2.66/32") > strings.Index(rows, "203.0.") {
		t.Errorf("the busiest offender is not first with its site:\n%s", rows)
	}
	if !strings.Contains(rows, `<td class=ua>Mozilla/5.0 (compatible; GPTBot/1.2; &#43;https://openai.com/gptbot)&lt;script&gt;`) || strings.Contains(body, "<script>") {
		t.Error("the offender's User-Agent is missing or not escaped")
	}
	if !strings.Contains(rows, `<span class=mute>none sent</span>`) {
		t.Error("a row without a User-Agent does not say so")
	}
	site := serve(h, http.MethodGet, "?site=site000.example", "").Body.String()
	if !strings.Contains(site, `<th>User-Agent (latest)</th>`) || !strings.Contains(site, `<td class=ua>FooBot/1.0</td>`) {
		t.Error("the site page's offenders lack their User-Agent")
	}
	if strings.Contains(site, `id="offenders"`) {
		t.Error("the site page has the overview's offenders")
	}

	f.rep.Sites = nil
	if body := serve(h, http.MethodGet, "", "").Body.String(); !strings.Contains(body, "id=nooffenders") {
		t.Error("no report rows: the overview does not say that nobody was stopped")
	}
}

// TestFreshness: "fetched ... ago" is true. A check that finds the copy
// unchanged (304) keeps its fetch time, and a copy is fetched again only
// when a request finds it due, so the page says when it was checked and
// whether a refresh waits for the next request.
func TestFreshness(t *testing.T) {
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, c := range []struct {
		name                   string
		fetched, checked, next time.Time
		line                   string
		notes                  []string
		kept, due              bool
	}{
		{"just fetched", ago(3 * time.Second), ago(3 * time.Second), now.Add(57 * time.Second), "fetched 3s ago", nil, false, false},
		{"revalidated (304) a minute ago", ago(25 * time.Minute), ago(time.Minute), now.Add(time.Minute), "checked 1m ago", []string{"copy fetched 25m ago"}, true, false},
		{"due, no request since", ago(25 * time.Minute), ago(24 * time.Minute), ago(23 * time.Minute), "checked 24m ago",
			[]string{"copy fetched 25m ago", "refresh due 23m ago: at the next request"}, true, true},
		{"due, fetched last", ago(5 * time.Minute), ago(5 * time.Minute), ago(4 * time.Minute), "fetched 5m ago", []string{"refresh due 4m ago: at the next request"}, false, true},
		{"pending", time.Time{}, time.Time{}, time.Time{}, "—", nil, false, false},
	} {
		got := fresh(now, Site{Fetched: c.fetched, Checked: c.checked, NextRefresh: c.next})
		if got.Line != c.line || !slices.Equal(got.Notes, c.notes) || got.Kept != c.kept || got.Due != c.due {
			t.Errorf("%s: %+v", c.name, got)
		}
	}

	for d, want := range map[time.Duration]string{time.Hour: "1h", 70 * time.Minute: "1h10m", 61 * time.Second: "1m1s", 610 * time.Second: "10m10s", 1500 * time.Millisecond: "2s", 850 * time.Millisecond: "850ms"} {
		if got := roundDur(d); got != want {
			t.Errorf("roundDur(%v) = %q, want %q", d, got, want)
		}
	}

	// The demo's case, on both pages: fetched 25 minutes ago, checked a
	// minute ago, the next check due 23 minutes ago.
	f := newFixture(1, 1, 4)
	f.sites[0].Fetched, f.sites[0].Checked, f.sites[0].NextRefresh = ago(25*time.Minute), ago(24*time.Minute), ago(23*time.Minute)
	h := Handler(f, Options{Now: func() time.Time { return now }})
	body := serve(h, http.MethodGet, "", "").Body.String()
	if want := `<td class=fresh>checked 24m ago<br><span class=mute>copy fetched 25m ago</span><br><span class=mute>refresh due 23m ago: at the next request</span></td>`; !strings.Contains(body, want) {
		t.Errorf("overview lacks %q", want)
	}
	site := serve(h, http.MethodGet, "?"+url.Values{"site": {f.sites[0].Name}}.Encode(), "").Body.String()
	for _, want := range []string{
		`<dd id=fetched>2026-11-24 12:09:00 UTC (25m ago): the copy in force; the checks since kept it</dd>`,
		`<dd id=checked>2026-11-24 12:10:00 UTC (24m ago): unchanged, or a failure that kept the copy</dd>`,
		`<dd id=next-refresh>due since 2026-11-24 12:11:00 UTC (23m ago): the site's next request, any client's, starts it</dd>`,
	} {
		if !strings.Contains(site, want) {
			t.Errorf("site page lacks %q:\n%s", want, regexp.MustCompile(`(?s)<dl>.*</dl>`).FindString(site))
		}
	}
}

// TestDayChartWidth: the overview's chart of the last day is drawn as
// wide as a site page's hour chart (the content column), with a label
// every third hour.
func TestDayChartWidth(t *testing.T) {
	f := newFixture(2, 1, 4)
	h := Handler(f, Options{Now: func() time.Time { return now }})
	body := serve(h, http.MethodGet, "", "").Body.String()
	chart := regexp.MustCompile(`(?s)<figure class=chart><figcaption>Bot requests, last day, all sites \(hours, UTC\)</figcaption><svg viewBox="0 0 (\d+) (\d+)".*?</figure>`).FindStringSubmatch(body)
	if chart == nil {
		t.Fatal("the overview has no day chart")
	}
	if chart[1] != fmt.Sprint(chartW) {
		t.Errorf("day chart %s units wide, want %d", chart[1], chartW)
	}
	if n := strings.Count(chart[0], "text-anchor=middle>"); n != 8 {
		t.Errorf("%d hour labels, want 8", n)
	}
	// The sum of both sites' hour 23 (the last slice): allowed 2 × 123,
	// denied 2 × 3 (spoofed).
	if !strings.Contains(chart[0], "allowed 246, denied 6,") {
		t.Error("the day chart does not sum the sites")
	}
	site := serve(h, http.MethodGet, "?site=site000.example", "").Body.String()
	if n := strings.Count(site, fmt.Sprintf(`<svg viewBox="0 0 %d %d"`, chartW, chartH)); n != 3 {
		t.Errorf("%d charts of the full width on a site page, want 3", n)
	}
}

// TestTopOffenders: the overview's offenders are the busiest rows of the
// last day over every site, as a full sort would list them.
func TestTopOffenders(t *testing.T) {
	var rep report.Report
	var all []offender
	for s := range 7 {
		sr := report.SiteReport{Site: fmt.Sprintf("https://s%d.example", s)}
		for r := range 9 {
			c := report.ClientReport{Client: fmt.Sprintf("203.0.113.%d/32", r), Denials: int64((s*7 + r*5) % 11), Banned: int64(r % 2)}
			sr.LastDay = append(sr.LastDay, c)
			all = append(all, offender{ClientReport: c, Site: sr.Site})
		}
		rep.Sites = append(rep.Sites, sr)
	}
	slices.SortFunc(all, func(a, b offender) int {
		if d := stopped(&b.ClientReport) - stopped(&a.ClientReport); d != 0 {
			return int(d)
		}
		return strings.Compare(a.Client+a.Site, b.Client+b.Site)
	})
	got := topOffenders(rep)
	if len(got) != maxOffenders {
		t.Fatalf("%d offenders", len(got))
	}
	for i := range got {
		if got[i].Client != all[i].Client || got[i].Site != all[i].Site || got[i].Link != siteLink(all[i].Site) {
			t.Errorf("offender %d: %s on %s, want %s on %s", i, got[i].Client, got[i].Site, all[i].Client, all[i].Site)
		}
	}
}
