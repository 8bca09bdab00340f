package integration_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The HAProxy recipe's Lua action (docs/proxies/robots_guard.lua) against
// decision services that misbehave, and clients that send a Host header
// the site and the service could read differently. The services here are
// raw TCP servers (the bytes on the wire are the test's), and no test
// needs the built Caddy.

// startHAProxyLua runs HAProxy with docs/proxies/haproxy.cfg and
// robots_guard.lua, asking the service at checkURL with
// ROBOTS_GUARD_CHECK_TIMEOUT_MS set to timeoutMS (0: the recipe's
// default), and returns its address.
func startHAProxyLua(t *testing.T, site, checkURL string, timeoutMS int) string {
	t.Helper()
	bin := daemon(t, "haproxy")
	port := freePort(t)
	lua, err := filepath.Abs(recipes + "robots_guard.lua")
	if err != nil {
		t.Fatal(err)
	}
	cfg := recipe(t, "haproxy.cfg", site, 0, port)
	cfg = strings.Replace(cfg, "/etc/haproxy/robots_guard.lua", lua, 1)
	cfg = strings.Replace(cfg, fmt.Sprintf("bind :%d", port), fmt.Sprintf("bind 127.0.0.1:%d", port), 1)
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"ROBOTS_GUARD_CHECK_URL=" + checkURL}
	if timeoutMS > 0 {
		env = append(env, fmt.Sprintf("ROBOTS_GUARD_CHECK_TIMEOUT_MS=%d", timeoutMS))
	}
	process(t, bin, env, "-db", "-f", file)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitListening(t, addr)
	return addr
}

// fakeService is a decision service on a loopback port that reads each
// question's head, keeps it, and hands the connection to answer (which
// writes what it likes; the connection is closed after it).
type fakeService struct {
	url       string
	mu        sync.Mutex
	questions []string
}

func startFakeService(t *testing.T, answer func(c net.Conn)) *fakeService {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeService{url: "http://" + l.Addr().String() + "/"}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(done); l.Close(); wg.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				go func() { <-done; c.Close() }()
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				head, err := readHead(bufio.NewReader(c))
				if err != nil {
					return
				}
				s.mu.Lock()
				s.questions = append(s.questions, head)
				s.mu.Unlock()
				answer(c)
			}()
		}
	}()
	return s
}

// readHead reads a request's head, up to the empty line.
func readHead(r *bufio.Reader) (string, error) {
	var head strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return head.String(), err
		}
		head.WriteString(line)
		if line == "\r\n" || line == "\n" {
			return head.String(), nil
		}
	}
}

func (s *fakeService) asked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.questions...)
}

// cannedService answers every question with the bytes of answer and
// closes the connection.
func cannedService(t *testing.T, answer string) *fakeService {
	return startFakeService(t, func(c net.Conn) { io.WriteString(c, answer) })
}

// countingSite is the site behind HAProxy: a page for every path, and a
// count of the requests that reached it.
type countingSite struct {
	addr  string
	mu    sync.Mutex
	hosts []string
}

func startCountingSite(t *testing.T) *countingSite {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &countingSite{addr: l.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hosts = append(s.hosts, r.Host)
		s.mu.Unlock()
		fmt.Fprintf(w, "page %s", r.URL.Path)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *countingSite) reached() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hosts...)
}

