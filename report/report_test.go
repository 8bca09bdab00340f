package report

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/policy"
)

const site = "http://example.com"

// testRobots is the file the records' rules come from: line 3 denies
// /private/ to "*".
const testRobots = `User-agent: *
Disallow: /no-robots/
Disallow: /private/

User-agent: Googlebot
Disallow: /no-robots/
Crawl-delay: 1
`

// privateRule is line 3 of testRobots, "Disallow: /private/".
func privateRule(t testing.TB) *policy.Rule {
	d := policy.Parse([]byte(testRobots)).Agent("AhrefsBot").Decide("/private/x")
	if d.Allowed || d.Rule == nil || d.Rule.Line != 3 {
		t.Fatalf("the test file does not deny /private/x on line 3: %+v", d)
	}
	return d.Rule
}

// denial is the record of a request from addr denied by rule.
func denial(clk *testclock.Clock, addr string, rule *policy.Rule) Record {
	return Record{Site: site, Client: limit.ClientOf(addr, 32, 64), Group: "*", Rule: rule, At: clk.Now().UnixNano(), Kind: Denial}
}

// row returns the row of client in rows, or a zero row.
func row(rows []ClientReport, client string) ClientReport {
	for _, c := range rows {
		if c.Client == client {
			return c
		}
	}
	return ClientReport{}
}

// Records of every kind are counted in their client's row, in the last
// hour and day, and denials in their line, exactly.
func TestRecorderCounts(t *testing.T) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	rule := privateRule(t)
	for range 3 {
		r.Record(denial(clk, "203.0.113.1:1", rule))
	}
	g := limit.ClientOf("203.0.113.2:1", 32, 64)
	r.Record(Record{Site: site, Client: g, Group: "Googlebot", At: clk.Now().UnixNano(), Kind: Trap})
	for range 2 {
		r.Record(Record{Site: site, Client: g, Group: "Googlebot", At: clk.Now().UnixNano(), Kind: Banned})
	}
	r.Record(Record{Site: site, Client: limit.ClientOf("203.0.113.3:1", 32, 64), Group: "Googlebot", Verification: identity.Verified, At: clk.Now().UnixNano(), Kind: Throttle})
	r.Record(Record{Client: g, Kind: Denial, At: clk.Now().UnixNano()}) // no site: not counted
	clk.Add(2 * time.Hour)                                              // out of the last hour, in the last day
	r.Record(denial(clk, "203.0.113.1:1", rule))

	rep := r.Report()
	if len(rep.Sites) != 1 || rep.Sites[0].Site != site {
		t.Fatalf("%+v", rep)
	}
	s := rep.Sites[0]
	if h := row(s.LastHour, "203.0.113.1/32"); h.Denials != 1 || h.Group != "*" || len(s.LastHour) != 1 {
		t.Fatalf("last hour: %+v", s.LastHour)
	}
	d1, d2, d3 := row(s.LastDay, "203.0.113.1/32"), row(s.LastDay, "203.0.113.2/32"), row(s.LastDay, "203.0.113.3/32")
	if d1.Denials != 4 || d1.Error != 0 || d2.Traps != 1 || d2.Banned != 2 || d2.Group != "Googlebot" ||
		d3.Throttles != 1 || d3.Denials != 0 || d3.Verification != "verified" {
		t.Fatalf("last day: %+v %+v %+v", d1, d2, d3)
	}
	if len(s.Lines) != 1 || s.Lines[0].Line != 3 || s.Lines[0].Count != 4 || s.Lines[0].Rule != "Disallow: /private/" ||
		len(s.Lines[0].Whom) != 1 || s.Lines[0].Whom[0].Group != "*" || s.Lines[0].Whom[0].Count != 4 {
		t.Fatalf("lines: %+v", s.Lines)
	}
}

