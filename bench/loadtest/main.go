// Command loadtest measures what robots_guard costs a real Caddy: the same
// Caddy process serves three sites that reverse_proxy to one upstream, one
// with robots_guard in front, one without, and one with the recipe
// operators copy today instead (a header_regexp matcher over the ~150 AI
// crawler names of testdata/robots/ai-robots-txt.txt with respond 403), and
// the load alternates between them. caddy-ratelimit keyed on the
// User-Agent, the other common recipe, is not in the comparison: its module
// is not on the Go module proxy this was built with. Throughput on a shared machine is too noisy to show a few
// percent, so the figure is Caddy's CPU time per request (user + system,
// from /proc/<pid>/stat), with Caddy pinned to one core and this program
// (load generator and upstream) to the other.
//
// Run it from the bench directory (it builds ../cmd/caddy):
//
//	go run ./loadtest                  # 3 rounds of 5 s per phase
//	go run ./loadtest -d 10s -rounds 5 -c 50
//
// Each round runs the phases in a random order (-seed), so that drift
// on a shared machine does not favour one site; the figure of merit is the
// median, over rounds, of each round's paired ratio (robots_guard ÷ plain,
// recipe ÷ plain, same traffic), with its min–max and a bootstrap 95 %
// interval of the median, and the p50/p99 latency of each phase over all
// rounds. Many short rounds (-rounds 30 -d 1s) beat a few long ones.
//
// A fourth site has one more handler that does next to nothing (vars): the
// cost of any handler in Caddy's chain, beside robots_guard's.
//
// It listens on loopback only and stops after rounds × 8 phases × d.
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robotsguard/robotsguard/bench/internal/caddyrun"
)

const (
	browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	botUA     = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	robotsTxt = "User-agent: GPTBot\nDisallow: /private/\n\nUser-agent: *\nDisallow: /admin/\n"
	page      = "<!doctype html><title>page</title><p>A small page of a demo site, about a kilobyte once the headers are counted.</p>\n"
)

