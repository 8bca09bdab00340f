package guard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"weak"

	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/sites"
	"github.com/robotsguard/robotsguard/traps"
)

// trapClocks is what the Engine attaches to a site (sites.Site.Attach)
// when it has traps: per trap of Config.Traps.Paths, since when (Unix ns) the
// site's copies have armed it without a break, 0 when the current one
// does not. Written by fetches (checkTraps), read by requests.
type trapClocks struct {
	since []atomic.Int64
	// kept: the clocks are in the traps.ClockStore; told: when the store
	// was last told that they still hold (Unix ns), see confirmTraps.
	kept atomic.Bool
	told atomic.Int64
	// rules: the rules key of the copy checkTraps saw last (written by
	// checkTraps only, which a site's fetches run one at a time).
	rules [32]byte
}

// trapClocksOf returns the trap clocks attached to ent, nil when none.
func trapClocksOf(ent *sites.Site) *trapClocks {
	c, _ := ent.Attached().(*trapClocks)
	return c
}

// checkTraps runs for each new copy of a site's robots.txt: it logs each
// trap the copy does not arm, with the group that allows it, and keeps
// since when the copies have armed each trap without a break (the clock
// of Config.Traps.Grace). Requests check the trap against the copy again.
func (e *Engine) checkTraps(ent *sites.Site, r *policy.Robots) {
	since := trapClocksOf(ent)
	if since == nil {
		since = &trapClocks{since: make([]atomic.Int64, len(e.traps.Patterns()))}
		ent.Attach(since)
	}
	now := e.now().UnixNano()
	rk := rulesKey(r)
	// Only a name's first copy adopts the clock its rules keep under other
	// names (a fresh name of a catch-all server): a site whose earlier
	// copy allowed a trap may have handed that copy to a crawler, so its
	// own grace runs.
	first := since.rules == [32]byte{}
	for i, p := range e.traps.Patterns() {
		ok, by := traps.Armed(r, p)
		switch {
		case !ok:
			since.since[i].Store(0)
			// Rules that armed the trap here and no longer do: their
			// clock starts again if they come back (a crawler may have
			// read this copy meanwhile), under every name.
			e.rulesClocks.Remove(rulesClockKey{since.rules, i})
			if e.trapClocks != nil {
				e.trapClocks.DeleteTrapClock(ent.Name(), p)
			}
			e.log.Warn("robots_guard: trap not armed: robots.txt does not disallow it for every bot, so it could catch a compliant crawler",
				zap.String("site", ent.Name()), zap.String("trap", p), zap.String("allowed_for", by))
		case since.since[i].Load() == 0:
			t := now
			if e.trapClocks != nil {
				s, c, ok := e.trapClocks.LoadTrapClock(ent.Name(), p)
				switch {
				case ok && s.UnixNano() <= now && now-c.UnixNano() <= e.trapClockFresh():
					// The clock of an earlier run (a restart) goes on: the
					// Disallow was seen shortly before.
					t = s.UnixNano()
					since.kept.Store(true)
					since.told.Store(c.UnixNano())
				case e.keptClocks.Add(1) <= maxKeptClocks:
					e.trapClocks.StoreTrapClock(ent.Name(), p, time.Unix(0, now), time.Unix(0, now))
					since.kept.Store(true)
					since.told.Store(now)
				case e.keptClocks.Load() == maxKeptClocks+1:
					e.log.Warn("robots_guard: trap grace clocks kept in storage: bound reached; those of further sites live in memory only (a catch-all server reached under many names?)",
						zap.Int("bound", maxKeptClocks))
				}
			}
			if first {
				t = e.rulesClock(rk, i, t)
			}
			since.since[i].Store(t)
			e.announceTrap(ent, i, t)
		default:
			e.rulesClock(rk, i, since.since[i].Load()) // armed here without a break: so are these rules
		}
	}
	since.rules = rk
}

