package guard

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
	"go.uber.org/zap"
)

// ban bans client for reason (unless in dry run, or tr: Explain) and
// returns when the ban ends; in dry run, when it would end.
func (e *Engine) ban(ctx context.Context, client limit.Client, tr *trace, reason string) int64 {
	now := e.now().UnixNano()
	if tr != nil {
		return now + int64(e.cfg.Bans.For)
	}
	if client.IsZero() {
		return 0 // no address to ban: the trap request is refused, no more
	}
	b := limit.BanInfo{Until: now + int64(e.cfg.Bans.For), Strikes: 1}
	msg := "robots_guard: dry run: would ban for ignoring robots.txt"
	if !e.cfg.DryRun {
		// The ban is the fleet's, whatever the client does now: a bot
		// that hangs up must not keep its ban off the shared store.
		b = e.bans.Ban(context.WithoutCancel(ctx), client, now, time.Duration(e.cfg.Bans.For), time.Duration(e.cfg.Bans.Max), reason)
		msg = "robots_guard: banned for ignoring robots.txt"
	}
	outcome := BanBanned
	if b.Dropped {
		// Every place holds a live ban, and none is lifted for a new one
		// (a flood of addresses must not undo a ban): refused, no more.
		outcome = BanDropped
		e.log.Warn("robots_guard: ban dropped: the ban list is full of live bans",
			zap.String("client", client.Format(e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)),
			zap.String("reason", reason), zap.Int("max_bans", e.cfg.Bans.MaxEntries))
	} else {
		e.log.Warn(msg, zap.String("client", client.Format(e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix)),
			zap.String("reason", reason), zap.Time("until", time.Unix(0, b.Until).UTC()), zap.Int("strikes", b.Strikes))
	}
	e.observeBan(reason[:strings.IndexByte(reason+" ", ' ')], outcome)
	e.countNetBan(ctx, client, now, reason)
	return b.Until
}

// observeBan tells the observer of a ban's outcome, if it counts bans.
func (e *Engine) observeBan(trigger, outcome string) {
	if bo, ok := e.obs.(BanObserver); ok {
		bo.ObserveBan(trigger, outcome, e.cfg.DryRun)
	}
}

// countDenial counts a robots.txt denial (in the RFC 9309 view only: the
// decoded view can refuse what an RFC crawler may fetch) for ban_after, and
// bans the client when it reaches the count (a verified crawler never).
func (e *Engine) countDenial(ctx context.Context, req *Request, site string, ver identity.Result, tr *trace) {
	if e.banAfter == nil || tr != nil || vouched(ver) {
		return
	}
	client := e.clientKey(req)
	if client.IsZero() {
		return
	}
	if e.proxied(req, site) {
		e.observeBan("ban_after", BanProxy)
		return // a proxy that is not trusted: its visitors' denials are not one client's
	}
	if e.banAfter.Add(client, e.clock(req)) {
		e.ban(ctx, client, tr, "ban_after "+strconv.Itoa(e.cfg.Bans.After.Denials)+" denials")
	}
}

// vouched reports whether a verification earns a crawler's privileges
// (a shared budget, no bans): Verified for a registry operator, not only a
// discovered agent.
func vouched(r identity.Result) bool { return r.Verdict == identity.Verified && !r.AgentOnly }

// limitKey is the Crawl-delay budget of a client of a group of a site: per
// client-IP prefix; with crawl_delay_key "group", one per group, or, when
// verification is on, one per verified operator and group (unverified
// clients keep per-address budgets, so nobody can spend a verified
// crawler's).
func (e *Engine) limitKey(site, group string, req *Request, ver identity.Result) limit.Key {
	if e.blockScope != "" {
		site = e.blockScope // crawl_delay_scope block: one clock whatever the Host
	}
	k := limit.Key{Site: site, Group: group}
	switch {
	case e.byGroup && e.verifier == nil:
	case e.byGroup && vouched(ver):
		k.Client = ver.ClientKey()
	default:
		k.Client = e.clientKey(req)
	}
	return k
}