// rawAsk sends req, as written, to addr and reads the answer.
func rawAsk(t *testing.T, addr, req string) answer {
	t.Helper()
	c := dial(t, addr)
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: no answer: %v", req, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

const noAnswer = "robots_guard: the decision service did not answer"

// serviceYes is the decision service's answer that lets a request pass.
const serviceYes = "HTTP/1.1 200 OK\r\nX-Robots-Guard-Status: 200\r\nContent-Length: 0\r\n\r\n"

// startHAProxyLuaCanned runs HAProxy with the recipe's action (a
// 1000 ms timeout) before a counting site, asking a service that answers
// every question with answer; it returns the site, the service and
// HAProxy's address.
func startHAProxyLuaCanned(t *testing.T, answer string) (*countingSite, *fakeService, string) {
	t.Helper()
	site := startCountingSite(t)
	svc := cannedService(t, answer)
	return site, svc, startHAProxyLua(t, site.addr, svc.url, 1000)
}

// TestHAProxyLuaServiceTimeout: a decision service that takes 10 s to
// answer costs the client the configured timeout, then 503 with the
// recipe's body, and is asked once. (HAProxy's core.httpclient, which the
// recipe used before, retried the question 3 times, each with the whole
// timeout, and relayed its own 504: 504 after 2 s here, after 8 s with the
// default 2000 ms.)
func TestHAProxyLuaServiceTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs HAProxy")
	}
	for _, tc := range []struct {
		name      string
		timeoutMS int
		min, max  time.Duration
	}{
		{"500ms", 500, 400 * time.Millisecond, 2 * time.Second},
		{"2s", 2000, 1900 * time.Millisecond, 3500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := startCountingSite(t)
			slow := startFakeService(t, func(c net.Conn) {
				// Answers after 10 s, or when the question is given
				// up on (the read sees the close), or at the test's end.
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				c.Read(make([]byte, 1))
				io.WriteString(c, serviceYes)
			})
			addr := startHAProxyLua(t, site.addr, slow.url, tc.timeoutMS)
			p := proxyClient{t: t, addr: addr, c: &http.Client{Timeout: 15 * time.Second}}
			start := time.Now()
			a := p.get("/a", browserUA, "198.51.100.1")
			took := time.Since(start)
			t.Logf("timeout %d ms (0: default): %d after %v", tc.timeoutMS, a.status, took.Round(time.Millisecond))
			a.check(t, "a request while the service hangs", 503, noAnswer)
			if got := a.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", got)
			}
			if took < tc.min || took >= tc.max {
				t.Errorf("the 503 came after %v, want %v to %v", took, tc.min, tc.max)
			}
			if n := len(slow.asked()); n != 1 {
				t.Errorf("the service was asked %d times, want once", n)
			}
			if got := site.reached(); len(got) != 0 {
				t.Errorf("the site was reached: %q", got)
			}
		})
	}
}

