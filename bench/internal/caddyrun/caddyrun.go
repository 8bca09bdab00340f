// Package caddyrun holds what the bench commands share to measure a real
// Caddy: building ../cmd/caddy, an upstream on loopback, free ports, a
// keep-alive load and a process's CPU time.
package caddyrun

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Build builds ../cmd/caddy (run from the bench directory) into dir and
// returns the binary's path.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "caddy")
	fmt.Println("building ../cmd/caddy ...")
	build := exec.Command("go", "build", "-o", bin, "./cmd/caddy")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build caddy (run from the bench directory): %w", err)
	}
	return bin, nil
}

// Upstream serves robots at /robots.txt and page at every other path, as
// text/plain, on a loopback port; it returns the listener's address.
func Upstream(robots, page string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, robots)
			return
		}
		io.WriteString(w, page)
	}))
	return l.Addr().String(), nil
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Load runs conc keep-alive clients that GET url with header for d, and
// returns the number of 200 answers and of failures.
func Load(client *http.Client, url string, header http.Header, conc int, d time.Duration) (ok, failed int64) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var okN, badN atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
				for k, v := range header {
					req.Header[k] = v
				}
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						badN.Add(1)
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					okN.Add(1)
				} else {
					badN.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return okN.Load(), badN.Load()
}

// CPUTime returns the user + system CPU time of a process so far, from
// /proc/<pid>/stat.
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

// WaitUp waits until Caddy answers on the loopback port, at most 20 s.
func WaitUp(client *http.Client, port int) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/robots.txt", port))
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("caddy did not answer on port %d within 20s", port)
}
