package limit

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// syncEvery is how often an instance reads the changes of the ban list it
// has not seen (a message it missed: a reconnection), from the list's
// change log: the work is the changes', not the list's.
const syncEvery = 10 * time.Second

// logBatch is how many changes one read of the change log takes.
const logBatch = 1000

// banScript bans a client on the server, atomically, with the server's
// clock (ms): the ban key holds "until strikes reason" and expires with
// the ban; the strikes key outlives it by StrikeMemory; the sorted set
// lists the bans by end time; a message tells the other instances.
// The set holds at most max bans: ended ones leave it first, and when it
// holds max live bans the new one is refused (returns {0, 0, 2}) rather
// than lifting another, so a flood of addresses cannot undo a ban.
// The change is added to the change log (a stream) that instances catch
// up from. KEYS: ban, strikes, set, log (one hash tag: one slot of a
// cluster). ARGV: base ms, max ms, memory ms, client hex, reason, channel,
// max bans kept, "1" to announce through sharded pub/sub (a cluster), how
// long the log keeps a change (ms), (tests) now ms.
// Returns {until ms,
// strikes, 1} for a new ban, {until ms, strikes, 0} for one in force, or
// {0, 0, 2} when the list is full.
var banScript = redis.NewScript(`
local now
if ARGV[10] then
  now = tonumber(ARGV[10])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local cur = redis.call('GET', KEYS[1])
if cur then
  local u, s = string.match(cur, '^(%d+) (%d+)')
  if tonumber(u) > now then
    return {tonumber(u), tonumber(s), 0}
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[7]) and not redis.call('ZSCORE', KEYS[3], ARGV[4]) then
  return {0, 0, 2}
end
local strikes = redis.call('INCR', KEYS[2])
local len = tonumber(ARGV[1])
local mx = tonumber(ARGV[2])
for i = 2, strikes do
  if len >= mx then break end
  len = len * 2
end
if len > mx then len = mx end
local untilMs = now + len
redis.call('PEXPIRE', KEYS[2], len + tonumber(ARGV[3]))
redis.call('SET', KEYS[1], string.format('%d %d %s', untilMs, strikes, ARGV[5]), 'PX', len)
redis.call('ZADD', KEYS[3], untilMs, ARGV[4])
local msg = string.format('ban %s %d %d %s', ARGV[4], untilMs, strikes, ARGV[5])
redis.call('XADD', KEYS[4], 'MINID', '~', tostring(now - tonumber(ARGV[9])), '*', 'm', msg)
local publish = 'PUBLISH'
if ARGV[8] == '1' then publish = 'SPUBLISH' end
redis.call(publish, ARGV[6], msg)
return {untilMs, strikes, 1}
`)

// shareScript writes a ban that an instance decided alone while the store
// was down, once it is back: unless the store holds a ban of the client
// that ends later, it sets the ban (with its remaining time), lists it,
// logs and announces it, as banScript does, and, like banScript, refuses
// it when the list holds max live bans. KEYS: ban, set, log. ARGV: client
// hex, "until strikes reason", until ms, channel, max bans kept, sharded
// "1", how long the log keeps a change (ms), now ms. Returns 1 when written, 0 when not needed, 2
// when the list is full.
var shareScript = redis.NewScript(`
local now = tonumber(ARGV[8])
local untilMs = tonumber(ARGV[3])
if untilMs <= now then return 0 end
local cur = redis.call('GET', KEYS[1])
if cur then
  local u = string.match(cur, '^(%d+)')
  if tonumber(u) >= untilMs then return 0 end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return 2
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', untilMs - now)
redis.call('ZADD', KEYS[2], untilMs, ARGV[1])
local msg = 'ban ' .. ARGV[1] .. ' ' .. ARGV[2]
redis.call('XADD', KEYS[3], 'MINID', '~', tostring(now - tonumber(ARGV[7])), '*', 'm', msg)
local publish = 'PUBLISH'
if ARGV[6] == '1' then publish = 'SPUBLISH' end
redis.call(publish, ARGV[4], msg)
return 1
`)

