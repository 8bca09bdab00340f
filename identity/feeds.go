package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Refresh bounds of the IP-range feeds.
const (
	DefaultRefresh = 24 * time.Hour
	MinRefresh     = time.Hour
	// retryFirst is the wait after a failed fetch; it doubles at each
	// further failure, up to the refresh interval.
	retryFirst = 5 * time.Minute
	// DefaultFeedTimeout bounds one feed fetch.
	DefaultFeedTimeout = 30 * time.Second
	// DefaultFeedWait bounds the wait of a claim for a feed that has
	// never loaded (Config.FeedWait): a new site's wait for its
	// robots.txt (sites.Config.FetchTimeout) by default.
	DefaultFeedWait = 5 * time.Second
)

// Feed outcomes, as passed to Observer.ObserveFeed.
const (
	FeedOK          = "ok"           // fetched and parsed; in use
	FeedNotModified = "not_modified" // 304, or an unchanged file
	FeedStored      = "stored"       // the last good copy, read from Storage at start
	FeedError       = "error"        // network error, timeout or a status other than 200/304
	FeedInvalid     = "invalid"      // fetched but did not parse (or too large); the last good copy stays
)

// Storage keeps the last good copy of each feed, so that a restart without
// network still verifies. Its method set is that of certmagic.Storage's
// Load and Store, so Caddy's configured storage fits as it is.
type Storage interface {
	Load(ctx context.Context, key string) ([]byte, error)
	Store(ctx context.Context, key string, value []byte) error
}

// DirStorage is a Storage that keeps each value in a file of a directory,
// created when needed.
type DirStorage string

// Load reads the value of key.
func (d DirStorage) Load(_ context.Context, key string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), filepath.FromSlash(key)))
}

