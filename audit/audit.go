// Package audit judges the requests of access logs a site already has
// with the guard's engine (package guard: the one judge, with the same
// classification, groups, decoded targets, verification and Crawl-delay
// clocks, replayed at each request's own time), and says, per client,
// what the guard would have done: the disallowed paths fetched, the
// Crawl-delays broken, the traps hit and the claims to be a known crawler
// that did not hold. It reads Caddy's JSON access log and the Common and
// Combined Log Formats of nginx and Apache, gzip-compressed or not, with
// memory bounded whatever the log's size. "caddy robots audit" is its
// command.
package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
)

// Defaults of Options.
const (
	// DefaultSite names the site of a log whose lines carry no host (the
	// Common and Combined Log Formats).
	DefaultSite = "http://unknown.invalid"
	// DefaultMaxRows bounds the per-client rows (the guard's
	// crawl_delay.max_keys default); requests of clients beyond it are
	// counted in their site's Others.
	DefaultMaxRows = limit.DefaultMaxKeys
	// otherSites is the site of the requests of sites beyond the guard's
	// robots_txt.max_sites.
	otherSites = "_other"
	// maxExamples is how many example targets a row keeps.
	maxExamples = 3
	// maxMalformedShown is how many malformed lines a file's result shows.
	maxMalformedShown = 5
)

// Options are an audit's own settings; the guard's are the guard.Config
// given to New.
type Options struct {
	// Format is one of Formats; "" means FormatAuto.
	Format string
	// Site is the scheme and host of lines without a host
	// ("https://example.com"); "" means DefaultSite.
	Site string
	// Versions are the robots.txt files in force over time, at least
	// one; requests older than every dated Version are counted apart
	// (Result.BeforeHistory), never judged by a later file.
	Versions []Version
	// MaxRows bounds the per-client rows; 0 means DefaultMaxRows.
	MaxRows int
	// History are sites' own robots.txt histories, by site name
	// ("https://example.com"), as a running guard keeps them
	// (Engine.History): from the first version's Since on, a site's
	// requests are judged by them; before, by Versions.
	History map[string][]Version
}

// Auditor judges access log entries with one engine. It is not safe for
// concurrent use: entries are judged in the order they are read, each at
// its own time.
type Auditor struct {
	e       *guard.Engine
	src     *datedSource
	now     atomic.Int64 // the current entry's time, the engine's clock
	version int          // the index of the Version in force for now
	scheme  string
	host    string
	cfg     guard.Config
	maxRows int
	rows    map[rowKey]*Row
	sites   map[string]*SiteResult
	// timelines are the sites' bot requests over time.
	timelines map[string]*timeline
	// byHost maps "scheme://hostname" to the one history site of that
	// name ("" when several ports have one).
	byHost map[string]string
	// bytesRead and linesRead are Progress's counts.
	bytesRead, linesRead atomic.Int64
	res                  Result
}