// A flood of a million distinct addresses keeps the report at its bound.
func TestReportFloodBound(t *testing.T) {
	if testing.Short() {
		t.Skip("a million records")
	}
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	rule := privateRule(t)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := 1_000_000
	if raceEnabled {
		n = 100_000
	}
	for i := range n {
		r.Record(denial(clk, fmt.Sprintf("10.%d.%d.%d", byte(i>>16), byte(i>>8), byte(i)), rule))
		if i%1000 == 0 {
			clk.Add(time.Second)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	rep := r.Report()
	t.Logf("%d distinct addresses: heap +%d KB, %d rows in the last day, line count %d", n, grown/1024, len(rep.Sites[0].LastDay), rep.Sites[0].Lines[0].Count)
	if grown > 4<<20 {
		t.Fatalf("heap grew by %d MB", grown>>20)
	}
	if rep.Sites[0].Lines[0].Count != int64(n) {
		t.Fatalf("line count %d", rep.Sites[0].Lines[0].Count)
	}
}

// Records made on many goroutines at once, with garbage collections
// between and reports read meanwhile, are all in the report: none waits
// unseen in a batch, none is lost with one, and reading does not race
// with flushing.
func TestReportConcurrentBatches(t *testing.T) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	rule := privateRule(t)
	const workers, each = 8, 1000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	reads := make(chan int)
	go func() { // reports read while records are flushed
		n := 0
		defer func() { reads <- n }()
		for {
			select {
			case <-stop:
				return
			default:
				r.Report()
				n++
			}
		}
	}()
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				r.Record(denial(clk, fmt.Sprintf("203.0.113.%d:1", w), rule))
				if i%250 == 0 {
					runtime.GC()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if n := <-reads; n == 0 {
		t.Error("no report was read during the run")
	}
	rep := r.Report()
	if len(rep.Sites) != 1 {
		t.Fatalf("%+v", rep)
	}
	var total int64
	for _, c := range rep.Sites[0].LastHour {
		total += c.Denials
		if c.Denials != each || c.Error != 0 {
			t.Errorf("%s: %d denials (error %d), want %d", c.Client, c.Denials, c.Error, each)
		}
	}
	if total != workers*each || rep.Sites[0].Lines[0].Count != workers*each {
		t.Fatalf("%d denials in the last hour, line count %d, want %d", total, rep.Sites[0].Lines[0].Count, workers*each)
	}
	if n := len(r.batches); n > r.maxBatches {
		t.Fatalf("%d batches, bound %d", n, r.maxBatches)
	}
}

// Recording a denial allocates nothing (in the steady state), with a
// User-Agent of at most 200 bytes (the batch holds the request's string);
// a longer one allocates its cut copy, once.
func TestRecordAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random, and a new batch is an allocation")
	}
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	rec := denial(clk, "203.0.113.1:1", privateRule(t))
	rec.UserAgent = "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	r.Record(rec)
	if n := testing.AllocsPerRun(1000, func() { r.Record(rec) }); n != 0 {
		t.Errorf("Record allocates %v times", n)
	}
	rec.UserAgent = strings.Repeat("z", 4096)
	r.Record(rec)
	if n := testing.AllocsPerRun(1000, func() { r.Record(rec) }); n != 1 {
		t.Errorf("Record of a 4 KiB header allocates %v times, want 1", n)
	}
}

// A record that waited in a batch while its five-minute slot went to a
// later time is counted in its hourly bucket; one whose hourly slot went to
// a later hour too is dropped, not counted as new.
func TestReportLateRecord(t *testing.T) {
	var sh reportShard
	sh.lines = map[lineKey]*lineStat{}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	key := reportKey{client: limit.Client{15: 1}, group: "*"}
	add := func(at time.Duration) {
		sh.add(&reportRecord{site: "s", key: key, at: base + int64(at), kind: Denial}, 1)
	}
	count := func(b bucket) int64 {
		if c := b.clients.m[key]; c != nil {
			return c.n[Denial]
		}
		return 0
	}
	add(time.Hour + 5*time.Minute) // slot 1 of the five-minute ring
	add(5 * time.Minute)           // slot 1 too, an hour older: the hourly bucket of 00:00
	if mb := sh.minutes[1]; mb.start != base+int64(time.Hour+5*time.Minute) || count(mb) != 1 {
		t.Fatalf("five-minute bucket: start %d, count %d", mb.start, count(mb))
	}
	if hb := sh.hours[0]; hb.start != base || count(hb) != 1 {
		t.Fatalf("hourly bucket 0: start %d, count %d", hb.start, count(hb))
	}
	add(25*time.Hour + 5*time.Minute) // slot 1 again: 01:05 goes to hourly bucket 1
	add(26*time.Hour + 5*time.Minute) // slot 1 again: hourly bucket 1 becomes 25:00
	add(time.Hour + 7*time.Minute)    // late: both its slots hold later times
	if hb := sh.hours[1]; hb.start != base+int64(25*time.Hour) || count(hb) != 1 {
		t.Fatalf("hourly bucket 1: start %d, count %d, want the 25:05 record only", hb.start, count(hb))
	}
	if mb := sh.minutes[1]; mb.start != base+int64(26*time.Hour+5*time.Minute) || count(mb) != 1 {
		t.Fatalf("five-minute bucket: start %d, count %d", mb.start, count(mb))
	}
}

