package guard

import (
	"hash/maphash"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/robotsguard/robotsguard/limit"
	"go.uber.org/zap"
)

// A proxy that is not trusted (its address is the request's client
// address, yet the request carries a forwarding header) puts all its
// visitors behind one address: one trap hit or ban_after would ban them
// all. The Engine notices such a peer at the requests where that matters
// (a trap hit, a counted denial, a throttle, and one request in
// proxySample of any kind), says so once per peer (a WARN
// line, SiteStatus.UntrustedProxies, the dashboard), and bans no peer that
// has forwarded for proxyClients distinct clients: its trap hits are
// refused (403 trap_unattributed) and counted, nobody banned (metric
// outcome BanProxy).
//
// A scraper can write forwarding headers itself to look like such a
// proxy: it then escapes bans (not the refusals of robots.txt, of the
// trap path, or of Crawl-delay), which is what a ban of a real proxy
// would cost every visitor behind it.
const (
	// proxyClients is how many distinct forwarded client addresses make
	// a peer a proxy.
	proxyClients = 3
	// maxPeers bounds the peers kept (least recently seen out first).
	maxPeers = 1024
	// proxySample: one request in proxySample is looked at (besides every
	// trap hit, counted denial and throttle), for the clients a peer
	// forwards for.
	proxySample = 16
)

// untrustedPeers keeps the peers seen forwarding without being trusted,
// by client prefix (an IPv6 /64 by default), so that one client rotating
// its addresses takes one place, not all of them.
type untrustedPeers struct {
	mu    sync.Mutex
	peers *lru.Cache[limit.Client, *peerSeen]
	// bySite indexes peers by the site each was first seen for, kept in
	// step with peers (evicted), so that a site's status reads its own
	// peers, not all maxPeers of them.
	bySite map[string]map[limit.Client]*peerSeen
	seed   maphash.Seed
	warned atomic.Int64 // when a new peer was last logged (Unix ns)
}

// peerSeen is one untrusted peer: the site it was first seen for, and
// the hashes of the distinct client values it forwarded (up to
// proxyClients).
type peerSeen struct {
	addr    netip.Addr // the first address seen
	site    string
	clients [proxyClients]uint64
	n       int
}

func newUntrustedPeers() *untrustedPeers {
	u := &untrustedPeers{bySite: make(map[string]map[limit.Client]*peerSeen), seed: maphash.MakeSeed()}
	u.peers, _ = lru.NewWithEvict(maxPeers, u.evicted)
	return u
}

// add keeps the new peer p under key; u.mu is held.
func (u *untrustedPeers) add(key limit.Client, p *peerSeen) {
	u.peers.Add(key, p) // may evict the least recent peer (evicted)
	m := u.bySite[p.site]
	if m == nil {
		m = make(map[limit.Client]*peerSeen)
		u.bySite[p.site] = m
	}
	m[key] = p
}

// evicted drops an evicted peer from its site's index; it runs within
// add, under u.mu.
func (u *untrustedPeers) evicted(key limit.Client, p *peerSeen) {
	if m := u.bySite[p.site]; m[key] == p {
		delete(m, key)
		if len(m) == 0 {
			delete(u.bySite, p.site)
		}
	}
}

// proxied reports whether req comes from a peer that forwards for many
// clients without being a trusted proxy (see proxyClients). It notes the
// peer, and logs it the first time it is seen.
func (e *Engine) proxied(req *Request, site string) bool {
	if !viaUntrustedProxy(req) {
		return false
	}
	peer := clientAddr(req)
	key := limit.ClientOfAddr(peer, e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)
	fwd := forwardedValue(req)
	h := maphash.String(e.untrusted.seed, fwd)
	e.untrusted.mu.Lock()
	p, ok := e.untrusted.peers.Get(key)
	if !ok {
		p = &peerSeen{addr: peer, site: site}
		e.untrusted.add(key, p)
	}
	known := false
	for _, c := range p.clients[:p.n] {
		known = known || c == h
	}
	if !known && p.n < proxyClients {
		p.clients[p.n] = h
		p.n++
	}
	proxy := p.n >= proxyClients
	e.untrusted.mu.Unlock()
	if last, now := e.untrusted.warned.Load(), e.now().UnixNano(); !ok && now-last > int64(time.Minute) && e.untrusted.warned.CompareAndSwap(last, now) {
		// At most one line a minute: peers are what clients make them.
		e.log.Warn("robots_guard: requests carry forwarding headers (X-Forwarded-For, Forwarded, ...) from a peer that is not a trusted proxy: "+
			"its visitors share its address for bans, traps and Crawl-delay. List its addresses in the server's trusted_proxies (Caddy, with trusted_proxies_strict), "+
			"or drop the headers at the edge if no proxy stands in front. A peer that forwards for several clients is never banned",
			zap.String("peer", peer.String()), zap.String("site", site), zap.String("forwarded", truncate(fwd, 100)))
	}
	return proxy
}

// forwardedValue is the first forwarding header's value that req carries.
func forwardedValue(req *Request) string {
	for _, name := range forwardingHeaders {
		if v := req.header[name]; len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// untrustedFor returns the untrusted peers first seen for site, in
// address order.
func (e *Engine) untrustedFor(site string) []string {
	e.untrusted.mu.Lock()
	m := e.untrusted.bySite[site]
	out := make([]string, 0, len(m))
	for _, p := range m {
		out = append(out, p.addr.String())
	}
	e.untrusted.mu.Unlock()
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return out
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