// clock returns the time of req's decision, read once per request: the
// ban check, the Crawl-delay limiter, ban_after and the violations report
// of one request all use it (a clock read costs 30–65 ns on some VMs).
func (e *Engine) clock(req *Request) int64 {
	if req.at == 0 {
		req.at = e.now().UnixNano()
	}
	return req.at
}

// clientKey is the client's address prefix as a limiter, ban and report
// key, parsed once per request (the zero Client when the address does not
// parse).
func (e *Engine) clientKey(req *Request) limit.Client {
	if !req.keyDone {
		req.key, req.keyDone = limit.ClientOfAddr(clientAddr(req), e.cfg.Clients.IPv4Prefix, e.cfg.Clients.IPv6Prefix), true
	}
	return req.key
}

// clientAddr is req.ClientIP parsed, once per request: verification and
// the limiter, ban and report keys all use it.
func clientAddr(req *Request) netip.Addr {
	if !req.addrDone {
		req.addr, req.addrDone = limit.ParseAddr(req.ClientIP), true
	}
	return req.addr
}

// verify checks the claims of a request (and its Web Bot Auth signature);
// with tr, it records the steps for Explain (and a request without a
// client address is not looked up).
// forwardingHeaders are the headers a proxy or CDN writes the client's
// address into.
var forwardingHeaders = [...]string{"X-Forwarded-For", "Forwarded", "X-Real-Ip", "Cf-Connecting-Ip", "True-Client-Ip", "Fastly-Client-Ip"}

// viaUntrustedProxy reports whether req came through a proxy that was not
// trusted: it carries a forwarding header, yet its client address is the
// connection's own. A crawler claim that fails verification there was
// checked against the proxy's address; it is judged as unverifiable (its
// group and "*" together), not refused as spoofed. A client that adds such
// a header itself gains nothing by it: never more than "*".
func viaUntrustedProxy(req *Request) bool {
	if req.header == nil || req.peer == "" {
		return false
	}
	found := false
	for _, h := range forwardingHeaders {
		if _, ok := req.header[h]; ok {
			found = true
			break
		}
	}
	return found && clientAddr(req) == limit.ParseAddr(req.peer)
}

// Why a crawler claim can never be verified, said once per Engine (each
// such request is counted with verification "unverifiable").
const (
	msgUntrustedProxy = "robots_guard: a crawler claim came through a proxy or CDN that is not trusted (the request carries a forwarding header, but its address is the connection's): " +
		"claims are checked against the proxy's address and can never be verified, so they are judged by their group and \"*\" together instead of refused. " +
		"Trust the proxy's addresses (Caddy: trusted_proxies with trusted_proxies_strict) so that the client's own address is checked"
	msgNotGlobal = "robots_guard: a crawler claim came from an address that is not globally reachable; " +
		"such claims are judged by their group and \"*\" together, never verified. Behind a proxy, trust the proxy's address " +
		"(Caddy: trusted_proxies with trusted_proxies_strict) so that the client's own address is checked"
)

// warnUnverifiable logs msg, once per flag, with the request's addresses
// and User-Agent.
func (e *Engine) warnUnverifiable(flag *atomic.Bool, msg string, req *Request) {
	if flag.Load() || !flag.CompareAndSwap(false, true) {
		return
	}
	e.log.Warn(msg, zap.String("client", req.ClientIP), zap.String("peer", req.peer),
		zap.String("user_agent", req.UserAgent[:min(len(req.UserAgent), maxLoggedUserAgent)]))
}

// verify checks the claims that ua (req's User-Agent, as judged) makes,
// and req's Web Bot Auth signature, if any; err says why a signature that
// is present did not verify.
func (e *Engine) verify(ctx context.Context, ua string, claims identity.Claims, req *Request, tr *trace) (identity.Result, error) {
	if e.verifier == nil {
		return identity.Result{}, nil
	}
	var addr netip.Addr
	if tr == nil || !tr.noIP {
		addr = clientAddr(req)
	}
	if tr != nil {
		x := e.verifier.ExplainRequest(ctx, ua, claims, addr, req.Signed)
		tr.verify = &x
		return x.Result, x.SignatureError
	}
	return e.verifier.VerifyRequest(ctx, ua, claims, addr, req.Signed)
}
