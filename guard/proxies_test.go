package guard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/internal/testclock"
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
