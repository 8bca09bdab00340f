package limit

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/robotsguard/robotsguard/internal/testredis"
)

// TestRedisBansLocalShared: a ban decided while the store is down holds on
// its instance and, when the store answers again, is written to it and
// reaches the other instances.
func TestRedisBansLocalShared(t *testing.T) {
	srv := testredis.Start(t)
	a := newRedis(t, RedisConfig{URL: srv.URL, banSync: 100 * time.Millisecond}).NewBans(100)
	defer a.Close()
	time.Sleep(200 * time.Millisecond)
	srv.Stop()
	if in := a.Ban(bg, client(21), time.Now().UnixNano(), time.Minute, time.Hour, "trap /t/"); in.Until == 0 {
		t.Fatal("no local ban while the store is down")
	}
	srv.Restart()
	b := newRedis(t, RedisConfig{URL: srv.URL}).NewBans(100)
	defer b.Close()
	deadline := time.Now().Add(10 * time.Second)
	for b.Until(client(21), time.Now().UnixNano()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the ban kept during the outage never reached the other instance")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if l := b.List(bg, time.Now().UnixNano()); len(l) != 1 || l[0].Reason != "trap /t/" {
		t.Fatalf("the shared list: %+v", l)
	}
}

// TestRedisBansSyncCost: with 100,000 bans in the store, an instance that
// is up to date reads only the changes: a sync with no change and one with
// ten take a small part of a full read of the list (the measure of the
// old resync, every 10 s), and the changes arrive.
func TestRedisBansSyncCost(t *testing.T) {
	if testing.Short() {
		t.Skip("fills the store with 100,000 bans")
	}
	srv := testredis.Start(t)
	r := newRedis(t, RedisConfig{URL: srv.URL})
	b := r.NewBans(2 * DefaultMaxBans) // room for the changes
	defer b.Close()
	fillBans(t, r, b, 100000)
	ctx := context.Background()
	var s logSync
	start := time.Now()
	b.sync(ctx, &s)
	full := time.Since(start)
	if n := b.mirror.Len(); n != 100000 {
		t.Fatalf("the full read holds %d bans", n)
	}
	start = time.Now()
	b.sync(ctx, &s)
	none := time.Since(start)
	for i := range 10 {
		b.Ban(bg, client(100+i), time.Now().UnixNano(), time.Minute, time.Hour, "trap")
		b.mirror.Unban(ctx, client(100+i)) // as if this instance had missed the message
	}
	start = time.Now()
	b.sync(ctx, &s)
	ten := time.Since(start)
	for i := range 10 {
		if b.Until(client(100+i), time.Now().UnixNano()) == 0 {
			t.Fatalf("change %d not read from the log", i)
		}
	}
	t.Logf("100,000 bans: full read %v; sync with no change %v, with 10 changes %v", full, none, ten)
	if none > full/20 || ten > full/20 {
		t.Errorf("a sync costs %v / %v, a full read %v: want a small part of it", none, ten, full)
	}
}

