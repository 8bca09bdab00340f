package limit

import (
	"context"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/robotsguard/robotsguard/internal/testredis"
)

func newRedis(t testing.TB, cfg RedisConfig) *Redis {
	t.Helper()
	r, err := NewRedis(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if !strings.Contains(cfg.URL, "hunter2") {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Ping(ctx); err != nil {
			t.Fatalf("ping %s: %v", RedactURL(cfg.URL), err)
		}
	}
	return r
}

// The script decides as Memory does, for the same arrival sequences (the
// caller's clock sent to the script, in whole microseconds).
func TestRedisMatchesMemory(t *testing.T) {
	srv := testredis.Start(t)
	completed := 0
runs:
	for run := range 20 {
		rng := rand.New(rand.NewPCG(uint64(run), 7))
		f := []float64{0, 0.25, 0.5}[run%3]
		mem := NewMemory(1000, f)
		obs := &outcomes{}
		red := newRedis(t, RedisConfig{URL: srv.URL, KeyPrefix: "match" + string(rune('a'+run)) + ":", Tolerance: f, clientClock: true, Observer: obs})
		// One delay per key, as a group has one Crawl-delay.
		keys := []Key{{Site: "https://a.example", Group: "SlowBot"}, {Site: "https://a.example", Group: "*", Client: [16]byte{1}}, {Site: "http://b", Group: "x"}}
		delays := []time.Duration{200 * time.Millisecond, time.Second, 3 * time.Millisecond}
		now := int64(1_790_000_000) * int64(time.Second)
		for i := range 300 {
			j := rng.IntN(len(keys))
			k, d := keys[j], delays[j]
			now += int64(rng.Int64N(int64(2*d))) / 1000 * 1000 // whole µs
			peek := rng.IntN(5) == 0
			var ok1, ok2 bool
			var w1, w2 time.Duration
			if peek {
				ok1, w1 = mem.Peek(bg, k, now, d)
				ok2, w2 = red.Peek(bg, k, now, d)
			} else {
				ok1, w1 = mem.Allow(bg, k, now, d)
				ok2, w2 = red.Allow(bg, k, now, d)
			}
			if bad := obs.failed(); bad != "" {
				// A call that failed (a timeout under a loaded CI
				// machine) is decided by on_store_error, which is not
				// what this test compares: the run ends there.
				t.Logf("run %d step %d: store call %s; run abandoned", run, i, bad)
				continue runs
			}
			if ok1 != ok2 || w1 != w2 {
				t.Fatalf("run %d step %d (%v, delay %v, peek %v): memory %v %v, redis %v %v", run, i, k, d, peek, ok1, w1, ok2, w2)
			}
		}
		completed++
	}
	if completed < 15 {
		t.Fatalf("only %d of 20 runs completed without a failed store call", completed)
	}
}

// Two instances on one server share one budget; another prefix is another
// budget; keys expire when their wait ends.
func TestRedisShared(t *testing.T) {
	srv := testredis.Start(t)
	a := newRedis(t, RedisConfig{URL: srv.URL})
	b := newRedis(t, RedisConfig{URL: srv.URL})
	c := newRedis(t, RedisConfig{URL: srv.URL, KeyPrefix: "other:"})
	k := Key{Site: "https://example.com", Group: "SlowBot", Client: [16]byte{192, 0, 2, 1}}
	now := time.Now().UnixNano()
	if ok, _ := a.Allow(bg, k, now, 2*time.Second); !ok {
		t.Fatal("first request refused")
	}
	ok, wait := b.Allow(bg, k, now, 2*time.Second)
	if ok || wait < time.Second || wait > 2*time.Second {
		t.Fatalf("second instance: %v %v, want a refusal of about 1.5s", ok, wait)
	}
	if ok, _ := c.Allow(bg, k, now, 2*time.Second); !ok {
		t.Fatal("another prefix must be another budget")
	}
	cl := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer cl.Close()
	keys, _ := cl.Keys(context.Background(), "robots_guard:*").Result()
	if len(keys) != 1 || keys[0] != "robots_guard:cd:{https://example.com} SlowBot c0000201000000000000000000000000" {
		t.Fatalf("keys %q", keys)
	}
	ttl, _ := cl.PTTL(context.Background(), keys[0]).Result()
	if ttl <= 0 || ttl > 2*time.Second {
		t.Fatalf("TTL %v, want at most the delay", ttl)
	}
	// A refusal is remembered locally: asking again costs no call.
	obs := &storeCounts{}
	b.cfg.Observer = obs
	for range 10 {
		if ok, _ := b.Allow(bg, k, now+int64(100*time.Millisecond), 2*time.Second); ok {
			t.Fatal("admitted")
		}
	}
	if n := obs.get(StoreOK); n != 0 {
		t.Fatalf("%d calls for a key refused locally", n)
	}
	// A delay under a microsecond (the script's unit) is no error.
	obs2 := &storeCounts{}
	a.cfg.Observer = obs2
	a.Allow(bg, Key{Site: "tiny"}, now, 500*time.Nanosecond)
	a.Allow(bg, Key{Site: "tiny"}, now, 500*time.Nanosecond)
	if obs2.get(StoreOK) != 2 {
		t.Fatalf("a 500 ns delay: %v", obs2.m)
	}
	a.cfg.Observer = nil
	// The script is reloaded when the server forgot it.
	cl.ScriptFlush(context.Background())
	k2 := Key{Site: "https://example.com", Group: "Other"}
	if ok, _ := a.Allow(bg, k2, now, time.Second); !ok {
		t.Fatal("after SCRIPT FLUSH")
	}
	if ok, _ := b.Allow(bg, k2, now, time.Second); ok {
		t.Fatal("after SCRIPT FLUSH, shared")
	}
}

type storeCounts struct {
	mu sync.Mutex
	m  map[string]int
	d  []time.Duration
}

func (s *storeCounts) ObserveStoreCall(outcome string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]int{}
	}
	s.m[outcome]++
	if outcome == StoreOK {
		s.d = append(s.d, d)
	}
}

