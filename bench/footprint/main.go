// Command footprint counts what robots_guard's own code costs one request
// inside a real Caddy: instructions, and misses in a simulated L1
// instruction cache, L1 data cache and last-level cache. It runs Caddy
// (cmd/caddybench) under valgrind's callgrind with a cache simulation (32
// KiB L1i, 48 KiB L1d, 1 MiB L2 as the last level, as one core of the
// machines this was written on has), sends a warm-up, zeroes the counters,
// sends -batches batches of -n requests of each kind, and reports per
// request the cost of robots_guard's ServeHTTP without the handlers after
// it, in the least disturbed batch.
//
// The load test (loadtest) measures what a change costs Caddy's CPU, but
// two runs differ by 2 %; these counts are the same from run to run, so
// they tell apart changes of a few hundred instructions or cache lines,
// which is what the guard's cost in place is made of (its code and data
// are fetched from L2 for every request; see docs/performance.md). The
// simulation is of one process with the caches to itself: what the guard
// evicts of Caddy's own lines is not counted.
//
//	cd bench && go run ./footprint            # browser and bot, 5 batches of 1,000 requests
//	go run ./footprint -n 500 -traffic browser
//	go run ./footprint -whole -batches 3      # the whole process per handler, against plain
//
// With -whole it counts the whole Caddy process per request instead, on
// the load test's site, for plain reverse_proxy and for vars, robots_guard
// and caddy-ratelimit in front of it, and compares each with plain: what
// the handler costs Caddy in all, with what Caddy does to call it and what
// its code and data evict of Caddy's own, the counts behind the load
// test's CPU ratios without the machine's noise.
//
// It needs valgrind (Debian: apt-get install valgrind); Caddy runs about 50
// times slower under it, so a run takes a minute or two.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/robotsguard/robotsguard/bench/internal/caddyrun"
)

const (
	robotsTxt = "User-agent: GPTBot\nDisallow: /private/\n\nUser-agent: *\nDisallow: /admin/\n"
	page      = "<!doctype html><title>page</title><p>A small page of a demo site.</p>\n"
	browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	botUA     = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
)

func main() {
	n := flag.Int("n", 1000, "requests counted per batch")
	batches := flag.Int("batches", 5, "batches per kind of traffic, each counted on its own; the one with the fewest instructions is reported (in a batch where the Go scheduler switched goroutines inside the guard, callgrind counts other goroutines' work as the guard's: such batches only ever read high)")
	traffic := flag.String("traffic", "browser,bot", "comma-separated kinds of traffic: browser (a Chrome User-Agent), bot (GPTBot on an allowed path)")
	conc := flag.Int("c", 1, "concurrent clients (with more, callgrind may see one request's guard nested in another's and count it twice)")
	keep := flag.String("keep", "", "a directory to keep callgrind's output files in (for callgrind_annotate)")
	whole := flag.Bool("whole", false, "count the whole Caddy process per request instead of the guard's code, for each of plain, vars, robots_guard and rate_limit in front of reverse_proxy (the load test's site), and compare each with plain")
	flag.Parse()
	do := run
	if *whole {
		do = runWhole
	}
	if err := check(strings.Split(*traffic, ","), *keep); err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
	if err := do(*n, *batches, *conc, strings.Split(*traffic, ","), *keep); err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
}

// uas are the User-Agent headers of the kinds of traffic.
var uas = map[string]string{"browser": browserUA, "bot": botUA}

// check finds valgrind's tools, checks the kinds of traffic and makes the
// directory -keep names.
func check(traffic []string, keep string) error {
	for _, t := range traffic {
		if uas[t] == "" {
			return fmt.Errorf("-traffic %q: want browser or bot", t)
		}
	}
	for _, tool := range []string{"valgrind", "callgrind_control", "callgrind_annotate"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: install valgrind (Debian: apt-get install valgrind)", tool)
		}
	}
	if keep != "" {
		if err := os.MkdirAll(keep, 0o755); err != nil {
			return fmt.Errorf("-keep: %w", err)
		}
	}
	return nil
}

// cost is what the guard's code took per request.
type cost struct {
	ir, i1, d1, ll float64
}

// costOf is the cost per request of n from callgrind's event totals.
func costOf(total map[string]float64, n int) cost {
	per := func(names ...string) float64 {
		s := 0.0
		for _, e := range names {
			s += total[e]
		}
		return s / float64(n)
	}
	return cost{ir: per("Ir"), i1: per("I1mr"), d1: per("D1mr", "D1mw"), ll: per("ILmr", "DLmr", "DLmw")}
}

