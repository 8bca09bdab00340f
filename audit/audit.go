// Package audit judges the requests of access logs a site already has
// with the guard's engine (package guard: the one judge, with the same
// classification, groups, decoded targets, verification and Crawl-delay
// clocks, replayed at each request's own time), and says, per client,
// what the guard would have done: the disallowed paths fetched, the
// Crawl-delays broken, the traps hit and the claims to be a known crawler
// that did not hold. It reads Caddy's JSON access log, the Common and
// Combined Log Formats of nginx and Apache (Apache's with the virtual host
// first too), HAProxy's HTTP log, Envoy's default format, Traefik's JSON
// access log, Cloudflare's Logpush HTTP requests and AWS's CloudFront and
// ALB logs, gzip-compressed or not, with memory bounded whatever the
// log's size. "caddy robots audit" is its command.
package audit

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
	// maxRowUA is how much of a User-Agent tells rows apart, in bytes.
	maxRowUA = 200
	// maxUnlisted bounds the clients beyond the rows told apart (by a
	// 64-bit hash each: about 27 MB) to count those stopped.
	maxUnlisted = 1 << 20
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
	// Offline checks no crawler claim (no feed, no DNS): each is judged
	// as the guard judges one it cannot check, unverifiable: by its
	// group and "*" (Result.Offline). With verify off, as that guard,
	// every header is believed.
	Offline bool
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
	rows    map[rowKey]*tally
	sites   map[string]*SiteResult
	// timelines are the sites' bot requests over time.
	timelines map[string]*timeline
	// byHost maps "scheme://hostname" to the one history site of that
	// name ("" when several ports have one).
	byHost map[string]string
	// bytesRead and linesRead are Progress's counts.
	bytesRead, linesRead atomic.Int64
	// notAfter is the latest time an entry may have: a day after New.
	notAfter int64
	// last is the site of the last entry judged, and its scheme and Host.
	last struct{ scheme, host, site string }
	// offline is the verifier of Options.Offline, nil otherwise.
	offline *identity.Verifier
	// gaveUp is the warning of a resolver given up on (dnsGiveUp), set by
	// a lookup's goroutine, read by Result.
	gaveUp atomic.Pointer[string]
	// unlisted holds the hashes of the clients beyond the rows that
	// would have been stopped (at most maxUnlisted).
	unlisted map[uint64]struct{}
	seed     maphash.Seed
	res      Result
}

// New returns an Auditor that judges with an engine of cfg (its
// robots.txt source replaced by opts.Versions; verification as cfg.Verify
// says, and opts.Offline for an audit that asks no feed and no DNS).
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
	case "", FormatAuto, FormatCaddy, FormatCombined, FormatVhostCombined, FormatTraefik, FormatCloudflare, FormatHAProxy, FormatEnvoy, FormatCloudFront, FormatALB:
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
	a := &Auditor{src: src, byHost: byHost, scheme: scheme, host: host, maxRows: opts.MaxRows, notAfter: time.Now().Add(24 * time.Hour).UnixNano(),
		rows: make(map[rowKey]*tally), sites: make(map[string]*SiteResult), timelines: make(map[string]*timeline),
		unlisted: make(map[uint64]struct{}), seed: maphash.MakeSeed()}
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
	if err := a.start(cfg, opts.Offline); err != nil {
		return nil, err
	}
	return a, nil
}

// start makes the Auditor's engine of cfg, with the verifier of
// Options.Offline when offline, and loads the feeds of any other.
func (a *Auditor) start(cfg guard.Config, offline bool) error {
	// The audit models a guard; it must not act as one: no shared store
	// (its bans and Crawl-delay clocks are the live fleet's, on the
	// store's own clock), no origin (every host of the log is judged by
	// the given files), and no bound on first fetches (a log's many
	// sites are no flood).
	cfg.Store = nil
	cfg.RobotsTxt.Origin, cfg.RobotsTxt.Source = "", ""
	cfg.RobotsTxt.NewSitesPerSecond = math.MaxInt32
	gopts := []guard.Option{guard.WithSource(a.src),
		guard.WithClock(func() time.Time { return time.Unix(0, a.now.Load()) }),
		guard.WithLogger(zap.NewNop())}
	var err error
	if offline && cfg.Verifying() {
		if a.offline, err = offlineVerifier(cfg.Verify); err != nil {
			return err
		}
		gopts = append(gopts, guard.WithVerifier(a.offline))
		a.res.Offline = true
	}
	if a.e, err = guard.New(cfg, gopts...); err != nil {
		if a.offline != nil {
			a.offline.Close()
		}
		return err
	}
	a.cfg = a.e.Config()
	if v := a.e.Verifier(); v != nil && a.offline == nil {
		// A log's claims are checked one after the other: against a
		// resolver that does not answer, each would wait its own
		// dns_timeout. After dnsGiveUp failures in a row none is asked.
		v.GiveUpDNSAfter(dnsGiveUp, func(msg string) { a.gaveUp.Store(&msg) })
		a.loadFeeds(v)
	}
	return nil
}