// Store writes the value of key atomically (a temporary file renamed).
func (d DirStorage) Store(_ context.Context, key string, value []byte) error {
	p := filepath.Join(string(d), filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// checkFeedSource checks the form of a feed: an http(s) URL with a host, or
// a file path.
func checkFeedSource(s string) error {
	if i := strings.Index(s, "://"); i >= 0 {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%q: give an http:// or https:// URL or a file path", s)
		}
	}
	return nil
}

func isURL(s string) bool { return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") }

// feed is one IP-range feed, shared by the operators that list it.
type feed struct {
	src  string
	ops  []*opEntry
	data atomic.Pointer[feedData]
	// started is set once a goroutine keeps the feed fresh (at New, or at
	// the first claim that needs it with Config.OnDemand).
	started atomic.Bool
	// settled is closed once a copy is in force or the first fetch has
	// ended (loaded or failed): claims wait for it (Config.FeedWait)
	// until then, never after.
	settled    chan struct{}
	settleOnce sync.Once

	mu sync.Mutex // one fetch at a time
	// emptyOnce: the last fetch found no prefixes while the copy in
	// force has some; a second such fetch in a row puts the empty feed in
	// force.
	emptyOnce bool
	etag      string
	lastMod   string
	size      int64
	mtime     time.Time
	lastErr   atomic.Pointer[string]
}

// feedData is a loaded copy of a feed.
type feedData struct {
	raw     []byte // as fetched, for storage (URL feeds only)
	doc     *FeedDocument
	created string
	fetched time.Time
	stored  bool // read from Storage, not fetched since the start
}

// storedFeed is the envelope a feed's last good copy is stored in.
type storedFeed struct {
	Source       string          `json:"source"`
	ETag         string          `json:"etag,omitempty"`
	LastModified string          `json:"last_modified,omitempty"`
	Fetched      time.Time       `json:"fetched"`
	Body         json.RawMessage `json:"body"`
}

func (f *feed) storageKey() string {
	sum := sha256.Sum256([]byte(f.src))
	return "robots_guard/feeds/" + hex.EncodeToString(sum[:12]) + ".json"
}

// settle closes f.settled, once.
func (f *feed) settle() { f.settleOnce.Do(func() { close(f.settled) }) }

// restore loads the feed's last good copy from storage, if any, and returns
// when it was fetched.
func (v *Verifier) restore(f *feed) time.Time {
	if v.cfg.Storage == nil || !isURL(f.src) {
		return time.Time{}
	}
	ctx, cancel := context.WithTimeout(v.ctx, v.cfg.FeedTimeout)
	defer cancel()
	b, err := v.cfg.Storage.Load(ctx, f.storageKey())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			v.log.Warn("robots_guard: verify: reading the stored copy of a feed", zap.String("feed", f.src), zap.Error(err))
		}
		return time.Time{}
	}
	var s storedFeed
	if err := json.Unmarshal(b, &s); err != nil || s.Source != f.src {
		v.log.Warn("robots_guard: verify: ignoring a damaged stored copy of a feed", zap.String("feed", f.src), zap.Error(err))
		return time.Time{}
	}
	doc, err := ParseFeed(s.Body)
	if err != nil {
		v.log.Warn("robots_guard: verify: ignoring a stored copy of a feed that does not parse", zap.String("feed", f.src), zap.Error(err))
		return time.Time{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.data.Load() != nil {
		return time.Time{} // a fetch (RefreshFeeds) came first: it is newer
	}
	f.etag, f.lastMod = s.ETag, s.LastModified
	v.install(f, &feedData{raw: s.Body, doc: doc, created: doc.CreationTime, fetched: s.Fetched, stored: true})
	v.observeFeed(f, FeedStored)
	v.log.Info("robots_guard: verify: feed restored from storage", zap.String("feed", f.src), zap.Int("prefixes", len(doc.Prefixes)), zap.Time("fetched", s.Fetched))
	return s.Fetched
}

// install puts a new copy of f in force and rebuilds the indexes of its
// operators. Each index counts the feeds whose copies it holds (rangeIndex.loaded):
// a claim is judged by an operator's feeds once all of them are loaded,
// and that count and the prefixes must be of one snapshot (a crawler
// found in none of the feeds of an older index would be spoofed).
func (v *Verifier) install(f *feed, d *feedData) {
	v.idxMu.Lock()
	defer v.idxMu.Unlock()
	for _, op := range f.ops {
		var docs []feedDoc
		for _, g := range op.feeds {
			gd := g.data.Load()
			if g == f {
				gd = d
			}
			if gd != nil {
				docs = append(docs, feedDoc{g.src, gd.doc})
			}
		}
		x := buildOpIndex(docs, op.names)
		x.loaded = len(docs)
		for _, s := range x.svcs {
			if s.src == f.src && !s.own {
				v.log.Warn("robots_guard: verify: an IP-range feed lists services, none of which is a product token of its operator: they narrow nothing, and each address of the feed verifies any of the operator's crawlers",
					zap.String("operator", op.Name), zap.String("feed", f.src), zap.Strings("tokens", op.Tokens))
			}
		}
		op.index.Store(x)
	}
	f.data.Store(d)
	f.settle() // after the indexes: a claim that waited finds them
}

// fetch fetches f once (a conditional request when a copy is known) and
// returns the time until the next fetch.
func (v *Verifier) fetch(ctx context.Context, f *feed) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, v.cfg.FeedTimeout)
	defer cancel()
	var (
		body   []byte
		maxAge time.Duration
		err    error
		etag   string
		lm     string
	)
	if isURL(f.src) {
		var status int
		body, status, etag, lm, maxAge, err = v.get(ctx, f)
		switch {
		case errors.Is(err, errFeedVersion):
			return 0, v.failed(f, FeedInvalid, err)
		case err != nil:
			return 0, v.failed(f, FeedError, err)
		case status == http.StatusNotModified && f.data.Load() != nil:
			v.notModified(ctx, f)
			return v.nextRefresh(maxAge), nil
		case status != http.StatusOK:
			return 0, v.failed(f, FeedError, fmt.Errorf("status %d", status))
		}
	} else {
		fi, serr := os.Stat(f.src)
		if serr != nil {
			return 0, v.failed(f, FeedError, serr)
		}
		if f.data.Load() != nil && fi.Size() == f.size && fi.ModTime().Equal(f.mtime) {
			v.notModified(ctx, f)
			return v.nextRefresh(0), nil
		}
		if fi.Size() > MaxFeedBytes {
			return 0, v.failed(f, FeedInvalid, fmt.Errorf("larger than %d bytes", MaxFeedBytes))
		}
		if body, err = os.ReadFile(f.src); err != nil {
			return 0, v.failed(f, FeedError, err)
		}
		f.size, f.mtime = fi.Size(), fi.ModTime()
	}
	doc, err := ParseFeed(body)
	if err != nil {
		f.size, f.mtime = 0, time.Time{}
		return 0, v.failed(f, FeedInvalid, err)
	}
	if old := f.data.Load(); len(doc.Prefixes) == 0 && old != nil && len(old.doc.Prefixes) > 0 && !f.emptyOnce {
		// JAFAR lets a publisher say it has no active ranges, but a
		// broken publisher says the same, and every claim would then be
		// spoofed until the next refresh: believed at the second fetch.
		f.emptyOnce, f.size, f.mtime = true, 0, time.Time{}
		return 0, v.failed(f, FeedInvalid, fmt.Errorf("lists no prefixes where the copy in force lists %d: kept until the next fetch says the same", len(old.doc.Prefixes)))
	}
	f.emptyOnce = false
	d := &feedData{doc: doc, created: doc.CreationTime, fetched: v.now()}
	if isURL(f.src) {
		d.raw = body
	}
	f.etag, f.lastMod = etag, lm
	v.store(ctx, f, d) // first, so that a copy in force is a stored one
	v.install(f, d)
	f.lastErr.Store(nil)
	v.observeFeed(f, FeedOK)
	v.log.Info("robots_guard: verify: feed loaded", zap.String("feed", f.src), zap.Int("prefixes", len(doc.Prefixes)), zap.String("creation_time", doc.CreationTime))
	if doc.Ignored > 0 || doc.UnreadServices > 0 {
		v.log.Warn("robots_guard: verify: feed entries ignored (each needs exactly one of ipv4Prefix and ipv6Prefix, a CIDR prefix of that family), or their services not read (at most 32 strings of 1 to 128 bytes; the prefix then stands for all of the operator's clients)",
			zap.String("feed", f.src), zap.Int("ignored", doc.Ignored), zap.Int("services_unread", doc.UnreadServices), zap.Int("read", len(doc.Prefixes)))
	}
	if len(doc.Prefixes) == 0 {
		v.log.Warn("robots_guard: verify: feed lists no prefixes (its publisher has no active ranges): no address verifies through it", zap.String("feed", f.src))
	}
	return v.nextRefresh(maxAge), nil
}