// A batch whose ref the pool dropped goes back to use with its records,
// which are counted once; past the bound, new refs share batches.
func TestReportBatchReuse(t *testing.T) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	ref := r.pool.New().(*reportBatchRef)
	r.add(ref.b, reportRecord{site: "http://example.com", key: reportKey{client: limit.Client{15: 1}, group: "*"}, at: clk.Now().UnixNano(), kind: Denial})
	r.release(ref.b) // as the cleanup does once the pool dropped ref
	if len(r.idle) != 1 || r.idle[0] != ref.b || ref.b.refs != 0 {
		t.Fatalf("idle %d, refs %d", len(r.idle), ref.b.refs)
	}
	again := r.pool.New().(*reportBatchRef)
	if again.b != ref.b || again.b.refs != 1 || len(r.idle) != 0 || len(r.batches) != 1 {
		t.Fatalf("a new ref got batch %p (refs %d), want the idle %p; %d batches", again.b, again.b.refs, ref.b, len(r.batches))
	}
	for range 2 {
		rep := r.Report()
		if len(rep.Sites) != 1 || len(rep.Sites[0].LastHour) != 1 || rep.Sites[0].LastHour[0].Denials != 1 {
			t.Fatalf("%+v", rep)
		}
	}
	for range r.maxBatches + 3 {
		r.pool.New()
	}
	if len(r.batches) != r.maxBatches {
		t.Fatalf("%d batches, bound %d", len(r.batches), r.maxBatches)
	}
	refs := 0
	for _, b := range r.batches {
		refs += b.refs
	}
	if refs != r.maxBatches+4 {
		t.Fatalf("%d refs counted, want %d", refs, r.maxBatches+4)
	}
}

// A batch counts a returning client in its record of the same five-minute
// slice; across slices (60 records, more than a batch holds) the report's
// counts stay exact.
func TestReportBatchAggregates(t *testing.T) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	b := r.pool.New().(*reportBatchRef).b
	const clients, rounds = 20, 30 // no report shard gets more than its 8 exact counters
	for round := range rounds {
		for c := range clients {
			r.add(b, reportRecord{site: "http://example.com", key: reportKey{client: limit.Client{10: 0xff, 11: 0xff, 15: byte(c)}, group: "*"}, at: clk.Now().UnixNano(), kind: Denial})
		}
		if round%10 == 9 {
			clk.Add(5 * time.Minute) // three slices in all
		}
		if round == 4 && b.n != clients {
			t.Fatalf("%d records in the batch after 5 rounds of %d clients in one slice", b.n, clients)
		}
	}
	rep := r.Report()
	if len(rep.Sites) != 1 || len(rep.Sites[0].LastHour) != clients {
		t.Fatalf("%+v", rep)
	}
	for _, row := range rep.Sites[0].LastHour {
		if row.Denials != rounds || row.Error != 0 {
			t.Fatalf("%+v: want %d denials, exact", row, rounds)
		}
	}
}

