package audit

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/report"
)

// Result is what an audit found.
type Result struct {
	// Format is the format asked for (FormatAuto: each file's own).
	Format string `json:"format"`
	// Files are the logs read, in the order they were judged.
	Files []FileResult `json:"files"`
	// From and To are the times of the first and last entry judged.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Versions are the robots.txt files judged by, with the entries
	// each judged.
	Versions []VersionUse `json:"versions"`
	// History counts, per site, the entries judged by the site's own
	// history (Options.History).
	History map[string]int64 `json:"history,omitempty"`
	// OutOfOrder counts the entries more than a minute older than one
	// judged before them (logs of several servers given as separate
	// files): their clients' Crawl-delay clocks ran backwards, and they
	// may be counted as throttled.
	OutOfOrder int64 `json:"out_of_order,omitempty"`
	// BeforeHistory counts the entries for whose time no robots.txt is
	// known (older than every dated one, or of a version whose text the
	// history dropped): not judged.
	BeforeHistory int64 `json:"before_history"`
	// Warnings say what made the audit weaker than the guard it models
	// (a feed that did not load).
	Warnings []string `json:"warnings,omitempty"`
	// Offline reports an audit that checked no crawler claim
	// (Options.Offline): every claim's verification is "unverifiable".
	Offline bool `json:"offline,omitempty"`
	// Sites are the sites of the log, the one with the most bot requests
	// first.
	Sites []SiteResult `json:"sites"`
}

// VersionUse is a robots.txt judged by, and how many entries it judged.
type VersionUse struct {
	Name     string    `json:"name"`
	Since    time.Time `json:"since,omitzero"`
	Requests int64     `json:"requests"`
}

// FileResult is what one log held.
type FileResult struct {
	Name   string `json:"name"`
	Format string `json:"format"`
	// Lines counts the lines read, each one of: Entries, the requests
	// judged (or counted before history); Blank, the empty lines (or
	// of spaces only); Skipped, the lines that are valid but no request
	// (another logger's lines in a Caddy log); Malformed, the lines that
	// could not be read, the first few in Examples with their reason.
	Lines     int64       `json:"lines"`
	Entries   int64       `json:"entries"`
	Blank     int64       `json:"blank,omitempty"`
	Skipped   int64       `json:"skipped,omitempty"`
	Malformed int64       `json:"malformed"`
	Examples  []Malformed `json:"malformed_examples,omitempty"`
	// NoUserAgent counts entries without a User-Agent: a log in the
	// Common Log Format has none, and every request in it passes as
	// a browser's would (or as empty_user_agent says).
	NoUserAgent int64 `json:"no_user_agent"`
}

// Malformed is a line that could not be read.
type Malformed struct {
	Line   int64  `json:"line"`
	Text   string `json:"text"`
	Reason string `json:"reason"`
}

// SiteResult is one site's part of the audit.
type SiteResult struct {
	Site string `json:"site"`
	// Requests counts every entry of the site; BotRequests those of bots
	// (and of browsers that a trap or ban would have stopped).
	Requests    int64 `json:"requests"`
	BotRequests int64 `json:"bot_requests"`
	// Offenders are the rows with at least one request the guard would
	// have stopped, the most stopped first; Compliant the other bots'
	// rows, the busiest first.
	Offenders []Row `json:"offenders"`
	Compliant []Row `json:"compliant"`
	// Others counts the requests of clients beyond Options.MaxRows.
	Others int64 `json:"others,omitempty"`
	// Unlisted counts the clients beyond Options.MaxRows that would have
	// been stopped, so that len(Offenders) + Unlisted are all of them;
	// UnlistedAtLeast says that more were not told apart (beyond about a
	// million: Unlisted is then a lower bound).
	Unlisted        int64 `json:"unlisted_offenders,omitempty"`
	UnlistedAtLeast bool  `json:"unlisted_at_least,omitempty"`
	// Unlicensed, TokenUnchecked and TokenUnknown count the bot requests
	// for content whose licence names a licence server, as a Row's do.
	Unlicensed     int64 `json:"unlicensed,omitempty"`
	TokenUnchecked int64 `json:"token_unchecked,omitempty"`
	TokenUnknown   int64 `json:"token_unknown,omitempty"`
	// Lines are the robots.txt lines that stopped requests, the busiest
	// first.
	Lines []LineCount `json:"lines,omitempty"`
	// Timeline counts the bot requests over the log's time in at most 96
	// slices of SliceWidth, by what the guard would have done.
	Timeline   []report.Slice `json:"timeline,omitempty"`
	SliceWidth time.Duration  `json:"slice_width,omitempty"`

	lines map[lineKey]int64
}

