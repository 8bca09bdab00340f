package sites

import (
	"encoding/hex"
	"sync"
	"time"
)

// Bounds of a site's history.
const (
	// maxVersions is how many versions of a site's robots.txt are kept,
	// the newest; older ones are dropped.
	maxVersions = 20
	// maxHistoryText is how many bytes of text a site's history keeps:
	// the texts of the oldest versions beyond it are dropped (their
	// hash, size and dates stay).
	maxHistoryText = 1 << 20
	// historyStoreEvery is how often a LastSeen that moved is written to
	// the HistoryStore (a new version is written at once).
	historyStoreEvery = 15 * time.Minute
)

// Version is one robots.txt a site has served, with when it was first
// and last seen in force: what an audit of past requests judges each one
// by (the version in force at its time).
type Version struct {
	// SHA256 is the hex SHA-256 of the body; empty for no file (a 4xx).
	SHA256 string `json:"sha256,omitempty"`
	// Outcome is "ok", "html" or "unavailable" (see Outcome).
	Outcome string `json:"outcome"`
	// Status is the HTTP status of the fetch that got it.
	Status int `json:"status,omitempty"`
	// Bytes is the body's size.
	Bytes int `json:"bytes"`
	// FirstSeen is when a fetch first got it; LastSeen when one last
	// confirmed it (a 304 or the same body again).
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// Text is the body; empty when the history's byte bound dropped it.
	Text string `json:"text,omitempty"`
}

// HistoryStore keeps the version histories of the sites that
// Config.SiteNames names across restarts (the Caddy module keeps them in
// Caddy's storage). Calls come from fetches, at most one at a time per
// site.
type HistoryStore interface {
	// LoadHistory returns the stored history of site, oldest first.
	LoadHistory(site string) ([]Version, bool)
	// StoreHistory replaces the stored history of site.
	StoreHistory(site string, h []Version)
}

// siteHistory is a Site's versions, oldest first.
type siteHistory struct {
	load     sync.Once  // the stored history is read once, outside mu
	mu       sync.Mutex // guards the fields below
	versions []Version
	stored   time.Time // when a write to the store was last started
	seq      uint64    // the number of the last write started
	// storeMu orders the writes of the background writers; written is
	// the number of the last one done (a late writer with an older copy
	// skips).
	storeMu sync.Mutex
	written uint64
}

// History returns the versions of the site's robots.txt this Cache has
// seen (and, for a named site, its HistoryStore kept), oldest first.
func (e *Site) History() []Version {
	e.hist.mu.Lock()
	defer e.hist.mu.Unlock()
	return append([]Version(nil), e.hist.versions...)
}

// recordVersion adds what a fetch got (st, from body) to e's history: a
// new version, or the last one seen again. Only a named site's history
// keeps texts (the configuration bounds their number); other hosts keep
// hashes and dates, so a flood of Host names serving files of their own
// costs no text.
func (c *Cache) recordVersion(e *Site, st *State, body []byte, now time.Time) {
	v := Version{Outcome: st.Outcome.String(), Status: st.Status, Bytes: len(body), FirstSeen: now, LastSeen: now}
	if st.Outcome != Unavailable && st.Outcome != Unreachable {
		v.SHA256 = hex.EncodeToString(st.sum[:])
		if e.named {
			// The compiled copy's own text: sites that serve the same
			// file share it, as they share the copy.
			v.Text = st.Robots.Text()
		}
	}
	c.loadHistory(e)
	h := &e.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.versions); n > 0 && h.versions[n-1].SHA256 == v.SHA256 && h.versions[n-1].Outcome == v.Outcome && h.versions[n-1].Status == v.Status {
		h.versions[n-1].LastSeen = now
		c.storeHistory(e, now, false)
		return
	}
	h.versions = append(h.versions, v)
	h.versions = bounded(h.versions)
	c.storeHistory(e, now, true)
}

// bounded cuts a history to its bounds: the newest maxVersions, and the
// texts of the oldest dropped beyond maxHistoryText bytes.
func bounded(vs []Version) []Version {
	if len(vs) > maxVersions {
		vs = append(vs[:0:0], vs[len(vs)-maxVersions:]...)
	}
	total := 0
	for i := len(vs) - 1; i >= 0; i-- {
		if total += len(vs[i].Text); total > maxHistoryText {
			vs[i].Text = ""
		}
	}
	return vs
}

// touchVersion marks e's last version seen at now (a 304).
func (c *Cache) touchVersion(e *Site, now time.Time) {
	h := &e.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.versions); n > 0 {
		h.versions[n-1].LastSeen = now
		c.storeHistory(e, now, false)
	}
}

// loadHistory reads a named site's stored history, once, before the
// versions this Cache saw.
func (c *Cache) loadHistory(e *Site) {
	e.hist.load.Do(func() {
		if c.history == nil || !e.named {
			return
		}
		stored, ok := c.history.LoadHistory(e.site)
		if !ok {
			return
		}
		e.hist.mu.Lock()
		defer e.hist.mu.Unlock()
		e.hist.versions = bounded(append(stored[:len(stored):len(stored)], e.hist.versions...))
	})
}

// Wait waits for the history writes under way to end, and starts no
// more: the Engine's Close calls it, so that nothing writes to a store
// after its owner is done with it (a background fetch may still finish
// after it).
func (c *Cache) Wait() { c.writes.close() }

// historyWrites counts the background history writes. A WaitGroup alone
// may not get an Add while it is waited on (a fetch that ends while the
// Engine closes did so: the race detector saw it), so writes start under
// a lock that closing takes too, and none starts after.
type historyWrites struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// start reports whether a write may start, counting it when it may.
func (w *historyWrites) start() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.wg.Add(1)
	return true
}

// close refuses further writes and waits for those under way.
func (w *historyWrites) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wg.Wait()
}

// storeHistory starts writing a named site's history to the store, in
// the background (a remote storage may be slow; the fetch does not wait):
// at once for a new version, at most every historyStoreEvery otherwise.
// e.hist.mu is held.
func (c *Cache) storeHistory(e *Site, now time.Time, changed bool) {
	h := &e.hist
	if c.history == nil || !e.named || (!changed && now.Sub(h.stored) < historyStoreEvery) {
		return
	}
	if !c.writes.start() {
		return // the Engine is closed: its store is no longer ours
	}
	h.stored = now
	h.seq++
	seq, vs := h.seq, append([]Version(nil), h.versions...)
	go func() {
		defer c.writes.wg.Done()
		h.storeMu.Lock()
		defer h.storeMu.Unlock()
		if seq <= h.written {
			return // a newer copy is written already
		}
		h.written = seq
		c.history.StoreHistory(e.site, vs)
	}()
}
