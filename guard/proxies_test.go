package guard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/traps"
)

// TestUntrustedProxyNotBanned: a peer that is no trusted proxy but sends
// X-Forwarded-For for many clients (a proxy the operator forgot to list)
// is said once (a WARN, SiteStatus.UntrustedProxies) and never banned: its
// trap hit is refused, nobody banned, and its visitors go on; a client
// that comes directly is banned as before.
func TestUntrustedProxyNotBanned(t *testing.T) {
	clk := testclock.New()
	e, logs := trapEngine(t, trapRobots, clk, func(c *Config) { c.Traps.Links = traps.LinksStatic })
	send := func(remote, xff, target string) Verdict {
		r := httptest.NewRequest(http.MethodGet, "http://example.com"+target, nil)
		r.RemoteAddr = remote
		r.Header.Set("User-Agent", uaChrome)
		browserHeaders(r.Header)
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		return e.DecideHTTP(r, nil, r.RemoteAddr, nil) // the address as a server that trusts no proxy has it
	}
	const proxy = "198.51.100.50:4000"
	// Its visitors browse: one request in proxySample is looked at; 400
	// leave fewer than proxyClients looked at with odds below 1e-8.
	for i := range 400 {
		send(proxy, fmt.Sprintf("203.0.113.%d", i%200+1), "/page")
	}
	if v := send(proxy, "203.0.113.77", "/no-robots/x"); v.Action != Deny || v.Reason != ReasonTrapUnattributed || v.BanUntil != 0 {
		t.Fatalf("a trap hit through the proxy: %v %v until %d, want 403 and no ban", v.Action, v.Reason, v.BanUntil)
	}
	if v := send(proxy, "203.0.113.5", "/page"); v.Action != Allow {
		t.Fatalf("the proxy's visitors after the trap hit: %v %v", v.Action, v.Reason)
	}
	if n := logs.FilterMessageSnippet("not a trusted proxy").Len(); n != 1 {
		t.Errorf("%d WARN lines for one peer, want 1", n)
	}
	var listed bool
	for _, s := range e.Sites() {
		listed = listed || strings.Join(s.UntrustedProxies, ",") == "198.51.100.50"
	}
	if !listed {
		t.Errorf("the peer is not in SiteStatus.UntrustedProxies: %+v", e.Sites())
	}
	if v := send("198.51.100.60:4000", "", "/no-robots/x"); v.Reason != ReasonTrap || v.BanUntil == 0 {
		t.Fatalf("a direct client's trap hit: %v %v", v.Action, v.Reason)
	}
}

// TestUntrustedPeersBySite: the untrusted peers are indexed by the site
// each was first seen for, in step with the bounded set (an evicted peer
// leaves its site's list), so that a site's status reads only its own.
func TestUntrustedPeersBySite(t *testing.T) {
	u := newUntrustedPeers()
	e := &Engine{untrusted: u}
	for i := range maxPeers + 10 {
		site := "https://a.example"
		if i%2 == 1 {
			site = "https://b.example"
		}
		addr := netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)})
		u.mu.Lock()
		u.add(limit.ClientOfAddr(addr, 32, 64), &peerSeen{addr: addr, site: site})
		u.mu.Unlock()
	}
	a, b := e.untrustedFor("https://a.example"), e.untrustedFor("https://b.example")
	if len(a)+len(b) != maxPeers || len(a) != maxPeers/2 {
		t.Fatalf("indexed %d + %d peers, want %d in all, %d each", len(a), len(b), maxPeers, maxPeers/2)
	}
	if slices.Contains(a, "198.51.0.0") || !slices.Contains(a, "198.51.4.8") {
		t.Errorf("an evicted peer is still listed, or a kept one is not: %v", a[:4])
	}
	if got := e.untrustedFor("https://c.example"); got != nil {
		t.Errorf("a site with no peers: %v", got)
	}
}
