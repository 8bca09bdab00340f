package guard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/sites"
	"github.com/robotsguard/robotsguard/traps"
)

// What operators ask of a running Engine: which robots.txt copies it holds
// (Sites), to fetch them again (Invalidate, Refresh), and what it would
// decide for a request (Explain). The Caddy module serves these on its
// admin API; a plain net/http program can expose them however it likes.

// SiteStatus describes the robots.txt copy that an Engine holds for one
// site.
type SiteStatus struct {
	// Site is the scheme and host, e.g. "https://example.com".
	Site string `json:"site"`
	// Outcome is the outcome of the fetch the copy came from: "ok",
	// "html", "unavailable" or "unreachable" (see sites.Outcome); "pending"
	// while the first fetch runs.
	Outcome string `json:"outcome"`
	// Status is the HTTP status of that fetch, 0 when there was none (a
	// network error, a file source).
	Status int `json:"status,omitempty"`
	// Rules reports whether the copy can stop or slow a bot (some
	// Disallow or Crawl-delay); false means every bot may fetch
	// everything, or, when Unreachable, that OnUnreachable applies.
	Rules bool `json:"has_rules"`
	// Unreachable reports that no good copy is known and the last fetch
	// failed, so Config.RobotsTxt.OnUnreachable decides.
	Unreachable bool `json:"unreachable,omitempty"`
	// DryRun reports that the guard of the site only logs (Config.DryRun):
	// its report counts what would have been stopped.
	DryRun bool `json:"dry_run,omitempty"`
	// UntrustedProxies lists the peers first seen for the site that sent
	// forwarding headers without being trusted proxies (at a trap hit, a
	// counted denial or a throttle): their visitors share one address.
	UntrustedProxies []string `json:"untrusted_proxies,omitempty"`
	// Fetched is when the copy was fetched; Age is how long ago. A
	// revalidation that finds the file unchanged (304 Not Modified)
	// keeps the copy and this time: Checked says when it ran.
	Fetched time.Time         `json:"fetched,omitzero"`
	Age     duration.Duration `json:"age"`
	// Checked is when the last fetch ended that kept the copy (304 Not
	// Modified, or a failure that kept the last good copy) or replaced it.
	Checked time.Time `json:"checked,omitzero"`
	// NextRefresh is when the copy falls due. The copy is not fetched at
	// that time but by the first request to the site after it (any
	// client's, which does not wait for it), so a site that nobody
	// visits keeps a due copy; a reload or a refresh call fetches sooner.
	NextRefresh time.Time `json:"next_refresh,omitzero"`
	// ETag is the copy's validator, sent on revalidation; empty when the
	// origin gave none.
	ETag string `json:"etag,omitempty"`
	// Error says why the refresh that Refresh ran failed, if it did.
	Error string `json:"error,omitempty"`
	// FetchError says why the fetch the copy came from failed (a 4xx,
	// too many redirects), or why the last one failed when no copy is
	// known; empty otherwise.
	FetchError string `json:"fetch_error,omitempty"`
	// Text is the robots.txt as fetched, for the operator's page; not in
	// the JSON (the admin API's sites list stays small).
	Text string `json:"-"`
	// Licenses are the URLs of the copy's License lines (RSL 1.0): the
	// documents that say how the site's content is licensed.
	Licenses []string `json:"licenses,omitempty"`
	// Traps describes each trap (Config.Traps.Paths) with this copy.
	Traps []traps.Status `json:"traps,omitempty"`
	// History lists the versions of the site's robots.txt seen, oldest
	// first, without their text (Engine.History has it).
	History []sites.Version `json:"history,omitempty"`
}

