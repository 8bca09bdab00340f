package report

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/robotsguard/robotsguard/internal/testclock"
)

// A row shows the User-Agent header of its client's latest request: the
// latest of a five-minute slice, and across slices the later one, whatever
// order the buckets are summed in; the report holds its own copy.
func TestReportUserAgent(t *testing.T) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	rule := privateRule(t)
	rec := func(ua string) Record {
		d := denial(clk, "203.0.113.1:1", rule)
		d.UserAgent = ua
		return d
	}
	first := strings.Repeat("a", 40)
	r.Record(rec(first))
	r.Record(rec("Mozilla/5.0 (compatible; FooBot/1.0)"))
	clk.Add(10 * time.Minute) // another five-minute slice
	latest := string([]byte("Mozilla/5.0 (compatible; FooBot/2.0)"))
	r.Record(rec(latest))
	clk.Add(2 * time.Hour) // the first two in an hourly bucket, the last too
	r.Record(rec("Mozilla/5.0 (compatible; FooBot/3.0)"))
	rep := r.Report()
	s := rep.Sites[0]
	if got := row(s.LastHour, "203.0.113.1/32"); got.UserAgent != "Mozilla/5.0 (compatible; FooBot/3.0)" || got.Denials != 1 {
		t.Errorf("last hour: %+v", got)
	}
	if got := row(s.LastDay, "203.0.113.1/32"); got.UserAgent != "Mozilla/5.0 (compatible; FooBot/3.0)" || got.Denials != 4 {
		t.Errorf("last day: %+v", got)
	}

	// Three hours later only the hourly buckets hold the client: the
	// later of them wins.
	r2 := New(32, 64, clk.Now)
	r2.Record(rec("old/1.0"))
	clk.Add(time.Hour)
	r2.Record(rec(latest))
	clk.Add(3 * time.Hour)
	got := row(r2.Report().Sites[0].LastDay, "203.0.113.1/32")
	if got.UserAgent != latest {
		t.Errorf("last day from hourly buckets: %q, want %q", got.UserAgent, latest)
	}
	if unsafe.StringData(got.UserAgent) == unsafe.StringData(latest) {
		t.Error("the report keeps the request's own string")
	}
}

// A header over 200 bytes is cut to 200 at most, on a rune boundary; the
// JSON report has it as "user_agent".
func TestReportUserAgentCut(t *testing.T) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	d := denial(clk, "203.0.113.1:1", privateRule(t))
	d.UserAgent = strings.Repeat("x", 199) + "é" + strings.Repeat("y", 1<<20)
	r.Record(d)
	ua := row(r.Report().Sites[0].LastHour, "203.0.113.1/32").UserAgent
	if ua != strings.Repeat("x", 199) || !utf8.ValidString(ua) {
		t.Errorf("cut header: %d bytes %q", len(ua), ua[min(len(ua), 190):])
	}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	var out struct {
		Sites []struct {
			LastHour []map[string]any `json:"last_hour"`
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if got := out.Sites[0].LastHour[0]["user_agent"]; got != strings.Repeat("x", 199) {
		t.Errorf("JSON user_agent: %v", got)
	}
}
