package integration_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// browserGet sends GET url with client, as a browser would (the
// User-Agent ua and the headers browserHeaders sets, but those of drop),
// and returns the answer.
func browserGet(t *testing.T, client *http.Client, url, ua string, drop ...string) answer {
	t.Helper()
	req := browserRequest(t, url, ua)
	for _, h := range drop {
		req.Header.Del(h)
	}
	return send(t, client, req)
}

// browserRequest is GET url as a browser sends it: with the User-Agent ua
// and the headers browserHeaders sets.
func browserRequest(t *testing.T, url, ua string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", ua)
	browserHeaders(req.Header)
	return req
}

// send sends req with client and returns the answer.
func send(t *testing.T, client *http.Client, req *http.Request) answer {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

// runCaddyfile runs the built Caddy with the Caddyfile conf for the test's
// duration, its configuration and data its own, and waits until it
// listens on each of ports (of 127.0.0.1).
func runCaddyfile(t *testing.T, conf string, ports ...int) {
	t.Helper()
	startCaddyfile(t, conf, caddyEnv(t), ports...)
}

// startCaddyfile runs the built Caddy with the Caddyfile conf and the
// environment env (caddyEnv: a Caddy started again with the same env
// finds what the first stored), waits until it listens on each of ports
// (of 127.0.0.1), and returns stop, which ends it before the test does.
func startCaddyfile(t *testing.T, conf string, env []string, ports ...int) (stop func()) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	stop = process(t, buildCaddy(t), env, "run", "--config", file, "--adapter", "caddyfile")
	for _, port := range ports {
		waitListening(t, fmt.Sprintf("127.0.0.1:%d", port))
	}
	return stop
}

// caddyEnv is the environment of a Caddy whose configuration and data
// (XDG_CONFIG_HOME, XDG_DATA_HOME) are the test's own.
func caddyEnv(t *testing.T) []string {
	return []string{"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir()}
}
