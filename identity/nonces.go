package identity

import (
	"crypto/sha256"
	"net/netip"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// This file keeps the nonces of verified Web Bot Auth signatures, for
// replay checks, in budgets per agent.

// maxNonces bounds the nonces of verified signatures kept for replay
// checks (least recently seen out first), per budget: each agent named by
// configuration (an operator's signature_agents, a pinned agent, the keys
// pinned without one) has a budget of its own, and the agents that
// discovery finds share one, so that no agent, and above all no
// discovered one, can push another's nonces out with fresh ones of its
// own. Each is kept as a SHA-256 of the key id and the nonce, whatever
// their length (a nonce may fill the 8 KiB a Signature-Input is read to),
// with the client that first presented it: about 100 bytes, 10 MB a full
// budget.
const maxNonces = 100000

// seenNonce is what is kept of a nonce: until when its signature is valid
// (Unix ns), and the client that first presented it.
type seenNonce struct {
	until  int64
	client netip.Addr
}

// nonceReplayed reports whether the nonce of a verified signature of keyid
// (valid until expires) was presented before, within that window, by
// another client than client: a replay. The same client again is not one
// (a request judged twice: two guards in one server, a proxy that asks
// again after an internal redirect; or resent by its own client), so a
// replay needs an address the signer does not have; an unknown address
// (the zero Addr) is always another. With record, a nonce not seen yet is
// kept. At most maxNonces are kept: a flood of fresh
// nonces pushes out the oldest, whose replays then go unseen.
func (s *signers) nonceReplayed(agent, keyid, nonce string, expires, now time.Time, client netip.Addr, record bool) bool {
	var buf [256]byte // most key ids and nonces fit: no allocation
	k := sha256.Sum256(append(append(append(buf[:0], keyid...), 0), nonce...))
	nonces := s.noncesOf(agent)
	fresh := seenNonce{until: expires.UnixNano(), client: client}
	var seen seenNonce
	var ok bool
	if record {
		// One step, so that two clients racing with one nonce do not
		// both pass.
		seen, ok, _ = nonces.PeekOrAdd(k, fresh)
	} else {
		seen, ok = nonces.Peek(k)
	}
	switch {
	case ok && now.UnixNano() < seen.until:
		// An unknown address is nobody's: it proves no sameness.
		return seen.client != client || !client.IsValid()
	case ok && record:
		nonces.Add(k, fresh) // the old one's window is over
	}
	return false
}

// noncesOf returns the nonce budget of a signature's agent (its
// Signature-Agent's normal form, "" for a key pinned without one): its
// own when configuration names it, the discovered agents' otherwise.
func (s *signers) noncesOf(agent string) *lru.Cache[[32]byte, seenNonce] {
	if c, ok := s.agentNonces[agent]; ok {
		return c
	}
	if isKeySetURI(agent) {
		if o, err := NormalizeOrigin(agent); err == nil {
			if c, ok := s.agentNonces[o]; ok {
				return c
			}
		}
	}
	return s.nonces
}
