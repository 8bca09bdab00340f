// Package testclock is a settable clock for tests: decisions, caches and
// reports take a func() time.Time, and a test moves time with Add instead
// of sleeping.
package testclock

import (
	"sync"
	"testing"
	"time"
)

// Clock is a settable clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a Clock at 2026-01-01 00:00 UTC.
func New() *Clock { return &Clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// WaitFor polls cond every 2 ms until it holds, and fails t when it does
// not within 5 s (real time: for background work a test started).
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5s")
}

// WaitDoing is WaitFor that calls do before each look. A background
// refresh is started by a request that finds it due, and a request that
// comes while the previous refresh is still finishing (its result already
// observed, its flag not yet cleared) starts none: so the request is made
// again until the work it starts is seen. Once that work has set its next
// due time (the clock standing still), further requests start nothing.
func WaitDoing(t testing.TB, do func(), cond func() bool) {
	t.Helper()
	WaitFor(t, func() bool {
		do()
		return cond()
	})
}