// TestTraffic: a site's traffic counts every record exactly, allowed bot
// requests too, in the slice of its time, by kind and verdict; slices
// leave the last hour after an hour and the day after a day (through the
// hourly buckets they fold into); allowed records never make client rows.
func TestTraffic(t *testing.T) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	rule := privateRule(t)
	at := func() int64 { return clk.Now().UnixNano() }
	for range 7 {
		r.Record(Record{Site: site, Verification: identity.Verified, At: at(), Kind: Allowed})
	}
	r.Record(Record{Site: site, Verification: identity.None, At: at(), Kind: Allowed})
	for range 3 {
		r.Record(denial(clk, "203.0.113.1", rule))
	}
	r.Record(Record{Site: site, Client: limit.ClientOf("203.0.113.2", 32, 64), Group: "Googlebot", Verification: identity.Spoofed, At: at(), Kind: Denial})
	r.Record(Record{Site: site, Client: limit.ClientOf("203.0.113.3", 32, 64), Group: "*", At: at(), Kind: TrapUnattributed})
	clk.Add(10 * time.Minute)
	r.Record(Record{Site: site, Client: limit.ClientOf("203.0.113.4", 32, 64), Group: "SlowBot", At: at(), Kind: Throttle})

	rep := r.Report()
	if len(rep.Sites) != 1 {
		t.Fatalf("%+v", rep)
	}
	tr := rep.Sites[0].Traffic
	if len(tr.LastHour) != 12 || len(tr.LastDay) != 24 {
		t.Fatalf("%d and %d slices", len(tr.LastHour), len(tr.LastDay))
	}
	last, first := tr.LastHour[11], tr.LastHour[9]
	if want := clk.Now().Truncate(5 * time.Minute); !last.Start.Equal(want) || !first.Start.Equal(want.Add(-10*time.Minute)) {
		t.Fatalf("slices start %v and %v", first.Start, last.Start)
	}
	if first.Allowed != (ByVerification{None: 1, Verified: 7}) || first.Denied != (ByVerification{None: 3, Spoofed: 1}) || first.Trapped.Total() != 1 || first.Throttled.Total() != 0 {
		t.Fatalf("first slice %+v", first)
	}
	if last.Throttled.None != 1 || last.Total() != 1 {
		t.Fatalf("last slice %+v", last)
	}
	if day := tr.LastDay[23]; day.Total() != 14 || day.Allowed.Total() != 8 {
		t.Fatalf("this hour %+v", day)
	}
	for _, row := range rep.Sites[0].LastHour {
		if row.Client == "" || row.Denials+row.Throttles+row.Traps+row.Banned+row.UnattributedTraps == 0 {
			t.Fatalf("a row for allowed requests: %+v", row)
		}
	}
	if n := len(rep.Sites[0].LastHour); n != 4 {
		t.Fatalf("%d client rows, want 4", n)
	}
	// Two hours on: out of the last hour, still in the day, whose hourly
	// slices hold it once (folded or not).
	clk.Add(2 * time.Hour)
	r.Record(Record{Site: site, Verification: identity.None, At: at(), Kind: Allowed})
	tr = r.Report().Sites[0].Traffic
	var hour, day int64
	for _, s := range tr.LastHour {
		hour += s.Total()
	}
	for _, s := range tr.LastDay {
		day += s.Total()
	}
	if hour != 1 || day != 15 {
		t.Fatalf("two hours on: %d in the last hour (want 1), %d in the day (want 15)", hour, day)
	}
	clk.Add(25 * time.Hour)
	r.Record(Record{Site: site, Verification: identity.None, At: at(), Kind: Allowed})
	day = 0
	for _, s := range r.Report().Sites[0].Traffic.LastDay {
		day += s.Total()
	}
	if day != 1 {
		t.Fatalf("a day on: %d in the day, want 1", day)
	}
}

