package integration_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// caddyBin is the cmd/caddy binary built once for the tests that run it.
var caddyBin struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// buildCaddy builds cmd/caddy once per test run and returns its path.
func buildCaddy(t *testing.T) string {
	t.Helper()
	caddyBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "robotsguard-caddy-")
		if err != nil {
			caddyBin.err = err
			return
		}
		caddyBin.path = filepath.Join(dir, "caddy")
		build := exec.Command("go", "build", "-o", caddyBin.path, "./cmd/caddy")
		build.Dir = ".."
		caddyBin.out, caddyBin.err = build.CombinedOutput()
	})
	if caddyBin.err != nil {
		t.Fatalf("go build ./cmd/caddy: %v\n%s", caddyBin.err, caddyBin.out)
	}
	return caddyBin.path
}

// TestMain removes the binary buildCaddy made.
func TestMain(m *testing.M) {
	code := m.Run()
	if caddyBin.path != "" {
		os.RemoveAll(filepath.Dir(caddyBin.path))
	}
	os.Exit(code)
}

// TestDemo builds the real cmd/caddy binary, starts it with
// Caddyfile.example as the README says, and checks the README's curl
// examples; then it runs the "caddy robots" command on the demo's
// robots.txt.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the cmd/caddy binary")
	}
	// The demo's ports come from the environment (Caddyfile.example's
	// {$DEMO_PORT:8080} ...): free ones, so that the test runs beside a
	// demo or another Caddy on the usual ports.
	port, upstreamPort, adminPortDemo := freePort(t), freePort(t), freePort(t)
	site := fmt.Sprintf("http://localhost:%d", port)
	bin := buildCaddy(t)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(),
		fmt.Sprintf("DEMO_PORT=%d", port), fmt.Sprintf("DEMO_UPSTREAM_PORT=%d", upstreamPort), fmt.Sprintf("DEMO_ADMIN_PORT=%d", adminPortDemo))
	ctx, cancel := context.WithCancel(context.Background())
	caddy := exec.CommandContext(ctx, bin, "run", "--config", "Caddyfile.example")
	caddy.Dir, caddy.Env = "..", env
	var logs bytes.Buffer
	caddy.Stdout, caddy.Stderr = &logs, &logs
	if err := caddy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		caddy.Wait()
		if t.Failed() {
			t.Logf("caddy output:\n%s", logs.String())
		}
	})
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(site + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo did not answer on %s within 30 s: %v", site, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	do := func(ua, path string) answer { return browserGet(t, client, site+path, ua) }
	// The README's curl examples, in order.
	do(browserUA, "/private/").check(t, "browser /private/", 200, "Private area")
	do(gptbotUA, "/blog/").check(t, "GPTBot /blog/", 403, "Disallowed by robots.txt line 8 for GPTBot")
	do("FooBot/1.0", "/blog/").check(t, "FooBot /blog/", 200, "Blog")
	do("FooBot/1.0", "/private/").check(t, "FooBot /private/", 403, "Disallowed by robots.txt line 17 for *")
	for i := range burst {
		do("SlowBot/2.0", "/blog/").check(t, fmt.Sprintf("SlowBot request %d", i+1), 200, "Blog")
	}
	a := do("SlowBot/2.0", "/blog/")
	a.check(t, "SlowBot fourth", 429, "Crawl-delay of robots.txt for SlowBot exceeded")
	if got := a.header.Get("Retry-After"); got != "3" { // 3 × 5 s less the 12.5 s tolerance, rounded up
		t.Errorf("SlowBot Retry-After %q, want 3", got)
	}
	do("GPTBot/1.2", "/robots.txt").check(t, "GPTBot /robots.txt", 200, "User-agent: GPTBot")

	dir := t.TempDir()
	htmlFile := filepath.Join(dir, "robots.html")
	os.WriteFile(htmlFile, []byte("<!DOCTYPE html>\n<html><body>app</body></html>\n"), 0o644)
	badFile, badHostPort := filepath.Join(dir, "bad-file.caddyfile"), filepath.Join(dir, "bad-hostport.caddyfile")
	os.WriteFile(badFile, []byte("http://127.0.0.1:1 {\n\trobots_guard {\n\t\trobots_txt /nonexistent/robots.txt\n\t}\n\trespond ok\n}\n"), 0o644)
	os.WriteFile(badHostPort, []byte("http://127.0.0.1:1 {\n\trobots_guard {\n\t\trobots_txt localhost:8081/robots.txt\n\t}\n\trespond ok\n}\n"), 0o644)

	// caddy robots test / lint, as in docs/admin-api.md.
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"robots", "test", "--ua", "Mozilla/5.0 (compatible; GPTBot/1.2)", "--file", "demo/robots.txt", "/blog/", "/robots.txt"}, 1,
			[]string{"/blog/", "DISALLOWED", "GPTBot", "line 8: Disallow: /", "/robots.txt", "allowed"}},
		{[]string{"robots", "test", "--ua", "SlowBot/2.0", "--file", "demo/robots.txt", "/blog/"}, 0,
			[]string{"/blog/", "allowed", "SlowBot", "5s"}},
		{[]string{"robots", "lint", "demo/robots.txt"}, 0, []string{"no findings"}},
		{[]string{"robots", "test", "--file", "demo/robots.txt", "/x"}, 2, nil},
		// Usage errors exit 2, as the README says.
		{[]string{"robots", "test", "--ua", "GPTBot", "--file", "demo/robots.txt"}, 2, []string{"requires at least 1 arg", "usage: caddy robots test"}},
		{[]string{"robots", "test", "--bogus", "/x"}, 2, []string{"unknown flag: --bogus"}},
		{[]string{"robots", "lint"}, 2, []string{"accepts 1 arg"}},
		{[]string{"robots", "lint", htmlFile}, 1, []string{"this is an HTML page, not a robots.txt"}},
		// A robots_txt that would leave every site without rules fails
		// caddy validate, naming the field.
		{[]string{"validate", "--config", badFile}, 1, []string{"robots_txt", "no such file or directory"}},
		{[]string{"validate", "--config", badHostPort}, 1, []string{"robots_txt", "looks like a host and port without a scheme", "http://localhost:8081/robots.txt"}},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Dir, cmd.Env = "..", env
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code {
			t.Errorf("caddy %s: exit %d, want %d\n%s", strings.Join(c.args, " "), code, c.code, out)
		}
		s := string(out)
		for _, w := range c.want {
			i := strings.Index(s, w)
			if i < 0 {
				t.Errorf("caddy %s: output lacks %q (in order):\n%s", strings.Join(c.args, " "), w, out)
				break
			}
			s = s[i+len(w):]
		}
	}
}
