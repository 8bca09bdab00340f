// Package dashboard renders robots_guard's operator page. Its overview
// puts first what an operator acts on: the problems, the sites (with when
// each robots.txt copy was checked and fetched), the day's traffic as a
// chart, the clients robots.txt stopped most with the User-Agent they
// sent, then the bans (with an Unban button) and the crawler feeds, the
// idle ones folded away. Each site has a page: the robots.txt copy in
// force with each line's hits, the traffic of the last hour and day as
// charts, the clients robots.txt stopped, and a tester that shows the
// verdict a request would get and the line that decides it.
//
// The page is drawn on the server with html/template and inline SVG. It
// loads nothing: no script, font, image or stylesheet from anywhere, under
// a Content-Security-Policy that forbids them (its one stylesheet is inline
// and allowed by its hash), and it works without JavaScript. It knows
// nothing of Caddy or of the enforcer: a Backend gives it the facts, so
// that the Caddy module (over every loaded robots_guard handler) and a
// net/http program (over one guard.Engine) serve the same page.
package dashboard

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/report"
)

// Backend gives the dashboard what it shows and does. Implementations are
// safe for concurrent use.
type Backend interface {
	// Sites returns the robots.txt copy of every site in the cache.
	Sites(ctx context.Context) []Site
	// Report returns the violations report and traffic (report.Report).
	Report() report.Report
	// Bans returns the bans in force.
	Bans(ctx context.Context) []Ban
	// Unban lifts the ban of a client (an address or prefix as Bans
	// writes it) and reports whether one was in force.
	Unban(ctx context.Context, client string) (bool, error)
	// Feeds returns the crawler IP-range feeds of verification.
	Feeds() []identity.FeedStatus
	// Explain returns the verdict a request would get now, without
	// spending anything.
	Explain(ctx context.Context, q Query) (Verdict, error)
}

// Site is the robots.txt copy of one site.
type Site struct {
	// Name is the scheme and host, e.g. "https://example.com".
	Name string
	// Outcome is the outcome of the fetch ("ok", "html", "unavailable",
	// "unreachable", "pending").
	Outcome string
	// Status is the HTTP status of that fetch, 0 for none.
	Status int
	// HasRules reports whether the copy can stop or slow a bot.
	HasRules bool
	// Unreachable reports that no good copy is known and the last fetch
	// failed.
	Unreachable bool
	// DryRun reports that the site's guard only logs: its counts are of
	// what would have been stopped (denied, throttled, trapped, banned).
	DryRun bool
	// UntrustedProxies lists the peers that sent forwarding headers for
	// the site without being trusted proxies.
	UntrustedProxies []string
	// Fetched is when the copy was fetched, Checked when the last fetch
	// ended, NextRefresh when the next one is due. A fetch that finds the
	// file unchanged (304) moves Checked, not Fetched; a due refresh waits
	// for the site's next request.
	Fetched, Checked, NextRefresh time.Time
	// ETag is the copy's validator.
	ETag string
	// Error is the last fetch's error, if it failed.
	Error string
	// Text is the robots.txt as parsed; line n is the file's line n.
	Text string
	// Licenses are the URLs of its License lines (RSL 1.0).
	Licenses []string
	// Traps are the site's traps with this copy.
	Traps []Trap
	// History lists the versions of the site's robots.txt seen, oldest
	// first.
	History []Version
}

// freshness says how fresh a site's robots.txt copy is.
type freshness struct {
	// Line and Notes are the overview's words: when the copy was last
	// checked with the site (or fetched, when that was the last check);
	// when the copy in force was fetched, if earlier, and whether a
	// refresh is due.
	Line  string
	Notes []string
	// Kept reports that checks after the copy's fetch kept it (304 Not
	// Modified, or a failure that keeps the last good copy).
	Kept bool
	// Due reports that a refresh is due: the site's next request (any
	// client's) starts it, since nothing fetches a copy that no request
	// needs.
	Due bool
}

