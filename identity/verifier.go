package identity

import (
	"context"
	"fmt"
	"math/bits"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"
)

// Config configures a Verifier. Zero fields take their defaults.
type Config struct {
	// Operators is the registry (see Builtin and Merge). It is checked
	// with Validate.
	Operators []Operator
	// Refresh is how often each feed is fetched again. Default 24h; at
	// least MinRefresh (1h). A shorter Cache-Control max-age of a feed
	// shortens it, down to MinRefresh.
	Refresh time.Duration
	// FeedTimeout bounds one feed fetch. Default 30s.
	FeedTimeout time.Duration
	// DNSTimeout bounds one reverse-DNS check, PTR and forward lookups
	// together. Default 2s.
	DNSTimeout time.Duration
	// Resolver is the host:port of the DNS server to ask; empty means the
	// system's resolver.
	Resolver string
	// CacheSize bounds the cached reverse-DNS answers. Default 10000.
	CacheSize int
	// Storage keeps the last good copy of each feed across restarts;
	// nil keeps none.
	Storage Storage
	// HTTPClient fetches the feeds. Default: a client with its own
	// transport.
	HTTPClient *http.Client
	// Logger receives feed warnings and state changes. Default: none.
	Logger *zap.Logger
	// Observer receives feed and lookup outcomes, for metrics.
	Observer Observer
	// Now tells the time, for tests. Default time.Now.
	Now func() time.Time
	// WebBotAuth turns on Web Bot Auth signature verification; nil: off.
	WebBotAuth *WebBotAuthConfig
	// OnDemand starts fetching a feed the first time a claim from a
	// globally reachable address needs it, not in New: a server that no
	// crawler claim reaches sends nothing. Stored copies (Storage) are
	// still read at start, in the background.
	OnDemand bool
	// FeedWait bounds how long a claim waits for an operator's feed that
	// has never loaded (no stored copy, its first fetch under way), so
	// that a crawler is not judged unverifiable, by "*" too, in the
	// moments after a start while its feed arrives. A feed whose first
	// fetch has ended, loaded or failed, is never waited for. Default
	// DefaultFeedWait; negative: never wait.
	FeedWait time.Duration
	// NoBackground leaves feeds unloaded until RefreshFeeds is called (for
	// one-shot tools such as "caddy robots test"): no goroutine, no
	// storage.
	NoBackground bool
}

// Observer receives the outcomes of feed fetches and reverse-DNS checks.
// Its labels are bounded: the configured feed sources and a fixed set of
// outcomes.
type Observer interface {
	// ObserveFeed is called once per feed fetch or restore, with one of
	// FeedOK, FeedNotModified, FeedStored, FeedError and FeedInvalid.
	ObserveFeed(source, outcome string)
	// ObserveLookup is called once per reverse-DNS check, with one of
	// LookupVerified, LookupFailed and LookupError, and its duration, or
	// with LookupBusy or LookupSkipped (no lookup made) and 0.
	ObserveLookup(outcome string, d time.Duration)
}

// CheckResolver checks the form of Config.Resolver: host:port.
func CheckResolver(s string) error {
	if s == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("%q: give host:port, e.g. 127.0.0.1:53", s)
	}
	return nil
}

