// Package limit decides how fast a client may come and whether it is
// banned. It holds the Crawl-delay limiter of robotsguard, a generic cell
// rate algorithm (GCRA) with burst 1 and a delay-variation tolerance, keyed
// by site, robots.txt group and client (Limiter), and the list of clients
// banned for ignoring robots.txt (Bans); both in memory or shared by a
// fleet through a Redis-protocol server (Redis, RedisBans), keyed by a
// client's address prefix (Client). It knows nothing of HTTP; the enforcer
// in package guard asks it one question per bot request that has a
// Crawl-delay, and one per request while bans exist. Every call that can
// touch the network takes a context.Context and gives up when it ends.
//
// The algorithm keeps one number per key, the theoretical arrival time (TAT)
// of the next request. With delay d and tolerance τ, a request at time t is
// admitted iff t >= TAT − τ, and then TAT = max(TAT, t) + d. The tolerance
// is counted in delays (τ = f × d, DefaultTolerance 2.5): real crawlers
// randomise their spacing around the Crawl-delay (Scrapy and wget
// --random-wait space requests 0.5–1.5 × d apart, colly and others ±10 %),
// and a crawler whose mean spacing is d drifts early and late like a
// random walk, so only a tolerance of a few delays keeps it from being
// refused (docs/performance.md has the measured rates). The long-run rate
// stays one request per d: over any interval of length T at most
// ⌈T/d⌉ + 1 + ⌊τ/d⌋ requests are admitted (⌈T/d⌉ + 3 by default). A
// refused request is told to wait TAT − τ − t, and a retry after that wait
// is admitted.
package limit