func main() {
	dur := flag.Duration("d", 5*time.Second, "duration of one phase")
	rounds := flag.Int("rounds", 3, "rounds of the eight phases (browser/bot × plain/robots_guard/header_regexp recipe/a vars handler)")
	conc := flag.Int("c", 50, "concurrent keep-alive clients")
	caddyCPU := flag.Int("caddy-cpu", 0, "core Caddy is pinned to; this program takes the others")
	seed := flag.Uint64("seed", 1, "seed of the phases' order in each round")
	profiles := flag.String("profiles", "", "directory: after the rounds, one more round writes a CPU profile of Caddy per phase there (diff them with go tool pprof -diff_base)")
	flag.Parse()
	if err := run(*dur, *rounds, *conc, *caddyCPU, *seed, *profiles); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(dur time.Duration, rounds, conc, caddyCPU int, seed uint64, profiles string) error {
	taskset, others, err := caddyrun.PinAway(caddyCPU)
	if err != nil {
		return err
	}
	tmp, bin, upstream, cleanup, err := caddyrun.Setup("loadtest", robotsTxt, page)
	if err != nil {
		return err
	}
	defer cleanup()
	plainPort, guardPort, recipePort, noopPort := caddyrun.FreePort(), caddyrun.FreePort(), caddyrun.FreePort(), caddyrun.FreePort()
	recipe, err := recipeRegexp("../testdata/robots/ai-robots-txt.txt")
	if err != nil {
		return err
	}
	admin := "admin off"
	adminPort := caddyrun.FreePort()
	if profiles != "" {
		// Caddy's admin serves /debug/pprof/.
		admin = fmt.Sprintf("admin localhost:%d", adminPort)
	}
	caddyfile := fmt.Sprintf(`{
	`+admin+`
	persist_config off
	storage file_system %[1]s/storage
}

(proxy) {
	reverse_proxy %[2]s {
		transport http {
			keepalive_idle_conns 1024
			keepalive_idle_conns_per_host 1024
		}
	}
}

http://127.0.0.1:%[3]d {
	import proxy
}

http://127.0.0.1:%[4]d {
	robots_guard
	import proxy
}

http://127.0.0.1:%[5]d {
	@bots header_regexp User-Agent "%[6]s"
	respond @bots 403
	import proxy
}

http://127.0.0.1:%[7]d {
	vars loadtest_noop 1
	import proxy
}
`, tmp, upstream, plainPort, guardPort, recipePort, recipe, noopPort)
	pid, stop, err := caddyrun.Start(bin, tmp, caddyfile, taskset, caddyCPU)
	if err != nil {
		return err
	}
	defer stop()
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: conc * 2, MaxIdleConnsPerHost: conc * 2, DisableCompression: true,
	}, Timeout: 10 * time.Second}
	for _, port := range []int{plainPort, guardPort, recipePort, noopPort} {
		if err := caddyrun.WaitUp(client, port); err != nil {
			return err
		}
	}

	type phase struct {
		name  string
		port  int
		ua    string
		guard bool
	}
	// In groups of four per traffic: plain, robots_guard, the recipe, and
	// one more handler that does next to nothing (vars), the cost of a
	// handler in Caddy's chain whatever it does.
	phases := []phase{
		{"browser, plain", plainPort, browserUA, false},
		{"browser, robots_guard", guardPort, browserUA, true},
		{"browser, recipe", recipePort, browserUA, true},
		{"browser, vars", noopPort, browserUA, false},
		{"bot, plain", plainPort, botUA, false},
		{"bot, robots_guard", guardPort, botUA, true},
		{"bot, recipe", recipePort, botUA, true},
		{"bot, vars", noopPort, botUA, false},
	}
	type total struct {
		reqs int64
		cpu  time.Duration
		lat  []time.Duration
	}
	totals := make([]total, len(phases))
	perRound := make([][]float64, len(phases)) // µs CPU per request, per round
	rng := rand.New(rand.NewPCG(seed, 42))
	// Warm up both sites (robots.txt fetch, connection pools).
	for _, p := range phases {
		caddyrun.Load(client, fmt.Sprintf("http://127.0.0.1:%d/page", p.port), uaHeader(p.ua), conc, time.Second)
	}
	fmt.Printf("Caddy pid %d on core %d, load on cores %s, %d clients, %d rounds × %s per phase\n",
		pid, caddyCPU, strings.Join(others, ","), conc, rounds, dur)
	for r := 0; r < rounds; r++ {
		for _, i := range rng.Perm(len(phases)) {
			p := phases[i]
			before, err := caddyrun.CPUTime(pid)
			if err != nil {
				return err
			}
			n, errs := caddyrun.LoadTimed(client, fmt.Sprintf("http://127.0.0.1:%d/page", p.port), uaHeader(p.ua), conc, dur, &totals[i].lat)
			after, err := caddyrun.CPUTime(pid)
			if err != nil {
				return err
			}
			if errs > 0 && p.name != "bot, recipe" { // the recipe answers the bot 403
				return fmt.Errorf("%s: %d requests failed or got a status other than 200", p.name, errs)
			}
			if p.name == "bot, recipe" {
				n += errs
			}
			totals[i].reqs += n
			totals[i].cpu += after - before
			perRound[i] = append(perRound[i], float64((after-before).Nanoseconds())/1e3/float64(max(n, 1)))
			fmt.Printf("  round %d %-22s %8d req  %7.0f req/s  %6.1f µs CPU/req\n", r+1, p.name, n,
				float64(n)/dur.Seconds(), float64((after-before).Microseconds())/float64(n))
		}
	}
	per := func(t total) float64 { return float64(t.cpu.Nanoseconds()) / 1e3 / float64(t.reqs) }
	ratios := func(a, b int) []float64 {
		out := make([]float64, rounds)
		for r := range out {
			out[r] = perRound[a][r] / perRound[b][r]
		}
		return out
	}
	fmt.Println()
	fmt.Println("| traffic | plain µs CPU/req | robots_guard µs CPU/req | robots_guard ÷ plain, median of rounds [bootstrap 95 %] (min–max) | vars ÷ plain, same | robots_guard ÷ vars, same | recipe ÷ plain, same |")
	fmt.Println("|---|--:|--:|--:|--:|--:|--:|")
	for i := 0; i < len(phases); i += 4 {
		fmt.Printf("| %s | %.1f | %.1f | %s | %s | %s | %s |\n", strings.Split(phases[i].name, ",")[0],
			per(totals[i]), per(totals[i+1]), summary(ratios(i+1, i), rng), summary(ratios(i+3, i), rng),
			summary(ratios(i+1, i+3), rng), summary(ratios(i+2, i), rng))
	}
	fmt.Println("\n| phase | p50 latency | p99 latency |\n|---|--:|--:|")
	for i, p := range phases {
		l := totals[i].lat
		slices.Sort(l)
		if len(l) == 0 {
			continue
		}
		fmt.Printf("| %s | %v | %v |\n", p.name, l[len(l)/2].Round(time.Microsecond), l[len(l)*99/100].Round(time.Microsecond))
	}
	fmt.Println("\n(the recipe answers the bot 403 itself, without proxying: its bot row is not comparable)")
	if profiles == "" {
		return nil
	}
	// One more round, each phase profiled while it runs.
	if err := os.MkdirAll(profiles, 0o755); err != nil {
		return err
	}
	secs := max(1, int(dur.Seconds()))
	for _, p := range phases {
		done := make(chan error, 1)
		file := filepath.Join(profiles, strings.NewReplacer(", ", "-", " ", "_").Replace(p.name)+".pprof")
		go func() {
			resp, err := http.Get(fmt.Sprintf("http://localhost:%d/debug/pprof/profile?seconds=%d", adminPort, secs))
			if err != nil {
				done <- err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err == nil {
				err = os.WriteFile(file, b, 0o644)
			}
			done <- err
		}()
		caddyrun.Load(client, fmt.Sprintf("http://127.0.0.1:%d/page", p.port), uaHeader(p.ua), conc, time.Duration(secs)*time.Second+200*time.Millisecond)
		if err := <-done; err != nil {
			return fmt.Errorf("profile of %s: %w", p.name, err)
		}
		fmt.Println("profile:", file)
	}
	return nil
}