// status describes ent's copy st.
func (e *Engine) status(ent *sites.Site, st *sites.State) SiteStatus {
	s := SiteStatus{Site: ent.Name(), Outcome: "pending", Checked: ent.Checked(), NextRefresh: ent.Due(), DryRun: e.cfg.DryRun,
		UntrustedProxies: e.untrustedFor(ent.Name())}
	s.History = ent.History()
	for i := range s.History {
		s.History[i].Text = ""
	}
	if st == nil {
		return s
	}
	s.ETag = st.ETag
	s.Outcome, s.Status, s.Unreachable = st.Outcome.String(), st.Status, st.Unreachable
	s.Traps = e.trapStatus(ent, st)
	if st.Err != nil {
		s.FetchError = st.Err.Error()
	}
	if st.Robots != nil {
		s.Text, s.Licenses = st.Robots.Text(), st.Robots.Licenses()
	}
	s.Rules = !st.Unreachable && st.Robots.Restricts()
	if !st.Fetched.IsZero() {
		s.Fetched = st.Fetched
		s.Age = duration.Duration(e.now().Sub(st.Fetched).Round(time.Millisecond))
	}
	return s
}

// History returns the version history of each cached site whose name
// site matches (see sites.Match; "" for all), texts included, by site
// name: what an audit of past requests judges each one by.
func (e *Engine) History(site string) map[string][]sites.Version {
	m := sites.Match(site)
	out := make(map[string][]sites.Version)
	for _, ent := range e.sites.Sites() {
		if m == nil || m(ent) {
			if h := ent.History(); len(h) > 0 {
				out[ent.Name()] = h
			}
		}
	}
	return out
}

// Now returns the time by the Engine's clock (WithClock).
func (e *Engine) Now() time.Time { return e.now() }

// Sites returns the status of every site whose robots.txt is cached, most
// recently used last. See sites.Match for the forms a site name takes in
// Invalidate and Refresh.
func (e *Engine) Sites() []SiteStatus {
	var out []SiteStatus
	for _, ent := range e.sites.Sites() {
		out = append(out, e.status(ent, ent.State()))
	}
	return out
}

// Invalidate marks the cached robots.txt of site (see sites.Match for the
// form; "" for every site) for revalidation and returns how many copies it
// marked. The copies stay in force; the next request of a bot to such a
// site waits for a new fetch (at most Config.RobotsTxt.FetchTimeout) and is decided
// with its result, or with the old copy when the fetch fails, and the next
// request of any other client starts that fetch in the background. Caddy's
// module calls it on every configuration reload, so that "caddy reload"
// applies robots.txt edits at once.
func (e *Engine) Invalidate(site string) int {
	return len(e.sites.Invalidate(sites.Match(site)))
}

// Refresh fetches the robots.txt of the cached sites that site names (""
// for all) again now, waits for the fetches (each bounded by
// Config.RobotsTxt.FetchTimeout, at most eight at a time, all bounded by ctx) and
// returns the new status of each. A failure keeps the last good copy, as a
// timed refresh does. origin, when not nil, says which handler serves a
// site now (for the default source, which sends it a virtual GET); when it
// is nil or returns nil, the handler that served the site's requests is
// used.
func (e *Engine) Refresh(ctx context.Context, site string, origin func(site string) http.Handler) []SiteStatus {
	return e.fetchNow(ctx, e.sites.Invalidate(sites.Match(site)), origin)
}

// Revalidate fetches now, like Refresh, the cached robots.txt copies that
// Invalidate marked and no fetch has renewed since, and returns their new
// status. The Caddy module calls it as soon as a reloaded configuration
// runs, so that the copies marked at the reload are fetched at once, and
// the ones that requests have fetched meanwhile are not fetched twice.
func (e *Engine) Revalidate(ctx context.Context, origin func(site string) http.Handler) []SiteStatus {
	var ents []*sites.Site
	for _, ent := range e.sites.Sites() {
		if !e.sites.Stale(ent) {
			continue
		}
		if e.cfg.RobotsTxt.Source == "" && origin != nil && origin(ent.Name()) == nil {
			// No server serves the site any more (a reload removed
			// it): nothing to fetch it through, and no request will
			// come for it. It stays marked, and is fetched if one does.
			continue
		}
		ents = append(ents, ent)
	}
	return e.fetchNow(ctx, ents, origin)
}

