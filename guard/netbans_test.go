package guard

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/limit"
)

// TestNetworkBans: an attacker with an IPv6 /47 makes 100,000 of its /64s
// follow their own trap links. After 8 bans in one of its /48s, the /48 is
// banned as one entry and its other /64s are refused as banned: the flood
// holds 18 entries of the list, a scraper from elsewhere is still banned,
// a client of another network is not refused, and the network's ban is
// listed and lifted as the prefix.
func TestNetworkBans(t *testing.T) {
	clk := testclock.New()
	e, _ := trapEngine(t, trapRobots, clk, nil)
	trap := func(ip string) Verdict {
		return e.Decide(context.Background(), Request{Host: "example.com", Target: e.TrapLinkFor(exampleSite, ip), UserAgent: uaChrome, ClientIP: ip, Method: "GET"})
	}
	base := netip.MustParseAddr("2001:db8:4::").As16() // 2001:db8:4::/47 holds the /48s :4 and :5
	for i := range 100000 {
		a := base
		a[5] = 4 | byte(i&1) // :4 or :5
		a[6], a[7] = byte(i>>9), byte(i>>1)
		trap(netip.AddrFrom16(a).String())
	}
	held := e.bans.(*limit.MemoryBans).Len()
	if held > 2*(netBansV6+1) {
		t.Fatalf("the flood holds %d entries, want at most %d", held, 2*(netBansV6+1))
	}
	if v := trap("2001:db8:7777::1"); v.Reason != ReasonTrap || v.BanUntil == 0 {
		t.Fatalf("a scraper from elsewhere: %v %v", v.Action, v.Reason)
	}
	if v := at(e, uaChrome, "/page", "2001:db8:4:ffff::1"); v.Reason != ReasonBanned {
		t.Fatalf("a /64 of the flood's network that never hit the trap: %v %v, want banned", v.Action, v.Reason)
	}
	if v := at(e, uaChrome, "/page", "2001:db8:6::1"); v.Action != Allow {
		t.Fatalf("a neighbour outside the /47: %v %v", v.Action, v.Reason)
	}
	nets := 0
	for _, b := range e.Bans(t.Context()) {
		if b.Client == "2001:db8:4::/48" || b.Client == "2001:db8:5::/48" {
			nets++
		}
	}
	if nets != 2 {
		t.Fatalf("%d network bans listed, want 2: %+v", nets, e.Bans(t.Context()))
	}
	if ok, err := e.Unban(t.Context(), "2001:db8:4::/48"); !ok || err != nil {
		t.Fatalf("unban of a network: %v %v", ok, err)
	}
	if v := at(e, uaChrome, "/page", "2001:db8:4:ffff::1"); v.Action != Allow {
		t.Fatalf("after the network's unban: %v %v", v.Action, v.Reason)
	}
	t.Logf("the /47 flood holds %d of %d entries", held, 100000)
}

// TestNetworkBansIPv4: 16 bans in one /24 ban the /24; 15 in another do
// not.
func TestNetworkBansIPv4(t *testing.T) {
	e, _ := trapEngine(t, trapRobots, testclock.New(), nil)
	trap := func(ip string) {
		e.Decide(context.Background(), Request{Host: "example.com", Target: e.TrapLinkFor(exampleSite, ip), UserAgent: uaChrome, ClientIP: ip, Method: "GET"})
	}
	for i := range netBansV4 {
		trap(fmt.Sprintf("203.0.113.%d", i+1))
		if i < netBansV4-1 {
			trap(fmt.Sprintf("198.51.100.%d", i+1))
		}
	}
	if v := at(e, uaChrome, "/page", "203.0.113.200"); v.Reason != ReasonBanned {
		t.Errorf("a client of the /24 with %d bans: %v %v", netBansV4, v.Action, v.Reason)
	}
	if v := at(e, uaChrome, "/page", "198.51.100.200"); v.Action != Allow {
		t.Errorf("a client of the /24 with %d bans: %v %v", netBansV4-1, v.Action, v.Reason)
	}
}

// BenchmarkBrowserBansHeld: a browser's request while the ban list holds
// bans (its own address and its network are looked up).
func BenchmarkBrowserBansHeld(b *testing.B) {
	e, _ := trapEngine(b, trapRobots, testclock.New(), nil)
	e.Decide(context.Background(), Request{Host: "example.com", Target: e.TrapLinkFor(exampleSite, "192.0.2.99"), UserAgent: uaChrome, ClientIP: "192.0.2.99", Method: "GET"})
	req := Request{Host: "example.com", Target: "/page", UserAgent: uaChrome, ClientIP: "198.51.100.7"}
	b.ReportAllocs()
	for b.Loop() {
		e.Decide(context.Background(), req)
	}
}

// TestNetworkBanCountsClients: a network is counted by its distinct banned
// clients: in dry run (which bans nobody) one client's repeated trap hits
// would ban its network after 8 of them otherwise.
func TestNetworkBanCountsClients(t *testing.T) {
	clk := testclock.New()
	e, logs := trapEngine(t, trapRobots, clk, func(c *Config) { c.DryRun = true })
	const ip = "2001:db8:9::1"
	for range 3 * netBansV6 {
		v := e.Decide(context.Background(), Request{Host: "example.com", Target: e.TrapLinkFor(exampleSite, ip), UserAgent: uaChrome, ClientIP: ip, Method: "GET"})
		if v.Reason != ReasonTrap {
			t.Fatalf("%v %v", v.Action, v.Reason)
		}
	}
	if n := logs.FilterMessageSnippet("would ban a network").Len(); n != 0 {
		t.Fatalf("one client's trap hits would ban its network (%d lines)", n)
	}
	for i := range netBansV6 {
		ip := fmt.Sprintf("2001:db8:9:%x::1", i+1)
		e.Decide(context.Background(), Request{Host: "example.com", Target: e.TrapLinkFor(exampleSite, ip), UserAgent: uaChrome, ClientIP: ip, Method: "GET"})
	}
	if n := logs.FilterMessageSnippet("would ban a network").Len(); n != 1 {
		t.Fatalf("8 more clients of the /48: %d lines, want 1", n)
	}
}
