package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/report"
)

// maxFileLines bounds the robots.txt lines a site page lists, so that a
// huge file (up to 500 KiB are parsed) does not make a huge page; the
// deciding line of a test is named in the verdict whatever its number.
const maxFileLines = 1500

// dash is the Handler.
type dash struct {
	b Backend
	o Options
}

// view is what the template draws.
type view struct {
	Title    string
	Now      time.Time
	ReadOnly bool
	Flash    string
	Error    string
	Since    time.Time
	Sites    []siteRow
	Bans     []Ban
	Site     *sitePage
	// Problems lists what an operator should look at first: sites whose
	// robots.txt is not in force as written, feeds that fail.
	Problems []string
	// DayChart draws the bot requests of every site over the last day.
	DayChart template.HTML
	// Offenders are the clients robots.txt stopped most over the last
	// day, on any site.
	Offenders []offender
	// Feeds are the crawler feeds that a claim has started (loaded or
	// failing); IdleFeeds those of on-demand verification that no claim
	// has needed yet, folded away unless FeedProblem (some feed fails).
	Feeds, IdleFeeds []identity.FeedStatus
	FeedProblem      bool
}

// siteRow is a site in the overview.
type siteRow struct {
	Site
	Link    string // the relative URL of its page
	Problem string
	Hour    report.Slice // the last hour, summed
	Day     report.Slice // the last day, summed
	Spark   template.HTML
	Fresh   freshness
}

// offender is a report row with its site, for the overview's offenders.
type offender struct {
	report.ClientReport
	Site, Link string
}

// maxOffenders is how many rows the overview's offenders list.
const maxOffenders = 10

// sitePage is one site's page.
type sitePage struct {
	siteRow
	Report report.SiteReport
	// Licences: some row of the site counts licence decisions (RSL), so
	// its tables show their columns.
	Licences   bool
	HourChart  template.HTML
	DayChart   template.HTML
	VerifChart template.HTML
	File       []fileLine
	FileNote   string
	Q          Query
	Tested     bool
	Verdict    *Verdict
	TestError  string
}

// fileLine is a robots.txt line in the listing.
type fileLine struct {
	N     int
	Text  string
	Hits  int64
	Class string // "decides" for the tester's deciding line, "delay" for its Crawl-delay line
}

func (d *dash) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		d.get(w, r)
	case http.MethodPost:
		d.post(w, r)
	default:
		h.Set("Allow", "GET, HEAD, POST")
		http.Error(w, "robots_guard dashboard: method not allowed", http.StatusMethodNotAllowed)
	}
}

