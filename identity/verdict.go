package identity

import "strconv"

// Verdict is the outcome of checking a claim.
type Verdict uint8

// The four verdicts. Their string forms are a fixed set, usable as a metric
// label.
const (
	// None: the User-Agent names no registered operator.
	None Verdict = iota
	// Verified: the client's address passes a check its operator publishes.
	Verified
	// Spoofed: the operator publishes a check, the check's data is at
	// hand, and the client's address fails it.
	Spoofed
	// Unverifiable: the claim cannot be checked now: the operator publishes
	// no check, its feeds have not been loaded, DNS did not answer, or the
	// client address is unknown.
	Unverifiable
)

var verdictNames = [...]string{None: "none", Verified: "verified", Spoofed: "spoofed", Unverifiable: "unverifiable"}

// String returns "none", "verified", "spoofed" or "unverifiable".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// severity orders verdicts for combining the claims of one header: a header
// that names two operators is as good as its worst claim.
func (v Verdict) severity() int {
	switch v {
	case Spoofed:
		return 3
	case Unverifiable:
		return 2
	case Verified:
		return 1
	}
	return 0
}

// Method says how a Verified verdict was reached.
type Method uint8

// The methods.
const (
	MethodNone Method = iota
	// MethodIPRange: the address is in one of the operator's IP-range feeds.
	MethodIPRange
	// MethodRDNS: forward-confirmed reverse DNS under one of the
	// operator's domains.
	MethodRDNS
	// MethodSignature: a valid Web Bot Auth signature by one of the
	// operator's signature agents.
	MethodSignature
)

var methodNames = [...]string{MethodNone: "", MethodIPRange: "ip_range", MethodRDNS: "rdns", MethodSignature: "signature"}

// String returns "ip_range", "rdns", "signature" or "" for none.
func (m Method) String() string {
	if int(m) < len(methodNames) {
		return methodNames[m]
	}
	return "method(" + strconv.Itoa(int(m)) + ")"
}

// Result is the verdict on one request's claim.
type Result struct {
	// Verdict is the outcome.
	Verdict Verdict
	// Operator names the claimed operator the verdict is about (for a
	// header that names several, the one that decided it); "" for None.
	Operator string
	// Method says how a Verified verdict was reached.
	Method Method
	// DNSFailed reports an Unverifiable verdict whose reverse-DNS check
	// could not be done (a DNS error or timeout, too many checks at once):
	// the address proved nothing, and a client can cause this with a
	// reverse zone of its own, so it should not earn the claimed
	// operator's allowances either.
	DNSFailed bool
	// AgentOnly marks a Verified signature by a discovered agent that no
	// operator stands for (WebBotAuthConfig.Discover): it proves who
	// signed, not that the signer is a crawler anyone vouches for, so it
	// earns no privilege (no shared budget, no exemption from bans).
	AgentOnly bool
	// NotGlobal reports an Unverifiable verdict for a client address that
	// is not globally reachable (GloballyReachable): loopback, private,
	// documentation. No lookup was made. Behind a proxy, it usually means
	// the proxy's address is not among the trusted ones.
	NotGlobal bool

	key [16]byte
}

// ClientKey returns a 16-byte value that stands for the verified operator
// in a rate limiter's client key, so that one crawler spread over many
// addresses shares one budget. Its first byte is 0xff: IPv6 multicast, a
// prefix no client address carries, so it never equals an address key. It
// is the zero value for a Result that is not Verified, or AgentOnly.
func (r Result) ClientKey() [16]byte {
	if r.Verdict != Verified || r.AgentOnly {
		return [16]byte{}
	}
	return r.key
}

// Claims is the set of registered operators a User-Agent header names, as
// a bit set over the registry's operators (at most MaxOperators of them).
type Claims uint64

// Empty reports whether c names no operator.
func (c Claims) Empty() bool { return c == 0 }
