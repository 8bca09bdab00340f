package integration_test

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The site that TestScrapyConcurrencyBeforeBan crawls has ccPublic public
// pages and ccPrivate pages under /private/, which its robots.txt
// disallows to every bot, besides the home page.
const (
	ccPublic  = 180
	ccPrivate = 20
)

// ccAppDelay is how long the site's app takes to make a page. A real site
// takes some time, and that time is what lets a crawler keep its
// requests in flight: with pages made at once over loopback, Scrapy
// itself is the bottleneck and seldom has more than 3 requests in flight
// whatever its CONCURRENT_REQUESTS (measured).
const ccAppDelay = 20 * time.Millisecond

// ccLogSlack bounds how much later than its real start an entry's start
// (ts − duration) can read: Caddy measures the duration, then stamps the
// entry's ts when it logs it, and a loaded machine may run other
// goroutines between the two (CI saw a page read as received just after
// the trap's answer, its decision made before the ban). A ban not in
// force would serve pages for the rest of the crawl, seconds.
const ccLogSlack = 25 * time.Millisecond

// ccRobots is the site's robots.txt: /private/ and the trap are disallowed
// for every group (there is only "*"), as docs/traps.md asks.
const ccRobots = "User-agent: *\nDisallow: /private/\nDisallow: /no-robots/\n"

// ccSpider is a CrawlSpider that starts at the home page (the spider
// argument start) and follows every link its LinkExtractor finds, as a
// scraper that ignores robots.txt does, in the order the run's settings
// give (Scrapy's default: a LIFO queue, depth first). It records the URL and status of each page its callback
// is given: Scrapy's HttpErrorMiddleware keeps the 403s from it, so these
// are the pages the scraper got.
const ccSpider = `from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class Site(CrawlSpider):
    name = "site"
    rules = [Rule(LinkExtractor(), callback="parse_page", follow=True)]

    def __init__(self, start, **kwargs):
        self.start_urls = [start]
        super().__init__(**kwargs)

    def parse_page(self, response):
        yield {"url": response.url, "status": response.status}
`

// ccRun is one crawl of the site by Scrapy.
type ccRun struct {
	name  string
	https bool
	// concurrent is Scrapy's CONCURRENT_REQUESTS, and perDomain its
	// CONCURRENT_REQUESTS_PER_DOMAIN; 0 leaves Scrapy's default (16 and 8:
	// against one site, Scrapy's defaults keep 8 requests in flight).
	concurrent, perDomain int
	// trapLast puts the trap link last in each page instead of first.
	trapLast bool
	// declared leaves Scrapy's own User-Agent (a declared bot) instead of
	// Chrome's.
	declared bool
	// breadthFirst sets Scrapy's breadth-first order (DEPTH_PRIORITY 1 and
	// FIFO queues, as Scrapy's FAQ shows) instead of its default LIFO
	// queue.
	breadthFirst bool
}

// atOnce is how many requests the run's Scrapy keeps in flight against
// one site.
func (r ccRun) atOnce() int {
	n := cmp.Or(r.concurrent, 16)
	return min(n, cmp.Or(r.perDomain, 8))
}

// ccEntry is one line of Caddy's JSON access log.
type ccEntry struct {
	TS       float64 `json:"ts"`
	Duration float64 `json:"duration"`
	Status   int     `json:"status"`
	Request  struct {
		URI string `json:"uri"`
	} `json:"request"`
}

// start is when Caddy received the request, in seconds: the line is
// written when the answer has been sent.
func (e ccEntry) start() float64 { return e.TS - e.Duration }

// ccMeasure is what one crawl got, as Caddy's access log shows it, its
// requests numbered from 1 in the order Caddy received them.
type ccMeasure struct {
	requests int
	// trapAt is the number of the trap request (the ban begins with its
	// answer), and firstRefused that of the first request refused after
	// it; 0 for none.
	trapAt, firstRefused int
	// privateServed counts the pages under /private/ answered 200, and
	// servedBefore the pages answered 200 to requests received before the
	// trap request (the home page included).
	privateServed, servedBefore int
	// servedAfter counts the pages answered 200 to requests received after
	// the trap request, and servedAfterBan those received after its answer
	// (when the ban was in force), by more than ccLogSlack.
	servedAfter, servedAfterBan int
	// inFlight counts the requests received before the trap request and
	// answered after Caddy received it, and maxInFlight is the most
	// requests Caddy held at once.
	inFlight, maxInFlight int
}

