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
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
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
	// Licenses are the RSL documents that robots.txt's License lines
	// name, by URL (the command line's --license URL=FILE): a bot's
	// request for licensed content is judged by them (Row.Unlicensed),
	// and no document is fetched. Nil: the audit fetches each document
	// of the License lines of Versions and History once, before the
	// first entry is judged (one that cannot be had is a warning, and the
	// content it licenses is not judged), or, with Offline, none. No
	// licence server is ever asked (guard.WithOfflineLicenses).
	Licenses map[string][]byte
}

// Auditor judges access log entries. Its methods are not safe for
// concurrent use (but for Progress): one Read at a time. Within a Read,
// lines are parsed in parallel and judged by shards, each client's
// entries in the order they were read, each at its own time.
type Auditor struct {
	shards []*shard
	// verifier checks the claims of every shard's engine (nil without
	// verification); prefetch checks them ahead of the judging.
	verifier *identity.Verifier
	prefetch *prefetcher
	scheme   string
	host     string
	cfg      guard.Config
	maxRows  int
	// versions are the global robots.txt versions, perSite the sites'
	// own histories (Options.History), sorted; byHost maps
	// "scheme://hostname" to the one history site of that name (""
	// when several ports have one).
	versions []Version
	perSite  map[string][]Version
	byHost   map[string]string
	// bytesRead and linesRead are Progress's counts.
	bytesRead, linesRead atomic.Int64
	// notAfter is the latest time an entry may have: a day after New.
	notAfter int64
	// gaveUp is the warning of a resolver given up on (dnsGiveUp), set by
	// a lookup's goroutine, read by Result.
	gaveUp atomic.Pointer[string]
	// The bounds the shards share: rows taken, unlisted clients told
	// apart, and the sites with a result of their own.
	rowsTaken, unlistedTaken atomic.Int64
	sitesMu                  sync.Mutex
	siteNames                map[string]struct{}
	// workers is the number of parse goroutines of a Read: GOMAXPROCS;
	// buffers are the chunks' (lineBuffer), batches the shards' entries
	// once judged (*[]Entry).
	workers          int
	buffers, batches sync.Pool
	// licenses are the RSL documents the engines judge by, by URL
	// (loadLicenses); they do not change once the shards run.
	licenses map[string][]byte
	res      Result
}

