package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/report"
)

var now = time.Date(2026, 11, 24, 12, 34, 0, 0, time.UTC)

// fixture is a Backend with fixed facts: sites sites, each with rows
// report rows (split between the last hour and day) and a robots.txt of
// lines lines.
type fixture struct {
	sites    []Site
	rep      report.Report
	bans     []Ban
	feeds    []identity.FeedStatus
	unbanned []string
}

func newFixture(sites, rows, lines int) *fixture {
	f := &fixture{rep: report.Report{Since: now.Add(-48 * time.Hour)}}
	var robots strings.Builder
	robots.WriteString("User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\n")
	for i := 5; i < lines; i++ {
		fmt.Fprintf(&robots, "Disallow: /section-%d/\n", i)
	}
	for s := range sites {
		name := fmt.Sprintf("https://site%03d.example", s)
		f.sites = append(f.sites, Site{Name: name, Outcome: "ok", Status: 200, HasRules: true,
			Fetched: now.Add(-time.Minute), Checked: now.Add(-time.Minute), NextRefresh: now.Add(14 * time.Minute),
			ETag: `"abc"`, Text: robots.String(), Traps: []Trap{{Path: "/no-robots/", State: "armed"}},
			Licenses: []string{"https://site.example/license.xml"},
			History:  []Version{{SHA256: "43761ba1ee03b948ea70", Outcome: "ok", Bytes: 1234, FirstSeen: now.Add(-48 * time.Hour), LastSeen: now.Add(-time.Minute)}}})
		sr := report.SiteReport{Site: name, Traffic: traffic(s)}
		for r := range rows {
			row := report.ClientReport{Client: fmt.Sprintf("203.0.%d.%d/32", r/256, r%256), Group: "*", Verification: "none", Denials: int64(rows - r), Throttles: int64(r % 3)}
			if r%2 == 0 {
				sr.LastHour = append(sr.LastHour, row)
			} else {
				sr.LastDay = append(sr.LastDay, row)
			}
		}
		sr.Lines = []report.LineReport{{Line: 2, Rule: "Disallow: /private/", Count: 41, Whom: []report.WhomCount{{Group: "*", Verification: "none", Count: 41}}}}
		f.rep.Sites = append(f.rep.Sites, sr)
	}
	f.bans = []Ban{{Client: "198.51.100.7/32", Until: now.Add(time.Hour), Strikes: 1, Reason: "trap /no-robots/"}}
	f.feeds = []identity.FeedStatus{{Source: "https://example.com/gptbot.json", Operators: []string{"openai"}, Loaded: true, Prefixes: 21, Fetched: now}}
	return f
}

// traffic is a day of made-up traffic.
func traffic(seed int) report.Traffic {
	tr := report.Traffic{LastHour: make([]report.Slice, 12), LastDay: make([]report.Slice, 24)}
	for i := range tr.LastHour {
		tr.LastHour[i] = report.Slice{Start: now.Add(time.Duration(i-11) * 5 * time.Minute),
			Allowed: report.ByVerification{None: int64(10 + i + seed), Verified: 3}, Denied: report.ByVerification{None: int64(i)}, Throttled: report.ByVerification{Unverifiable: 1}}
	}
	for i := range tr.LastDay {
		tr.LastDay[i] = report.Slice{Start: now.Add(time.Duration(i-23) * time.Hour),
			Allowed: report.ByVerification{None: int64(100 + i)}, Denied: report.ByVerification{Spoofed: int64(i % 4)}}
	}
	return tr
}

func (f *fixture) Sites(context.Context) []Site { return append([]Site(nil), f.sites...) }
func (f *fixture) Report() report.Report        { return f.rep }
func (f *fixture) Feeds() []identity.FeedStatus { return f.feeds }
func (f *fixture) Bans(context.Context) []Ban   { return f.bans }
func (f *fixture) Unban(_ context.Context, c string) (bool, error) {
	for i, b := range f.bans {
		if b.Client == c || strings.TrimSuffix(b.Client, "/32") == c {
			f.bans = append(f.bans[:i], f.bans[i+1:]...)
			f.unbanned = append(f.unbanned, c)
			return true, nil
		}
	}
	return false, nil
}
func (f *fixture) Explain(_ context.Context, q Query) (Verdict, error) {
	if strings.Contains(q.Site, "nowhere") {
		return Verdict{}, fmt.Errorf("explain: %w: no server listens there", ErrNotFound)
	}
	if strings.Contains(q.UserAgent, "GPTBot") {
		return Verdict{Bot: true, Action: "deny", Reason: "disallowed", Status: 403, Group: "GPTBot", RuleLine: 5, RuleText: "Disallow: /",
			Verification: "unverifiable", Steps: []string{"feed not loaded"}}, nil
	}
	return Verdict{Action: "allow", Reason: "not_bot"}, nil
}