// New returns an Auditor that judges with an engine of cfg (its
// robots.txt source replaced by opts.Versions; verification as cfg.Verify
// says: set it off for an audit that asks no feed and no DNS).
func New(cfg guard.Config, opts Options) (*Auditor, error) {
	if len(opts.Versions) == 0 && len(opts.History) == 0 {
		return nil, errors.New("robots_guard: audit: give the robots.txt to judge by (--robots FILE or URL, several with @DATE, or a running guard's history)")
	}
	vs := append([]Version(nil), opts.Versions...)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Since.Before(vs[j].Since) })
	for i := 1; i < len(vs); i++ {
		v := vs[i]
		if v.Since.IsZero() || v.Since.Equal(vs[i-1].Since) {
			return nil, fmt.Errorf("robots_guard: audit: %s and %s: with several robots.txt files, give each a different date (FILE@2026-01-31)", vs[i-1].Name, v.Name)
		}
	}
	switch opts.Format {
	case "", FormatAuto, FormatCaddy, FormatCombined:
	default:
		return nil, fmt.Errorf("robots_guard: audit: format %q: want one of %s", opts.Format, strings.Join(Formats, ", "))
	}
	site := opts.Site
	if site == "" {
		site = DefaultSite
	}
	scheme, host, ok := strings.Cut(site, "://")
	if !ok || (scheme != "http" && scheme != "https") || host == "" || strings.ContainsAny(host, "/?#") {
		return nil, fmt.Errorf("robots_guard: audit: site %q: write it as https://host", site)
	}
	host = strings.TrimPrefix(siteName(scheme, host), scheme+"://") // as the engine names it
	src := &datedSource{versions: vs, perSite: make(map[string][]Version), siteCur: make(map[string]int)}
	for site, h := range opts.History {
		h = append([]Version(nil), h...)
		sort.SliceStable(h, func(i, j int) bool { return h[i].Since.Before(h[j].Since) })
		if len(h) > 0 {
			src.perSite[site] = h
		}
	}
	byHost := make(map[string]string)
	for site := range src.perSite {
		if _, dup := byHost[hostOnly(site)]; dup {
			byHost[hostOnly(site)] = "" // two ports: no guess
		} else {
			byHost[hostOnly(site)] = site
		}
	}
	a := &Auditor{src: src, byHost: byHost, scheme: scheme, host: host, maxRows: opts.MaxRows,
		rows: make(map[rowKey]*Row), sites: make(map[string]*SiteResult), timelines: make(map[string]*timeline)}
	if a.maxRows <= 0 {
		a.maxRows = DefaultMaxRows
	}
	a.res.History = make(map[string]int64)
	a.res.Format = opts.Format
	if a.res.Format == "" {
		a.res.Format = FormatAuto
	}
	for _, v := range vs {
		a.res.Versions = append(a.res.Versions, VersionUse{Name: v.Name, Since: v.Since})
	}
	a.version = -1
	// The audit models a guard; it must not act as one: no shared store
	// (its bans and Crawl-delay clocks are the live fleet's, on the
	// store's own clock), no origin (every host of the log is judged by
	// the given files), and no bound on first fetches (a log's many
	// sites are no flood).
	cfg.Store = nil
	cfg.RobotsTxt.Origin, cfg.RobotsTxt.Source = "", ""
	cfg.RobotsTxt.NewSitesPerSecond = math.MaxInt32
	e, err := guard.New(cfg,
		guard.WithSource(a.src),
		guard.WithClock(func() time.Time { return time.Unix(0, a.now.Load()) }),
		guard.WithLogger(zap.NewNop()))
	if err != nil {
		return nil, err
	}
	a.e, a.cfg = e, e.Config()
	if v := e.Verifier(); v != nil {
		// A log is judged with the feeds loaded, not against the race of
		// their first fetch: a claim judged before would count as
		// unverifiable.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := v.RefreshFeeds(ctx); err != nil {
			a.res.Warnings = append(a.res.Warnings, "crawler verification: "+err.Error()+
				" (claims of the operators whose feed did not load count as unverifiable; --offline checks none)")
		}
	}
	return a, nil
}

// Close stops the engine's background work.
func (a *Auditor) Close() error { return a.e.Close() }

// judge decides one entry with the engine at the entry's time and counts
// it.
func (a *Auditor) judge(ctx context.Context, en *Entry) {
	a.now.Store(en.At)
	req := guard.Request{Scheme: a.scheme, Host: a.host, Target: en.Target, UserAgent: en.UserAgent, ClientIP: en.ClientIP, Method: en.Method}
	if en.Host != "" {
		req.Host, req.Scheme = en.Host, a.schemeOf(en)
	}
	// The server's port, as the guard had it from the connection: the
	// Host's, or the scheme's default.
	if _, req.Port = sites.SplitHost(req.Host); req.Port == 0 {
		req.Port = 80
		if req.Scheme == "https" {
			req.Port = 443
		}
	}
	if !a.useVersion(ctx, siteName(req.Scheme, req.Host), en.At) {
		a.res.BeforeHistory++
		return
	}
	v := a.e.Decide(ctx, req)
	a.count(en, &v)
}

