// Command loadtest measures what robots_guard costs a real Caddy. One Caddy
// site reverse_proxies to one upstream; a request header (X-Phase) selects
// what stands in front of the proxy: nothing (plain), robots_guard, the
// recipe operators copy today instead (a header_regexp matcher over the
// ~150 AI crawler names of testdata/robots/ai-robots-txt.txt with respond
// 403), a handler that does next to nothing (vars: the cost of any handler
// in Caddy's chain), or caddy-ratelimit v0.1.0 keyed on the User-Agent
// (with a limit the load never reaches). Every phase goes through the same
// listener, matchers and connection pool, so that the handler is the only
// difference. Throughput on a shared machine is too noisy to show a few
// percent, so the figure is Caddy's CPU time per request (the scheduler's
// run time of its threads), with Caddy pinned to one core and this program
// (load generator and upstream) to the other.
//
// Run it from the bench directory (it builds ./cmd/caddybench):
//
//	go run ./loadtest                               # 40 rounds of 1 s per comparison
//	go run ./loadtest -only control,robots_guard -base vars
//	go run ./loadtest -mode sequential -d 25s -rounds 1 -profiles /tmp/lt
//
// In the default mode, twin, two Caddy processes with the same
// configuration share Caddy's core and run at the same time, one the
// reference phase (-base, plain by default) and the other a handler's: the
// machine's speed, which drifts by 20–60 % from one minute to the next on a
// shared VM, is the same for both. control is the reference again, the
// instrument's own error. In sequential mode one Caddy runs the phases one
// after the other in a random order. Either way the figure of merit is
// the median, over rounds, of each round's paired ratio of CPU time per
// request, with its min–max and a bootstrap 95 % interval of the median,
// and the p50/p99 latency over all rounds. -rate holds a fixed request
// rate (0: as fast as the clients can); -profiles writes CPU profiles of
// Caddy (see -attribute).
//
// It listens on loopback only.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
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
	dur := flag.Duration("d", time.Second, "duration of one phase (one comparison in twin mode)")
	rounds := flag.Int("rounds", 40, "rounds of every phase (twin: of every comparison)")
	mode := flag.String("mode", "twin", "twin: the reference and a handler at the same time on two Caddy processes sharing Caddy's core; sequential: one Caddy, phases one after the other")
	base := flag.String("base", "plain", "twin mode: the reference every handler is compared with (plain, vars, ...); control is this again")
	conc := flag.Int("c", 50, "concurrent keep-alive clients")
	caddyCPU := flag.Int("caddy-cpu", 0, "core Caddy is pinned to; this program takes the others")
	seed := flag.Uint64("seed", 1, "seed of the phases' order in each round")
	only := flag.String("only", "", "comma-separated handlers whose phases run (plain, control, robots_guard, recipe, vars, rate_limit); default all. Fewer phases allow more rounds in the same time")
	rate := flag.Float64("rate", 0, "requests a second, over all clients (0: as fast as they can); a fixed rate keeps Caddy in one regime of load across phases")
	profiles := flag.String("profiles", "", "directory: after the rounds, one more round writes a CPU profile of Caddy per phase there (diff them with go tool pprof -diff_base)")
	attribute := flag.String("attribute", "", "directory of profiles written by -profiles: print each handler's own share of Caddy's CPU in them, and stop")
	flag.Parse()
	if *attribute != "" {
		if err := attributeAll(*attribute); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			os.Exit(1)
		}
		return
	}
	if *mode != "twin" && *mode != "sequential" {
		fmt.Fprintf(os.Stderr, "loadtest: -mode %q: twin or sequential\n", *mode)
		os.Exit(2)
	}
	if err := run(*dur, *rounds, *conc, *caddyCPU, *seed, *rate, *only, *profiles, *mode == "twin", *base); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(dur time.Duration, rounds, conc, caddyCPU int, seed uint64, rate float64, only, profiles string, twin bool, base string) error {
	taskset, others, err := caddyrun.PinAway(caddyCPU)
	if err != nil {
		return err
	}
	tmp, bin, upstream, cleanup, err := caddyrun.SetupBench("loadtest", robotsTxt, page)
	if err != nil {
		return err
	}
	defer cleanup()
	port := caddyrun.FreePort()
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
	if twin {
		return runTwin(bin, tmp, upstream, recipe, taskset, caddyCPU, others, dur, rounds, conc, seed, rate, only, profiles, base)
	}
	caddyfile := caddyrun.PhaseSite(admin, tmp, upstream, port, recipe)
	pid, stop, err := caddyrun.Start(bin, tmp, caddyfile, taskset, caddyCPU)
	if err != nil {
		return err
	}
	defer stop()
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: conc * 2, MaxIdleConnsPerHost: conc * 2, DisableCompression: true,
	}, Timeout: 10 * time.Second}
	if err := caddyrun.WaitUp(client, port); err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/page", port)

	type phase struct {
		name  string
		phase string // X-Phase: plain, control, guard, recipe, vars, ratelimit
		ua    string
	}
	// In groups of five per traffic: plain, robots_guard, the recipe, one
	// more handler that does next to nothing (vars: the cost of a handler
	// in Caddy's chain whatever it does), and caddy-ratelimit keyed on the
	// User-Agent with a limit the load never reaches (the cost of its
	// check, as robots_guard's is measured on an allowed path).
	phases := []phase{
		{"browser, plain", "plain", browserUA},
		{"browser, control", "control", browserUA},
		{"browser, robots_guard", "guard", browserUA},
		{"browser, recipe", "recipe", browserUA},
		{"browser, vars", "vars", browserUA},
		{"browser, rate_limit", "ratelimit", browserUA},
		{"bot, plain", "plain", botUA},
		{"bot, control", "control", botUA},
		{"bot, robots_guard", "guard", botUA},
		{"bot, recipe", "recipe", botUA},
		{"bot, vars", "vars", botUA},
		{"bot, rate_limit", "ratelimit", botUA},
	}
	header := func(p phase) http.Header {
		return http.Header{"User-Agent": {p.ua}, "X-Phase": {p.phase}}
	}
	type total struct {
		reqs int64
		cpu  time.Duration
		lat  []time.Duration
	}
	if only != "" {
		keep := strings.Split(only, ",")
		phases = slices.DeleteFunc(phases, func(p phase) bool {
			_, handler, _ := strings.Cut(p.name, ", ")
			return !slices.Contains(keep, handler)
		})
		if len(phases) == 0 {
			return fmt.Errorf("-only %q: no phase of plain, robots_guard, recipe, vars, rate_limit", only)
		}
	}
	totals := make([]total, len(phases))
	perRound := make([][]float64, len(phases)) // µs CPU per request, per round
	rng := rand.New(rand.NewPCG(seed, 42))
	// Warm up both sites (robots.txt fetch, connection pools).
	for _, p := range phases {
		caddyrun.Load(client, url, header(p), conc, time.Second)
	}
	pace := "as fast as they can"
	if rate > 0 {
		pace = fmt.Sprintf("at %.0f requests/s", rate)
	}
	fmt.Printf("Caddy pid %d on core %d, load on cores %s, %d clients %s, %d rounds × %s per phase\n",
		pid, caddyCPU, strings.Join(others, ","), conc, pace, rounds, dur)
	for r := 0; r < rounds; r++ {
		for _, i := range rng.Perm(len(phases)) {
			p := phases[i]
			before, err := caddyrun.CPUTime(pid)
			if err != nil {
				return err
			}
			var missed int64
			n, errs := caddyrun.LoadPaced(client, url, header(p), conc, dur, &totals[i].lat, rate, &missed)
			if rate > 0 && float64(missed) > 0.02*rate*dur.Seconds() {
				fmt.Printf("  (%s: %d requests missed their tick: below the rate)\n", p.name, missed)
			}
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
	// The phase of traffic and handler, -1 when it did not run.
	find := func(traffic, handler string) int {
		return slices.IndexFunc(phases, func(p phase) bool { return p.name == traffic+", "+handler })
	}
	cell := func(traffic, a, b string) string {
		i, j := find(traffic, a), find(traffic, b)
		if i < 0 || j < 0 {
			return "—"
		}
		return summary(ratios(i, j), rng)
	}
	perOf := func(traffic, handler string) string {
		if i := find(traffic, handler); i >= 0 {
			return fmt.Sprintf("%.1f", per(totals[i]))
		}
		return "—"
	}
	fmt.Println()
	fmt.Println("| traffic | plain µs CPU/req | robots_guard µs CPU/req | robots_guard ÷ plain, median of rounds [bootstrap 95 %] (min–max) | control ÷ plain, same | vars ÷ plain, same | robots_guard ÷ vars, same | rate_limit ÷ plain, same | recipe ÷ plain, same |")
	fmt.Println("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, tr := range []string{"browser", "bot"} {
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", tr, perOf(tr, "plain"), perOf(tr, "robots_guard"),
			cell(tr, "robots_guard", "plain"), cell(tr, "control", "plain"), cell(tr, "vars", "plain"), cell(tr, "robots_guard", "vars"),
			cell(tr, "rate_limit", "plain"), cell(tr, "recipe", "plain"))
	}
	fmt.Println("\n| phase | p50 latency | p99 latency |\n|---|--:|--:|")
	for i, p := range phases {
		if l := totals[i].lat; len(l) > 0 {
			fmt.Printf("| %s | %v | %v |\n", p.name, percentile(l, 50), percentile(l, 99))
		}
	}
	fmt.Println("\n" + recipeNote)
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
		go func() { done <- caddyrun.Profile(adminPort, secs, file) }()
		caddyrun.LoadPaced(client, url, header(p), conc, time.Duration(secs)*time.Second+200*time.Millisecond, nil, rate, nil)
		if err := <-done; err != nil {
			return fmt.Errorf("profile of %s: %w", p.name, err)
		}
		fmt.Println("profile:", file)
	}
	return attributeAll(profiles)
}

