package identity

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testdns"
)

var googleish = []Operator{{Name: "google", Tokens: []string{"Googlebot"}, RDNS: []string{"googlebot.com", "google.com"}}}

func TestFCrDNS(t *testing.T) {
	dns := testdns.Start(t)
	// The real crawler.
	dns.PTR("66.249.66.1", "crawl-66-249-66-1.googlebot.com")
	dns.Host("crawl-66-249-66-1.googlebot.com", "66.249.66.1")
	dns.PTR("2001:4860:4801:2::1", "crawl-v6.google.com")
	dns.Host("crawl-v6.google.com", "2001:4860:4801:2::1")
	// A PTR under the operator's domain, but the attacker's own zone.
	dns.PTR("11.0.113.1", "googlebot.com.evil.example")
	dns.Host("googlebot.com.evil.example", "11.0.113.1")
	// Not on a label boundary.
	dns.PTR("11.0.113.2", "evilgooglebot.com")
	dns.Host("evilgooglebot.com", "11.0.113.2")
	// A PTR the attacker wrote in their reverse zone, naming the real
	// domain: the forward lookup does not contain the address.
	dns.PTR("11.0.113.3", "crawl-66-249-66-1.googlebot.com")
	// A PTR to a name that does not exist.
	dns.PTR("11.0.113.4", "crawl-nonexistent.googlebot.com")
	// 11.0.113.5 has no PTR at all.

	v, _ := newTestVerifier(t, googleish, func(c *Config) { c.Resolver = dns.Addr })
	for _, tc := range []struct {
		addr   string
		want   Verdict
		detail string
	}{
		{"66.249.66.1", Verified, "PTR crawl-66-249-66-1.googlebot.com, whose A/AAAA records include 66.249.66.1"},
		{"2001:4860:4801:2::1", Verified, "crawl-v6.google.com"},
		{"11.0.113.1", Spoofed, "is not under googlebot.com, google.com"},
		{"11.0.113.2", Spoofed, "PTR evilgooglebot.com is not under"},
		{"11.0.113.3", Spoofed, "does not resolve back to 11.0.113.3"},
		{"11.0.113.4", Spoofed, "does not resolve back"},
		{"11.0.113.5", Spoofed, "no PTR record"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			x := v.Explain(context.Background(), v.Claims("Googlebot/2.1"), netip.MustParseAddr(tc.addr))
			if x.Verdict != tc.want || !strings.Contains(strings.Join(x.Steps, "\n"), tc.detail) {
				t.Fatalf("got %v %q, want %v with %q", x.Verdict, x.Steps, tc.want, tc.detail)
			}
			if tc.want == Verified && x.Method != MethodRDNS {
				t.Fatalf("method %v", x.Method)
			}
		})
	}
	// Answers are cached: asking again sends no query.
	before := dns.Queries()
	for range 100 {
		if r := verify(v, "Googlebot", "66.249.66.1"); r.Verdict != Verified {
			t.Fatal(r.Verdict)
		}
		if r := verify(v, "Googlebot", "11.0.113.3"); r.Verdict != Spoofed {
			t.Fatal(r.Verdict)
		}
	}
	if n := dns.Queries() - before; n != 0 {
		t.Fatalf("%d queries for cached answers", n)
	}
}

// Concurrent checks of one new address share one lookup.
func TestFCrDNSSingleFlight(t *testing.T) {
	dns := testdns.Start(t)
	dns.PTR("66.249.66.9", "crawl-66-249-66-9.googlebot.com")
	dns.Host("crawl-66-249-66-9.googlebot.com", "66.249.66.9")
	dns.SetDelay(50 * time.Millisecond) // so the callers overlap
	v, _ := newTestVerifier(t, googleish, func(c *Config) { c.Resolver = dns.Addr })
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if r := verify(v, "Googlebot", "66.249.66.9"); r.Verdict != Verified {
				t.Error(r.Verdict)
			}
		})
	}
	wg.Wait()
	// One PTR query, then A and AAAA for the name.
	if n := dns.Queries(); n > 3 {
		t.Fatalf("%d queries for 50 concurrent checks of one address, want at most 3", n)
	}
}

