package limit

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Ban bounds.
const (
	// StrikeMemory is how long a ban is remembered after it ends, so that
	// the next one is twice as long.
	StrikeMemory = 7 * 24 * time.Hour
	// DefaultMaxBans caps the bans (and remembered strikes) held in memory.
	DefaultMaxBans = 100000
)

// BanInfo describes one ban.
type BanInfo struct {
	// Client is the banned address prefix.
	Client Client
	// Until is when the ban ends, Unix nanoseconds.
	Until int64
	// Strikes counts the bans of this client within StrikeMemory, this
	// one included; the ban lasted base × 2^(Strikes−1), capped.
	Strikes int
	// Reason says what triggered it, e.g. "trap /no-robots/".
	Reason string

	local bool // decided on this instance while the shared store was down
}

// Bans holds the clients banned for ignoring robots.txt. Implementations
// are safe for concurrent use; Until is on every request's path and must
// be cheap.
type Bans interface {
	// Ban bans client from now for base, doubled for each earlier ban
	// within StrikeMemory, capped at max, and returns the ban. A shared
	// list gives up on its store when ctx ends and keeps the ban locally.
	Ban(ctx context.Context, client Client, now int64, base, max time.Duration, reason string) BanInfo
	// Until returns when client's ban ends (Unix ns), or 0 when it is not
	// banned at now. It never waits for a server: it is on every
	// request's path.
	Until(client Client, now int64) int64
	// Unban lifts client's ban (its strikes too), and reports whether it
	// was banned.
	Unban(ctx context.Context, client Client) bool
	// List returns the bans in force at now, the longest first.
	List(ctx context.Context, now int64) []BanInfo
}

// banLength is base × 2^(strikes−1), capped at max.
func banLength(base, max time.Duration, strikes int) time.Duration {
	d := base
	for i := 1; i < strikes && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// MemoryBans is the in-memory Bans: a map of at most max entries (bans
// and remembered strikes). When full, entries whose ban and strike memory
// are over go first, then the entries whose bans end soonest.
type MemoryBans struct {
	mu     sync.RWMutex
	m      map[Client]*BanInfo
	max    int
	active atomic.Int64 // entries; 0 lets Until skip the lock
}

// NewMemoryBans returns an empty MemoryBans holding at most max entries
// (DefaultMaxBans when max <= 0).
func NewMemoryBans(max int) *MemoryBans {
	if max <= 0 {
		max = DefaultMaxBans
	}
	return &MemoryBans{m: make(map[Client]*BanInfo), max: max}
}

// Ban implements Bans.
func (b *MemoryBans) Ban(_ context.Context, client Client, now int64, base, max time.Duration, reason string) BanInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[client]
	if !ok || e.Until+int64(StrikeMemory) < now {
		if !ok && len(b.m) >= b.max {
			b.evict(now)
		}
		e = &BanInfo{Client: client}
		b.m[client] = e
	}
	if e.Until > now {
		return *e // banned already: a second trap hit does not lengthen it
	}
	e.Strikes++
	e.Until = now + int64(banLength(base, max, e.Strikes))
	e.Reason = reason
	b.active.Store(int64(len(b.m)))
	return *e
}

// banLocal is Ban for a ban this instance decides alone (the shared store
// is down): a resync keeps it until it ends.
func (b *MemoryBans) banLocal(client Client, now int64, base, max time.Duration, reason string) BanInfo {
	in := b.Ban(context.Background(), client, now, base, max, reason) // memory: no wait
	b.mu.Lock()
	if e, ok := b.m[client]; ok {
		e.local = true
	}
	b.mu.Unlock()
	return in
}

// Active reports whether any entry is held (a ban, or a finished one's
// strikes); when none is, Until answers 0 without a lookup, and callers
// may skip finding the client's key.
func (b *MemoryBans) Active() bool { return b.active.Load() != 0 }

// set records a ban decided elsewhere (a shared store).
func (b *MemoryBans) set(in BanInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[in.Client]; !ok && len(b.m) >= b.max {
		b.evict(time.Now().UnixNano())
	}
	e := in
	b.m[in.Client] = &e
	b.active.Store(int64(len(b.m)))
}

// replace sets the whole list (a resync from a shared store, longest
// first), keeping the bans this instance decided alone while the store was
// down until they end.
func (b *MemoryBans) replace(list []BanInfo, now int64) {
	m := make(map[Client]*BanInfo, len(list))
	for _, in := range list {
		if len(m) >= b.max {
			break
		}
		e := in
		m[in.Client] = &e
	}
	b.mu.Lock()
	for k, e := range b.m {
		if _, ok := m[k]; !ok && e.local && e.Until > now && len(m) < b.max {
			m[k] = e
		}
	}
	b.m = m
	b.active.Store(int64(len(m)))
	b.mu.Unlock()
}

// evict drops finished entries, then the bans that end soonest (1%).
func (b *MemoryBans) evict(now int64) {
	for k, e := range b.m {
		if e.Until+int64(StrikeMemory) < now {
			delete(b.m, k)
		}
	}
	if len(b.m) < b.max {
		return
	}
	all := make([]*BanInfo, 0, len(b.m))
	for _, e := range b.m {
		all = append(all, e)
	}
	slices.SortFunc(all, func(x, y *BanInfo) int { return int(min(max(x.Until-y.Until, -1), 1)) })
	for _, e := range all[:max(1, len(all)/100)] {
		delete(b.m, e.Client)
	}
}

// Until implements Bans.
func (b *MemoryBans) Until(client Client, now int64) int64 {
	if b.active.Load() == 0 {
		return 0
	}
	b.mu.RLock()
	e, ok := b.m[client]
	var until int64
	if ok {
		until = e.Until
	}
	b.mu.RUnlock()
	if until > now {
		return until
	}
	return 0
}

// Unban implements Bans.
func (b *MemoryBans) Unban(_ context.Context, client Client) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.m[client]
	delete(b.m, client)
	b.active.Store(int64(len(b.m)))
	return ok
}

// List implements Bans.
func (b *MemoryBans) List(_ context.Context, now int64) []BanInfo {
	b.mu.RLock()
	var out []BanInfo
	for _, e := range b.m {
		if e.Until > now {
			out = append(out, *e)
		}
	}
	b.mu.RUnlock()
	slices.SortFunc(out, func(x, y BanInfo) int { return int(min(max(y.Until-x.Until, -1), 1)) })
	return out
}

// Len returns the number of entries held (bans and remembered strikes).
func (b *MemoryBans) Len() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.m)
}

var _ Bans = (*MemoryBans)(nil)
