package audit

import (
	"context"
	"hash/maphash"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
)

// shard judges the entries of the clients whose networks shardOf gives
// it, with an engine of its own whose clock is the current entry's time.
// A client's entries all go to one shard, in the order they were read,
// so that its Crawl-delay clock, traps and bans run as one guard's would.
type shard struct {
	a       *Auditor
	e       *guard.Engine
	src     *datedSource
	now     atomic.Int64 // the current entry's time, the engine's clock
	version int          // the index of the Version in force for now
	// last is the site of the last entry judged, and its scheme and Host.
	last      struct{ scheme, host, site string }
	rows      map[rowKey]*tally
	sites     map[string]*SiteResult
	timelines map[string]*timeline
	// unlisted holds the hashes of the clients beyond the rows that
	// would have been stopped (at most maxUnlisted, among all shards).
	unlisted map[uint64]struct{}
	seed     maphash.Seed
	// The shard's part of the Result's counts.
	history       map[string]int64
	versionUse    []int64
	beforeHistory int64
}

// newShard returns a shard of a, without its engine.
func newShard(a *Auditor) *shard {
	src := &datedSource{versions: a.versions, perSite: make(map[string][]Version, len(a.perSite)), siteCur: make(map[string]int)}
	for site, h := range a.perSite {
		src.perSite[site] = h
	}
	return &shard{a: a, src: src, version: -1, rows: make(map[rowKey]*tally), sites: make(map[string]*SiteResult),
		timelines: make(map[string]*timeline), unlisted: make(map[uint64]struct{}), seed: maphash.MakeSeed(),
		history: make(map[string]int64), versionUse: make([]int64, len(a.versions))}
}

// clock is the shard's engine's clock: the time of the entry it judges.
func (s *shard) clock() time.Time { return time.Unix(0, s.now.Load()) }

// shardOf returns the shard of a client address: by its network of the
// guard's client prefix (v4 or v6 bits), so that one client's entries are
// one shard's. Any text that is no address is shard 0's.
func shardOf(ip string, v4, v6 int) int {
	addr := limit.ParseAddr(ip)
	if !addr.IsValid() {
		return 0
	}
	return int(netHash(addr, v4, v6) % shards)
}