// A resolver that does not answer costs at most the DNS timeout, and the
// claim is unverifiable (never spoofed); the failure is cached briefly.
func TestFCrDNSTimeout(t *testing.T) {
	dns := testdns.Start(t)
	dns.PTR("66.249.66.1", "crawl-66-249-66-1.googlebot.com")
	const timeout = 300 * time.Millisecond
	dns.SetDelay(4 * timeout) // longer than the timeout; short, since shutdown waits for it
	v, _ := newTestVerifier(t, googleish, func(c *Config) { c.Resolver = dns.Addr; c.DNSTimeout = timeout })
	start := time.Now()
	r := verify(v, "Googlebot", "66.249.66.1")
	took := time.Since(start)
	if r.Verdict != Unverifiable {
		t.Fatalf("got %v", r.Verdict)
	}
	t.Logf("a check against a silent resolver took %v (timeout %v)", took, timeout)
	if took > timeout+2*time.Second {
		t.Fatalf("took %v with a %v timeout", took, timeout)
	}
	start = time.Now()
	if r := verify(v, "Googlebot", "66.249.66.1"); r.Verdict != Unverifiable || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("cached failure: %v after %v", r.Verdict, time.Since(start))
	}
	// A request that ends first does not wait for the lookup.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start = time.Now()
	if r := v.Verify(ctx, v.Claims("Googlebot"), netip.MustParseAddr("66.249.66.2")); r.Verdict != Unverifiable {
		t.Fatalf("got %v", r.Verdict)
	}
	if d := time.Since(start); d > timeout {
		t.Fatalf("waited %v after the request ended", d)
	}
}

