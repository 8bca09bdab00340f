// Package caddyrun holds what the bench commands share to measure a real
// Caddy: building ../cmd/caddy, an upstream on loopback, free ports, a
// keep-alive load and a process's CPU time.
package caddyrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Build builds ../cmd/caddy (run from the bench directory) into dir and
// returns the binary's path.
func Build(dir string) (string, error) { return build(dir, "..", "./cmd/caddy") }

// BuildBench builds ./cmd/caddybench (Caddy with robots_guard and the
// modules it is compared with; run from the bench directory) into dir and
// returns the binary's path.
func BuildBench(dir string) (string, error) { return build(dir, ".", "./cmd/caddybench") }

func build(dir, in, pkg string) (string, error) {
	bin := filepath.Join(dir, "caddy")
	fmt.Printf("building %s ...\n", filepath.Join(in, pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = in
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s (run from the bench directory): %w", pkg, err)
	}
	return bin, nil
}

// Upstream serves robots at /robots.txt and page at every other path, as
// text/plain, on a loopback port; it returns the listener's address.
func Upstream(robots, page string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, robots)
			return
		}
		io.WriteString(w, page)
	}))
	return l.Addr().String(), nil
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Load runs conc keep-alive clients that GET url with header for d, and
// returns the number of 200 answers and of failures.
func Load(client *http.Client, url string, header http.Header, conc int, d time.Duration) (ok, failed int64) {
	return LoadTimed(client, url, header, conc, d, nil)
}

// LoadTimed is Load that also appends each answered request's latency to
// *lat (when not nil), for percentiles.
func LoadTimed(client *http.Client, url string, header http.Header, conc int, d time.Duration, lat *[]time.Duration) (ok, failed int64) {
	return LoadPaced(client, url, header, conc, d, lat, 0, nil)
}

// LoadPaced is LoadTimed at a fixed rate (requests a second over all
// clients; 0: as fast as they can): a server's CPU time per request
// depends on how busy it is (a busier one batches more wakeups), so
// configurations compared at one rate are compared in one regime. Requests
// the clients cannot start in time are dropped, not queued, and counted in
// *missed (when not nil): a run with many missed ticks ran at less than
// the rate.
func LoadPaced(client *http.Client, url string, header http.Header, conc int, d time.Duration, lat *[]time.Duration, rate float64, missed *int64) (ok, failed int64) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var tokens chan struct{}
	if rate > 0 {
		tokens = make(chan struct{}, conc)
		go func() {
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			start, sent := time.Now(), 0
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-t.C:
					due := int(now.Sub(start).Seconds() * rate)
					for ; sent < due; sent++ {
						select {
						case tokens <- struct{}{}:
						default:
							if missed != nil {
								atomic.AddInt64(missed, 1)
							}
						}
					}
				}
			}
		}()
	}
	var okN, badN atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range conc {
		wg.Go(func() {
			var mine []time.Duration
			defer func() {
				if lat != nil {
					mu.Lock()
					*lat = append(*lat, mine...)
					mu.Unlock()
				}
			}()
			for ctx.Err() == nil {
				if tokens != nil {
					select {
					case <-tokens:
					case <-ctx.Done():
						return
					}
				}
				start := time.Now()
				req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
				for k, v := range header {
					req.Header[k] = v
				}
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						badN.Add(1)
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if lat != nil {
					mine = append(mine, time.Since(start))
				}
				if resp.StatusCode == http.StatusOK {
					okN.Add(1)
				} else {
					badN.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return okN.Load(), badN.Load()
}

// CPUTime returns the CPU time a process has run so far: the sum of its
// threads' run time in /proc/<pid>/task/*/schedstat (nanoseconds; the
// scheduler's own account, which leaves out time the hypervisor stole), or
// user + system time from /proc/<pid>/stat (10 ms ticks) where schedstat
// is missing.
func CPUTime(pid int) (time.Duration, error) {
	if tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid)); err == nil && len(tasks) > 0 {
		var sum time.Duration
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue // a thread that ended (Go rarely ends one)
			}
			f := strings.Fields(string(b))
			if len(f) < 1 {
				return 0, fmt.Errorf("unexpected %s", t)
			}
			ns, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("unexpected %s", t)
			}
			sum += time.Duration(ns)
		}
		return sum, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

// Profile takes a CPU profile of secs seconds from the Caddy whose admin
// endpoint listens on localhost:adminPort and writes it to file.
func Profile(adminPort, secs int, file string) error {
	resp, err := http.Get(fmt.Sprintf("http://localhost:%d/debug/pprof/profile?seconds=%d", adminPort, secs))
	if err != nil {
		return fmt.Errorf("profile %s: %w", file, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", file, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		err = os.WriteFile(file, b, 0o644)
	}
	return err
}

// WaitUp waits until Caddy answers on the loopback port, at most 20 s.
func WaitUp(client *http.Client, port int) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/robots.txt", port))
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("caddy did not answer on port %d within 20s", port)
}

// PinAway pins this process (every thread) to every core but caddyCPU, so
// that a Caddy pinned there has its core to itself; it returns the path of
// taskset and the cores taken. It needs Linux, taskset and two cores.
func PinAway(caddyCPU int) (taskset string, others []string, err error) {
	if runtime.GOOS != "linux" {
		return "", nil, errors.New("needs Linux (/proc and taskset)")
	}
	if taskset, err = exec.LookPath("taskset"); err != nil {
		return "", nil, errors.New("taskset not found (Debian package util-linux)")
	}
	if runtime.NumCPU() < 2 {
		return "", nil, errors.New("needs at least 2 cores: Caddy on one, the load on another")
	}
	for i := 0; i < runtime.NumCPU(); i++ {
		if i != caddyCPU {
			others = append(others, strconv.Itoa(i))
		}
	}
	if out, err := exec.Command(taskset, "-a", "-p", "-c", strings.Join(others, ","), strconv.Itoa(os.Getpid())).CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("pin the load generator: %v: %s", err, out)
	}
	return taskset, others, nil
}