func serve(h http.Handler, method, target string, body string, hdr ...string) *httptest.ResponseRecorder {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, "http://ops.example/robots/"+target, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestPageIsSelfContained: the page loads nothing (no script, stylesheet,
// font or image from anywhere), and its inline stylesheet is the one the
// Content-Security-Policy allows by hash.
func TestPageIsSelfContained(t *testing.T) {
	h := Handler(newFixture(3, 10, 20), Options{Now: func() time.Time { return now }})
	for _, target := range []string{"", "?site=https://site001.example", "?site=site001.example&ua=GPTBot&path=/x"} {
		rec := serve(h, http.MethodGet, target, "")
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Fatalf("%q: %d", target, rec.Code)
		}
		if bad := regexp.MustCompile(`(?i)<script|<link|<img|<iframe|@import|url\(|\b(src|href|action)="?(https?:)?//`).FindString(body); bad != "" {
			t.Errorf("%q loads something: %q", target, bad)
		}
		m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("%q: no stylesheet", target)
		}
		sum := sha256.Sum256([]byte(m[1]))
		policy := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(policy, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") || !strings.Contains(policy, "default-src 'none'") {
			t.Errorf("%q: the policy %q does not allow the inline stylesheet by its hash", target, policy)
		}
		if strings.Contains(body, "style=") {
			t.Errorf("%q: a style attribute, which the policy blocks", target)
		}
	}
}

// TestHostileTextIsEscaped: what clients write (a User-Agent, a path, a
// site name, a robots.txt line, a ban reason) reaches the page as text.
func TestHostileTextIsEscaped(t *testing.T) {
	f := newFixture(1, 2, 8)
	evil := `"><script>alert(1)</script><img src=x onerror=alert(2)>`
	f.sites[0].Text += "Disallow: /" + evil + "\n"
	f.rep.Sites[0].LastHour[0].Group = evil
	f.bans[0].Reason = evil
	h := Handler(f, Options{Now: func() time.Time { return now }})
	for _, target := range []string{"", "?" + url.Values{"site": {f.sites[0].Name}, "ua": {evil}, "path": {"/" + evil}, "ip": {evil}}.Encode()} {
		body := serve(h, http.MethodGet, target, "").Body.String()
		if strings.Contains(body, "<script>") || strings.Contains(body, "<img") {
			t.Errorf("%q: hostile text reached the page as markup", target)
		}
	}
}

// TestDryRunSaysSo: a dry-run site's counts are marked as what would have
// been stopped.
func TestDryRunSaysSo(t *testing.T) {
	f := newFixture(2, 1, 4)
	f.sites[1].DryRun = true
	body := serve(Handler(f, Options{Now: func() time.Time { return now }}), http.MethodGet, "", "").Body.String()
	if n := strings.Count(body, "dry run: would be"); n != 1 {
		t.Errorf("%d dry-run marks for one dry-run site", n)
	}
}

// TestNoTextFromTheURL: the outcome of an unban comes back as a code and
// an address; words in the URL never reach the page.
func TestNoTextFromTheURL(t *testing.T) {
	h := Handler(newFixture(1, 1, 4), Options{Now: func() time.Time { return now }})
	for target, want := range map[string]string{
		"?error=Your+session+expired%2C+call+555-0100":      "",
		"?unban=lifted&client=Your+account+is+closed":       "",
		"?unban=not_banned&client=2001:db8::/64":            "2001:db8::/64 is not banned.",
		"?unban=lifted&client=198.51.100.7":                 "Lifted the ban of 198.51.100.7.",
		"?unban=Call+us&client=198.51.100.7":                "",
		"?unbanned=Your+account+is+closed%2C+call+555-0100": "",
	} {
		body := serve(h, http.MethodGet, target, "").Body.String()
		for _, words := range []string{"session", "555-0100", "account", "Call us"} {
			if strings.Contains(body, words) {
				t.Errorf("%s: the page shows %q from the URL", target, words)
			}
		}
		if want != "" && !strings.Contains(body, want) {
			t.Errorf("%s: no %q", target, want)
		}
	}
}

