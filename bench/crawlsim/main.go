// Command crawlsim measures, through a real Caddy, how often robots_guard
// refuses (429) a crawler that keeps a site's Crawl-delay on average but
// randomises its spacing the way real crawlers do, and how many requests a
// bot at twice the allowed rate gets through in any window.
//
// Clients (-clients, comma-separated):
//
//	scrapy   spacing uniform in 0.5–1.5 × delay (Scrapy's RANDOMIZE_DOWNLOAD_DELAY)
//	wget     the same spacing as scrapy (wget --random-wait), drawn apart
//	pm10     spacing uniform in 0.9–1.1 × delay (±10 % per interval; colly 0.9 s + up to 0.2 s)
//	double   fixed spacing of delay / 2: a bot at twice the allowed rate
//
// A refused request spends nothing and the client goes on at its next
// interval (wget and colly do not retry a 429: that page is lost). Run it
// from the bench directory (it builds ../cmd/caddy); with the defaults, 300
// requests per client at Crawl-delay 1 s take about 5 minutes per client:
//
//	go run ./crawlsim -clients scrapy,wget,pm10 -n 300
//	go run ./crawlsim -clients double -n 100 -tolerance 0.25
//
// -seed changes the random draws (each client's own stream derives from it).
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/robotsguard/robotsguard/bench/internal/caddyrun"
)

func main() {
	clients := flag.String("clients", "scrapy,pm10,double", "clients to run, at once (each is its own bot)")
	n := flag.Int("n", 300, "requests per client")
	delay := flag.Duration("delay", time.Second, "the Crawl-delay of robots.txt (whole seconds)")
	tolerance := flag.String("tolerance", "", "crawl_delay_tolerance of the guard; empty: its default")
	seed := flag.Uint64("seed", 7, "seed of the clients' random spacing")
	window := flag.Duration("window", 10*time.Second, "the window T of the bound ⌈T/d⌉ + k reported for each client")
	flag.Parse()
	if err := run(strings.Split(*clients, ","), *n, *delay, *tolerance, *window, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "crawlsim:", err)
		os.Exit(1)
	}
}

// spacing returns the next interval of a client.
func spacing(client string, d time.Duration, rng *rand.Rand) (time.Duration, error) {
	switch client {
	case "scrapy", "wget":
		return time.Duration((0.5 + rng.Float64()) * float64(d)), nil
	case "pm10":
		return time.Duration((0.9 + 0.2*rng.Float64()) * float64(d)), nil
	case "double":
		return d / 2, nil
	}
	return 0, fmt.Errorf("unknown client %q (scrapy, wget, pm10, double)", client)
}

func run(clients []string, n int, d time.Duration, tolerance string, window time.Duration, seed uint64) error {
	for _, c := range clients {
		if _, err := spacing(c, d, rand.New(rand.NewPCG(1, 1))); err != nil {
			return err
		}
	}
	secs := d.Seconds()
	if secs < 1 || secs != math.Trunc(secs) {
		return fmt.Errorf("-delay %v: give whole seconds", d)
	}
	// A group per client, so that each has a Crawl-delay budget of its own
	// (they all come from 127.0.0.1).
	var robots strings.Builder
	for _, c := range clients {
		fmt.Fprintf(&robots, "User-agent: SimBot-%s\nCrawl-delay: %d\n\n", c, int(secs))
	}
	tmp, bin, upstream, cleanup, err := caddyrun.Setup("crawlsim", robots.String(), "<!doctype html><title>page</title>\n")
	if err != nil {
		return err
	}
	defer cleanup()
	opts := ""
	if tolerance != "" {
		opts = "\n\t\tcrawl_delay {\n\t\t\ttolerance " + tolerance + "\n\t\t}"
	}
	port := caddyrun.FreePort()
	caddyfile := fmt.Sprintf("{\n\tadmin off\n\tpersist_config off\n\tstorage file_system %s/storage\n}\n\nhttp://127.0.0.1:%d {\n\trobots_guard {%s\n\t}\n\treverse_proxy %s\n}\n", tmp, port, opts, upstream)
	_, stop, err := caddyrun.Start(bin, tmp, caddyfile, "", 0)
	if err != nil {
		return err
	}
	defer stop()
	client := &http.Client{Timeout: 10 * time.Second}
	if err := caddyrun.WaitUp(client, port); err != nil {
		return err
	}
	type result struct {
		refused  int
		admitted []time.Time
		err      error
	}
	results := make([]result, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i)+1, seed))
			ua := fmt.Sprintf("SimBot-%s/1.0", c)
			next := time.Now()
			for range n {
				time.Sleep(time.Until(next))
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/page", port), nil)
				req.Header.Set("User-Agent", ua)
				sent := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					results[i].err = err
					return
				}
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					results[i].admitted = append(results[i].admitted, sent)
				case http.StatusTooManyRequests:
					results[i].refused++
				default:
					results[i].err = fmt.Errorf("status %d", resp.StatusCode)
					return
				}
				sp, _ := spacing(c, d, rng)
				next = next.Add(sp)
			}
		})
	}
	wg.Wait()
	bound := int(math.Ceil(window.Seconds() / secs))
	fmt.Printf("Crawl-delay %v, crawl_delay_tolerance %q, %d requests per client, seed %d\n\n", d, tolerance, n, seed)
	fmt.Printf("| client | refused (429) | most admitted in any %v (⌈T/d⌉ = %d) | most admitted in any window T, less ⌈T/d⌉ |\n|---|--:|--:|--:|\n", window, bound)
	for i, c := range clients {
		r := results[i]
		if r.err != nil {
			return fmt.Errorf("%s: %w", c, r.err)
		}
		fmt.Printf("| %s | %d of %d (%.1f %%) | %d | %d |\n", c, r.refused, n, 100*float64(r.refused)/float64(n), mostIn(r.admitted, window), excess(r.admitted, d))
	}
	return nil
}

// mostIn returns the largest number of times within any window of length w.
func mostIn(ts []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// excess returns the largest k such that some window of length T holds
// ⌈T/d⌉ + k of the times (a window of length 0 holding one time gives 1).
// The times are taken as each request was sent, so a millisecond or two of
// the network moves them.
func excess(ts []time.Time, d time.Duration) int {
	best := 0
	for i := range ts {
		for j := i; j < len(ts); j++ {
			span := ts[j].Sub(ts[i])
			k := j - i + 1 - int((span+d-1)/d)
			best = max(best, k)
		}
	}
	return best
}
