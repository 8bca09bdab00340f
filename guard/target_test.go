package guard

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const privateRobots = "User-agent: *\nDisallow: /private/\n"

// TestBypassTargets: request-targets that a Go server hands to the upstream
// as a disallowed path are judged as that path (or refused to bots).
func TestBypassTargets(t *testing.T) {
	h := serve(mustNew(t, Config{}), site(privateRobots))
	for _, c := range []struct {
		target string
		code   int
	}{
		{"http:/private/secret.html", 403},
		{"HTTP:/private/secret.html", 403},
		{"x:/private/secret.html", 403},
		{"http://other.example/private/secret.html", 403},
		{"http:///private/secret.html", 403},
		{"/#/../private/secret.html", 403},
		{"/pub#/../../private/secret.html", 403},
		{"/robots.txt#/../private/secret.html", 403},
		{"/private#", 200},           // the upstream sees "/private#", not below /private/
		{"/robots.txt?x#/../p", 200}, // a query: the upstream serves /robots.txt
		{"/robots.txt", 200},
		{"*", 403},
		{"http:private", 403},
		{"/public/page", 200},
		{"http://example.com/public/page", 200},
	} {
		if rec := doRaw(t, h, uaAhrefs, c.target); rec.Code != c.code {
			t.Errorf("bot %q: %d, want %d (%s)", c.target, rec.Code, c.code, strings.TrimSpace(rec.Body.String()))
		}
		if rec := doRaw(t, h, uaChrome, c.target); rec.Code == 403 {
			t.Errorf("browser %q: 403; browsers pass to the upstream", c.target)
		}
	}
}

// TestBypassThroughRealServer sends raw request-targets over TCP to a real
// Go server whose upstream is http.FileServer: no bot reads the secret.
func TestBypassThroughRealServer(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "private"), 0o755)
	os.WriteFile(filepath.Join(root, "private", "secret.html"), []byte("SECRET"), 0o644)
	os.WriteFile(filepath.Join(root, "robots.txt"), []byte(privateRobots), 0o644)
	os.WriteFile(filepath.Join(root, "index.html"), []byte("home"), 0o644)
	srv := httptest.NewServer(serve(mustNew(t, Config{}), http.FileServer(http.Dir(root))))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, target := range []string{
		"/private/secret.html", "http:/private/secret.html", "HTTP:/private/secret.html", "x:/private/secret.html",
		"/#/../private/secret.html", "/pub#/../private/secret.html", "/robots.txt#/../private/secret.html",
		"/a/..%2fprivate/secret.html", "//private/secret.html", "/./private/secret.html", "/%70rivate/secret.html",
	} {
		for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
			host := "Host: " + addr + "\r\n"
			if proto == "HTTP/1.0" {
				host = "" // no Host header at all
			}
			body := rawGet(t, addr, fmt.Sprintf("GET %s %s\r\n%sUser-Agent: %s\r\nConnection: close\r\n\r\n", target, proto, host, uaAhrefs))
			if strings.Contains(body, "SECRET") {
				t.Errorf("%s %s: a bot read the secret:\n%s", proto, target, body)
			}
		}
	}
}

// doRaw builds the request as a Go server reads it from the wire.
func doRaw(t *testing.T, h http.Handler, ua, target string) *httptest.ResponseRecorder {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: example.com\r\nUser-Agent: " + ua + "\r\n" + browserHeaderLines + "\r\n")))
	if err != nil {
		t.Fatalf("%q: %v", target, err)
	}
	r.RemoteAddr = "192.0.2.1:1234"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func rawGet(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, req)
	b, _ := io.ReadAll(c)
	return string(b)
}

// FuzzTarget: for every request-target the Go server accepts, a bot never
// reaches the upstream with a path below a disallowed directory, as
// http.ServeMux and http.FileServer would clean it.
func FuzzTarget(f *testing.F) {
	for _, s := range []string{"/private/x", "http:/private/x", "/#/../private/x", "/robots.txt#/../private/x",
		"/a%2f..%2fprivate/x", "//private", "/pub/..//private/x", "x://h/private/x", "/private%2fx", "/%2e%2e/private/x", "*"} {
		f.Add(s)
	}
	e := mustNew(f, Config{})
	f.Fuzz(func(t *testing.T, target string) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: example.com\r\nUser-Agent: " + uaAhrefs + "\r\n\r\n")))
		if err != nil {
			return // the server refuses it
		}
		var served string
		upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				io.WriteString(w, privateRobots)
				return
			}
			p := r.URL.Path
			if !strings.HasPrefix(p, "/") {
				p = "/" + p
			}
			// As http.ServeMux cleans it: a trailing slash stays.
			served = path.Clean(p)
			if strings.HasSuffix(p, "/") && served != "/" {
				served += "/"
			}
		})
		serve(e, upstream).ServeHTTP(httptest.NewRecorder(), r)
		if strings.HasPrefix(served, "/private/") {
			t.Fatalf("target %q: a bot reached the upstream at %q", target, served)
		}
	})
}

// TestHostRotation: a bot that writes other ports, letter case or a
// trailing dot into its Host header still reaches one site: one robots.txt
// fetch and one Crawl-delay budget (the port is the server's own).
func TestHostRotation(t *testing.T) {
	var fetches atomic.Int32
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fetches.Add(1)
			io.WriteString(w, "User-agent: SlowBot\nCrawl-delay: 30\n")
			return
		}
		io.WriteString(w, "page")
	})
	srv := httptest.NewServer(serve(mustNew(t, Config{}), upstream))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	admitted := 0
	hosts := []string{"localhost"}
	for i := 1; i <= 50; i++ {
		hosts = append(hosts, fmt.Sprintf("localhost:%d", i))
	}
	hosts = append(hosts, "LOCALHOST", "localhost.", "LocalHost.:9", "localhost:abc")
	for _, h := range hosts {
		resp := rawGet(t, addr, "GET /page HTTP/1.1\r\nHost: "+h+"\r\nUser-Agent: SlowBot/1.0\r\nConnection: close\r\n\r\n")
		if strings.HasPrefix(resp, "HTTP/1.1 200") {
			admitted++
		}
	}
	if admitted != burst {
		t.Errorf("SlowBot (Crawl-delay 30) admitted %d times over %d Host spellings, want %d (the burst of one site)", admitted, len(hosts), burst)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times, want 1", n)
	}
}

// TestSelfFetchHostBehindProxy: a backend behind a proxy that serves only
// the Host its clients use still gets its robots.txt request under that
// Host, although the guard's server listens on another port.
func TestSelfFetchHostBehindProxy(t *testing.T) {
	app := http.NewServeMux()
	app.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "example.com" {
			http.NotFound(w, r) // a strict virtual host
			return
		}
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, privateRobots)
			return
		}
		io.WriteString(w, "page")
	})
	srv := httptest.NewServer(serve(mustNew(t, Config{}), app))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	resp := rawGet(t, addr, "GET /private/x HTTP/1.1\r\nHost: example.com\r\nUser-Agent: "+uaAhrefs+"\r\nConnection: close\r\n\r\n")
	if !strings.HasPrefix(resp, "HTTP/1.1 403") {
		t.Fatalf("a bot behind a proxy that passes Host through: %q", resp[:min(len(resp), 80)])
	}
}
