package guard

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/sites"
)

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// site returns a handler serving robots and "ok" elsewhere.
func site(robots string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, robots) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	return mux
}

func mustNew(t testing.TB, cfg Config, opts ...Option) *Engine {
	t.Helper()
	e, err := New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// burst is how many requests of one bot the default tolerance
// (limit.DefaultTolerance, 2.5 delays) admits at once: the next one within
// the Crawl-delay is throttled.
var burst = 1 + int(math.Floor(limit.DefaultTolerance))

// spend sends burst requests from addr at once and fails unless each is
// answered 200: the bot's next request within the delay gets 429.
func spend(t testing.TB, h http.Handler, ua, target, addr string) {
	t.Helper()
	for i := range burst {
		if rec := doIP(h, ua, target, addr); rec.Code != 200 {
			t.Fatalf("request %d of the burst of %d: %d", i+1, burst, rec.Code)
		}
	}
}

// browserHeaders sets on h the headers that real browsers send on every
// request, beside their User-Agent: Accept-Language (every browser, any
// scheme), and the Sec-CH-UA client hint and Sec-Fetch-Mode fetch metadata
// that Chrome (and Firefox, fetch metadata) send to secure origins. Without
// them a request whose User-Agent names a browser is an undeclared bot
// (issue 47, classify.UndeclaredRules), judged by the "*" group; the tests'
// simulated browsers send them so that they stay browsers. A bot is a bot
// whatever it sends, and over http nothing reads the last two, so they are
// set on every request.
func browserHeaders(h http.Header) {
	h.Set("Accept-Language", "en-US,en;q=0.9")
	h.Set("Sec-CH-UA", `"Chromium";v="137", "Not/A)Brand";v="24"`)
	h.Set("Sec-Fetch-Mode", "navigate")
}

// browserHeaderLines are browserHeaders as raw header lines, for the
// tests that write a request by hand.
const browserHeaderLines = "Accept-Language: en-US,en;q=0.9\r\n" +
	"Sec-CH-UA: \"Chromium\";v=\"137\", \"Not/A)Brand\";v=\"24\"\r\n" +
	"Sec-Fetch-Mode: navigate\r\n"

func do(h http.Handler, ua, target string) *httptest.ResponseRecorder {
	return doIP(h, ua, target, "192.0.2.1:1234")
}

func doIP(h http.Handler, ua, target, remote string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "http://example.com"+target, nil)
	req.RequestURI = target
	req.RemoteAddr = remote
	if ua != "" {
		req.Header.Set("User-Agent", ua)
	}
	browserHeaders(req.Header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

type countObserver struct {
	mu sync.Mutex
	m  map[string]int
}

func (o *countObserver) inc(k string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]int{}
	}
	o.m[k]++
}

func (o *countObserver) get(k string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[k]
}

func (o *countObserver) ObserveDecision(v Verdict) {
	o.inc(v.ActionName() + "/" + v.Reason.String())
	if v.Verification != identity.None {
		o.inc("verification/" + v.Verification.String())
	}
}

func (o *countObserver) ObserveFetch(site string, out sites.Outcome) { o.inc("fetch/" + out.String()) }

// serve is the net/http front in its plainest form, for the engine's own
// tests (package nethttp is the front, tested there): decide, then pass
// the request on or answer as Engine.Respond does.
func serve(e *Engine, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := e.DecideHTTP(r, nil, r.RemoteAddr, next); v.Enforced() {
			e.Respond(w, r, v)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// exampleSite is the name of the site of the tests' requests (Host
// example.com, plain http).
const exampleSite = "http://example.com"
