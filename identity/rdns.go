package identity

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Lifetimes of cached reverse-DNS answers and the bound on lookups in
// flight.
const (
	// VerifiedTTL: a forward-confirmed name is trusted this long.
	VerifiedTTL = 6 * time.Hour
	// SpoofedTTL: a definite failure (no PTR, a name outside the operator's
	// domains, a forward lookup without the address) is kept this long.
	SpoofedTTL = time.Hour
	// ErrorTTL: a lookup that failed (timeout, SERVFAIL) is not retried for
	// this long, so a dead resolver is not asked once per request.
	ErrorTTL = time.Minute
	// MaxConcurrentLookups bounds the reverse-DNS checks in flight; a check
	// that finds no free slot within the DNS timeout is Unverifiable.
	MaxConcurrentLookups = 64
	// MaxPendingLookups bounds the checks in flight or waiting for a slot.
	MaxPendingLookups = 256
	// MaxPendingPerPrefix bounds the checks pending for the addresses of
	// one client network (a /24 or /48), so that a claim flood from a few
	// networks takes a few slots, not all of them.
	MaxPendingPerPrefix = 2
	// PrefixFailures is the number of failed checks (timeouts, server
	// failures) after which a network's addresses are not looked up for
	// ErrorTTL: a silent reverse zone, which its owner controls, costs a
	// few lookups, not one per address.
	PrefixFailures = 2
	// Networks where an address verified in the last VerifiedTTL are
	// "good": a crawler's own. Their checks have a lane of their own
	// (ReservedLookups more pending, GoodSlots more running, up to
	// MaxPendingGoodPrefix each), so a flood of claims from elsewhere
	// cannot starve them, and they are never skipped for failures.
	ReservedLookups      = 64
	GoodSlots            = 16
	MaxPendingGoodPrefix = 16
	// MaxTrackedPrefixes bounds the networks tracked, in each of two
	// tables (least recently used first out): the networks whose checks
	// ran, and the good ones, which the others cannot evict.
	MaxTrackedPrefixes = 4096
	// DefaultDNSTimeout bounds one check (PTR and forward lookups).
	DefaultDNSTimeout = 2 * time.Second
	// DefaultCacheSize is the default number of cached answers.
	DefaultCacheSize = 10000
	// maxPTRNames bounds the names of one PTR answer that are looked up.
	maxPTRNames = 4
)

type dnsKey struct {
	addr netip.Addr
	op   uint8
}

// dnsAnswer is a cached reverse-DNS check.
type dnsAnswer struct {
	verdict    Verdict
	detail     string // how it was reached, for Explain
	expires    int64  // unix nanoseconds
	zoneFailed bool   // the PTR lookup failed (timeout, server failure): the network's reverse zone
	noPTR      bool   // the address has no PTR record (NXDOMAIN, or an empty answer)
}

// prefixState is what the verifier knows of one client network's reverse
// DNS, made when a lookup starts; guarded by Verifier.callsMu.
type prefixState struct {
	pending     int   // checks of its addresses pending
	fails       int   // checks its reverse zone failed since the last success or skip period
	failedUntil int64 // unix ns: its zone failed; its addresses are not looked up
}

// dnsPrefix returns the network of addr: its /24 or /48.
func dnsPrefix(addr netip.Addr) netip.Prefix {
	bits := 48
	if addr.Is4() {
		bits = 24
	}
	p, _ := addr.Prefix(bits)
	return p
}

