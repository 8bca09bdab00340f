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
// It listens on loopback only and stops after rounds × 4 phases × d.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"regexp"
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
	rounds := flag.Int("rounds", 3, "rounds of the six phases (browser/bot × plain/robots_guard/header_regexp recipe)")
	conc := flag.Int("c", 50, "concurrent keep-alive clients")
	caddyCPU := flag.Int("caddy-cpu", 0, "core Caddy is pinned to; this program takes the others")
	flag.Parse()
	if err := run(*dur, *rounds, *conc, *caddyCPU); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(dur time.Duration, rounds, conc, caddyCPU int) error {
	taskset, others, err := caddyrun.PinAway(caddyCPU)
	if err != nil {
		return err
	}
	tmp, bin, upstream, cleanup, err := caddyrun.Setup("loadtest", robotsTxt, page)
	if err != nil {
		return err
	}
	defer cleanup()
	plainPort, guardPort, recipePort := caddyrun.FreePort(), caddyrun.FreePort(), caddyrun.FreePort()
	recipe, err := recipeRegexp("../testdata/robots/ai-robots-txt.txt")
	if err != nil {
		return err
	}
	caddyfile := fmt.Sprintf(`{
	admin off
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
`, tmp, upstream, plainPort, guardPort, recipePort, recipe)
	pid, stop, err := caddyrun.Start(bin, tmp, caddyfile, taskset, caddyCPU)
	if err != nil {
		return err
	}
	defer stop()
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: conc * 2, MaxIdleConnsPerHost: conc * 2, DisableCompression: true,
	}, Timeout: 10 * time.Second}
	for _, port := range []int{plainPort, guardPort, recipePort} {
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
	phases := []phase{
		{"browser, plain", plainPort, browserUA, false},
		{"browser, robots_guard", guardPort, browserUA, true},
		{"browser, recipe", recipePort, browserUA, true},
		{"bot, plain", plainPort, botUA, false},
		{"bot, robots_guard", guardPort, botUA, true},
		{"bot, recipe", recipePort, botUA, true},
	}
	type total struct {
		reqs int64
		cpu  time.Duration
	}
	totals := make([]total, len(phases))
	// Warm up both sites (robots.txt fetch, connection pools).
	for _, p := range phases {
		caddyrun.Load(client, fmt.Sprintf("http://127.0.0.1:%d/page", p.port), uaHeader(p.ua), conc, time.Second)
	}
	fmt.Printf("Caddy pid %d on core %d, load on cores %s, %d clients, %d rounds × %s per phase\n",
		pid, caddyCPU, strings.Join(others, ","), conc, rounds, dur)
	for r := 0; r < rounds; r++ {
		for i, p := range phases {
			before, err := caddyrun.CPUTime(pid)
			if err != nil {
				return err
			}
			n, errs := caddyrun.Load(client, fmt.Sprintf("http://127.0.0.1:%d/page", p.port), uaHeader(p.ua), conc, dur)
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
			fmt.Printf("  round %d %-22s %8d req  %7.0f req/s  %6.1f µs CPU/req\n", r+1, p.name, n,
				float64(n)/dur.Seconds(), float64((after-before).Microseconds())/float64(n))
		}
	}
	per := func(t total) float64 { return float64(t.cpu.Nanoseconds()) / 1e3 / float64(t.reqs) }
	fmt.Println()
	fmt.Println("| traffic | plain µs CPU/req | robots_guard µs CPU/req (ratio) | header_regexp recipe µs CPU/req (ratio) |")
	fmt.Println("|---|--:|--:|--:|")
	for i := 0; i < len(phases); i += 3 {
		plain, guard, rec := per(totals[i]), per(totals[i+1]), per(totals[i+2])
		fmt.Printf("| %s | %.1f | %.1f (%.2f×) | %.1f (%.2f×) |\n", strings.Split(phases[i].name, ",")[0],
			plain, guard, guard/plain, rec, rec/plain)
	}
	fmt.Println("\n(the recipe answers the bot 403 itself, without proxying: its bot row is not comparable)")
	return nil
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
