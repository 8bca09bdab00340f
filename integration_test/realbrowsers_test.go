package integration_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// rbRobots is the robots.txt of TestUndeclaredRealBrowsers: every path but
// robots.txt (which is always served) is disallowed for "*", with a
// Crawl-delay of 30 s, so that the guard answers any request it judges a
// bot's 403 (or 429).
const rbRobots = "User-agent: *\nDisallow: /\nCrawl-delay: 30\n"

// The site's host names, which the browsers resolve to 127.0.0.1: names,
// not the loopback address, so that plain http is an insecure origin, as
// a site on the Internet is (browsers treat http://127.0.0.1 as
// potentially trustworthy and send it fetch metadata and client hints).
// rbAPIHost is another origin, for a cross-origin fetch and its CORS
// preflight.
const (
	rbSiteHost = "site.test"
	rbAPIHost  = "api.test"
)

// TestUndeclaredRealBrowsers: real headless Chromium (driven through the
// DevTools protocol) and Firefox ESR (its headless --screenshot mode,
// which loads a page with its sub-resources and scripts) load a page that
// makes every kind of request a page makes, over plain http and over https
// (Caddy's tls internal), from a site guarded by robots_guard with its
// default settings (undeclared bots judged) whose robots.txt disallows
// every path for "*". A request that the guard judged an undeclared bot
// would be refused (403); none is, counted server-side in Caddy's access
// log and, for Chromium, from the browser's own network events. The test
// logs a table of the kinds of request and the headers each carried, and
// the requests that lacked Accept-Language (or, over https, Sec-CH-UA or
// Sec-Fetch-Mode): the evidence for the rules of classify.UndeclaredRules.
// Chromium loads the page once more over https from the same site without
// the guard (a witness, whose statuses are not checked), so that the table
// also shows the headers of the requests that a refusal upstream of them
// (a worker's script, a service worker's) would keep from being made.
func TestUndeclaredRealBrowsers(t *testing.T) {
	began := time.Now()
	site := newRBSite(t)
	httpPort, httpsPort, witnessPort := freePort(t), freePort(t), freePort(t)
	logFile := filepath.Join(t.TempDir(), "access.log")
	block := func(scheme string, port int, tlsLine, guard string) string {
		return fmt.Sprintf(`%[1]s://%[3]s:%[2]d, %[1]s://%[4]s:%[2]d {
	bind 127.0.0.1
	%[5]s
	log {
		output file %[6]s
		format json
	}
	log_append robots_guard_action {http.robots_guard.action}
	log_append robots_guard_group {http.robots_guard.group}
	log_append robots_guard_rule {http.robots_guard.rule}
	%[8]s
	reverse_proxy %[7]s
}
`, scheme, port, rbSiteHost, rbAPIHost, tlsLine, filepath.ToSlash(logFile), strings.TrimPrefix(site.URL, "http://"), guard)
	}
	load(t, "skip_install_trust\n\tauto_https disable_redirects",
		block("http", httpPort, "", "robots_guard")+block("https", httpsPort, "tls internal", "robots_guard")+
			block("https", witnessPort, "tls internal", ""))
	alog := &rbAccessLog{path: logFile}

	// The certificates of tls internal are issued in the background: wait
	// for them (Firefox trusts them by their fingerprints).
	fingerprints := map[string]string{}
	for _, host := range []string{rbSiteHost, rbAPIHost} {
		fingerprints[host] = rbLeafFingerprint(t, fmt.Sprintf("127.0.0.1:%d", httpsPort), host)
	}
	httpBase := fmt.Sprintf("http://%s:%d", rbSiteHost, httpPort)
	httpsBase := fmt.Sprintf("https://%s:%d", rbSiteHost, httpsPort)
	witnessBase := fmt.Sprintf("https://%s:%d", rbSiteHost, witnessPort)

	// The guard judges undeclared bots on this site: a browser's header
	// without the headers its browser sends is refused, with them it
	// passes, and a crawler is refused. Without this the browsers' zero
	// refusals would prove nothing.
	const firefoxUA = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	al, chua, sfm := "Accept-Language", "Sec-CH-UA", "Sec-Fetch-Mode"
	for _, c := range []struct {
		base, ua string
		drop     []string
		status   int
		// missing is the header whose absence the refusal names.
		missing string
	}{
		{httpBase, browserUA, nil, 200, ""},
		{httpBase, browserUA, []string{al}, 403, al},
		{httpBase, browserUA, []string{chua, sfm}, 200, ""},
		{httpBase, "FooBot/1.0", nil, 403, ""},
		{httpsBase, browserUA, nil, 200, ""},
		{httpsBase, browserUA, []string{chua}, 403, chua},
		{httpsBase, firefoxUA, []string{chua, sfm}, 403, sfm},
		{httpsBase, firefoxUA, []string{chua}, 200, ""},
	} {
		a := browserGet(t, rbClient, c.base+"/api/get", c.ua, c.drop...)
		if a.status != c.status || c.missing != "" && !strings.Contains(a.body, "undeclared bot") || !strings.Contains(a.body, c.missing) {
			t.Fatalf("%s %s without %v: %d %q, want %d naming %q", c.base, c.ua, c.drop, a.status, a.body, c.status, c.missing)
		}
	}
	for end := time.Now().Add(5 * time.Second); alog.statusCount(0, 403) < 4; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("Caddy's access log shows %d refusals of the checks, want 4: it would not show the browsers' either", alog.statusCount(0, 403))
		}
	}

	var runs []*rbRun
	t.Run("chromium", func(t *testing.T) {
		chrome := chromium(t)
		ua := rbChromiumUA(t, chrome)
		for _, base := range []string{httpBase, httpsBase} {
			runs = append(runs, rbRunChromium(t, chrome, ua, base, true, alog))
		}
		runs = append(runs, rbRunChromium(t, chrome, ua, witnessBase, false, alog))
	})
	t.Run("firefox", func(t *testing.T) {
		ff := browserBinary(t, "firefox-esr", "firefox-esr")
		for _, base := range []string{httpBase, httpsBase} {
			runs = append(runs, rbRunFirefox(t, ff, base, fingerprints, site, alog))
		}
	})

	// Every request of every run: none refused, and the table.
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "browser\tscheme\tkind\tmethod\tn\tstatus\tproto\tAccept-Language\tSec-CH-UA\tSec-Fetch-Mode\tSec-Fetch-Dest\tRange\tguard")
	var missing []string
	for _, run := range runs {
		refused := 0
		for _, r := range run.rows() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", run.browser, run.scheme, r.kind, r.method, r.n,
				r.statuses, r.protos, r.has(al), r.has(chua), r.values(sfm), r.values("Sec-Fetch-Dest"), r.values("Range"), r.actions)
		}
		for _, e := range run.entries {
			if e.Status == http.StatusForbidden || e.Status == http.StatusTooManyRequests {
				refused++
				t.Errorf("%s over %s: %s %s (%s) answered %d (guard: %s %s %s)", run.browser, run.scheme, e.Request.Method, e.Request.URI,
					e.kind, e.Status, e.Action, e.Group, e.Rule)
			}
			https := strings.HasPrefix(run.scheme, "https")
			chrome := strings.Contains(e.header("User-Agent"), "Chrome/")
			for _, h := range []string{al, chua, sfm} {
				if e.header(h) == "" && (h == al || https && (h == sfm || chrome)) {
					missing = append(missing, fmt.Sprintf("%s %s: %s %s (%s) without %s, answered %d", run.browser, run.scheme,
						e.Request.Method, e.Request.URI, e.kind, h, e.Status))
				}
			}
		}
		for _, s := range run.browserSaw {
			if strings.HasSuffix(s, " 403") || strings.HasSuffix(s, " 429") {
				t.Errorf("%s over %s: the browser saw %s", run.browser, run.scheme, s)
			}
		}
		t.Logf("%s over %s: %d requests reached the site, %d refused (403 or 429); the browser saw %d responses; the page's own results: %s",
			run.browser, run.scheme, len(run.entries), refused, len(run.browserSaw), strings.Join(run.results, "; "))
		if len(run.absent) > 0 {
			// Chromium, driven, makes every kind but those a refusal
			// stopped (a refused worker script makes no fetch);
			// Firefox's screenshot mode makes no favicon request and no
			// navigation of the top-level page.
			if run.browser == "chromium" && refused == 0 {
				t.Errorf("%s over %s: the page made no %s: the run proves less than it says", run.browser, run.scheme, strings.Join(run.absent, ", no "))
			} else {
				t.Logf("%s over %s: kinds the browser did not request: %s", run.browser, run.scheme, strings.Join(run.absent, ", "))
			}
		}
	}
	tw.Flush()
	t.Logf("the requests of the real browsers, as Caddy logged them (\"a/b\": a of b requests carried the header; https* is the site without the guard):\n%s", table.String())
	if len(missing) == 0 {
		t.Logf("no request of a real browser lacked Accept-Language, nor (over https) Sec-Fetch-Mode, nor (Chromium over https) Sec-CH-UA")
	} else {
		t.Logf("requests of real browsers without a header a rule reads:\n\t%s", strings.Join(missing, "\n\t"))
	}
	t.Logf("took %s", time.Since(began).Round(100*time.Millisecond))
}