// fresh says how fresh s's copy is at now. A copy is fetched again only
// when a request to its site finds it due (a check that finds it
// unchanged, 304, keeps it and its fetch time), so "fetched 25m ago" alone
// would hide a check a minute ago, or that no request has come since the
// copy fell due.
func fresh(now time.Time, s Site) freshness {
	var f freshness
	if s.Fetched.IsZero() {
		if s.Checked.IsZero() {
			return freshness{Line: "—"}
		}
		return freshness{Line: "checked " + ago(now, s.Checked)}
	}
	f.Line = "fetched " + ago(now, s.Fetched)
	if s.Checked.Sub(s.Fetched) >= time.Second {
		f.Kept = true
		f.Line = "checked " + ago(now, s.Checked)
		f.Notes = append(f.Notes, "copy fetched "+ago(now, s.Fetched))
	}
	if !s.NextRefresh.IsZero() && !now.Before(s.NextRefresh) {
		f.Due = true
		f.Notes = append(f.Notes, "refresh due "+ago(now, s.NextRefresh)+": at the next request")
	}
	return f
}

// Version is one robots.txt a site has served.
type Version struct {
	// SHA256 is the hex hash of the body, "" for no file (a 4xx).
	SHA256 string
	// Outcome is "ok", "html" or "unavailable"; Bytes the body's size.
	Outcome string
	Bytes   int
	// FirstSeen and LastSeen bound when it was seen in force.
	FirstSeen, LastSeen time.Time
}

// Trap is a trap's state on a site.
type Trap struct {
	// Path is the trap's path pattern.
	Path string
	// State is "armed", "waiting", "allowed" or "not_disallowed" (see
	// guard.TrapStatus).
	State string
	// ArmsAt is when a waiting trap arms.
	ArmsAt time.Time
	// AllowedFor names the groups that may fetch it, when State says so.
	AllowedFor string
}

// Ban is a ban in force.
type Ban struct {
	Client  string
	Until   time.Time
	Strikes int
	Reason  string
}

// Query is a request to explain: a site, a User-Agent header, a path and,
// optionally, a client address and Web Bot Auth signature headers.
type Query struct {
	Site, UserAgent, Path, ClientIP           string
	Signature, SignatureInput, SignatureAgent string
}

// Verdict is what Explain returns.
type Verdict struct {
	// Bot reports whether the User-Agent is a bot's.
	Bot bool
	// Action is "allow", "deny" or "throttle" (or a dry run's), Reason why,
	// Status the HTTP status the request would get (0 when it passes).
	Action, Reason string
	Status         int
	// Group is the robots.txt group the header chose; Class "unfurler"
	// or "fetcher" for an agent that fetches for a person.
	Group, Class string
	// RuleLine and RuleText are the deciding robots.txt line (0 for none).
	RuleLine int
	RuleText string
	// CrawlDelay is the group's Crawl-delay, on CrawlDelayLine; RetryAfter
	// the wait of a throttled request.
	CrawlDelay     time.Duration
	CrawlDelayLine int
	RetryAfter     time.Duration
	// Verification is the verdict on the crawler claim, with the operator,
	// the method and the steps taken.
	Verification, Operator, Method string
	Steps                          []string
}

// ErrNotFound is what Explain returns (wrapped) when no handler serves the
// site asked for; the tester shows its message.
var ErrNotFound = errors.New("not found")

//go:embed assets/style.css
var styleCSS string

//go:embed assets/page.html
var pageHTML string

var (
	page = template.Must(template.New("page").Funcs(funcs).Parse(pageHTML))
	// csp allows the inline stylesheet by its hash, forms to this origin,
	// and nothing else: no script, no request to anywhere.
	csp = "default-src 'none'; style-src 'sha256-" + cssHash() + "'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

func cssHash() string {
	h := sha256.Sum256([]byte(styleCSS))
	return base64.StdEncoding.EncodeToString(h[:])
}

// Options tunes a dashboard Handler.
type Options struct {
	// Title names the page, e.g. the server's name. Default "robots_guard".
	Title string
	// ReadOnly hides the Unban buttons and refuses POST.
	ReadOnly bool
	// Now tells the time, for tests. Default time.Now.
	Now func() time.Time
}

// Handler returns the dashboard of b: GET serves the page (the overview,
// or one site's with ?site=, with a tester's answer when ?ua= is given),
// POST lifts a ban (form fields op=unban and client). It serves the same
// page at any path it is mounted on, with relative links, so that it can
// sit under Caddy's admin API or on a site's route behind basic_auth.
// Cross-origin POSTs are refused (http.CrossOriginProtection), so another
// site cannot make an operator's browser lift a ban.
func Handler(b Backend, o Options) http.Handler {
	if o.Title == "" {
		o.Title = "robots_guard"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	d := &dash{b: b, o: o}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "robots_guard dashboard: cross-origin request refused", http.StatusForbidden)
	}))
	return cop.Handler(d)
}