// store writes d, the copy in force, to Storage as the feed's last good
// copy.
func (v *Verifier) store(ctx context.Context, f *feed, d *feedData) {
	if v.cfg.Storage == nil || d.raw == nil {
		return
	}
	b, _ := json.Marshal(storedFeed{Source: f.src, ETag: f.etag, LastModified: f.lastMod, Fetched: d.fetched, Body: d.raw})
	if err := v.cfg.Storage.Store(ctx, f.storageKey(), b); err != nil {
		v.log.Warn("robots_guard: verify: storing the last good copy of a feed", zap.String("feed", f.src), zap.Error(err))
	}
}

// notModified records a 304 (or an unchanged file): the copy in force is
// current as of now, in storage too, so that a restart does not fetch it
// again before the next refresh is due.
func (v *Verifier) notModified(ctx context.Context, f *feed) {
	f.emptyOnce = false // the copy in force is current again
	if d := f.data.Load(); d != nil {
		nd := *d
		nd.stored, nd.fetched = false, v.now()
		f.data.Store(&nd)
		v.store(ctx, f, &nd)
	}
	f.lastErr.Store(nil)
	v.observeFeed(f, FeedNotModified)
}

// failed records a failed fetch: the last good copy stays in force.
func (v *Verifier) failed(f *feed, outcome string, err error) error {
	err = fmt.Errorf("robots_guard: verify: feed %s: %w", f.src, err)
	msg := err.Error()
	f.lastErr.Store(&msg)
	v.observeFeed(f, outcome)
	kept := "no copy yet: claims of its operators stay unverifiable until it loads"
	if f.data.Load() != nil {
		kept = "the last good copy stays in force"
	}
	v.log.Warn("robots_guard: verify: feed not updated", zap.String("feed", f.src), zap.String("outcome", outcome), zap.String("kept", kept), zap.Error(err))
	return err
}

