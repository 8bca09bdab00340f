// Command parsecmp compares, side by side, how fast policy and
// temoto/robotstxt parse each file of the corpus (../testdata/robots):
// in each round it times both parsers on one file, in a random order, for
// about -d each, and prints per file the median over rounds of the paired
// ratio temoto ÷ policy (above 1: policy is faster), its min–max, and
// both parsers' allocations per parse. Pairing the two in one round
// cancels most of a shared VM's drift, which separate benchmark runs do
// not (temoto's own parse of one file varied by 50 % between runs).
//
//	go run ./parsecmp -rounds 15 -d 20ms
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/policy"
	"github.com/temoto/robotstxt"
)

func main() {
	rounds := flag.Int("rounds", 15, "paired rounds per file")
	d := flag.Duration("d", 20*time.Millisecond, "time per parser per round")
	seed := flag.Uint64("seed", 1, "seed of the order within rounds")
	dir := flag.String("dir", "../testdata/robots", "directory of robots.txt files")
	only := flag.String("files", "", "regular expression: only the files whose name (without .txt) it matches")
	flag.Parse()
	paths, err := filepath.Glob(filepath.Join(*dir, "*.txt"))
	if err != nil || len(paths) == 0 {
		fmt.Fprintf(os.Stderr, "parsecmp: no robots.txt files in %s (run it from bench/)\n", *dir)
		os.Exit(1)
	}
	slices.Sort(paths)
	re, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "parsecmp: -files:", err)
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(*seed, 7))
	fmt.Printf("%d rounds of %s per parser per file, %s/%s, GOMAXPROCS %d\n\n", *rounds, *d, runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	fmt.Println("| file | policy µs | temoto µs | temoto ÷ policy, median (min–max) | policy allocs | temoto allocs |")
	fmt.Println("|---|--:|--:|--:|--:|--:|")
	worst, worstName := 1e9, ""
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "parsecmp:", err)
			os.Exit(1)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".txt")
		if !re.MatchString(name) {
			continue
		}
		parsers := []func() any{
			func() any { return policy.Parse(body) },
			func() any { r, _ := robotstxt.FromBytes(body); return r },
		}
		if _, err := robotstxt.FromBytes(body); err != nil {
			pol := timeIt(parsers[0], *d)
			fmt.Printf("| %s | %.1f | (rejects the file) | — | %d | — |\n", name, pol/1e3, allocs(parsers[0]))
			continue
		}
		var ratios, pol, tem []float64
		for range *rounds {
			var t [2]float64
			for _, i := range rng.Perm(2) {
				t[i] = timeIt(parsers[i], *d)
			}
			pol, tem = append(pol, t[0]), append(tem, t[1])
			ratios = append(ratios, t[1]/t[0])
		}
		m := median(ratios)
		if m < worst {
			worst, worstName = m, name
		}
		fmt.Printf("| %s | %.1f | %.1f | %.2f× (%.2f–%.2f) | %d | %d |\n", name, median(pol)/1e3, median(tem)/1e3,
			m, slices.Min(ratios), slices.Max(ratios), allocs(parsers[0]), allocs(parsers[1]))
	}
	fmt.Printf("\nslowest against temoto: %s, %.2f×\n", worstName, worst)
}

// timeIt runs f for about d and returns its ns per call.
func timeIt(f func() any, d time.Duration) float64 {
	runtime.GC()
	n := 0
	start := time.Now()
	for time.Since(start) < d || n < 3 {
		runtime.KeepAlive(f())
		n++
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// allocs returns the allocations of one call of f.
func allocs(f func() any) uint64 {
	var a, b runtime.MemStats
	f()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.Mallocs - a.Mallocs
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
