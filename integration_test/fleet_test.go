package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testredis"
)

// fleet runs n cmd/caddy processes with the same site, each bound to its
// own loopback address (127.0.0.2, 127.0.0.3, ...) on one port, as
// instances behind a load balancer are: one site, so one Crawl-delay
// budget per bot when they share a store.
type fleet struct {
	port  int
	addrs []string
}

func startFleet(t *testing.T, n int, upstream, store string) *fleet {
	t.Helper()
	bin := buildCaddy(t)
	port := freePort(t)
	f := &fleet{port: port}
	for i := range n {
		ip := fmt.Sprintf("127.0.0.%d", i+2)
		if l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, port)); err != nil {
			t.Skipf("cannot bind %s (loopback aliases): %v", ip, err)
		} else {
			l.Close()
		}
		dir := t.TempDir()
		conf := fmt.Sprintf(`{
	admin off
	persist_config off
	storage file_system %s
}
http://:%d {
	bind %s
	robots_guard {
		%s
	}
	reverse_proxy %s
}
`, filepath.ToSlash(dir), port, ip, store, upstream)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(conf), 0o644)
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, bin, "run", "--config", file, "--adapter", "caddyfile")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cancel()
			cmd.Wait()
			if t.Failed() {
				t.Logf("instance %s output:\n%s", ip, logs.String())
			}
		})
		f.addrs = append(f.addrs, fmt.Sprintf("%s:%d", ip, port))
	}
	// Wait for each, and warm its robots.txt cache with a bot that has no
	// Crawl-delay.
	for _, a := range f.addrs {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, _ := f.get(t, a, "FastBot/1.0")
			if code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %s not ready within 30s (last status %d)", a, code)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return f
}

var fleetClient = &http.Client{Timeout: 5 * time.Second}

// get sends GET /page to the instance at addr with the site's Host.
func (f *fleet) get(t *testing.T, addr, ua string) (int, string) {
	return f.getPath(t, addr, "/page", ua)
}

// getPath sends GET path to the instance at addr with the site's Host.
func (f *fleet) getPath(t *testing.T, addr, path, ua string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	req.Host = fmt.Sprintf("shop.example:%d", f.port)
	req.Header.Set("User-Agent", ua)
	browserHeaders(req.Header)
	resp, err := fleetClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

const fleetRobots = "User-agent: SlowBot\nCrawl-delay: 1\nDisallow: /private/\n\nUser-agent: FastBot\nDisallow: /private/\n"

// floodFleet sends SlowBot's requests round-robin to the instances at five
// times its Crawl-delay rate for d, and returns the admitted count, the
// window and the Retry-After values of the refusals.
func floodFleet(t *testing.T, f *fleet, d time.Duration) (admitted int, window time.Duration, retryAfters []string) {
	const every = 200 * time.Millisecond // delay 1 s: five times the rate
	start := time.Now()
	var first, last time.Time
	for i := 0; time.Since(start) < d; i++ {
		next := start.Add(time.Duration(i) * every)
		time.Sleep(time.Until(next))
		code, ra := f.get(t, f.addrs[i%len(f.addrs)], "SlowBot/2.0")
		switch code {
		case 200:
			admitted++
			if first.IsZero() {
				first = time.Now()
			}
			last = time.Now()
		case 429:
			retryAfters = append(retryAfters, ra)
		default:
			t.Fatalf("request %d: status %d", i, code)
		}
	}
	return admitted, last.Sub(first), retryAfters
}

// TestFleetSharesCrawlDelay: three Caddy instances sharing one Redis hold a
// bot to its Crawl-delay across all of them; the same fleet without the
// store lets it through about three times as often. Every 429 carries a
// Retry-After that, obeyed, is admitted.
func TestFleetSharesCrawlDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs six Caddy processes for 10 s each")
	}
	srv := testredis.Start(t)
	up := newUpstream(t, fleetRobots)
	const flood = 10 * time.Second
	// Any window T admits at most ⌈T/d⌉ + 1 + ⌊tolerance⌋ (= burst - 1).
	bound := func(w time.Duration) int { return int(math.Ceil(w.Seconds()/1.0)) + burst }
	for _, tc := range []struct{ name, store string }{
		// A generous timeout: on a loaded CI machine a slow call would
		// pause the store for a second and let the instance decide alone.
		{"redis", "store redis " + srv.URL + " {\n\t\t\ttimeout 1s\n\t\t}"},
		{"memory", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startFleet(t, 3, up.addr(), tc.store)
			admitted, window, ras := floodFleet(t, f, flood)
			t.Logf("%s: %d requests over %v, %d admitted in a window of %v (bound ⌈T/d⌉+%d = %d)", tc.name, admitted+len(ras), flood, admitted, window.Round(time.Millisecond), burst, bound(window))
			for _, ra := range ras {
				if n, err := strconv.Atoi(ra); err != nil || n < 1 {
					t.Fatalf("a 429 with Retry-After %q", ra)
				}
			}
			if tc.name == "memory" {
				if admitted <= 2*bound(window) {
					t.Fatalf("without the store, %d admitted: the leak this test proves is not there", admitted)
				}
				return
			}
			// The window is measured here, the clocks run in Redis: 50 ms of
			// slack for the round trips at its two ends.
			if admitted > bound(window+50*time.Millisecond) {
				t.Fatalf("%d admitted over %v, bound %d", admitted, window, bound(window))
			}
			// Obeying Retry-After is admitted, on whichever instance.
			for i := range 3 {
				code, ra := f.get(t, f.addrs[i%3], "SlowBot/2.0")
				if code == 200 {
					code, ra = f.get(t, f.addrs[(i+1)%3], "SlowBot/2.0")
				}
				if code != 429 {
					t.Fatalf("a request right after an admitted one: %d", code)
				}
				n, _ := strconv.Atoi(ra)
				time.Sleep(time.Duration(n) * time.Second)
				if code, _ := f.get(t, f.addrs[(i+2)%3], "SlowBot/2.0"); code != 200 {
					t.Fatalf("after obeying Retry-After %s: %d", ra, code)
				}
			}
		})
	}
}