func (s *storeCounts) get(o string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[o]
}

// Redis stops mid-run: every decision returns within the timeout (plus a
// margin), the configured mode applies, calls pause and the local limiter
// decides, a warning is logged; Redis comes back: sharing resumes by
// itself.
func TestRedisDown(t *testing.T) {
	for _, mode := range []string{OnErrorAllow, OnErrorDeny} {
		t.Run(mode, func(t *testing.T) {
			srv := testredis.Start(t)
			core, logs := observer.New(zap.InfoLevel)
			obs := &storeCounts{}
			const timeout = 50 * time.Millisecond
			r := newRedis(t, RedisConfig{URL: srv.URL, OnError: mode, Timeout: timeout, Logger: zap.New(core), Observer: obs})
			other := newRedis(t, RedisConfig{URL: srv.URL})
			k := func(i int) Key { return Key{Site: "s", Group: "g", Client: [16]byte{byte(i), byte(i >> 8)}} }
			if ok, _ := r.Allow(bg, k(0), time.Now().UnixNano(), time.Second); !ok {
				t.Fatal("up: refused")
			}
			srv.Stop()
			// 2.2 s of decisions: the first pause (1 s), a retry that
			// fails, a second pause (2 s).
			var slowest time.Duration
			allowed, refused, n := 0, 0, 0
			for start := time.Now(); time.Since(start) < 2200*time.Millisecond; n++ {
				t0 := time.Now()
				ok, _ := r.Allow(bg, k(n+1), time.Now().UnixNano(), time.Second)
				slowest = max(slowest, time.Since(t0))
				if ok {
					allowed++
				} else {
					refused++
				}
				time.Sleep(2 * time.Millisecond)
			}
			failedCalls := obs.get(StoreTimeout) + obs.get(StoreError)
			t.Logf("Redis down, %s: %d decisions in 2.2 s, slowest %v; %d allowed, %d refused; calls: %v", mode, n, slowest, allowed, refused, obs.m)
			if slowest > timeout+100*time.Millisecond {
				t.Fatalf("a decision took %v with a %v timeout", slowest, timeout)
			}
			if failedCalls < 2 || failedCalls > 10 || obs.get(StoreSkipped) < n*8/10 {
				t.Fatalf("calls did not pause and retry: %v", obs.m)
			}
			// New keys while paused: the local limiter admits them (a
			// first request); the failed calls got the mode.
			if mode == OnErrorDeny && refused == 0 || mode == OnErrorAllow && refused != 0 {
				t.Fatalf("mode %s: %d refused", mode, refused)
			}
			// The local limiter still enforces the delay per instance.
			now := time.Now().UnixNano()
			r.Allow(bg, k(500), now, time.Second)
			if ok, _ := r.Allow(bg, k(500), now, time.Second); ok {
				t.Fatal("paused: the local limiter must refuse a second request at once")
			}
			if logs.FilterMessageSnippet("store unreachable").Len() == 0 {
				t.Fatalf("no warning: %v", logs.All())
			}
			srv.Restart()
			restarted := time.Now()
			otherObs := &storeCounts{}
			other.cfg.Observer = otherObs
			for i := 0; ; i++ {
				// Shared again: r admits a new key through the server and
				// the other instance, through the server too, refuses it.
				okBefore, otherBefore := obs.get(StoreOK), otherObs.get(StoreOK)
				now := time.Now().UnixNano()
				key := k(1000 + i)
				a, _ := r.Allow(bg, key, now, 10*time.Second)
				b, _ := other.Allow(bg, key, now, 10*time.Second)
				if a && !b && obs.get(StoreOK) > okBefore && otherObs.get(StoreOK) > otherBefore {
					break
				}
				if time.Since(restarted) > 10*time.Second {
					t.Fatalf("sharing did not resume within 10s: %v / %v", obs.m, otherObs.m)
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("sharing resumed %v after the restart", time.Since(restarted).Round(time.Millisecond))
			if logs.FilterMessageSnippet("reachable again").Len() != 1 {
				t.Fatalf("no recovery line: %v", logs.All())
			}
		})
	}
}

// Passwords never appear in errors or logs.
func TestRedisPasswordRedacted(t *testing.T) {
	for _, u := range []string{"redis://:hunter2@127.0.0.1:notaport/0", "redis://:hun/ter2@127.0.0.1:1/0", `redis://:hu"nter2#x@h:1`} {
		_, err := NewRedis(RedisConfig{URL: u})
		if err == nil || strings.Contains(err.Error(), "hun") || strings.Contains(err.Error(), "ter2") {
			t.Fatalf("%s: err = %v", u, err)
		}
	}
	srv := testredis.Start(t, "--requirepass", "right-password")
	core, logs := observer.New(zap.InfoLevel)
	r := newRedis(t, RedisConfig{URL: "redis://:hunter2@" + srv.Addr, Logger: zap.New(core)})
	for range 5 {
		r.Allow(bg, Key{Site: "s"}, time.Now().UnixNano(), time.Second)
	}
	if logs.Len() == 0 {
		t.Fatal("a wrong password must be logged")
	}
	for _, e := range logs.All() {
		for _, f := range e.Context {
			if strings.Contains(f.String, "hunter2") || f.Interface != nil && strings.Contains(fmtAny(f.Interface), "hunter2") {
				t.Fatalf("password in a log line: %v", e)
			}
		}
	}
	if s := r.String(); strings.Contains(s, "hunter2") {
		t.Fatal(s)
	}
	ok := newRedis(t, RedisConfig{URL: "redis://:right-password@" + srv.Addr})
	if a, _ := ok.Allow(bg, Key{Site: "s"}, time.Now().UnixNano(), time.Second); !a {
		t.Fatal("with the right password")
	}
}

func fmtAny(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	return ""
}

// rediss:// works.
func TestRedisTLS(t *testing.T) {
	srv := testredis.StartTLS(t)
	// A generous timeout: under -race on a loaded CI machine a TLS call
	// that times out is decided locally (on_store_error), and then the
	// second instance does not see the first's request (CI saw it once).
	a := newRedis(t, RedisConfig{URL: srv.URL, TLS: srv.TLS, Timeout: 2 * time.Second})
	b := newRedis(t, RedisConfig{URL: srv.URL, TLS: srv.TLS, Timeout: 2 * time.Second})
	k := Key{Site: "tls"}
	now := time.Now().UnixNano()
	if ok, _ := a.Allow(bg, k, now, time.Second); !ok {
		t.Fatal("refused")
	}
	if ok, _ := b.Allow(bg, k, now, time.Second); ok {
		t.Fatal("not shared over TLS")
	}
	obs := &storeCounts{}
	a.cfg.Observer = obs
	a.Allow(bg, Key{Site: "tls2"}, now, time.Second)
	if obs.get(StoreOK) != 1 {
		t.Fatalf("calls %v", obs.m)
	}
}

func TestRedisConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  RedisConfig
		want string
	}{
		{RedisConfig{URL: "http://127.0.0.1:6379"}, "want redis://"},
		{RedisConfig{URL: "redis://127.0.0.1:6379", Timeout: time.Minute}, "timeout: must be between 0 and 5s"},
		{RedisConfig{URL: "redis://127.0.0.1:6379", OnError: "panic"}, `on_store_error: must be "allow" or "deny"`},
		{RedisConfig{URL: "redis://127.0.0.1:6379", KeyPrefix: "shop{1}:"}, `key_prefix: "shop{1}:" must not contain '{' or '}'`},
	} {
		if _, err := NewRedis(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// BenchmarkRedisAllow is one decision through a loopback Redis; it reports
// the p50 and p99 latency of the calls.
func BenchmarkRedisAllow(b *testing.B) {
	srv := testredis.Start(b)
	benchAllow(b, RedisConfig{URL: srv.URL})
}

// benchAllow measures decisions through the store of cfg, after warming
// its client (connections, and on a cluster its slot map), and reports the
// p50 and p99 latency of the calls.
func benchAllow(b *testing.B, cfg RedisConfig) {
	obs := &storeCounts{}
	cfg.Observer = obs
	r := newRedis(b, cfg)
	now := time.Now().UnixNano()
	for i := range 200 {
		r.Allow(bg, Key{Site: "warm", Group: "g", Client: [16]byte{byte(i)}}, now, time.Second)
	}
	obs.d = obs.d[:0]
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		r.Allow(bg, Key{Site: "bench", Group: "g", Client: [16]byte{byte(i), byte(i >> 8), byte(i >> 16)}}, now, time.Second)
	}
	sort.Slice(obs.d, func(i, j int) bool { return obs.d[i] < obs.d[j] })
	if n := len(obs.d); n > 0 {
		b.ReportMetric(float64(obs.d[n/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(obs.d[n*99/100].Microseconds()), "p99-µs")
	}
}

// TestRedisKeyBytes measures the server memory of one key (for sizing:
// docs/fleets.md), with a typical site and group, and checks
// that the longest Host a request may carry (253 bytes) and a long group
// token cost the same (within 10%): long parts are hashed.
func TestRedisKeyBytes(t *testing.T) {
	srv := testredis.Start(t)
	r := newRedis(t, RedisConfig{URL: srv.URL})
	cl := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer cl.Close()
	used := func() int64 {
		info, _ := cl.Info(context.Background(), "memory").Result()
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return 0
	}
	perKey := func(site, group string) float64 {
		cl.FlushAll(context.Background())
		before := used()
		const n = 20000
		now := time.Now().UnixNano()
		for i := range n {
			r.Allow(bg, Key{Site: site, Group: group, Client: [16]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, byte(i >> 16), byte(i >> 8), byte(i)}}, now, time.Minute)
		}
		keys, _ := cl.DBSize(context.Background()).Result()
		per := float64(used()-before) / float64(keys)
		t.Logf("%d keys, %.0f bytes each in Redis (key %d bytes; site %d bytes, group %d)", keys, per, len(r.key(Key{Site: site, Group: group})), len(site), len(group))
		if keys != n {
			t.Fatalf("%d keys, want %d", keys, n)
		}
		return per
	}
	normal := perKey("https://www.example.com", "SlowBot")
	if normal < 50 || normal > 400 {
		t.Fatalf("%.0f bytes per key", normal)
	}
	long := perKey("https://"+strings.Repeat("a", 63)+"."+strings.Repeat("b", 63)+"."+strings.Repeat("c", 63)+"."+strings.Repeat("d", 61), strings.Repeat("LongBot", 150))
	if long > normal*1.1 || long < normal*0.9 {
		t.Fatalf("a key of a 253-byte Host and a 1,050-byte group costs %.0f bytes, a normal one %.0f: want within 10%%", long, normal)
	}
	if k := r.key(Key{Site: strings.Repeat("x", 12<<10), Group: strings.Repeat("y", 12<<10)}); len(k) > len(DefaultKeyPrefix)+4+2*(maxKeyPart+1)+3+32 {
		t.Fatalf("a key of 12 KiB parts is %d bytes", len(k))
	}
}

// A call whose request ended (its context canceled) is decided by the
// local clocks, and neither counts as a store failure nor pauses calls:
// clients that hang up cannot switch sharing off for everyone.
func TestRedisCanceledCallIsNoFailure(t *testing.T) {
	srv := testredis.Start(t)
	r := newRedis(t, RedisConfig{URL: srv.URL, KeyPrefix: "gone:", OnError: OnErrorDeny})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	now := time.Now().UnixNano()
	for i := range 3 * failuresToBackoff {
		if ok, _ := r.Allow(ctx, Key{Site: "s", Client: Client{15: byte(i)}}, now, time.Second); !ok {
			t.Fatalf("call %d of a canceled request: refused (on_store_error deny applied to a request that went away)", i)
		}
	}
	if f, p := r.failures.Load(), r.pausedUntil.Load(); f != 0 || p != 0 {
		t.Fatalf("canceled calls counted as failures: %d failures, paused until %d", f, p)
	}
	k := Key{Site: "s", Group: "shared"}
	if ok, _ := r.Allow(bg, k, now, time.Hour); !ok {
		t.Fatal("first live call refused")
	}
	if ok, _ := newRedis(t, RedisConfig{URL: srv.URL, KeyPrefix: "gone:"}).Allow(bg, k, now, time.Hour); ok {
		t.Fatal("the live call was not shared through the store")
	}
}

// outcomes records the store calls' outcomes other than ok.
type outcomes struct {
	mu  sync.Mutex
	bad string
}

func (o *outcomes) ObserveStoreCall(outcome string, _ time.Duration) {
	if outcome != StoreOK {
		o.mu.Lock()
		o.bad = outcome
		o.mu.Unlock()
	}
}

func (o *outcomes) failed() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bad
}