// Start writes caddyfile into dir and runs the Caddy binary bin on it,
// with its config and data under dir; with taskset, pinned to core cpu
// with GOMAXPROCS=1. stop kills it and waits.
func Start(bin, dir, caddyfile, taskset string, cpu int) (pid int, stop func(), err error) {
	cfg := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfg, []byte(caddyfile), 0o644); err != nil {
		return 0, nil, err
	}
	args := []string{bin, "run", "--config", cfg, "--adapter", "caddyfile"}
	env := append(os.Environ(), "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	if taskset != "" {
		args = append([]string{taskset, "-c", strconv.Itoa(cpu)}, args...)
		env = append(env, "GOMAXPROCS=1")
	}
	caddy := exec.Command(args[0], args[1:]...)
	caddy.Env = env
	caddy.Stderr = io.Discard
	if err := caddy.Start(); err != nil {
		return 0, nil, err
	}
	return caddy.Process.Pid, func() {
		caddy.Process.Kill()
		caddy.Wait()
	}, nil
}

// Setup makes a temporary directory (removed by cleanup), builds
// ../cmd/caddy into it and starts an upstream that serves robots and page
// (see Upstream).
func Setup(name, robots, page string) (dir, bin, upstream string, cleanup func(), err error) {
	return setup(name, robots, page, Build)
}

// SetupBench is Setup with the Caddy of BuildBench.
func SetupBench(name, robots, page string) (dir, bin, upstream string, cleanup func(), err error) {
	return setup(name, robots, page, BuildBench)
}

func setup(name, robots, page string, build func(string) (string, error)) (dir, bin, upstream string, cleanup func(), err error) {
	dir, err = os.MkdirTemp("", "robotsguard-"+name+"-")
	if err != nil {
		return "", "", "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	if bin, err = build(dir); err == nil {
		upstream, err = Upstream(robots, page)
	}
	if err != nil {
		cleanup()
		return "", "", "", nil, err
	}
	return dir, bin, upstream, cleanup, nil
}

// PhaseSite is the Caddyfile of the one site every phase of the load test
// (and footprint -whole) runs on, with admin as its global admin line, its
// storage under dir, on port, proxying to upstream. One site, one
// listener, one reverse_proxy (one connection pool): the phases differ
// only by a request header (X-Phase: guard, vars, ratelimit, recipe, or
// anything else for plain) that selects the handler in front of the proxy,
// so every phase pays the same matchers and nothing else differs but the
// handler measured. recipe is the header_regexp of the recipe phase; ""
// leaves that phase out.
func PhaseSite(admin, dir, upstream string, port int, recipe string) string {
	recipePhase := ""
	if recipe != "" {
		recipePhase = fmt.Sprintf(`	@recipe header X-Phase recipe
	# The recipe's regexp runs in its phase only (in one matcher set
	# with the header, Caddy would evaluate it for every request).
	route @recipe {
		@bots header_regexp User-Agent "%s"
		respond @bots 403
	}
`, recipe)
	}
	return fmt.Sprintf(`{
	%[5]s
	persist_config off
	storage file_system %[1]s/storage
}

http://127.0.0.1:%[3]d {
	@guard header X-Phase guard
	@vars header X-Phase vars
	@ratelimit header X-Phase ratelimit
	route {
		robots_guard @guard
		vars @vars loadtest_noop 1
		rate_limit @ratelimit {
			zone per_user_agent {
				key {http.request.header.User-Agent}
				events 100000
				window 1s
			}
		}
%[4]s		reverse_proxy %[2]s {
			transport http {
				keepalive_idle_conns 1024
				keepalive_idle_conns_per_host 1024
			}
		}
	}
}
`, dir, upstream, port, indent(recipePhase), admin)
}

// indent puts a tab before every line of s.
func indent(s string) string {
	if s == "" {
		return ""
	}
	return "\t" + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n\t") + "\n"
}
