package guard

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestCompliantCrawlerRealJitter runs a crawler over real loopback HTTP
// with the real clock: it obeys robots.txt (Crawl-delay 0.5s, one
// disallowed directory it never asks for) and starts its requests one
// delay apart with ±40 ms of random jitter, as real crawlers do (measured:
// urllib.robotparser 0.9968–1.0033 s for a 1 s delay on loopback, tens of
// ms on the internet). It must never get a 403 or a 429. Before the
// limiter had a tolerance it got 429 on about a third of its requests (5
// of 15 at 0.2 s). The tolerance (2.5 delays, 1.25 s here) also absorbs a
// scheduler stall on a loaded test machine. Crawlers that randomise their
// spacing far more (Scrapy's 0.5–1.5 × the delay) are measured in package
// limit (TestRandomisedCrawlers) and through Caddy (bench/crawlsim).
func TestCompliantCrawlerRealJitter(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test (about 5 s)")
	}
	const robots = "User-agent: PoliteBot\nCrawl-delay: 0.5\nDisallow: /private/\n"
	e := mustNew(t, Config{})
	srv := httptest.NewServer(serve(e, site(robots)))
	defer srv.Close()
	client := srv.Client()
	get := func(path string) int {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("User-Agent", "PoliteBot/1.0 (+https://example.com/bot)")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get("/robots.txt"); c != 200 {
		t.Fatalf("robots.txt: %d", c)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 10
	start := time.Now()
	refused := 0
	for i := range n {
		// Start i at i × delay ± 40 ms from the first request.
		at := start.Add(time.Duration(i)*500*time.Millisecond + time.Duration(rng.Int64N(80e6)-40e6))
		time.Sleep(time.Until(at))
		if c := get("/page/" + string(rune('a'+i))); c != 200 {
			refused++
			t.Errorf("request %d at %v: %d", i, time.Since(start).Round(time.Millisecond), c)
		}
	}
	t.Logf("%d of %d requests of a jittery compliant crawler refused", refused, n)
}