// rbChromiumUA is the User-Agent header of the headed Chromium of chrome's
// version: headless Chromium names itself HeadlessChrome, a crawler's
// token, while a person's Chromium sends this header.
func rbChromiumUA(t *testing.T, chrome string) string {
	out, err := exec.Command(chrome, "--version").Output()
	m := regexp.MustCompile(`(\d+)\.\d+\.\d+`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("%s --version: %q %v", chrome, out, err)
	}
	return fmt.Sprintf("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%s.0.0.0 Safari/537.36", m[1])
}

// rbClient reaches the test's host names on 127.0.0.1 (whatever a URL's
// host), and trusts the certificates of tls internal.
var rbClient = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
	DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(addr)
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
	},
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
}}

// rbLeafFingerprint returns the SHA-256 fingerprint of the certificate
// that addr presents for name, as Firefox writes it (colon-separated
// upper-case hex), waiting up to 20 s for Caddy to have issued it.
func rbLeafFingerprint(t *testing.T, addr, name string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{ServerName: name, InsecureSkipVerify: true})
		if err == nil {
			sum := sha256.Sum256(conn.ConnectionState().PeerCertificates[0].Raw)
			conn.Close()
			hexes := make([]string, len(sum))
			for i, b := range sum {
				hexes[i] = fmt.Sprintf("%02X", b)
			}
			return strings.Join(hexes, ":")
		}
		if time.Now().After(deadline) {
			t.Fatalf("no certificate for %s on %s after 20 s: %v", name, addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rbSite is the upstream behind the guard: the page that makes every kind
// of request, its sub-resources, a WebSocket endpoint, and the results that
// each page load posts at its end.
type rbSite struct {
	*httptest.Server
	mu      sync.Mutex
	gen     int
	done    map[int]chan struct{}
	results map[int][]string
}

func newRBSite(t *testing.T) *rbSite {
	s := &rbSite{done: map[int]chan struct{}{}, results: map[int][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// doneChan returns the channel that closes when page load g posts its
// results.
func (s *rbSite) doneChan(g int) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.done[g]
	if ch == nil {
		ch = make(chan struct{})
		s.done[g] = ch
	}
	return ch
}

// lastResults returns the results that the last page load posted, and
// the number of page loads.
func (s *rbSite) lastResults() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen, s.results[s.gen]
}

func (s *rbSite) serve(w http.ResponseWriter, r *http.Request) {
	origin := "http://"
	if r.Header.Get("X-Forwarded-Proto") == "https" {
		origin = "https://"
	}
	text := func(ctype, body string) {
		w.Header().Set("Content-Type", ctype)
		io.WriteString(w, body)
	}
	doc := func(body string) {
		// Chromium keeps a page that is no-store in its back/forward
		// cache unless a cookie changed since (as analytics scripts
		// change them): then history navigations fetch it again.
		w.Header().Set("Cache-Control", "no-store")
		text("text/html; charset=utf-8", "<!doctype html><html lang=en><head><meta charset=utf-8><title>"+r.URL.Path+"</title></head><body>"+
			body+"<script>document.cookie = 'visit=' + Date.now() + '; path=/';</script></body></html>")
	}
	switch p := r.URL.Path; p {
	case "/robots.txt":
		text("text/plain", rbRobots)
	case "/":
		s.mu.Lock()
		s.gen++
		g := s.gen
		s.mu.Unlock()
		w.Header().Set("Cache-Control", "no-store")
		api := origin + strings.Replace(r.Host, rbSiteHost, rbAPIHost, 1)
		text("text/html; charset=utf-8", strings.NewReplacer("{{API}}", api, "{{GEN}}", fmt.Sprint(g)).Replace(rbPage))
	case "/style.css":
		text("text/css", "@font-face { font-family: Kinds; src: url(/font.woff2) format(\"woff2\"); }\n"+
			"body { font-family: Kinds, sans-serif; }\n.bg { background-image: url(/bg.png); min-height: 20px; }\n")
	case "/font.woff2":
		text("font/woff2", "wOF2 not really a font")
	case "/bg.png", "/image.png", "/frame-image.png", "/favicon.ico":
		w.Header().Set("Content-Type", "image/png")
		w.Write(rbPNG)
	case "/script.js", "/module.js", "/preloaded.js", "/imported.js":
		text("text/javascript", "window['ran"+strings.TrimSuffix(p[1:], ".js")+"'] = true;\n")
	case "/prefetched.txt", "/worker-fetch.txt", "/shared-worker-fetch.txt", "/sw/passthrough.txt", "/sw-own-fetch.txt":
		text("text/plain", "text "+p)
	case "/frame.html":
		doc(`<p>frame</p><img src="/frame-image.png" alt="">`)
	case "/navframe.html":
		doc(`<form id="f" action="/search" method="get"><input name="q" value="frame"></form>`)
	case "/search":
		q := r.URL.Query().Get("q")
		doc(`<p>results for ` + html.EscapeString(q) + `</p><a id="next" href="/after?q=` + url.QueryEscape(q) + `">next</a>`)
	case "/after":
		doc(`<p>after</p>`)
	case "/hold":
		// An iframe that ends when the page posts its results, so that
		// the page's load event (which ends Firefox's screenshot mode)
		// waits for its scripts' requests.
		var g int
		fmt.Sscan(r.URL.Query().Get("g"), &g)
		select {
		case <-s.doneChan(g):
		case <-time.After(30 * time.Second):
		case <-r.Context().Done():
		}
		doc(`<p>held</p>`)
	case "/done":
		var g int
		fmt.Sscan(r.URL.Query().Get("g"), &g)
		var results []string
		json.NewDecoder(r.Body).Decode(&results)
		ch := s.doneChan(g)
		s.mu.Lock()
		if _, ok := s.results[g]; !ok {
			s.results[g] = results
			close(ch)
		}
		s.mu.Unlock()
		text("text/plain", "ok")
	case "/api/get", "/api/post", "/api/custom", "/api/xhr", "/api/beacon":
		io.Copy(io.Discard, r.Body)
		text("application/json", `{"ok":true}`)
	case "/cors/get":
		w.Header().Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Headers", "X-Custom")
			w.Header().Set("Access-Control-Allow-Methods", "GET")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		text("application/json", `{"ok":true}`)
	case "/worker.js":
		text("text/javascript", "fetch('/worker-fetch.txt').then(r => postMessage(r.status), e => postMessage('error ' + e));\n")
	case "/shared-worker.js":
		text("text/javascript", "onconnect = e => fetch('/shared-worker-fetch.txt').then(r => e.ports[0].postMessage(r.status), "+
			"err => e.ports[0].postMessage('error ' + err));\n")
	case "/sw.js":
		text("text/javascript", rbServiceWorker)
	case "/events":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: hello\n\n")
	case "/ws":
		rbWebSocket(w, r)
	case "/audio.wav", "/video.wav":
		w.Header().Set("Content-Type", "audio/wav")
		http.ServeContent(w, r, p, time.Unix(1700000000, 0), bytes.NewReader(rbWAV))
	default:
		http.NotFound(w, r)
	}
}

// rbWebSocket answers a WebSocket handshake (RFC 6455), sends one text
// message and closes.
func rbWebSocket(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || key == "" {
		http.Error(w, "not a WebSocket handshake", http.StatusBadRequest)
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	rw.Write([]byte{0x81, 5})
	rw.WriteString("hello")
	rw.Write([]byte{0x88, 2, 0x03, 0xe8}) // close, 1000
	rw.Flush()
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	io.Copy(io.Discard, conn) // the client's close frame, then its end
}

// rbPNG is a 1×1 PNG image.
var rbPNG = func() []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1)))
	return b.Bytes()
}()

