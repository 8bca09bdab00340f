// Package caddyrun holds what the bench commands share to measure a real
// Caddy: building ../cmd/caddy, an upstream on loopback, free ports.
package caddyrun

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
