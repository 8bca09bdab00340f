// Command banflood measures what a flood of trap hits does to a real Caddy
// with robots_guard once a scraper is banned: whether the ban survives
// (a live ban is never dropped to make room), what browsers' latency does
// meanwhile (p50/p99 against the same run's baseline), and Caddy's memory.
// The flood's addresses come through X-Forwarded-For from a trusted
// loopback proxy (trusted_proxies_strict), one distinct address per trap
// hit.
//
// Run it from the bench directory (it builds ../cmd/caddy):
//
//	go run ./banflood                      # 1,000,000 trap hits
//	go run ./banflood -n 200000 -max-bans 10000
//
// It listens on loopback only and stops when the flood is over.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robotsguard/robotsguard/bench/internal/caddyrun"
)

const (
	browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	robotsTxt = "User-agent: *\nDisallow: /no-robots/\n"
)

func main() {
	n := flag.Int("n", 1_000_000, "trap hits, each from another address")
	maxBans := flag.Int("max-bans", 100000, "max_bans of the guard")
	floodConc := flag.Int("c", 32, "concurrent flood clients")
	browsers := flag.Int("browsers", 4, "concurrent browser clients, measured")
	base := flag.Duration("baseline", 10*time.Second, "length of the baseline phase")
	flag.Parse()
	if err := run(*n, *maxBans, *floodConc, *browsers, *base); err != nil {
		fmt.Fprintln(os.Stderr, "banflood:", err)
		os.Exit(1)
	}
}

func run(n, maxBans, floodConc, browsers int, baseDur time.Duration) error {
	tmp, bin, upstream, cleanup, err := caddyrun.Setup("banflood", robotsTxt, "<!doctype html><title>page</title><p>A page.</p>\n")
	if err != nil {
		return err
	}
	defer cleanup()
	port := caddyrun.FreePort()
	caddyfile := fmt.Sprintf(`{
	admin off
	persist_config off
	storage file_system %s/storage
	servers {
		trusted_proxies static 127.0.0.1/32
		trusted_proxies_strict
		client_ip_headers X-Forwarded-For
	}
}

http://127.0.0.1:%d {
	robots_guard {
		traps /no-robots/ {
			links static
			grace 0
		}
		bans {
			max_entries %d
		}
	}
	reverse_proxy %s
}
`, tmp, port, maxBans, upstream)
	pid, stopCaddy, err := caddyrun.Start(bin, tmp, caddyfile, "", 0)
	if err != nil {
		return err
	}
	defer stopCaddy()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}, Timeout: 10 * time.Second}
	site := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(path, from string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, site+path, nil)
		req.Header.Set("User-Agent", browserUA)
		req.Header.Set("X-Forwarded-For", from)
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b), nil
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, site+"/", nil)
		req.Header.Set("User-Agent", "FooBot/1.0") // a bot waits for the robots.txt fetch
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return errors.New("caddy did not come up")
		}
	}
	const scraper = "198.51.100.1"
	if code, body, err := get("/no-robots/", scraper); err != nil || code != 403 || !strings.Contains(body, "banned until") {
		return fmt.Errorf("the scraper was not banned: %d %q %v", code, body, err)
	}
	rss0 := rss(pid)

	// Browser latency, measured while stop is open.
	measure := func(stop <-chan struct{}) []time.Duration {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		for b := range browsers {
			wg.Go(func() {
				from := "192.0.2." + strconv.Itoa(10+b)
				var mine []time.Duration
				for {
					select {
					case <-stop:
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
						return
					default:
					}
					start := time.Now()
					if code, _, err := get("/page", from); err == nil && code == 200 {
						mine = append(mine, time.Since(start))
					}
				}
			})
		}
		wg.Wait()
		slices.Sort(lat)
		return lat
	}
	// The baseline runs alongside a flood of the same rate at a page (no
	// trap), so that both phases load Caddy alike.
	flood := func(path func(i int) string, count int) (time.Duration, int64) {
		var next, errs atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for range floodConc {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= count {
						return
					}
					from := fmt.Sprintf("10.%d.%d.%d", byte(i>>16), byte(i>>8), byte(i))
					if _, _, err := get(path(i), from); err != nil {
						errs.Add(1)
					}
				}
			})
		}
		wg.Wait()
		return time.Since(start), errs.Load()
	}
	baseN := n / 10
	stop := make(chan struct{})
	var baseLat []time.Duration
	done := make(chan struct{})
	go func() { baseLat = measure(stop); close(done) }()
	took, errs := flood(func(int) string { return "/page" }, baseN)
	close(stop)
	<-done
	fmt.Printf("baseline: %d page requests from distinct addresses in %v (%d errors)\n", baseN, took.Round(time.Millisecond), errs)

	stop = make(chan struct{})
	done = make(chan struct{})
	var floodLat []time.Duration
	go func() { floodLat = measure(stop); close(done) }()
	took, errs = flood(func(int) string { return "/no-robots/" }, n)
	close(stop)
	<-done
	rss1 := rss(pid)
	code, body, err := get("/page", scraper)
	fmt.Printf("flood: %d trap hits from distinct addresses in %v (%.0f/s, %d errors)\n", n, took.Round(time.Millisecond), float64(n)/took.Seconds(), errs)
	q := func(l []time.Duration, p float64) time.Duration {
		if len(l) == 0 {
			return 0
		}
		return l[int(p*float64(len(l)-1))]
	}
	fmt.Printf("browser latency: baseline p50 %v p99 %v (%d requests); during the trap flood p50 %v p99 %v (%d); p99 ratio %.2f\n",
		q(baseLat, 0.5), q(baseLat, 0.99), len(baseLat), q(floodLat, 0.5), q(floodLat, 0.99), len(floodLat),
		float64(q(floodLat, 0.99))/float64(q(baseLat, 0.99)))
	fmt.Printf("Caddy RSS: %d MB after the first ban, %d MB after the flood (max_bans %d)\n", rss0>>20, rss1>>20, maxBans)
	if err != nil || code != 403 || !strings.Contains(body, "banned") {
		return fmt.Errorf("after the flood the scraper gets %d %q (%v): its ban was lifted", code, body, err)
	}
	fmt.Println("the scraper's ban held")
	return nil
}

// rss returns a process's resident set size in bytes (0 when unknown).
func rss(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
