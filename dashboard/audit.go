package dashboard

import (
	_ "embed"
	"html/template"
	"io"
	"strconv"
	"time"

	"github.com/robotsguard/robotsguard/report"
)

// AuditPage is what the page of an access-log audit shows ("caddy robots
// audit --html"): per site, the clients that would have been stopped and
// why, the lines they broke and the bot requests over time. WriteAudit
// draws it in the dashboard's style, as one self-contained file.
type AuditPage struct {
	// Title names the page; Generated, From and To date it and the log.
	Title               string
	Generated, From, To time.Time
	Files, Notes        []string
	Sites               []AuditSite
}

// AuditSite is one site of an audit.
type AuditSite struct {
	Site                  string
	Requests, BotRequests int64
	// Offenders are the clients that would have been stopped.
	Offenders []AuditClient
	// Compliant counts the bots that kept to robots.txt.
	Compliant int
	// Unlicensed, TokenUnchecked and TokenUnknown count the bot requests
	// for content whose licence (RSL) names a licence server: without a
	// token, with one the audit could not check, and with a token the log
	// does not show. The page shows them where they are not 0.
	Unlicensed, TokenUnchecked, TokenUnknown int64
	// Lines are the robots.txt lines that stopped requests.
	Lines []LineCount
	// Timeline counts the bot requests over time; Layout formats its
	// labels ("15:04", "Jan 2").
	Timeline []report.Slice
	Layout   string
}

// AuditClient is one client's row of an audit.
type AuditClient struct {
	Client, Group, Verification, Operator, UserAgent        string
	Requests, Disallowed, Throttled, Traps, Spoofed, Banned int64
	// Unlicensed, TokenUnchecked and TokenUnknown are its requests for
	// licensed content, as AuditSite's.
	Unlicensed, TokenUnchecked, TokenUnknown int64
	First, Last                              time.Time
	// Examples are requests that would have been stopped ("/x (line 3)").
	Examples []string
}

// LineCount is a robots.txt line and the requests it stopped.
type LineCount struct {
	Line  int
	Rule  string
	Count int64
}

//go:embed assets/audit.html
var auditHTML string

var auditTmpl = template.Must(template.New("audit").Funcs(funcs).Funcs(template.FuncMap{
	"csshash": cssHash,
	"minute":  func(t time.Time) string { return t.UTC().Format("Jan 2 15:04") },
}).Parse(auditHTML))

// auditSiteView is an AuditSite with its drawn chart and anchor.
type auditSiteView struct {
	AuditSite
	ID    string
	Chart template.HTML
}

// WriteAudit writes p as one HTML page that loads nothing from anywhere
// (its style inline, its charts SVG).
func WriteAudit(w io.Writer, p AuditPage) error {
	v := struct {
		AuditPage
		Sites []auditSiteView
	}{AuditPage: p}
	for i, s := range p.Sites {
		sv := auditSiteView{AuditSite: s, ID: "site-" + strconv.Itoa(i)}
		if len(s.Timeline) > 0 {
			every := max(1, len(s.Timeline)/8)
			sv.Chart = actionChart(s.Timeline, s.Layout, every, "Bot requests over the log's time")
		}
		v.Sites = append(v.Sites, sv)
	}
	return auditTmpl.Execute(w, v)
}
