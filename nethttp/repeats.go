package nethttp

import (
	"hash/maphash"
	"net/http"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/robotsguard/robotsguard/guard"
)

// One request, one count. nginx runs auth_request again for each internal
// redirect of a client request (an index file, try_files, error_page), so
// one request can ask the service several times: each question would spend
// a Crawl-delay unit and record a row. The nginx recipe sends its
// $request_id, which stays the same across internal redirects, as
// X-Robots-Guard-Request-Id; a bot's verdict is kept under it, and a later
// question with the same id about the same request (target, method, host,
// client address and User-Agent) gets the same answer without being judged
// again. The header is read only with CheckConfig.RequestIDs and in
// nginx's contract, where the recipe writes it over any value a client
// sent.
const (
	hdrRequestID = "X-Robots-Guard-Request-Id"

	// maxRepeats bounds the verdicts kept (least recently used out
	// first): the bots' requests nginx holds within repeatFor.
	maxRepeats = 4096
	// repeatFor is how long a verdict answers a repeated question: an
	// internal redirect follows its request within milliseconds, an
	// error_page after an upstream's answer within its timeouts.
	repeatFor = time.Minute
	// maxRepeatUses is how many questions one verdict answers, nginx's
	// own bound on a request's internal redirects
	// (NGX_HTTP_MAX_URI_CHANGES).
	maxRepeatUses = 10
	// maxRequestID bounds the ids kept (nginx's are 32 hex digits).
	maxRequestID = 64
)

// repeats keeps the bots' verdicts by request id. Its mutex makes a
// look-up and its count one step (the cache's own lock covers one call).
type repeats struct {
	seed  maphash.Seed
	mu    sync.Mutex
	cache *lru.Cache[string, repeat]
	now   func() time.Time
}

// repeat is a kept verdict: the hash of the request it judged, when, and
// how many questions it answered.
type repeat struct {
	request uint64
	at      time.Time
	uses    int
	v       guard.Verdict
}

func newRepeats() *repeats {
	c, _ := lru.New[string, repeat](maxRepeats)
	return &repeats{seed: maphash.MakeSeed(), cache: c, now: time.Now}
}

// requestID returns the question's request id, "" when it has none or one
// that is too long to be nginx's.
func requestID(h http.Header) string {
	v := h[hdrRequestID]
	if len(v) != 1 || len(v[0]) == 0 || len(v[0]) > maxRequestID {
		return ""
	}
	return v[0]
}

// hash identifies the request a question is about, so that an id names
// one request only.
func (rp *repeats) hash(f *guard.Forwarded, clientIP, userAgent string) uint64 {
	var h maphash.Hash
	h.SetSeed(rp.seed)
	for _, s := range [...]string{f.Method, f.Scheme, f.Host, f.Target, clientIP, userAgent} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// lookup returns the verdict kept for id about the same request, and
// counts the use; ok is false when there is none (another request under
// the id, too old, or used up).
func (rp *repeats) lookup(id string, request uint64) (guard.Verdict, bool) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	r, ok := rp.cache.Get(id)
	if !ok || r.request != request || rp.now().Sub(r.at) > repeatFor || r.uses >= maxRepeatUses {
		return guard.Verdict{}, false
	}
	r.uses++
	rp.cache.Add(id, r)
	return r.v, true
}

// keep keeps a bot's verdict under id (a browser's costs nothing to judge
// again, and keeping it would allocate on the browser path).
func (rp *repeats) keep(id string, request uint64, v guard.Verdict) {
	if v.Bot {
		rp.mu.Lock()
		rp.cache.Add(id, repeat{request: request, at: rp.now(), uses: 1, v: v})
		rp.mu.Unlock()
	}
}