// String is the measure as the test logs it.
func (m ccMeasure) String() string {
	return fmt.Sprintf("%d requests, the trap request %d, the first refused after it %d; %d /private/ pages served; %d pages served before the trap request (%d of them in flight when it came), %d after it; at most %d requests in flight",
		m.requests, m.trapAt, m.firstRefused, m.privateServed, m.servedBefore, m.inFlight, m.servedAfter, m.maxInFlight)
}

// measure numbers the crawl's requests in the order Caddy received them
// (it sorts entries) and counts what was served before and after the trap
// request.
func measure(entries []ccEntry) ccMeasure {
	slices.SortStableFunc(entries, func(a, b ccEntry) int { return cmp.Compare(a.start(), b.start()) })
	m := ccMeasure{requests: len(entries)}
	var trap ccEntry
	for i, e := range entries {
		n, ok := i+1, e.Status == http.StatusOK
		private := strings.HasPrefix(e.Request.URI, "/private/")
		switch {
		case m.trapAt == 0 && strings.HasPrefix(e.Request.URI, "/no-robots/"):
			m.trapAt, trap = n, e
		case m.trapAt == 0 && ok:
			m.servedBefore++
		case m.trapAt != 0 && ok:
			m.servedAfter++
			if e.start() > trap.TS+ccLogSlack.Seconds() {
				m.servedAfterBan++
			}
		case m.trapAt != 0 && m.firstRefused == 0 && e.Status == http.StatusForbidden:
			m.firstRefused = n
		}
		if ok && private {
			m.privateServed++
		}
		held := 0
		for _, o := range entries {
			if o.start() <= e.start() && o.TS >= e.start() {
				held++
			}
		}
		m.maxInFlight = max(m.maxInFlight, held)
	}
	if m.trapAt != 0 {
		for _, e := range entries[:m.trapAt-1] {
			if e.TS > trap.start() {
				m.inFlight++
			}
		}
	}
	return m
}

// ccPage writes a page of the site: its title and links, with the
// client's own trap link (which Caddy's header_up hands the app as
// X-Trap-Link, as docs/traps.md shows) first in the document, or last
// when Caddy sends X-Trap-Place: last.
func ccPage(w http.ResponseWriter, r *http.Request, title string, links []string) {
	trap := r.Header.Get("X-Trap-Link")
	if !strings.HasPrefix(trap, "/no-robots/") {
		http.Error(w, "no trap link from Caddy: "+trap, http.StatusInternalServerError)
		return
	}
	trapLink := `<a href="` + trap + `" rel="nofollow" style="display:none" aria-hidden="true" tabindex="-1">do not follow</a>` + "\n"
	last := r.Header.Get("X-Trap-Place") == "last"
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html><head><title>" + title + "</title></head><body>\n")
	if !last {
		b.WriteString(trapLink)
	}
	b.WriteString("<h1>" + title + "</h1>\n<ul>\n")
	for _, l := range links {
		fmt.Fprintf(&b, "<li><a href=%q>%s</a></li>\n", l, l)
	}
	b.WriteString("</ul>\n")
	if last {
		b.WriteString(trapLink)
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String()))
}

// ccPublicPath is the path of public page n, counted round from 1.
func ccPublicPath(n int) string { return fmt.Sprintf("/page/%03d.html", (n-1+ccPublic)%ccPublic+1) }

// ccPrivatePath is the path of private page n, counted round from 1.
func ccPrivatePath(n int) string {
	return fmt.Sprintf("/private/%02d.html", (n-1+ccPrivate)%ccPrivate+1)
}

// ccSite is the app behind Caddy. The home page links to every fourth
// public page, and to a private page after every fourth of those; public
// page n links to the next three, to a private page and home; a private
// page links to a public page and home. Every page but robots.txt takes
// ccAppDelay.
func ccSite() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/robots.txt" {
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(ccRobots))
			return
		}
		time.Sleep(ccAppDelay)
		var n int
		switch {
		case p == "/":
			var links []string
			for i := 1; 4*i <= ccPublic; i++ {
				links = append(links, ccPublicPath(4*i))
				if i%4 == 0 {
					links = append(links, ccPrivatePath(i/4))
				}
			}
			ccPage(w, r, "Home", links)
		case pageNumber(p, "/page/%d.html", &n) && n >= 1 && n <= ccPublic:
			ccPage(w, r, p, []string{ccPublicPath(n + 1), ccPublicPath(n + 2), ccPublicPath(n + 3), ccPrivatePath(n), "/"})
		case pageNumber(p, "/private/%d.html", &n) && n >= 1 && n <= ccPrivate:
			ccPage(w, r, p, []string{ccPublicPath(9 * n), "/"})
		default:
			http.NotFound(w, r)
		}
	})
}

// pageNumber reads the number of the page at path p, whose form is format.
func pageNumber(p, format string, n *int) bool {
	_, err := fmt.Sscanf(p, format, n)
	return err == nil
}

