package guard

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/robotsguard/robotsguard/classify"
	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/policy"
	"github.com/robotsguard/robotsguard/sites"
	"github.com/robotsguard/robotsguard/traps"
)

// maxUserAgent is the length of the longest User-Agent header that is read
// whole (4 times the longest of the 235 real browser headers and 2,116
// crawler headers in testdata, 285 bytes). A longer header is a bot's, and
// only its first maxUserAgent bytes choose its group, so the work per
// request stays bounded whatever a client sends.
const maxUserAgent = 1024

// maxHostName is the longest host name a Host header may carry (RFC 1035
// §2.3.4: 253 bytes as text); maxLoggedUserAgent is how much of a
// User-Agent a log line shows (its full length is a field of its own).
const (
	maxHostName        = 253
	maxLoggedUserAgent = 256
)

// hostTooLong reports whether the host name of a Host header (without
// port and brackets) is longer than maxHostName.
func hostTooLong(host string) bool {
	name, _ := sites.SplitHost(host)
	return len(name) > maxHostName
}

// Decide decides what to do with one request; it does not write anything.
// The steps: /robots.txt and the Engine's own fetches pass; the site's
// robots.txt is looked up (fetched when needed); clients that are not bots
// pass; the path is judged for the bot's group in the RFC 9309 view and in
// the decoded view, and either one disallowing it denies it; an allowed path
// is then subject to the group's Crawl-delay.
func (e *Engine) Decide(ctx context.Context, req Request) Verdict {
	return e.decideReq(ctx, &req)
}

// decideReq is Decide for a Request the caller keeps (the net/http
// front's), so that it is not copied again: Request and Verdict are passed
// by pointer from here on.
func (e *Engine) decideReq(ctx context.Context, req *Request) Verdict {
	v := e.decide(ctx, req, nil)
	if v.Action != Allow || v.Bot || e.obs != nil {
		e.done(req, &v) // a browser that passes is counted nowhere but the observer
	}
	return v
}

// trace collects what Explain shows beside the verdict. When it is given,
// decide spends no Crawl-delay budget.
type trace struct {
	ent     *sites.Site
	st      *sites.State
	d       policy.Decision
	decided bool
	noIP    bool // no client address given: claims are not looked up
	// alsoStar: the claim is not verified, and "*" was applied too.
	alsoStar bool
	verify   *identity.Explanation
	// signal: the crawler's purpose was checked against the group's
	// Content-Signal lines (the answer is in the verdict's fields, or
	// signalVal when it allowed).
	signal     bool
	signalVal  policy.Signal
	signalRule *policy.SignalRule
}

// decide decides req (with tr, for Explain): an undeclared bot's verdict
// is a dry run with bots.undeclared report.
func (e *Engine) decide(ctx context.Context, req *Request, tr *trace) Verdict {
	v := e.decideFull(ctx, req, tr)
	if v.Undeclared != "" && e.cfg.Bots.Undeclared == classify.UndeclaredReport {
		v.DryRun = true
	}
	return v
}

// alsoStar is the file whose "*" group applies too, beside the agent's
// own: r for an unproven claim of a specific group, nil otherwise.
func alsoStar(unproven bool, agent policy.Agent, r *policy.Robots) *policy.Robots {
	if unproven && agent.Specific() {
		return r
	}
	return nil
}

// undeclaredRule names the rule by which req's other headers contradict
// the browser its header names (info): an undeclared bot, judged by "*";
// "" for none, or a header already a bot's.
func undeclaredRule(req *Request, info *classify.Info, bot bool) string {
	if bot || !info.Browser || !req.Evidence.Read {
		return ""
	}
	req.Evidence.HTTPS = req.Scheme == "https"
	if r := info.Undeclared(req.Evidence); r != nil {
		return r.Name
	}
	return ""
}