// TestRedisClusterOneNodeDown: the primary of one shard of a 3-primary
// cluster is killed (no replica). Its keys' calls time out and pause, for
// its slots only: Crawl-delay keys of the other shards still go to the
// store, and a ban (its slot on a healthy shard) is written and reaches
// another instance.
func TestRedisClusterOneNodeDown(t *testing.T) {
	c := testredis.StartCluster(t, 3, 0)
	obs := &storeCounts{}
	r := newRedis(t, RedisConfig{URL: c.URL, Cluster: true, Timeout: 50 * time.Millisecond, Observer: obs})
	bans := r.NewBans(100)
	defer bans.Close()
	other := newRedis(t, RedisConfig{URL: c.URL, Cluster: true, banSync: 100 * time.Millisecond}).NewBans(100)
	defer other.Close()
	bansNode := c.PrimaryOf(bans.setKey())
	// A key on a primary that is not the bans', and one on the third.
	var victimKey, healthyKey Key
	var victim *testredis.Server
	for i := 0; victim == nil || healthyKey.Site == ""; i++ {
		k := Key{Site: fmt.Sprintf("https://s%d.example", i), Group: "g", Client: Client{9}}
		switch p := c.PrimaryOf(r.key(k)); {
		case p == nil || p == bansNode:
		case victim == nil:
			victim, victimKey = p, k
		case p != victim:
			healthyKey = k
		}
	}
	now := time.Now().UnixNano()
	r.Allow(bg, victimKey, now, time.Millisecond)
	r.Allow(bg, healthyKey, now, time.Millisecond)
	victim.Stop()
	for range 5 {
		r.Allow(bg, victimKey, time.Now().UnixNano(), time.Millisecond)
	}
	if obs.get(StoreSkipped) == 0 {
		t.Fatalf("calls to the dead shard never paused: %v", obs.m)
	}
	okBefore, skippedBefore := obs.get(StoreOK), obs.get(StoreSkipped)
	for i := range 5 {
		r.Allow(bg, Key{Site: healthyKey.Site, Group: "g", Client: Client{byte(i + 1)}}, time.Now().UnixNano(), time.Millisecond)
	}
	if obs.get(StoreOK) != okBefore+5 || obs.get(StoreSkipped) != skippedBefore {
		t.Fatalf("a healthy shard's keys were paused with the dead one's: %v", obs.m)
	}
	if in := bans.Ban(bg, client(31), time.Now().UnixNano(), time.Minute, time.Hour, "trap"); in.Until == 0 || in.local {
		t.Fatalf("a ban on the healthy bans shard: %+v", in)
	}
	waitFor(t, 5*time.Second, "the ban on the other instance", func() bool { return other.Until(client(31), time.Now().UnixNano()) != 0 })
}

// TestRedisBansSyncUnderTraffic: 100,000 bans in the store, an instance
// catching up every second (ten times as often as it does), and bot
// traffic deciding Crawl-delay at 50 requests a second for 12 s with a
// 50 ms timeout: no call times out (a full read of the list every 10 s,
// as before, cost 13.9 ms of Redis time each and made calls time out).
func TestRedisBansSyncUnderTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("12 s of traffic")
	}
	srv := testredis.Start(t)
	obs := &storeCounts{}
	r := newRedis(t, RedisConfig{URL: srv.URL, Timeout: 50 * time.Millisecond, Observer: obs, banSync: time.Second})
	fill := newRedis(t, RedisConfig{URL: srv.URL})
	b0 := fill.NewBans(2 * DefaultMaxBans)
	fillBans(t, fill, b0, 100000)
	b0.Close()
	bans := r.NewBans(2 * DefaultMaxBans)
	defer bans.Close()
	waitFor(t, 10*time.Second, "the full read at start", func() bool { return bans.mirror.Len() == 100000 })
	okBefore := obs.get(StoreOK)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < 600; i++ {
		<-tick.C
		r.Allow(bg, Key{Site: "https://load.example", Group: "*", Client: Client{byte(i), byte(i >> 8)}}, time.Now().UnixNano(), time.Second)
		if i%100 == 0 {
			bans.Ban(bg, client(200+i), time.Now().UnixNano(), time.Minute, time.Hour, "trap") // changes to catch up on
		}
	}
	t.Logf("600 decisions at 50/s beside 100,000 bans: %v", obs.m)
	if n := obs.get(StoreTimeout) + obs.get(StoreError); n != 0 {
		t.Fatalf("%d calls failed or timed out: %v", n, obs.m)
	}
	if obs.get(StoreOK)-okBefore != 600 {
		t.Fatalf("calls %v", obs.m)
	}
}

// fillBans writes n bans in force (an hour) straight into the store of r,
// in the layout of b's scripts.
func fillBans(t *testing.T, r *Redis, b *RedisBans, n int) {
	t.Helper()
	untilMs := time.Now().Add(time.Hour).UnixMilli()
	pipe := r.client.Pipeline()
	for i := range n {
		c := ClientOf(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), 32, 64)
		h := hex.EncodeToString(c[:])
		pipe.Set(bg, b.banKey(h), fmt.Sprintf("%d 1 trap", untilMs), time.Hour)
		pipe.ZAdd(bg, b.setKey(), redis.Z{Score: float64(untilMs), Member: h})
		if i%5000 == 4999 || i == n-1 {
			if _, err := pipe.Exec(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
}
