package limit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Defaults and values of RedisConfig.
const (
	DefaultKeyPrefix    = "robots_guard:"
	DefaultStoreTimeout = 50 * time.Millisecond
	MaxStoreTimeout     = 5 * time.Second
	// OnErrorAllow lets a request pass when its store call fails;
	// OnErrorDeny answers it 429 (Retry-After 1).
	OnErrorAllow = "allow"
	OnErrorDeny  = "deny"
	// backoffFirst is the first pause of store calls after failures; it
	// doubles up to backoffMax while the store stays down.
	backoffFirst = time.Second
	backoffMax   = 5 * time.Second
	// failuresToBackoff is the number of consecutive failed calls that
	// starts a pause (a timeout starts one at once).
	failuresToBackoff = 3
)

// Store call outcomes, as passed to StoreObserver.ObserveStoreCall.
const (
	StoreOK      = "ok"
	StoreError   = "error"
	StoreTimeout = "timeout"
	// StoreSkipped: no call was made, the store is paused after failures
	// and the local limiter decided.
	StoreSkipped = "skipped_backoff"
)

// gcraScript is GCRA on the server, atomically: the key holds the
// theoretical arrival time (TAT) in microseconds of the server's clock,
// and expires when the TAT passes (an absent key and a past TAT admit
// alike). ARGV: delay µs, tolerance µs, "1" to spend or "0" to peek, and
// (tests only) the time in µs, with which keys live a minute longer, since
// the server expires them by its own clock. It returns {1, 0} or
// {0, wait µs}.
var gcraScript = redis.NewScript(gcraSource)

const gcraSource = `
local now
if ARGV[4] then
  now = tonumber(ARGV[4])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local delay = tonumber(ARGV[1])
local tau = tonumber(ARGV[2])
local v = redis.call('GET', KEYS[1])
local tat = now
if v then
  tat = tonumber(v)
  if now < tat - tau then
    return tat - tau - now
  end
end
if ARGV[3] == '1' then
  local new = math.max(tat, now) + delay
  local ttl = math.max(1, math.ceil((new - now) / 1000))
  if ARGV[4] then
    -- A caller's clock (tests) runs apart from the server's, which
    -- expires keys: a key kept a minute longer decides the same (a past
    -- TAT admits as an absent key does).
    ttl = ttl + 60000
  end
  redis.call('SET', KEYS[1], string.format('%.0f', new), 'PX', ttl)
end
return 0
`

// Redis is a Limiter whose clocks live in a Redis-protocol server (Redis
// 6+, Valkey), shared by every instance that uses the same server and key
// prefix: a bot that spreads its requests over N instances gets one
// Crawl-delay budget, not N. Each decision is one round trip (EVALSHA of
// one script, with the server's clock, so instances with skewed clocks
// agree). A refusal is remembered locally until its wait ends, so a bot
// that ignores Retry-After costs no round trip. When calls fail, the
// request gets RedisConfig.OnError; after failuresToBackoff failures in a
// row (or a timeout) calls pause for 1 s, doubling up to 5 s, and a local
// in-memory limiter decides meanwhile; the first call after a pause that
// succeeds ends it.
type Redis struct {
	client   redis.UniversalClient
	cfg      RedisConfig
	redacted string
	local    *Memory
	denied   *lru.Cache[Key, int64] // local "deny until", in the caller's clock
	log      *zap.Logger
	sha      any       // gcraScript's SHA-1, boxed once
	calls    sync.Pool // *scriptCall

	epoch time.Time // the monotonic origin of pauses
	// breaker pauses calls after failures: of a single server, or of
	// the keys whose primary a cluster's node could not be asked for.
	breaker
	// nodes: a cluster's breakers, one per primary (its address), so
	// that a failed primary pauses the calls of its slots only.
	nodes sync.Map // string -> *breaker
}