// rbWAV is two seconds of silence as 16-bit mono PCM at 22050 Hz, a media
// file large enough that browsers read it by Range requests.
var rbWAV = func() []byte {
	const rate, n = 22050, 2 * 22050
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+2*n))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(2 * rate), uint16(2), uint16(16)} {
		binary.Write(&b, binary.LittleEndian, v) // fmt: PCM, mono, rate, byte rate, block, bits
	}
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(2*n))
	b.Write(make([]byte, 2*n))
	return b.Bytes()
}()

// rbServiceWorker controls the page as soon as it is installed; its fetch
// handler passes one request on (fetch(event.request)) and answers another
// with a fetch of its own.
const rbServiceWorker = `self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', e => e.waitUntil(self.clients.claim()));
self.addEventListener('fetch', e => {
  const p = new URL(e.request.url).pathname;
  if (p === '/sw/passthrough.txt') e.respondWith(fetch(e.request));
  else if (p === '/sw/own.txt') e.respondWith(fetch('/sw-own-fetch.txt'));
});
`

// rbPage is the page that makes every kind of request a page makes: its
// markup loads a stylesheet (with a background image and a web font),
// scripts (classic, module, preloaded), a prefetch, images, iframes and
// media; its script then makes fetch() and XMLHttpRequest requests, a
// beacon, a cross-origin fetch with a CORS preflight, a Worker's and a
// SharedWorker's fetch, a dynamic import(), an EventSource, a WebSocket, a
// form submission, a link and history navigations in an iframe, and (in a
// secure context) a service worker's fetches, and posts what each answered
// to /done, which ends the held iframe and so the page's load.
const rbPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>every kind of request</title>
<link rel="stylesheet" href="/style.css">
<link rel="preload" href="/preloaded.js" as="script">
<link rel="prefetch" href="/prefetched.txt">
<link rel="icon" href="/favicon.ico">
<script src="/script.js"></script>
<script type="module" src="/module.js"></script>
</head><body>
<p class="bg">Every kind of request a page makes.</p>
<img src="/image.png" alt="">
<iframe src="/frame.html"></iframe>
<iframe src="/hold?g={{GEN}}" style="width:1px;height:1px"></iframe>
<audio src="/audio.wav" preload="auto"></audio>
<video src="/video.wav" preload="auto" muted></video>
<form id="f" action="/search" method="get"><input name="q" value="robots"></form>
<script src="/preloaded.js"></script>
<script>
const API = '{{API}}', GEN = '{{GEN}}', results = [];
const note = (kind, v) => results.push(kind + ' ' + v);
async function step(kind, f) {
  try { note(kind, await f()); } catch (e) { note(kind, 'error ' + e); }
}
function settle(kind, f, ms) {
  return step(kind, () => new Promise(res => { f(res); setTimeout(() => res('timeout'), ms || 5000); }));
}
(async () => {
  await step('fetch-get', async () => (await fetch('/api/get')).status);
  await step('fetch-post-json', async () => (await fetch('/api/post', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({a: 1})})).status);
  await step('fetch-custom-header', async () => (await fetch('/api/custom', {headers: {'X-Custom': 'yes'}})).status);
  await settle('xhr', res => { const x = new XMLHttpRequest(); x.open('GET', '/api/xhr'); x.onloadend = () => res(x.status); x.send(); });
  await step('beacon', async () => navigator.sendBeacon('/api/beacon', JSON.stringify({b: 1})));
  await step('cross-origin', async () => (await fetch(API + '/cors/get', {headers: {'X-Custom': 'yes'}})).status);
  await settle('worker', res => { const w = new Worker('/worker.js'); w.onmessage = e => res(e.data); w.onerror = () => res('error'); });
  await settle('shared-worker', res => { const w = new SharedWorker('/shared-worker.js'); w.port.onmessage = e => res(e.data); w.onerror = () => res('error'); });
  await step('import', async () => (await import('/imported.js'), 'ok'));
  await settle('eventsource', res => { const es = new EventSource('/events'); es.onmessage = e => { es.close(); res(e.data); }; es.onerror = () => { es.close(); res('error'); }; });
  await settle('websocket', res => { const ws = new WebSocket(location.origin.replace(/^http/, 'ws') + '/ws'); ws.onmessage = e => { res(e.data); ws.close(); }; ws.onerror = () => res('error'); });
  for (const el of document.querySelectorAll('audio, video')) {
    await settle(el.tagName.toLowerCase(), res => {
      if (el.readyState >= 1) return res('ready');
      el.onloadedmetadata = () => res('ready');
      el.onerror = () => res('error ' + (el.error && el.error.code));
    });
  }
  await settle('iframe-navigations', res => {
    const f = document.createElement('iframe');
    let n = 0;
    f.onload = () => {
      const w = f.contentWindow;
      switch (++n) {
      case 1: w.document.getElementById('f').submit(); break;
      case 2: w.document.getElementById('next').click(); break;
      case 3: history.back(); break;
      case 4: history.forward(); break;
      default: res(w.location.pathname + w.location.search);
      }
    };
    f.src = '/navframe.html';
    document.body.appendChild(f);
  }, 15000);
  if (window.isSecureContext && 'serviceWorker' in navigator) {
    await step('service-worker', async () => {
      await navigator.serviceWorker.register('/sw.js');
      await navigator.serviceWorker.ready;
      if (!navigator.serviceWorker.controller) {
        await new Promise(res => { navigator.serviceWorker.addEventListener('controllerchange', res); setTimeout(res, 5000); });
      }
      if (!navigator.serviceWorker.controller) return 'not controlling';
      const a = await fetch('/sw/passthrough.txt'), b = await fetch('/sw/own.txt');
      return a.status + ' ' + b.status + ' ' + (await b.text());
    });
  } else {
    note('service-worker', 'unavailable (secure context ' + window.isSecureContext + ')');
  }
})().finally(() => {
  window.results = results;
  fetch('/done?g=' + GEN, {method: 'POST', body: JSON.stringify(results)}).finally(() => { window.done = true; });
});
</script>
</body></html>
`

// rbRun is one browser's load of the page over one scheme: what Caddy
// logged of it, what the browser saw, and what the page's script reported.
type rbRun struct {
	browser, scheme string
	entries         []rbEntry
	// browserSaw is each response the browser reported (Chromium's
	// network events), as "type URL status".
	browserSaw []string
	results    []string
	// absent lists the kinds of rbKinds that the browser did not request.
	absent []string
}

// rbEntry is a line of Caddy's JSON access log, with the kind of request
// the test made of it.
type rbEntry struct {
	Request struct {
		Proto, Method, Host, URI string
		Headers                  http.Header
	}
	Status int
	Action string `json:"robots_guard_action"`
	Group  string `json:"robots_guard_group"`
	Rule   string `json:"robots_guard_rule"`
	kind   string
}

func (e *rbEntry) header(name string) string { return e.Request.Headers.Get(name) }

// rbAccessLog reads Caddy's access log.
type rbAccessLog struct{ path string }

// size is the log's length now: entries past it are later requests'.
func (l *rbAccessLog) size() int64 {
	fi, err := os.Stat(l.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// since returns the entries logged after offset from.
func (l *rbAccessLog) since(from int64) []rbEntry {
	b, _ := os.ReadFile(l.path)
	if from > int64(len(b)) {
		return nil
	}
	var out []rbEntry
	for _, line := range bytes.Split(b[from:], []byte("\n")) {
		var e rbEntry
		if len(line) > 0 && json.Unmarshal(line, &e) == nil && e.Request.URI != "" {
			out = append(out, e)
		}
	}
	return out
}

// statusCount counts the entries after from answered status.
func (l *rbAccessLog) statusCount(from int64, status int) int {
	n := 0
	for _, e := range l.since(from) {
		if e.Status == status {
			n++
		}
	}
	return n
}

// waitURI waits up to d for a request for uri after from to be logged.
func (l *rbAccessLog) waitURI(from int64, uri string, d time.Duration) bool {
	for end := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		for _, e := range l.since(from) {
			if e.Request.URI == uri {
				return true
			}
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// rbKinds names the kind of request by its path.
var rbKinds = map[string]string{
	"/":                        "navigation (typed URL)",
	"/style.css":               "<link rel=stylesheet>",
	"/bg.png":                  "CSS background-image",
	"/font.woff2":              "@font-face web font",
	"/script.js":               "<script src>",
	"/module.js":               "<script type=module>",
	"/preloaded.js":            "<link rel=preload as=script>",
	"/prefetched.txt":          "<link rel=prefetch>",
	"/favicon.ico":             "favicon",
	"/image.png":               "<img>",
	"/frame.html":              "<iframe>",
	"/frame-image.png":         "<img> in the <iframe>",
	"/hold":                    "<iframe> (held to the end)",
	"/audio.wav":               "<audio preload=auto>",
	"/video.wav":               "<video preload=auto>",
	"/api/get":                 "fetch() GET",
	"/api/post":                "fetch() POST JSON",
	"/api/custom":              "fetch() with a custom header",
	"/api/xhr":                 "XMLHttpRequest",
	"/api/beacon":              "navigator.sendBeacon",
	"/cors/get":                "cross-origin fetch() with a custom header",
	"/worker.js":               "new Worker() script",
	"/worker-fetch.txt":        "fetch() in a Worker",
	"/shared-worker.js":        "new SharedWorker() script",
	"/shared-worker-fetch.txt": "fetch() in a SharedWorker",
	"/imported.js":             "dynamic import()",
	"/events":                  "EventSource",
	"/ws":                      "WebSocket handshake",
	"/sw.js":                   "service worker script",
	"/sw/passthrough.txt":      "service worker's fetch(event.request)",
	"/sw-own-fetch.txt":        "service worker's own fetch()",
	"/navframe.html":           "<iframe> for navigations",
	"/done":                    "fetch() POST (the results)",
}

// rbNavigations names the navigations to a URL in the order they happen:
// the first request for it and the history navigation back or forward to
// it.
var rbNavigations = map[string][2]string{
	"/search?q=robots": {"form GET submission", "history back"},
	"/after?q=robots":  {"link click", "history forward"},
	"/search?q=frame":  {"form GET submission in an <iframe>", "history back in an <iframe>"},
	"/after?q=frame":   {"link click in an <iframe>", "history forward in an <iframe>"},
}

// label sets the kind of each of the run's entries, in the order they were
// logged, and lists the kinds the page makes that the run lacks.
func (run *rbRun) label() {
	seen := map[string]int{}
	kinds := map[string]bool{}
	for i := range run.entries {
		e := &run.entries[i]
		u, _ := url.Parse(e.Request.URI)
		switch nav, ok := rbNavigations[e.Request.URI]; {
		case ok:
			if n := seen[e.Request.URI]; n < 2 {
				e.kind = nav[n]
			} else {
				e.kind = nav[1] + " (again)"
			}
			seen[e.Request.URI]++
		case u != nil && u.Path == "/cors/get" && e.Request.Method == http.MethodOptions:
			e.kind = "CORS preflight of the cross-origin fetch()"
		case u != nil && rbKinds[u.Path] != "":
			e.kind = rbKinds[u.Path]
		default:
			e.kind = "other: " + e.Request.URI
		}
		kinds[e.kind] = true
	}
	want := []string{"CORS preflight of the cross-origin fetch()"}
	for _, k := range rbKinds {
		want = append(want, k)
	}
	for _, nav := range rbNavigations {
		want = append(want, nav[:]...)
	}
	for _, k := range want {
		if !kinds[k] && !(run.scheme == "http" && strings.HasPrefix(k, "service worker")) {
			run.absent = append(run.absent, k)
		}
	}
	sort.Strings(run.absent)
}

// rbRow is one row of the table: the requests of a run of one kind and
// method.
type rbRow struct {
	kind, method, statuses, protos, actions string
	n                                       int
	entries                                 []*rbEntry
}

// has is how many of the row's requests carried header h, as "a/b".
func (r *rbRow) has(h string) string {
	n := 0
	for _, e := range r.entries {
		if e.header(h) != "" {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, r.n)
}

// values lists the values of header h that the row's requests carried
// ("-" for none).
func (r *rbRow) values(h string) string {
	var vs []string
	for _, e := range r.entries {
		v := e.header(h)
		if v == "" {
			v = "-"
		}
		if !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	return strings.Join(vs, ",")
}

// rows groups the run's entries by kind and method, in the order of their
// first request.
func (run *rbRun) rows() []*rbRow {
	var rows []*rbRow
	byKey := map[string]*rbRow{}
	add := func(list *string, v string) {
		if !slices.Contains(strings.Split(*list, ","), v) {
			if *list != "" {
				*list += ","
			}
			*list += v
		}
	}
	for i := range run.entries {
		e := &run.entries[i]
		key := e.kind + " " + e.Request.Method
		r := byKey[key]
		if r == nil {
			r = &rbRow{kind: e.kind, method: e.Request.Method}
			byKey[key] = r
			rows = append(rows, r)
		}
		r.n++
		r.entries = append(r.entries, e)
		add(&r.statuses, fmt.Sprint(e.Status))
		add(&r.protos, strings.TrimPrefix(e.Request.Proto, "HTTP/"))
		action := e.Action
		if action == "" {
			action = "-"
		}
		add(&r.actions, action)
	}
	return rows
}

// collect fills in the run's entries (those after from whose User-Agent
// has uaHas) and labels them.
func (run *rbRun) collect(alog *rbAccessLog, from int64, uaHas string) {
	for _, e := range alog.since(from) {
		if strings.Contains(e.header("User-Agent"), uaHas) {
			run.entries = append(run.entries, e)
		}
	}
	run.label()
}

// rbRunChromium loads base's page in headless Chromium (with the header
// ua of its headed self), then submits the page's form, follows a link,
// and goes back and forward, as a person does. A run of a site without the
// guard is marked by a "*" after its scheme.
func rbRunChromium(t *testing.T, chrome, ua, base string, guarded bool, alog *rbAccessLog) *rbRun {
	t.Helper()
	run := &rbRun{browser: "chromium", scheme: strings.SplitN(base, ":", 2)[0]}
	if !guarded {
		run.scheme += "*"
	}
	from := alog.size()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.IgnoreCertErrors, chromedp.UserAgent(ua),
		chromedp.Flag("host-resolver-rules", fmt.Sprintf("MAP %s 127.0.0.1, MAP %s 127.0.0.1", rbSiteHost, rbAPIHost)),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1000, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	stop := time.AfterFunc(90*time.Second, cancel)
	defer func() { stop.Stop(); cancel(); cancelAlloc() }()

	var mu sync.Mutex
	urls := map[network.RequestID]string{}
	ours := func(u string) bool {
		return strings.Contains(u, "://"+rbSiteHost+":") || strings.Contains(u, "://"+rbAPIHost+":")
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			urls[ev.RequestID] = ev.Request.URL
		case *network.EventResponseReceived:
			if ours(ev.Response.URL) {
				run.browserSaw = append(run.browserSaw, fmt.Sprintf("%s %s %d", ev.Type, ev.Response.URL, ev.Response.Status))
			}
		case *network.EventWebSocketHandshakeResponseReceived:
			run.browserSaw = append(run.browserSaw, fmt.Sprintf("WebSocket %s %d", urls[ev.RequestID], ev.Response.Status))
		case *network.EventWebSocketCreated:
			urls[ev.RequestID] = ev.URL
		}
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("network: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("chromium %s: %v", base, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.done === true`, chromedp.WithPollingTimeout(40*time.Second))); err != nil {
		t.Fatalf("chromium %s: the page's script did not end: %v", base, err)
	}
	run.results, _ = chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.results`))
	// The prefetch waits for the page to be idle.
	alog.waitURI(from, "/prefetched.txt", 5*time.Second)

	// A person's navigations: the form, a link, back and forward.
	at := func(want string) {
		t.Helper()
		for end := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + location.search + ' ' + document.readyState`))
			if err == nil && got == want+" complete" {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("chromium %s: at %q (%v), want %s", base, got, err, want)
			}
		}
	}
	script := func(js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js+`, true`)); err != nil {
			t.Fatalf("chromium %s: %s: %v", base, js, err)
		}
	}
	history := func(delta int64) {
		t.Helper()
		h, err := chromedp.Call(ctx, page.GetNavigationHistory, cdp.Empty{})
		if err == nil {
			_, err = chromedp.Call(ctx, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[h.CurrentIndex+delta].ID})
		}
		if err != nil {
			t.Fatalf("chromium %s: history %+d: %v", base, delta, err)
		}
	}
	script(`document.getElementById('f').submit()`)
	at("/search?q=robots")
	script(`document.getElementById('next').click()`)
	at("/after?q=robots")
	history(-1)
	at("/search?q=robots")
	history(+1)
	at("/after?q=robots")
	time.Sleep(500 * time.Millisecond)
	cancel()
	time.Sleep(300 * time.Millisecond)
	run.collect(alog, from, ua)
	return run
}