// run counts the guard's own code for each kind of traffic.
func run(n, batches, conc int, traffic []string, keep string) error {
	dir, bin, upstream, cleanup, err := caddyrun.SetupBench("footprint", robotsTxt, page)
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("| traffic | instructions (batches) | L1i misses | L1d misses | last-level misses |\n|---|--:|--:|--:|--:|\n")
	var unsure []string // kinds of traffic with no two batches alike
	for _, t := range traffic {
		out := filepath.Join(dir, "callgrind.out."+t)
		if keep != "" {
			out = filepath.Join(keep, "callgrind.out."+t)
		}
		cs, err := measure(bin, dir, upstream, out, uas[t], n, batches, conc)
		if err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
		slices.SortFunc(cs, func(a, b cost) int { return cmp.Compare(a.ir, b.ir) })
		irs := make([]string, len(cs))
		for i, c := range cs {
			irs[i] = strconv.FormatFloat(c.ir, 'f', 0, 64)
		}
		c := cs[0]
		fmt.Printf("| %s | %.0f (%s) | %.1f | %.1f | %.1f |\n", t, c.ir, strings.Join(irs, ", "), c.i1, c.d1, c.ll)
		if len(cs) > 1 && cs[1].ir > cs[0].ir*1.01 {
			// Two clean batches agree within 0.2 %.
			unsure = append(unsure, t)
		}
	}
	fmt.Printf("\nper request, robots_guard's ServeHTTP without the handlers after it: the batch with the fewest instructions of %d batches of %d requests (all in brackets), after a warm-up\n", batches, n)
	if len(unsure) > 0 {
		fmt.Printf("no two batches within 1 %% of each other for %s: every batch was disturbed; run again\n", strings.Join(unsure, ", "))
	}
	return nil
}

// measure runs Caddy under callgrind and returns the guard's cost per
// request in each of batches batches of n requests with User-Agent ua.
func measure(bin, dir, upstream, out, ua string, n, batches, conc int) ([]cost, error) {
	port := caddyrun.FreePort()
	caddyfile := fmt.Sprintf(`{
	admin off
	persist_config off
	storage file_system %[1]s/storage
}

http://127.0.0.1:%[3]d {
	robots_guard
	reverse_proxy %[2]s
}
`, dir, upstream, port)
	c, err := startCallgrind(bin, dir, caddyfile, out, port)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	h := http.Header{"User-Agent": {ua}}
	// Warm-up: the robots.txt fetch, the caches of the guard and Caddy.
	if err := send(c.client, c.url, h, 400, conc); err != nil {
		return nil, err
	}
	if err := c.zero(); err != nil {
		return nil, err
	}
	var costs []cost
	broken := 0
	for range batches {
		if err := send(c.client, c.url, h, n, conc); err != nil {
			return nil, err
		}
		file, err := c.dump()
		if err != nil {
			return nil, err
		}
		ann, err := exec.Command("callgrind_annotate", "--inclusive=yes", "--tree=calling", "--threshold=100", file).Output()
		if err != nil {
			return nil, fmt.Errorf("callgrind_annotate %s: %w", file, err)
		}
		c, err := guardCost(bytes.NewReader(ann), n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		whole, err := totals(file, n)
		if err != nil {
			return nil, err
		}
		if c.ir > whole.ir/5 {
			// callgrind's shadow call stack kept a frame of the guard
			// that a goroutine switch left behind (a request parked in
			// the proxy when the counts were zeroed): everything after it
			// is counted as the guard's. The batch says nothing.
			broken++
			continue
		}
		costs = append(costs, c)
	}
	if len(costs) == 0 {
		return nil, fmt.Errorf("in all %d batches callgrind counted most of Caddy's work as the guard's (a call stack left behind by a goroutine switch); run again", broken)
	}
	return costs, nil
}

// callgrind is a Caddy running under callgrind.
type callgrind struct {
	cmd    *exec.Cmd
	pid    string
	out    string // callgrind's output file; dump k goes to "<out>.<k>"
	dumps  int
	client *http.Client
	url    string // a page of the site
}

// startCallgrind starts Caddy with caddyfile (its site on port) under
// callgrind's cache simulation, and waits until it answers.
func startCallgrind(bin, dir, caddyfile, out string, port int) (*callgrind, error) {
	cfg := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfg, []byte(caddyfile), 0o644); err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+out,
		"--cache-sim=yes", "--I1=32768,8,64", "--D1=49152,12,64", "--LL=1048576,16,64",
		bin, "run", "--config", cfg, "--adapter", "caddyfile")
	// One P, as in the load test; no asynchronous preemption, whose
	// signals callgrind does not survive; no garbage collection, whose
	// preemption of the request's goroutine inside the guard would make
	// callgrind count the collector's work as the guard's (a run holds
	// about 100 MB; the guard's path allocates nothing).
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir, "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1", "GOGC=off")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &callgrind{cmd: cmd, pid: strconv.Itoa(cmd.Process.Pid), out: out,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: time.Minute},
		url:    fmt.Sprintf("http://127.0.0.1:%d/page", port)}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err := send(c.client, c.url, nil, 1, 1); err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("caddy under valgrind not up after 2 minutes:\n%s", stderr.String())
		}
	}
}

