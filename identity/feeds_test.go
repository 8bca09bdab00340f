package identity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testdns"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// feedServer serves one feed whose body, ETag and status a test changes.
type feedServer struct {
	*httptest.Server
	mu       sync.Mutex
	body     string
	etag     string
	status   int
	cc       string
	requests int
	notMod   int
}

func newFeedServer(t *testing.T, body string) *feedServer {
	s := &feedServer{body: body, etag: `"v1"`, status: 200}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests++
		if s.status != 200 {
			w.WriteHeader(s.status)
			return
		}
		if s.cc != "" {
			w.Header().Set("Cache-Control", s.cc)
		}
		if s.etag != "" {
			w.Header().Set("ETag", s.etag)
			if r.Header.Get("If-None-Match") == s.etag {
				s.notMod++
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, s.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *feedServer) set(body, etag string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.etag, s.status = body, etag, status
}

func (s *feedServer) counts() (requests, notModified int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.notMod
}

func feedJSON(prefixes ...string) string {
	var b strings.Builder
	b.WriteString(`{"creationTime":"2026-11-01T00:00:00","prefixes":[`)
	for i, p := range prefixes {
		if i > 0 {
			b.WriteString(",")
		}
		key := "ipv4Prefix"
		if strings.Contains(p, ":") {
			key = "ipv6Prefix"
		}
		fmt.Fprintf(&b, `{%q:%q}`, key, p)
	}
	b.WriteString("]}")
	return b.String()
}

// newTestVerifier builds a Verifier for ops with a logger the test reads.
func newTestVerifier(t *testing.T, ops []Operator, mod func(*Config)) (*Verifier, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	cfg := Config{Operators: ops, Logger: zap.New(core)}
	if mod != nil {
		mod(&cfg)
	}
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v, logs
}

// waitFeeds waits until n feeds are loaded.
func waitFeeds(t *testing.T, v *Verifier, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		loaded := 0
		for _, f := range v.Feeds() {
			if f.Loaded {
				loaded++
			}
		}
		if loaded >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d feeds loaded after 10s: %+v", loaded, n, v.Feeds())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func verify(v *Verifier, ua, addr string) Result {
	return v.Verify(context.Background(), v.Claims(ua), netip.MustParseAddr(addr))
}

func TestFeedLifecycle(t *testing.T) {
	srv := newFeedServer(t, feedJSON("11.0.2.0/27", "2a0f:db8:1::/64"))
	ops := []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{srv.URL + "/acme.json"}}}
	v, logs := newTestVerifier(t, ops, nil)
	if r := verify(v, "AcmeBot/1.0", "11.0.2.1"); r.Verdict != Unverifiable && r.Verdict != Verified {
		t.Fatalf("before the feed loads, a claim is unverifiable, got %v", r.Verdict)
	}
	waitFeeds(t, v, 1)
	for addr, want := range map[string]Verdict{
		"11.0.2.1": Verified, "11.0.2.31": Verified, "11.0.2.32": Spoofed,
		"2a0f:db8:1::9": Verified, "2a0f:db8:2::9": Spoofed, "::ffff:11.0.2.3": Verified,
	} {
		r := verify(v, "Mozilla/5.0 (compatible; AcmeBot/1.0; +https://acme.example/bot)", addr)
		if r.Verdict != want || r.Operator != "acme" {
			t.Errorf("%s: got %+v, want %v", addr, r, want)
		}
		if want == Verified && r.Method != MethodIPRange {
			t.Errorf("%s: method %v", addr, r.Method)
		}
	}
	if r := verify(v, "Mozilla/5.0 Chrome/120", "11.0.2.1"); r.Verdict != None {
		t.Errorf("no claim: %v", r.Verdict)
	}

	// Unchanged: a conditional request answered 304.
	if err := v.RefreshFeeds(context.Background()); err != nil {
		t.Fatal(err)
	}
	if req, nm := srv.counts(); req != 2 || nm != 1 {
		t.Fatalf("requests %d, 304s %d; want 2 and 1", req, nm)
	}

	// Garbage (an HTML error page with 200): the last good copy stays and a
	// warning names the URL.
	srv.set("<html>oops</html>", `"v2"`, 200)
	if err := v.RefreshFeeds(context.Background()); err == nil || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("err = %v", err)
	}
	if r := verify(v, "AcmeBot", "11.0.2.1"); r.Verdict != Verified {
		t.Fatalf("after a bad fetch: %v", r.Verdict)
	}
	if w := logs.FilterMessage("robots_guard: verify: feed not updated").FilterField(zap.String("feed", srv.URL+"/acme.json")); w.Len() != 1 {
		t.Fatalf("want one warning naming the feed, got %v", logs.All())
	}
	st := v.Feeds()[0]
	if !st.Loaded || st.LastError == "" || st.Prefixes != 2 {
		t.Fatalf("status %+v", st)
	}

	// 5xx: same.
	srv.set("", "", 503)
	if err := v.RefreshFeeds(context.Background()); err == nil || !strings.Contains(err.Error(), "status 503") {
		t.Fatalf("err = %v", err)
	}
	if r := verify(v, "AcmeBot", "11.0.2.1"); r.Verdict != Verified {
		t.Fatalf("after a 503: %v", r.Verdict)
	}

	// The feed grows: new ranges verify, old ones too.
	srv.set(feedJSON("11.0.2.0/27", "11.51.100.0/24"), `"v3"`, 200)
	if err := v.RefreshFeeds(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := verify(v, "AcmeBot", "11.51.100.200"); r.Verdict != Verified {
		t.Fatalf("grown feed: %v", r.Verdict)
	}
	if r := verify(v, "AcmeBot", "2a0f:db8:1::9"); r.Verdict != Spoofed {
		t.Fatalf("a prefix the feed dropped: %v", r.Verdict)
	}
	if st := v.Feeds()[0]; st.LastError != "" || st.Prefixes != 2 {
		t.Fatalf("status %+v", st)
	}
}