// New returns an Auditor that judges with engines of cfg (their
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
	if _, ok := parsers[opts.Format]; !ok && opts.Format != "" && opts.Format != FormatAuto {
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
	a := &Auditor{versions: vs, perSite: make(map[string][]Version), byHost: make(map[string]string), scheme: scheme, host: host,
		maxRows: opts.MaxRows, notAfter: time.Now().Add(24 * time.Hour).UnixNano(), siteNames: make(map[string]struct{}),
		workers: runtime.GOMAXPROCS(0)}
	for site, h := range opts.History {
		h = append([]Version(nil), h...)
		sort.SliceStable(h, func(i, j int) bool { return h[i].Since.Before(h[j].Since) })
		if len(h) > 0 {
			a.perSite[site] = h
		}
	}
	for site := range a.perSite {
		if _, dup := a.byHost[hostOnly(site)]; dup {
			a.byHost[hostOnly(site)] = "" // two ports: no guess
		} else {
			a.byHost[hostOnly(site)] = site
		}
	}
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
	if err := a.start(cfg, opts); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// start makes the Auditor's verifier (the one of Options.Offline when
// offline) and loads its feeds and the RSL documents of the License
// lines, then the shards' engines of cfg.
func (a *Auditor) start(cfg guard.Config, opts Options) error {
	offline := opts.Offline
	// The audit models a guard; it must not act as one: no shared store
	// (its bans and Crawl-delay clocks are the live fleet's, on the
	// store's own clock), no origin (every host of the log is judged by
	// the given files), and no bound on first fetches (a log's many
	// sites are no flood).
	cfg.Store = nil
	cfg.RobotsTxt.Origin, cfg.RobotsTxt.Source = "", ""
	cfg.RobotsTxt.NewSitesPerSecond = math.MaxInt32
	var err error
	switch {
	case offline && cfg.Verifying():
		if a.verifier, err = offlineVerifier(cfg.Verify); err != nil {
			return err
		}
		a.res.Offline = true
	case cfg.Verifying():
		// The DNS cache holds the answers the prefetch finds ahead of
		// the judging (and each address's for the run).
		vc := *cfg.Verify
		vc.DNSCacheSize = max(vc.DNSCacheSize, auditDNSCache)
		c := cfg
		c.Verify = &vc
		if a.verifier, err = guard.NewVerifier(c); err != nil {
			return err
		}
		// Against a resolver that does not answer, each claim would wait
		// its own dns_timeout: after dnsGiveUp failures in a row none is
		// asked. The prefetch bounds the lookups at once.
		a.verifier.OneShot(dnsGiveUp, func(msg string) { a.gaveUp.Store(&msg) })
		a.loadFeeds(a.verifier)
		a.prefetch = newPrefetcher(a.verifier)
	}
	if err = a.loadLicenses(cfg, opts.Licenses, offline); err != nil {
		return err
	}
	// Each shard keeps its share of the per-client bounds.
	cd, err := cfg.CrawlDelay.WithDefaults()
	if err != nil {
		return fmt.Errorf("robots_guard: audit: %w", err)
	}
	cfg.CrawlDelay.MaxKeys = max(cd.MaxKeys/shards, minShardKeys)
	for range shards {
		s := newShard(a)
		// The engines fetch no RSL document and ask no licence server.
		eopts := []guard.Option{guard.WithSource(s.src), guard.WithClock(s.clock), guard.WithLogger(zap.NewNop()), guard.WithOfflineLicenses(a.licenseDoc)}
		if a.verifier != nil {
			eopts = append(eopts, guard.WithVerifier(a.verifier))
		}
		if s.e, err = guard.New(cfg, eopts...); err != nil {
			return err
		}
		a.shards = append(a.shards, s)
	}
	a.cfg = a.shards[0].e.Config()
	return nil
}

// Bounds of an audit's shards and verification.
const (
	// shards is how many parts the audit splits a log's clients into
	// (by network, see shardOf), each judged by an engine of its own in
	// the order its lines were read: a fixed number, so that the result
	// does not depend on the cores that judged it.
	shards = 8
	// minShardKeys is the fewest Crawl-delay keys a shard's engine
	// keeps (crawl_delay.max_keys is shared out among the shards).
	minShardKeys = 1024
	// auditDNSCache is the fewest reverse-DNS answers the audit's
	// verifier caches.
	auditDNSCache = 1 << 17
	// dnsGiveUp is how many reverse-DNS lookups in a row may fail before
	// the audit stops asking the resolver
	// (identity.Verifier.OneShot).
	dnsGiveUp = 3
)

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

// Close stops the engines' and the verifier's background work.
func (a *Auditor) Close() error {
	var errs []error
	for _, s := range a.shards {
		errs = append(errs, s.e.Close())
	}
	if a.prefetch != nil {
		a.prefetch.close()
	}
	if a.verifier != nil {
		errs = append(errs, a.verifier.Close())
	}
	return errors.Join(errs...)
}

// takeRow reports whether a new row may be made (Options.MaxRows).
func (a *Auditor) takeRow() bool { return a.rowsTaken.Add(1) <= int64(a.maxRows) }

// takeUnlisted reports whether one more client beyond the rows may be
// told apart (maxUnlisted).
func (a *Auditor) takeUnlisted() bool { return a.unlistedTaken.Add(1) <= maxUnlisted }

// admitSite returns site, or otherSites when the guard's
// robots_txt.max_sites sites have results already (a log of many Host
// names: a catch-all server), so that the sites beyond share one.
func (a *Auditor) admitSite(site string) string {
	a.sitesMu.Lock()
	defer a.sitesMu.Unlock()
	if _, ok := a.siteNames[site]; ok {
		return site
	}
	if len(a.siteNames) >= a.cfg.RobotsTxt.MaxSites {
		return otherSites
	}
	a.siteNames[site] = struct{}{}
	return site
}

// hostOnly is a site name without its port.
func hostOnly(site string) string {
	scheme, host, _ := strings.Cut(site, "://")
	name, _ := sites.SplitHost(host)
	return scheme + "://" + name
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
