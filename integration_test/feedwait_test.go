package integration_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestFeedWaitThroughCaddy: a real crawler's first request after a start
// is never refused while its operator's feed loads. With the common
// robots.txt that lets Googlebot in and everyone else out, the built Caddy
// (fetch_feeds on_demand, the default) gets Googlebot's first request from
// a listed address while the feed is served 300 ms late: the claim waits
// for it and gets Googlebot's own group (200), not "*"'s 403 as
// unverifiable. Restarted with the same storage, while the feed server
// fails, the stored copy read at start verifies the first request at once.
func TestFeedWaitThroughCaddy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built Caddy")
	}
	up := newUpstream(t, "User-agent: Googlebot\nAllow: /\n\nUser-agent: *\nDisallow: /\n")
	var failing atomic.Bool
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"creationTime":"2026-11-01T00:00:00","prefixes":[{"ipv4Prefix":"66.249.64.0/27"}]}`)
	}))
	t.Cleanup(feed.Close)
	port := freePort(t)
	conf := fmt.Sprintf(`{
	admin off
	persist_config off
	servers {
		trusted_proxies static 127.0.0.1/32
		trusted_proxies_strict
		client_ip_headers X-Forwarded-For
	}
}
http://127.0.0.1:%d {
	robots_guard {
		verify {
			builtin off
			operator google {
				tokens Googlebot
				ip_ranges %s/goog.json
			}
		}
	}
	reverse_proxy %s
}
`, port, feed.URL, up.addr())
	first := func(what string, within time.Duration) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/page", port), nil)
		req.Header.Set("User-Agent", googlebotUA)
		req.Header.Set("X-Forwarded-For", "66.249.64.5")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if took := time.Since(start); resp.StatusCode != http.StatusOK || took > within {
			t.Errorf("%s: Googlebot's first request from a listed address: %d after %s, want 200 within %s",
				what, resp.StatusCode, took.Round(time.Millisecond), within)
		}
	}
	env := caddyEnv(t) // kept across the restart
	stop := startCaddyfile(t, conf, env, port)
	first("a start, the feed 300 ms late", 5*time.Second)
	stop()

	failing.Store(true)
	startCaddyfile(t, conf, env, port)
	first("a restart, the feed failing", 2*time.Second)
}
