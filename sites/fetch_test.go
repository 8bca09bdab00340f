package sites

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/internal/testclock"
	"github.com/robotsguard/robotsguard/internal/testorigin"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestStatusMapping: RFC 9309 §2.3.1 read from the answer to the site's own
// robots.txt request. A bot is refused a path when the copy's rules deny
// it, or when the site is unreachable (the enforcer's on_unreachable
// default).
func TestStatusMapping(t *testing.T) {
	big := strings.Repeat("# padding\n", 52000) + "User-agent: *\nDisallow: /late/\n" // rule after 500 KiB
	tests := []struct {
		name    string
		robots  http.HandlerFunc
		path    string
		outcome Outcome
		refused bool
	}{
		{"2xx parsed", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "User-agent: *\nDisallow: /x\n") }, "/x", OK, true},
		{"404 allows all", http.NotFound, "/x", Unavailable, false},
		{"403 allows all", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) }, "/x", Unavailable, false},
		{"500 unreachable", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, "/x", Unreachable, true},
		{"503 unreachable", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }, "/x", Unreachable, true},
		{"429 unreachable", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) }, "/x", Unreachable, true},
		{"panic unreachable", func(w http.ResponseWriter, r *http.Request) { panic("boom") }, "/x", Unreachable, true},
		{"3 redirects followed", testorigin.Redirects(3, "User-agent: *\nDisallow: /x\n"), "/x", OK, true},
		{"5 redirects followed", testorigin.Redirects(5, "User-agent: *\nDisallow: /x\n"), "/x", OK, true},
		{"6 redirects: unavailable", testorigin.Redirects(6, "User-agent: *\nDisallow: /x\n"), "/x", Unavailable, false},
		{"redirect without Location", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(302) }, "/x", Unavailable, false},
		{"huge body truncated", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }, "/late/x", OK, false},
		{"garbage", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("\x00\xff<html>Disallow /x</html>\x89PNG"))
		}, "/x", OK, false},
		{"html page with rules", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "<html>\nUser-agent: *\nDisallow: /x\n</html>")
		}, "/x", HTML, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := get(newCache(testConfig(SelfSource())), "example.com", testorigin.Status(tt.robots))
			if st.Outcome != tt.outcome || (st.Unreachable || denies(st, tt.path)) != tt.refused {
				t.Fatalf("outcome %s, unreachable %v, denies %s %v; want %s, refused %v", st.Outcome, st.Unreachable, tt.path, denies(st, tt.path), tt.outcome, tt.refused)
			}
		})
	}
}

// TestFetchTimeout: a fetch that hangs makes a waiting request wait for
// the timeout only; later requests do not wait, and no second fetch runs
// at once.
func TestFetchTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int32
		cfg := testConfig(SelfSource())
		cfg.FetchTimeout = duration.Duration(2 * time.Second)
		c := newCache(cfg)
		origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			<-release // hangs, ignoring the context
		})
		start := time.Now()
		if st := get(c, "example.com", origin); !st.Unreachable {
			t.Fatalf("waiting request during a hanging fetch: %+v", st)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("waited %s, want the 2s timeout", d)
		}
		start = time.Now()
		for range 10 {
			c.Get(context.Background(), MakeKey("http", "example.com", 0), "example.com", 0, origin, false, "")
		}
		time.Sleep(5 * time.Minute) // fake time: a retry is due
		get(c, "example.com", origin)
		if time.Since(start) != 5*time.Minute {
			t.Fatal("requests waited for the hanging fetch")
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d fetches ran at once, want 1", n)
		}
		close(release)
		synctest.Wait()
	})
}

// TestRefresh: a copy is used for Refresh, then fetched again in the
// background while requests keep the old one; a failed refresh keeps the
// last good copy.
func TestRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		body, status := "User-agent: *\nDisallow: /old\n", 200
		set := func(b string, s int) { mu.Lock(); body, status = b, s; mu.Unlock() }
		var fetches atomic.Int32
		cfg := testConfig(SelfSource())
		cfg.Refresh = duration.Duration(time.Hour)
		c := newCache(cfg)
		origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
			fetches.Add(1)
			mu.Lock()
			defer mu.Unlock()
			w.WriteHeader(status)
			io.WriteString(w, body)
		})
		check := func(path string, want bool) {
			t.Helper()
			if got := denies(get(c, "example.com", origin), path); got != want {
				t.Fatalf("%s: denied %v, want %v", path, got, want)
			}
		}
		check("/old", true)
		set("User-agent: *\nDisallow: /new\n", 200)
		time.Sleep(59 * time.Minute)
		check("/old", true) // still cached
		time.Sleep(2 * time.Minute)
		check("/old", true) // stale copy served while the refresh runs
		synctest.Wait()
		check("/old", false)
		check("/new", true)
		// The origin fails: the last good copy is kept.
		set("", 500)
		time.Sleep(61 * time.Minute)
		check("/new", true)
		synctest.Wait()
		check("/new", true)
		check("/old", false)
		if n := fetches.Load(); n != 3 {
			t.Fatalf("%d fetches, want 3", n)
		}
	})
}