// handlers are the handlers whose own CPU attributeAll reads in each
// phase's profile: the function, and the phase name's part that selects it.
var handlers = []struct{ phase, fn, name string }{
	{"robots_guard", `caddymodule.\(\*RobotsGuard\).ServeHTTP$`, "robots_guard"},
	{"vars", `caddyhttp.VarsMiddleware.ServeHTTP$`, "vars"},
	{"rate_limit", `caddy-ratelimit.Handler.ServeHTTP$`, "caddy-ratelimit"},
	{"recipe", `caddyhttp.MatchHeaderRE.MatchWithError$`, "header_regexp recipe (its matcher)"},
}

// attributeAll prints, for the profiles in dir, each handler's own share
// of Caddy's CPU: the samples in the handler but not in the handlers after
// it (for the recipe, the samples of its matcher). Within one profile the
// share does not drift with the machine the way CPU per request does
// between phases, so it resolves what the paired rounds cannot: the
// handler costs Caddy 1 / (1 − share) times what the plain site does.
func attributeAll(dir string) error {
	fmt.Println("\nOwn CPU of each handler, from the profile of its phase (samples in the handler, not in the next one):")
	fmt.Println("\n| phase | handler | own samples | of Caddy's | share | as a ratio to plain |\n|---|---|--:|--:|--:|--:|")
	for _, traffic := range []string{"browser", "bot"} {
		for _, h := range handlers {
			file := filepath.Join(dir, traffic+"-"+h.phase+".pprof")
			if _, err := os.Stat(file); err != nil {
				continue
			}
			own, total, err := ownCPU(file, h.fn, h.phase == "recipe")
			if err != nil {
				return err
			}
			share := own / total
			fmt.Printf("| %s | %s | %.2f s | %.2f s | %.2f %% | %.3f× |\n", traffic, h.name, own, total, 100*share, 1/(1-share))
		}
	}
	return nil
}