// stop kills Caddy (callgrind does not survive Caddy's own shutdown).
func (c *callgrind) stop() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

// zero sets callgrind's counts to zero.
func (c *callgrind) zero() error {
	if err := exec.Command("callgrind_control", "-z", c.pid).Run(); err != nil {
		return fmt.Errorf("callgrind_control -z: %w", err)
	}
	return nil
}

// dump writes the counts since the last dump (or zero) to a file of their
// own and returns its name once it is written.
func (c *callgrind) dump() (string, error) {
	if out, err := exec.Command("callgrind_control", "-d", c.pid).CombinedOutput(); err != nil {
		return "", fmt.Errorf("callgrind_control -d: %w: %s", err, out)
	}
	c.dumps++
	file := c.out + "." + strconv.Itoa(c.dumps)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no callgrind dump %s within a minute", file)
		}
	}
	time.Sleep(500 * time.Millisecond) // let the dump finish
	return file, nil
}

// send makes n GET requests with header h from conc clients; any status
// but 200 is an error.
func send(client *http.Client, url string, h http.Header, n, conc int) error {
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	for c := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += conc {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				if h != nil {
					req.Header = h.Clone()
				}
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

var (
	eventsLine = regexp.MustCompile(`^Events shown:\s+(.*)$`)
	// A line of callgrind_annotate's call tree: the counts, then "*" for
	// the function the block is about or ">" for one it calls.
	treeLine  = regexp.MustCompile(`^(.*?)\s([*>])\s+(\S.*)$`)
	percent   = regexp.MustCompile(`\(\s*[\d.]+%\)`)
	guardFunc = regexp.MustCompile(`caddymodule\.\(\*RobotsGuard\)\.ServeHTTP('\d+)? `)
	// The handlers after the guard, as Caddy calls them.
	nextFunc = regexp.MustCompile(`caddyhttp\.HandlerFunc\.ServeHTTP|wrapMiddleware|caddyhttp\.\(\*Subroute\)\.ServeHTTP|reverseproxy\.`)
)

// guardCost reads callgrind_annotate's inclusive call tree and returns
// the guard's ServeHTTP (every recursion level callgrind names, each
// without its calls of the others) less its calls of the next handlers,
// per request of n.
func guardCost(r io.Reader, n int) (cost, error) {
	var events []string
	total := map[string]float64{}
	inGuard, found := false, false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := eventsLine.FindStringSubmatch(line); m != nil {
			events = strings.Fields(m[1])
			continue
		}
		if strings.TrimSpace(line) == "" {
			inGuard = false
			continue
		}
		m := treeLine.FindStringSubmatch(line)
		if m == nil || events == nil {
			continue
		}
		sign := 0.0
		switch {
		case m[2] == "*":
			if inGuard = guardFunc.MatchString(m[3] + " "); inGuard {
				sign, found = 1, true
			}
		case inGuard && (nextFunc.MatchString(m[3]) || guardFunc.MatchString(m[3])):
			// The handlers after the guard, and the guard's calls of
			// itself as callgrind sees them (its frames are counted in
			// the block of each recursion level, once).
			sign = -1
		}
		if sign == 0 {
			continue
		}
		fields := strings.Fields(percent.ReplaceAllString(m[1], ""))
		if len(fields) != len(events) {
			return cost{}, fmt.Errorf("a tree line with %d counts for %d events: %q", len(fields), len(events), line)
		}
		for i, f := range fields {
			v, _ := strconv.ParseFloat(strings.ReplaceAll(f, ",", ""), 64) // "." is none
			total[events[i]] += sign * v
		}
	}
	if err := sc.Err(); err != nil {
		return cost{}, err
	}
	if !found {
		return cost{}, errors.New("robots_guard's ServeHTTP is not in the profile")
	}
	return costOf(total, n), nil
}