// A feed that has never loaded leaves its operator's claims unverifiable,
// never spoofed, and says so in the log.
func TestFeedDownAtStart(t *testing.T) {
	srv := newFeedServer(t, "")
	srv.set("", "", 500)
	ops := []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{srv.URL}}}
	v, logs := newTestVerifier(t, ops, nil)
	deadline := time.Now().Add(5 * time.Second)
	for logs.FilterMessage("robots_guard: verify: feed not updated").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no warning")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := verify(v, "AcmeBot", "11.0.113.5"); r.Verdict != Unverifiable {
		t.Fatalf("got %v, want unverifiable", r.Verdict)
	}
	x := v.Explain(context.Background(), v.Claims("AcmeBot"), netip.MustParseAddr("11.0.113.5"))
	if !strings.Contains(strings.Join(x.Steps, "\n"), "not every feed") {
		t.Fatalf("steps %q", x.Steps)
	}
}

// Two feeds for one operator: spoofed only when both are loaded.
func TestFeedPartlyLoaded(t *testing.T) {
	a := newFeedServer(t, feedJSON("11.0.2.0/24"))
	b := newFeedServer(t, "")
	b.set("", "", 500)
	ops := []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{a.URL, b.URL}}}
	v, _ := newTestVerifier(t, ops, nil)
	waitFeeds(t, v, 1)
	if r := verify(v, "AcmeBot", "11.0.113.5"); r.Verdict != Unverifiable {
		t.Fatalf("got %v", r.Verdict)
	}
	if r := verify(v, "AcmeBot", "11.0.2.5"); r.Verdict != Verified {
		t.Fatalf("got %v", r.Verdict)
	}
	b.set(feedJSON("11.51.100.0/24"), `"x"`, 200)
	if err := v.RefreshFeeds(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := verify(v, "AcmeBot", "11.0.113.5"); r.Verdict != Spoofed {
		t.Fatalf("got %v", r.Verdict)
	}
}

func TestFeedFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ranges.json")
	if err := os.WriteFile(p, []byte(feedJSON("11.0.2.0/24")), 0o644); err != nil {
		t.Fatal(err)
	}
	ops := []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{p}}}
	v, _ := newTestVerifier(t, ops, nil)
	waitFeeds(t, v, 1)
	if r := verify(v, "AcmeBot", "11.0.2.9"); r.Verdict != Verified {
		t.Fatalf("got %v", r.Verdict)
	}
	// Rewritten with other content (a later mtime): read again.
	if err := os.WriteFile(p, []byte(feedJSON("11.51.100.0/24", "11.0.113.0/24")), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	os.Chtimes(p, later, later)
	if err := v.RefreshFeeds(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := verify(v, "AcmeBot", "11.0.113.9"); r.Verdict != Verified {
		t.Fatalf("got %v", r.Verdict)
	}
	// Broken: kept.
	os.WriteFile(p, []byte("{"), 0o644)
	os.Chtimes(p, later.Add(time.Minute), later.Add(time.Minute))
	if err := v.RefreshFeeds(context.Background()); err == nil {
		t.Fatal("a broken file must fail")
	}
	if r := verify(v, "AcmeBot", "11.0.113.9"); r.Verdict != Verified {
		t.Fatalf("got %v", r.Verdict)
	}
	// Missing file at start: an error that names it.
	_, err := New(Config{Operators: []Operator{{Name: "x", Tokens: []string{"XBot"}, IPRanges: []string{"file:///etc/x.json"}}}})
	if err == nil || !strings.Contains(err.Error(), "ip_ranges") {
		t.Fatalf("err = %v", err)
	}
}

// The last good copy survives a restart without network.
func TestFeedStorage(t *testing.T) {
	dir := DirStorage(t.TempDir())
	srv := newFeedServer(t, feedJSON("11.0.2.0/24"))
	url := srv.URL + "/feed.json"
	ops := []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{url}}}
	v1, _ := newTestVerifier(t, ops, func(c *Config) { c.Storage = dir })
	waitFeeds(t, v1, 1)
	v1.Close()
	srv.Close() // the network is gone

	v2, logs := newTestVerifier(t, ops, func(c *Config) { c.Storage = dir })
	waitFeeds(t, v2, 1)
	if r := verify(v2, "AcmeBot", "11.0.2.77"); r.Verdict != Verified {
		t.Fatalf("got %v", r.Verdict)
	}
	if st := v2.Feeds()[0]; !st.FromStorage {
		t.Fatalf("status %+v", st)
	}
	if logs.FilterMessage("robots_guard: verify: feed restored from storage").Len() != 1 {
		t.Fatalf("logs %v", logs.All())
	}
	// The copy was fetched moments ago: the restart does not fetch again
	// before the refresh interval.
	if n := logs.FilterMessage("robots_guard: verify: feed not updated").Len(); n != 0 {
		t.Fatalf("%d fetch attempts after the restart", n)
	}
	matches, _ := filepath.Glob(filepath.Join(string(dir), "robots_guard", "feeds", "*.json"))
	if len(matches) != 1 {
		t.Fatalf("stored files %v", matches)
	}
	// A 304 makes the stored copy current, so that the next restart does
	// not fetch again before the refresh is due.
	srv2 := newFeedServer(t, feedJSON("11.0.2.0/24"))
	ops2 := []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{srv2.URL}}}
	dir2 := DirStorage(t.TempDir())
	clk := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	v3, _ := newTestVerifier(t, ops2, func(c *Config) { c.Storage = dir2; c.Now = func() time.Time { return clk } })
	waitFeeds(t, v3, 1)
	clk = clk.Add(30 * time.Hour)
	if err := v3.RefreshFeeds(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, nm := srv2.counts(); nm != 1 {
		t.Fatalf("304s: %d", nm)
	}
	m2, _ := filepath.Glob(filepath.Join(string(dir2), "robots_guard", "feeds", "*.json"))
	b, _ := os.ReadFile(m2[0])
	if !strings.Contains(string(b), `"fetched":"2026-11-02T06:00:00Z"`) {
		t.Fatalf("stored copy after a 304: %s", b)
	}
	// A damaged stored copy is ignored with a warning.
	os.WriteFile(matches[0], []byte("garbage"), 0o644)
	_, logs3 := newTestVerifier(t, ops, func(c *Config) { c.Storage = dir })
	deadline := time.Now().Add(5 * time.Second)
	for logs3.FilterMessage("robots_guard: verify: ignoring a damaged stored copy of a feed").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("logs %v", logs3.All())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFeedTooLarge(t *testing.T) {
	srv := newFeedServer(t, string(bytes.Repeat([]byte(" "), MaxFeedBytes+10)))
	ops := []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{srv.URL}}}
	v, _ := newTestVerifier(t, ops, nil)
	err := v.RefreshFeeds(context.Background())
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v", err)
	}
}

func TestNextRefresh(t *testing.T) {
	v := &Verifier{cfg: Config{Refresh: 24 * time.Hour}, minRefresh: MinRefresh}
	for cc, want := range map[string]time.Duration{
		"":                          24 * time.Hour,
		"max-age=300":               time.Hour, // never more often than hourly
		"public, max-age=7200":      2 * time.Hour,
		"max-age=604800":            24 * time.Hour, // the configured refresh is the longest
		"no-cache":                  24 * time.Hour,
		`max-age="10800", must-rev`: 3 * time.Hour,
	} {
		if got := v.nextRefresh(parseMaxAge(cc)); got != want {
			t.Errorf("%q: %v, want %v", cc, got, want)
		}
	}
}