// get sends a conditional GET for f's URL and reads at most MaxFeedBytes.
func (v *Verifier) get(ctx context.Context, f *feed) (body []byte, status int, etag, lastMod string, maxAge time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.src, nil)
	if err != nil {
		return nil, 0, "", "", 0, err
	}
	req.Header.Set("User-Agent", "robots_guard (feed refresh; +https://github.com/robotsguard/robotsguard)")
	req.Header.Set("Accept", jafarMediaType+", application/json;q=0.9")
	if f.data.Load() != nil {
		if f.etag != "" {
			req.Header.Set("If-None-Match", f.etag)
		}
		if f.lastMod != "" {
			req.Header.Set("If-Modified-Since", f.lastMod)
		}
	}
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, 0, "", "", 0, err
	}
	defer resp.Body.Close()
	maxAge = parseMaxAge(resp.Header.Get("Cache-Control"))
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, resp.StatusCode, "", "", maxAge, nil
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, MaxFeedBytes+1))
	if err != nil {
		return nil, 0, "", "", 0, err
	}
	if len(body) > MaxFeedBytes {
		return body, resp.StatusCode, "", "", maxAge, nil // ParseFeed rejects it
	}
	if err := checkFeedType(resp.Header.Get("Content-Type")); err != nil {
		return nil, 0, "", "", 0, err
	}
	return body, resp.StatusCode, resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), maxAge, nil
}

// jafarMediaType is the media type of a JAFAR feed
// (draft-illyes-webbotauth-jafar-00 §7), whose version parameter
// ("major.minor") says which revision of the format it follows.
const jafarMediaType = "application/jafar+json"

// jafarMajor is the major version of JAFAR this reader follows.
const jafarMajor = 1

// errFeedVersion marks a feed of a JAFAR version this reader cannot read.
var errFeedVersion = errors.New("a JAFAR version this reader does not read")

// checkFeedType checks a feed's Content-Type: a JAFAR feed of a major
// version above jafarMajor is not read (JAFAR §3.2: a consumer must not
// parse it, and may keep its last good copy); a higher minor version is
// read, its unknown members ignored. A version that does not parse is
// refused too. Any other media type (Google's feeds are application/json)
// is read as before.
func checkFeedType(ct string) error {
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case mt != jafarMediaType:
		return nil
	case err != nil: // the type is JAFAR's; its parameters do not parse
		return fmt.Errorf("%w: %s with parameters that do not parse: %q", errFeedVersion, jafarMediaType, ct)
	}
	ver, ok := params["version"]
	if !ok {
		return nil // the newest version this reader knows
	}
	majorText, minorText, dot := strings.Cut(ver, ".")
	major, err1 := strconv.Atoi(majorText)
	var err2 error
	if dot {
		_, err2 = strconv.Atoi(minorText)
	}
	switch {
	case err1 != nil || err2 != nil || major < 0:
		return fmt.Errorf("%w: %s version %q is not major.minor", errFeedVersion, jafarMediaType, ver)
	case major > jafarMajor:
		return fmt.Errorf("%w: %s version %s (this reader knows %d.x): not read", errFeedVersion, jafarMediaType, ver, jafarMajor)
	}
	return nil
}