// TestLicenceKinds: the licence decisions are counted per client row, in
// fields of their own (none is a robots.txt denial, none counts in a
// line), per site; in the site's timeline a licensed request counts as
// allowed and a refusal as denied; rows of stopped requests come before a
// row of licensed ones only, and the JSON leaves out the fields of none.
func TestLicenceKinds(t *testing.T) {
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	at := func() int64 { return clk.Now().UnixNano() }
	const other = "https://other.example"
	gpt, claude := limit.ClientOf("203.0.113.1:1", 32, 64), limit.ClientOf("203.0.113.2:1", 32, 64)
	rec := func(s string, c limit.Client, group string, kind Kind) Record {
		return Record{Site: s, Client: c, Group: group, Verification: identity.Verified, UserAgent: group + "/1.0", At: at(), Kind: kind}
	}
	for range 5 {
		r.Record(rec(site, gpt, "GPTBot", Licensed))
	}
	for range 2 {
		r.Record(rec(site, gpt, "GPTBot", Unlicensed))
	}
	r.Record(rec(site, gpt, "GPTBot", InvalidToken))
	r.Record(rec(site, gpt, "GPTBot", LicenseUnavailable))
	r.Record(rec(site, claude, "ClaudeBot", Licensed))
	for range 3 {
		r.Record(rec(other, gpt, "GPTBot", InvalidToken))
	}
	clk.Add(2 * time.Hour) // out of the last hour, in the last day
	r.Record(rec(site, gpt, "GPTBot", Unlicensed))

	rep := r.Report()
	if len(rep.Sites) != 2 || rep.Sites[0].Site != site || rep.Sites[1].Site != other {
		t.Fatalf("%+v", rep)
	}
	s := rep.Sites[0]
	want := ClientReport{Client: "203.0.113.1/32", Group: "GPTBot", Verification: "verified", UserAgent: "GPTBot/1.0",
		Licensed: 5, Unlicensed: 3, InvalidTokens: 1, LicenseUnavailable: 1}
	if got := row(s.LastDay, "203.0.113.1/32"); got != want {
		t.Errorf("last day:\n got %+v\nwant %+v", got, want)
	}
	want.Licensed, want.Unlicensed, want.InvalidTokens, want.LicenseUnavailable = 0, 1, 0, 0 // the later one only
	if got := row(s.LastHour, "203.0.113.1/32"); got != want || len(s.LastHour) != 1 {
		t.Errorf("last hour:\n got %+v\nwant %+v", got, want)
	}
	if len(s.LastDay) != 2 || s.LastDay[0].Client != "203.0.113.1/32" || s.LastDay[1].Licensed != 1 || s.LastDay[1].Group != "ClaudeBot" {
		t.Errorf("a row of licensed requests only should come last: %+v", s.LastDay)
	}
	if len(s.Lines) != 0 {
		t.Errorf("licence decisions counted in the lines: %+v", s.Lines)
	}
	if o := row(rep.Sites[1].LastDay, "203.0.113.1/32"); o.InvalidTokens != 3 || o.Licensed+o.Unlicensed+o.LicenseUnavailable+o.Denials != 0 {
		t.Errorf("the other site's row: %+v", o)
	}
	var allowed, denied int64
	for _, sl := range s.Traffic.LastDay {
		allowed += sl.Allowed.Verified
		denied += sl.Denied.Verified
	}
	if allowed != 6 || denied != 5 {
		t.Errorf("timeline: %d allowed, %d denied; want 6 (licensed) and 5 (licence refusals)", allowed, denied)
	}
	b, err := json.Marshal(s.LastDay)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"licensed":5`, `"unlicensed":3`, `"invalid_tokens":1`, `"license_unavailable":1`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("the JSON lacks %s: %s", field, b)
		}
	}
	if b, _ := json.Marshal(ClientReport{Denials: 1}); strings.Contains(string(b), "licen") || strings.Contains(string(b), "token") {
		t.Errorf("a row without licence decisions names them: %s", b)
	}
}

// Recording a licence decision, a licensed request too, allocates nothing
// (in the steady state), as a denial.
func TestRecordLicenceAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random, and a new batch is an allocation")
	}
	clk := testclock.New()
	r := New(32, 64, clk.Now)
	for _, kind := range []Kind{Licensed, Unlicensed, InvalidToken, LicenseUnavailable} {
		rec := Record{Site: site, Client: limit.ClientOf("203.0.113.1:1", 32, 64), Group: "GPTBot", UserAgent: "GPTBot/1.2", At: clk.Now().UnixNano(), Kind: kind}
		r.Record(rec)
		if n := testing.AllocsPerRun(1000, func() { r.Record(rec) }); n != 0 {
			t.Errorf("Record of kind %d allocates %v times", kind, n)
		}
	}
}
