// Package testorigin holds the upstreams that tests put behind the guard:
// handlers that serve a robots.txt (changeable, failing, redirecting) and
// record what they were asked.
package testorigin

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Status returns a handler that answers /robots.txt with f and every other
// path with "ok".
func Status(f http.HandlerFunc) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", f)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	return mux
}

// Redirects returns a /robots.txt handler that redirects n times (to
// /robots.txt?hop=i) before it serves final.
func Redirects(n int, final string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var hop int
		fmt.Sscanf(r.URL.Query().Get("hop"), "%d", &hop)
		if hop < n {
			http.Redirect(w, r, fmt.Sprintf("/robots.txt?hop=%d", hop+1), http.StatusMovedPermanently)
			return
		}
		io.WriteString(w, final)
	}
}

// Editable serves a robots.txt that tests can change, with an ETag and
// Last-Modified through http.ServeContent (which answers conditional
// requests with 304, as Caddy's file_server does), and records the
// requests it gets for /robots.txt. Other paths answer "ok".
type Editable struct {
	// Fail makes /robots.txt answer 503.
	Fail atomic.Bool
	// Served counts the 200 answers.
	Served atomic.Int32

	mu      sync.Mutex
	block   chan struct{}
	body    string
	ctype   string
	mod     time.Time
	fetches []*http.Request
}

// NewEditable returns an Editable serving body.
func NewEditable(body string) *Editable {
	return &Editable{body: body, mod: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Set replaces the body, a minute later than the last one.
func (s *Editable) Set(body string) {
	s.mu.Lock()
	s.body, s.mod = body, s.mod.Add(time.Minute)
	s.mu.Unlock()
}

// SetContentType sets the Content-Type of the answers (default text/plain).
func (s *Editable) SetContentType(ct string) {
	s.mu.Lock()
	s.ctype = ct
	s.mu.Unlock()
}

// Block makes /robots.txt requests wait until ch is closed; nil stops it.
func (s *Editable) Block(ch chan struct{}) {
	s.mu.Lock()
	s.block = ch
	s.mu.Unlock()
}

// ServeHTTP implements http.Handler.
func (s *Editable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/robots.txt" {
		io.WriteString(w, "ok")
		return
	}
	s.mu.Lock()
	body, mod, ctype, block := s.body, s.mod, s.ctype, s.block
	s.fetches = append(s.fetches, r)
	s.mu.Unlock()
	if block != nil {
		<-block
	}
	if s.Fail.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if ctype == "" {
		ctype = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("ETag", `"`+mod.Format("150405")+`"`)
	rw := &statusSpy{ResponseWriter: w}
	http.ServeContent(rw, r, "robots.txt", mod, strings.NewReader(body))
	if rw.code == http.StatusOK {
		s.Served.Add(1)
	}
}

// Count returns the number of /robots.txt requests so far.
func (s *Editable) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.fetches)
}

// Last returns the latest /robots.txt request.
func (s *Editable) Last() *http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches[len(s.fetches)-1]
}

// statusSpy records the status an answer got.
type statusSpy struct {
	http.ResponseWriter
	code int
}

func (s *statusSpy) WriteHeader(c int) { s.code = c; s.ResponseWriter.WriteHeader(c) }

func (s *statusSpy) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Sample is a robots.txt with a group that disallows everything, one with
// a Crawl-delay, and "*" with an Allow inside a Disallow (lines 2, 5, 6, 9,
// 10).
const Sample = `User-agent: GPTBot
Disallow: /

User-agent: SlowBot
Crawl-delay: 5
Disallow: /private/

User-agent: *
Disallow: /private/
Allow: /private/open
`

// WriteFile writes body to a robots.txt in a temporary directory of t and
// returns its path.
func WriteFile(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