// netHash is a hash of addr's network of v4 or v6 bits: FNV-1a of its
// bytes, the same from run to run.
func netHash(addr netip.Addr, v4, v6 int) uint64 {
	bits := v6
	if addr.Is4() {
		bits = v4
	}
	p, _ := addr.Prefix(bits)
	h := uint64(14695981039346656037)
	for _, b := range p.Addr().As16() {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return h
}

// judge decides one entry with the engine at the entry's time and counts
// it.
func (s *shard) judge(ctx context.Context, en *Entry) {
	a := s.a
	s.now.Store(en.At)
	req := guard.Request{Scheme: a.scheme, Host: a.host, Target: en.Target, UserAgent: en.UserAgent, ClientIP: en.ClientIP, Method: en.Method,
		Evidence: en.Evidence, LicenseToken: tokenOf(en)}
	if en.Host != "" {
		req.Host, req.Scheme = en.Host, schemeOf(en)
	}
	// The server's port, as the guard had it from the connection: the
	// Host's, or the scheme's default.
	if _, req.Port = sites.SplitHost(req.Host); req.Port == 0 {
		req.Port = 80
		if req.Scheme == "https" {
			req.Port = 443
		}
	}
	if req.Host != s.last.host || req.Scheme != s.last.scheme { // a log's lines are mostly of one site
		s.last.scheme, s.last.host, s.last.site = req.Scheme, req.Host, siteName(req.Scheme, req.Host)
	}
	if !s.useVersion(ctx, s.last.site, en.At) {
		s.beforeHistory++
		return
	}
	v := s.e.Decide(ctx, req)
	s.count(en, &v)
}

// useVersion puts in force, for site, the robots.txt of its time at:
// the site's own history from its first version on, else the global
// versions. It reports false when none is known for that time.
func (s *shard) useVersion(ctx context.Context, site string, at int64) bool {
	src := s.src
	h, ok := src.perSite[site]
	if !ok && len(s.a.byHost) > 0 {
		// The guard names a site by its server's port, which a log's
		// Host may not carry (a port mapping): a history whose site has
		// the same scheme and host name, and is the only one, is it.
		if name, found := s.a.byHost[hostOnly(site)]; found && name != "" {
			// The engine's copy is keyed by the entry's site; its
			// versions are the history's.
			h, ok = src.perSite[name], true
			src.mu.Lock()
			src.perSite[site] = h
			src.mu.Unlock()
		}
	}
	if ok {
		if i := index(h, at); i >= 0 {
			if h[i].Unknown {
				return false
			}
			src.mu.Lock()
			cur, seen := src.siteCur[site]
			src.siteCur[site] = i
			src.mu.Unlock()
			if !seen || cur != i {
				s.e.Refresh(ctx, site, nil)
			}
			s.history[site]++
			return true
		}
	}
	i := index(src.versions, at)
	if i < 0 {
		return false
	}
	src.mu.Lock()
	cur, seen := src.siteCur[site]
	if seen && cur >= 0 {
		// Back before the site's own history (a later file that starts
		// earlier): its copy is the global version's again.
		src.siteCur[site] = -1
	}
	src.mu.Unlock()
	if seen && cur >= 0 {
		s.e.Refresh(ctx, site, nil)
	}
	if i != s.version {
		// The next robots.txt from here on: every site's copy is fetched
		// again (from the dated source) before the entry is judged.
		first := s.version < 0
		s.version = i
		src.current.Store(int32(i))
		if !first {
			s.e.Refresh(ctx, "", nil)
		}
	}
	s.versionUse[i]++
	return true
}

// count adds a decided entry to its site and, for a bot (or a browser a
// trap or ban stopped), to its client's row.
func (s *shard) count(en *Entry, v *guard.Verdict) {
	a := s.a
	site := v.Site
	if site == "" { // exempt: /robots.txt, or a browser before any site
		site = a.scheme + "://" + a.host
		if en.Host != "" {
			site = siteName(schemeOf(en), en.Host)
		}
	}
	sr := s.sites[site]
	if sr == nil {
		if site = a.admitSite(site); s.sites[site] == nil {
			s.sites[site] = &SiteResult{Site: site}
		}
		sr = s.sites[site]
	}
	sr.Requests++
	if !v.Bot && v.Action == guard.Allow {
		return
	}
	sr.BotRequests++
	switch licenseOf(en, v) {
	case licenseRefused:
		sr.Unlicensed++
	case licenseUnchecked:
		sr.TokenUnchecked++
	case licenseUnknown:
		sr.TokenUnknown++
	}
	s.siteTimeline(site).add(en.At, v)
	if v.Rule != nil && v.Action != guard.Allow {
		countLine(sr, v)
	}
	v4, v6 := a.cfg.Clients.IPv4Prefix, a.cfg.Clients.IPv6Prefix
	k := rowKey{site: site, client: limit.ClientOf(en.ClientIP, v4, v6),
		group: v.Group, operator: v.Operator, verification: v.Verification, class: v.Class, ua: cut(en.UserAgent, maxRowUA)}
	if v.Undeclared != "" {
		k.class = classify.ClassUndeclared
	}
	if !v.Bot {
		k.group = "(browser)"
	}
	t := s.rows[k]
	if t == nil {
		if !a.takeRow() {
			sr.Others++
			s.countUnlisted(sr, &k, v)
			return
		}
		k.ua = strings.Clone(k.ua) // not the line's: the row outlives it
		t = &tally{first: en.At, last: en.At, cutUA: len(k.ua) < len(en.UserAgent)}
		s.rows[k] = t
	}
	t.add(en, v)
}

// countUnlisted counts, in sr.Unlisted, a client beyond the rows whose
// request v stopped, the first time it does.
func (s *shard) countUnlisted(sr *SiteResult, k *rowKey, v *guard.Verdict) {
	if kindOf(v) == passed {
		return
	}
	h := maphash.Comparable(s.seed, *k)
	if _, seen := s.unlisted[h]; seen {
		return
	}
	if !s.a.takeUnlisted() {
		sr.UnlistedAtLeast = true
		return
	}
	s.unlisted[h] = struct{}{}
	sr.Unlisted++
}

// siteTimeline returns the timeline of site, made when needed.
func (s *shard) siteTimeline(site string) *timeline {
	tl := s.timelines[site]
	if tl == nil {
		tl = new(timeline)
		s.timelines[site] = tl
	}
	return tl
}

// countLine counts the robots.txt line that stopped a request of site sr
// (a line of the version in force then: the text tells versions apart).
func countLine(sr *SiteResult, v *guard.Verdict) {
	if sr.lines == nil {
		sr.lines = make(map[lineKey]int64)
	}
	k := lineKey{v.Rule.Line, v.Rule.String()}
	if _, ok := sr.lines[k]; ok || len(sr.lines) < maxLines {
		sr.lines[k]++
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
func schemeOf(en *Entry) string {
	if en.HTTPS {
		return "https"
	}
	return "http"
}