// announceTrap logs that trap i of ent arms now, or when it will (one INFO
// line each: when the wait starts, and when it ends, by a timer that holds
// the site weakly).
func (e *Engine) announceTrap(ent *sites.Site, i int, since int64) {
	site, trap := zap.String("site", ent.Name()), zap.String("trap", e.traps.Patterns()[i])
	armsAt := since + int64(*e.cfg.Traps.Grace)
	now := e.now().UnixNano()
	if now >= armsAt {
		e.log.Info("robots_guard: trap armed", site, trap, zap.Time("disallowed_since", time.Unix(0, since).UTC()))
		return
	}
	e.log.Info("robots_guard: trap waiting: robots.txt disallows it for every bot; it arms when that has held for traps.grace",
		site, trap, zap.Time("arms_at", time.Unix(0, armsAt).UTC()))
	if !e.realClock || e.armTimers.Add(1) > maxArmTimers {
		e.armTimers.Add(-1)
		return // the state stays visible in Sites
	}
	// The timer holds the site weakly and not the Engine, so that
	// neither outlives its cache, and at most maxArmTimers are pending.
	wp, log, pending := weak.Make(ent), e.log, &e.armTimers
	time.AfterFunc(time.Duration(armsAt-now), func() {
		defer pending.Add(-1)
		if ent := wp.Value(); ent != nil {
			if c := trapClocksOf(ent); c != nil && i < len(c.since) && c.since[i].Load() == since {
				log.Info("robots_guard: trap armed", site, trap, zap.Time("disallowed_since", time.Unix(0, since).UTC()))
			}
		}
	})
}

// Bounds of the trap clocks' side effects, for a catch-all server reached
// under many Host names: clocks kept in the traps.ClockStore (one key per
// site and trap), and pending timers that announce a trap arming.
const (
	maxKeptClocks = 4096
	maxArmTimers  = 1024
)

// confirmTraps runs after every fetch that confirms a site's copy (a 304
// or a new copy): it tells the traps.ClockStore, at most every
// trapConfirmEvery, that the site's kept clocks still hold, so that a
// restart goes on with them only when the Disallow was seen shortly
// before (trapClockFresh): a Disallow removed and added back while the
// guard was not watching starts the grace again.
func (e *Engine) confirmTraps(ent *sites.Site, _ *policy.Robots) {
	c := trapClocksOf(ent)
	if e.trapClocks == nil || c == nil || !c.kept.Load() {
		return
	}
	now := e.now().UnixNano()
	if now-c.told.Load() < int64(trapConfirmEvery) {
		return
	}
	c.told.Store(now)
	for i, p := range e.traps.Patterns() {
		if since := c.since[i].Load(); since != 0 {
			e.trapClocks.StoreTrapClock(ent.Name(), p, time.Unix(0, since), time.Unix(0, now))
		}
	}
}

// trapConfirmEvery is how often confirmTraps writes to the store.
const trapConfirmEvery = 15 * time.Minute

// trapClockFresh is how recently a kept clock must have been confirmed to
// go on after a restart: an hour, plus two refresh intervals (the guard
// itself looks only that often).
func (e *Engine) trapClockFresh() int64 {
	return int64(time.Hour + trapConfirmEvery + 2*time.Duration(e.cfg.RobotsTxt.Refresh))
}

// trapStatus describes the traps of ent with its copy st.
func (e *Engine) trapStatus(ent *sites.Site, st *sites.State) []traps.Status {
	if e.traps == nil || st == nil || st.Unreachable {
		return nil
	}
	clocks := trapClocksOf(ent)
	out := make([]traps.Status, len(e.traps.Patterns()))
	for i, p := range e.traps.Patterns() {
		out[i].Trap = p
		ok, by := traps.Armed(st.Robots, p)
		var since int64
		if clocks != nil && i < len(clocks.since) {
			since = clocks.since[i].Load()
		}
		switch {
		case !ok:
			out[i].State, out[i].AllowedFor = "not_armed", by
		case since != 0 && e.trapReady(ent, i):
			out[i].State = "armed"
		default:
			out[i].State = "waiting"
			if since != 0 {
				out[i].ArmsAt = time.Unix(0, since+int64(*e.cfg.Traps.Grace)).UTC()
			}
		}
	}
	return out
}

// carryTraps moves the trap clocks of a site of from (an Engine with the
// same traps) to the same site of e, for Adopt: it reports whether it did.
func (e *Engine) carryTraps(from *Engine) func(old, ent *sites.Site) bool {
	if e.traps == nil || from.traps == nil || !slices.Equal(e.traps.Patterns(), from.traps.Patterns()) {
		return nil
	}
	return func(old, ent *sites.Site) bool {
		since := trapClocksOf(old)
		if since == nil {
			return false
		}
		cp := &trapClocks{since: make([]atomic.Int64, len(since.since))}
		for i := range since.since {
			cp.since[i].Store(since.since[i].Load())
		}
		cp.kept.Store(since.kept.Load())
		cp.told.Store(since.told.Load())
		ent.Attach(cp)
		return true
	}
}