// rdns checks addr against op's domains, from the cache or (within the
// call's budget b, whose deadline is made on a miss only) with one
// forward-confirmed reverse-DNS lookup shared by concurrent callers. The
// work is shared per client network (see prefixState): at most
// MaxPendingPerPrefix lookups pending per network, none for ErrorTTL after
// PrefixFailures failures of its reverse zone, and a lane of its own for a
// network where a crawler verified (Verifier.good, a table of its own that
// other networks cannot evict). At most MaxPendingLookups lookups exist at
// a time (ReservedLookups more for good networks), running or waiting for
// one of the MaxConcurrentLookups slots (GoodSlots more); beyond that a
// check is Unverifiable at once and not cached, so a flood of new addresses
// costs neither goroutines nor DNS queries without bound.
func (v *Verifier) rdns(b *budget, op *opEntry, i int, addr netip.Addr) dnsAnswer {
	k := dnsKey{addr, uint8(i)}
	now := v.now().UnixNano()
	if a, ok := v.dnsCache.Peek(k); ok && a.expires > now {
		return a // the call's deadline is made on a miss only
	}
	if v.dnsGaveUp.Load() {
		// Before the deadline is made: after a give-up, every claim of
		// the run comes here, and each would make and cancel a timer.
		v.observeLookup(LookupSkipped, 0)
		return dnsAnswer{verdict: Unverifiable, detail: "the resolver stopped answering: no reverse DNS is looked up for the rest of this run"}
	}
	ctx := b.context()
	v.callsMu.Lock()
	c, ok := v.calls[k]
	if !ok {
		p := dnsPrefix(addr)
		goodUntil, _ := v.good.Peek(p)
		good := goodUntil > now
		ps, _ := v.prefixes.Peek(p)
		pending := 0
		if ps != nil {
			pending = ps.pending
		}
		switch {
		case !good && ps != nil && ps.failedUntil > now:
			v.callsMu.Unlock()
			v.observeLookup(LookupSkipped, 0)
			return dnsAnswer{verdict: Unverifiable, detail: "the reverse zone of " + p.String() + " failed repeatedly in the last minute: not asked again yet"}
		case !good && (pending >= v.perPrefix || len(v.calls) >= MaxPendingLookups),
			good && (pending >= MaxPendingGoodPrefix || len(v.calls) >= MaxPendingLookups+ReservedLookups):
			v.callsMu.Unlock()
			v.observeLookup(LookupBusy, 0)
			return dnsAnswer{verdict: Unverifiable, detail: "too many reverse-DNS checks pending"}
		}
		if ps == nil {
			ps = &prefixState{}
			v.prefixes.Add(p, ps)
		}
		ps.pending++
		c = &dnsCall{done: make(chan struct{})}
		v.calls[k] = c
		go func() {
			c.ans = v.lookup(op, addr, good)
			v.dnsCache.Add(k, c.ans)
			end := v.now().UnixNano()
			v.callsMu.Lock()
			delete(v.calls, k)
			ps.pending--
			v.countDNSFailure(c.ans.zoneFailed)
			switch {
			case c.ans.verdict == Verified:
				v.good.Add(p, end+int64(VerifiedTTL))
				ps.fails = 0
			case c.ans.zoneFailed:
				// Only the network's own reverse zone counts: a slot
				// that did not free in time, a forward lookup or a
				// shutdown says nothing about it.
				if until, _ := v.good.Peek(p); until <= end {
					if ps.fails++; ps.fails >= PrefixFailures {
						ps.failedUntil, ps.fails = end+int64(ErrorTTL), 0
					}
				}
			}
			v.callsMu.Unlock()
			close(c.done)
		}()
	}
	v.callsMu.Unlock()
	select {
	case <-c.done:
		return c.ans
	case <-ctx.Done():
		return dnsAnswer{verdict: Unverifiable, detail: "no reverse-DNS answer in time: " + ctx.Err().Error()}
	case <-v.dnsCtx.Done(): // given up on (OneShot), or closed
		return dnsAnswer{verdict: Unverifiable, detail: "the resolver stopped answering: no reverse DNS is looked up for the rest of this run"}
	}
}

// OneShot makes v a verifier for one run over many claims (the audit of
// a log) rather than a server's, in two ways. It stops asking its
// resolver once n reverse-DNS lookups in a row have failed (a timeout, a
// server failure: a resolver that does not answer), the lookups in flight
// with it: each claim that needs one is then unverifiable at once, as a
// failed lookup makes it, and warn is called once, saying so; each claim
// would otherwise wait its own DNSTimeout. And the lookups of one network
// are bounded only by MaxConcurrentLookups, not MaxPendingPerPrefix: the
// caller bounds the checks it runs at once, and a log's claims from one
// network (a crawler's own, most often) are no client's flood. A server
// keeps asking (a resolver that recovers is asked again per network after
// ErrorTTL). Call it before v is used.
func (v *Verifier) OneShot(n int, warn func(string)) {
	v.dnsGiveUpAfter, v.dnsGiveUpWarn = int64(n), warn
	v.dnsCtx, v.dnsStop = context.WithCancel(v.ctx)
	v.perPrefix = MaxConcurrentLookups
}

// countDNSFailure counts a lookup's end toward OneShot's bound: failed
// ones in a row, reset by any answer.
func (v *Verifier) countDNSFailure(failed bool) {
	if v.dnsGiveUpAfter <= 0 {
		return
	}
	if !failed {
		v.dnsFailStreak.Store(0)
		return
	}
	if v.dnsFailStreak.Add(1) >= v.dnsGiveUpAfter && v.dnsGaveUp.CompareAndSwap(false, true) {
		v.dnsStop() // the lookups in flight would fail too, each after its DNSTimeout
		if v.dnsGiveUpWarn != nil {
			v.dnsGiveUpWarn(fmt.Sprintf("crawler verification: %d reverse-DNS lookups in a row failed (the resolver does not answer): "+
				"no more are made in this run, and the claims that need one are unverifiable", v.dnsGiveUpAfter))
		}
	}
}

