package limit

import (
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testredis"
)

func client(i int) [16]byte {
	return [16]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, byte(i >> 8), byte(i)}
}

func checkBans(t *testing.T, name string, b Bans, step func()) {
	t.Helper()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	h := int64(time.Hour)
	in := b.Ban(bg, client(1), now, time.Hour, 4*time.Hour, "trap /t/")
	step()
	if in.Strikes != 1 || in.Until != now+h {
		t.Fatalf("%s: first ban %+v", name, in)
	}
	if u := b.Until(client(1), now+h/2); u != now+h {
		t.Fatalf("%s: Until during the ban = %d", name, u)
	}
	if u := b.Until(client(2), now); u != 0 {
		t.Fatalf("%s: another client is banned", name)
	}
	// A second hit during the ban does not lengthen it.
	if again := b.Ban(bg, client(1), now+h/2, time.Hour, 4*time.Hour, "trap"); again.Until != now+h || again.Strikes != 1 {
		t.Fatalf("%s: hit during the ban: %+v", name, again)
	}
	// Repeat offenders: 2 h, 4 h, then the 4 h cap.
	for i, want := range []int64{2 * h, 4 * h, 4 * h} {
		at := now + int64(10+i*10)*h
		in := b.Ban(bg, client(1), at, time.Hour, 4*time.Hour, "trap")
		step()
		if in.Until-at != want || in.Strikes != i+2 {
			t.Fatalf("%s: ban %d: %v long, strikes %d", name, i+2, time.Duration(in.Until-at), in.Strikes)
		}
	}
	if l := b.List(bg, now+31*h); len(l) != 1 || l[0].Client != client(1) {
		t.Fatalf("%s: list %+v", name, l)
	}
	if !b.Unban(bg, client(1)) {
		t.Fatalf("%s: unban", name)
	}
	step()
	if u := b.Until(client(1), now+31*h); u != 0 {
		t.Fatalf("%s: still banned after unban", name)
	}
	// Unbanning forgets the strikes.
	if in := b.Ban(bg, client(1), now+32*h, time.Hour, 4*time.Hour, "trap"); in.Strikes != 1 {
		t.Fatalf("%s: strikes after unban %d", name, in.Strikes)
	}
}

func TestMemoryBans(t *testing.T) {
	checkBans(t, "memory", NewMemoryBans(100), func() {})
	// The cap holds under a flood; finished entries go first.
	b := NewMemoryBans(1000)
	now := time.Now().UnixNano()
	for i := range 100000 {
		b.Ban(bg, [16]byte{byte(i >> 16), byte(i >> 8), byte(i)}, now+int64(i), time.Hour, time.Hour, "flood")
	}
	if n := b.Len(); n > 1000 {
		t.Fatalf("%d entries, cap 1000", n)
	}
}