// post lifts a ban and sends the browser back to the overview (303), with
// the outcome in the query.
func (d *dash) post(w http.ResponseWriter, r *http.Request) {
	if d.o.ReadOnly {
		http.Error(w, "robots_guard dashboard: read-only", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "robots_guard dashboard: bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	op, client := r.PostForm.Get("op"), strings.TrimSpace(r.PostForm.Get("client"))
	if op != "unban" || client == "" || len(client) > 64 {
		http.Error(w, "robots_guard dashboard: want op=unban and a client", http.StatusBadRequest)
		return
	}
	// The outcome goes back as a code and the address as parsed: the page
	// shows no text that a URL carries (a link to the dashboard could
	// otherwise put words on the operator's page).
	q := url.Values{}
	addr, ok := canonicalClient(client)
	if !ok {
		q.Set("unban", "bad_address")
	} else {
		q.Set("client", addr)
		switch found, err := d.b.Unban(r.Context(), client); {
		case err != nil:
			q.Set("unban", "failed")
		case !found:
			q.Set("unban", "not_banned")
		default:
			q.Set("unban", "lifted")
		}
	}
	// A relative Location: the page may sit under a stripped prefix.
	w.Header().Set("Location", "?"+q.Encode())
	w.WriteHeader(http.StatusSeeOther)
}

func (d *dash) get(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := d.build(r.Context(), q)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if v.Site == nil && q.Get("site") != "" {
		w.WriteHeader(http.StatusNotFound)
	}
	if r.Method == http.MethodHead {
		return
	}
	render(w, v)
}

// render draws v; a template error (a bug) ends the page with a line
// that says so.
func render(w io.Writer, v *view) {
	if err := page.Execute(w, v); err != nil {
		fmt.Fprintf(w, "\n<p class=err>robots_guard dashboard: %s</p>", template.HTMLEscapeString(err.Error()))
	}
}

// build gathers the page's facts, from one Report, so that its numbers
// are those of /robots_guard/report at one moment.
func (d *dash) build(ctx context.Context, q url.Values) *view {
	v := &view{Title: d.o.Title, Now: d.o.Now().UTC(), ReadOnly: d.o.ReadOnly}
	v.Flash, v.Error = unbanOutcome(q)
	rep := d.b.Report()
	v.Since = rep.Since
	bySite := make(map[string]*report.SiteReport, len(rep.Sites))
	for i := range rep.Sites {
		bySite[rep.Sites[i].Site] = &rep.Sites[i]
	}
	sites := d.b.Sites(ctx)
	slices.SortFunc(sites, func(a, b Site) int { return strings.Compare(a.Name, b.Name) })
	seen := make(map[string]bool, len(sites))
	for _, s := range sites {
		seen[s.Name] = true
	}
	// Sites with traffic but no cached copy (evicted) still show.
	for _, sr := range rep.Sites {
		if !seen[sr.Site] {
			sites = append(sites, Site{Name: sr.Site, Outcome: "not cached"})
		}
	}
	want := q.Get("site")
	for _, s := range sites {
		row := siteRow{Site: s, Link: siteLink(s.Name), Problem: problem(s), Fresh: fresh(v.Now, s)}
		sr := bySite[s.Name]
		if sr != nil {
			row.Hour, row.Day = total(sr.Traffic.LastHour), total(sr.Traffic.LastDay)
			row.Spark = spark(sr.Traffic.LastDay)
		}
		if row.Problem != "" {
			v.Problems = append(v.Problems, s.Name+": "+row.Problem)
		}
		for _, p := range s.UntrustedProxies {
			v.Problems = append(v.Problems, s.Name+": requests from "+p+" carry forwarding headers, but it is not a trusted proxy: "+
				"its visitors share its address for bans, traps and Crawl-delay (list it in trusted_proxies)")
		}
		v.Sites = append(v.Sites, row)
		if s.Name == want || want != "" && v.Site == nil && sameSite(s.Name, want) {
			v.Site = d.sitePage(ctx, row, sr, q)
		}
	}
	if v.Site == nil {
		v.DayChart = dayChart(rep)
		v.Offenders = topOffenders(rep)
	}
	v.Bans = d.b.Bans(ctx)
	slices.SortFunc(v.Bans, func(a, b Ban) int { return cmp.Or(a.Until.Compare(b.Until), strings.Compare(a.Client, b.Client)) })
	v.feeds(d.b.Feeds())
	return v
}

// feeds sorts the crawler feeds into those a claim has started and the
// idle ones, and lists those that fail as problems.
func (v *view) feeds(fs []identity.FeedStatus) {
	for _, f := range fs {
		if f.Idle && f.LastError == "" {
			v.IdleFeeds = append(v.IdleFeeds, f)
			continue
		}
		v.Feeds = append(v.Feeds, f)
		if f.LastError != "" {
			v.FeedProblem = true
			state := "its last refresh failed"
			if !f.Loaded {
				state = "not loaded, its operator's claims are unverifiable"
			}
			v.Problems = append(v.Problems, "feed "+f.Source+": "+state+" ("+short(f.LastError)+")")
		}
	}
}

// siteLink is the relative URL of a site's page.
func siteLink(site string) string { return "?" + url.Values{"site": {site}}.Encode() }

// topOffenders returns the rows of the last day that stopped the most
// requests, on any site: the busiest first. It keeps the best
// maxOffenders while it reads (a report holds up to 100 sites of 20 rows).
func topOffenders(rep report.Report) []offender {
	before := func(a, b *report.ClientReport, siteA, siteB string) bool {
		return cmp.Or(cmp.Compare(stopped(b), stopped(a)), strings.Compare(a.Client, b.Client), strings.Compare(siteA, siteB)) < 0
	}
	out := make([]offender, 0, maxOffenders)
	for _, sr := range rep.Sites {
		for i := range sr.LastDay {
			c := &sr.LastDay[i]
			if stopped(c) == 0 {
				continue // licensed requests only: no offender
			}
			if len(out) == maxOffenders && !before(c, &out[len(out)-1].ClientReport, sr.Site, out[len(out)-1].Site) {
				continue
			}
			at := len(out)
			for at > 0 && before(c, &out[at-1].ClientReport, sr.Site, out[at-1].Site) {
				at--
			}
			if len(out) == maxOffenders {
				out = out[:len(out)-1]
			}
			out = slices.Insert(out, at, offender{ClientReport: *c, Site: sr.Site})
		}
	}
	for i := range out {
		out[i].Link = siteLink(out[i].Site)
	}
	return out
}

// stopped is the requests a row counts that were stopped: all but the
// licensed ones.
func stopped(c *report.ClientReport) int64 {
	return c.Denials + c.Throttles + c.Traps + c.Banned + c.UnattributedTraps + c.Unlicensed + c.InvalidTokens + c.LicenseUnavailable
}

// licensing reports whether a row counts licence decisions (RSL).
func licensing(c *report.ClientReport) bool {
	return c.Licensed+c.Unlicensed+c.InvalidTokens+c.LicenseUnavailable != 0
}

// licences reports whether some row counts licence decisions: the tables
// of a site's rows show their columns only then.
func licences(rows ...[]report.ClientReport) bool {
	for _, rs := range rows {
		for i := range rs {
			if licensing(&rs[i]) {
				return true
			}
		}
	}
	return false
}

// short cuts an error message to 160 bytes (on a rune boundary), for a
// list of problems; the feeds table has it whole.
func short(s string) string {
	if len(s) <= 160 {
		return s
	}
	cut := 160
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// sameSite reports whether want names site without a scheme
// ("example.com" for "https://example.com").
func sameSite(site, want string) bool {
	_, host, _ := strings.Cut(site, "://")
	return strings.EqualFold(host, want)
}

// problem says what is wrong with a site's robots.txt, "" when nothing.
func problem(s Site) string {
	switch {
	case s.Unreachable:
		return "robots.txt unreachable (" + cmp.Or(s.Error, "status "+strconv.Itoa(s.Status)) + "): bots get on_unreachable"
	case s.Outcome == "html":
		return "robots.txt is an HTML page: no rule is in force"
	case s.Outcome == "unavailable" && (s.Status == http.StatusUnauthorized || s.Status == http.StatusForbidden):
		return "robots.txt answered " + strconv.Itoa(s.Status) + ", which counts as no robots.txt: every bot may fetch everything; " +
			"is the file behind authentication or a firewall by mistake?"
	case s.Outcome == "unavailable":
		return "no robots.txt (status " + strconv.Itoa(s.Status) + "): every bot may fetch everything"
	case s.Outcome == "ok" && strings.TrimSpace(s.Text) == "":
		return "an empty robots.txt: every bot may fetch everything; is the upstream's site address right?"
	case s.Error != "":
		return "last refresh failed, the last good copy is in force: " + s.Error
	}
	return ""
}

func (d *dash) sitePage(ctx context.Context, row siteRow, sr *report.SiteReport, q url.Values) *sitePage {
	p := &sitePage{siteRow: row}
	if sr != nil {
		p.Report = *sr
		p.Licences = licences(sr.LastHour, sr.LastDay)
		p.HourChart = actionChart(sr.Traffic.LastHour, "15:04", 2, "Bot requests, last hour (5-minute slices, UTC)")
		p.DayChart = actionChart(sr.Traffic.LastDay, dayLayout, dayLabels, "Bot requests, last day (hours, UTC)")
		p.VerifChart = verificationChart(sr.Traffic.LastDay, dayLayout, dayLabels, "Crawler claims by verification, last day (hours, UTC)")
	}
	p.Q = Query{Site: row.Name, UserAgent: q.Get("ua"), Path: q.Get("path"), ClientIP: q.Get("ip"),
		Signature: q.Get("sig"), SignatureInput: q.Get("sig_input"), SignatureAgent: q.Get("sig_agent")}
	decides, delay := 0, 0
	if _, ok := q["ua"]; ok {
		p.Tested = true
		if p.Q.Path == "" {
			p.Q.Path = "/"
		}
		switch vd, err := d.b.Explain(ctx, p.Q); {
		case err != nil:
			p.TestError = err.Error()
		default:
			p.Verdict = &vd
			decides, delay = vd.RuleLine, vd.CrawlDelayLine
		}
	}
	hits := map[int]int64{}
	if sr != nil {
		for _, l := range sr.Lines {
			hits[l.Line] += l.Count
		}
	}
	text := strings.ReplaceAll(row.Text, "\r\n", "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	for i, l := range lines {
		n := i + 1
		if n > maxFileLines {
			p.FileNote = fmt.Sprintf("Lines 1–%d of %d shown.", maxFileLines, len(lines))
			break
		}
		fl := fileLine{N: n, Text: strings.TrimSuffix(l, "\r"), Hits: hits[n]}
		switch n {
		case decides:
			fl.Class = "decides"
		case delay:
			fl.Class = "delay"
		}
		p.File = append(p.File, fl)
	}
	return p
}

// total sums slices.
func total(ss []report.Slice) report.Slice {
	var t report.Slice
	for _, s := range ss {
		for _, p := range [][2]*report.ByVerification{{&t.Allowed, &s.Allowed}, {&t.Denied, &s.Denied}, {&t.Throttled, &s.Throttled}, {&t.Trapped, &s.Trapped}, {&t.Banned, &s.Banned}} {
			p[0].None += p[1].None
			p[0].Verified += p[1].Verified
			p[0].Spoofed += p[1].Spoofed
			p[0].Unverifiable += p[1].Unverifiable
		}
	}
	return t
}

// funcs are the template's helpers.
var funcs = template.FuncMap{
	"ago": ago,
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"dur": func(d time.Duration) string {
		if d == 0 {
			return "—"
		}
		return roundDur(d)
	},
	"n":     func(n int64) string { return group3(n) },
	"short": short,
	"tsum":  func(b report.ByVerification) int64 { return b.Total() },
	"add":   func(a, b int64) int64 { return a + b },
	"int64": func(n int) int64 { return int64(n) },
	"hash": func(h string) string {
		if h == "" {
			return "—"
		}
		return h[:min(len(h), 12)]
	},
	"css": func() template.CSS { return template.CSS(styleCSS) }, //nolint:gosec // our own embedded file
	"rows": func(title, id string, rows []report.ClientReport, licences bool) clientTable {
		t := clientTable{Title: title, ID: id, Licences: licences}
		for _, c := range rows {
			t.Rows = append(t.Rows, offender{ClientReport: c})
		}
		return t
	},
	"offenders": func(rows []offender) clientTable {
		t := clientTable{ID: "offenders", Rows: rows, WithSite: true}
		for i := range rows {
			t.Licences = t.Licences || licensing(&rows[i].ClientReport)
		}
		return t
	},
	"feedTable": func(id string, fs []identity.FeedStatus, now time.Time) feedTable {
		return feedTable{ID: id, Feeds: fs, Now: now}
	},
}

// feedTable is a table of crawler feeds.
type feedTable struct {
	ID    string
	Feeds []identity.FeedStatus
	Now   time.Time
}

// clientTable is a table of report rows, with their sites in the
// overview's, and the columns of licence decisions when Licences.
type clientTable struct {
	Title, ID string
	Rows      []offender
	WithSite  bool
	Licences  bool
}

// ago says how long before now t is ("25m3s ago", or "in 40s" for a time
// to come), "—" for none.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + roundDur(-d)
	}
	return roundDur(d) + " ago"
}

// roundDur writes d to the second, or to the millisecond under one,
// without the zero seconds and minutes of a round one ("25m", "1h").
func roundDur(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// group3 writes n with thousands separators.
func group3(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// canonicalClient returns an address or prefix as the dashboard shows it
// ("198.51.100.7", "2001:db8::/64"), and whether s is one.
func canonicalClient(s string) (string, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.String(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String(), true
	}
	return "", false
}

// unbanOutcome is the message of an unban's outcome, from the codes that
// post puts in the query: fixed sentences, and the address only when it
// parses as one.
func unbanOutcome(q url.Values) (flash, errMsg string) {
	client, ok := canonicalClient(q.Get("client"))
	switch q.Get("unban") {
	case "lifted":
		if ok {
			return "Lifted the ban of " + client + ".", ""
		}
	case "not_banned":
		if ok {
			return "", client + " is not banned."
		}
	case "failed":
		return "", "The unban failed (see the server's log)."
	case "bad_address":
		return "", "That is not an address or prefix such as 203.0.113.7 or 2001:db8::/64."
	}
	return "", ""
}