// parseMaxAge returns the max-age of a Cache-Control value, 0 when absent.
func parseMaxAge(cc string) time.Duration {
	for part := range strings.SplitSeq(cc, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		if strings.EqualFold(k, "max-age") {
			if n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64); err == nil && n > 0 {
				return time.Duration(min(n, 365*24*3600)) * time.Second
			}
		}
	}
	return 0
}

// nextRefresh is the wait before the next fetch: the configured refresh,
// shortened to a Cache-Control max-age that is shorter, but never under
// MinRefresh.
func (v *Verifier) nextRefresh(maxAge time.Duration) time.Duration {
	d := v.cfg.Refresh
	if maxAge > 0 && maxAge < d {
		d = max(maxAge, v.minRefresh)
	}
	return d
}

// run keeps f fresh until the Verifier closes.
func (v *Verifier) run(f *feed) {
	defer v.wg.Done()
	wait := time.Duration(0)
	fetched := v.restore(f)
	if d := f.data.Load(); fetched.IsZero() && d != nil && d.stored {
		fetched = d.fetched // restored at start (Config.OnDemand)
	}
	if !fetched.IsZero() {
		wait = max(0, fetched.Add(v.cfg.Refresh).Sub(v.now()))
	}
	retry := v.retryFirst
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-v.ctx.Done():
			return
		case <-t.C:
		}
		next, err := v.fetch(v.ctx, f)
		f.settle() // the first fetch has ended, loaded or not
		switch {
		case err == nil:
			retry = v.retryFirst
		case f.data.Load() != nil:
			// A good copy is in force: no hurry, never more often than
			// hourly.
			next = min(v.minRefresh, v.cfg.Refresh)
		default:
			// Nothing loaded yet: the operator's claims are unverifiable
			// meanwhile, so retry sooner (5 min, doubling up to refresh).
			next = retry
			retry = min(retry*2, v.cfg.Refresh)
		}
		t.Reset(next)
	}
}

func (v *Verifier) observeFeed(f *feed, outcome string) {
	if v.cfg.Observer != nil {
		v.cfg.Observer.ObserveFeed(f.src, outcome)
	}
}

// awaitFeeds waits for the feeds of op that have never settled: started,
// with no copy in force, and their first fetch not ended. The waits of
// one Verify call share one bound, FeedWait in all (b.feedWait), whatever
// the number of operators a header claims, and never run past the
// request's context. It returns at once when every feed has settled, as
// it has in all but the first moments after a start.
func (v *Verifier) awaitFeeds(b *budget, op *opEntry) {
	for _, f := range op.feeds {
		select {
		case <-f.settled:
			continue
		default:
		}
		if !f.started.Load() || v.cfg.FeedWait < 0 {
			continue // nothing loads it (NoBackground), or never wait
		}
		done := b.feedWait(v.cfg.FeedWait)
		if done == nil {
			return // the call's bound has run out
		}
		select {
		case <-f.settled:
		case <-done:
			b.feedsOut = true
			return
		case <-b.parent.Done():
			b.feedsOut = true
			return
		}
	}
}

// start starts keeping f fresh in the background, once, unless the
// Verifier is closed.
func (v *Verifier) start(f *feed) {
	v.startMu.Lock()
	defer v.startMu.Unlock()
	if v.closed || f.started.Load() {
		return
	}
	f.started.Store(true)
	v.wg.Add(1)
	go v.run(f)
}

// restoreAll reads the stored copy of every feed, in the background of
// New with Config.OnDemand (no network: the fetches wait for a claim).
func (v *Verifier) restoreAll() {
	defer v.wg.Done()
	for _, f := range v.feeds {
		if v.ctx.Err() == nil {
			v.restore(f)
		}
	}
}