// decideFull is decide without the dry run of bots.undeclared report.
func (e *Engine) decideFull(ctx context.Context, req *Request, tr *trace) Verdict {
	// The guard's own robots.txt fetch passes.
	if sites.IsSelfFetch(ctx, req.peer) {
		return Verdict{Reason: ReasonInternal, DryRun: e.cfg.DryRun}
	}
	target, targetOK := policy.RequestTarget(req.Target)
	if targetOK && policy.IsRobotsTxt(target) {
		return Verdict{Reason: ReasonRobotsTxt, DryRun: e.cfg.DryRun}
	}
	ua, bot := req.UserAgent, false
	if len(ua) > maxUserAgent {
		// No browser sends this much: a bot, judged by the group its
		// header's first maxUserAgent bytes choose, for bounded work.
		ua, bot = ua[:maxUserAgent], true
	}
	info := e.classes.Lookup(ua)
	bot = bot || info.Bot // a header that claims an operator is a bot
	undeclared := undeclaredRule(req, info, bot)
	bot = bot || undeclared != ""
	if len(req.Host) > maxHostName && hostTooLong(req.Host) {
		// No DNS name is this long (RFC 1035): the Host is garbage, and
		// no site, cache entry or store key is made of it. Bots are
		// refused; others pass to the site, which answers as it will.
		v := Verdict{Bot: bot, DryRun: e.cfg.DryRun, Reason: ReasonNotBot, Undeclared: undeclared}
		if bot || !info.Browser {
			v.Bot, v.Action, v.Reason = true, Deny, ReasonBadTarget
		}
		return v
	}
	// Browsers never wait for a robots.txt fetch; bots and unknown
	// clients (which the site's own groups may name) do.
	ent, st := e.sites.GetRequest(ctx, req.Scheme, req.Host, req.Port, req.Origin,
		bot || !info.Browser || tr != nil || e.trapTarget(target, targetOK), req.ClientIP)
	if tr != nil {
		tr.ent, tr.st = ent, st
	}
	v := e.siteVerdict(req, tr, ent)
	agent, groupClaims := info.Agent(st.Robots, ua, e.verifier)
	if undeclared != "" {
		v.Undeclared, agent, groupClaims = undeclared, st.Robots.Agent(""), 0 // "*", whatever group its header names
	}
	var ver identity.Result
	unproven := false // judged by "*" as well as by its group
	if claims := info.Claims | groupClaims; claims != 0 || req.Signed != nil && e.verifier != nil {
		var sigErr error
		ver, sigErr = e.verify(ctx, ua, claims, req, tr)
		if sigErr != nil && e.signatureStops(&v, sigErr, ver, claims, req) {
			v.Group, v.Verification, v.Operator = agent.Group(), ver.Verdict, ver.Operator
			return v
		}
		if ver.Verdict == identity.Spoofed && viaUntrustedProxy(req) {
			e.proxyProvesNothing(req, tr, &ver)
		}
		v.Verification, v.Operator, v.Method = ver.Verdict, ver.Operator, ver.Method
		switch {
		case ver.Verdict == identity.Spoofed && e.denySpoof:
			v.Bot, v.Group = true, agent.Group()
			v.Action, v.Reason = Deny, ReasonSpoofed
			return v
		case ver.Verdict == identity.Spoofed:
			unproven = true
		case ver.Verdict == identity.Unverifiable:
			// Nothing proven: the header earns no more than "*", and
			// escapes none of its own group's rules. A failed reverse-DNS
			// check (which the owner of the address can cause) counts
			// as proof only with on_dns_error "header".
			unproven = !ver.DNSFailed || e.starOnDNS
			if ver.NotGlobal {
				e.warnUnverifiable(&e.warnedNG, msgNotGlobal, req)
			}
		}
		bot = bot || claims != 0 || ver.Verdict == identity.Verified
	}
	// Bans, and traps that ban: never for a verified crawler.
	if e.bans != nil && !vouched(ver) && e.banned(ctx, req, tr, &v, ent, st, agent, target, targetOK, bot) {
		return v
	}
	var passes bool
	if bot, passes = e.personAgent(&v, info, ver, agent, bot); passes {
		return v
	}
	if !bot && !agent.Specific() {
		return v
	}
	v.Bot, v.Class = true, info.Class
	v.Group = agent.Group()
	v.Crawler = e.crawlerOf(info, agent)
	if e.siteStops(&v, st, targetOK) {
		return v
	}
	e.judge(ctx, req, tr, &v, agent, alsoStar(unproven, agent, st.Robots), target, ver)
	e.checkLicense(ctx, req, &v, st.Robots, target, targetOK)
	if v.Action == Throttle && tr == nil && !e.byGroup {
		e.proxied(req, v.Site) // said once per peer: its visitors share one budget
	}
	return v
}

