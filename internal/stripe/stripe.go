// Package stripe hands out stripe numbers, about one per P, so that
// counters kept in stripes are written by one P each. It is what the
// request path uses instead of a per-P index, which Go does not expose: a
// sync.Pool is per P, and its tokens carry the numbers.
package stripe

import (
	"sync"
	"sync/atomic"
)

// Set hands out the numbers 0..n-1. A number the pool drops at a garbage
// collection is dealt again, round robin, so two Ps may share one for a
// while (and always do with more Ps than numbers): users must keep their
// stripes safe for concurrent use, as atomics or locks do, and only count
// on them being mostly one P's.
type Set struct {
	pool sync.Pool // *int
	next atomic.Uint32
	n    int
}

// New returns a Set of n stripes (at least 1).
func New(n int) *Set {
	s := &Set{n: max(n, 1)}
	s.pool.New = func() any {
		i := int(s.next.Add(1)-1) % s.n
		return &i
	}
	return s
}

// Len returns the number of stripes.
func (s *Set) Len() int { return s.n }

// Get returns a stripe number token for the caller's P; give it back with
// Put once the stripe is written.
func (s *Set) Get() *int { return s.pool.Get().(*int) }

// Put gives back a token from Get.
func (s *Set) Put(i *int) { s.pool.Put(i) }