// httptestFeed serves body at a loopback URL until the benchmark ends.
func httptestFeed(tb testing.TB, body string) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) }))
	tb.Cleanup(s.Close)
	return s.URL
}

// TestNotGlobalIsNeverLookedUp: a claim from an address that is not
// globally reachable is Unverifiable (NotGlobal) at once, with no DNS query
// and no feed fetch, unless the operator's own loaded feeds list the
// address (TestCustomOperatorPrivateRanges).
func TestNotGlobalIsNeverLookedUp(t *testing.T) {
	dns := testdns.Start(t)
	dns.PTR("127.0.0.1", "crawl-1.googlebot.com")
	dns.Host("crawl-1.googlebot.com", "127.0.0.1")
	srv := newFeedServer(t, feedJSON("10.0.0.0/8"))
	ops := []Operator{
		{Name: "google", Tokens: []string{"Googlebot"}, RDNS: []string{"googlebot.com"}},
		{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{srv.URL}},
	}
	v, _ := newTestVerifier(t, ops, func(c *Config) { c.Resolver = dns.Addr })
	waitFeeds(t, v, 1)
	for _, c := range []struct{ ua, addr string }{
		{"Googlebot/2.1", "127.0.0.1"}, {"Googlebot/2.1", "192.168.1.9"}, {"Googlebot/2.1", "::1"},
		{"Googlebot/2.1", "192.0.2.7"}, {"AcmeBot", "172.16.0.1"}, {"AcmeBot", "fd00::1"},
	} {
		x := v.Explain(context.Background(), v.Claims(c.ua), netip.MustParseAddr(c.addr))
		if x.Verdict != Unverifiable || !x.NotGlobal || !strings.Contains(strings.Join(x.Steps, " "), "not globally reachable") {
			t.Errorf("%s from %s: %+v %q", c.ua, c.addr, x.Result, x.Steps)
		}
	}
	if r := verify(v, "AcmeBot", "10.1.2.3"); r.Verdict != Verified {
		t.Errorf("AcmeBot from 10.1.2.3, which its own feed lists: %+v", r)
	}
	if n := dns.Queries(); n != 0 {
		t.Fatalf("%d DNS queries for addresses that are not globally reachable", n)
	}
}

// TestFeedsOnDemand: with OnDemand, nothing is fetched until a claim from
// a globally reachable address needs the operator's feed; then it loads
// and refreshes as usual. Claims from elsewhere start nothing.
func TestFeedsOnDemand(t *testing.T) {
	srvA, srvB := newFeedServer(t, feedJSON("11.0.2.0/24")), newFeedServer(t, feedJSON("11.0.3.0/24"))
	ops := []Operator{
		{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{srvA.URL}},
		{Name: "bolt", Tokens: []string{"BoltBot"}, IPRanges: []string{srvB.URL}},
	}
	v, _ := newTestVerifier(t, ops, func(c *Config) { c.OnDemand = true })
	for _, f := range v.Feeds() {
		if !f.Idle || f.Loaded {
			t.Fatalf("before any claim: %+v", f)
		}
	}
	if r := verify(v, "AcmeBot", "127.0.0.1"); r.Verdict != Unverifiable {
		t.Fatalf("a loopback claim: %v", r.Verdict)
	}
	// The first claim starts the fetch; it may load before the check runs.
	if r := verify(v, "AcmeBot", "11.0.2.9"); r.Verdict != Unverifiable && r.Verdict != Verified {
		t.Fatalf("the first claim: %v", r.Verdict)
	}
	waitFeeds(t, v, 1)
	if r := verify(v, "AcmeBot", "11.0.2.9"); r.Verdict != Verified {
		t.Fatalf("after the feed loaded: %v", r.Verdict)
	}
	if a, _ := srvA.counts(); a != 1 {
		t.Fatalf("acme's feed fetched %d times, want 1", a)
	}
	if b, _ := srvB.counts(); b != 0 {
		t.Fatalf("bolt's feed fetched %d times with no claim of bolt's", b)
	}
	for _, f := range v.Feeds() {
		if f.Idle != (f.Source == srvB.URL) {
			t.Fatalf("idle: %+v", f)
		}
	}
}

