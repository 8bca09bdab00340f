package middleware

import (
	"net/netip"
	"sync"
	"time"
)

// limitKey identifies one Crawl-delay budget: site, group and client-IP
// prefix (the zero address when keyed by group only). The strings share
// memory with the site cache and the parsed robots.txt, so a key costs its
// 48 bytes plus the map's overhead.
type limitKey struct {
	site  string
	group string
	ip    [16]byte
}

// limiter is a GCRA rate limiter with burst 1: one int64 per key, the
// theoretical arrival time (TAT) of the next request. A request at now is
// allowed iff now >= TAT; then TAT = max(TAT, now) + delay. A key whose TAT
// has passed holds no information and may be dropped.
type limiter struct {
	mu   sync.Mutex
	tats map[limitKey]int64
	max  int
}

func newLimiter(max int) *limiter {
	return &limiter{tats: make(map[limitKey]int64), max: max}
}

// allow reports whether a request at now may pass for key under delay and,
// if not, how long it must wait.
func (l *limiter) allow(k limitKey, now int64, delay time.Duration) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, ok := l.tats[k]
	if ok && now < tat {
		return false, time.Duration(tat - now)
	}
	if !ok && len(l.tats) >= l.max {
		l.evict(now)
	}
	l.tats[k] = max(tat, now) + int64(delay)
	return true, 0
}

// evict makes room: it drops every expired key and, when none has expired,
// about 1% of the keys (at least one) in map order, which is arbitrary.
// Dropping a live key only forgets that client's remaining wait.
func (l *limiter) evict(now int64) {
	for k, tat := range l.tats {
		if tat <= now {
			delete(l.tats, k)
		}
	}
	if len(l.tats) < l.max {
		return
	}
	n := max(1, len(l.tats)/100)
	for k := range l.tats {
		delete(l.tats, k)
		if n--; n == 0 {
			break
		}
	}
}

// len returns the number of keys.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tats)
}

// ipKey parses "ip" or "ip:port" and masks it to the configured prefix. It
// returns the zero key for unparsable input, so such clients share a budget.
func ipKey(s string, v4bits, v6bits int) [16]byte {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return [16]byte{}
		}
		a = ap.Addr()
	}
	a = a.Unmap().WithZone("")
	bits := v6bits
	if a.Is4() {
		bits = v4bits
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return [16]byte{}
	}
	return p.Addr().As16()
}