// TestHAProxyLuaServiceGarbage: whatever is not the service's own answer
// (bytes that are not HTTP, a closed connection, a status the service
// never gives, an answer without X-Robots-Guard-Status) is 503 with the
// recipe's body, never relayed. The old recipe answered 502 (HAProxy's
// page) to the first two, and relayed the 500, the 302 and the 403 as
// they were. The service's own refusals still reach the client as
// written, chunked or not, and so do its licence refusals (401, 402, 503
// with WWW-Authenticate and Link), while a 503 without
// X-Robots-Guard-Status is the recipe's; the Link of the service's yes
// reaches the client with the site's answer.
func TestHAProxyLuaServiceGarbage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs HAProxy")
	}
	for _, tc := range []struct {
		name    string
		answer  string
		status  int
		body    string
		headers []string // name, value pairs the client must get
	}{
		{"not HTTP", "garbage\r\n\r\n", 503, noAnswer, nil},
		{"closed without a byte", "", 503, noAnswer, nil},
		{"cut short", "HTTP/1.1 403 Forbidden\r\nX-Robots-Guard-Status: 403\r\nContent-Length: 100\r\n\r\nshort", 503, noAnswer, nil},
		{"500", "HTTP/1.1 500 Internal Server Error\r\nX-Robots-Guard-Status: 500\r\nContent-Length: 4\r\n\r\noops", 503, noAnswer, nil},
		{"302", "HTTP/1.1 302 Found\r\nLocation: http://elsewhere.test/\r\nContent-Length: 0\r\n\r\n", 503, noAnswer, nil},
		{"403 from another server", "HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nforbidden", 503, noAnswer, nil},
		{"200 from another server", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 503, noAnswer, nil},
		{"503 from another server", "HTTP/1.1 503 Service Unavailable\r\nWWW-Authenticate: Basic\r\nContent-Length: 4\r\n\r\nbusy", 503, noAnswer, nil},
		// The service's own answers, for contrast.
		{"the service's yes", serviceYes, 200, "page /a", nil},
		{"the service's 429", "HTTP/1.1 429 Too Many Requests\r\nX-Robots-Guard-Status: 429\r\nRetry-After: 7\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nslow down", 429, "slow down",
			[]string{"Retry-After", "7", "X-Robots-Guard-Status", "429"}},
		{"the service's yes with a licence's Link", "HTTP/1.1 200 OK\r\nX-Robots-Guard-Status: 200\r\nLink: <http://x.test/l.xml>; rel=\"license\"\r\nContent-Length: 0\r\n\r\n", 200, "page /a",
			[]string{"Link", `<http://x.test/l.xml>; rel="license"`}},
		{"the service's 402", "HTTP/1.1 402 Payment Required\r\nX-Robots-Guard-Status: 402\r\nWWW-Authenticate: License error=\"invalid_request\", error_description=\"Access to this resource requires a valid license\", authorization_uri=\"http://ls.test/token\"\r\nLink: <http://x.test/l.xml>; rel=\"license\"\r\nContent-Length: 4\r\n\r\npay!", 402, "pay!",
			[]string{"WWW-Authenticate", `License error="invalid_request", error_description="Access to this resource requires a valid license", authorization_uri="http://ls.test/token"`, "Link", `<http://x.test/l.xml>; rel="license"`, "X-Robots-Guard-Status", "402"}},
		{"the service's 503", "HTTP/1.1 503 Service Unavailable\r\nX-Robots-Guard-Status: 503\r\nWWW-Authenticate: License error=\"server_error\"\r\nContent-Length: 11\r\n\r\nunavailable", 503, "unavailable",
			[]string{"WWW-Authenticate", `License error="server_error"`}},
		{"the service's chunked 403", "HTTP/1.1 403 Forbidden\r\nX-Robots-Guard-Status: 403\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nDisal\r\n9\r\nlowed by \r\n9\r\nrobots.tx\r\n1\r\nt\r\n0\r\n\r\n", 403, "Disallowed by robots.txt",
			[]string{"X-Robots-Guard-Status", "403"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, svc, addr := startHAProxyLuaCanned(t, tc.answer)
			p := proxyClient{t: t, addr: addr, c: &http.Client{Timeout: 10 * time.Second}}
			start := time.Now()
			a := p.get("/a", "FooBot/1.0", "198.51.100.2")
			t.Logf("%d %q after %v", a.status, a.body, time.Since(start).Round(time.Millisecond))
			a.check(t, tc.name, tc.status, tc.body)
			for i := 0; i+1 < len(tc.headers); i += 2 {
				if got := a.header.Get(tc.headers[i]); got != tc.headers[i+1] {
					t.Errorf("%s: %s %q, want %q", tc.name, tc.headers[i], got, tc.headers[i+1])
				}
			}
			if tc.status == 503 && strings.Contains(a.body, "page /a") {
				t.Errorf("%s: the site was served", tc.name)
			}
			if n := len(svc.asked()); n != 1 {
				t.Errorf("%s: the service was asked %d times, want once", tc.name, n)
			}
		})
	}
}

