package sites

import (
	"hash/maphash"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// segLRU holds the cache entries of sites in two LRU segments, so that a
// flood of one-hit Host names cannot push out the sites that get traffic:
//
//   - probation (a quarter of max_sites) takes every new site; a flood of
//     names seen once only churns this segment;
//   - protected (the rest) takes a site when it is looked up again while
//     in probation, or when it comes back after an eviction. A small
//     count-min sketch counts each site's lookups (its misses and every
//     hit while in probation; afterwards one hit in promoteEvery, sampled,
//     counts for promoteEvery), beyond the cache's own memory, and halves
//     its counts now and then so that old traffic fades. When protected is
//     full, a candidate enters only if the sketch counts it higher than
//     the victim, protected's least recently used site not hit since admit
//     last passed it over (a reference bit), which is then dropped: Host
//     names requested once or twice cannot push out a site with traffic.
//
// This is the W-TinyLFU scheme (a window, a segmented LRU and a frequency
// sketch for admission), small enough to write here on top of
// hashicorp/golang-lru. The sketch is counted under the cache's lock, on
// the paths that take it anyway; a hit of a protected site writes shared
// memory only when sampled or when its reference bit was clear, so the
// hit path of a busy site is read-only. Entries dropped from either
// segment are marked evicted.
//
// Lookups take the LRUs' read locks only (Peek); the caller serialises
// adds and promotions.
type segLRU struct {
	// fast mirrors both segments for lock-free reads (Peek): entries
	// are stored when added and deleted when evicted (not when they
	// move between segments).
	fast      sync.Map // Key → *Site
	probation *lru.Cache[Key, *Site]
	protected *lru.Cache[Key, *Site]
	protSize  int
	seen      sketch // lookups per site (see above); guarded by the caller's lock
}

// sketch is a count-min sketch of 4 × 4096 saturating 8-bit counters: an
// upper bound of how often a key was counted, halved every 10 × size
// counts so that old traffic fades.
type sketch struct {
	seed  maphash.Seed
	rows  [4][4096]uint8
	n     int
	reset int
}

// estimate returns the estimated count of k.
func (s *sketch) estimate(k Key) uint8 {
	h := maphash.Comparable(s.seed, k)
	est := uint8(255)
	for i := range s.rows {
		est = min(est, s.rows[i][(h>>(16*i))&4095])
	}
	return est
}

// add counts k once and returns its estimated count.
func (s *sketch) add(k Key) uint8 { return s.addN(k, 1) }

// addN counts k n times (a sampled hit stands for n hits), saturating at
// 255, and returns its estimated count.
func (s *sketch) addN(k Key, n uint8) uint8 {
	h := maphash.Comparable(s.seed, k)
	est := uint8(255)
	for i := range s.rows {
		c := &s.rows[i][(h>>(16*i))&4095]
		*c = uint8(min(255, int(*c)+int(n)))
		est = min(est, *c)
	}
	if s.n += int(n); s.n >= s.reset {
		s.n = 0
		for i := range s.rows {
			for j := range s.rows[i] {
				s.rows[i][j] >>= 1
			}
		}
	}
	return est
}

func newSegLRU(size int, dropped func(*Site)) *segLRU {
	prob := max(1, size/4)
	prot := max(1, size-prob)
	l := &segLRU{protSize: prot, seen: sketch{seed: maphash.MakeSeed(), reset: 10 * max(size, 100)}}
	evict := func(k Key, e *Site) {
		if !e.moving.Load() {
			e.evicted.Store(true)
			l.fast.CompareAndDelete(k, e)
			if dropped != nil {
				dropped(e)
			}
		}
	}
	l.probation, _ = lru.NewWithEvict(prob, evict)
	l.protected, _ = lru.NewWithEvict(prot, evict)
	return l
}

// Peek returns the entry of k without changing recency, and without a
// write to shared memory (the mirror; a lock's reader count would be one).
func (l *segLRU) Peek(k Key) (*Site, bool) {
	if v, ok := l.fast.Load(k); ok {
		if e := v.(*Site); !e.evicted.Load() {
			return e, true
		}
	}
	if e, ok := l.protected.Peek(k); ok {
		return e, true
	}
	return l.probation.Peek(k)
}

// touch counts weight hits of k (a sampled hit stands for the ones not
// sampled) and refreshes its recency in its segment.
func (l *segLRU) touch(k Key, weight uint8) {
	l.seen.addN(k, weight)
	if _, ok := l.protected.Get(k); !ok {
		l.probation.Get(k)
	}
}

// add puts a new entry into probation, or into protected when the site
// was created before (it comes back after an eviction) and passes the
// admission test. It reports whether e went to protected.
func (l *segLRU) add(k Key, e *Site) bool {
	f := l.seen.add(k)
	defer l.fast.Store(k, e) // after the Add: its evictions leave the mirror first
	if f >= 2 && l.admit(f) {
		l.protected.Add(k, e)
		return true
	}
	l.probation.Add(k, e)
	return false
}

// admit is the admission test of a candidate counted f times: protected
// has room, or the sketch counts its victim lower. The victim is the least
// recently used protected site whose reference bit is clear: one hit since
// it was last passed over (CLOCK's second chance) sends a site to the front
// with its bit cleared. Recency and the sketch see a protected site's hits
// only by sampling (Cache.hit), which leaves a site that gets one
// request in fifty (fewer than one sample in promoteEvery) short of a
// second request's count now and then; the bit
// is set at every hit without a write once set. Each site passed over needed
// a hit to set its bit, so the loop costs O(1) per hit, amortised.
func (l *segLRU) admit(f uint8) bool {
	if l.protected.Len() < l.protSize {
		return true
	}
	for range l.protected.Len() {
		vk, ve, ok := l.protected.GetOldest()
		if !ok {
			return true
		}
		if !ve.referenced.Load() {
			return f > l.seen.estimate(vk)
		}
		ve.referenced.Store(false)
		l.protected.Get(vk) // to the front
	}
	vk, _, ok := l.protected.GetOldest()
	return !ok || f > l.seen.estimate(vk)
}

// promote moves e from probation to protected if it passes the admission
// test; it reports whether it moved.
func (l *segLRU) promote(k Key, e *Site) bool {
	if pe, ok := l.probation.Peek(k); !ok || pe != e {
		return false // e left probation, or was dropped and made again
	}
	if !l.admit(l.seen.estimate(k)) {
		l.probation.Get(k)
		return false
	}
	e.moving.Store(true)
	l.probation.Remove(k)
	e.moving.Store(false)
	l.protected.Add(k, e)
	return true
}

// removeOldest drops the least recently used entry other than keep, from
// probation first; it reports whether it dropped one. It costs O(1).
func (l *segLRU) removeOldest(keep *Site) bool {
	for _, seg := range [...]*lru.Cache[Key, *Site]{l.probation, l.protected} {
		k, e, ok := seg.GetOldest()
		if ok && e == keep {
			seg.Get(k) // keep goes to the front; try the next oldest
			k, e, ok = seg.GetOldest()
		}
		if ok && e != keep {
			seg.Remove(k)
			return true
		}
	}
	return false
}

// Len returns the number of entries in both segments.
func (l *segLRU) Len() int { return l.probation.Len() + l.protected.Len() }

// Values returns the entries of both segments, protected first, each from
// least to most recently used.
func (l *segLRU) Values() []*Site {
	return append(l.protected.Values(), l.probation.Values()...)
}

// promoteEvery is how often (in hits, on average) a hit of a protected
// site refreshes its recency and counts in the admission sketch (for
// promoteEvery hits): every hit would write shared memory on the hot path.
const promoteEvery = 64
