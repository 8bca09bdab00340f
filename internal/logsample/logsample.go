// Package logsample is a zap sampler whose counters are spread over one
// block per P, so that a sampled log line writes no memory that other Ps
// use: zap's own sampler increments one shared counter per message at
// every line, which under a flood of denials makes every CPU wait on one
// cache line.
package logsample

import (
	"runtime"
	"sync/atomic"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/robotsguard/robotsguard/internal/stripe"
)

// Sampler is zap's sampler (per tick and message: the first lines, then
// one in thereafter) with its counters spread over blocks, about one per
// P: a goroutine counts in the block of its stripe (internal/stripe), so
// that logging a denial writes no memory
// other Ps use (zap's own sampler increments one shared counter per
// message at every line). Each block lets through its share of the first
// lines (first ÷ blocks, at least one) and then one in thereafter, so the
// totals stay near zap's: about first lines a tick, then one in
// thereafter. The blocks outlive garbage collections (a collection only
// deals the stripe numbers again), so it does not reset the counts.
type Sampler struct {
	zapcore.Core
	*sampleBlocks
}

// sampleBlocks are the counters of a Sampler and its With copies.
type sampleBlocks struct {
	tick              int64 // ns
	first, thereafter uint64
	blocks            []sampleCounts
	stripes           *stripe.Set // the block of a line: about one per P
}

// sampleCounts is one block's counters, by message hash and level, on
// cache lines of its own (it is written at every line).
type sampleCounts struct {
	_ [64]byte
	c [sampleSlots]sampleCounter
	_ [64]byte
}

const sampleSlots = 64

// sampleCounter counts the lines of a tick, as zap's sampler does: the
// first line after resetAt starts a new tick.
type sampleCounter struct {
	resetAt atomic.Int64
	n       atomic.Uint64
}

func (c *sampleCounter) inc(t, tick int64) uint64 {
	r := c.resetAt.Load()
	if r > t {
		return c.n.Add(1)
	}
	c.n.Store(1)
	if !c.resetAt.CompareAndSwap(r, t+tick) {
		return c.n.Add(1) // another goroutine started the tick
	}
	return 1
}

// New wraps c in a Sampler with a block per P: per tick and per message,
// about the first lines are written (their share in each block, at least
// one), then one in thereafter.
func New(c zapcore.Core, tick time.Duration, first, thereafter int) zapcore.Core {
	return newBlocks(c, tick, first, thereafter, runtime.GOMAXPROCS(0))
}

// newBlocks is New with n blocks.
func newBlocks(c zapcore.Core, tick time.Duration, first, thereafter, n int) *Sampler {
	b := &sampleBlocks{tick: int64(tick), thereafter: uint64(thereafter), blocks: make([]sampleCounts, n)}
	b.first = uint64(max(1, (first+n-1)/n))
	b.stripes = stripe.New(n)
	return &Sampler{Core: c, sampleBlocks: b}
}

// With implements zapcore.Core; the new core shares the counters.
func (s *Sampler) With(fields []zapcore.Field) zapcore.Core {
	return &Sampler{Core: s.Core.With(fields), sampleBlocks: s.sampleBlocks}
}

// Check implements zapcore.Core: it counts the line in its P's block and
// passes it on if it is among the block's first of the tick or one in
// thereafter.
func (s *Sampler) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !s.Enabled(ent.Level) {
		return ce
	}
	h := uint32(2166136261) // FNV-1a of the message, as zap's sampler
	for i := 0; i < len(ent.Message); i++ {
		h = (h ^ uint32(ent.Message[i])) * 16777619
	}
	ip := s.stripes.Get()
	n := s.blocks[*ip].c[(h^uint32(ent.Level+2)*0x9e3779b9)%sampleSlots].inc(ent.Time.UnixNano(), s.tick)
	s.stripes.Put(ip)
	if n > s.first && (s.thereafter == 0 || (n-s.first)%s.thereafter != 0) {
		return ce
	}
	return s.Core.Check(ent, ce)
}