// ownCPU reads, with go tool pprof -peek, the samples of fn in a profile
// less those of the next handler it calls (all of them when whole), and
// the profile's total, in seconds.
func ownCPU(file, fn string, whole bool) (own, total float64, err error) {
	out, err := exec.Command("go", "tool", "pprof", "-peek", fn, file).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("go tool pprof -peek %s %s: %w", fn, file, err)
	}
	var cum, next float64
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		switch {
		case strings.Contains(line, "Total samples = "):
			v := line[strings.Index(line, "Total samples = ")+len("Total samples = "):]
			total = seconds(strings.Fields(v)[0])
		case len(f) >= 7 && f[5] == "|" && cum == 0:
			cum = seconds(f[3]) // the function's own line: flat flat% sum% cum cum% | name
		case cum > 0 && len(f) >= 4 && strings.HasSuffix(line, "caddyhttp.HandlerFunc.ServeHTTP\n"):
			next += seconds(f[0])
		}
	}
	if total == 0 || cum == 0 {
		return 0, 0, fmt.Errorf("%s: no samples of %s", file, fn)
	}
	if whole {
		next = 0
	}
	return cum - next, total, nil
}

// seconds reads a pprof duration ("14.74s", "740ms").
func seconds(v string) float64 {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0
	}
	return d.Seconds()
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

// percentile returns the p-th percentile of the latencies l (sorting l),
// to the microsecond; 0 for none.
func percentile(l []time.Duration, p int) time.Duration {
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	return l[len(l)*p/100].Round(time.Microsecond)
}

// recipeNote follows a table that has the recipe's bot row.
const recipeNote = "(the recipe answers the bot 403 itself, without proxying: its bot row is not comparable)"