// breaker counts the failed calls to one server and pauses calls to it
// after failuresToBackoff in a row (or a timeout).
type breaker struct {
	node        string       // a cluster primary's address; "" for the store
	pausedUntil atomic.Int64 // ns since Redis.epoch; 0: not paused
	failures    atomic.Int32 // consecutive failed calls
	mu          sync.Mutex   // pauses and their log lines
	backoff     time.Duration
	down        bool // a pause was logged; log the recovery
}

// breakerFor returns the breaker of the server that holds key: a
// cluster's primary of its slot, else the store's.
func (r *Redis) breakerFor(ctx context.Context, key string) *breaker {
	cc, ok := r.client.(*redis.ClusterClient)
	if !ok {
		return &r.breaker
	}
	node, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return &r.breaker
	}
	addr := node.Options().Addr
	if b, ok := r.nodes.Load(addr); ok {
		return b.(*breaker)
	}
	b, _ := r.nodes.LoadOrStore(addr, &breaker{node: addr, backoff: backoffFirst})
	return b.(*breaker)
}

// NewRedis returns a Redis limiter. It does not connect: the first
// decision does, and a server that is down is handled as described on
// Redis. An invalid URL or setting is an error that never contains the
// password.
func NewRedis(cfg RedisConfig) (*Redis, error) {
	var opt *redis.Options
	var copt *redis.ClusterOptions
	if cfg.Cluster {
		var err error
		if copt, err = checkClusterURL(cfg.URL); err != nil {
			return nil, err
		}
		if cfg.TLS != nil && copt.TLSConfig != nil {
			copt.TLSConfig = cfg.TLS
		}
	} else {
		if err := CheckRedisURL(cfg.URL); err != nil {
			return nil, err
		}
		opt, _ = redis.ParseURL(cfg.URL)
		if cfg.TLS != nil && opt.TLSConfig != nil {
			opt.TLSConfig = cfg.TLS
		}
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = DefaultKeyPrefix
	}
	if err := CheckKeyPrefix(cfg.KeyPrefix); err != nil {
		return nil, err
	}
	switch {
	case cfg.Timeout == 0:
		cfg.Timeout = DefaultStoreTimeout
	case cfg.Timeout < 0 || cfg.Timeout > MaxStoreTimeout:
		return nil, fmt.Errorf("timeout: must be between 0 and %s, got %s", MaxStoreTimeout, cfg.Timeout)
	}
	switch cfg.OnError {
	case "":
		cfg.OnError = OnErrorAllow
	case OnErrorAllow, OnErrorDeny:
	default:
		return nil, fmt.Errorf("on_store_error: must be %q or %q, got %q", OnErrorAllow, OnErrorDeny, cfg.OnError)
	}
	if cfg.LocalKeys <= 0 {
		cfg.LocalKeys = 100000
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	r := &Redis{client: newClient(opt, copt, cfg.Timeout),
		cfg:      cfg,
		redacted: RedactURL(cfg.URL),
		local:    NewMemory(cfg.LocalKeys, cfg.Tolerance),
		breaker:  breaker{backoff: backoffFirst},
		epoch:    time.Now(),
		log: cfg.Logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
			return zapcore.NewSamplerWithOptions(c, time.Second, 5, 100)
		})),
	}
	r.denied, _ = lru.New[Key, int64](cfg.LocalKeys)
	r.sha = gcraScript.Hash()
	r.calls.New = r.newScriptCall
	go func() {
		// Connect and load the script before the first decision needs
		// them, so that it costs one round trip; say so if the server is
		// not there.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Ping(ctx); err != nil && !errors.Is(err, redis.ErrClosed) {
			r.log.Warn("robots_guard: store not reachable at start; decisions use on_store_error, then the local limiter, until it is",
				zap.String("store", r.redacted), zap.Error(err))
		}
	}()
	return r, nil
}