// dnsCall is a lookup in progress; ans is set before done closes.
type dnsCall struct {
	done chan struct{}
	ans  dnsAnswer
}

// lookup does one forward-confirmed reverse-DNS check, bounded by the DNS
// timeout (the wait for a free slot included); good: the address's network
// is a crawler's, which may also take one of the GoodSlots.
func (v *Verifier) lookup(op *opEntry, addr netip.Addr, good bool) dnsAnswer {
	ctx, cancel := context.WithTimeout(v.dnsCtx, v.cfg.DNSTimeout)
	defer cancel()
	start := v.now()
	ans := func(vd Verdict, ttl time.Duration, outcome, detail string) dnsAnswer {
		v.observeLookup(outcome, v.now().Sub(start))
		return dnsAnswer{verdict: vd, detail: detail, expires: v.now().Add(ttl).UnixNano()}
	}
	var goodSlots chan struct{} // nil (never ready) unless good
	if good {
		goodSlots = v.goodSlots
	}
	select {
	case v.slots <- struct{}{}:
		defer func() { <-v.slots }()
	case goodSlots <- struct{}{}:
		defer func() { <-goodSlots }()
	case <-ctx.Done():
		return ans(Unverifiable, ErrorTTL, LookupError, "too many DNS checks in flight")
	}
	// A failure of the PTR lookup is the reverse zone's only when the
	// lookup had a fair share of the time (not eaten by the wait for a
	// slot, which is the verifier's own congestion).
	dl, _ := ctx.Deadline()
	fairTry := time.Until(dl) >= v.cfg.DNSTimeout/2
	names, err := v.resolver.ptr(ctx, addr)
	if err != nil && len(names) == 0 {
		if isNotFound(err) {
			a := ans(Spoofed, SpoofedTTL, LookupFailed, "no PTR record for "+addr.String())
			a.noPTR = true
			return a
		}
		a := ans(Unverifiable, ErrorTTL, LookupError, "PTR lookup failed: "+err.Error())
		a.zoneFailed = fairTry && v.dnsCtx.Err() == nil
		return a
	}
	var outside, unconfirmed []string
	sawErr := ""
	family := "ip6" // the forward lookup asks for the address's own family only
	if addr.Is4() {
		family = "ip4"
	}
	for j, n := range names {
		if j == maxPTRNames {
			break
		}
		name := strings.TrimSuffix(strings.ToLower(n), ".")
		if !op.underDomain(name) {
			outside = append(outside, name)
			continue
		}
		ips, err := v.resolver.forward(ctx, family, name)
		if err != nil {
			if !isNotFound(err) {
				sawErr = "forward lookup of " + name + " failed: " + err.Error()
			}
			unconfirmed = append(unconfirmed, name)
			continue
		}
		for _, ip := range ips {
			if ip.Unmap() == addr {
				return ans(Verified, VerifiedTTL, LookupVerified, "PTR "+name+", whose A/AAAA records include "+addr.String())
			}
		}
		unconfirmed = append(unconfirmed, name)
	}
	if sawErr != "" {
		return ans(Unverifiable, ErrorTTL, LookupError, sawErr)
	}
	if len(names) == 0 {
		a := ans(Spoofed, SpoofedTTL, LookupFailed, "no PTR record for "+addr.String()+" (an empty answer)")
		a.noPTR = true
		return a
	}
	detail := "PTR " + strings.Join(names, ", ")
	switch {
	case len(unconfirmed) > 0:
		detail = "PTR " + strings.Join(unconfirmed, ", ") + " does not resolve back to " + addr.String()
	case len(outside) > 0:
		detail = "PTR " + strings.Join(outside, ", ") + " is not under " + strings.Join(op.domains, ", ")
	}
	return ans(Spoofed, SpoofedTTL, LookupFailed, detail)
}

// isNotFound reports whether err is a definite "no such record".
func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}

// Lookup outcomes, as passed to Observer.ObserveLookup.
const (
	LookupVerified = "verified"
	LookupFailed   = "failed"  // a definite failure: the claim is spoofed
	LookupError    = "error"   // timeout or server failure: unverifiable
	LookupBusy     = "busy"    // MaxPendingLookups reached: not looked up, unverifiable
	LookupSkipped  = "skipped" // the network's checks failed recently (PrefixFailures): not looked up, unverifiable
)

func (v *Verifier) observeLookup(outcome string, d time.Duration) {
	if v.cfg.Observer != nil {
		v.cfg.Observer.ObserveLookup(outcome, d)
	}
}