// personAgent judges an agent that fetches for a person (info.Class): it
// reports whether the request passes as one (v says so) and whether it is
// judged as a bot. "*" is about crawls; only a group that names such an
// agent could refuse it (person_agents own), once it is verified as its
// own operator's (a crawler verified as another operator's earns nothing
// by naming one in its header), or when no operator can vouch for it: a
// person's reader, link preview or image proxy
// (classify.Info.UnverifiablePersonAgent), which person_agents star judges
// by "*" as every crawler.
func (e *Engine) personAgent(v *Verdict, info *classify.Info, ver identity.Result, agent policy.Agent, bot bool) (isBot, passes bool) {
	if info.Class == "" {
		return bot, false
	}
	switch {
	case ver.Verdict == identity.Verified && ver.Operator == info.PersonOperator && !agent.Specific() && e.personOwn:
		v.Bot, v.Class, v.Reason = true, info.Class, ReasonPersonAgent
		return true, true
	case bot:
		return true, false
	case !e.personOwn:
		return true, false
	case !agent.Specific():
		v.Class, v.Reason = info.Class, ReasonPersonAgent
		return false, true
	}
	return false, false
}

// crawlerOf is the crawler whose purpose Content-Signal judges: the
// strictest of those the header names (info.Crawler) and the one whose
// group was chosen, so that a second token earns no looser reading. (An
// address listed in a JAFAR feed for some of its operator's crawlers
// verifies only those: a search crawler's header from a training
// crawler's addresses is spoofed, not read as search.)
func (e *Engine) crawlerOf(info *classify.Info, agent policy.Agent) *identity.CrawlerPurpose {
	cp := info.Crawler
	if agent.Specific() && e.purposes != nil {
		if g := e.purposes.Group(agent.Group()); g != nil && (cp == nil || g.Purpose > cp.Purpose) {
			cp = g
		}
	}
	return cp
}

// signatureStops stops (in v) a request whose Web Bot Auth signature did
// not verify for a reason the draft answers itself
// (draft-ietf-webbotauth-httpsig-protocol-01): a nonce another client
// presented before within its window (429: sign again, with a fresh
// nonce), or signature headers that cannot be read on a request that
// claims a signing agent (400: its Signature-Agent, or a User-Agent that
// names an operator with signature agents) that its address neither
// proves nor disproves (ver: a spoofed claim gets its 403, reported, and
// its trap and ban checks). Other failures prove nothing and stop
// nothing: the claim falls back to the address checks. It reports whether
// v stops the request.
func (e *Engine) signatureStops(v *Verdict, err error, ver identity.Result, claims identity.Claims, req *Request) bool {
	switch {
	case errors.Is(err, identity.ErrReplayed):
		v.Bot, v.Action, v.Reason, v.RetryAfter = true, Throttle, ReasonSignatureReplayed, time.Second
		return true
	case errors.Is(err, identity.ErrMalformed) && ver.Verdict != identity.Verified && ver.Verdict != identity.Spoofed && e.claimsSigner(claims, req):
		v.Bot, v.Action, v.Reason = true, Deny, ReasonBadSignature
		return true
	}
	return false
}

// claimsSigner reports whether req claims a signing agent: it sends a
// Signature-Agent, or claims an operator that has signature agents.
func (e *Engine) claimsSigner(claims identity.Claims, req *Request) bool {
	if req.Signed != nil && len(req.Signed.Header["Signature-Agent"]) > 0 {
		return true
	}
	for _, name := range e.verifier.OperatorNames(claims) {
		if e.verifier.SignsFor(name) {
			return true
		}
	}
	return false
}

// siteVerdict is the verdict that decide starts from for a request of
// ent's site. Now and then, whoever the client, it looks at the request's
// forwarding headers (proxied), so that a proxy that is not trusted is
// known by the clients it forwards for before its first trap hit.
func (e *Engine) siteVerdict(req *Request, tr *trace, ent *sites.Site) Verdict {
	v := Verdict{Site: ent.Name(), SiteLabel: sites.OtherSites, DryRun: e.cfg.DryRun}
	if ent.Named() {
		v.SiteLabel = v.Site
	}
	if tr == nil && rand.Uint32()%proxySample == 0 {
		e.proxied(req, v.Site)
	}
	return v
}

