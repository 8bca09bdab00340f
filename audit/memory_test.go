package audit

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/guard"
)

// genLog is a log of n lines written as it is read: line appends the
// i-th line to buf.
type genLog struct {
	i, n int
	buf  []byte
	line func(buf []byte, i int) []byte
}

func (l *genLog) Read(p []byte) (int, error) {
	for len(l.buf) < len(p) && l.i < l.n {
		l.buf = l.line(l.buf, l.i)
		l.i++
	}
	if len(l.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.buf)
	l.buf = l.buf[:copy(l.buf, l.buf[n:])]
	return n, nil
}

// clientsLog is a Combined log of n lines, one request of a bot from each
// of n addresses to a path robots.txt disallows: n clients, each one the
// guard would have stopped.
func clientsLog(n int) *genLog {
	return &genLog{n: n, line: func(buf []byte, i int) []byte {
		return fmt.Appendf(buf, "10.%d.%d.%d - - [%s] \"GET /private/%d HTTP/1.1\" 200 512 \"-\" \"FooBot/1.0 (+https://foo.example/bot)\"\n",
			i>>16&255, i>>8&255, i&255, t46.Add(time.Duration(i)*time.Millisecond).Format("02/Jan/2006:15:04:05 -0700"), i%100)
	}}
}

// heapPeak samples the heap in use every few milliseconds until stop is
// called, which returns the highest sample.
func heapPeak() (stop func() uint64) {
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// Memory bounds of an audit of a million clients (docs/audit.md): the
// heap it keeps once read, and the highest heap in use meanwhile.
const (
	millionLive = 150 << 20
	millionPeak = 300 << 20
)

// TestMillionClients: a log of 1,000,000 clients, each stopped once, is
// judged within fixed memory (the rows bounded at DefaultMaxRows, the
// clients beyond told apart by a hash each), and every one of them is
// counted: the rows listed and the others.
func TestMillionClients(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a million lines: not in -short, nor under the race detector")
	}
	const n = 1_000_000
	// The heap before: what earlier tests left is not the audit's.
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	a := newTestAuditor(t, guard.Config{}, Options{Site: "https://example.com"})
	stop := heapPeak()
	start := time.Now()
	if err := a.Read(context.Background(), clientsLog(n), "million.log"); err != nil {
		t.Fatal(err)
	}
	res := a.Result()
	peak := stop()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := ms.HeapAlloc - min(ms.HeapAlloc, base.HeapAlloc)
	peak -= min(peak, base.HeapInuse)
	s := res.Sites[0]
	t.Logf("%d lines in %s: heap %d MB kept, %d MB at the most", n, time.Since(start).Round(time.Millisecond), live>>20, peak>>20)
	if s.Requests != n || len(s.Offenders) != DefaultMaxRows || s.Unlisted != n-DefaultMaxRows || s.UnlistedAtLeast {
		t.Errorf("%d requests, %d rows listed, %d unlisted (at least: %v); want %d, %d, %d", s.Requests, len(s.Offenders), s.Unlisted, s.UnlistedAtLeast,
			n, DefaultMaxRows, n-DefaultMaxRows)
	}
	if live > millionLive || peak > millionPeak {
		t.Errorf("heap %d MB kept, %d MB at the most; the bounds are %d and %d MB", live>>20, peak>>20, millionLive>>20, millionPeak>>20)
	}
	runtime.KeepAlive(res)
}