// Prefetch fetches now the robots.txt of each site (a URL such as
// "https://example.com" or "http://127.0.0.1:8080") that e does not hold
// yet, and returns their status: the Caddy module calls it as soon as a
// configuration runs, for the sites written in it, so that an unreachable,
// HTML or empty robots.txt is logged (WARN) before any bot comes, and every
// configured site shows in Sites from the start. Values that are not
// http(s) URLs with a host are skipped.
func (e *Engine) Prefetch(ctx context.Context, siteURLs []string, origin func(site string) http.Handler) []SiteStatus {
	var ents []*sites.Site
	for _, s := range siteURLs {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			continue
		}
		port, _ := strconv.Atoi(u.Port())
		if ent := e.sites.Entry(sites.MakeKey(u.Scheme, u.Host, port)); ent.State() == nil {
			ents = append(ents, ent)
		}
	}
	return e.fetchNow(ctx, ents, origin)
}

// fetchNow fetches ents now and returns their status.
func (e *Engine) fetchNow(ctx context.Context, ents []*sites.Site, origin func(site string) http.Handler) []SiteStatus {
	rs := e.sites.Fetch(ctx, ents, origin)
	out := make([]SiteStatus, len(rs))
	for i, r := range rs {
		out[i] = e.status(r.Site, r.State)
		out[i].Error = r.Err
	}
	return out
}

// ExplainRule is the deciding rule of an Explanation.
type ExplainRule struct {
	// Line is the rule's line in robots.txt.
	Line int `json:"line"`
	// Text is the rule as written, e.g. "Disallow: /private/".
	Text string `json:"text"`
	// Implied marks the "<dir>/$" Allow of an index.html Allow.
	Implied bool `json:"implied,omitempty"`
}

// Explanation is what Explain returns: the verdict the Engine would give
// a request now, with the reasons behind it.
type Explanation struct {
	Site      string `json:"site"`
	UserAgent string `json:"user_agent"`
	Target    string `json:"target"`
	ClientIP  string `json:"client_ip,omitempty"`
	// Bot reports whether the client is judged as a bot.
	Bot bool `json:"bot"`
	// Action is what the Engine would do: "allow", "deny" or
	// "throttle" ("dry_run_deny" or "dry_run_throttle" in dry-run mode);
	// Reason says why (see Reason); Status is the answer the client would
	// get from the guard, 0 when it passes to the site.
	Action string `json:"action"`
	Reason string `json:"reason"`
	Status int    `json:"status,omitempty"`
	// Group is the robots.txt group that applies ("*" for the global one).
	Group string `json:"group,omitempty"`
	// Class is "unfurler" or "fetcher" for an agent that fetches for a
	// person (judged only by a group that names it once verified).
	Class string `json:"class,omitempty"`
	// Rule is the rule that decided the path, if any matched.
	Rule *ExplainRule `json:"rule,omitempty"`
	// CrawlDelay is the group's Crawl-delay; RetryAfter the wait a
	// throttled client would be told (only with a client address).
	CrawlDelay duration.Duration `json:"crawl_delay,omitempty"`
	RetryAfter duration.Duration `json:"retry_after,omitempty"`
	// CrawlDelayLine is the robots.txt line of the Crawl-delay.
	CrawlDelayLine int `json:"crawl_delay_line,omitempty"`
	// RobotsTxt describes the copy the verdict comes from.
	RobotsTxt *SiteStatus `json:"robots_txt,omitempty"`
	// Verification says whether the crawler the User-Agent names is who
	// it claims to be, and how that was found; nil when verification is
	// off or the header names no registered operator.
	Verification *ExplainVerification `json:"verification,omitempty"`
	// ContentSignal is, for a header that names a crawler with a
	// documented purpose, that purpose and what the group's Content-Signal
	// or Content-Usage lines say of it (SEMANTICS.md §8a).
	ContentSignal *ExplainSignal `json:"content_signal,omitempty"`
	// License is the RSL document whose licence covers the content (a
	// License line of the site's robots.txt), LicenseServer the licence
	// server whose token a bot needs for it ("" for none), and
	// LicenseError the challenge's error when the request's token (none
	// in explain) would not do ("" for none sent, "invalid_token",
	// "server_error").
	License       string `json:"license,omitempty"`
	LicenseServer string `json:"license_server,omitempty"`
	LicenseError  string `json:"license_error,omitempty"`
	// LicensePurpose is the documented purpose of the crawler (search,
	// ai-input, ai-train) that the licence's usage terms were read
	// against (under reason license_usage, the one no licence of the
	// content grants); "" for a bot with none listed.
	LicensePurpose string `json:"license_purpose,omitempty"`
	// Undeclared is, for a header that names a browser and headers of
	// the request (Request.Evidence) that contradict it, the rule that
	// made it an undeclared bot, judged by "*".
	Undeclared *ExplainUndeclared `json:"undeclared,omitempty"`
}

