// Command holdports listens on the given loopback ports until it is
// killed, so that CI runs the tests while other servers hold the ports a
// developer's machine has in use (the demo's 8080 and 8081, Caddy's admin
// 2019, caddytest's 2999): the tests must take free ports of their own. A
// port that something else already holds is held all the same. It prints
// "ready" once it listens.
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	for _, p := range os.Args[1:] {
		l, err := net.Listen("tcp", "127.0.0.1:"+p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "holdports: %s: %v (held by something else)\n", p, err)
			continue
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