// RedisBans keeps bans in the store of a Redis limiter, shared by every
// instance that uses it: a trap hit on one instance bans on all. Each
// instance mirrors the list in memory (a published message per ban and
// unban, and every 10 s the changes it has not read, from a change log
// that keeps ten minutes of them: the whole list only at start and after
// a longer outage), so checking a request costs no round trip and keeping
// up costs the changes, not the list. When the store cannot be reached, a
// ban is kept locally and a warning is logged; it is written to the store
// when the store answers again. Ban ends are in the server's clock:
// instances whose clocks are off by seconds end bans seconds early or
// late.
type RedisBans struct {
	r      *Redis
	max    int
	mirror *MemoryBans
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewBans returns the shared ban list of r's store, mirroring at most max
// bans locally, and starts following the other instances' bans. Close
// stops that.
func (r *Redis) NewBans(max int) *RedisBans {
	if max <= 0 {
		max = DefaultMaxBans
	}
	b := &RedisBans{r: r, max: max, mirror: NewMemoryBans(max)}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.wg.Add(1)
	go b.follow(ctx)
	return b
}

// The ban list's keys and channel share one hash tag, {bans}, so that the
// ban script, which touches three of them, runs on one slot of a cluster
// (and its sharded announcement goes out on that slot's shard).
func (b *RedisBans) banKey(hexc string) string { return b.r.cfg.KeyPrefix + "{bans}:ban:" + hexc }
func (b *RedisBans) strikesKey(hexc string) string {
	return b.r.cfg.KeyPrefix + "{bans}:strikes:" + hexc
}
func (b *RedisBans) setKey() string  { return b.r.cfg.KeyPrefix + "{bans}" }
func (b *RedisBans) logKey() string  { return b.r.cfg.KeyPrefix + "{bans}:log" }
func (b *RedisBans) channel() string { return b.r.cfg.KeyPrefix + "{bans}" }

// sharded reports whether bans are announced through sharded pub/sub.
func (b *RedisBans) sharded() string {
	if b.r.cfg.Cluster {
		return "1"
	}
	return "0"
}

// publish announces a message to the other instances.
func (b *RedisBans) publish(ctx context.Context, msg string) error {
	if b.r.cfg.Cluster {
		return b.r.client.SPublish(ctx, b.channel(), msg).Err()
	}
	return b.r.client.Publish(ctx, b.channel(), msg).Err()
}

// Close stops following the other instances' bans.
func (b *RedisBans) Close() error {
	b.cancel()
	b.wg.Wait()
	return nil
}

// Ban implements Bans.
func (b *RedisBans) Ban(ctx context.Context, client Client, now int64, base, max time.Duration, reason string) BanInfo {
	hexc := hex.EncodeToString(client[:])
	reason = strings.ReplaceAll(reason, "\n", " ")
	args := []any{base.Milliseconds(), max.Milliseconds(), StrikeMemory.Milliseconds(), hexc, reason, b.channel(), b.max, b.sharded(), b.logKeepMs()}
	if b.r.cfg.clientClock {
		args = append(args, now/int64(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(ctx, b.r.cfg.Timeout)
	res, err := banScript.Run(ctx, b.r.client, []string{b.banKey(hexc), b.strikesKey(hexc), b.setKey(), b.logKey()}, args...).Int64Slice()
	cancel()
	if err == nil && len(res) != 3 {
		err = fmt.Errorf("unexpected script answer %v", res)
	}
	if err != nil {
		in := b.mirror.banLocal(client, now, base, max, reason)
		b.r.log.Warn("robots_guard: store: ban not shared yet (kept on this instance, written to the store when it answers again)",
			zap.String("store", b.r.redacted), zap.Error(redactErr(err, b.r.cfg.URL)))
		return in
	}
	if res[2] == 2 {
		return BanInfo{Client: client, Reason: reason, Dropped: true}
	}
	in := BanInfo{Client: client, Until: res[0] * int64(time.Millisecond), Strikes: int(res[1]), Reason: reason}
	if !b.mirror.set(in) {
		b.r.log.Warn("robots_guard: store: ban shared but not held on this instance: its list is full of live bans (bans decided here while the store was down)",
			zap.String("store", b.r.redacted), zap.Int("max_bans", b.max))
	}
	return in
}

// Until implements Bans, from the local mirror.
func (b *RedisBans) Until(client Client, now int64) int64 { return b.mirror.Until(client, now) }

// Active reports whether the mirror holds any entry (see MemoryBans.Active).
func (b *RedisBans) Active() bool { return b.mirror.Active() }

// Unban implements Bans, on every instance.
func (b *RedisBans) Unban(ctx context.Context, client Client) bool {
	hexc := hex.EncodeToString(client[:])
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := b.r.client.Del(ctx, b.banKey(hexc), b.strikesKey(hexc)).Result()
	if err == nil {
		b.r.client.ZRem(ctx, b.setKey(), hexc)
		minID := strconv.FormatInt(time.Now().Add(-logKeep).UnixMilli(), 10)
		b.r.client.XAdd(ctx, &redis.XAddArgs{Stream: b.logKey(), MinID: minID, Approx: true, Values: []any{"m", "unban " + hexc}})
		b.publish(ctx, "unban "+hexc)
		if !b.r.cfg.Cluster {
			// The key layout of earlier versions too, so that a lifted
			// ban is not carried over again when an instance starts.
			p := b.r.cfg.KeyPrefix
			b.r.client.Del(ctx, p+"ban:"+hexc, p+"strikes:"+hexc)
			b.r.client.ZRem(ctx, p+"bans", hexc)
		}
	} else {
		b.r.log.Warn("robots_guard: store: unban not shared (lifted on this instance only)",
			zap.String("store", b.r.redacted), zap.Error(redactErr(err, b.r.cfg.URL)))
	}
	local := b.mirror.Unban(ctx, client)
	return n > 0 || local
}

// List implements Bans: the bans in the store, with their strikes and
// reasons (the local mirror when the store cannot be reached).
func (b *RedisBans) List(ctx context.Context, now int64) []BanInfo {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := b.load(ctx, now)
	if err != nil {
		return b.mirror.List(ctx, now)
	}
	return list
}

// load reads the bans in force from the store.
func (b *RedisBans) load(ctx context.Context, now int64) ([]BanInfo, error) {
	// Longest first, at most max: the bans a full mirror keeps.
	members, err := b.r.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: b.setKey(), ByScore: true, Rev: true,
		Start: "+inf", Stop: strconv.FormatInt(now/int64(time.Millisecond), 10), Count: int64(b.max)}).Result()
	if err != nil {
		return nil, err
	}
	if len(members) == 0 {
		return nil, nil
	}
	keys := make([]string, len(members))
	for i, m := range members {
		keys[i] = b.banKey(m)
	}
	vals, err := b.r.client.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	var out []BanInfo
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue
		}
		in, ok := parseBan(members[i], s)
		if ok && in.Until > now {
			out = append(out, in)
		}
	}
	return out, nil
}

