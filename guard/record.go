package guard

import (
	"net/http"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/report"
)

// browserGroup is the group that the violations report gives clients
// whose User-Agent header is a browser's (stopped by a trap or a ban).
const browserGroup = "(browser)"

// recordOf is the violations report's record of a stopped request, and
// whether the report counts it: every 403 (robots.txt denials in either
// view, spoofed claims, content signals, and the refusals of a site's
// state: an unreachable robots.txt, an unknown site, a target with no
// path), Crawl-delay throttles, trap hits and banned requests, and the
// licence refusals (RSL), each of its own kind: no token (401, 402:
// report.Unlicensed), an invalid token (401 invalid_token:
// report.InvalidToken), a token that could not be checked (503
// server_error: report.LicenseUnavailable). Of the requests that pass, it
// is the record of a bot's with a valid licence token (report.Licensed);
// other requests that pass have none (Engine.done counts allowed bots in
// the timeline). Only a first fetch postponed (429, retry soon), a
// replayed signature (429, sign anew) and unreadable signature headers
// (400) are not counted: they say nothing of how a client treats
// robots.txt (the metrics count them). A dry run's are counted where they
// would have been stopped (SiteStatus.DryRun says so).
// The record carries the request's User-Agent header, ua, as the request
// holds it: report.Recorder.Record keeps at most 200 bytes of it, and
// copies it only when it is longer.
func recordOf(v *Verdict, ua string, client limit.Client, at int64) (report.Record, bool) {
	var kind report.Kind
	switch {
	case v.Action == Allow:
		if !licensed(v) {
			return report.Record{}, false
		}
		kind = report.Licensed
	case v.Reason == ReasonLicense && v.LicenseError == "":
		kind = report.Unlicensed
	case v.Reason == ReasonLicense:
		kind = report.InvalidToken
	case v.Reason == ReasonLicenseUnavailable:
		kind = report.LicenseUnavailable
	case v.Reason == ReasonLicenseUsage:
		kind = report.Unlicensed // a use no licence grants
	case v.Reason == ReasonTrap:
		kind = report.Trap
	case v.Reason == ReasonTrapUnattributed:
		kind = report.TrapUnattributed
	case v.Reason == ReasonBanned:
		kind = report.Banned
	case v.Action == Throttle && v.Reason == ReasonCrawlDelay:
		kind = report.Throttle
	case v.Action == Deny && v.Reason != ReasonBadSignature:
		kind = report.Denial
	default:
		return report.Record{}, false
	}
	rec := report.Record{Site: v.Site, Client: client, Group: v.Group, Verification: v.Verification, Class: v.Class, UserAgent: ua, At: at, Kind: kind}
	if !v.Bot {
		// A browser's header (a trap or a ban stopped it): its group, "*",
		// would say nothing.
		rec.Group = browserGroup
	}
	if v.Undeclared != "" {
		rec.Class = classify.ClassUndeclared
	}
	if kind == report.Denial {
		rec.Rule = v.Rule
	}
	return rec, true
}

// licensed reports whether v lets a bot pass with a valid licence token:
// the content's licence has a licence server (checkLicense asks a token
// only then), and the token passed.
func licensed(v *Verdict) bool {
	return v.Action == Allow && v.Bot && v.LicenseServer != "" && v.LicenseError == ""
}

// Report returns the violations report: per site (the 100 busiest), the
// top clients by robots.txt denials, throttles, trap hits, banned
// requests and licence refusals (then by licensed requests) over the last
// hour and day, and the lines that denied whom.
func (e *Engine) Report() report.Report { return e.report.Report() }

// ReportHandler returns an http.Handler that serves Report as JSON, for a
// net/http program to mount where only its operators reach it.
func (e *Engine) ReportHandler() http.Handler { return e.report.Handler() }
