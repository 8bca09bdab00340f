package middleware

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/robotsguard/robotsguard/policy"
)

// trapSet matches request targets against Config.Traps, compiled once as
// the Disallow lines of a robots.txt of one "*" group, so that trap
// patterns mean exactly what robots.txt patterns mean.
type trapSet struct {
	patterns []string
	match    *policy.Robots
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
	return &trapSet{patterns: patterns, match: policy.Parse([]byte(b.String()))}
}

// hit returns the trap pattern target matches, if any.
func (t *trapSet) hit(target string) (string, bool) {
	d := t.match.Decide("", target)
	if d.Allowed || d.Rule == nil {
		return "", false
	}
	return d.Rule.Pattern, true
}

// agentsOf returns the group tokens of st's robots.txt, "*" included when
// there is a global group, computed once per copy.
func agentsOf(st *siteState) []string {
	if p := st.agents.Load(); p != nil {
		return *p
	}
	seen := map[string]bool{}
	var out []string
	for _, g := range st.robots.Groups() {
		for _, a := range g.Agents {
			if a != "" && !seen[strings.ToLower(a)] {
				seen[strings.ToLower(a)] = true
				out = append(out, a)
			}
		}
	}
	st.agents.Store(&out)
	return out
}

// trapArmed reports whether r (with group tokens agents) disallows target
// for every bot: every group, and the "*" group that judges bots no group
// names. When it does not, by names who may fetch it.
func trapArmed(r *policy.Robots, agents []string, target string) (armed bool, by string) {
	star := false
	for _, a := range agents {
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
// the pattern up to its first wildcard, without a final '$'.
func trapPath(p string) string {
	if i := strings.IndexByte(p, '*'); i >= 0 {
		p = p[:i]
	}
	p = strings.TrimSuffix(p, "$")
	if p == "" {
		p = "/"
	}
	return p
}

// checkTraps logs each trap that a new copy of site's robots.txt does not
// arm, with the group that allows it; traps are checked again for each
// request, so this is the operator's early warning.
func (e *Enforcer) checkTraps(site string, r *policy.Robots) {
	st := &siteState{robots: r}
	agents := agentsOf(st)
	for _, p := range e.traps.patterns {
		if ok, by := trapArmed(r, agents, trapPath(p)); !ok {
			e.log.Warn("robots_guard: trap not armed: robots.txt does not disallow it for every bot, so it could catch a compliant crawler",
				zap.String("site", site), zap.String("trap", p), zap.String("allowed_for", by))
		}
	}
}

// denialCounter counts robots.txt denials per client within a window
// (Config.BanAfter), for at most max clients; when full, windows that are
// over go first, then arbitrary ones.
type denialCounter struct {
	mu     sync.Mutex
	m      map[[16]byte]denials
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
func (c *denialCounter) add(client [16]byte, now int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[client]
	if !ok || now-d.start > c.window {
		if !ok && len(c.m) >= c.max {
			for k, v := range c.m {
				if now-v.start > c.window || len(c.m) >= c.max {
					delete(c.m, k)
				}
				if len(c.m) < c.max*9/10 {
					break
				}
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
func (e *Enforcer) Bans() []BanStatus {
	if e.bans == nil {
		return nil
	}
	out := []BanStatus{}
	for _, b := range e.bans.List(e.now().UnixNano()) {
		out = append(out, BanStatus{Client: prefixString(b.Client, e.cfg.IPv4Prefix, e.cfg.IPv6Prefix),
			Until: time.Unix(0, b.Until).UTC(), Strikes: b.Strikes, Reason: b.Reason})
	}
	return out
}

// Unban lifts the ban of the client whose address (or prefix, as Bans
// shows it) is given, on every instance that shares the store, and
// forgets its earlier bans. It reports whether there was one.
func (e *Enforcer) Unban(client string) (bool, error) {
	if e.bans == nil {
		return false, errors.New("robots_guard: unban: no bans: neither traps nor ban_after is configured")
	}
	addr, _, _ := strings.Cut(client, "/")
	if _, err := netip.ParseAddr(addr); err != nil {
		return false, fmt.Errorf("robots_guard: unban: %q is not an address or prefix such as 203.0.113.7 or 2001:db8::/64", client)
	}
	k := ipKey(addr, e.cfg.IPv4Prefix, e.cfg.IPv6Prefix)
	ok := e.bans.Unban(k)
	if ok {
		e.log.Info("robots_guard: unbanned", zap.String("client", prefixString(k, e.cfg.IPv4Prefix, e.cfg.IPv6Prefix)))
	}
	return ok, nil
}

// TrapArmed reports whether the robots.txt r arms the trap pattern: whether
// it disallows the path the pattern covers (up to its first '*') for every
// bot, every group and the "*" group. When it does not, allowedFor names
// who may fetch it. "caddy robots lint --trap" reports it.
func TrapArmed(r *policy.Robots, trap string) (armed bool, allowedFor string) {
	return trapArmed(r, agentsOf(&siteState{robots: r}), trapPath(trap))
}

// CheckTrap checks the form of a trap pattern, as Config.Traps does.
func CheckTrap(p string) error { return checkTrap(p) }