// A flood of distinct addresses claiming an operator keeps the cache at its
// bound.
func TestFCrDNSFlood(t *testing.T) {
	dns := testdns.Start(t)
	const size = 100
	v, _ := newTestVerifier(t, googleish, func(c *Config) { c.Resolver = dns.Addr; c.CacheSize = size })
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 250 {
				a := netip.MustParseAddr(fmt.Sprintf("11.18.%d.%d", w, i))
				if r := v.Verify(context.Background(), v.Claims("Googlebot"), a); r.Verdict != Spoofed {
					t.Errorf("%s: %v", a, r.Verdict)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := v.dnsCache.Len(); n > size {
		t.Fatalf("cache holds %d answers, bound %d", n, size)
	}
}

// An address in the operator's feed needs no DNS; outside it, reverse DNS
// decides.
func TestFeedThenRDNS(t *testing.T) {
	dns := testdns.Start(t)
	dns.PTR("66.249.66.1", "crawl-66-249-66-1.googlebot.com")
	dns.Host("crawl-66-249-66-1.googlebot.com", "66.249.66.1")
	srv := newFeedServer(t, feedJSON("66.249.64.0/27"))
	ops := []Operator{{Name: "google", Tokens: []string{"Googlebot"}, IPRanges: []string{srv.URL}, RDNS: []string{"googlebot.com"}}}
	v, _ := newTestVerifier(t, ops, func(c *Config) { c.Resolver = dns.Addr })
	waitFeeds(t, v, 1)
	if r := verify(v, "Googlebot", "66.249.64.3"); r.Verdict != Verified || r.Method != MethodIPRange {
		t.Fatalf("%+v", r)
	}
	if dns.Queries() != 0 {
		t.Fatal("an address in the feed must not cost a DNS query")
	}
	if r := verify(v, "Googlebot", "66.249.66.1"); r.Verdict != Verified || r.Method != MethodRDNS {
		t.Fatalf("%+v", r)
	}
	if r := verify(v, "Googlebot", "11.0.113.9"); r.Verdict != Spoofed {
		t.Fatalf("%+v", r)
	}
}

func BenchmarkVerify(b *testing.B) {
	srv := httptestFeed(b, feedJSON("66.249.64.0/27", "66.249.64.64/27", "2001:4860:4801:10::/64"))
	ops := []Operator{{Name: "google", Tokens: []string{"Googlebot"}, IPRanges: []string{srv}}}
	v, err := New(Config{Operators: ops})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	for v.Feeds()[0].Loaded == false {
		time.Sleep(time.Millisecond)
	}
	claims := v.Claims("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
	a := netip.MustParseAddr("66.249.64.70")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if v.Verify(ctx, claims, a).Verdict != Verified {
			b.Fatal("not verified")
		}
	}
}

// A reverse zone that does not answer proves nothing: with every feed of
// the operator loaded, the claim is spoofed; without feeds it is
// unverifiable, marked DNSFailed so the caller can refuse the allowances.
func TestFCrDNSErrorIsNoProof(t *testing.T) {
	dns := testdns.Start(t)
	const timeout = 200 * time.Millisecond
	dns.SetDelay(4 * timeout)
	srv := newFeedServer(t, feedJSON("66.249.64.0/27"))
	ops := []Operator{
		{Name: "google", Tokens: []string{"Googlebot"}, IPRanges: []string{srv.URL}, RDNS: []string{"googlebot.com"}},
		{Name: "yandex", Tokens: []string{"YandexBot"}, RDNS: []string{"yandex.ru"}},
	}
	v, _ := newTestVerifier(t, ops, func(c *Config) { c.Resolver = dns.Addr; c.DNSTimeout = timeout })
	waitFeeds(t, v, 1)
	if r := verify(v, "Googlebot", "11.0.113.1"); r.Verdict != Spoofed {
		t.Fatalf("feeds loaded, DNS silent: %+v", r)
	}
	if r := verify(v, "YandexBot", "11.0.113.1"); r.Verdict != Unverifiable || !r.DNSFailed {
		t.Fatalf("rDNS only, DNS silent: %+v", r)
	}
	// A header naming both waits one DNS timeout at most, not one each.
	start := time.Now()
	r := verify(v, "Googlebot YandexBot", "11.0.113.2")
	if d := time.Since(start); d > timeout+time.Second {
		t.Fatalf("two claims took %v with a %v timeout", d, timeout)
	}
	if r.Verdict != Spoofed {
		t.Fatalf("%+v", r)
	}
}

// A flood of new addresses against a silent resolver: the lookups pending
// stay at MaxPendingLookups, and the rest are answered at once.
func TestFCrDNSPendingBound(t *testing.T) {
	dns := testdns.Start(t)
	const timeout = 300 * time.Millisecond
	dns.SetDelay(2 * timeout)
	v, _ := newTestVerifier(t, googleish, func(c *Config) { c.Resolver = dns.Addr; c.DNSTimeout = timeout })
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for w := range 20 {
		wg.Go(func() {
			for i := range 100 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				a := netip.AddrFrom4([4]byte{198, 18, byte(w), byte(i)})
				if r := v.Verify(ctx, v.Claims("Googlebot"), a); r.Verdict != Unverifiable {
					t.Errorf("%s: %v", a, r.Verdict)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	v.callsMu.Lock()
	pending := len(v.calls)
	v.callsMu.Unlock()
	extra := runtime.NumGoroutine() - before
	t.Logf("2,000 new addresses in a burst: %d lookups pending, %d goroutines more than before", pending, extra)
	// Goroutines: one per pending lookup, the resolver's and the test DNS
	// server's for the queries in flight (at most one slot each), slack.
	if bound := MaxPendingLookups + 2*MaxConcurrentLookups + 50; pending > MaxPendingLookups || extra > bound {
		t.Fatalf("%d pending (bound %d), %d extra goroutines (bound %d)", pending, MaxPendingLookups, extra, bound)
	}
}

// TestClaimFloodFairness: a flood of claims (10,000 a second, from new
// addresses of 16 networks whose reverse zones are silent) does not starve
// the reverse-DNS checks of genuine crawlers arriving meanwhile: at least
// 95% of them verify at their first request. Goroutines and DNS queries
// stay within the stated bounds: each silent network costs
// PrefixFailures lookups, then is skipped.
func TestClaimFloodFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-second flood")
	}
	dns := testdns.Start(t)
	var genuine []netip.Addr
	for n, network := range []string{"66.249.66", "66.249.70", "66.249.72"} {
		for i := 1; i <= 25; i++ {
			a, name := fmt.Sprintf("%s.%d", network, i), fmt.Sprintf("crawl-%d-%d.googlebot.com", n, i)
			dns.PTR(a, name)
			dns.Host(name, a)
			genuine = append(genuine, netip.MustParseAddr(a))
		}
	}
	const floodNets = 16
	for j := range floodNets {
		dns.Drop(netip.MustParsePrefix(fmt.Sprintf("11.9.%d.0/24", j)))
	}
	const timeout = 300 * time.Millisecond
	v, _ := newTestVerifier(t, googleish, func(c *Config) { c.Resolver = dns.Addr; c.DNSTimeout = timeout })
	claims := v.Claims("Googlebot/2.1")

	base := runtime.NumGoroutine()
	ctx, stop := context.WithCancel(context.Background())
	var calls, peak atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	const workers = 600 // each at 1 claim per 60 ms: 10,000 a second
	for w := range workers {
		wg.Go(func() {
			tick := time.NewTicker(60 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				a := netip.AddrFrom4([4]byte{11, 9, byte((w + i) % floodNets), byte(w*7 + i)})
				v.Verify(ctx, claims, a)
				calls.Add(1)
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			if g := int64(runtime.NumGoroutine()); g > peak.Load() {
				peak.Store(g)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	time.Sleep(200 * time.Millisecond) // the flood is under way
	verified := 0
	var missed []string
	for i, a := range genuine {
		_ = i
		if r := v.Verify(context.Background(), claims, a); r.Verdict == Verified {
			verified++
		} else {
			missed = append(missed, a.String()+": "+r.Verdict.String())
		}
		time.Sleep(30 * time.Millisecond)
	}
	stop()
	wg.Wait()
	elapsed := time.Since(start)
	rate := float64(calls.Load()) / elapsed.Seconds()
	t.Logf("flood: %d claims in %v (%.0f/s); genuine crawlers verified at their first request: %d of %d; DNS queries dropped (silent zones): %d; goroutines: %d at the start, %d at the peak (%d workers)",
		calls.Load(), elapsed.Round(time.Millisecond), rate, verified, len(genuine), dns.Dropped(), base, peak.Load(), workers)
	if rate < 5000 { // about 9,700 measured; the race detector slows the workers
		t.Fatalf("the flood ran at %.0f claims a second: too slow to mean anything", rate)
	}
	if verified*100 < 95*len(genuine) {
		t.Fatalf("%d of %d genuine crawlers verified during the flood, want at least 95%%; missed: %v", verified, len(genuine), missed)
	}
	if d := dns.Dropped(); d > floodNets*PrefixFailures*2 {
		t.Fatalf("%d queries to silent zones, want at most %d (PrefixFailures lookups per network, a retry each)", d, floodNets*PrefixFailures*2)
	}
	if g := peak.Load() - int64(base); g > workers+MaxPendingLookups+ReservedLookups+16 {
		t.Fatalf("%d goroutines over the start, want at most the workers and the pending bound", g)
	}
}

// TestGoodNetworksOutliveFloods: a network where a crawler verified keeps
// its lane however many other networks' claims are checked after it (the
// good networks have a table of their own).
func TestGoodNetworksOutliveFloods(t *testing.T) {
	dns := testdns.Start(t)
	dns.PTR("66.249.66.1", "crawl-1.googlebot.com")
	dns.Host("crawl-1.googlebot.com", "66.249.66.1")
	v, _ := newTestVerifier(t, googleish, func(c *Config) { c.Resolver = dns.Addr })
	if r := verify(v, "Googlebot", "66.249.66.1"); r.Verdict != Verified {
		t.Fatal(r.Verdict)
	}
	// Claims from 2 × MaxTrackedPrefixes other networks (no PTR: answered
	// at once, spoofed).
	for i := range 2 * MaxTrackedPrefixes {
		a := netip.AddrFrom4([4]byte{11, byte(i >> 8), byte(i), 1})
		if r := verify(v, "Googlebot", a.String()); r.Verdict != Spoofed {
			t.Fatalf("%s: %v", a, r.Verdict)
		}
	}
	v.callsMu.Lock()
	until, ok := v.good.Peek(dnsPrefix(netip.MustParseAddr("66.249.66.1")))
	tracked := v.prefixes.Len()
	v.callsMu.Unlock()
	if !ok || until <= time.Now().UnixNano() {
		t.Fatal("the crawler's network lost its lane to a flood of other networks")
	}
	if tracked > MaxTrackedPrefixes {
		t.Fatalf("%d networks tracked, bound %d", tracked, MaxTrackedPrefixes)
	}
}

// While a feed of the operator has not loaded, an address without a PTR
// record (a resolver answering NXDOMAIN) is no proof either way: the claim
// is unverifiable, not spoofed (issue 33). With the feeds loaded, the same
// answer makes it spoofed (TestFeedThenRDNS).
func TestNoPTRWithoutFeedsIsNoProof(t *testing.T) {
	dns := testdns.Start(t) // knows no PTR record: NXDOMAIN
	ops := []Operator{{Name: "google", Tokens: []string{"Googlebot"}, IPRanges: []string{"http://127.0.0.1:1/never.json"}, RDNS: []string{"googlebot.com"}}}
	v, _ := newTestVerifier(t, ops, func(c *Config) { c.Resolver = dns.Addr })
	r := verify(v, "Googlebot", "66.249.66.9")
	if r.Verdict != Unverifiable || !r.DNSFailed {
		t.Fatalf("no PTR, feed not loaded: %+v, want unverifiable (DNSFailed)", r)
	}
	x := v.Explain(context.Background(), v.Claims("Googlebot"), netip.MustParseAddr("66.249.66.9"))
	if !strings.Contains(strings.Join(x.Steps, "; "), "no reverse name, and not every feed of google has loaded") {
		t.Errorf("explained as %q", x.Steps)
	}
	// A PTR under another domain is a definite answer: spoofed, loaded or not.
	dns.PTR("11.0.113.5", "host.attacker.example")
	if r := verify(v, "Googlebot", "11.0.113.5"); r.Verdict != Spoofed {
		t.Fatalf("a PTR outside googlebot.com: %+v", r)
	}
}