// LineCount is a robots.txt line and the requests it stopped.
type LineCount struct {
	Line  int    `json:"line"`
	Rule  string `json:"rule"`
	Count int64  `json:"count"`
}

// Row is one client's record: its address prefix and its agent (the
// group its User-Agent chose, its claim and the header), and what the
// guard would have done with its requests.
type Row struct {
	Site         string `json:"site"`
	Client       string `json:"client"`
	Group        string `json:"group"`
	Operator     string `json:"operator,omitempty"`
	Verification string `json:"verification"`
	// Class is "unfurler" or "fetcher" for an agent that fetches for a
	// person (a link preview, a user-triggered fetch), "undeclared" for a
	// browser's header that the request's other headers contradict (a
	// log that carries them: Caddy's; docs/undeclared.md).
	Class string `json:"class,omitempty"`
	// UserAgent is the User-Agent header of its requests (cut at 200
	// bytes, with "…").
	UserAgent string    `json:"user_agent"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
	Requests  int64     `json:"requests"`
	// Disallowed counts the paths robots.txt disallowed (in either view,
	// or by a Content-Signal); Spoofed the requests refused for a claim
	// that did not hold; Throttled those faster than the Crawl-delay;
	// Traps the trap hits; Banned the requests a ban would have refused.
	Disallowed int64 `json:"disallowed"`
	Spoofed    int64 `json:"spoofed"`
	Throttled  int64 `json:"throttled"`
	Traps      int64 `json:"traps"`
	Banned     int64 `json:"banned"`
	// Unlicensed counts its requests for content whose licence (an RSL
	// document that a License line of robots.txt names) names a licence
	// server, made without a licence token: the guard would have
	// answered 401 (402 where the licence asks payment); and its
	// requests for a use that no licence of the content grants (403
	// license_usage, token or not). Only a log that
	// carries the request's headers (Caddy's) shows that there was none.
	// TokenUnchecked counts such requests that carried an Authorization
	// header (Caddy logs it "REDACTED"): they pass with a token that
	// verifies, which the audit cannot know (a log's tokens have
	// expired, and it asks no licence server). TokenUnknown counts such
	// requests in a log without the request's headers (every format but
	// Caddy's): whether they carried a token is unknown. Neither of the
	// two is counted as stopped.
	Unlicensed     int64 `json:"unlicensed,omitempty"`
	TokenUnchecked int64 `json:"token_unchecked,omitempty"`
	TokenUnknown   int64 `json:"token_unknown,omitempty"`
	// Other counts the requests stopped for another reason: a target
	// without a path (bad_target), or what the site's state would have
	// caused.
	Other int64 `json:"other,omitempty"`
	// Lines counts the robots.txt lines that disallowed its requests (of
	// the version in force at each request).
	Lines map[int]int64 `json:"lines,omitempty"`
	// Examples are the first few requests the guard would have stopped.
	Examples []Example `json:"examples,omitempty"`
}

// Stopped is the number of requests the guard would have stopped.
func (r *Row) Stopped() int64 {
	return r.Disallowed + r.Spoofed + r.Throttled + r.Traps + r.Banned + r.Unlicensed + r.Other
}

// Example is one request the guard would have stopped.
type Example struct {
	At     time.Time `json:"at"`
	Target string    `json:"target"`
	Reason string    `json:"reason"`
	Line   int       `json:"line,omitempty"`
}

// The kinds of a request, by what the guard would have done with it: the
// indexes of a tally's counts.
const (
	passed = iota // let through; its count is every request's
	disallowed
	spoofed
	throttled
	trapped
	banned
	unlicensed
	otherwise
	kinds
)

// kindOf is the kind of a request the guard decided with v.
func kindOf(v *guard.Verdict) int {
	switch v.Reason {
	case guard.ReasonDisallowed, guard.ReasonDisallowedDecoded, guard.ReasonContentSignal:
		return disallowed
	case guard.ReasonSpoofed:
		return spoofed
	case guard.ReasonCrawlDelay:
		return throttled
	case guard.ReasonTrap, guard.ReasonTrapUnattributed:
		return trapped
	case guard.ReasonBanned:
		return banned
	case guard.ReasonLicense, guard.ReasonLicenseUsage:
		return unlicensed
	}
	if v.Action == guard.Allow {
		return passed
	}
	return otherwise
}

// The licence counts of a request (licenseOf).
const (
	licenseNone      = iota // no licence server's content, or stopped for another reason
	licenseRefused          // without a token, or a use no licence grants: Unlicensed
	licenseUnchecked        // an Authorization header logged: TokenUnchecked
	licenseUnknown          // a log without the request's headers: TokenUnknown
)

// licenseOf is the licence count of an entry its engine decided with v:
// the engines let any token pass unchecked (guard.WithOfflineLicenses),
// so a request for content with a licence server that passes had the
// token tokenOf gave it.
func licenseOf(en *Entry, v *guard.Verdict) int {
	switch {
	case v.Reason == guard.ReasonLicense, v.Reason == guard.ReasonLicenseUsage:
		return licenseRefused
	case v.Action != guard.Allow || v.LicenseServer == "":
		return licenseNone
	case tokenOf(en) == tokenLogged:
		return licenseUnchecked
	}
	return licenseUnknown
}

// tally is a row while the audit runs, its key saying whose: smaller than
// the Row that Result makes of it, for there are many.
type tally struct {
	first, last int64        // Unix ns
	n           [kinds]int64 // n[passed] counts every request
	unchecked   int64        // Row.TokenUnchecked
	unknown     int64        // Row.TokenUnknown
	cutUA       bool         // the key's User-Agent is the header cut
	lines       []lineN      // Row.Lines: a few pairs cost less than a map
	examples    []Example
}

// lineN is a robots.txt line number and its count.
type lineN struct {
	line int
	n    int64
}

// add counts one decided entry of the row's client.
func (t *tally) add(en *Entry, v *guard.Verdict) {
	t.n[passed]++
	t.first, t.last = min(t.first, en.At), max(t.last, en.At) // logs out of order too
	k := kindOf(v)
	if k == passed {
		switch licenseOf(en, v) {
		case licenseUnchecked:
			t.unchecked++
		case licenseUnknown:
			t.unknown++
		}
		return
	}
	t.n[k]++
	line := 0
	if v.Rule != nil {
		line = v.Rule.Line
		t.countLine(line)
	}
	if len(t.examples) < maxExamples {
		// The target's own copy: the line it is part of is not kept.
		t.examples = append(t.examples, Example{At: time.Unix(0, en.At).UTC(), Target: strings.Clone(truncate(en.Target, 200)), Reason: v.Reason.String(), Line: line})
	}
}

// countLine counts a request a robots.txt line stopped.
func (t *tally) countLine(line int) {
	for i := range t.lines {
		if t.lines[i].line == line {
			t.lines[i].n++
			return
		}
	}
	t.lines = append(t.lines, lineN{line, 1})
}

// row is the Row of the tally of k, its client's prefix of v4 or v6
// bits.
func (t *tally) row(k *rowKey, v4, v6 int) Row {
	r := Row{Site: k.site, Client: k.client.Format(v4, v6), Group: k.group, Operator: k.operator, Verification: k.verification.String(), Class: k.class,
		UserAgent: k.ua, First: time.Unix(0, t.first).UTC(), Last: time.Unix(0, t.last).UTC(), Requests: t.n[passed],
		Disallowed: t.n[disallowed], Spoofed: t.n[spoofed], Throttled: t.n[throttled], Traps: t.n[trapped], Banned: t.n[banned], Other: t.n[otherwise],
		Unlicensed: t.n[unlicensed], TokenUnchecked: t.unchecked, TokenUnknown: t.unknown, Examples: t.examples}
	if t.cutUA {
		r.UserAgent += "…"
	}
	if len(t.lines) > 0 {
		r.Lines = make(map[int]int64, len(t.lines))
		for _, l := range t.lines {
			r.Lines[l.line] = l.n
		}
	}
	return r
}

// Result returns what the audit found so far: the shards' counts added
// up, in an order that does not depend on them.
func (a *Auditor) Result() Result {
	res := a.res
	res.Warnings = append([]string(nil), a.res.Warnings...)
	if msg := a.gaveUp.Load(); msg != nil {
		res.Warnings = append(res.Warnings, *msg)
	}
	res.Versions = append([]VersionUse(nil), a.res.Versions...)
	res.Files = append([]FileResult(nil), a.res.Files...)
	res.History = make(map[string]int64)
	sitesByName := make(map[string]*SiteResult)
	timelines := make(map[string]*timeline)
	for _, sh := range a.shards {
		res.BeforeHistory += sh.beforeHistory
		for i, n := range sh.versionUse {
			res.Versions[i].Requests += n
		}
		for site, n := range sh.history {
			res.History[site] += n
		}
		for name, s := range sh.sites {
			addSite(sitesByName, s)
			if tl := sh.timelines[name]; tl != nil {
				if timelines[name] == nil {
					timelines[name] = new(timeline)
				}
				timelines[name].merge(tl)
			}
		}
	}
	for site := range a.perSite {
		if res.History[site] == 0 && a.byHost[hostOnly(site)] == site && !usedByHost(res.History, site) {
			res.Warnings = append(res.Warnings, "the history of "+site+" judged no request: no request of the log names that site "+
				"(the guard names a site by its server's port; a log's Host may carry another)")
		}
	}
	if res.OutOfOrder > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d requests were more than a minute older than one judged before them: "+
			"logs of several servers must be merged by time first (sort -m -k4 does not do it for the Combined format's dates; "+
			"merge them in one file per server, oldest first), or their Crawl-delay counts are not to be trusted", res.OutOfOrder))
	}
	res.Sites = nil
	for _, s := range sitesByName {
		sr := *s
		sr.Offenders, sr.Compliant, sr.lines = nil, nil, nil
		for k, n := range s.lines {
			sr.Lines = append(sr.Lines, LineCount{Line: k.line, Rule: k.text, Count: n})
		}
		sort.Slice(sr.Lines, func(i, j int) bool {
			x, y := sr.Lines[i], sr.Lines[j]
			if x.Count != y.Count {
				return x.Count > y.Count
			}
			if x.Line != y.Line {
				return x.Line < y.Line
			}
			return x.Rule < y.Rule
		})
		if tl := timelines[s.Site]; tl != nil {
			sr.Timeline, sr.SliceWidth = tl.Slices(96)
		}
		res.Sites = append(res.Sites, sr)
	}
	sort.Slice(res.Sites, func(i, j int) bool {
		if res.Sites[i].BotRequests != res.Sites[j].BotRequests {
			return res.Sites[i].BotRequests > res.Sites[j].BotRequests
		}
		return res.Sites[i].Site < res.Sites[j].Site
	})
	index := make(map[string]int, len(res.Sites))
	for i, s := range res.Sites {
		index[s.Site] = i
	}
	for _, sh := range a.shards {
		for k, t := range sh.rows {
			s, r := &res.Sites[index[k.site]], t.row(&k, a.cfg.Clients.IPv4Prefix, a.cfg.Clients.IPv6Prefix)
			if r.Stopped() > 0 {
				s.Offenders = append(s.Offenders, r)
			} else {
				s.Compliant = append(s.Compliant, r)
			}
		}
	}
	for i := range res.Sites {
		s := &res.Sites[i]
		sort.Slice(s.Offenders, func(i, j int) bool { return rowBefore(&s.Offenders[i], &s.Offenders[j], true) })
		sort.Slice(s.Compliant, func(i, j int) bool { return rowBefore(&s.Compliant[i], &s.Compliant[j], false) })
	}
	return res
}

// addSite adds a shard's result of a site to the one of its name in m.
func addSite(m map[string]*SiteResult, s *SiteResult) {
	t := m[s.Site]
	if t == nil {
		t = &SiteResult{Site: s.Site}
		m[s.Site] = t
	}
	t.Requests += s.Requests
	t.BotRequests += s.BotRequests
	t.Others += s.Others
	t.Unlicensed += s.Unlicensed
	t.TokenUnchecked += s.TokenUnchecked
	t.TokenUnknown += s.TokenUnknown
	t.Unlisted += s.Unlisted
	t.UnlistedAtLeast = t.UnlistedAtLeast || s.UnlistedAtLeast
	for k, n := range s.lines {
		if t.lines == nil {
			t.lines = make(map[lineKey]int64)
		}
		if _, ok := t.lines[k]; ok || len(t.lines) < maxLines {
			t.lines[k] += n
		}
	}
}

// rowBefore orders rows by requests stopped (offenders) or made, then by
// client, group, header and claim, so that the output is the same from
// run to run.
func rowBefore(a, b *Row, stopped bool) bool {
	if stopped && a.Stopped() != b.Stopped() {
		return a.Stopped() > b.Stopped()
	}
	if a.Requests != b.Requests {
		return a.Requests > b.Requests
	}
	for _, p := range [...][2]string{{a.Client, b.Client}, {a.Group, b.Group}, {a.UserAgent, b.UserAgent}, {a.Operator, b.Operator},
		{a.Verification, b.Verification}, {a.Class, b.Class}} {
		if p[0] != p[1] {
			return p[0] < p[1]
		}
	}
	return false
}

// usedByHost reports whether a site of another port judged requests by
// site's history (the shards' useVersion fallback), by the counts of
// history.
func usedByHost(history map[string]int64, site string) bool {
	for other, n := range history {
		if n > 0 && other != site && hostOnly(other) == hostOnly(site) {
			return true
		}
	}
	return false
}
