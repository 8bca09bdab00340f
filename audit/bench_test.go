package audit

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
)

// benchLog is a Combined log of n lines: browsers (two in three), and
// bots from 500 addresses, on allowed and disallowed paths.
func benchLog(n int) []byte {
	var b bytes.Buffer
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	uas := []string{chromeUA, "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1", "FooBot/1.0 (+https://foo.example/bot)"}
	paths := []string{"/", "/blog/2026/11/post-1?ref=home", "/private/x", "/static/site.css"}
	for i := range n {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		fmt.Fprintf(&b, "192.0.%d.%d - - [%s] \"GET %s HTTP/1.1\" 200 5120 \"https://example.com/\" %q\n",
			i%2, i%250, at.Format("02/Jan/2006:15:04:05 -0700"), paths[i%len(paths)], uas[i%len(uas)])
	}
	return b.Bytes()
}

// BenchmarkAuditCombined: lines per second through the whole audit
// (read, parse, judge, count), against BenchmarkLineCount on the same
// bytes (docs/performance.md).
func BenchmarkAuditCombined(b *testing.B) {
	log := benchLog(200000)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		a, err := New(guard.Config{Verify: &identity.VerifyConfig{Off: true}}, Options{Site: "https://example.com",
			Versions: []Version{{Name: "robots.txt", Body: []byte(robots)}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Read(context.Background(), bytes.NewReader(log), "bench"); err != nil {
			b.Fatal(err)
		}
		a.Close()
	}
	b.ReportMetric(float64(200000*b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkLineCount is a plain line count of the same bytes (wc -l).
func BenchmarkLineCount(b *testing.B) {
	log := benchLog(200000)
	b.SetBytes(int64(len(log)))
	n := 0
	for b.Loop() {
		n = bytes.Count(log, []byte{'\n'})
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "lines/s")
}