// ExplainUndeclared is the undeclared-bot part of an Explanation.
type ExplainUndeclared struct {
	// Rule names the rule, Header the header it missed, Evidence which
	// browsers send that header and what was measured.
	Rule     string `json:"rule"`
	Header   string `json:"header"`
	Evidence string `json:"evidence"`
	// Enforced is false under bots undeclared report (the requests pass,
	// what would have stopped them is counted).
	Enforced bool `json:"enforced"`
}

// ExplainSignal is the AI-use preference part of an Explanation.
type ExplainSignal struct {
	// Crawler is the product token, Operator who runs it, Purpose its
	// documented purpose (search, ai-input, ai-train), Kind the same in
	// words, Source the page that documents it.
	Crawler  string `json:"crawler"`
	Operator string `json:"operator"`
	Purpose  string `json:"purpose"`
	Kind     string `json:"kind"`
	Source   string `json:"source"`
	// Signal is "yes", "no" or "unset", or "not_checked" when the request
	// was decided before (a disallowed path, a ban, ...).
	Signal string `json:"signal"`
	// Line and Text are the deciding line, when Signal is yes or no.
	Line int    `json:"line,omitempty"`
	Text string `json:"text,omitempty"`
	// Enforced is false under content_signals report (a no is counted,
	// not answered).
	Enforced bool `json:"enforced"`
}

// ExplainVerification is the verification part of an Explanation.
type ExplainVerification struct {
	// Verdict is "verified", "spoofed" or "unverifiable".
	Verdict string `json:"verdict"`
	// Operator is the claimed operator the verdict is about.
	Operator string `json:"operator,omitempty"`
	// Method is "ip_range", "rdns" or "signature" for a verified claim.
	Method string `json:"method,omitempty"`
	// Claimed lists every operator the header (or its group) names.
	Claimed []string `json:"claimed,omitempty"`
	// Steps says how the verdict was reached: the feed and prefix, or the
	// PTR and forward names.
	Steps []string `json:"steps,omitempty"`
	// AlsoStar reports that the claim, not verified, was judged by the
	// "*" group as well as its own: a path allowed only where both allow
	// it, the longer Crawl-delay.
	AlsoStar bool `json:"also_star,omitempty"`
}

// errNoSite is returned by Explain for a request without a Host.
var errNoSite = errors.New("robots_guard: explain: the site (host) is required")

