package guard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/testredis"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
	"github.com/robotsguard/robotsguard/traps"
)

const storeRobots = `User-agent: SlowBot
Crawl-delay: 2
Disallow: /private/

User-agent: FastBot
Disallow: /private/
`

// storeObserver counts store calls and decisions.
type storeObserver struct {
	countObserver
	mu    sync.Mutex
	calls map[string]int
}

func (o *storeObserver) ObserveStoreCall(outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[outcome]++
}

func (o *storeObserver) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.calls {
		n += c
	}
	return n
}

func newStoreEnforcer(t testing.TB, url string, obs *storeObserver) *Engine {
	t.Helper()
	opts := []Option{WithSource(sites.BytesSource([]byte(storeRobots)))}
	if obs != nil {
		opts = append(opts, WithObserver(obs))
	}
	e := mustNew(t, Config{Store: &limit.StoreConfig{Redis: url}}, opts...)
	t.Cleanup(func() { e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.limits.(*limit.Redis).Ping(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// Two Engines (two instances) on one store share each bot's budget;
// browsers and bots without a Crawl-delay never touch the store.
func TestStoreShared(t *testing.T) {
	srv := testredis.Start(t)
	obs := &storeObserver{countObserver: countObserver{m: map[string]int{}}, calls: map[string]int{}}
	a := newStoreEnforcer(t, srv.URL, obs)
	b := newStoreEnforcer(t, srv.URL, nil)
	req := Request{Host: "example.com", Target: "/page", UserAgent: "SlowBot/1.0", ClientIP: "192.0.2.1:5"}
	// Crawl-delay 2s, tolerance 2.5 delays: the burst of three is shared,
	// whichever instance a request reaches, and the fourth waits 3 × 2s -
	// 5s = 1s.
	for i, e := range []*Engine{a, b, a}[:burst] {
		if v := e.Decide(context.Background(), req); v.Action != Allow {
			t.Fatalf("request %d of the burst: %v", i+1, v.Action)
		}
	}
	v := b.Decide(context.Background(), req)
	if v.Action != Throttle || v.RetryAfter < 500*time.Millisecond || v.RetryAfter > time.Second {
		t.Fatalf("instance B after the burst: %v %v, want throttle after about 1s", v.Action, v.RetryAfter)
	}
	before := obs.total()
	for _, r := range []Request{
		{Host: "example.com", Target: "/page", UserAgent: uaChrome, ClientIP: "192.0.2.2:5"},
		{Host: "example.com", Target: "/page", UserAgent: "FastBot/1.0", ClientIP: "192.0.2.2:5"},
		{Host: "example.com", Target: "/private/x", UserAgent: "SlowBot/1.0", ClientIP: "192.0.2.3:5"},
	} {
		a.Decide(context.Background(), r)
	}
	if n := obs.total() - before; n != 0 {
		t.Fatalf("%d store calls for a browser, a bot without Crawl-delay and a denied bot", n)
	}
}

func TestStoreConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		s    limit.StoreConfig
		want string
	}{
		{limit.StoreConfig{}, "robots_guard: store: redis: the server's URL is required"},
		{limit.StoreConfig{Redis: "http://x:1"}, "robots_guard: store: redis:"},
		{limit.StoreConfig{Redis: "redis://:s3cret@host:port"}, "xxxxx"},
		{limit.StoreConfig{Redis: "redis://127.0.0.1:6379", Timeout: duration.Duration(time.Minute)}, "robots_guard: store: timeout: must be between 0 and 5s"},
		{limit.StoreConfig{Redis: "redis://127.0.0.1:6379", OnStoreError: "fail"}, `robots_guard: store: on_store_error: must be "allow" or "deny", got "fail"`},
	} {
		_, err := New(Config{Store: &tc.s})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%+v: err = %v, want %q", tc.s, err, tc.want)
		}
	}
}

// BenchmarkStoreBotCrawlDelay is a bot request under a Crawl-delay decided
// through a loopback Redis (a new client each time, so each is admitted):
// the throughput of one instance for such traffic is 1/(ns/op).
func BenchmarkStoreBotCrawlDelay(b *testing.B) {
	srv := testredis.Start(b)
	e := newStoreEnforcer(b, srv.URL, nil)
	ctx := context.Background()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		req := Request{Host: "example.com", Target: "/page", UserAgent: "SlowBot/1.0", ClientIP: fmt.Sprintf("10.%d.%d.%d", byte(i>>16), byte(i>>8), byte(i))}
		if v := e.Decide(ctx, req); v.Action != Allow {
			b.Fatal(v.Action)
		}
	}
}

// BenchmarkStoreBrowser is a browser request with a store configured: the
// store is not involved, so it costs what BenchmarkBrowser costs.
func BenchmarkStoreBrowser(b *testing.B) {
	srv := testredis.Start(b)
	e := newStoreEnforcer(b, srv.URL, nil)
	runBench(b, serve(e, okHandler), benchRequest(uaChrome, "/private/page?id=42"), 200)
}

// BenchmarkStoreBotCrawlDelayParallel is BenchmarkStoreBotCrawlDelay from
// 32 goroutines per core at once, as a busy instance sees it.
func BenchmarkStoreBotCrawlDelayParallel(b *testing.B) {
	srv := testredis.Start(b)
	e := newStoreEnforcer(b, srv.URL, nil)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(32)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			req := Request{Host: "example.com", Target: "/page", UserAgent: "SlowBot/1.0", ClientIP: fmt.Sprintf("10.%d.%d.%d", byte(i>>16), byte(i>>8), byte(i))}
			if v := e.Decide(ctx, req); v.Action != Allow {
				b.Error(v.Action, v.Reason)
				return
			}
		}
	})
}

// A trap ban reaches the shared store even when the banned client hung up
// before it was written: the ban is the fleet's, not the connection's.
func TestStoreBanOutlivesClient(t *testing.T) {
	srv := testredis.Start(t)
	mk := func() *Engine {
		zero := duration.Duration(0)
		e := mustNew(t, Config{Store: &limit.StoreConfig{Redis: srv.URL}, Traps: traps.Config{Paths: []string{"/no-robots/"}, Grace: &zero}},
			WithSource(sites.BytesSource([]byte("User-agent: *\nDisallow: /no-robots/\n"))))
		t.Cleanup(func() { e.Close() })
		return e
	}
	a, b := mk(), mk()
	warm := Request{Host: "example.com", Target: "/", UserAgent: "WarmupBot/1.0", ClientIP: "192.0.2.250:1"}
	a.Decide(context.Background(), warm)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	trap := Request{Host: "example.com", Target: a.TrapLinkFor(exampleSite, "203.0.113.9:4"), UserAgent: uaChrome, ClientIP: "203.0.113.9:4", Method: "GET"}
	if v := a.Decide(gone, trap); v.Reason != ReasonTrap {
		t.Fatalf("trap request of a client that hung up: %v %v", v.Action, v.Reason)
	}
	page := Request{Host: "example.com", Target: "/page", UserAgent: uaChrome, ClientIP: "203.0.113.9:4", Method: "GET"}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v := b.Decide(context.Background(), page); v.Reason == ReasonBanned {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other instance does not see the ban of a client that hung up (kept on one instance only)")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