// TestSingleFlight: requests that wait for one site's first fetch share
// one fetch.
func TestSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		gate := make(chan struct{})
		c := newCache(testConfig(SelfSource()))
		origin := testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			<-gate
			io.WriteString(w, "User-agent: *\nDisallow: /x\n")
		})
		var wg sync.WaitGroup
		denied := make([]bool, 100)
		for i := range 100 {
			wg.Go(func() { denied[i] = denies(get(c, "example.com", origin), "/x") })
		}
		synctest.Wait() // all 100 requests wait on the one fetch
		close(gate)
		wg.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d fetches for 100 concurrent requests, want 1", n)
		}
		for i, d := range denied {
			if !d {
				t.Fatalf("request %d: not denied", i)
			}
		}
	})
}

// TestSources: a URL (redirects followed), a file and fixed bytes.
func TestSources(t *testing.T) {
	rules := "User-agent: *\nDisallow: /x\n"
	srv := httptest.NewServer(testorigin.Redirects(2, rules))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL + "/robots.txt")
	u404, _ := url.Parse(srv.URL + "/nothing")
	client := NewHTTPClient(nil, 5*time.Second)
	defer client.CloseIdleConnections()
	for name, src := range map[string]Source{
		"url with redirects": URLSource(u, client),
		"url 404":            URLSource(u404, client), // the chain handler serves every path
		"file":               FileSource(file),
		"bytes":              BytesSource([]byte(rules)),
	} {
		if st := get(newCache(testConfig(src)), "example.com", nil); !denies(st, "/x") {
			t.Errorf("%s: /x not denied (%s)", name, st.Outcome)
		}
	}
}

// TestURLSourceStatus: a URL source's answers read as RFC 9309 says.
func TestURLSourceStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/500":
			w.WriteHeader(500)
		case "/big":
			io.WriteString(w, strings.Repeat("x", 600000)+"\nUser-agent: *\nDisallow: /x\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	client := NewHTTPClient(nil, 5*time.Second)
	defer client.CloseIdleConnections()
	for path, refused := range map[string]bool{"/500": true, "/404": false, "/big": false} {
		u, _ := url.Parse(srv.URL + path)
		st := get(newCache(testConfig(URLSource(u, client))), "example.com", nil)
		if got := st.Unreachable || denies(st, "/x"); got != refused {
			t.Errorf("%s: refused %v, want %v", path, got, refused)
		}
	}
}

// TestVirtualFetchIsPrivate: the self-fetch carries its own headers, none
// of a client's, and its answer's headers go nowhere; its context is
// marked internal.
func TestVirtualFetchIsPrivate(t *testing.T) {
	var seen http.Header
	var internal bool
	origin := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		internal = IsInternal(r.Context())
		w.Header().Set("Set-Cookie", "secret=1")
		io.WriteString(w, "User-agent: *\nDisallow: /\n")
	})
	ctx := context.WithValue(context.Background(), http.ServerContextKey, nil)
	u := &url.URL{Scheme: "http", Host: "example.com", Path: "/robots.txt"}
	res, err := SelfSource().Fetch(ctx, Request{Site: u, URL: u, Origin: origin})
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("fetch: %v %d", err, res.StatusCode)
	}
	if seen.Get("Cookie") != "" || seen.Get("Authorization") != "" || !strings.Contains(seen.Get("User-Agent"), "robotsguard") {
		t.Fatalf("the fetch's headers: %v", seen)
	}
	if !internal {
		t.Fatal("fetch context not marked internal")
	}
	if IsInternal(ctx) {
		t.Fatal("the caller's context is marked internal")
	}
}

// TestGzipRobotsTxt: an upstream that always gzips robots.txt (whatever the
// request asked) is still read through the self-fetch; an encoding that
// cannot be decoded counts as unreachable instead of no rules.
func TestGzipRobotsTxt(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, "User-agent: *\nDisallow: /private/\n")
	zw.Close()
	st := get(newCache(testConfig(SelfSource())), "example.com", testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz.Bytes())
	}))
	if !denies(st, "/private/x") {
		t.Fatalf("gzipped robots.txt: /private/x allowed (%s)", st.Outcome)
	}
	st = get(newCache(testConfig(SelfSource())), "example.com", testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		w.Write([]byte{0x1b, 0x2f, 0x00})
	}))
	if !st.Unreachable {
		t.Fatalf("brotli robots.txt: %s, want unreachable", st.Outcome)
	}
}

// TestTricklingBodyMessage: a body that does not arrive before the fetch
// timeout is logged as such, not as a handler panic.
func TestTricklingBodyMessage(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	cfg := testConfig(SelfSource())
	cfg.FetchTimeout, cfg.Logger = duration.Duration(200*time.Millisecond), zap.New(core)
	get(newCache(cfg), "example.com", testorigin.Status(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\n")
		<-r.Context().Done()
		panic(http.ErrAbortHandler) // what reverse_proxy does when the copy is cut short
	}))
	testclock.WaitFor(t, func() bool { return logs.FilterMessage("robots_guard: robots.txt unreachable").Len() == 1 })
	l := logs.FilterMessage("robots_guard: robots.txt unreachable").All()[0]
	if msg := fmt.Sprint(l.ContextMap()["error"]); !strings.Contains(msg, "timed out while reading the robots.txt body") {
		t.Fatalf("error %q", msg)
	}
}