// trapReady reports whether trap i of ent has been armed, by every copy
// since, for at least Config.TrapGrace.
func (e *Engine) trapReady(ent *sites.Site, i int) bool {
	since := trapClocksOf(ent)
	if since == nil || i < 0 || i >= len(since.since) {
		return false
	}
	t := since.since[i].Load()
	return t != 0 && e.now().UnixNano()-t >= int64(*e.cfg.Traps.Grace)
}

// navigation reports whether req may be a crawler's own fetch of a page,
// for trap_links static: GET or HEAD, and, when the client sends fetch
// metadata (browsers do), a document fetched from this site, not from
// another site, from no page at all (a link opened from a mail or chat
// app, Sec-Fetch-Site: none) or as a speculative prefetch (Sec-Purpose).
// A browser made to load the trap by someone else is not banned; without
// fetch metadata (plain http) nothing tells, which per-client links solve.
func navigation(req *Request) bool {
	switch req.Method {
	case "", "GET", "HEAD":
	default:
		return false
	}
	switch req.SecFetchDest {
	case "", "document":
	default:
		return false
	}
	switch req.SecFetchSite {
	case "cross-site", "same-site", "none":
		return false
	}
	return req.SecPurpose == ""
}

// trapSecret returns the key of trap link tokens: Config.Traps.Secret,
// WithTrapSecret's, or a random one.
func trapSecret(cfg Config, o options) []byte {
	switch {
	case cfg.Traps.Secret != "":
		return []byte(cfg.Traps.Secret)
	case len(o.trapSecret) > 0:
		return o.trapSecret
	}
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// BanStatus describes one ban, for the admin API and net/http programs.
type BanStatus struct {
	// Client is the banned address prefix, e.g. "203.0.113.7/32".
	Client  string    `json:"client"`
	Until   time.Time `json:"until"`
	Strikes int       `json:"strikes"`
	Reason  string    `json:"reason"`
}

// Bans returns the bans in force, the longest first; nil when neither
// traps nor ban_after is configured.
func (e *Engine) Bans(ctx context.Context) []BanStatus {
	if e.bans == nil {
		return nil
	}
	out := []BanStatus{}
	for _, b := range e.bans.List(ctx, e.now().UnixNano()) {
		out = append(out, BanStatus{Client: b.Client.Format(e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix),
			Until: time.Unix(0, b.Until).UTC(), Strikes: b.Strikes, Reason: b.Reason})
	}
	return out
}

// Banning reports whether e bans at all: traps or bans.after are set, or
// a ban list was given (WithBans).
func (e *Engine) Banning() bool { return e.bans != nil }

// Unban lifts the ban of the client whose address (or prefix, as Bans
// shows it) is given, on every instance that shares the store, and
// forgets its earlier bans. It reports whether there was one.
func (e *Engine) Unban(ctx context.Context, client string) (bool, error) {
	if e.bans == nil {
		return false, errors.New("robots_guard: unban: no bans: neither traps nor bans.after is configured")
	}
	addr, _, _ := strings.Cut(client, "/")
	if _, err := netip.ParseAddr(addr); err != nil {
		return false, fmt.Errorf("robots_guard: unban: %q is not an address or prefix such as 203.0.113.7 or 2001:db8::/64", client)
	}
	k := limit.ClientOf(addr, e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)
	if p, err := netip.ParsePrefix(client); err == nil {
		if n, ok := limit.NetKey(p); ok {
			if _, wider := limit.NetOf(k, e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix); wider {
				k = n // a network's aggregated ban, as Bans shows it
			}
		}
	}
	ok := e.bans.Unban(ctx, k)
	if ok {
		e.log.Info("robots_guard: unbanned", zap.String("client", k.Format(e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)))
	}
	return ok, nil
}

// TrapLinkFor returns the trap link of the client at clientIP ("ip" or
// "ip:port", as the front resolved it, like Caddy's client_ip) on site (a
// Verdict's Site, or SiteOf's name of the request): the first trap that is
// a plain path followed by a token that only that client can present on
// that site, changing daily; "" without per-client links (Traps.Links
// static, or no plain trap). Put it in the pages that client is shown, where
// no human follows it (in Caddy, the placeholder
// {http.robots_guard.trap_link}; with net/http, nethttp.TrapLink). The
// link bans only on the site that showed it (with crawl_delay_scope block,
// on any site of the block): another site that shows it to the client, or
// makes the client's browser load it, bans nobody.
func (e *Engine) TrapLinkFor(site, clientIP string) string {
	if e.trapLink == "" {
		return ""
	}
	c := limit.ClientOf(clientIP, e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)
	if c.IsZero() {
		return e.trapLink
	}
	return e.trapLink + traps.Token(e.trapKey, c, e.now().Unix()/86400, e.trapScope(site))
}

// SiteOf returns the name of the site that r asks for, as a Verdict's
// Site names it ("https://example.com", "http://127.0.0.1:8080"): for
// TrapLinkFor where no verdict is at hand.
func (e *Engine) SiteOf(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return sites.MakeKey(scheme, r.Host, localPort(r)).Name()
}

// trapScope is what a trap link's token names: the site, or the block
// with crawl_delay_scope block (one server whatever the Host).
func (e *Engine) trapScope(site string) string {
	if e.blockScope != "" {
		return e.blockScope
	}
	return site
}

// ownLink reports whether target ends in the token of the requesting
// client's trap link on site of today or yesterday (a page rendered before
// midnight, followed after it).
func (e *Engine) ownLink(req *Request, site, target string) bool {
	client := e.clientKey(req)
	if client.IsZero() {
		return false
	}
	path, _ := policy.SplitTarget(target)
	tok := path[strings.LastIndexByte(path, '/')+1:]
	if len(tok) != traps.TokenLen {
		return false
	}
	day := e.clock(req) / int64(24*time.Hour)
	for _, d := range [...]int64{day, day - 1} {
		if hmac.Equal([]byte(tok), []byte(traps.Token(e.trapKey, client, d, e.trapScope(site)))) {
			return true
		}
	}
	return false
}

// A trap's grace clock belongs to the robots.txt in force, not to the name
// it was fetched under: a catch-all server reached under a fresh Host name
// per request serves one file (or one set of rules) under every name, and
// a new name must not start the grace again. Besides each site's clock,
// the Engine keeps since when each set of rules (the file without its
// comments and its Sitemap and Host lines, which name the host) has
// armed each trap, and a site whose copy has those rules starts from
// that. At most maxRulesClocks sets are kept, least recently used out
// first; they live in memory (each site's own clock is what a restart
// carries over, see checkTraps).
const maxRulesClocks = 4096

// rulesClockKey names a set of rules and a trap.
type rulesClockKey struct {
	rules [32]byte
	trap  int
}

// rulesKey is the SHA-256 of r's rules: its text without comments, blank
// lines, and Sitemap and Host lines.
func rulesKey(r *policy.Robots) [32]byte {
	h := sha256.New()
	for line := range strings.Lines(r.Text()) {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		key, _, _ := strings.Cut(line, ":")
		if line == "" || strings.EqualFold(strings.TrimSpace(key), "sitemap") || strings.EqualFold(strings.TrimSpace(key), "host") {
			continue
		}
		h.Write([]byte(line))
		h.Write([]byte{'\n'})
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// rulesClock returns since when the rules rk have armed trap i, given
// that a site's copy with them arms it since t: the earlier of t and what
// an earlier copy with the same rules (under any name) recorded, which
// it records.
func (e *Engine) rulesClock(rk [32]byte, i int, t int64) int64 {
	k := rulesClockKey{rk, i}
	if prev, ok := e.rulesClocks.Get(k); ok && prev <= t {
		return prev
	}
	e.rulesClocks.Add(k, t)
	return t
}

// trapTarget reports whether target is under a trap: such a request waits
// for its site's robots.txt whoever sends it, so that the first request
// under a new name is judged, never waved through.
func (e *Engine) trapTarget(target string, targetOK bool) bool {
	if e.traps == nil || !targetOK {
		return false
	}
	_, ok := e.traps.Hit(target)
	return ok
}