// Verifier checks crawler claims against the registry. It is safe for
// concurrent use. Close stops its background feed refresh.
type Verifier struct {
	cfg        Config
	ops        []*opEntry
	feeds      []*feed
	resolver   resolver
	dnsCache   *lru.Cache[dnsKey, dnsAnswer]
	callsMu    sync.Mutex
	calls      map[dnsKey]*dnsCall
	slots      chan struct{}
	goodSlots  chan struct{}                          // the lane of good networks
	prefixes   *lru.Cache[netip.Prefix, *prefixState] // guarded by callsMu for its values
	good       *lru.Cache[netip.Prefix, int64]        // networks where an address verified: until when (unix ns)
	log        *zap.Logger
	now        func() time.Time
	minRefresh time.Duration
	retryFirst time.Duration

	signers *signers // nil: Web Bot Auth off

	startMu sync.Mutex // guards closed and the start of feed goroutines
	closed  bool

	// OneShot: lookups failed in a row, and whether v gave up; the
	// lookups' context (v.ctx's, ended when v gives up) and the bound on
	// the lookups pending per network.
	dnsGiveUpAfter int64
	dnsGiveUpWarn  func(string)
	dnsFailStreak  atomic.Int64
	dnsGaveUp      atomic.Bool
	dnsCtx         context.Context
	dnsStop        context.CancelFunc
	perPrefix      int

	idxMu  sync.Mutex // serialises index rebuilds
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New checks cfg and returns a Verifier whose feeds start loading in the
// background: first the stored copies (Config.Storage), then the network or
// the files. Until an operator's feeds load, its claims are checked by
// reverse DNS when it publishes domains, and are Unverifiable otherwise.
func New(cfg Config) (*Verifier, error) {
	if err := Validate(cfg.Operators); err != nil {
		return nil, err
	}
	switch {
	case cfg.Refresh == 0:
		cfg.Refresh = DefaultRefresh
	case cfg.Refresh < MinRefresh:
		return nil, fmt.Errorf("refresh: must be at least %s, got %s", MinRefresh, cfg.Refresh)
	}
	if cfg.FeedTimeout <= 0 {
		cfg.FeedTimeout = DefaultFeedTimeout
	}
	if cfg.FeedWait == 0 {
		cfg.FeedWait = DefaultFeedWait
	}
	if cfg.DNSTimeout < 0 {
		return nil, fmt.Errorf("dns_timeout: must be positive, got %s", cfg.DNSTimeout)
	}
	if cfg.DNSTimeout == 0 {
		cfg.DNSTimeout = DefaultDNSTimeout
	}
	if cfg.CacheSize < 0 {
		return nil, fmt.Errorf("dns_cache_size: must be positive, got %d", cfg.CacheSize)
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if err := CheckResolver(cfg.Resolver); err != nil {
		return nil, fmt.Errorf("resolver: %w", err)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{
		cfg:        cfg,
		ops:        compile(cfg.Operators),
		slots:      make(chan struct{}, MaxConcurrentLookups),
		goodSlots:  make(chan struct{}, GoodSlots),
		calls:      make(map[dnsKey]*dnsCall),
		log:        cfg.Logger,
		now:        cfg.Now,
		minRefresh: MinRefresh,
		retryFirst: retryFirst,
	}
	v.resolver = newResolver(cfg.Resolver)
	v.dnsCache, _ = lru.New[dnsKey, dnsAnswer](cfg.CacheSize)
	v.prefixes, _ = lru.New[netip.Prefix, *prefixState](MaxTrackedPrefixes)
	v.good, _ = lru.New[netip.Prefix, int64](MaxTrackedPrefixes)
	if cfg.WebBotAuth != nil {
		s, err := newSigners(*cfg.WebBotAuth, v.ops, cfg.Logger, cfg.Now)
		if err != nil {
			return nil, err
		}
		v.signers = s
	}
	bySrc := make(map[string]*feed)
	for _, op := range v.ops {
		for _, src := range op.IPRanges {
			f := bySrc[src]
			if f == nil {
				f = &feed{src: src, settled: make(chan struct{})}
				bySrc[src] = f
				v.feeds = append(v.feeds, f)
			}
			f.ops = append(f.ops, op)
			op.feeds = append(op.feeds, f)
		}
	}
	v.ctx, v.cancel = context.WithCancel(context.Background())
	v.dnsCtx, v.dnsStop, v.perPrefix = v.ctx, v.cancel, MaxPendingPerPrefix
	if cfg.NoBackground {
		v.cfg.Storage = nil
		return v, nil
	}
	if !cfg.OnDemand {
		for _, f := range v.feeds {
			v.start(f)
		}
		return v, nil
	}
	// On demand, the stored copies are read now (no network): a restart
	// verifies a crawler's first request from the copy it had.
	v.wg.Add(1)
	go v.restoreAll()
	return v, nil
}

// Close stops the background refresh and waits for it. The Verifier stays
// usable with the data it has.
func (v *Verifier) Close() error {
	v.startMu.Lock()
	v.closed = true
	v.startMu.Unlock()
	v.cancel()
	v.wg.Wait()
	v.resolver.close()
	v.cfg.HTTPClient.CloseIdleConnections()
	return nil
}

// Operators returns the registry in force.
func (v *Verifier) Operators() []Operator {
	out := make([]Operator, len(v.ops))
	for i, op := range v.ops {
		out[i] = op.Operator
	}
	return out
}

// Claims returns the operators whose tokens ua names (a whole User-Agent
// header or a bare product token), by the rules robots.txt groups are
// chosen by, so that every header that can earn an operator's group in a
// robots.txt that names the token claims that operator. It costs one scan
// of the header per operator: cache it with the header.
func (v *Verifier) Claims(ua string) Claims {
	var c Claims
	for _, op := range v.ops {
		if op.names(ua) {
			c |= op.bit
		}
	}
	return c
}

// Verify checks the claims of a request coming from addr. A header that
// names several operators is as good as its worst claim; the first Spoofed
// one ends the check, and all the reverse-DNS checks of one call together
// wait at most Config.DNSTimeout. addr may be the zero Addr when the
// client's address is unknown (the claim is then Unverifiable). With a warm
// cache it does not allocate.
func (v *Verifier) Verify(ctx context.Context, claims Claims, addr netip.Addr) Result {
	return v.verify(ctx, "", claims, addr, Result{})
}

// SignsFor reports whether the operator has a Web Bot Auth signature agent
// (in the registry or pinned), so that a request claiming it could have
// been signed.
func (v *Verifier) SignsFor(operator string) bool {
	if v.signers == nil {
		return false
	}
	for _, op := range v.signers.opOf {
		if op.Name == operator {
			return true
		}
	}
	return false
}

// WebBotAuth reports whether signature verification is on, so that front
// ends collect the signature headers only then.
func (v *Verifier) WebBotAuth() bool { return v.signers != nil }

// VerifyRequest is Verify for a request that may carry a Web Bot Auth
// signature (sr may be nil): a valid signature by an operator's signature
// agent verifies that operator's claim whatever the address, and verifies
// the operator even when the User-Agent names none. It also returns why a
// signature that is present did not verify (nil when none is present or it
// verified).
//
// ua is the request's User-Agent header, whose claims (Claims) are
// checked: an address in a feed entry that lists services (JAFAR) of the
// operator verifies the claim only when ua names one of them. Verify,
// which has no header, does not look at services.
func (v *Verifier) VerifyRequest(ctx context.Context, ua string, claims Claims, addr netip.Addr, sr *SignedRequest) (Result, error) {
	signed, err := v.verifySignature(ctx, sr, addr, nil)
	if claims == 0 {
		return signed, err
	}
	return v.verify(ctx, ua, claims, addr, signed), err
}

// verifySignature checks sr's signature, sent from client; the zero Result
// when there is none, or it does not verify (err says why).
func (v *Verifier) verifySignature(ctx context.Context, sr *SignedRequest, client netip.Addr, how *[]string) (Result, error) {
	if v.signers == nil || sr == nil || len(sr.Header["Signature-Input"]) == 0 {
		return Result{}, nil
	}
	var sig Signature
	err := v.screenKeyIDs(sr.Header.Values("Signature-Input"))
	if err == nil {
		sig, err = VerifySignature(sr, v.now(), v.signers.cfg.MaxWindow, v.signers.lookup(ctx))
	}
	if err == nil && sig.Nonce != "" && v.signers.nonceReplayed(sig.Agent, sig.KeyID, sig.Nonce, sig.Expires, v.now(), client.Unmap().WithZone(""), how == nil) {
		err = ErrReplayed // Explain (how) looks without recording
	}
	if err != nil {
		if how != nil {
			*how = append(*how, "signature: not verified: "+err.Error())
		}
		return Result{}, err
	}
	origin := sig.Agent // agentRef's normal form
	if origin == "" {
		// No Signature-Agent: the key was pinned; find its agent.
		for o, m := range v.signers.pinned {
			if _, ok := m[sig.KeyID]; ok {
				origin = o
			}
		}
	}
	res := Result{Verdict: Verified, Method: MethodSignature}
	op, ok := v.signers.opOf[origin]
	if !ok && isKeySetURI(origin) {
		// A JWK Set of a discovered URI: its keys are served by its
		// origin, which may stand for an operator.
		o, _ := NormalizeOrigin(origin)
		op, ok = v.signers.opOf[o]
	}
	if ok {
		res.Operator, res.key = op.Name, op.key
	} else {
		res.Operator, res.AgentOnly = "agent "+origin, true
	}
	if how != nil {
		*how = append(*how, fmt.Sprintf("signature: verified: key %s of %s (%s), signed %s, valid until %s", sig.KeyID, origin, sig.Alg,
			sig.Created.UTC().Format(time.RFC3339), sig.Expires.UTC().Format(time.RFC3339)))
	}
	return res, nil
}

// screenKeyIDs refuses, before any parsing, signature headers whose key
// ids no trusted agent has (the pinned keys and the loaded directories of
// the registry's agents; nothing is refused while one of those is not
// loaded, or with discovery): a scan of at most MaxSignatureHeader bytes
// for keyid="..." wherever it occurs (a parameter never escapes it), so
// that garbage signatures cost about what the request's other headers do.
// A key id the scan cannot read plainly (an escape) is left to
// VerifySignature.
func (v *Verifier) screenKeyIDs(inputs []string) error {
	n := 0
	for _, in := range inputs {
		n += len(in)
	}
	if n > MaxSignatureHeader {
		return nil // VerifySignature refuses it unread, and says so
	}
	ks := v.signers.currentScreen()
	if ks == nil {
		return nil
	}
	const param = `keyid="`
	seen := false
	for _, in := range inputs {
		for {
			i := strings.Index(in, param)
			if i < 0 {
				break
			}
			in = in[i+len(param):]
			j := strings.IndexByte(in, '"')
			if j < 0 || strings.IndexByte(in[:j], '\\') >= 0 {
				return nil
			}
			seen = true
			if _, ok := ks.ids[in[:j]]; ok {
				return nil
			}
			in = in[j+1:]
		}
	}
	if !seen {
		return nil // no key id to screen: VerifySignature says why
	}
	return ErrUnknownKey
}

func (v *Verifier) verify(ctx context.Context, ua string, claims Claims, addr netip.Addr, signed Result) Result {
	if claims == 0 {
		return signed
	}
	addr = addr.Unmap().WithZone("")
	b := budget{parent: ctx, d: v.cfg.DNSTimeout}
	var res Result
	// The claimed operators only, by their bits (op.bit is 1<<i): a
	// request claims one or two of the registry's dozens.
	for c := uint64(claims); c != 0; c &= c - 1 {
		i := bits.TrailingZeros64(c)
		if i >= len(v.ops) {
			break
		}
		op := v.ops[i]
		var r Result
		if signed.Verdict == Verified && signed.Operator == op.Name {
			r = signed
		} else {
			r = v.verifyOne(&b, op, i, addr, ua, nil)
		}
		if res.Verdict == None || r.Verdict.severity() > res.Verdict.severity() {
			res = r
		}
		if res.Verdict == Spoofed {
			break
		}
	}
	b.release() // not deferred: this is the request path
	return res
}

// verifyOne checks one operator's claim made by the header ua ("" when
// unknown: services are not looked at); how collects the explanation when
// non-nil.
func (v *Verifier) verifyOne(b *budget, op *opEntry, i int, addr netip.Addr, ua string, how *[]string) Result {
	res := Result{Operator: op.Name, key: op.key}
	say := func(s string) {
		if how != nil {
			*how = append(*how, s)
		}
	}
	if !addr.IsValid() {
		say("the client address is unknown")
		res.Verdict = Unverifiable
		return res
	}
	global := GloballyReachable(addr)
	if !global && !op.custom {
		if how != nil {
			say(addr.String() + " is not globally reachable (loopback, private, link-local or documentation): no crawler sends from it, so nothing is looked up; behind a proxy, is the proxy's address trusted?")
		}
		res.Verdict, res.NotGlobal = Unverifiable, true
		return res
	}
	if v.cfg.OnDemand && !v.cfg.NoBackground {
		for _, f := range op.feeds {
			if !f.started.Load() {
				v.start(f)
			}
		}
	}
	v.awaitFeeds(b, op)
	x := op.index.Load()
	if x.contains(addr) {
		return v.inRanges(res, x, op, addr, ua, how)
	}
	if !global {
		// A configured operator's own feeds may list private ranges (a
		// crawler inside the network); nothing else is asked of them.
		if how != nil {
			say(addr.String() + " is not globally reachable and in none of " + op.Name + "'s loaded IP-range feeds: no reverse DNS is looked up for it")
		}
		res.Verdict, res.NotGlobal = Unverifiable, true
		return res
	}
	loaded := 0 // of the same snapshot as the prefixes looked in
	if x != nil {
		loaded = x.loaded
	}
	allLoaded := len(op.feeds) > 0 && loaded == len(op.feeds)
	if how != nil && len(op.feeds) > 0 {
		say(fmt.Sprintf("%s is in none of %s's %d loaded IP-range feeds (of %d)", addr, op.Name, loaded, len(op.feeds)))
	}
	if len(op.domains) > 0 {
		a := v.rdns(b, op, i, addr)
		if how != nil {
			say("reverse DNS: " + a.detail)
		}
		res.Verdict = a.verdict
		switch {
		case a.verdict == Verified:
			res.Method = MethodRDNS
		case a.verdict == Spoofed && a.noPTR && len(op.feeds) > 0 && !allLoaded:
			// No reverse name at all, which the address's owner (or a
			// resolver that answers NXDOMAIN for everything) controls,
			// and the published ranges that would tell are not loaded
			// yet: nothing is proven either way.
			say("no reverse name, and not every feed of " + op.Name + " has loaded: unverifiable, not spoofed")
			res.Verdict, res.DNSFailed = Unverifiable, true
		case a.verdict == Unverifiable && allLoaded:
			// The feeds are a published check, loaded, and the address
			// fails them; a reverse zone that does not answer (which
			// its owner controls) proves nothing.
			say("every feed of " + op.Name + " is loaded and the address is in none: spoofed")
			res.Verdict = Spoofed
		case a.verdict == Unverifiable:
			res.DNSFailed = true
		}
		return res
	}
	switch {
	case len(op.feeds) == 0:
		say(op.Name + " publishes no IP ranges and no reverse-DNS domains")
		res.Verdict = Unverifiable
	case !allLoaded:
		say("not every feed of " + op.Name + " has loaded")
		res.Verdict = Unverifiable
	default:
		res.Verdict = Spoofed
	}
	return res
}

// inRanges is the verdict on op's claim for an address in its IP-range
// feeds: verified, unless every feed that holds the address has, as its
// most specific entry for it, one that lists services of op which the
// header ua does not name (JAFAR: the publisher says these addresses are
// its other crawlers').
func (v *Verifier) inRanges(res Result, x *rangeIndex, op *opEntry, addr netip.Addr, ua string, how *[]string) Result {
	if x.svcs == nil && how == nil {
		res.Verdict, res.Method = Verified, MethodIPRange // no entry lists services
		return res
	}
	ok, e, src := x.servicesVerdict(addr, ua)
	if !ok {
		if how != nil {
			*how = append(*how, fmt.Sprintf("%s is in %s, which %s's feed %s lists for %s only; the header names none of them: spoofed",
				addr, e.prefix, op.Name, src, strings.Join(e.services, ", ")))
		}
		res.Verdict = Spoofed
		return res
	}
	res.Verdict, res.Method = Verified, MethodIPRange
	switch {
	case how == nil:
	case e != nil && e.narrows():
		*how = append(*how, fmt.Sprintf("%s is in %s of the feed %s, listed for %s, which the header names", addr, e.prefix, src, strings.Join(e.services, ", ")))
	case e != nil:
		*how = append(*how, fmt.Sprintf("%s is in %s of the feed %s", addr, e.prefix, src))
	default:
		*how = append(*how, v.whichFeed(op, addr, x))
	}
	return res
}

// OperatorNames returns the names of the operators in c, in registry order.
func (v *Verifier) OperatorNames(c Claims) []string {
	var out []string
	for _, op := range v.ops {
		if c&op.bit != 0 {
			out = append(out, op.Name)
		}
	}
	return out
}

// String describes the registry briefly, for logs.
func (v *Verifier) String() string {
	names := make([]string, len(v.ops))
	for i, op := range v.ops {
		names[i] = op.Name
	}
	return fmt.Sprintf("%d operators (%s), %d feeds", len(v.ops), strings.Join(names, ", "), len(v.feeds))
}
