package limit

import (
	"container/heap"
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
	// Dropped reports that the ban was refused: the list holds max_bans
	// live bans, none of which is lifted to make room.
	Dropped bool

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

// MemoryBans is the in-memory Bans: at most max entries, each a ban or
// the remembered strikes of one that ended (for the doubling). A live ban
// is never dropped to make room for another: when the list is full, the
// entry that ended longest ago goes, and when every entry is a live ban,
// the new ban is refused (BanInfo.Dropped) rather than lifting an old one,
// so a flood of other addresses cannot undo a ban. The entries sit in a
// heap by the end of their ban, so making room costs O(log n) under the
// lock, never a scan or a sort.
type MemoryBans struct {
	mu     sync.RWMutex
	m      map[Client]*banEntry
	ends   banHeap // the entries by Until, soonest first
	max    int
	active atomic.Int64 // entries; 0 lets Until skip the lock
	// maybeLocal: a ban may be held that this instance decided alone
	// (banLocal); locals looks for them only then.
	maybeLocal atomic.Bool
}

// banEntry is one entry of a MemoryBans, with its place in the heap.
type banEntry struct {
	BanInfo
	idx int
}

// banHeap orders entries by the end of their ban (container/heap).
type banHeap []*banEntry

func (h banHeap) Len() int           { return len(h) }
func (h banHeap) Less(i, j int) bool { return h[i].Until < h[j].Until }
func (h banHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *banHeap) Push(x any) {
	e := x.(*banEntry)
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *banHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// NewMemoryBans returns an empty MemoryBans holding at most max entries
// (DefaultMaxBans when max <= 0).
func NewMemoryBans(max int) *MemoryBans {
	if max <= 0 {
		max = DefaultMaxBans
	}
	return &MemoryBans{m: make(map[Client]*banEntry), max: max}
}

// Ban implements Bans. When the list is full of live bans, the ban is
// refused: the result has Dropped set and no Until.
func (b *MemoryBans) Ban(_ context.Context, client Client, now int64, base, max time.Duration, reason string) BanInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[client]
	if ok && e.Until > now {
		return e.BanInfo // banned already: a second trap hit does not lengthen it
	}
	if !ok || e.Until+int64(StrikeMemory) < now {
		if !ok && !b.room(now) {
			return BanInfo{Client: client, Reason: reason, Dropped: true}
		}
		if ok {
			e.Strikes = 0 // its strikes are forgotten
		} else {
			e = &banEntry{BanInfo: BanInfo{Client: client}}
			b.m[client] = e
			heap.Push(&b.ends, e)
		}
	}
	e.Strikes++
	e.Until = now + int64(banLength(base, max, e.Strikes))
	e.Reason = reason
	heap.Fix(&b.ends, e.idx)
	b.active.Store(int64(len(b.m)))
	return e.BanInfo
}

// room makes room for one more entry, dropping the entry whose ban ended
// longest ago; it reports false when every entry is a live ban. The lock
// is held.
func (b *MemoryBans) room(now int64) bool {
	if len(b.m) < b.max {
		return true
	}
	if len(b.ends) == 0 || b.ends[0].Until > now {
		return false
	}
	e := heap.Pop(&b.ends).(*banEntry)
	delete(b.m, e.Client)
	return true
}

// banLocal is Ban for a ban this instance decides alone (the shared store
// is down): a resync keeps it until it ends.
func (b *MemoryBans) banLocal(client Client, now int64, base, max time.Duration, reason string) BanInfo {
	in := b.Ban(context.Background(), client, now, base, max, reason) // memory: no wait
	b.mu.Lock()
	if e, ok := b.m[client]; ok && !in.Dropped {
		e.local = true
		b.maybeLocal.Store(true)
	}
	b.mu.Unlock()
	return in
}

// locals returns the bans in force at now that this instance decided
// alone while the shared store was down (banLocal).
func (b *MemoryBans) locals(now int64) []BanInfo {
	if !b.maybeLocal.Load() {
		return nil // the common case: no scan of the list
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []BanInfo
	for _, e := range b.m {
		if e.local && e.Until > now {
			out = append(out, e.BanInfo)
		}
	}
	if len(out) == 0 {
		b.maybeLocal.Store(false) // under the read lock: banLocal, which sets it, holds the write lock
	}
	return out
}

// shared marks client's ban as written to the shared store.
func (b *MemoryBans) shared(client Client) {
	b.mu.Lock()
	if e, ok := b.m[client]; ok {
		e.local = false
	}
	b.mu.Unlock()
}

// Active reports whether any entry is held (a ban, or a finished one's
// strikes); when none is, Until answers 0 without a lookup, and callers
// may skip finding the client's key.
func (b *MemoryBans) Active() bool { return b.active.Load() != 0 }

// set records a ban decided elsewhere (a shared store), with the same rule
// as Ban: it never pushes out a live ban. It reports false when there was
// no room.
func (b *MemoryBans) set(in BanInfo) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.m[in.Client]; ok {
		e.BanInfo = in
		heap.Fix(&b.ends, e.idx)
		return true
	}
	if !b.room(time.Now().UnixNano()) {
		return false
	}
	e := &banEntry{BanInfo: in}
	b.m[in.Client] = e
	heap.Push(&b.ends, e)
	b.active.Store(int64(len(b.m)))
	return true
}

// replace sets the whole list (a resync from a shared store, longest
// first), keeping the bans this instance decided alone while the store was
// down until they end.
func (b *MemoryBans) replace(list []BanInfo, now int64) {
	m := make(map[Client]*banEntry, len(list))
	for _, in := range list {
		if len(m) >= b.max {
			break
		}
		m[in.Client] = &banEntry{BanInfo: in}
	}
	b.mu.Lock()
	for k, e := range b.m {
		if _, ok := m[k]; !ok && e.local && e.Until > now && len(m) < b.max {
			m[k] = e
		}
	}
	ends := make(banHeap, 0, len(m))
	for _, e := range m {
		e.idx = len(ends)
		ends = append(ends, e)
	}
	heap.Init(&ends)
	b.m, b.ends = m, ends
	b.active.Store(int64(len(m)))
	b.mu.Unlock()
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
	e, ok := b.m[client]
	if ok {
		heap.Remove(&b.ends, e.idx)
		delete(b.m, client)
	}
	b.active.Store(int64(len(b.m)))
	return ok
}

// List implements Bans.
func (b *MemoryBans) List(_ context.Context, now int64) []BanInfo {
	b.mu.RLock()
	var out []BanInfo
	for _, e := range b.m {
		if e.Until > now {
			out = append(out, e.BanInfo)
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