// newClient makes the client of a server (opt) or of a cluster (copt):
// one attempt per call, bounded by the call's context, with no retries
// that would stretch a decision past its timeout. A cluster client still
// follows a MOVED or ASK answer (a slot that moved, a failover), within
// the same deadline.
func newClient(opt *redis.Options, copt *redis.ClusterOptions, timeout time.Duration) redis.UniversalClient {
	if copt != nil {
		copt.MaxRetries = -1
		copt.ContextTimeoutEnabled = true
		copt.PoolTimeout = timeout
		copt.DialTimeout = max(copt.DialTimeout, time.Second)
		copt.MinIdleConns = 1
		return redis.NewClusterClient(copt)
	}
	opt.MaxRetries = -1
	opt.ContextTimeoutEnabled = true
	opt.PoolTimeout = timeout
	opt.DialTimeout = max(opt.DialTimeout, time.Second)
	opt.MinIdleConns = 1
	return redis.NewClient(opt)
}

// Ping connects to the server and loads the script. NewRedis calls it in
// the background; tests and front ends that want to know call it too.
func (r *Redis) Ping(ctx context.Context) error {
	if err := gcraScript.Load(ctx, r.client).Err(); err != nil {
		return redactErr(err, r.cfg.URL)
	}
	return nil
}

// Close closes the connections to the server.
func (r *Redis) Close() error { return r.client.Close() }

// String describes the store without its password.
func (r *Redis) String() string {
	if r.cfg.Cluster {
		return "redis cluster " + r.redacted + " prefix " + r.cfg.KeyPrefix
	}
	return "redis " + r.redacted + " prefix " + r.cfg.KeyPrefix
}

// maxKeyPart is the longest site or group written into a key as it is;
// a longer one (a Host header or a group token nobody writes by hand) is
// written as '#' and 16 hex digits of its SHA-256 (a collision needs
// billions of long names, and costs two of them a shared budget), so that
// every key is at most len(KeyPrefix) + 4 + 2×65 + 3 + 32 bytes whatever the
// clients send, and a long name's key is no longer than a usual one's.
const maxKeyPart = 64

// appendKeyPart appends s, or its digest when it is longer than
// maxKeyPart.
func appendKeyPart(b []byte, s string) []byte {
	if len(s) <= maxKeyPart {
		return append(b, s...)
	}
	sum := sha256.Sum256([]byte(s))
	return hex.AppendEncode(append(b, '#'), sum[:8])
}

// key is the server's key of k.
func (r *Redis) key(k Key) string { return string(r.appendKey(nil, k)) }

// appendKey appends the server's key of k to b.
func (r *Redis) appendKey(b []byte, k Key) []byte {
	b = append(b, r.cfg.KeyPrefix...)
	b = append(b, "cd:{"...)
	b = appendKeyPart(b, k.Site)
	b = append(b, "} "...)
	b = appendKeyPart(b, k.Group)
	b = append(b, ' ')
	return hex.AppendEncode(b, k.Client[:])
}

// Allow implements Limiter. now is used for the local caches only; the
// decision uses the server's clock.
func (r *Redis) Allow(ctx context.Context, k Key, now int64, delay time.Duration) (bool, time.Duration) {
	if until, ok := r.denied.Peek(k); ok {
		if now < until {
			return false, time.Duration(until - now)
		}
		r.denied.Remove(k)
	}
	ok, wait, err := r.call(ctx, k, now, delay, true)
	if err != nil {
		return r.onError(ctx, k, now, delay, err, true)
	}
	if ok {
		r.local.Allow(ctx, k, now, delay) // keep the fallback's clocks warm
		return true, 0
	}
	r.denied.Add(k, now+int64(wait))
	return false, wait
}

// Peek implements Limiter; it spends nothing, on the server or locally.
func (r *Redis) Peek(ctx context.Context, k Key, now int64, delay time.Duration) (bool, time.Duration) {
	if until, ok := r.denied.Peek(k); ok && now < until {
		return false, time.Duration(until - now)
	}
	ok, wait, err := r.call(ctx, k, now, delay, false)
	if err != nil {
		return r.onError(ctx, k, now, delay, err, false)
	}
	return ok, wait
}