// TestCustomOperatorPrivateRanges: an operator of the configuration
// verifies every address its own feeds list, private and loopback ranges
// included (a crawler inside the network); a built-in operator, as it
// ships, never looks anything up for such an address.
func TestCustomOperatorPrivateRanges(t *testing.T) {
	srv := newFeedServer(t, feedJSON("10.1.0.0/16", "127.0.0.0/8", "fd00:1::/32"))
	google := Builtin()[0]
	ops := []Operator{
		{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{srv.URL}},
		google,
	}
	v, _ := newTestVerifier(t, ops, func(c *Config) { c.OnDemand = true })
	verify(v, "AcmeBot", "10.1.2.3") // a private claim starts a custom operator's feed
	waitFeeds(t, v, 1)
	for _, tc := range []struct {
		ua, addr string
		want     Verdict
	}{
		{"AcmeBot/1.0", "10.1.2.3", Verified},
		{"AcmeBot/1.0", "127.0.0.1", Verified},
		{"AcmeBot/1.0", "fd00:1::5", Verified},
		{"AcmeBot/1.0", "10.2.0.1", Unverifiable}, // private, not listed
		{"AcmeBot/1.0", "192.168.1.1", Unverifiable},
		{"Googlebot/2.1", "10.1.2.3", Unverifiable}, // built-in: nothing looked up
	} {
		r := verify(v, tc.ua, tc.addr)
		if r.Verdict != tc.want {
			t.Errorf("%s from %s: %v, want %v", tc.ua, tc.addr, r.Verdict, tc.want)
		}
		if tc.want == Unverifiable && !r.NotGlobal {
			t.Errorf("%s from %s: NotGlobal not set", tc.ua, tc.addr)
		}
	}
	for _, f := range v.Feeds() {
		if f.Source != srv.URL && !f.Idle {
			t.Errorf("a built-in feed was started by a private address: %+v", f)
		}
	}
}

// TestFeedEmptied: a refresh that lists no prefixes, where the copy in
// force lists some, is believed at the second fetch only (JAFAR allows an
// empty feed; a broken publisher sends one too, which would make every
// claim spoofed until the next refresh).
func TestFeedEmptied(t *testing.T) {
	srv := newFeedServer(t, feedJSON("11.0.2.0/27"))
	ops := []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{srv.URL}}}
	v, _ := newTestVerifier(t, ops, func(c *Config) { c.NoBackground = true })
	ctx := context.Background()
	if err := v.RefreshFeeds(ctx); err != nil {
		t.Fatal(err)
	}
	srv.set(`{"creationTime":"2026-11-27T00:00:00Z","prefixes":[]}`, `"v2"`, 200)
	if err := v.RefreshFeeds(ctx); err == nil || !strings.Contains(err.Error(), "lists no prefixes where the copy in force lists 1") {
		t.Fatalf("first empty fetch: %v", err)
	}
	if r := verify(v, "AcmeBot/1.0", "11.0.2.1"); r.Verdict != Verified {
		t.Fatalf("after one empty fetch: %v", r.Verdict)
	}
	if err := v.RefreshFeeds(ctx); err != nil {
		t.Fatalf("second empty fetch: %v", err)
	}
	if r := verify(v, "AcmeBot/1.0", "11.0.2.1"); r.Verdict != Spoofed {
		t.Fatalf("after two empty fetches: %v", r.Verdict)
	}
	if f := v.Feeds()[0]; !f.Loaded || f.Prefixes != 0 {
		t.Fatalf("status %+v", f)
	}
}

// TestCheckFeedType: JAFAR §3.2's versions (major.minor in the media
// type's version parameter).
func TestCheckFeedType(t *testing.T) {
	for ct, ok := range map[string]bool{
		"application/jafar+json":                      true, // the newest this reader knows
		"application/jafar+json; version=1.0":         true,
		"Application/JAFAR+json; Version=1.17":        true,
		"application/jafar+json; version=1":           true,
		"application/jafar+json; version=\"1.2\"":     true,
		"application/json":                            true, // Google's feeds
		"text/plain; charset=utf-8":                   true,
		"":                                            true,
		"application/jafar+json; version=2.0":         false,
		"application/jafar+json; version=10.1":        false,
		"application/jafar+json; version=2.0; x":      false, // parameters that do not parse
		"application/jafar+json; version=one":         false,
		"application/jafar+json; version=1.x":         false,
		"application/jafar+json; version=-1.0":        false,
		"application/jafar+json; version=2.0; q=1; q": false,
	} {
		if err := checkFeedType(ct); (err == nil) != ok || err != nil && !errors.Is(err, errFeedVersion) {
			t.Errorf("%q: %v", ct, err)
		}
	}
}

