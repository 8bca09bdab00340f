package guard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/sites"
)

// trapSet matches request targets against Config.Traps.Paths, compiled once as
// the Disallow lines of a robots.txt of one "*" group, so that trap
// patterns mean exactly what robots.txt patterns mean.
type trapSet struct {
	patterns []string
	match    *policy.Robots
	// prefixes are the patterns' literal starts (up to a wildcard); a
	// target that starts with none of them is no trap, which spares
	// every other request the match. nil when a pattern starts with '*'.
	prefixes []string
}

func newTrapSet(patterns []string) *trapSet {
	if len(patterns) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for _, p := range patterns {
		b.WriteString("Disallow: " + p + "\n")
	}
	t := &trapSet{patterns: patterns, match: policy.Parse([]byte(b.String()))}
	for _, p := range patterns {
		lit := p
		if i := strings.IndexAny(p, "*$%"); i >= 0 {
			lit = p[:i]
		}
		if lit == "" || lit == "/" {
			t.prefixes = nil
			break
		}
		t.prefixes = append(t.prefixes, lit)
	}
	return t
}

// hit returns the index of the trap target matches, if any: trap i is
// on line i+2 of the compiled file.
func (t *trapSet) hit(target string) (int, bool) {
	if t.prefixes != nil {
		// Literal prefixes up to '%': a target's escapes are compared
		// canonically by the match, so only bytes before any '%' in
		// both are compared here.
		maybe := false
		for _, p := range t.prefixes {
			n := len(p)
			if i := strings.IndexByte(target, '%'); i >= 0 && i < n {
				n = i
			}
			if len(target) >= n && target[:n] == p[:n] {
				maybe = true
				break
			}
		}
		if !maybe {
			return 0, false
		}
	}
	d := t.match.Decide("", target)
	if d.Allowed || d.Rule == nil {
		return 0, false
	}
	return d.Rule.Line - 2, true
}

// trapArmed reports whether r disallows target for every bot: every
// group, and the "*" group that judges bots no group names. When it does
// not, by names who may fetch it.
func trapArmed(r *policy.Robots, target string) (armed bool, by string) {
	star := false
	for a := range r.Agents() {
		if a == "*" {
			star = true
		}
		if d := r.Agent(a).Decide(target); d.Allowed && !d.Exempt {
			return false, a
		}
	}
	if !star {
		return false, "bots no group names (there is no User-agent: * group)"
	}
	return true, ""
}

// trapPath is a path a trap pattern covers, for the check of a new copy:
// each '*' stands for "x", and a final '$' is dropped.
func trapPath(p string) string {
	p = strings.ReplaceAll(strings.TrimSuffix(p, "$"), "*", "x")
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	return p
}

// trapClocks is what the Engine attaches to a site (sites.Site.Attach)
// when it has traps: per trap of Config.Traps.Paths, since when (Unix ns) the
// site's copies have armed it without a break, 0 when the current one
// does not. Written by fetches (checkTraps), read by requests.
type trapClocks struct {
	since []atomic.Int64
	// kept: the clocks are in the TrapClockStore; told: when the store
	// was last told that they still hold (Unix ns), see confirmTraps.
	kept atomic.Bool
	told atomic.Int64
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
		since = &trapClocks{since: make([]atomic.Int64, len(e.traps.patterns))}
		ent.Attach(since)
	}
	now := e.now().UnixNano()
	for i, p := range e.traps.patterns {
		ok, by := trapArmed(r, trapPath(p))
		switch {
		case !ok:
			since.since[i].Store(0)
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
			since.since[i].Store(t)
			e.announceTrap(ent, i, t)
		}
	}
}

