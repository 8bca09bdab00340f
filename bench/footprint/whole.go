package main

import (
	"bufio"
	"cmp"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/robotsguard/robotsguard/bench/internal/caddyrun"
)

// handlers are the phases of -whole, as the load test names them, with the
// X-Phase header value that selects each one's handler in
// caddyrun.PhaseSite.
var handlers = []struct{ name, phase string }{
	{"plain", "plain"},
	{"vars", "vars"},
	{"robots_guard", "guard"},
	{"rate_limit", "ratelimit"},
}

// runWhole counts, for each handler and kind of traffic, everything Caddy
// does per request (the whole process: the handler, what Caddy does to
// call it, and what its code and data evict of Caddy's own), and compares
// it with the plain phase. The load test's ratios are CPU time; these are
// the counts that make it, without the machine's noise.
func runWhole(n, batches, conc int, traffic []string, keep string) error {
	dir, bin, upstream, cleanup, err := caddyrun.SetupBench("footprint", robotsTxt, page)
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("| traffic | handler | instructions (batches) | L1i misses | L1d misses | last-level misses | instructions ÷ plain | L1i misses ÷ plain |\n|---|---|--:|--:|--:|--:|--:|--:|\n")
	var unsure []string
	for _, t := range traffic {
		out := filepath.Join(dir, "callgrind.out.whole."+t)
		if keep != "" {
			out = filepath.Join(keep, "callgrind.out.whole."+t)
		}
		port := caddyrun.FreePort()
		c, err := startCallgrind(bin, dir, caddyrun.PhaseSite("admin off", dir, upstream, port, ""), out, port)
		if err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
		hs := make([]http.Header, len(handlers))
		for i, hd := range handlers {
			hs[i] = http.Header{"User-Agent": {uas[t]}, "X-Phase": {hd.phase}}
		}
		css, err := wholeBatches(c, hs, n, batches, conc)
		if err != nil {
			c.stop()
			return fmt.Errorf("%s: %w", t, err)
		}
		var plain cost
		for i, hd := range handlers {
			cs := css[i]
			slices.SortFunc(cs, func(a, b cost) int { return cmp.Compare(a.ir, b.ir) })
			w := cs[0]
			if len(cs) > 1 && cs[1].ir > w.ir*1.01 {
				unsure = append(unsure, t+" "+hd.name)
			}
			if hd.name == "plain" {
				plain = w
			}
			irs := make([]string, len(cs))
			for i, c := range cs {
				irs[i] = strconv.FormatFloat(c.ir, 'f', 0, 64)
			}
			fmt.Printf("| %s | %s | %.0f (%s) | %.1f | %.1f | %.1f | %.3f× | %.3f× |\n", t, hd.name, w.ir, strings.Join(irs, ", "), w.i1, w.d1, w.ll, w.ir/plain.ir, w.i1/plain.i1)
		}
		c.stop()
	}
	fmt.Printf("\nper request, the whole Caddy process: the batch with the fewest instructions of %d batches of %d requests, the phases taking turns after a warm-up of each\n", batches, n)
	if len(unsure) > 0 {
		fmt.Printf("no two batches within 1 %% of each other for %s: every batch was disturbed; run again\n", strings.Join(unsure, ", "))
	}
	return nil
}

// wholeBatches warms every phase up, then counts batches of n requests
// with each header of hs in turn (so that no phase always comes first
// after a warm-up or after another), each from callgrind's totals: the
// costs of hs[i] are in result[i].
func wholeBatches(c *callgrind, hs []http.Header, n, batches, conc int) ([][]cost, error) {
	for _, h := range hs {
		if err := send(c.client, c.url, h, 200, conc); err != nil {
			return nil, err
		}
	}
	if err := c.zero(); err != nil {
		return nil, err
	}
	costs := make([][]cost, len(hs))
	for range batches {
		for i, h := range hs {
			if err := send(c.client, c.url, h, n, conc); err != nil {
				return nil, err
			}
			file, err := c.dump()
			if err != nil {
				return nil, err
			}
			w, err := totals(file, n)
			if err != nil {
				return nil, err
			}
			costs[i] = append(costs[i], w)
		}
	}
	return costs, nil
}

// totals reads the counts of a whole callgrind dump, per request of n.
func totals(file string, n int) (cost, error) {
	f, err := os.Open(file)
	if err != nil {
		return cost{}, err
	}
	defer f.Close()
	var events, sums []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "events:"); ok {
			events = strings.Fields(v)
		}
		if v, ok := strings.CutPrefix(line, "summary:"); ok {
			sums = strings.Fields(v)
		}
	}
	if err := sc.Err(); err != nil {
		return cost{}, err
	}
	if len(events) == 0 || len(events) != len(sums) {
		return cost{}, fmt.Errorf("%s: no events and summary lines that agree", file)
	}
	total := map[string]float64{}
	for i, e := range events {
		v, err := strconv.ParseFloat(sums[i], 64)
		if err != nil {
			return cost{}, fmt.Errorf("%s: summary: %w", file, err)
		}
		total[e] = v
	}
	return costOf(total, n), nil
}