// callerEnded reports whether a failed call's end came from its caller:
// the caller's context is done, or its deadline, earlier than the store's
// (storeDeadline), has passed. Such a failure says nothing of the store.
func callerEnded(parent context.Context, storeDeadline time.Time) bool {
	if parent.Err() != nil {
		return true
	}
	d, ok := parent.Deadline()
	return ok && d.Before(storeDeadline) && !time.Now().Before(d)
}

// errPaused marks a decision made locally because calls are paused.
var errPaused = errors.New("store calls paused after failures")

// errGone marks a decision made locally because the caller's context ended
// (the client went away) before the store answered: it says nothing of
// the store, so it neither counts as a failure nor pauses calls.
var errGone = errors.New("the request ended before the store answered")

// call runs the script once, bounded by the store's timeout and by ctx.
func (r *Redis) call(parent context.Context, k Key, now int64, delay time.Duration, spend bool) (bool, time.Duration, error) {
	c := r.calls.Get().(*scriptCall)
	defer r.calls.Put(c)
	c.keyBuf = r.appendKey(c.keyBuf[:0], k)
	c.key = string(c.keyBuf)
	br := r.breakerFor(parent, c.key)
	if p := br.pausedUntil.Load(); p != 0 && r.mono() < p {
		r.observe(StoreSkipped, 0)
		return false, 0, errPaused
	}
	c.delay = max(1, int64(delay/time.Microsecond))
	c.tau = int64(Tolerance(delay, r.cfg.Tolerance) / time.Microsecond)
	c.spend = 0
	if spend {
		c.spend = 1
	}
	c.now = now / 1000
	args := c.args[:]
	if !r.cfg.clientClock {
		args = args[:len(args)-1]
	}
	start := time.Now()
	// Bounded by the store's timeout and by the request: a call whose
	// client went away ends at once.
	ctx, cancel := context.WithTimeout(parent, r.cfg.Timeout)
	defer cancel()
	cmd := redis.NewIntCmd(ctx, args...)
	// For a cluster's routing: the key's position, and a key step, which
	// spares the client a look-up of the command's metadata (under a
	// context.WithTimeout of its own) on every call; EVALSHA is routed by
	// its one key, and the step serves only commands split over shards.
	cmd.SetFirstKeyPos(3)
	cmd.SetStepCount(1)
	err := r.client.Process(ctx, cmd)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// The server lost its scripts (a restart, SCRIPT FLUSH): EVAL
		// loads it again. Rare, so not tuned.
		cmd = redis.NewIntCmd(ctx, append([]any{"eval", gcraSource}, args[2:]...)...)
		cmd.SetFirstKeyPos(3)
		cmd.SetStepCount(1)
		err = r.client.Process(ctx, cmd)
	}
	wait := cmd.Val()
	gone := err != nil && callerEnded(parent, start.Add(r.cfg.Timeout))
	took := time.Since(start)
	if gone {
		return false, 0, errGone
	}
	if err != nil {
		outcome := StoreError
		if isTimeout(err) {
			outcome = StoreTimeout
		}
		r.observe(outcome, took)
		r.failed(br, err, outcome == StoreTimeout)
		return false, 0, err
	}
	r.observe(StoreOK, took)
	r.succeeded(br)
	if wait <= 0 {
		return true, 0, nil
	}
	return false, time.Duration(wait) * time.Microsecond, nil
}

// scriptCall holds the arguments of one call of gcraScript. Calls take
// them from a pool and go-redis writes *int64 and *string arguments in
// place (and a cluster client reads the key's slot from the *string), so
// a decision boxes nothing into interfaces: what is left is the key's
// string, the call's context and go-redis's own (its command, and its
// health check of the connection it takes from its pool).
type scriptCall struct {
	args                   [8]any
	keyBuf                 []byte
	key                    string
	delay, tau, spend, now int64
}

