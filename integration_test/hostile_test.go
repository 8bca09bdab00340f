package integration_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// dial connects to addr with an 8-second deadline for the whole exchange.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(8 * time.Second))
	return c
}

// rawRequest sends one raw HTTP request to addr and returns the answer.
func rawRequest(t *testing.T, addr, req string) string {
	t.Helper()
	c := dial(t, addr)
	defer c.Close()
	io.WriteString(c, req)
	b, _ := io.ReadAll(c)
	return string(b)
}

// secretFiles starts a bare http.FileServer upstream with robots and a
// page, /private/secret.html, that reads "SECRET".
func secretFiles(t *testing.T, robots string) *httptest.Server {
	t.Helper()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "private"), 0o755)
	os.WriteFile(filepath.Join(root, "private", "secret.html"), []byte("SECRET"), 0o644)
	os.WriteFile(filepath.Join(root, "robots.txt"), []byte(robots), 0o644)
	files := httptest.NewServer(http.FileServer(http.Dir(root)))
	t.Cleanup(files.Close)
	return files
}

// TestHostileTargets: through Caddy on a catch-all site (the shape of
// Caddyfile.example), in front of a bare http.FileServer and a ServeMux,
// no crafted request-target, missing Host or odd Host gets a bot the
// disallowed page.
func TestHostileTargets(t *testing.T) {
	files := secretFiles(t, "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /private/\n")
	port := freePort(t)
	tc := load(t, "", fmt.Sprintf("http://:%d {\n\trobots_guard {\n\t\trobots_txt {\n\t\t\ton_unreachable allow\n\t\t}\n\t}\n\treverse_proxy %s\n}\n", port, strings.TrimPrefix(files.URL, "http://")))
	_ = tc
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	leaks := 0
	for _, ua := range []string{"FooBot/1.0", gptbotUA} {
		for _, target := range []string{
			"/private/secret.html", "http:/private/secret.html", "HTTP:/private/secret.html", "x:/private/secret.html",
			"/#/../private/secret.html", "/pub#/../private/secret.html", "/robots.txt#/../private/secret.html",
		} {
			for _, head := range []string{
				"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n",
				"GET %s HTTP/1.0\r\n", // no Host header
				"GET %s HTTP/1.1\r\nHost: name:abc\r\n",
			} {
				req := fmt.Sprintf(head, target) + "User-Agent: " + ua + "\r\n" + browserHeaderLines + "Connection: close\r\n\r\n"
				if resp := rawRequest(t, addr, req); strings.Contains(resp, "SECRET") {
					leaks++
					t.Errorf("%q leaked the disallowed page:\n%s", req, resp)
				}
			}
		}
	}
	// The checks above must be able to fail: a browser reads the page.
	if resp := rawRequest(t, addr, "GET /private/secret.html HTTP/1.0\r\nUser-Agent: "+browserUA+"\r\n"+browserHeaderLines+"\r\n"); !strings.Contains(resp, "SECRET") {
		t.Fatalf("a browser did not get the page, so the test proves nothing:\n%s", resp)
	}
}

// TestHostRotationThroughCaddy: ports, case and trailing dots in the Host
// header do not multiply a bot's Crawl-delay budget or the robots.txt
// fetches.
func TestHostRotationThroughCaddy(t *testing.T) {
	var fetches atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fetches.Add(1)
			io.WriteString(w, "User-agent: SlowBot\nCrawl-delay: 5\n")
			return
		}
		io.WriteString(w, "page")
	}))
	defer up.Close()
	port := freePort(t)
	load(t, "", fmt.Sprintf("http://:%d {\n\trobots_guard\n\treverse_proxy %s\n}\n", port, strings.TrimPrefix(up.URL, "http://")))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	admitted := 0
	var hosts []string
	for i := 1; i <= 50; i++ {
		hosts = append(hosts, fmt.Sprintf("localhost:%d", i))
	}
	hosts = append(hosts, "LOCALHOST", "localhost.", "LocalHost.:7")
	for _, h := range hosts {
		if resp := rawRequest(t, addr, "GET /a HTTP/1.1\r\nHost: "+h+"\r\nUser-Agent: SlowBot/1.0\r\nConnection: close\r\n\r\n"); strings.HasPrefix(resp, "HTTP/1.1 200") {
			admitted++
		}
	}
	if admitted != burst {
		t.Errorf("SlowBot (Crawl-delay 5) admitted %d of %d, want %d (the burst of one site)", admitted, len(hosts), burst)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times for one site, want 1", n)
	}
}

