package sites

import (
	"runtime"
	"weak"

	"github.com/robotsguard/robotsguard/policy"
)

// compiledCost estimates the memory a compiled robots.txt of n bytes
// keeps: measured from 21 times the body for a 122-byte file to 3.3 times
// for a 500 KiB one (7 times for facebook.com's 22 KB), so 8 times the body
// plus 4 KiB.
func compiledCost(n int) int64 { return 8*int64(n) + 4096 }

// setState stores st as e's copy, moves e's charge to st's compiled file,
// and drops least recently used sites while the distinct compiled files
// are estimated over Config.MaxBytes.
func (c *Cache) setState(e *Site, st *State) {
	c.compiledMu.Lock()
	e.state.Store(st)
	if !e.evicted.Load() {
		c.charge(e, st)
	}
	over := c.held > c.maxBytes
	c.compiledMu.Unlock()
	if over {
		c.trim(e)
	}
}

// charge counts e for st's compiled file instead of the one it was
// counted for. compiledMu is held.
func (c *Cache) charge(e *Site, st *State) {
	if old := e.charged; old != nil {
		if c.charges[old.sum]--; c.charges[old.sum] <= 0 {
			delete(c.charges, old.sum)
			c.held -= compiledCost(old.Size)
		}
		e.charged = nil
	}
	if st != nil && st.Size > 0 && !st.Unreachable {
		if c.charges[st.sum]++; c.charges[st.sum] == 1 {
			c.held += compiledCost(st.Size)
		}
		e.charged = st
	}
}

// release is called for an entry the cache drops: its charge and its
// refresh timer go.
func (c *Cache) release(e *Site) {
	c.compiledMu.Lock()
	c.charge(e, nil)
	c.compiledMu.Unlock()
	e.timerMu.Lock()
	if e.timer != nil {
		e.timer.Stop()
	}
	e.timerMu.Unlock()
}

// trim drops least recently used sites other than keep while the estimate
// is over the bound.
func (c *Cache) trim(keep *Site) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		c.compiledMu.Lock()
		over := c.held > c.maxBytes
		c.compiledMu.Unlock()
		if !over || !c.lru.removeOldest(keep) {
			return
		}
	}
}

// heldBytes returns the estimate of the compiled files in use.
func (c *Cache) heldBytes() int64 {
	c.compiledMu.Lock()
	defer c.compiledMu.Unlock()
	return c.held
}

// parse returns the compiled form of body, shared with every other site
// whose robots.txt has the same bytes.
func (c *Cache) parse(k [32]byte, body []byte) *policy.Robots {
	c.compiledMu.Lock()
	if r := c.compiled[k].Value(); r != nil {
		c.compiledMu.Unlock()
		return r
	}
	c.compiledMu.Unlock()
	r := policy.Parse(body)
	c.compiledMu.Lock()
	defer c.compiledMu.Unlock()
	if old := c.compiled[k].Value(); old != nil {
		return old // another site compiled it meanwhile
	}
	wp := weak.Make(r)
	c.compiled[k] = wp
	runtime.AddCleanup(r, func(k [32]byte) {
		c.compiledMu.Lock()
		if c.compiled[k] == wp {
			delete(c.compiled, k)
		}
		c.compiledMu.Unlock()
	}, k)
	return r
}

// compiledLen returns the number of compiled files held, for tests.
func (c *Cache) compiledLen() int {
	c.compiledMu.Lock()
	defer c.compiledMu.Unlock()
	return len(c.compiled)
}