// dnsGiveUp is how many reverse-DNS lookups in a row may fail before the
// audit stops asking the resolver (identity.Verifier.GiveUpDNSAfter).
const dnsGiveUp = 3

// loadFeeds fetches the feeds of v before the first entry is judged
// (a claim judged before would be unverifiable); a failure is a warning.
func (a *Auditor) loadFeeds(v *identity.Verifier) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := v.RefreshFeeds(ctx); err != nil {
		a.res.Warnings = append(a.res.Warnings, "crawler verification: IP-range feeds did not load; the claims of their operators "+
			"count as unverifiable (--offline checks no claim, and says so):\n"+err.Error())
	}
}

// offlineVerifier is the verifier of Options.Offline: vc's registry,
// whose tokens still make claims, without the operators' IP-range feeds
// and reverse-DNS domains. The claim of an operator that publishes no
// check is unverifiable (package identity), so the engine judges every
// claim as the guard judges one it cannot check, and nothing is fetched
// or looked up.
func offlineVerifier(vc *identity.VerifyConfig) (*identity.Verifier, error) {
	if vc == nil {
		vc = &identity.VerifyConfig{}
	}
	ops := vc.Registry()
	for i := range ops {
		ops[i].IPRanges, ops[i].RDNS = nil, nil
	}
	v, err := identity.New(identity.Config{Operators: ops, NoBackground: true})
	if err != nil {
		return nil, fmt.Errorf("robots_guard: audit: --offline: %w", err)
	}
	return v, nil
}

// Close stops the engine's background work.
func (a *Auditor) Close() error {
	if a.offline != nil {
		defer a.offline.Close()
	}
	return a.e.Close()
}

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
	if req.Host != a.last.host || req.Scheme != a.last.scheme { // a log's lines are mostly of one site
		a.last.scheme, a.last.host, a.last.site = req.Scheme, req.Host, siteName(req.Scheme, req.Host)
	}
	if !a.useVersion(ctx, a.last.site, en.At) {
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
	if !ok && len(a.byHost) > 0 {
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
	k := rowKey{site: site, client: limit.ClientOf(en.ClientIP, v4, v6),
		group: v.Group, operator: v.Operator, verification: v.Verification, class: v.Class, ua: cut(en.UserAgent, maxRowUA)}
	if !v.Bot {
		k.group = "(browser)"
	}
	t := a.rows[k]
	if t == nil {
		if len(a.rows) >= a.maxRows {
			s.Others++
			a.countUnlisted(s, &k, v)
			return
		}
		k.ua = strings.Clone(k.ua) // not the line's: the row outlives it
		t = &tally{first: en.At, last: en.At, cutUA: len(k.ua) < len(en.UserAgent)}
		a.rows[k] = t
	}
	t.add(en, v)
}

// countUnlisted counts, in s.Unlisted, a client beyond the rows whose
// request v stopped, the first time it does.
func (a *Auditor) countUnlisted(s *SiteResult, k *rowKey, v *guard.Verdict) {
	if kindOf(v) == passed {
		return
	}
	h := maphash.Comparable(a.seed, *k)
	if _, seen := a.unlisted[h]; seen {
		return
	}
	if len(a.unlisted) >= maxUnlisted {
		s.UnlistedAtLeast = true
		return
	}
	a.unlisted[h] = struct{}{}
	s.Unlisted++
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

// truncate is s cut at n bytes, with "…" when it was cut.
func truncate(s string, n int) string {
	if len(s) > n {
		return cut(s, n) + "…"
	}
	return s
}

// cut is s cut at n bytes, at the start of a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// rowKey is what makes one row: the site, the client prefix and its
// agent: the group its header chose, its claim and the header itself
// (its first maxRowUA bytes), so that two bots behind one address (a
// NAT, a proxy) are two rows.
type rowKey struct {
	site, group, operator, class, ua string
	client                           limit.Client
	verification                     identity.Verdict
}