// Explain returns the verdict Decide would give req now, with the group,
// the deciding rule and the state of the site's robots.txt, without
// spending any Crawl-delay budget, counting a metric or writing a log line:
// the live counterpart of "caddy robots test". The site's robots.txt is
// fetched when it is not cached (with req.Origin, or the handler that last
// served the site). Without req.ClientIP, Crawl-delay is reported but not
// checked.
func (e *Engine) Explain(ctx context.Context, req Request) (Explanation, error) {
	if req.Host == "" {
		return Explanation{}, errNoSite
	}
	if req.Target == "" {
		req.Target = "/"
	}
	if req.Port == 0 {
		_, req.Port = sites.SplitHost(req.Host) // the site as the operator names it
	}
	var tr trace
	ip := req.ClientIP
	if ip == "" {
		req.ClientIP = "0.0.0.0"
		tr.noIP = true
	}
	v := e.decide(ctx, &req, &tr)
	x := Explanation{
		Site: v.Site, UserAgent: req.UserAgent, Target: req.Target, ClientIP: ip, Bot: v.Bot,
		Action: v.ActionName(), Reason: v.Reason.String(), Group: v.Group, Class: v.Class,
		CrawlDelay: duration.Duration(v.CrawlDelay), CrawlDelayLine: v.CrawlDelayLine,
		License: v.License, LicenseServer: v.LicenseServer, LicenseError: v.LicenseError,
	}
	if v.License != "" && v.Crawler != nil {
		x.LicensePurpose = v.Crawler.Purpose.String()
	}
	if v.Enforced() {
		x.Status = v.StatusCode()
	}
	if ip == "" && v.Action == Throttle {
		// No client given: the budget of "no address" says nothing.
		x.Action, x.Reason, x.Status = Verdict{DryRun: v.DryRun}.ActionName(), ReasonAllowed.String(), 0
	} else {
		x.RetryAfter = duration.Duration(v.RetryAfter)
	}
	if tr.decided && tr.d.Rule != nil {
		x.Rule = &ExplainRule{Line: tr.d.Rule.Line, Text: tr.d.Rule.String(), Implied: tr.d.Rule.Implied}
	}
	if tr.ent != nil {
		s := e.status(tr.ent, tr.st)
		x.RobotsTxt = &s
	}
	if cp := v.Crawler; cp != nil && e.signals {
		sig := &ExplainSignal{Crawler: cp.Token, Operator: cp.Operator, Purpose: cp.Purpose.String(), Kind: cp.Kind, Source: cp.Source,
			Signal: "not_checked", Enforced: !e.signalsReport}
		switch {
		case v.Reason == ReasonContentSignal && v.Signal != nil:
			sig.Signal, sig.Line, sig.Text = "no", v.Signal.Line, v.Signal.Text(cp.Purpose)
		case tr.signal:
			sig.Signal = tr.signalVal.String()
			if r := tr.signalRule; r != nil {
				sig.Line, sig.Text = r.Line, r.Text(cp.Purpose)
			}
		}
		x.ContentSignal = sig
	}
	for _, r := range classify.UndeclaredRules {
		if r.Name == v.Undeclared {
			x.Undeclared = &ExplainUndeclared{Rule: r.Name, Header: r.Header, Evidence: r.Evidence,
				Enforced: e.cfg.Bots.Undeclared != classify.UndeclaredReport}
		}
	}
	if vx := tr.verify; vx != nil {
		x.Verification = &ExplainVerification{
			Verdict: vx.Verdict.String(), Operator: vx.Operator, Method: vx.Method.String(),
			Claimed: vx.Claimed, Steps: vx.Steps, AlsoStar: tr.alsoStar,
		}
	}
	return x, nil
}

// Adopt copies the robots.txt copies that from holds into e, for the sites
// e has not cached yet, and marks them for revalidation (see Invalidate),
// so that a new Engine that replaces another one (a configuration
// change) starts with the last good copies instead of fetching every site
// while bots wait. Both must read robots.txt from the same source. It
// returns the number of copies adopted.
func (e *Engine) Adopt(from *Engine) int {
	if from == nil || from == e {
		return 0
	}
	// Same traps: their grace clocks carry over, as the copies do.
	return e.sites.Adopt(from.sites, e.carryTraps(from))
}
