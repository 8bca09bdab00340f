package guard

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/traps"
)

// Aggregated bans: when netBansV6 bans (IPv6) or netBansV4 bans (IPv4)
// fall inside one network (limit.NetOf: an IPv6 /48, an IPv4 /24) within
// one ban length (bans.for), the network is banned as one entry, as
// fail2ban recipes and ipset do. A flood of bans from the /64s of one
// network then takes netBansV6+1 entries of the list instead of filling
// it, and a scraper from elsewhere still finds room (TestNetworkBans,
// docs/traps.md "Aggregation" with the measurement).
//
// The cost falls on the network's other clients: an IPv6 /48 is most
// often one customer's (one site, one household of a fibre ISP), so 8
// caught /64s there say that customer is the scraper; an IPv4 /24 is
// often shared by unrelated clients (an ISP's pool, a cloud range, a
// campus), so it takes twice as many.
const (
	netBansV6 = 8
	netBansV4 = 16
	// maxNetCounts bounds the networks whose recent bans are counted.
	maxNetCounts = 10000
)

// netCounters count recent bans per network, one counter per family, of
// distinct clients: a client counted within the window is not counted
// again (a dry run bans nobody, so its trap hits would each count; a
// shared store may hand back a ban already in force).
type netCounters struct {
	v4, v6  *traps.DenialCounter
	window  int64
	counted *lru.Cache[limit.Client, int64] // client → when it was counted
}

func newNetCounters(window time.Duration) *netCounters {
	n := &netCounters{
		v4:     traps.NewDenialCounter(maxNetCounts, window, netBansV4),
		v6:     traps.NewDenialCounter(maxNetCounts, window, netBansV6),
		window: int64(window),
	}
	n.counted, _ = lru.New[limit.Client, int64](maxNetCounts)
	return n
}

// first reports whether client was not counted within the window, and
// records it now.
func (n *netCounters) first(client limit.Client, now int64) bool {
	if at, ok := n.counted.Get(client); ok && now-at < n.window {
		return false
	}
	n.counted.Add(client, now)
	return true
}

// netUntil returns when the ban of client's network ends, 0 when it has
// none: a banned network's clients are banned.
func (e *Engine) netUntil(client limit.Client, now int64) int64 {
	n, ok := limit.NetOf(client, e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)
	if !ok {
		return 0
	}
	return e.bans.Until(n, now)
}

// countNetBan counts a ban of client in its network (once per client
// within the window) and, when that makes
// the network's count, bans the network (not in dry run, which only
// logs).
func (e *Engine) countNetBan(ctx context.Context, client limit.Client, now int64, reason string) {
	n, ok := limit.NetOf(client, e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)
	if !ok || e.nets == nil || !e.nets.first(client, now) {
		return
	}
	c, count := e.nets.v6, netBansV6
	if n[1] == limit.NetBitsV4 {
		c, count = e.nets.v4, netBansV4
	}
	if !c.Add(n, now) {
		return
	}
	why := fmt.Sprintf("network: %d bans within %s, the last %s", count, time.Duration(e.cfg.Bans.For), reason)
	net := n.Format(0, 0)
	if e.cfg.DryRun {
		e.log.Warn("robots_guard: dry run: would ban a network", zap.String("network", net), zap.String("reason", why))
		e.observeBan("network", BanBanned)
		return
	}
	b := e.bans.Ban(context.WithoutCancel(ctx), n, now, time.Duration(e.cfg.Bans.For), time.Duration(e.cfg.Bans.Max), why)
	outcome := BanBanned
	if b.Dropped {
		outcome = BanDropped
	}
	e.log.Warn("robots_guard: banned a network: many of its clients were banned for ignoring robots.txt",
		zap.String("network", net), zap.String("reason", why), zap.Time("until", time.Unix(0, b.Until).UTC()), zap.Bool("dropped", b.Dropped))
	e.observeBan("network", outcome)
}