func (r *Redis) newScriptCall() any {
	c := &scriptCall{}
	c.args = [8]any{"evalsha", r.sha, "1", &c.key, &c.delay, &c.tau, &c.spend, &c.now}
	return c
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// onError decides a request whose store call failed or was skipped: by
// the local clocks while calls are paused or when the caller went away,
// else as OnError says.
func (r *Redis) onError(ctx context.Context, k Key, now int64, delay time.Duration, err error, spend bool) (bool, time.Duration) {
	if errors.Is(err, errPaused) || errors.Is(err, errGone) {
		if spend {
			return r.local.Allow(ctx, k, now, delay)
		}
		return r.local.Peek(ctx, k, now, delay)
	}
	if spend {
		r.local.Allow(ctx, k, now, delay)
	}
	if r.cfg.OnError == OnErrorDeny {
		return false, time.Second
	}
	return true, 0
}

// failed counts a failed call to br's server and pauses calls to it after
// failuresToBackoff in a row, or after a timeout.
func (r *Redis) failed(br *breaker, err error, timeout bool) {
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		// A primary may have gone and its replica taken over: read the
		// cluster's slots again (in the background), so that the next
		// call goes to the node that serves them now.
		cc.ReloadState(context.Background())
	}
	n := br.failures.Add(1)
	br.mu.Lock()
	defer br.mu.Unlock()
	if n < failuresToBackoff && !timeout {
		if ce := r.log.Check(zapcore.WarnLevel, "robots_guard: store: call failed"); ce != nil {
			ce.Write(zap.String("store", r.redacted), zap.String("node", br.node), zap.String("on_store_error", r.cfg.OnError), zap.Error(redactErr(err, r.cfg.URL)))
		}
		return
	}
	if p := br.pausedUntil.Load(); p != 0 && r.mono() < p {
		return // another call paused already
	}
	br.pausedUntil.Store(r.mono() + int64(br.backoff))
	msg := "robots_guard: store unreachable: deciding Crawl-delay locally (per instance) until a call succeeds"
	if br.node != "" {
		msg = "robots_guard: store node unreachable: deciding Crawl-delay locally (per instance) for the keys of its slots until a call succeeds; the other nodes' keys are still shared"
	}
	r.log.Warn(msg, zap.String("store", r.redacted), zap.String("node", br.node), zap.Duration("pause", br.backoff), zap.Int32("failures", n),
		zap.Error(redactErr(err, r.cfg.URL)))
	br.down = true
	if !r.cfg.Cluster {
		// On a cluster the pause stays at 1 s: a failover takes a few
		// seconds, and the first call after it should find the new
		// primary, not wait out a longer pause.
		br.backoff = min(2*br.backoff, backoffMax)
	}
}

// mono is the monotonic time of pauses: a wall clock that steps back
// cannot stretch one.
func (r *Redis) mono() int64 { return max(1, int64(time.Since(r.epoch))) }

// succeeded ends a pause of br's server and resets its failure count.
func (r *Redis) succeeded(br *breaker) {
	if br.failures.Load() == 0 && br.pausedUntil.Load() == 0 {
		return // the common case: no lock
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	if br.down {
		r.log.Info("robots_guard: store reachable again: Crawl-delay is shared again", zap.String("store", r.redacted), zap.String("node", br.node))
	}
	br.failures.Store(0)
	br.backoff, br.down = backoffFirst, false
	br.pausedUntil.Store(0)
}

func (r *Redis) observe(outcome string, d time.Duration) {
	if r.cfg.Observer != nil {
		r.cfg.Observer.ObserveStoreCall(outcome, d)
	}
}

// Interface guard.
var _ Limiter = (*Redis)(nil)