func TestRedisBans(t *testing.T) {
	srv := testredis.Start(t)
	ra := newRedis(t, RedisConfig{URL: srv.URL, clientClock: true})
	a := ra.NewBans(100)
	defer a.Close()
	checkBans(t, "redis", a, func() {})

	// Shared: a ban on one instance reaches the other within moments.
	rb := newRedis(t, RedisConfig{URL: srv.URL})
	b := rb.NewBans(100)
	defer b.Close()
	rc := newRedis(t, RedisConfig{URL: srv.URL})
	c := rc.NewBans(100)
	defer c.Close()
	time.Sleep(100 * time.Millisecond) // subscriptions in place
	now := time.Now().UnixNano()
	in := b.Ban(bg, client(7), now, time.Minute, time.Hour, "trap /t/")
	deadline := time.Now().Add(5 * time.Second)
	for c.Until(client(7), time.Now().UnixNano()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the ban did not reach the other instance within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if l := c.List(bg, time.Now().UnixNano()); len(l) != 1 || l[0].Reason != "trap /t/" || l[0].Strikes != 1 {
		t.Fatalf("list %+v (ban %+v)", l, in)
	}
	c.Unban(bg, client(7))
	for b.Until(client(7), time.Now().UnixNano()) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the unban did not reach the other instance")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A new instance loads the bans in force at start.
	b.Ban(bg, client(8), time.Now().UnixNano(), time.Minute, time.Hour, "trap")
	rd := newRedis(t, RedisConfig{URL: srv.URL})
	d := rd.NewBans(100)
	defer d.Close()
	for d.Until(client(8), time.Now().UnixNano()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a new instance did not load the bans in force")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Store down: a ban is kept on this instance.
	srv.Stop()
	if in := b.Ban(bg, client(9), time.Now().UnixNano(), time.Minute, time.Hour, "trap"); in.Until == 0 || b.Until(client(9), time.Now().UnixNano()) == 0 {
		t.Fatal("a ban while the store is down must hold locally")
	}
}

// A flood of other addresses cannot lift a ban: with the list full of live
// bans, new ones are refused (Dropped), and the entries that go to make
// room are the ones whose bans ended longest ago.
func TestMemoryBansFloodCannotLiftABan(t *testing.T) {
	b := NewMemoryBans(1000)
	now := time.Now().UnixNano()
	victim := ClientOf("203.0.113.9", 32, 64)
	old := ClientOf("198.51.100.1", 32, 64)
	b.Ban(bg, old, now-int64(3*time.Hour), time.Hour, time.Hour, "trap") // ended two hours ago: its strikes are remembered
	b.Ban(bg, victim, now, time.Hour, time.Hour, "trap")
	dropped := 0
	for i := range 100000 {
		c := Client{10: 0xff, 11: 0xff, 12: 10, 13: byte(i >> 16), 14: byte(i >> 8), 15: byte(i)}
		if in := b.Ban(bg, c, now+int64(i), time.Hour, time.Hour, "flood"); in.Dropped {
			if in.Until != 0 {
				t.Fatalf("a dropped ban has an end: %+v", in)
			}
			dropped++
		}
	}
	if b.Until(victim, now+1) == 0 {
		t.Fatal("100,000 other bans lifted the victim's ban")
	}
	if n := b.Len(); n != 1000 {
		t.Fatalf("%d entries, cap 1000", n)
	}
	if want := 100000 - 999; dropped != want {
		t.Fatalf("%d bans dropped, want %d (998 free places and the ended entry's)", dropped, want)
	}
	for _, in := range b.List(bg, now) {
		if in.Client == old {
			t.Fatal("an ended ban's strikes were kept while live bans were refused")
		}
	}
	// Once bans end, new ones find room again.
	if in := b.Ban(bg, ClientOf("192.0.2.77", 32, 64), now+int64(2*time.Hour), time.Hour, time.Hour, "later"); in.Dropped {
		t.Fatal("a ban after the others ended was refused")
	}
}

// BenchmarkMemoryBansFull measures a ban attempt on a full list of live
// bans (refused) and the ban check that every request makes meanwhile:
// both stay O(log n) and O(1), whatever the flood.
func BenchmarkMemoryBansFull(b *testing.B) {
	bans := NewMemoryBans(DefaultMaxBans)
	now := time.Now().UnixNano()
	for i := range DefaultMaxBans {
		bans.Ban(bg, Client{12: byte(i >> 24), 13: byte(i >> 16), 14: byte(i >> 8), 15: byte(i)}, now, time.Hour, time.Hour, "fill")
	}
	b.Run("ban", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			bans.Ban(bg, Client{0: 0x20, 13: byte(i >> 16), 14: byte(i >> 8), 15: byte(i)}, now+int64(i), time.Hour, time.Hour, "flood")
		}
	})
	b.Run("check", func(b *testing.B) {
		c := Client{15: 7}
		for b.Loop() {
			bans.Until(c, now)
		}
	})
}

// The shared list follows the same rule: a flood of other addresses is
// refused once max bans are live, and the victim's ban stays in the store.
func TestRedisBansFloodCannotLiftABan(t *testing.T) {
	srv := testredis.Start(t)
	r := newRedis(t, RedisConfig{URL: srv.URL, KeyPrefix: "flood:"})
	b := r.NewBans(50)
	defer b.Close()
	now := time.Now().UnixNano()
	victim := ClientOf("203.0.113.9", 32, 64)
	if in := b.Ban(bg, victim, now, time.Hour, time.Hour, "trap"); in.Dropped || in.Until == 0 {
		t.Fatalf("victim: %+v", in)
	}
	dropped := 0
	for i := range 200 {
		if b.Ban(bg, Client{10: 0xff, 11: 0xff, 12: 10, 14: byte(i >> 8), 15: byte(i)}, now, time.Hour, time.Hour, "flood").Dropped {
			dropped++
		}
	}
	if dropped != 151 {
		t.Fatalf("%d of 200 bans dropped, want 151 (50 places, one the victim's)", dropped)
	}
	other := newRedis(t, RedisConfig{URL: srv.URL, KeyPrefix: "flood:"}).NewBans(50)
	defer other.Close()
	found := false
	for _, in := range other.List(bg, time.Now().UnixNano()) {
		found = found || in.Client == victim
	}
	if !found {
		t.Fatal("the flood lifted the victim's ban in the store")
	}
}
