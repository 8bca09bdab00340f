package report

import (
	"fmt"
	"testing"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/limit"
)

// benchUA is a crawler's User-Agent header of ordinary length.
const benchUA = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"

// BenchmarkRecord is the request path's cost of a stopped request: one
// denial of a returning client, counted in its P's batch.
func BenchmarkRecord(b *testing.B) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	rec := denial(clk, "203.0.113.1:1", privateRule(b))
	rec.UserAgent = benchUA
	r.Record(rec)
	benchRecords(b, r, rec)
}

// BenchmarkRecordAllowed is the cost of a bot request that passed: a
// record for the site's timeline only.
func BenchmarkRecordAllowed(b *testing.B) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	rec := Record{Site: site, Verification: identity.Verified, At: clk.Now().UnixNano(), Kind: Allowed}
	r.Record(rec)
	benchRecords(b, r, rec)
}

// BenchmarkRecordClients records denials of 64 clients in turn, more than
// a batch holds: batches fill and are flushed to the shards.
func BenchmarkRecordClients(b *testing.B) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	rule := privateRule(b)
	recs := make([]Record, 64)
	for i := range recs {
		recs[i] = denial(clk, fmt.Sprintf("203.0.113.%d:1", i), rule)
		recs[i].UserAgent = benchUA
	}
	benchRecords(b, r, recs...)
}

// benchRecords measures r.Record of recs, in turn.
func benchRecords(b *testing.B, r *Recorder, recs ...Record) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Record(recs[i%len(recs)])
		i++
	}
}

// BenchmarkReport builds the report of a site whose buckets are full.
func BenchmarkReport(b *testing.B) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	rule := privateRule(b)
	for i := range 256 {
		rec := denial(clk, fmt.Sprintf("10.0.%d.%d:1", i/256, i%256), rule)
		rec.UserAgent = benchUA
		r.Record(rec)
		r.Record(Record{Site: site, Client: limit.ClientOf(fmt.Sprintf("10.1.0.%d:1", i%256), 32, 64), Group: "*", At: clk.Now().UnixNano(), Kind: Throttle})
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Report()
	}
}
