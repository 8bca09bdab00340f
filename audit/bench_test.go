package audit

import (
	"bytes"
	"context"
	"testing"

	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
)

// benchLog is a Combined log of n lines: browsers (two in three), and
// bots from 500 addresses, on allowed and disallowed paths (the requests
// of benchRequests, which BenchmarkAuditFormats writes in every format).
func benchLog(n int) []byte {
	return benchFormatLog(FormatCombined, benchRequests(n))
}

// BenchmarkAuditCombined: lines per second through the whole audit
// (read, parse, judge, count), against BenchmarkLineCount on the same
// bytes (docs/performance.md).
func BenchmarkAuditCombined(b *testing.B) {
	log := benchLog(200000)
	auditBench(b, "", log, 200000)
}

// auditBench runs the whole audit of log (lines long, in format; ""
// reads each file's own) per iteration, and reports lines per second.
func auditBench(b *testing.B, format string, log []byte, lines int) {
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		a, err := New(guard.Config{Verify: &identity.VerifyConfig{Off: true}}, Options{Format: format, Site: "https://example.com",
			Versions: []Version{{Name: "robots.txt", Body: []byte(robots)}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := a.Read(context.Background(), bytes.NewReader(log), "bench"); err != nil {
			b.Fatal(err)
		}
		a.Close()
	}
	b.ReportMetric(float64(lines*b.N)/b.Elapsed().Seconds(), "lines/s")
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
