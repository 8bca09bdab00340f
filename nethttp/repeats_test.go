package nethttp

import (
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/guard"
)

// TestCheckRepeats: nginx asks again for one client request after each
// internal redirect (index, try_files, error_page), with the same
// $request_id; the repeated questions spend no Crawl-delay unit. bingbot
// (Crawl-delay 10) may run three requests ahead: with each request asked
// about twice or more, the fourth request still gets the 429, not the
// second. An id names one request only (another target, address or agent
// under it is judged anew), answers at most maxRepeatUses questions, and
// is not read outside nginx's contract, where a client could send it, nor
// without CheckConfig.RequestIDs (an nginx configuration that does not
// write the header would pass a client's own on).
func TestCheckRepeats(t *testing.T) {
	const bingbot = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
	nginxQ := func(target, id, ip string) []string {
		return []string{"User-Agent", bingbot, "X-Original-URI", target, "X-Forwarded-Host", "example.com",
			"X-Forwarded-For", ip, "X-Robots-Guard-Request-Id", id}
	}
	status := func(rec *httptest.ResponseRecorder) string { return rec.Header().Get("X-Robots-Guard-Status") }
	t.Run("internal redirects", func(t *testing.T) {
		h := mustCheck(t, checkEngine(t), CheckConfig{RequestIDs: true})
		for i := range 3 {
			id := "req" + strconv.Itoa(i)
			for range 3 { // the question, then two internal redirects
				if rec := ask(h, "127.0.0.1:4000", "/", nginxQ("/blog/", id, "192.0.2.1")...); status(rec) != "200" {
					t.Fatalf("request %d asked again: %s, want 200", i, status(rec))
				}
			}
		}
		if rec := ask(h, "127.0.0.1:4000", "/", nginxQ("/blog/", "req3", "192.0.2.1")...); status(rec) != "429" {
			t.Errorf("the fourth request: %s, want 429", status(rec))
		}
	})
	t.Run("one request per id", func(t *testing.T) {
		h := mustCheck(t, checkEngine(t), CheckConfig{RequestIDs: true})
		ask(h, "127.0.0.1:4000", "/", nginxQ("/a", "same", "192.0.2.2")...)
		// Another target, another agent: judged, each spends a unit.
		ask(h, "127.0.0.1:4000", "/", nginxQ("/b", "same", "192.0.2.2")...)
		ask(h, "127.0.0.1:4000", "/", nginxQ("/c", "same", "192.0.2.2")...)
		if rec := ask(h, "127.0.0.1:4000", "/", nginxQ("/d", "same", "192.0.2.2")...); status(rec) != "429" {
			t.Errorf("a fourth target under one id: %s, want 429 (an id names one request)", status(rec))
		}
	})
	t.Run("bounded uses", func(t *testing.T) {
		h := mustCheck(t, checkEngine(t), CheckConfig{RequestIDs: true})
		got := map[string]int{}
		for range maxRepeatUses*3 + 1 {
			got[status(ask(h, "127.0.0.1:4000", "/", nginxQ("/a", "forever", "192.0.2.3")...))]++
		}
		if got["429"] == 0 {
			t.Errorf("one id asked %d times: %v, want 429s once its uses are spent", maxRepeatUses*3+1, got)
		}
	})
	t.Run("not outside nginx's contract", func(t *testing.T) {
		h := mustCheck(t, checkEngine(t), CheckConfig{RequestIDs: true})
		q := []string{"User-Agent", bingbot, "X-Forwarded-Uri", "/a", "X-Forwarded-Host", "example.com",
			"X-Forwarded-For", "192.0.2.4", "X-Robots-Guard-Request-Id", "client-chosen"}
		for range 3 {
			ask(h, "127.0.0.1:4000", "/", q...)
		}
		if rec := ask(h, "127.0.0.1:4000", "/", q...); status(rec) != "429" {
			t.Errorf("a client's own request id through forward_auth: %s, want 429", status(rec))
		}
	})
	t.Run("off by default", func(t *testing.T) {
		h := mustCheck(t, checkEngine(t), CheckConfig{})
		for range 3 {
			ask(h, "127.0.0.1:4000", "/", nginxQ("/a", "client-chosen", "192.0.2.5")...)
		}
		if rec := ask(h, "127.0.0.1:4000", "/", nginxQ("/a", "client-chosen", "192.0.2.5")...); status(rec) != "429" {
			t.Errorf("a request id without request_ids: %s, want 429", status(rec))
		}
	})
	t.Run("expires", func(t *testing.T) {
		rp := newRepeats()
		now := time.Now()
		rp.now = func() time.Time { return now }
		rp.keep("id", 1, botVerdict())
		if _, ok := rp.lookup("id", 1); !ok {
			t.Fatal("a kept verdict is not found")
		}
		now = now.Add(repeatFor + time.Second)
		if _, ok := rp.lookup("id", 1); ok {
			t.Error("a verdict older than repeatFor answered")
		}
	})
}

// botVerdict is a bot's verdict, which repeats keeps.
func botVerdict() guard.Verdict { return guard.Verdict{Bot: true} }
