// Package testport hands tests free loopback ports.
package testport

import (
	"net"
	"sync"
	"testing"
)

// Free returns a loopback port that was free a moment ago and that Free
// has not returned before in this process: the kernel may give a port it
// gave a moment ago, which another test has not bound yet.
func Free(t testing.TB) int {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handed[port] {
			handed[port] = true
			return port
		}
	}
}

// handed are the ports Free gave out in this process (test state).
var (
	mu     sync.Mutex
	handed = map[int]bool{}
)
