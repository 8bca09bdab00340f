package limit

import (
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsguard/robotsguard/internal/testredis"
)

// On a 3-primary Redis Cluster, two instances share one Crawl-delay budget,
// the keys of many sites spread over the primaries, and a ban on one
// instance reaches the other through sharded pub/sub.
func TestRedisCluster(t *testing.T) {
	c := testredis.StartCluster(t, 3, 0)
	a := newRedis(t, RedisConfig{URL: c.URL, Cluster: true})
	b := newRedis(t, RedisConfig{URL: c.URL, Cluster: true})
	now := time.Now().UnixNano()
	k := Key{Site: "https://example.com", Group: "SlowBot", Client: Client{0xc0, 0, 2, 1}}
	if ok, _ := a.Allow(bg, k, now, 2*time.Second); !ok {
		t.Fatal("first request refused")
	}
	spend(t, a, k, now) // the tolerance's burst, on the first instance
	if ok, wait := b.Allow(bg, k, now, 2*time.Second); ok || wait <= 0 {
		t.Fatalf("second instance: %v %v, want a refusal: the budget is shared", ok, wait)
	}

	// 60 sites: their keys land on every primary.
	for i := range 60 {
		a.Allow(bg, Key{Site: fmt.Sprintf("https://site%d.example", i), Group: "g", Client: Client{byte(i)}}, now, time.Second)
	}
	per := map[string]int{}
	for _, p := range c.Primaries() {
		out, err := c.Cmd(p, "dbsize")
		if err != nil {
			t.Fatal(err, out)
		}
		n, _ := strconv.Atoi(out)
		per[p.Addr] = n
	}
	counts := make([]int, 0, len(per))
	for _, n := range per {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	t.Logf("keys per primary: %v", per)
	if len(counts) != 3 || counts[0] < 10 {
		t.Fatalf("keys per primary %v: want every primary to hold some of 61 sites' keys", per)
	}

	// A site name a client wrote with braces (from its Host) moves its
	// own key's hash tag only: its one-key script still runs, on some
	// slot, and decides that client alone.
	obs := &storeCounts{}
	o := newRedis(t, RedisConfig{URL: c.URL, Cluster: true, Observer: obs})
	for _, site := range []string{"https://a}{b.example", "https://{x}.example", "https://}.example{"} {
		kk := Key{Site: site, Group: "g", Client: Client{7}}
		if ok, _ := o.Allow(bg, kk, now, 10*time.Second); !ok {
			t.Fatalf("%s: first request refused", site)
		}
		spend(t, o, kk, now)
	}
	if obs.get(StoreOK) == 0 || obs.get(StoreError) != 0 || obs.get(StoreTimeout) != 0 {
		t.Fatalf("calls %v: keys with braces in the site must work on a cluster", obs.m)
	}

	// Bans: sharded announcements reach the other instance.
	ba, bb := a.NewBans(100), b.NewBans(100)
	defer ba.Close()
	defer bb.Close()
	time.Sleep(200 * time.Millisecond) // subscriptions in place
	ba.Ban(bg, client(7), time.Now().UnixNano(), time.Minute, time.Hour, "trap /t/")
	waitFor(t, time.Second, "the ban to reach the other instance", func() bool { return bb.Until(client(7), time.Now().UnixNano()) != 0 })
	if l := bb.List(bg, time.Now().UnixNano()); len(l) != 1 || l[0].Reason != "trap /t/" {
		t.Fatalf("list %+v", l)
	}
	bb.Unban(bg, client(7))
	waitFor(t, time.Second, "the unban to reach the other instance", func() bool { return ba.Until(client(7), time.Now().UnixNano()) == 0 })
}

// spend takes the rest of the tolerance's burst for k (the first request
// was admitted).
func spend(t *testing.T, r *Redis, k Key, now int64) {
	t.Helper()
	for i := 0; ; i++ {
		if ok, _ := r.Allow(bg, k, now, 2*time.Second); !ok {
			return
		}
		if i > 10 {
			t.Fatal("never refused")
		}
	}
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The primary that holds a site's slot is killed: every decision returns
// within the store's timeout (on_store_error, then the local limiter),
// and once its replica has taken over, decisions go to the store again
// within 5 s, with no restart.
func TestRedisClusterFailover(t *testing.T) {
	c := testredis.StartCluster(t, 3, 1)
	obs := &storeCounts{}
	const timeout = 50 * time.Millisecond
	r := newRedis(t, RedisConfig{URL: c.URL, Cluster: true, Timeout: timeout, Observer: obs})
	k := Key{Site: "https://failover.example", Group: "g", Client: Client{9}}
	now := time.Now().UnixNano()
	if ok, _ := r.Allow(bg, k, now, time.Millisecond); !ok {
		t.Fatal("refused before the failover")
	}
	victim := c.PrimaryOf(r.key(k))
	if victim == nil {
		t.Fatal("no primary for the key")
	}
	victim.Stop()
	killed := time.Now()
	// When the replica has taken the slot over, as the cluster sees it.
	promotedAt := make(chan time.Duration, 1)
	go func() {
		for time.Since(killed) < 20*time.Second {
			if p := c.PrimaryOf(r.key(k)); p != nil && p != victim {
				promotedAt <- time.Since(killed)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		promotedAt <- 0
	}()
	var slowest, back time.Duration
	for i := 0; time.Since(killed) < 15*time.Second; i++ {
		okBefore := obs.get(StoreOK)
		start := time.Now()
		r.Allow(bg, Key{Site: k.Site, Group: k.Group, Client: Client{byte(i), byte(i >> 8)}}, time.Now().UnixNano(), time.Millisecond)
		slowest = max(slowest, time.Since(start))
		if obs.get(StoreOK) > okBefore {
			back = time.Since(killed)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	promoted := <-promotedAt
	t.Logf("decisions while the slot had no primary: slowest %s (timeout %s); replica promoted %s after the kill; sharing back %s after the kill; calls %v",
		slowest, timeout, promoted, back, obs.m)
	if slowest > timeout+150*time.Millisecond {
		t.Errorf("a decision took %s with a %s timeout", slowest, timeout)
	}
	if promoted == 0 {
		t.Fatal("the replica never took the slot over")
	}
	if back == 0 {
		t.Fatalf("decisions never went to the store again after the failover (calls %v)", obs.m)
	}
	if back > promoted+5*time.Second {
		t.Errorf("sharing came back %s after the kill, more than 5 s after the failover (%s)", back, promoted)
	}
	if !strings.Contains(fmt.Sprint(obs.m), StoreOK) {
		t.Fatalf("calls %v", obs.m)
	}
}

// BenchmarkRedisClusterAllow is BenchmarkRedisAllow on a 3-primary cluster.
func BenchmarkRedisClusterAllow(b *testing.B) {
	c := testredis.StartCluster(b, 3, 0)
	benchAllow(b, RedisConfig{URL: c.URL, Cluster: true})
}

// Bans written in the key layout of earlier versions (no hash tags) are
// carried over when an instance starts: their ends, strikes and reasons.
func TestRedisBansImportOldLayout(t *testing.T) {
	srv := testredis.Start(t)
	cl := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer cl.Close()
	ctx := context.Background()
	c := Client(client(5))
	hexc := hex.EncodeToString(c[:])
	until := time.Now().Add(time.Hour).UnixMilli()
	cl.Set(ctx, "robots_guard:ban:"+hexc, fmt.Sprintf("%d 2 trap /old/", until), time.Hour)
	cl.Set(ctx, "robots_guard:strikes:"+hexc, "2", 2*time.Hour)
	cl.ZAdd(ctx, "robots_guard:bans", redis.Z{Score: float64(until), Member: hexc})
	// An ended one is not carried over.
	cl.ZAdd(ctx, "robots_guard:bans", redis.Z{Score: float64(time.Now().Add(-time.Minute).UnixMilli()), Member: "00"})

	r := newRedis(t, RedisConfig{URL: srv.URL})
	b := r.NewBans(100)
	defer b.Close()
	waitFor(t, 5*time.Second, "the old ban to be carried over", func() bool { return b.Until(c, time.Now().UnixNano()) != 0 })
	l := b.List(ctx, time.Now().UnixNano())
	if len(l) != 1 || l[0].Reason != "trap /old/" || l[0].Strikes != 2 || l[0].Until/int64(time.Millisecond) != until {
		t.Fatalf("list %+v", l)
	}
	if s, _ := cl.Get(ctx, "robots_guard:{bans}:strikes:"+hexc).Result(); s != "2" {
		t.Fatalf("strikes %q", s)
	}
	// Lifted, it is not carried over again by the next instance.
	b.Unban(ctx, c)
	r2 := newRedis(t, RedisConfig{URL: srv.URL})
	b2 := r2.NewBans(100)
	defer b2.Close()
	time.Sleep(200 * time.Millisecond) // its import and first load
	if b2.Until(c, time.Now().UnixNano()) != 0 || len(b2.List(ctx, time.Now().UnixNano())) != 0 {
		t.Fatal("a lifted ban came back from the old layout")
	}
}