// siteStops stops (in v) a bot's request that the site's state decides
// before any rule: a first fetch postponed, an unknown site, an
// unreachable robots.txt (unless on_unreachable allows), or a target with
// no path; it reports whether it did.
func (e *Engine) siteStops(v *Verdict, st *sites.State, targetOK bool) bool {
	switch {
	case st.Postponed:
		v.Action, v.Reason, v.RetryAfter = Throttle, ReasonNewSiteRate, time.Second
	case st.Unknown:
		v.Action, v.Reason = Deny, ReasonUnknownSite
	case st.Unreachable && !e.allowUnrch:
		v.Action, v.Reason = Deny, ReasonUnreachable
	case !targetOK:
		v.Action, v.Reason = Deny, ReasonBadTarget
	default:
		return false
	}
	return true
}

// proxyProvesNothing makes a spoofed verdict unverifiable: the address
// checked is a proxy's, not the client's, and proves nothing either way.
func (e *Engine) proxyProvesNothing(req *Request, tr *trace, ver *identity.Result) {
	ver.Verdict = identity.Unverifiable
	if tr != nil && tr.verify != nil {
		tr.verify.Verdict = ver.Verdict
		tr.verify.Steps = append(tr.verify.Steps, "the request carries a forwarding header but its address is the connection's: "+
			"a proxy that is not trusted, whose address proves nothing (unverifiable, not spoofed)")
		return
	}
	e.warnUnverifiable(&e.warnedProxy, msgUntrustedProxy, req)
}

// banned stops (in v) a request of a banned client, or one that a trap
// catches, which it bans; it reports whether it stopped it.
func (e *Engine) banned(ctx context.Context, req *Request, tr *trace, v *Verdict, ent *sites.Site, st *sites.State, agent policy.Agent, target string, targetOK, bot bool) bool {
	if e.bansActive() {
		client := e.clientKey(req)
		until := e.bans.Until(client, e.clock(req))
		if until == 0 {
			until = e.netUntil(client, e.clock(req)) // its network's ban (aggregated)
		}
		if until != 0 && !client.IsZero() {
			v.Bot, v.Group = bot || agent.Specific(), agent.Group()
			v.Action, v.Reason, v.BanUntil = Deny, ReasonBanned, until
			return true
		}
	}
	if e.traps == nil || !targetOK || st.Unreachable {
		return false
	}
	i, ok := e.traps.Hit(target)
	if !ok || !e.trapReady(ent, i) {
		return false
	}
	if armed, _ := traps.ArmedPath(st.Robots, target); !armed {
		return false
	}
	switch {
	case e.trapLink == "" && !navigation(req):
		return false // trap_links static: a browser made to load it
	case e.trapLink != "" && !e.ownLink(req, ent.Name(), target):
		// Not this client's own link: maybe one someone else put in
		// front of it. Refused, nobody banned.
		v.Bot, v.Group = bot || agent.Specific(), agent.Group()
		v.Action, v.Reason = Deny, ReasonTrapUnattributed
		return true
	}
	v.Bot, v.Group = bot || agent.Specific(), agent.Group()
	if tr == nil && e.proxied(req, ent.Name()) {
		// A proxy that is not trusted, forwarding for many: banning its
		// address would refuse every visitor behind it.
		v.Action, v.Reason = Deny, ReasonTrapUnattributed
		e.observeBan("trap", BanProxy)
		return true
	}
	v.Action, v.Reason = Deny, ReasonTrap
	v.BanUntil = e.ban(ctx, e.clientKey(req), tr, "trap "+e.traps.Patterns()[i]+" on "+ent.Name())
	return true
}

