package sites

import (
	"math"
	"net/netip"
	"strings"
)

// Shares of Config.NewSitesPerSecond per client prefix.
const (
	// shareDiv: a client prefix may spend 1/shareDiv of the rate.
	shareDiv = 8
	// maxShares bounds the prefixes tracked; past it the table starts
	// afresh (a prefix forgotten gets a full share again, the global
	// bucket still bounds the fetches).
	maxShares = 4096
	// Prefix lengths that make one client network.
	shareBits4, shareBits6 = 24, 48
)

// share is the token bucket of one client prefix.
type share struct {
	tokens float64
	last   int64 // unix ns
}

// firstFetchAllowed takes a token for the first fetch of e, unless a fetch
// of e is already under way (joining it costs nothing) or e is one of the
// named sites. A token is taken from the client prefix's share and from
// the global bucket: a flood from one network spends its share only.
func (c *Cache) firstFetchAllowed(e *Site, client string) bool {
	if math.IsInf(c.newRate, 1) || c.named.has(e.key.host) {
		return true
	}
	now := c.now()
	c.newMu.Lock()
	defer c.newMu.Unlock()
	if !c.newLast.IsZero() {
		c.newTokens = min(c.newBurst, c.newTokens+now.Sub(c.newLast).Seconds()*c.newRate)
	}
	c.newLast = now
	if e.firstFetch {
		return true
	}
	if c.newTokens < 1 {
		return false
	}
	var sh *share
	if p, ok := clientPrefix(client); ok {
		rate := c.newRate / shareDiv
		burst := max(1, c.newBurst/shareDiv)
		if sh = c.shares[p]; sh == nil {
			if len(c.shares) >= maxShares {
				clear(c.shares)
			}
			if c.shares == nil {
				c.shares = make(map[netip.Prefix]*share)
			}
			sh = &share{tokens: burst, last: now.UnixNano()}
			c.shares[p] = sh
		}
		sh.tokens = min(burst, sh.tokens+float64(now.UnixNano()-sh.last)/1e9*rate)
		sh.last = now.UnixNano()
		if sh.tokens < 1 {
			return false
		}
		sh.tokens--
	}
	c.newTokens--
	e.firstFetch = true
	return true
}

// clientPrefix returns the network of a client address (host or
// host:port): its /24 or /48.
func clientPrefix(client string) (netip.Prefix, bool) {
	if client == "" {
		return netip.Prefix{}, false
	}
	a, err := netip.ParseAddr(client)
	if err != nil {
		ap, err := netip.ParseAddrPort(client)
		if err != nil {
			return netip.Prefix{}, false
		}
		a = ap.Addr()
	}
	a = a.Unmap().WithZone("")
	bits := shareBits6
	if a.Is4() {
		bits = shareBits4
	}
	p, err := a.Prefix(bits)
	return p, err == nil
}

// names is a set of exact host names. A wildcard ("*.example.com") is not
// kept: it covers any number of names, and exempting them would let a
// flood of random subdomains spend fetches without bound.
type names map[string]struct{}

// makeNames compiles host names, lower-cased, without a trailing dot or a
// port; wildcards and placeholders are left out.
func makeNames(list []string) names {
	var n names
	for _, h := range list {
		h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		if name, _ := SplitHost(h); name != "" {
			h = name
		}
		if h == "" || strings.ContainsAny(h, "*{") {
			continue
		}
		if n == nil {
			n = make(names)
		}
		n[h] = struct{}{}
	}
	return n
}

// has reports whether host (canonical: lower-case, no port) is named.
func (n names) has(host string) bool {
	_, ok := n[strings.TrimSuffix(host, ".")]
	return ok
}

// allowList is the hosts that get a robots.txt when Config.Origin is set:
// the exact names of Config.SiteNames and its one-label wildcards.
type allowList struct {
	names    names
	suffixes []string // ".example.com" for "*.example.com"
}

// makeAllowList compiles Config.SiteNames into an allowList: names as
// makeNames keeps them, and "*.name" wildcards as suffixes.
func makeAllowList(list []string) allowList {
	a := allowList{names: makeNames(list)}
	for _, h := range list {
		h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		if rest, ok := strings.CutPrefix(h, "*."); ok && rest != "" && !strings.ContainsAny(rest, "*{:") {
			a.suffixes = append(a.suffixes, "."+rest)
		}
	}
	return a
}

// has reports whether host (canonical: lower-case, no port) is one of the
// names, or one label in front of a wildcard's suffix.
func (a allowList) has(host string) bool {
	if a.names.has(host) {
		return true
	}
	for _, s := range a.suffixes {
		if len(host) > len(s) && strings.HasSuffix(host, s) && strings.IndexByte(host[:len(host)-len(s)], '.') < 0 {
			return true
		}
	}
	return false
}