// summary writes the median of xs with a bootstrap 95 % interval of the
// median (2,000 resamples of the rounds) and the min–max.
func summary(xs []float64, rng *rand.Rand) string {
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	boots := make([]float64, 2000)
	res := make([]float64, len(xs))
	for b := range boots {
		for i := range res {
			res[i] = xs[rng.IntN(len(xs))]
		}
		boots[b] = med(res)
	}
	slices.Sort(boots)
	return fmt.Sprintf("%.3f× [%.3f, %.3f] (%.2f–%.2f)", med(xs), boots[len(boots)*25/1000], boots[len(boots)*975/1000], slices.Min(xs), slices.Max(xs))
}

// recipeRegexp is the header_regexp operators copy: the User-agent tokens of
// a robots.txt (ai.robots.txt's list), case-insensitive, any of them.
func recipeRegexp(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("the recipe's agent list: %w", err)
	}
	var toks []string
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "User-agent:"); ok {
			if t := strings.TrimSpace(v); t != "" && t != "*" {
				toks = append(toks, regexp.QuoteMeta(t))
			}
		}
	}
	if len(toks) == 0 {
		return "", fmt.Errorf("%s: no User-agent lines", file)
	}
	return "(?i)(" + strings.Join(toks, "|") + ")", nil
}

// uaHeader is a request header with only a User-Agent.
func uaHeader(ua string) http.Header { return http.Header{"User-Agent": {ua}} }