// TestNoConnectionToClientChosenHost: an upstream whose /robots.txt
// redirects to the Host header (redir https://{host}{uri}) cannot make
// robots_guard connect where a client's Host header points.
func TestNoConnectionToClientChosenHost(t *testing.T) {
	var conns atomic.Int32
	can := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	can.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	can.Start()
	defer can.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.Redirect(w, r, "https://"+r.Host+"/robots.txt", http.StatusMovedPermanently)
			return
		}
		io.WriteString(w, "page")
	}))
	defer up.Close()
	port := freePort(t)
	load(t, "", fmt.Sprintf("http://:%d {\n\trobots_guard {\n\t\trobots_txt {\n\t\t\tfetch_timeout 2s\n\t\t}\n\t}\n\treverse_proxy %s\n}\n", port, strings.TrimPrefix(up.URL, "http://")))
	canHost := strings.TrimPrefix(can.URL, "http://")
	rawRequest(t, fmt.Sprintf("127.0.0.1:%d", port), "GET /x HTTP/1.1\r\nHost: "+canHost+"\r\nUser-Agent: FooBot/1.0\r\nConnection: close\r\n\r\n")
	if n := conns.Load(); n != 0 {
		t.Fatalf("robots_guard opened %d connections to the host the client named", n)
	}
}

// h2cGet sends one GET over cleartext HTTP/2 with prior knowledge, with no
// :authority pseudo-header and no Host header, and returns the status and
// the body.
func h2cGet(t *testing.T, addr, path, ua string) (string, string) {
	t.Helper()
	c := dial(t, addr)
	defer c.Close()
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":path", path}, {"user-agent", ua}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for _, f := range browserFields { // HTTP/2 header names are lower case
		enc.WriteField(hpack.HeaderField{Name: strings.ToLower(f[0]), Value: f[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	var status string
	var body strings.Builder
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.Name == ":status" {
			status = f.Value
		}
	})
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return status, body.String()
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			dec.Write(f.HeaderBlockFragment())
			if f.StreamEnded() {
				return status, body.String()
			}
		case *http2.DataFrame:
			body.Write(f.Data())
			if f.StreamEnded() {
				return status, body.String()
			}
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			return status, body.String()
		}
	}
}

// TestH2CWithoutAuthority: over h2c, a request without :authority (and
// without Host) is judged against the site it reaches.
func TestH2CWithoutAuthority(t *testing.T) {
	files := secretFiles(t, "User-agent: *\nDisallow: /private/\n")
	port := freePort(t)
	load(t, "servers {\n\t\tprotocols h1 h2c\n\t}", fmt.Sprintf("http://:%d {\n\trobots_guard\n\treverse_proxy %s\n}\n", port, strings.TrimPrefix(files.URL, "http://")))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	status, body := h2cGet(t, addr, "/private/secret.html", browserUA)
	if !strings.Contains(body, "SECRET") {
		t.Skipf("this server does not serve h2c requests without :authority (status %q), so there is nothing to bypass", status)
	}
	if status, body := h2cGet(t, addr, "/private/secret.html", "FooBot/1.0"); strings.Contains(body, "SECRET") || status != "403" {
		t.Errorf("a bot over h2c without :authority: status %s, body %q", status, body)
	}
}

// TestHostFloodSparesNamedSites: a flood of distinct Host names spends
// new_sites_per_second, but a crawler's first request to a site name the
// configuration is written for is decided by its robots.txt, not
// postponed.
func TestHostFloodSparesNamedSites(t *testing.T) {
	up := newUpstream(t, "User-agent: GPTBot\nDisallow: /private/\n")
	port := freePort(t)
	block := "\trobots_guard {\n\t\trobots_txt {\n\t\t\tnew_sites_per_second 1\n\t\t}\n\t}\n\treverse_proxy " + up.addr() + "\n"
	tc := load(t, "", fmt.Sprintf("http://named.test:%d {\n%s}\nhttp://:%d {\n%s}\n", port, block, port, block))
	send := func(host, path string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
		req.Host = host
		req.Header.Set("User-Agent", gptbotUA)
		resp, err := tc.Client.Do(req)
		if err != nil {
			t.Fatalf("GET %s%s: %v", host, path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	postponed := 0
	for i := range 60 {
		if send(fmt.Sprintf("flood%d.test", i), "/x") == http.StatusTooManyRequests {
			postponed++
		}
	}
	if postponed < 50 {
		t.Fatalf("only %d of 60 new Hosts postponed: the flood did not spend the budget", postponed)
	}
	if code := send("named.test", "/private/x"); code != http.StatusForbidden {
		t.Fatalf("a crawler's first request to the configured site during the flood: %d, want its robots.txt's 403", code)
	}
	if code := send("named.test", "/open"); code != http.StatusOK {
		t.Fatalf("the configured site, an allowed path: %d", code)
	}
}
