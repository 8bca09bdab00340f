package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/robotsguard/robotsguard/bench/internal/caddyrun"
)

// runTwin measures each handler against the reference (base: plain
// unless told) at the same time: two Caddy processes with the same
// configuration share Caddy's core, one serves the reference's phase and
// the other the handler's, and each one's CPU time per request is read
// over the same interval. Whatever slows the machine (another tenant, the
// hypervisor) slows both alike, which phases a second apart do not see
// alike. Which process serves which side alternates every round, so that a
// difference between the two processes cancels; the order of the
// comparisons is random in each round. control compares the reference with
// itself.
//
// With profiles, one more run per comparison takes a CPU profile of both
// processes over the same interval and prints the request counts, so that
// a function's samples per request can be compared between the reference
// and the handler.
func runTwin(bin, tmp, upstream, recipe, taskset string, caddyCPU int, others []string, dur time.Duration, rounds, conc int, seed uint64, rate float64, only, profiles, base string) error {
	handlers := []struct{ name, phase string }{
		{"plain", "plain"},
		{"control", ""}, // the reference again: the instrument's own error
		{"robots_guard", "guard"},
		{"vars", "vars"},
		{"rate_limit", "ratelimit"},
		{"recipe", "recipe"},
	}
	bi := slices.IndexFunc(handlers, func(h struct{ name, phase string }) bool { return h.name == base })
	if bi < 0 || base == "control" {
		return fmt.Errorf("-base %q: one of plain, robots_guard, vars, rate_limit, recipe", base)
	}
	ref := handlers[bi]
	handlers[1].phase = ref.phase
	handlers = slices.Delete(handlers, bi, bi+1)
	if only != "" {
		keep := strings.Split(only, ",")
		handlers = slices.DeleteFunc(handlers, func(h struct{ name, phase string }) bool { return !slices.Contains(keep, h.name) })
		if len(handlers) == 0 {
			return fmt.Errorf("-only %q: no handler of plain, control, robots_guard, vars, rate_limit, recipe but the reference, %s", only, base)
		}
	}
	traffics := []struct{ name, ua string }{{"browser", browserUA}, {"bot", botUA}}
	var pids, ports, admins [2]int
	for i := range pids {
		dir := filepath.Join(tmp, fmt.Sprint("twin", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		ports[i] = caddyrun.FreePort()
		admin := "admin off"
		if profiles != "" {
			admins[i] = caddyrun.FreePort()
			admin = fmt.Sprintf("admin localhost:%d", admins[i]) // serves /debug/pprof/
		}
		pid, stop, err := caddyrun.Start(bin, dir, caddyrun.PhaseSite(admin, dir, upstream, ports[i], recipe), taskset, caddyCPU)
		if err != nil {
			return err
		}
		defer stop()
		pids[i] = pid
	}
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: conc * 2, MaxIdleConnsPerHost: conc, DisableCompression: true,
	}, Timeout: 10 * time.Second}
	urls := [2]string{}
	for i, port := range ports {
		if err := caddyrun.WaitUp(client, port); err != nil {
			return err
		}
		urls[i] = fmt.Sprintf("http://127.0.0.1:%d/page", port)
	}
	header := func(ua, phase string) http.Header {
		return http.Header{"User-Agent": {ua}, "X-Phase": {phase}}
	}
	// Warm up every phase on both (robots.txt fetch, connection pools).
	for _, u := range urls {
		for _, tr := range traffics {
			caddyrun.Load(client, u, header(tr.ua, ref.phase), conc/2, 500*time.Millisecond)
			for _, h := range handlers {
				caddyrun.Load(client, u, header(tr.ua, h.phase), conc/2, 500*time.Millisecond)
			}
		}
	}
	type cmp struct{ traffic, handler int }
	var cmps []cmp
	for t := range traffics {
		for h := range handlers {
			cmps = append(cmps, cmp{t, h})
		}
	}
	ratios := make([][]float64, len(cmps))
	lats := make([][2][]time.Duration, len(cmps)) // reference, handler
	rng := rand.New(rand.NewPCG(seed, 42))
	pace := "as fast as they can"
	if rate > 0 {
		pace = fmt.Sprintf("at %.0f requests/s each", rate/2)
	}
	fmt.Printf("Caddy pids %d and %d, both on core %d; load on cores %s, %d clients each %s; %d rounds × %s per comparison\n",
		pids[0], pids[1], caddyCPU, strings.Join(others, ","), conc/2, pace, rounds, dur)
	for r := 0; r < rounds; r++ {
		for _, ci := range rng.Perm(len(cmps)) {
			c := cmps[ci]
			tr, h := traffics[c.traffic], handlers[c.handler]
			phase := [2]string{ref.phase, h.phase}
			if r%2 == 1 {
				phase = [2]string{h.phase, ref.phase}
			}
			var before, after [2]time.Duration
			var n [2]int64
			var errN [2]int64
			for i := range pids {
				var err error
				if before[i], err = caddyrun.CPUTime(pids[i]); err != nil {
					return err
				}
			}
			hi, pi := 1, 0 // the processes serving the handler and plain
			if r%2 == 1 {
				hi, pi = 0, 1
			}
			var lat [2][]time.Duration
			var wg sync.WaitGroup
			for i := range pids {
				wg.Go(func() {
					n[i], errN[i] = caddyrun.LoadPaced(client, urls[i], header(tr.ua, phase[i]), conc/2, dur, &lat[i], rate/2, nil)
				})
			}
			wg.Wait()
			lats[ci][0] = append(lats[ci][0], lat[pi]...)
			lats[ci][1] = append(lats[ci][1], lat[hi]...)
			for i := range pids {
				var err error
				if after[i], err = caddyrun.CPUTime(pids[i]); err != nil {
					return err
				}
				if phase[i] == "recipe" && tr.name == "bot" {
					n[i] += errN[i] // the recipe answers the bot 403
				} else if errN[i] > 0 {
					return fmt.Errorf("%s, %s: %d requests failed or got a status other than 200", tr.name, phase[i], errN[i])
				}
			}
			per := func(i int) float64 {
				return float64((after[i] - before[i]).Nanoseconds()) / 1e3 / float64(max(n[i], 1))
			}
			ratios[ci] = append(ratios[ci], per(hi)/per(pi))
			fmt.Printf("  round %d %-8s %-13s %6.1f µs CPU/req (%6d req)  %s %6.1f µs CPU/req (%6d req)  ratio %.3f\n",
				r+1, tr.name, h.name, per(hi), n[hi], ref.name, per(pi), n[pi], per(hi)/per(pi))
		}
	}
	fmt.Printf("\n| traffic | handler | CPU per request, handler ÷ %[1]s in the same interval: median of rounds [bootstrap 95 %%] (min–max) | p50 / p99 latency, %[1]s | p50 / p99, handler |\n|---|---|--:|--:|--:|\n", ref.name)
	for ci, c := range cmps {
		fmt.Printf("| %s | %s | %s | %v / %v | %v / %v |\n", traffics[c.traffic].name, handlers[c.handler].name, summary(ratios[ci], rng),
			percentile(lats[ci][0], 50), percentile(lats[ci][0], 99), percentile(lats[ci][1], 50), percentile(lats[ci][1], 99))
	}
	if ref.name == "recipe" || slices.ContainsFunc(handlers, func(h struct{ name, phase string }) bool { return h.name == "recipe" }) {
		fmt.Println("\n" + recipeNote)
	}
	if profiles == "" {
		return nil
	}
	if err := os.MkdirAll(profiles, 0o755); err != nil {
		return err
	}
	secs := max(1, int(dur.Seconds()))
	fmt.Println()
	for _, c := range cmps {
		tr, h := traffics[c.traffic], handlers[c.handler]
		phase := [2]string{ref.phase, h.phase}
		files := [2]string{
			filepath.Join(profiles, "twin-"+tr.name+"-"+h.name+"-"+ref.name+".pprof"),
			filepath.Join(profiles, "twin-"+tr.name+"-"+h.name+".pprof"),
		}
		var n [2]int64
		errs := make(chan error, 4)
		var wg sync.WaitGroup
		for i := range pids {
			wg.Go(func() { errs <- caddyrun.Profile(admins[i], secs, files[i]) })
			wg.Go(func() {
				n[i], _ = caddyrun.LoadPaced(client, urls[i], header(tr.ua, phase[i]), conc/2, time.Duration(secs)*time.Second+200*time.Millisecond, nil, rate/2, nil)
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		fmt.Printf("profiles: %s (%d requests), %s (%d requests)\n", files[0], n[0], files[1], n[1])
	}
	return nil
}
