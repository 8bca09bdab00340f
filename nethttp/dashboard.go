package nethttp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/dashboard"
	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/report"
)

// DashboardHandler returns the operator's dashboard of e (package
// dashboard): its sites, their robots.txt with each line's hits, traffic
// charts, the clients robots.txt stopped, bans with an Unban button, the
// crawler feeds and a tester. Mount it where only operators reach it
// (behind authentication): it shows client addresses and lifts bans.
// Cross-origin POSTs are refused.
func DashboardHandler(e *guard.Engine) http.Handler {
	return dashboard.Handler(Backend(e, nil), dashboard.Options{Now: e.Now})
}

// Backend returns e's facts for package dashboard. origin, when not nil,
// says which handler serves a site (see guard.Request.Origin), for the
// tester's fetch of a robots.txt not cached yet; Caddy's module passes the
// server that listens on the site's port.
func Backend(e *guard.Engine, origin func(site string) http.Handler) dashboard.Backend {
	return dashBackend{e: e, origin: origin}
}

type dashBackend struct {
	e      *guard.Engine
	origin func(site string) http.Handler
}

func (b dashBackend) Sites(context.Context) []dashboard.Site {
	var out []dashboard.Site
	for _, s := range b.e.Sites() {
		d := dashboard.Site{Name: s.Site, Outcome: s.Outcome, Status: s.Status, HasRules: s.Rules, Unreachable: s.Unreachable, DryRun: s.DryRun, UntrustedProxies: s.UntrustedProxies,
			Fetched: s.Fetched, Checked: s.Checked, NextRefresh: s.NextRefresh, ETag: s.ETag, Error: s.FetchError, Text: s.Text, Licenses: s.Licenses}
		for _, t := range s.Traps {
			d.Traps = append(d.Traps, dashboard.Trap{Path: t.Trap, State: t.State, ArmsAt: t.ArmsAt, AllowedFor: t.AllowedFor})
		}
		for _, v := range s.History {
			d.History = append(d.History, dashboard.Version{SHA256: v.SHA256, Outcome: v.Outcome, Bytes: v.Bytes, FirstSeen: v.FirstSeen, LastSeen: v.LastSeen})
		}
		out = append(out, d)
	}
	return out
}

func (b dashBackend) Report() report.Report { return b.e.Report() }

func (b dashBackend) Bans(ctx context.Context) []dashboard.Ban {
	var out []dashboard.Ban
	for _, s := range b.e.Bans(ctx) {
		out = append(out, dashboard.Ban{Client: s.Client, Until: s.Until, Strikes: s.Strikes, Reason: s.Reason})
	}
	return out
}

func (b dashBackend) Unban(ctx context.Context, client string) (bool, error) {
	if !b.e.Banning() {
		return false, nil
	}
	return b.e.Unban(ctx, client)
}

func (b dashBackend) Feeds() []identity.FeedStatus {
	if v := b.e.Verifier(); v != nil {
		return v.Feeds()
	}
	return nil
}

func (b dashBackend) Explain(ctx context.Context, q dashboard.Query) (dashboard.Verdict, error) {
	req, err := DashboardRequest(q)
	if err != nil {
		return dashboard.Verdict{}, err
	}
	if b.origin != nil {
		req.Origin = b.origin(req.Scheme + "://" + req.Host)
	}
	x, err := b.e.Explain(ctx, req)
	if err != nil {
		return dashboard.Verdict{}, err
	}
	return DashboardVerdict(x), nil
}

// DashboardRequest returns the Request that the dashboard's tester asks
// about: q.Site is a host ("example.com:8080") or a scheme and host
// ("https://example.com"); signature headers, when given, are checked as
// a request for q.Path would carry them.
func DashboardRequest(q dashboard.Query) (guard.Request, error) {
	site := q.Site
	if !strings.Contains(site, "://") {
		site = "http://" + site
	}
	u, err := url.Parse(site)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return guard.Request{}, fmt.Errorf("site %q: want host[:port] or http(s)://host[:port]", q.Site)
	}
	path := q.Path
	if path == "" {
		path = "/"
	}
	if path[0] != '/' {
		return guard.Request{}, fmt.Errorf("path %q must start with '/'", path)
	}
	req := guard.Request{Scheme: u.Scheme, Host: u.Host, Target: path, UserAgent: q.UserAgent, ClientIP: strings.Trim(q.ClientIP, "[] ")}
	if q.Signature != "" || q.SignatureInput != "" || q.SignatureAgent != "" {
		h := http.Header{}
		for k, v := range map[string]string{"Signature": q.Signature, "Signature-Input": q.SignatureInput, "Signature-Agent": q.SignatureAgent} {
			if v != "" {
				h.Set(k, v)
			}
		}
		p, rawQuery, _ := strings.Cut(path, "?")
		req.Signed = &identity.SignedRequest{Method: http.MethodGet, Scheme: u.Scheme, Authority: u.Host, Path: p, Query: rawQuery, Header: h}
	}
	return req, nil
}

// DashboardVerdict returns an Explanation as the dashboard shows it.
func DashboardVerdict(x guard.Explanation) dashboard.Verdict {
	v := dashboard.Verdict{Bot: x.Bot, Action: x.Action, Reason: x.Reason, Status: x.Status, Group: x.Group, Class: x.Class,
		CrawlDelay: time.Duration(x.CrawlDelay), CrawlDelayLine: x.CrawlDelayLine, RetryAfter: time.Duration(x.RetryAfter)}
	if x.Rule != nil {
		v.RuleLine, v.RuleText = x.Rule.Line, x.Rule.Text
	}
	if s := x.ContentSignal; s != nil {
		step := s.Crawler + " is " + s.Kind + " (" + s.Purpose + ", " + s.Source + "); robots.txt's preference for " + s.Purpose + ": " + s.Signal
		if s.Text != "" {
			step += " (" + s.Text + ", line " + strconv.Itoa(s.Line) + ")"
		}
		if s.Signal == "no" && !s.Enforced {
			step += "; content_signals report: counted, not refused"
		}
		v.Steps = append(v.Steps, step)
		if x.Reason == guard.ReasonContentSignal.String() {
			v.RuleLine, v.RuleText = s.Line, s.Text
		}
	}
	if vx := x.Verification; vx != nil {
		v.Verification, v.Operator, v.Method, v.Steps = vx.Verdict, vx.Operator, vx.Method, vx.Steps
		if vx.AlsoStar {
			v.Steps = append(v.Steps, "unverified: judged by its group and by * together")
		}
	}
	return v
}