// TestHAProxyLuaHostList: a Host header that is a list, or that is sent
// twice, is refused with 400 and reaches neither the service nor the
// site: the service would judge one host (the old recipe's req_hdr gave
// it the last of the list, open.example.com) while the site serves
// another (the whole header, its default host). HAProxy 2.6 itself
// refuses two different Host lines, and merges two equal ones; the
// action refuses a list (200 from the site before). A single Host
// reaches the service whole, with the scheme of the connection (the old
// recipe wrote X-Forwarded-Proto https for every request: txn.sf gives
// ssl_fc as the string "0", which Lua takes for true).
func TestHAProxyLuaHostList(t *testing.T) {
	if testing.Short() {
		t.Skip("runs HAProxy")
	}
	site, svc, addr := startHAProxyLuaCanned(t, serviceYes)

	for _, req := range []string{
		"GET /a HTTP/1.1\r\nHost: example.com,open.example.com\r\nUser-Agent: FooBot/1.0\r\nConnection: close\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: example.com, open.example.com\r\nUser-Agent: FooBot/1.0\r\nConnection: close\r\n\r\n",
		"GET /a HTTP/1.0\r\nHost: example.com,open.example.com\r\nUser-Agent: FooBot/1.0\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: ,open.example.com\r\nUser-Agent: FooBot/1.0\r\nConnection: close\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: example.com\r\nHost: open.example.com\r\nUser-Agent: FooBot/1.0\r\nConnection: close\r\n\r\n",
	} {
		a := rawAsk(t, addr, req)
		if a.status != 400 {
			t.Errorf("%q: %d %q, want 400", req, a.status, a.body)
			continue
		}
		if strings.Contains(req, ",") {
			// The action's own answer (HAProxy lets a list through).
			if !strings.Contains(a.body, "Host header") || a.header.Get("Cache-Control") != "no-store" ||
				!strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
				t.Errorf("%q: 400 %q with %v, want the action's plain-text answer, not stored", req, a.body, a.header)
			}
		}
	}
	if got := site.reached(); len(got) != 0 {
		t.Errorf("the site was reached with Host %q", got)
	}
	if got := svc.asked(); len(got) != 0 {
		t.Errorf("the service was asked %d times: %q", len(got), got)
	}

	// One Host: judged and served as that host.
	a := rawAsk(t, addr, "GET /a HTTP/1.1\r\nHost: example.com:8443\r\nUser-Agent: FooBot/1.0\r\nConnection: close\r\n\r\n")
	a.check(t, "one Host", 200, "page /a")
	if got := site.reached(); len(got) != 1 || got[0] != "example.com:8443" {
		t.Errorf("the site got Host %q, want example.com:8443 once", got)
	}
	q := svc.asked()
	if len(q) != 1 {
		t.Fatalf("the service was asked %d times, want once", len(q))
	}
	head := strings.ToLower(q[0])
	for _, want := range []string{"x-forwarded-host: example.com:8443\r\n", "x-forwarded-proto: http\r\n", "x-forwarded-uri: /a\r\n", "user-agent: foobot/1.0\r\n"} {
		if !strings.Contains(head, want) {
			t.Errorf("the question lacks %q:\n%s", want, q[0])
		}
	}
}

// TestHAProxyLuaAuthorization: the action passes the client's
// Authorization to the service only with the License scheme (an RSL
// licence token, all the service reads of it): a site's own credentials
// never reach the service.
func TestHAProxyLuaAuthorization(t *testing.T) {
	if testing.Short() {
		t.Skip("runs HAProxy")
	}
	_, svc, addr := startHAProxyLuaCanned(t, serviceYes)
	for _, auth := range []string{"Basic dXNlcjpwYXNz", "License abc.def.ghi", "license abc.def.ghi"} {
		rawAsk(t, addr, "GET /a HTTP/1.1\r\nHost: example.com\r\nUser-Agent: FooBot/1.0\r\nAuthorization: "+auth+"\r\nConnection: close\r\n\r\n").
			check(t, auth, 200, "page /a")
	}
	q := svc.asked()
	if len(q) != 3 {
		t.Fatalf("the service was asked %d times, want 3", len(q))
	}
	for i, want := range []string{"", "authorization: License abc.def.ghi\r\n", "authorization: license abc.def.ghi\r\n"} {
		got := strings.Contains(strings.ToLower(q[i]), "authorization:")
		if want == "" && got || want != "" && !strings.Contains(q[i], want) {
			t.Errorf("question %d: want %q (none: \"\"):\n%s", i, want, q[i])
		}
	}
}