// announceTrap logs that trap i of ent arms now, or when it will (one INFO
// line each: when the wait starts, and when it ends, by a timer that holds
// the site weakly).
func (e *Engine) announceTrap(ent *sites.Site, i int, since int64) {
	site, trap := zap.String("site", ent.Name()), zap.String("trap", e.traps.patterns[i])
	armsAt := since + int64(*e.cfg.Traps.Grace)
	now := e.now().UnixNano()
	if now >= armsAt {
		e.log.Info("robots_guard: trap armed", site, trap, zap.Time("disallowed_since", time.Unix(0, since).UTC()))
		return
	}
	e.log.Info("robots_guard: trap waiting: robots.txt disallows it for every bot; it arms when that has held for trap_grace",
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
// under many Host names: clocks kept in the TrapClockStore (one key per
// site and trap), and pending timers that announce a trap arming.
const (
	maxKeptClocks = 4096
	maxArmTimers  = 1024
)

// TrapClockStore keeps the grace clocks of traps (since when a site's
// robots.txt has disallowed a trap for every bot, without a break) across
// restarts, so that a restart does not disarm every trap for trap_grace.
// The Caddy module keeps them in Caddy's storage; without one (net/http by
// default) they live in memory. Calls come from robots.txt fetches, never
// from the request path.
type TrapClockStore interface {
	// LoadTrapClock returns the clock of trap at site, if one is kept:
	// since when the trap has been disallowed, and when that was last
	// confirmed by a fetch.
	LoadTrapClock(site, trap string) (since, confirmed time.Time, ok bool)
	// StoreTrapClock keeps it.
	StoreTrapClock(site, trap string, since, confirmed time.Time)
	// DeleteTrapClock forgets it: the site's robots.txt stopped
	// disallowing the trap for every bot.
	DeleteTrapClock(site, trap string)
}

// confirmTraps runs after every fetch that confirms a site's copy (a 304
// or a new copy): it tells the TrapClockStore, at most every
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
	for i, p := range e.traps.patterns {
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

// TrapStatus describes a trap of a site (SiteStatus.Traps).
type TrapStatus struct {
	// Trap is the trap's pattern.
	Trap string `json:"trap"`
	// State is "armed", "waiting" (robots.txt disallows it for every bot,
	// but not yet for trap_grace: see ArmsAt) or "not_armed" (a group
	// may fetch it: see AllowedFor).
	State string `json:"state"`
	// ArmsAt is when a waiting trap arms.
	ArmsAt time.Time `json:"arms_at,omitzero"`
	// AllowedFor names who may fetch a trap that is not armed.
	AllowedFor string `json:"allowed_for,omitempty"`
}

// trapStatus describes the traps of ent with its copy st.
func (e *Engine) trapStatus(ent *sites.Site, st *sites.State) []TrapStatus {
	if e.traps == nil || st == nil || st.Unreachable {
		return nil
	}
	clocks := trapClocksOf(ent)
	out := make([]TrapStatus, len(e.traps.patterns))
	for i, p := range e.traps.patterns {
		out[i].Trap = p
		ok, by := trapArmed(st.Robots, trapPath(p))
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
	if e.traps == nil || from.traps == nil || !slices.Equal(e.traps.patterns, from.traps.patterns) {
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

// denialCounter counts robots.txt denials per client within a window
// (Config.Bans.After), for at most max clients; when full, windows that are
// over go first, then arbitrary ones.
type denialCounter struct {
	mu     sync.Mutex
	m      map[limit.Client]denials
	max    int
	window int64
	n      int
}

type denials struct {
	start int64
	n     int
}

// add counts a denial of client at now and reports whether it makes n
// within the window.
func (c *denialCounter) add(client limit.Client, now int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[client]
	if !ok || now-d.start > c.window {
		if !ok && len(c.m) >= c.max {
			// Make room for a tenth at once: windows that are over
			// first, then arbitrary ones.
			for k, v := range c.m {
				if now-v.start > c.window {
					delete(c.m, k)
				}
			}
			for k := range c.m {
				if len(c.m) < c.max*9/10 {
					break
				}
				delete(c.m, k)
			}
		}
		d = denials{start: now}
	}
	d.n++
	if d.n >= c.n {
		delete(c.m, client)
		return true
	}
	c.m[client] = d
	return false
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
		return false, errors.New("robots_guard: unban: no bans: neither traps nor ban_after is configured")
	}
	addr, _, _ := strings.Cut(client, "/")
	if _, err := netip.ParseAddr(addr); err != nil {
		return false, fmt.Errorf("robots_guard: unban: %q is not an address or prefix such as 203.0.113.7 or 2001:db8::/64", client)
	}
	k := limit.ClientOf(addr, e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)
	ok := e.bans.Unban(ctx, k)
	if ok {
		e.log.Info("robots_guard: unbanned", zap.String("client", k.Format(e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)))
	}
	return ok, nil
}

// TrapArmed reports whether the robots.txt r arms the trap pattern: whether
// it disallows the path the pattern covers (up to its first '*') for every
// bot, every group and the "*" group. When it does not, allowedFor names
// who may fetch it. "caddy robots lint --trap" reports it.
func TrapArmed(r *policy.Robots, trap string) (armed bool, allowedFor string) {
	return trapArmed(r, trapPath(trap))
}

// CheckTrap checks the form of a trap pattern, as Config.Traps.Paths does.
func CheckTrap(p string) error { return checkTrap(p) }

// linkTrap returns the trap whose path per-client links extend: the first
// that is a plain path (no '*' or '$'), with a trailing '/' so that the
// token is a path segment of its own; "" when there is none.
func linkTrap(patterns []string) string {
	for _, p := range patterns {
		if !strings.ContainsAny(p, "*$") {
			if !strings.HasSuffix(p, "/") {
				p += "/"
			}
			return p
		}
	}
	return ""
}

// trapTokenLen is the length of a trap link token: 12 bytes of an
// HMAC-SHA256, base64url.
const trapTokenLen = 16

// trapToken is the token of client's trap link on day (days since the Unix
// epoch, UTC): an HMAC of both under the Engine's trap secret, which no
// one without the secret can make for another client.
func (e *Engine) trapToken(client limit.Client, day int64) string {
	var msg [24]byte
	copy(msg[:16], client[:])
	binary.BigEndian.PutUint64(msg[16:], uint64(day))
	mac := hmac.New(sha256.New, e.trapKey)
	mac.Write(msg[:])
	var sum [sha256.Size]byte
	return base64.RawURLEncoding.EncodeToString(mac.Sum(sum[:0])[:12])
}

// TrapLinkFor returns the trap link of the client at clientIP ("ip" or
// "ip:port", as the front resolved it, like Caddy's client_ip): the first
// trap that is a plain path followed by a token that only that client can
// present, changing daily; "" without per-client links (Traps.Links
// static, or no plain trap). Put it in the pages that client is shown, where
// no human follows it (in Caddy, the placeholder
// {http.robots_guard.trap_link}; with net/http, nethttp.TrapLink).
func (e *Engine) TrapLinkFor(clientIP string) string {
	if e.trapLink == "" {
		return ""
	}
	c := limit.ClientOf(clientIP, e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)
	if c.IsZero() {
		return e.trapLink
	}
	return e.trapLink + e.trapToken(c, e.now().Unix()/86400)
}

// ownLink reports whether target ends in the token of the requesting
// client's trap link of today or yesterday (a page rendered before
// midnight, followed after it).
func (e *Engine) ownLink(req *Request, target string) bool {
	client := e.clientKey(req)
	if client.IsZero() {
		return false
	}
	path, _ := policy.SplitTarget(target)
	tok := path[strings.LastIndexByte(path, '/')+1:]
	if len(tok) != trapTokenLen {
		return false
	}
	day := e.clock(req) / int64(24*time.Hour)
	for _, d := range [...]int64{day, day - 1} {
		if hmac.Equal([]byte(tok), []byte(e.trapToken(client, d))) {
			return true
		}
	}
	return false
}