// slowFeed serves body after delay (or, with status, fails after it).
func slowFeed(t *testing.T, body string, delay time.Duration, status int) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		if status != 200 {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestFeedWait: a crawler's claim made while its operator's feed has never
// loaded waits for it (FeedWait), so the first request after a start is
// judged by what the feed says, not refused by "*" meanwhile; past the
// bound it is unverifiable; a feed whose first fetch failed is not waited
// for again; and a stored copy is read at start, so a restart waits for
// nothing.
func TestFeedWait(t *testing.T) {
	const listed = "11.0.2.9"
	body := feedJSON("11.0.2.0/24")
	ops := func(url string) []Operator {
		return []Operator{{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{url}}}
	}
	timed := func(v *Verifier) (Verdict, time.Duration) {
		start := time.Now()
		r := verify(v, "AcmeBot/1.0", listed)
		return r.Verdict, time.Since(start)
	}
	for _, onDemand := range []bool{true, false} {
		v, _ := newTestVerifier(t, ops(slowFeed(t, body, 300*time.Millisecond, 200).URL), func(c *Config) { c.OnDemand = onDemand })
		if got, took := timed(v); got != Verified || took < 200*time.Millisecond {
			t.Errorf("on demand %v: the first claim, feed 300 ms late: %v after %s, want verified after waiting", onDemand, got, took)
		}
	}

	v, _ := newTestVerifier(t, ops(slowFeed(t, body, 2*time.Second, 200).URL), func(c *Config) { c.OnDemand, c.FeedWait = true, 100*time.Millisecond })
	if got, took := timed(v); got != Unverifiable || took > time.Second {
		t.Errorf("feed 2 s late, FeedWait 100 ms: %v after %s, want unverifiable after the bound", got, took)
	}

	// One bound for the call, however many operators a header claims.
	two := []Operator{
		{Name: "acme", Tokens: []string{"AcmeBot"}, IPRanges: []string{slowFeed(t, body, 2*time.Second, 200).URL}},
		{Name: "bolt", Tokens: []string{"BoltBot"}, IPRanges: []string{slowFeed(t, body, 2*time.Second, 200).URL + "/b"}},
	}
	v, _ = newTestVerifier(t, two, func(c *Config) { c.OnDemand, c.FeedWait = true, 150*time.Millisecond })
	start := time.Now()
	if r := verify(v, "AcmeBot/1.0 BoltBot/1.0", listed); r.Verdict != Unverifiable || time.Since(start) > 280*time.Millisecond {
		t.Errorf("a header claiming two operators whose feeds are late: %v after %s, want unverifiable within one FeedWait (150 ms)", r.Verdict, time.Since(start))
	}

	v, _ = newTestVerifier(t, ops(slowFeed(t, body, 100*time.Millisecond, 500).URL), func(c *Config) { c.OnDemand = true })
	if got, _ := timed(v); got != Unverifiable {
		t.Errorf("a feed that fails: %v, want unverifiable", got)
	}
	if got, took := timed(v); got != Unverifiable || took > 50*time.Millisecond {
		t.Errorf("after the failed first fetch: %v after %s, want unverifiable at once", got, took)
	}

	// A restart: the copy the first verifier stored is read at start.
	dir := DirStorage(t.TempDir())
	srv := newFeedServer(t, body)
	v1, _ := newTestVerifier(t, ops(srv.URL+"/acme.json"), func(c *Config) { c.Storage = dir })
	waitFeeds(t, v1, 1)
	v1.Close()
	srv.set("", "", http.StatusServiceUnavailable) // the network is no help now
	before, _ := srv.counts()
	v2, _ := newTestVerifier(t, ops(srv.URL+"/acme.json"), func(c *Config) { c.Storage, c.OnDemand = dir, true })
	waitFeeds(t, v2, 1) // read at start, before any claim
	if st := v2.Feeds()[0]; !st.FromStorage {
		t.Errorf("the feed in force at start is not the stored copy: %+v", st)
	}
	if after, _ := srv.counts(); after != before {
		t.Errorf("%d fetches at start, on demand", after-before)
	}
	if got, took := timed(v2); got != Verified || took > time.Second {
		t.Errorf("after a restart with a stored copy: %v after %s, want verified at once", got, took)
	}
}
