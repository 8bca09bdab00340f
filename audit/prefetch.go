package audit

import (
	"context"
	"net/netip"
	"strings"
	"sync"

	"github.com/robotsguard/robotsguard/identity"
)

// Bounds of the prefetch of claims.
const (
	// prefetchWorkers is how many claims are checked at once, ahead of
	// the judging: within the verifier's own bounds
	// (identity.MaxConcurrentLookups, with the shards' own lookups).
	prefetchWorkers = 32
	// prefetchQueue is how many claims wait for each worker; a full
	// queue holds the parsing back.
	prefetchQueue = 256
	// maxPrefetched bounds the addresses whose checks are remembered;
	// beyond it, claims are checked by their judging, one at a time.
	maxPrefetched = 1 << 18
	// maxMemoUAs bounds the User-Agent headers whose claims a parse
	// worker remembers (forgotten all at once beyond it), and
	// maxMemoUALen the length of one.
	maxMemoUAs, maxMemoUALen = 1024, 512
)

// claim is a request's claim to be a known crawler, to be checked.
type claim struct {
	addr   netip.Addr
	claims identity.Claims
	done   chan struct{}
}

// claimsMemo remembers the claims of the User-Agent headers a parse
// worker met. A log repeats few headers, and reading one's claims scans it
// once per operator of the registry: 340 ns a line with one operator in
// TestVerificationAtLogSpeed, a tenth of the parse's time.
type claimsMemo struct {
	v  *identity.Verifier
	of map[string]identity.Claims
}

// claims returns the claims of ua.
func (m *claimsMemo) claims(ua string) identity.Claims {
	if c, ok := m.of[ua]; ok {
		return c
	}
	c := m.v.Claims(ua)
	if len(ua) <= maxMemoUALen {
		if len(m.of) >= maxMemoUAs {
			clear(m.of)
		}
		m.of[strings.Clone(ua)] = c // not to keep the chunk's text
	}
	return c
}

// prefetcher checks the claims of a log ahead of the judging, each
// address once, prefetchWorkers at a time (the verifier is OneShot: the
// bound is the prefetch's, not one per network), so that the engines find
// the answers in the verifier's cache instead of waiting for each lookup
// in turn. A chunk's entries are judged once the checks of its claims are
// done.
type prefetcher struct {
	v      *identity.Verifier
	ctx    context.Context
	cancel context.CancelFunc
	in     [prefetchWorkers]chan claim
	wg     sync.WaitGroup
	mu     sync.Mutex
	// checks are the addresses checked or being checked, with the
	// channel that closes when the check is done (then closed, shared).
	checks map[netip.Addr]chan struct{}
}

// closed is the done channel of a finished check.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// newPrefetcher starts the workers of a prefetcher of v's claims.
func newPrefetcher(v *identity.Verifier) *prefetcher {
	p := &prefetcher{v: v, checks: make(map[netip.Addr]chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for i := range p.in {
		p.in[i] = make(chan claim, prefetchQueue)
		p.wg.Go(func() {
			for c := range p.in[i] {
				if p.ctx.Err() == nil {
					p.v.Verify(p.ctx, c.claims, c.addr)
				}
				p.mu.Lock()
				p.checks[c.addr] = closed
				p.mu.Unlock()
				close(c.done)
			}
		})
	}
	return p
}

// check starts the check of a claim from addr unless one was started
// before, and returns the channel that closes when it is done (nil when
// the checks remembered are at their bound).
func (p *prefetcher) check(addr netip.Addr, claims identity.Claims) <-chan struct{} {
	p.mu.Lock()
	done, ok := p.checks[addr]
	if !ok {
		if len(p.checks) >= maxPrefetched {
			p.mu.Unlock()
			return nil
		}
		done = make(chan struct{})
		p.checks[addr] = done
	}
	p.mu.Unlock()
	if !ok {
		select {
		case p.in[netHash(addr, 32, 128)%prefetchWorkers] <- claim{addr, claims, done}:
		case <-p.ctx.Done():
			close(done)
		}
	}
	return done
}

// close stops the workers, the checks under way included.
func (p *prefetcher) close() {
	p.cancel()
	for _, c := range p.in {
		close(c)
	}
	p.wg.Wait()
}