// TestSitePage: a site's page shows its copy, charts, rows, the file with
// each line's denials, and a tester answer that highlights its line.
func TestSitePage(t *testing.T) {
	f := newFixture(2, 6, 8)
	h := Handler(f, Options{Now: func() time.Time { return now }})
	body := serve(h, http.MethodGet, "?"+url.Values{"site": {"site001.example"}, "ua": {"GPTBot/1.2"}, "path": {"/x"}}.Encode(), "").Body.String()
	for _, want := range []string{
		`<h2 id=site>https://site001.example</h2>`,
		`<dt>ETag</dt><dd>&#34;abc&#34;</dd>`,
		`<dt>licences (RSL)</dt><dd><code>https://site.example/license.xml</code></dd>`,
		`<tr id="L2"><td class=ln>2</td><td class=hits>41</td><td>Disallow: /private/</td></tr>`,
		`<tr id="L5" class="decides"><td class=ln>5</td><td class=hits></td><td>Disallow: /</td></tr>`,
		`<p><strong>deny</strong> · disallowed · HTTP 403 · group <code>GPTBot</code></p>`,
		`<p>decided by <a href="#L5">line 5</a>: <code>Disallow: /</code></p>`,
		`<li>feed not loaded</li>`,
		`Bot requests, last hour (5-minute slices, UTC)`,
		`<td>203.0.0.0/32</td><td>*</td>`,
		`<h3>robots.txt history</h3>`,
		`<td class=num>1,234</td><td><code>43761ba1ee03</code></td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("site page lacks %q", want)
		}
	}
	rec := serve(h, http.MethodGet, "?site=nowhere.example", "")
	if rec.Code != http.StatusNotFound {
		t.Errorf("unknown site: %d", rec.Code)
	}
}

// TestUnban: a same-origin POST lifts a ban and sends the browser back;
// cross-origin POSTs, other methods, bad forms and a read-only dashboard
// change nothing.
func TestUnban(t *testing.T) {
	f := newFixture(1, 1, 4)
	h := Handler(f, Options{Now: func() time.Time { return now }})
	form := "op=unban&client=198.51.100.7"
	for _, c := range []struct {
		name   string
		h      http.Handler
		method string
		body   string
		hdr    []string
		code   int
	}{
		{"cross-site", h, http.MethodPost, form, []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"other origin", h, http.MethodPost, form, []string{"Origin", "https://evil.example"}, 403},
		{"read-only", Handler(f, Options{ReadOnly: true}), http.MethodPost, form, nil, 403},
		{"no client", h, http.MethodPost, "op=unban", nil, 400},
		{"a body over 4 KiB", h, http.MethodPost, form + "&pad=" + strings.Repeat("x", 8<<10), nil, 400},
		{"a client over 64 bytes", h, http.MethodPost, "op=unban&client=" + strings.Repeat("1", 65), nil, 400},
		{"other op", h, http.MethodPost, "op=ban&client=1.2.3.4", nil, 400},
		{"DELETE", h, http.MethodDelete, "", nil, 405},
	} {
		if rec := serve(c.h, c.method, "", c.body, c.hdr...); rec.Code != c.code {
			t.Errorf("%s: %d, want %d", c.name, rec.Code, c.code)
		}
	}
	if len(f.unbanned) != 0 {
		t.Fatalf("refused requests unbanned %v", f.unbanned)
	}
	rec := serve(h, http.MethodPost, "", form, "Sec-Fetch-Site", "same-origin", "Origin", "http://ops.example")
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "?client=198.51.100.7&unban=lifted" {
		t.Fatalf("unban: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	rec = serve(h, http.MethodPost, "", form, "Sec-Fetch-Site", "same-origin")
	if loc := rec.Header().Get("Location"); loc != "?client=198.51.100.7&unban=not_banned" {
		t.Errorf("unban of a client not banned: %q", loc)
	}
	body := serve(h, http.MethodGet, "?client=198.51.100.7&unban=lifted", "").Body.String()
	if !strings.Contains(body, "Lifted the ban of 198.51.100.7.") || !strings.Contains(body, "No client is banned.") {
		t.Error("the page after an unban")
	}
	if ro := serve(Handler(newFixture(1, 1, 4), Options{ReadOnly: true}), http.MethodGet, "", "").Body.String(); strings.Contains(ro, ">Unban<") {
		t.Error("a read-only dashboard shows Unban")
	}
}

// TestProblemsFirst: a site whose robots.txt is not in force as written,
// and a feed that fails, are listed at the top of the overview.
func TestProblemsFirst(t *testing.T) {
	f := newFixture(5, 1, 4)
	f.sites[0].Outcome, f.sites[0].Text = "html", ""
	f.sites[1].Unreachable, f.sites[1].Error = true, "dial tcp 127.0.0.1:9: connection refused"
	f.sites[2].Text = ""
	f.sites[4].Outcome, f.sites[4].Status, f.sites[4].Text = "unavailable", http.StatusForbidden, ""
	f.feeds[0].Loaded, f.feeds[0].LastError = false, strings.Repeat("x", 500)
	body := serve(Handler(f, Options{}), http.MethodGet, "", "").Body.String()
	for _, want := range []string{
		"https://site000.example: robots.txt is an HTML page: no rule is in force",
		"https://site001.example: robots.txt unreachable (dial tcp 127.0.0.1:9: connection refused): bots get on_unreachable",
		"https://site002.example: an empty robots.txt: every bot may fetch everything",
		"https://site004.example: robots.txt answered 403, which counts as no robots.txt: every bot may fetch everything; is the file behind authentication or a firewall by mistake?",
		"feed https://example.com/gptbot.json: not loaded, its operator&#39;s claims are unverifiable (" + strings.Repeat("x", 160) + "…)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("problems lack %q", want)
		}
	}
	if strings.Contains(body, "site003.example: ") {
		t.Error("a healthy site listed as a problem")
	}
}

// TestExplainError: the tester shows why it cannot answer.
func TestExplainError(t *testing.T) {
	f := newFixture(1, 1, 4)
	f.sites = append(f.sites, Site{Name: "http://nowhere.example", Outcome: "pending"})
	body := serve(Handler(f, Options{}), http.MethodGet, "?site=http://nowhere.example&ua=x", "").Body.String()
	if !strings.Contains(body, "explain: not found: no server listens there") {
		t.Error("no tester error on the page")
	}
	if !errors.Is(fmt.Errorf("x: %w", ErrNotFound), ErrNotFound) {
		t.Fatal("ErrNotFound")
	}
}

// TestPageWeight: with 100 sites and 10,000 report rows the overview, and
// a site page with a 1,500-line robots.txt, stay under 200 KB.
func TestPageWeight(t *testing.T) {
	f := newFixture(100, 100, 1500)
	h := Handler(f, Options{Now: func() time.Time { return now }})
	for _, target := range []string{"", "?site=site050.example&ua=GPTBot"} {
		n := serve(h, http.MethodGet, target, "").Body.Len()
		t.Logf("%q: %d bytes", target, n)
		if n > 200<<10 {
			t.Errorf("%q: %d bytes, want under 200 KB", target, n)
		}
	}
}

// BenchmarkOverview and BenchmarkSitePage render the pages for 100 sites
// and 10,000 report rows (100 per site), with a 1,500-line robots.txt.
func BenchmarkOverview(b *testing.B) { benchPage(b, "") }

func BenchmarkSitePage(b *testing.B) { benchPage(b, "?site=site050.example&ua=GPTBot") }

func benchPage(b *testing.B, target string) {
	h := Handler(newFixture(100, 100, 1500), Options{Now: func() time.Time { return now }})
	req := httptest.NewRequest(http.MethodGet, "http://ops.example/"+target, nil)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		n = rec.Body.Len()
	}
	b.ReportMetric(float64(n), "page-bytes")
}
