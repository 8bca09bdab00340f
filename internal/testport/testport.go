// Package testport hands tests free loopback ports.
package testport

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

// Free returns a loopback port that was free a moment ago and that Free
// has not returned before in this process: the kernel may give a port it
// gave a moment ago, which another test has not bound yet.
func Free(t testing.TB) int { return FreeWith(t, 0) }

// FreeWith is Free for a server that also binds port+offset (a Redis
// Cluster node's bus port, port + 10000): that port was free too, and
// neither is handed out again.
func FreeWith(t testing.TB, offset int) int {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		ok := !handed[port]
		if ok && offset != 0 {
			other, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+offset))
			ok = err == nil && !handed[port+offset]
			if err == nil {
				other.Close()
			}
		}
		l.Close()
		if ok {
			handed[port], handed[port+offset] = true, true
			return port
		}
	}
}

// handed are the ports Free gave out in this process (test state).
var (
	mu     sync.Mutex
	handed = map[int]bool{}
)