// useVersion puts in force, for site, the robots.txt of its time at:
// the site's own history from its first version on, else the global
// versions. It reports false when none is known for that time.
func (a *Auditor) useVersion(ctx context.Context, site string, at int64) bool {
	h, ok := a.src.perSite[site]
	if !ok {
		// The guard names a site by its server's port, which a log's
		// Host may not carry (a port mapping): a history whose site has
		// the same scheme and host name, and is the only one, is it.
		if name, found := a.byHost[hostOnly(site)]; found && name != "" {
			// The engine's copy is keyed by the entry's site; its
			// versions are the history's.
			h, ok = a.src.perSite[name], true
			a.src.mu.Lock()
			a.src.perSite[site] = h
			a.src.mu.Unlock()
		}
	}
	if ok {
		if i := index(h, at); i >= 0 {
			if h[i].Unknown {
				return false
			}
			a.src.mu.Lock()
			cur, seen := a.src.siteCur[site]
			a.src.siteCur[site] = i
			a.src.mu.Unlock()
			if !seen || cur != i {
				a.e.Refresh(ctx, site, nil)
			}
			a.res.History[site]++
			return true
		}
	}
	i := index(a.src.versions, at)
	if i < 0 {
		return false
	}
	a.src.mu.Lock()
	cur, seen := a.src.siteCur[site]
	if seen && cur >= 0 {
		// Back before the site's own history (a later file that starts
		// earlier): its copy is the global version's again.
		a.src.siteCur[site] = -1
	}
	a.src.mu.Unlock()
	if seen && cur >= 0 {
		a.e.Refresh(ctx, site, nil)
	}
	if i != a.version {
		// The next robots.txt from here on: every site's copy is fetched
		// again (from the dated source) before the entry is judged.
		first := a.version < 0
		a.version = i
		a.src.current.Store(int32(i))
		if !first {
			a.e.Refresh(ctx, "", nil)
		}
	}
	a.res.Versions[i].Requests++
	return true
}

// count adds a decided entry to its site and, for a bot (or a browser a
// trap or ban stopped), to its client's row.
func (a *Auditor) count(en *Entry, v *guard.Verdict) {
	site := v.Site
	if site == "" { // exempt: /robots.txt, or a browser before any site
		site = a.scheme + "://" + a.host
		if en.Host != "" {
			site = siteName(a.schemeOf(en), en.Host)
		}
	}
	s := a.sites[site]
	if s == nil {
		if len(a.sites) >= a.cfg.RobotsTxt.MaxSites {
			// A log of many Host names (a catch-all server): the sites
			// beyond the guard's own bound share one result.
			site = otherSites
			if s = a.sites[site]; s == nil {
				s = &SiteResult{Site: site}
			}
		} else {
			s = &SiteResult{Site: site}
		}
		a.sites[site] = s
	}
	s.Requests++
	if !v.Bot && v.Action == guard.Allow {
		return
	}
	s.BotRequests++
	a.siteTimeline(site).add(en.At, v)
	if v.Rule != nil && v.Action != guard.Allow {
		a.countLine(s, v)
	}
	v4, v6 := a.cfg.Clients.IPv4Prefix, a.cfg.Clients.IPv6Prefix
	k := rowKey{site: site, client: limit.ClientOf(en.ClientIP, v4, v6).Format(v4, v6),
		group: v.Group, operator: v.Operator, verification: v.Verification, class: v.Class}
	if !v.Bot {
		k.group = "(browser)"
	}
	r := a.rows[k]
	if r == nil {
		if len(a.rows) >= a.maxRows {
			s.Others++
			return
		}
		r = &Row{Site: site, Client: k.client, Group: k.group, Operator: v.Operator, Verification: v.Verification.String(), Class: v.Class,
			UserAgent: truncate(en.UserAgent, 200), First: time.Unix(0, en.At).UTC()}
		a.rows[k] = r
	}
	r.add(en, v)
}

// hostOnly is a site name without its port.
func hostOnly(site string) string {
	scheme, host, _ := strings.Cut(site, "://")
	name, _ := sites.SplitHost(host)
	return scheme + "://" + name
}

// siteTimeline returns the timeline of site, made when needed.
func (a *Auditor) siteTimeline(site string) *timeline {
	tl := a.timelines[site]
	if tl == nil {
		tl = new(timeline)
		a.timelines[site] = tl
	}
	return tl
}

// countLine counts the robots.txt line that stopped a request of site s
// (a line of the version in force then: the text tells versions apart).
func (a *Auditor) countLine(s *SiteResult, v *guard.Verdict) {
	if s.lines == nil {
		s.lines = make(map[lineKey]int64)
	}
	k := lineKey{v.Rule.Line, v.Rule.String()}
	if _, ok := s.lines[k]; ok || len(s.lines) < maxLines {
		s.lines[k]++
	}
}

// maxLines bounds the lines a site's result counts.
const maxLines = 1000

// lineKey is a robots.txt line: its number and text.
type lineKey struct {
	line int
	text string
}

// schemeOf is the scheme of an entry's own site.
func (a *Auditor) schemeOf(en *Entry) string {
	if en.HTTPS {
		return "https"
	}
	return "http"
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// rowKey is what makes one row: the site, the client prefix, the group
// its header chose and its claim.
type rowKey struct {
	site, client, group, operator, class string
	verification                         identity.Verdict
}