// parseBan reads a ban key's value "until strikes reason".
func parseBan(hexc, v string) (BanInfo, bool) {
	var in BanInfo
	c, err := hex.DecodeString(hexc)
	if err != nil || len(c) != 16 {
		return in, false
	}
	copy(in.Client[:], c)
	parts := strings.SplitN(v, " ", 3)
	if len(parts) < 2 {
		return in, false
	}
	u, err1 := strconv.ParseInt(parts[0], 10, 64)
	s, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return in, false
	}
	in.Until, in.Strikes = u*int64(time.Millisecond), s
	if len(parts) == 3 {
		in.Reason = parts[2]
	}
	return in, true
}

// follow mirrors the other instances' bans until ctx ends: their messages
// as they come, and every syncEvery the changes of the change log it has
// not read (sync).
func (b *RedisBans) follow(ctx context.Context) {
	defer b.wg.Done()
	var sub *redis.PubSub
	if b.r.cfg.Cluster {
		sub = b.r.client.SSubscribe(ctx, b.channel())
	} else {
		sub = b.r.client.Subscribe(ctx, b.channel())
	}
	defer sub.Close()
	msgs := sub.Channel()
	every := syncEvery
	if b.r.cfg.banSync > 0 {
		every = b.r.cfg.banSync
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var s logSync
	sync := func() {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		b.sync(c, &s)
	}
	// The bans in force first: the import of an earlier layout's (its
	// round trips, repeated at each start while its keys live) must not
	// leave the mirror empty meanwhile.
	sync()
	if !b.r.cfg.Cluster {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		n := b.importOld(c, time.Now().UnixNano())
		cancel()
		if n > 0 {
			s = logSync{}
			sync()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			sync()
		case m, ok := <-msgs:
			if !ok {
				return
			}
			b.apply(ctx, m.Payload)
		}
	}
}

// apply applies one change ("ban <hex> <until> <strikes> <reason>",
// "unban <hex>") to the mirror.
func (b *RedisBans) apply(ctx context.Context, msg string) {
	f := strings.SplitN(msg, " ", 3)
	switch {
	case len(f) == 3 && f[0] == "ban":
		if in, ok := parseBan(f[1], f[2]); ok {
			b.mirror.set(in)
		}
	case len(f) == 2 && f[0] == "unban":
		if c, err := hex.DecodeString(f[1]); err == nil && len(c) == 16 {
			b.mirror.Unban(ctx, Client(c))
		}
	}
}

// logKeep is how long the change log keeps a change (Redis trims older
// ones as it adds new ones, in whole nodes, so a little longer). An
// instance whose last read of the log is older than logKeep less a
// minute (the store was out of its reach that long) reads the whole list
// again instead.
const logKeep = 10 * time.Minute

// logSync is how far an instance has read the change log.
type logSync struct {
	last string    // the ID of the last change read; "" before the first read
	at   time.Time // when the log was last read
}

// sync brings the mirror up to date: the changes after the last one read,
// or, at start and after a long outage, the whole list (the log's last
// ID first, so that no change after the read is missed). Then it writes
// the bans this instance kept alone while the store was down (shareLocal).
func (b *RedisBans) sync(ctx context.Context, s *logSync) {
	now := time.Now()
	if s.last == "" || now.Sub(s.at) > logKeep-time.Minute {
		last, err := b.lastChange(ctx)
		if err != nil {
			return
		}
		list, err := b.load(ctx, now.UnixNano())
		if err != nil {
			return
		}
		b.mirror.replace(list, now.UnixNano())
		s.last, s.at = last, now
	} else if !b.catchUp(ctx, s) {
		return
	}
	s.at = now
	b.shareLocal(ctx, now.UnixNano())
}

// lastChange returns the ID of the change log's last change, "0-0" when
// it holds none.
func (b *RedisBans) lastChange(ctx context.Context) (string, error) {
	xs, err := b.r.client.XRevRangeN(ctx, b.logKey(), "+", "-", 1).Result()
	if err != nil {
		return "", err
	}
	if len(xs) == 0 {
		return "0-0", nil
	}
	return xs[0].ID, nil
}

// catchUp applies the changes after s.last, logBatch at a time, and
// reports whether it read them all.
func (b *RedisBans) catchUp(ctx context.Context, s *logSync) bool {
	for {
		xs, err := b.r.client.XRangeN(ctx, b.logKey(), "("+s.last, "+", logBatch).Result()
		if err != nil {
			return false
		}
		for _, x := range xs {
			if m, ok := x.Values["m"].(string); ok {
				b.apply(ctx, m)
			}
			s.last = x.ID
		}
		if len(xs) < logBatch {
			return true
		}
	}
}

// shareLocal writes to the store the bans this instance decided alone
// while the store was down and that are still in force (shareScript), so
// that the other instances hold them too.
func (b *RedisBans) shareLocal(ctx context.Context, now int64) {
	for _, in := range b.mirror.locals(now) {
		hexc := hex.EncodeToString(in.Client[:])
		val := fmt.Sprintf("%d %d %s", in.Until/int64(time.Millisecond), in.Strikes, in.Reason)
		res, err := shareScript.Run(ctx, b.r.client, []string{b.banKey(hexc), b.setKey(), b.logKey()},
			hexc, val, in.Until/int64(time.Millisecond), b.channel(), b.max, b.sharded(), b.logKeepMs(), now/int64(time.Millisecond)).Int64()
		if err != nil {
			return // still down: next time
		}
		b.mirror.shared(in.Client)
		if res == 2 {
			b.r.log.Warn("robots_guard: store: a ban kept on this instance while the store was down could not be shared: the shared list is full of live bans",
				zap.String("store", b.r.redacted), zap.Int("max_bans", b.max))
		} else if res == 1 {
			b.r.log.Info("robots_guard: store: a ban kept on this instance while the store was down is shared now",
				zap.String("store", b.r.redacted), zap.String("client", hexc))
		}
	}
}

// logKeepMs is logKeep in milliseconds, the scripts' unit.
func (b *RedisBans) logKeepMs() int64 { return logKeep.Milliseconds() }

// importOld carries the bans in force of the key layout before hash tags
// (<prefix>bans, <prefix>ban:<client>, <prefix>strikes:<client>, written
// by versions before Redis Cluster support) over to the current one, at
// most max live bans in all, keeping their ends and strikes; a ban the
// current layout already holds is left as it is. The old keys are left to
// expire, for instances of the old version still running (Unban removes
// them too, so that a lifted ban is not carried over again). Each instance
// does it once, at start, after its first read of the bans in force, on a
// single server (a cluster never held the old layout: its ban script
// spanned slots). It returns how many bans it carried over.
func (b *RedisBans) importOld(ctx context.Context, now int64) (imported int) {
	p := b.r.cfg.KeyPrefix
	members, err := b.r.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: p + "bans", ByScore: true, Rev: true,
		Start: "+inf", Stop: strconv.FormatInt(now/int64(time.Millisecond), 10), Count: int64(b.max)}).Result()
	if err != nil || len(members) == 0 {
		return 0
	}
	live, err := b.r.client.ZCount(ctx, b.setKey(), strconv.FormatInt(now/int64(time.Millisecond)+1, 10), "+inf").Result()
	if err != nil {
		return 0
	}
	n := 0
	for _, m := range members {
		if int(live)+n >= b.max {
			break // as the ban script does, no more than max live bans
		}
		v, err1 := b.r.client.Get(ctx, p+"ban:"+m).Result()
		ttl, err2 := b.r.client.PTTL(ctx, p+"ban:"+m).Result()
		in, ok := parseBan(m, v)
		if err1 != nil || err2 != nil || !ok || ttl <= 0 {
			continue
		}
		if set, err := b.r.client.SetNX(ctx, b.banKey(m), v, ttl).Result(); err != nil || !set {
			continue
		}
		b.r.client.ZAdd(ctx, b.setKey(), redis.Z{Score: float64(in.Until / int64(time.Millisecond)), Member: m})
		if st, err := b.r.client.Get(ctx, p+"strikes:"+m).Result(); err == nil {
			if sttl, err := b.r.client.PTTL(ctx, p+"strikes:"+m).Result(); err == nil && sttl > 0 {
				b.r.client.SetNX(ctx, b.strikesKey(m), st, sttl)
			}
		}
		n++
	}
	if n > 0 {
		b.r.log.Info("robots_guard: store: bans carried over from the key layout of earlier versions",
			zap.String("store", b.r.redacted), zap.Int("bans", n))
	}
	return n
}

var _ Bans = (*RedisBans)(nil)