// TestScrapyConcurrencyBeforeBan measures how many pages real Scrapy
// (Debian's python3-scrapy 2.8) gets from a guarded site before its trap
// ban, at 1, 4, 8 (Scrapy's default against one site) and 16 requests at
// once, as docs/traps.md ("Concurrent crawlers") reports. A real Caddy
// runs robots_guard with a trap as docs/traps.md recommends (each client
// its own link, which reverse_proxy's header_up hands the app, and the app
// puts in every page) in front of a site of 201 pages whose robots.txt
// disallows /private/ and the trap to every bot. Scrapy wears Chrome's
// User-Agent, ignores robots.txt and follows every link from the home
// page; what it was served is read from Caddy's access log, its requests
// numbered in the order Caddy received them.
//
// What must hold, and is asserted: over https, Scrapy is an undeclared bot
// from its first request (it sends no Sec-CH-UA), and no private page is
// served at any concurrency; Scrapy with its own User-Agent, a declared
// bot, is served none over http either; in every crawl that took the trap,
// no page is served to a request received after the trap's answer (the
// ban is in force before it is sent); and what Scrapy wrote out is what
// Caddy's log says it was served.
//
// Over http Scrapy passes as the browser it names (it sends
// Accept-Language), and only the trap stops it. With the link first in
// each page, measured in 21 crawls for each concurrency (5 for
// breadth-first; 2-core VM, shared), Scrapy took it right after the home
// page (request 2, one page served) in 79 of 84 crawls, and at most 11
// pages (2 of them private) were served before the ban at 4 or more at
// once. The bound asserted there, with a margin, is 2 x (requests at once)
// + 4 pages, and as many private pages as requests at once. At 1 at once
// Scrapy took the first link last of all in 3 crawls of 21 (its default
// queue is a stack, filled in bursts), after the whole site: those crawls
// are logged, not bounded. The crawls with the link last in each page, and
// in breadth-first order, are logged to show what the link's place and
// concurrency cost.
func TestScrapyConcurrencyBeforeBan(t *testing.T) {
	needScraper(t, pythonImports("scrapy"), "Scrapy", "python3-scrapy")
	up := httptest.NewServer(ccSite())
	t.Cleanup(up.Close)

	runs := []ccRun{
		{name: "http, 1 at once", concurrent: 1},
		{name: "http, 4 at once", concurrent: 4},
		{name: "http, Scrapy's default (8 at once)"},
		{name: "http, 16 at once", perDomain: 16},
		{name: "https, Scrapy's default (8 at once)", https: true},
		{name: "https, 16 at once", https: true, perDomain: 16},
		{name: "http, declared, Scrapy's default", declared: true},
		{name: "http, trap link last, 1 at once", concurrent: 1, trapLast: true},
		{name: "http, trap link last, 4 at once", concurrent: 4, trapLast: true},
		{name: "http, trap link last, Scrapy's default (8 at once)", trapLast: true},
		{name: "http, trap link last, 16 at once", perDomain: 16, trapLast: true},
		{name: "http, breadth-first, Scrapy's default (8 at once)", breadthFirst: true},
		{name: "http, breadth-first, trap link last, Scrapy's default (8 at once)", breadthFirst: true, trapLast: true},
	}
	var sites strings.Builder
	ports, logs := make([]int, len(runs)), make([]string, len(runs))
	logDir := t.TempDir()
	for i, r := range runs {
		ports[i] = freePort(t)
		logs[i] = filepath.Join(logDir, fmt.Sprintf("access%d.log", i))
		place, tlsLine := "first", ""
		if r.trapLast {
			place = "last"
		}
		if r.https {
			tlsLine = "tls internal"
		}
		fmt.Fprintf(&sites, `%s://127.0.0.1:%d {
	%s
	log {
		output file %s
		format json
	}
	robots_guard {
		traps /no-robots/ {
			grace 0
		}
	}
	reverse_proxy %s {
		header_up X-Trap-Link {http.robots_guard.trap_link}
		header_up X-Trap-Place %s
	}
}
`, schemeName(r.https), ports[i], tlsLine, filepath.ToSlash(logs[i]), strings.TrimPrefix(up.URL, "http://"), place)
	}
	load(t, "skip_install_trust\n\tauto_https disable_redirects", sites.String())
	unbanAfter(t, "127.0.0.1")

	// Each site's robots.txt is fetched (a bot's first request waits for
	// it) and its trap armed before the crawls.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	bases := make([]string, len(runs))
	for i, r := range runs {
		bases[i] = fmt.Sprintf("%s://127.0.0.1:%d", schemeName(r.https), ports[i])
		if r.https {
			waitCertificate(t, fmt.Sprintf("127.0.0.1:%d", ports[i]))
		}
		req, err := http.NewRequest(http.MethodGet, bases[i]+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", "FooBot/1.0")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: a bot's first request: %v", r.name, err)
		}
		resp.Body.Close()
		if s := trapState(t, ports[i]); s != "armed" {
			t.Fatalf("%s: the trap is %s, want armed", r.name, s)
		}
	}

	for i, r := range runs {
		// The crawls all come from 127.0.0.1: each starts unbanned.
		adminDo(t, "DELETE", "/robots_guard/bans/127.0.0.1")
		before := len(readStable(t, logs[i]))
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "spider.py"), []byte(ccSpider), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-m", "scrapy", "runspider", "spider.py", "-a", "start=" + bases[i] + "/",
			"-s", "ROBOTSTXT_OBEY=False", "-s", "DEPTH_LIMIT=10", "-s", "CLOSESPIDER_PAGECOUNT=500", "-s", "CLOSESPIDER_TIMEOUT=25",
			"-s", "LOG_LEVEL=WARNING", "-s", "TELNETCONSOLE_ENABLED=False", "-s", "REQUEST_FINGERPRINTER_IMPLEMENTATION=2.7",
			"-o", "out.jsonl:jsonlines"}
		if !r.declared {
			args = append(args, "-s", "USER_AGENT="+browserUA)
		}
		if r.concurrent != 0 {
			args = append(args, "-s", "CONCURRENT_REQUESTS="+strconv.Itoa(r.concurrent))
		}
		if r.breadthFirst {
			args = append(args, "-s", "DEPTH_PRIORITY=1", "-s", "SCHEDULER_DISK_QUEUE=scrapy.squeues.PickleFifoDiskQueue",
				"-s", "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue")
		}
		if r.perDomain != 0 {
			args = append(args, "-s", "CONCURRENT_REQUESTS_PER_DOMAIN="+strconv.Itoa(r.perDomain))
		}
		start := time.Now()
		runScraper(t, dir, 45*time.Second, nil, nil, debianPython, args...)
		took := time.Since(start)

		var entries []ccEntry
		sc := bufio.NewScanner(bytes.NewReader(readStable(t, logs[i])[before:]))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e ccEntry
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("%s: access log: %q: %v", r.name, sc.Bytes(), err)
			}
			if e.Request.URI != "/robots.txt" { // the guard's own fetches
				entries = append(entries, e)
			}
		}
		m := measure(entries)
		t.Logf("%s (%s): %s", r.name, took.Round(time.Millisecond), m)

		if m.trapAt == 0 {
			// A crawl that takes the trap link last of all can reach
			// CLOSESPIDER_TIMEOUT first on a slow machine: only the runs
			// bounded below must take it.
			t.Logf("%s: the crawl did not fetch the trap", r.name)
		} else {
			if m.servedAfterBan != 0 {
				t.Errorf("%s: %d pages served to requests received after the trap's answer, want 0", r.name, m.servedAfterBan)
			}
			// What Scrapy got is what Caddy's log says it was served (a
			// crawl that ends with its ban has no request cut short).
			out, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
			if err != nil {
				t.Fatalf("%s: Scrapy's output: %v", r.name, err)
			}
			if got := strings.Count(string(out), "/private/"); got != m.privateServed {
				t.Errorf("%s: Scrapy got %d private pages, Caddy's log says %d were served", r.name, got, m.privateServed)
			}
		}
		switch {
		case r.declared || r.https:
			// A declared bot, and an undeclared one over https, are refused
			// the private pages from their first request.
			if m.privateServed != 0 {
				t.Errorf("%s: %d private pages served, want 0", r.name, m.privateServed)
			}
		case !r.trapLast && r.atOnce() >= 4:
			n := r.atOnce()
			if m.trapAt == 0 {
				t.Errorf("%s: the crawl never fetched the trap", r.name)
			}
			if limit := 2*n + 4; m.servedBefore > limit || m.privateServed > n {
				t.Errorf("%s: %d pages served before the ban, %d of them private; want at most %d (2 x %d at once + 4), %d private",
					r.name, m.servedBefore, m.privateServed, limit, n, n)
			}
		}
	}
}

// readStable returns the file at path once it has stopped growing for
// 100 ms: Caddy writes a request's access log line after its answer.
func readStable(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		again, err2 := os.ReadFile(path)
		if err == nil && err2 == nil && len(again) == len(b) {
			return b
		}
		b, err = again, err2
	}
	if err != nil {
		t.Fatalf("the access log: %v", err)
	}
	return b
}