import (
	"context"
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// Bounds of the tolerance (see Tolerance).
const (
	// DefaultTolerance is the default tolerance, in delays: a bot may run
	// up to two and a half delays ahead of its Crawl-delay and still pass.
	// It admits the spacing real crawlers randomise around the delay (over
	// 10,000 requests, a crawler with Scrapy's 0.5–1.5 × spacing is
	// refused on about 1.8 % of them, one with ±10 % on about 0.1 %),
	// while a bot that comes faster gets at most three requests more than
	// one per delay in any window, and then one per delay. Every tolerance
	// from 2 to just under 3 delays allows the same burst (three requests
	// at once) and the same bound; 2.5 refuses randomising crawlers about
	// a third less often than 2 (docs/performance.md).
	DefaultTolerance float64 = 2.5
	// MaxTolerance is the largest tolerance accepted, in delays: a bot may
	// then send a burst of five requests and, in any window, at most five
	// more than one per delay.
	MaxTolerance float64 = 4
	// MinSlack is the floor of the tolerance for short delays and small
	// fractions, where network jitter is as large as for long delays; the
	// floor is itself at most half the delay.
	MinSlack = 250 * time.Millisecond
)

// Tolerance returns how far ahead of its Crawl-delay of delay a request may
// come when the configured tolerance is f delays: f × delay, and at least
// MinSlack or half the delay, whichever is smaller. f = 0 switches the
// tolerance off (strict spacing).
//
// Defaults (f = 2.5): 0.2 s → 0.5 s, 1 s → 2.5 s, 10 s → 25 s. With f = 0.25:
// 1 s → 0.25 s (the floor), 10 s → 2.5 s.
func Tolerance(delay time.Duration, f float64) time.Duration {
	if f <= 0 || delay <= 0 {
		return 0
	}
	tau := time.Duration(math.Min(f*float64(delay), float64(math.MaxInt64/2)))
	return max(tau, min(MinSlack, delay/2))
}

// Key identifies one Crawl-delay budget: a site, a robots.txt group and a
// client (an address prefix, or the zero Client when one budget is shared
// by the whole group). The strings are usually shared with the
// robots.txt cache, so a key costs its 48 bytes plus the map's overhead.
type Key struct {
	Site   string
	Group  string
	Client Client
}

// Limiter decides whether a bot request may pass under a Crawl-delay.
// Implementations are safe for concurrent use.
type Limiter interface {
	// Allow reports whether a request for k at now (Unix nanoseconds) may
	// pass under delay and, if it may not, how long it must wait. An
	// admitted request spends the budget. A limiter that asks a server
	// gives up when ctx ends (and decides as its configuration says).
	Allow(ctx context.Context, k Key, now int64, delay time.Duration) (ok bool, wait time.Duration)
	// Peek answers as Allow would, without spending anything.
	Peek(ctx context.Context, k Key, now int64, delay time.Duration) (ok bool, wait time.Duration)
}

// shards is the number of independently locked parts of a Memory limiter:
// requests of different keys rarely wait for each other, and eviction
// holds one part's lock only.
const shards = 16

// Memory is the in-memory Limiter: one int64 per key in a sharded map with
// a cap on keys. When a shard is full, its expired keys are dropped first,
// then about 1% of its keys in map order (arbitrary), which only forgets
// those clients' remaining waits.
type Memory struct {
	seed      maphash.Seed
	tolerance float64
	shard     [shards]memShard
}

type memShard struct {
	mu      sync.Mutex
	tats    map[Key]int64
	max     int
	inserts int      // new keys since the map was last rebuilt
	_       [32]byte // keep shards on separate cache lines
}

// NewMemory returns an in-memory limiter holding at most about maxKeys keys
// (rounded up to a multiple of 16), with tolerance fraction f (see
// Tolerance).
func NewMemory(maxKeys int, f float64) *Memory {
	m := &Memory{seed: maphash.MakeSeed(), tolerance: f}
	per := max(1, (maxKeys+shards-1)/shards)
	for i := range m.shard {
		m.shard[i].tats = make(map[Key]int64)
		m.shard[i].max = per
	}
	return m
}

func (m *Memory) shardOf(k Key) *memShard {
	return &m.shard[maphash.Comparable(m.seed, k)%shards]
}

// Allow implements Limiter.
func (m *Memory) Allow(_ context.Context, k Key, now int64, delay time.Duration) (bool, time.Duration) {
	tau := int64(Tolerance(delay, m.tolerance))
	s := m.shardOf(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	tat, ok := s.tats[k]
	if ok && now < tat-tau {
		return false, time.Duration(tat - tau - now)
	}
	if !ok {
		if len(s.tats) >= s.max {
			s.evict(now)
		}
		if s.inserts++; s.inserts > 4*s.max {
			s.rebuild()
		}
	}
	s.tats[k] = max(tat, now) + int64(delay)
	return true, 0
}

// rebuild copies the live keys into a new map. A Go map keeps the memory
// of every key it held at once, and deleted slots are reused only so far:
// under a churn of distinct clients the map would outgrow its cap (12M
// keys through a 100,000-key limiter took 78 MB instead of 8). Rebuilding
// after 4 × cap insertions keeps it at its live size, at O(1) amortised
// cost per new key.
func (s *memShard) rebuild() {
	m := make(map[Key]int64, len(s.tats))
	for k, v := range s.tats {
		m[k] = v
	}
	s.tats, s.inserts = m, 0
}

// Peek implements Limiter.
func (m *Memory) Peek(_ context.Context, k Key, now int64, delay time.Duration) (bool, time.Duration) {
	tau := int64(Tolerance(delay, m.tolerance))
	s := m.shardOf(k)
	s.mu.Lock()
	tat, ok := s.tats[k]
	s.mu.Unlock()
	if ok && now < tat-tau {
		return false, time.Duration(tat - tau - now)
	}
	return true, 0
}

// Len returns the number of keys held.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shard {
		s := &m.shard[i]
		s.mu.Lock()
		n += len(s.tats)
		s.mu.Unlock()
	}
	return n
}

// evict makes room in a full shard: it drops every expired key and, when
// none has expired, about 1% of the keys (at least one).
func (s *memShard) evict(now int64) {
	for k, tat := range s.tats {
		if tat <= now {
			delete(s.tats, k)
		}
	}
	if len(s.tats) < s.max {
		return
	}
	n := max(1, len(s.tats)/100)
	for k := range s.tats {
		delete(s.tats, k)
		if n--; n == 0 {
			break
		}
	}
}

// Interface guard.
var _ Limiter = (*Memory)(nil)