// TestFleetSharesBans: a trap hit on one instance bans the client on the
// others, through the shared Redis.
func TestFleetSharesBans(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two Caddy processes")
	}
	srv := testredis.Start(t)
	up := newUpstream(t, "User-agent: *\nDisallow: /no-robots/\n\nUser-agent: FastBot\nDisallow: /no-robots/\n")
	f := startFleet(t, 2, up.addr(), "store redis "+srv.URL+" {\n\t\t\ttimeout 1s\n\t\t}\n\t\ttraps /no-robots/ {\n\t\t\tlinks static\n\t\t\tgrace 0\n\t\t}")
	if code, _ := f.getPath(t, f.addrs[1], "/page", browserUA); code != 200 {
		t.Fatalf("before: %d", code)
	}
	if code, _ := f.getPath(t, f.addrs[0], "/no-robots/x", browserUA); code != 403 {
		t.Fatalf("trap on instance 1: %d", code)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, ra := f.getPath(t, f.addrs[1], "/page", browserUA)
		if code == 403 {
			if n, _ := strconv.Atoi(ra); n < 3000 {
				t.Fatalf("banned on instance 2 with Retry-After %q, want about an hour", ra)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ban did not reach instance 2 within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := f.getPath(t, f.addrs[1], "/robots.txt", browserUA); code != 200 {
		t.Fatalf("/robots.txt for a banned client: %d", code)
	}
}

// TestFleetOnCluster: three Caddy instances sharing a 3-primary Redis
// Cluster hold a bot to its Crawl-delay across all of them, as one Redis
// does, and a trap hit on one bans the client on the others within 1 s
// (sharded pub/sub).
func TestFleetOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three Caddy processes and a Redis Cluster")
	}
	c := testredis.StartCluster(t, 3, 0)
	// fleetRobots, with a trap every group disallows.
	up := newUpstream(t, "User-agent: SlowBot\nCrawl-delay: 1\nDisallow: /private/\nDisallow: /no-robots/\n\n"+
		"User-agent: FastBot\nDisallow: /private/\nDisallow: /no-robots/\n\nUser-agent: *\nDisallow: /no-robots/\n")
	store := "store redis " + c.URL + " {\n\t\t\tcluster\n\t\t\ttimeout 1s\n\t\t}\n\t\ttraps /no-robots/ {\n\t\t\tlinks static\n\t\t\tgrace 0\n\t\t}"
	f := startFleet(t, 3, up.addr(), store)
	const flood = 8 * time.Second
	bound := func(w time.Duration) int { return int(math.Ceil(w.Seconds()/1.0)) + burst }
	admitted, window, ras := floodFleet(t, f, flood)
	t.Logf("cluster: %d requests over %v, %d admitted in a window of %v (bound ⌈T/d⌉+%d = %d)", admitted+len(ras), flood, admitted, window.Round(time.Millisecond), burst, bound(window))
	if admitted > bound(window+50*time.Millisecond) {
		t.Fatalf("%d admitted over %v, bound %d", admitted, window, bound(window))
	}
	if admitted < 3 {
		t.Fatalf("%d admitted: the bot was not let through at its Crawl-delay", admitted)
	}
	// A trap hit on instance 1 bans the client on 2 and 3 within 1 s.
	if code, _ := f.getPath(t, f.addrs[0], "/no-robots/x", browserUA); code != 403 {
		t.Fatalf("trap on instance 1: %d", code)
	}
	hit := time.Now()
	for _, a := range f.addrs[1:] {
		for {
			if code, _ := f.getPath(t, a, "/page", browserUA); code == 403 {
				break
			}
			if time.Since(hit) > time.Second {
				t.Fatalf("the ban did not reach %s within 1 s", a)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("ban enforced on the other instances %v after the trap hit", time.Since(hit).Round(time.Millisecond))
}