// judge decides (in v) a bot's request for target by its group's rules: a
// path disallowed in the RFC 9309 view or in a decoded view is denied, an
// allowed one is subject to the group's Crawl-delay. With also (for a
// claim that is not verified: agent's file) the "*" group's rules apply too: the path must be
// allowed by both, and the longer Crawl-delay applies; v.Group is "*" when
// a rule of "*" decides.
func (e *Engine) judge(ctx context.Context, req *Request, tr *trace, v *Verdict, agent policy.Agent, also *policy.Robots, target string, ver identity.Result) {
	d := agent.Decide(target)
	var star policy.Agent
	group := v.Group  // the claimed group: the budget's key
	starOnly := false // "*" refused what the claimed group allows
	if also != nil {
		star = also.Agent("")
		if d = policy.Both(d, star.Decide(target)); !d.Allowed && d.Group != v.Group {
			v.Group, starOnly = d.Group, true // "*"'s rule decided
		}
	}
	if tr != nil {
		tr.d, tr.decided, tr.alsoStar = d, true, also != nil
	}
	v.CrawlDelay, v.CrawlDelayLine = d.CrawlDelay, d.CrawlDelayLine
	if d.Exempt {
		v.Reason = ReasonRobotsTxt
		return
	}
	if !d.Allowed {
		v.Action, v.Reason, v.Rule = Deny, ReasonDisallowed, d.Rule
		if !starOnly {
			// A crawler whose claim could not be verified (feeds not
			// loaded, DNS busy) is refused what "*" disallows, but its
			// own rules allow it: no ban_after strike for that.
			e.countDenial(ctx, req, v.Site, ver, tr)
		}
		return
	}
	if path, query := policy.SplitTarget(target); policy.NeedsDecodedView(path) {
		d2, denied := e.decideDecoded(agent, path, query)
		if !denied && also != nil {
			if d2, denied = e.decideDecoded(star, path, query); denied {
				v.Group = "*"
			}
		}
		if denied {
			v.Action, v.Reason, v.Rule = Deny, ReasonDisallowedDecoded, d2.Rule
			if tr != nil {
				tr.d = d2
			}
			return
		}
	}
	v.Reason = ReasonAllowed
	if cp := v.Crawler; cp != nil && e.signals {
		// SEMANTICS.md §8a: the group's AI-use preference for the
		// crawler's documented purpose, on a path the group allows; an
		// unproven claim answers to "*"'s too, no from either winning.
		s, rule := agent.SignalRule(cp.Purpose, target)
		if also != nil && s != policy.No {
			if s2, r2 := star.SignalRule(cp.Purpose, target); s2 == policy.No {
				s, rule = s2, r2
			}
		}
		if tr != nil {
			tr.signal, tr.signalVal, tr.signalRule = true, s, rule
		}
		if s == policy.No {
			v.Action, v.Reason, v.Signal = Deny, ReasonContentSignal, rule
			if !e.signalsReport {
				return
			}
			// A dry run: the request passes, and so the Crawl-delay
			// still applies to it (one setting's dry run weakens no
			// other).
			v.DryRun = true
		}
	}
	if d.CrawlDelay <= 0 {
		return
	}
	k, now := e.limitKey(v.Site, group, req, ver), e.clock(req)
	var ok bool
	var wait time.Duration
	if tr == nil {
		ok, wait = e.limits.Allow(ctx, k, now, d.CrawlDelay)
	} else {
		ok, wait = e.limits.Peek(ctx, k, now, d.CrawlDelay)
	}
	if !ok {
		v.Action, v.Reason, v.RetryAfter = Throttle, ReasonCrawlDelay, wait
		v.DryRun, v.Signal = e.cfg.DryRun, nil // not a content signal's dry run
	}
}

// decodedViews are the readings of a path that decideDecoded judges
// (SEMANTICS.md §6a): backslashes read as '/', then kept, then path
// parameters dropped as servlet containers do.
var decodedViews = [...]policy.ViewOptions{{}, {KeepBackslash: true}, {PathParams: true}}

// decideDecoded decides the decoded views of a target
// (policy.AppendDecodedView, in each of decodedViews that changes it) and
// reports whether one is denied. The views are built in a pooled buffer
// (which goes back to the pool unless a huge target grew it) and given to
// Decide as strings of their own.
func (e *Engine) decideDecoded(agent policy.Agent, path, query string) (policy.Decision, bool) {
	bp := e.bufs.Get().(*respBuf)
	var d policy.Decision
	denied := false
	for _, opts := range decodedViews {
		var start int
		var ok bool
		if bp.b, start, ok = policy.AppendDecodedView(bp.b[:0], path, query, opts); !ok {
			continue
		}
		if d = agent.Decide(string(bp.b[start:])); !d.Allowed && !d.Exempt {
			denied = true
			break
		}
	}
	if cap(bp.b) <= maxPooledBuf {
		e.bufs.Put(bp)
	}
	return d, denied
}

// maxPooledBuf is the largest buffer that goes back to the pool.
const maxPooledBuf = 4 << 10

// respBuf is a pooled response body buffer. Its slice header is written
// at every stopped request by the P that holds it; the padding keeps
// buffers of different Ps off one another's cache lines.
type respBuf struct {
	b []byte
	_ [128 - 24]byte
}