// rbRunFirefox loads base's page in headless Firefox ESR through its
// screenshot mode, with a fresh profile that resolves the test's host
// names to 127.0.0.1 and, for https, holds the exceptions a person adds
// for the certificates of tls internal ("Accept the Risk and Continue"),
// by their fingerprints.
func rbRunFirefox(t *testing.T, ff, base string, fingerprints map[string]string, site *rbSite, alog *rbAccessLog) *rbRun {
	t.Helper()
	run := &rbRun{browser: "firefox-esr", scheme: strings.SplitN(base, ":", 2)[0]}
	from := alog.size()
	profile := t.TempDir()
	prefs := []string{
		`user_pref("network.dns.localDomains", "` + rbSiteHost + `,` + rbAPIHost + `");`,
		`user_pref("browser.shell.checkDefaultBrowser", false);`,
		`user_pref("datareporting.policy.dataSubmissionEnabled", false);`,
		`user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);`,
		`user_pref("app.update.enabled", false);`,
		`user_pref("network.captive-portal-service.enabled", false);`,
		`user_pref("network.connectivity-service.enabled", false);`,
		`user_pref("media.autoplay.default", 0);`,
	}
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(strings.Join(prefs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if run.scheme == "https" {
		u, _ := url.Parse(base)
		overrides := "# PSM Certificate Override Settings file\n# This is a generated file!  Do not edit.\n"
		for host, fp := range fingerprints {
			overrides += fmt.Sprintf("%s:%s:\tOID.2.16.840.1.101.3.4.2.1\t%s\t\n", host, u.Port(), fp)
		}
		if err := os.WriteFile(filepath.Join(profile, "cert_override.txt"), []byte(overrides), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := site.lastResults()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	shot := filepath.Join(profile, "shot.png")
	cmd := exec.CommandContext(ctx, ff, "--headless", "--no-remote", "-profile", profile, "--screenshot", shot, base+"/")
	cmd.Env = append(os.Environ(), "MOZ_HEADLESS=1", "HOME="+profile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("firefox-esr %s: %v\n%s", base, err, out)
	}
	if _, err := os.Stat(shot); err != nil {
		t.Fatalf("firefox-esr %s made no screenshot: %v\n%s", base, err, out)
	}
	if gen, results := site.lastResults(); gen > before {
		run.results = results
	}
	time.Sleep(300 * time.Millisecond)
	run.collect(alog, from, "Firefox/")
	if len(run.entries) == 0 {
		t.Fatalf("firefox-esr %s: no request reached the site\n%s", base, out)
	}
	return run
}
