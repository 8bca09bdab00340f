package integration_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testdns"
	"github.com/robotsguard/robotsguard/internal/testkeys"
)

// The recipes of docs/proxies are run as they are written, with their
// addresses replaced: the site (127.0.0.1:9000), the decision service
// (9180) and the proxy's own port (8080).
const recipes = "../docs/proxies/"

// proxyRobots is the site's robots.txt in the proxy tests.
const proxyRobots = `User-agent: Googlebot
Allow: /
Disallow: /trap/

User-agent: AcmeBot
Allow: /
Disallow: /trap/

User-agent: DelayBot
Crawl-delay: 60
Disallow: /trap/

User-agent: *
Disallow: /private/
Disallow: /trap/
`

// proxySite is the site behind the proxies: it serves proxyRobots and, for
// any other path, a page that shows the trap link the proxy passed on
// (X-Robots-Guard-Trap-Link). It counts the robots.txt requests per Host.
type proxySite struct {
	srv    *http.Server
	addr   string
	mu     sync.Mutex
	robots map[string]int
}

func startProxySite(t *testing.T) *proxySite {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &proxySite{addr: l.Addr().String(), robots: map[string]int{}}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			s.mu.Lock()
			s.robots[r.Host]++
			s.mu.Unlock()
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, proxyRobots)
			return
		}
		fmt.Fprintf(w, "page %s", r.URL.Path)
		if link := r.Header.Get("X-Robots-Guard-Trap-Link"); link != "" {
			fmt.Fprintf(w, "\n<a href=%q rel=nofollow></a>", link)
		}
	})}
	go s.srv.Serve(l)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// robotsFetches returns how often the site's robots.txt was asked for
// under host.
func (s *proxySite) robotsFetches(host string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.robots[host]
}

// recipe returns a file of docs/proxies with its addresses replaced.
func recipe(t *testing.T, name string, site string, checkPort, proxyPort int) string {
	t.Helper()
	b, err := os.ReadFile(recipes + name)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(
		"127.0.0.1:9000", site,
		"9180", strconv.Itoa(checkPort),
		"8080", strconv.Itoa(proxyPort),
	).Replace(string(b))
	return s
}

// process runs a server for the test's duration and shows its output when
// the test fails; stop ends it sooner (a restart).
func process(t *testing.T, name string, env []string, args ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var logs bytes.Buffer
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	// nginx and HAProxy start workers: the whole process group ends with
	// the test, and a worker that holds the output open cannot stall it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); cmd.Wait() }) }
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			mu.Lock()
			t.Logf("%s output:\n%s", filepath.Base(name), logs.String())
			mu.Unlock()
		}
	})
	return stop
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// waitListening waits until something accepts connections on addr.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	waitDial(t, addr, "nothing listens on", func() (net.Conn, error) { return net.DialTimeout("tcp", addr, time.Second) })
}

// waitCertificate waits until the server on addr completes a TLS
// handshake: Caddy's tls internal issues its certificate in the
// background, and a handshake before fails.
func waitCertificate(t *testing.T, addr string) {
	t.Helper()
	waitDial(t, addr, "no TLS handshake with", func() (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	})
}

// waitDial calls dial until it connects, for 20 s at most, then fails
// saying what (e.g. "nothing listens on") of addr.
func waitDial(t *testing.T, addr, what string, dial func() (net.Conn, error)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := dial()
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s after 20s: %v", what, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// daemon returns the path of a Debian server binary (nginx, haproxy), in
// PATH or /usr/sbin; it skips the test when there is none, and fails it
// under CI, which installs them.
func daemon(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/sbin/" + name; fileExists(p) {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (.ci/run installs Debian's %s)", name, name)
	}
	t.Skipf("%s is not installed (apt-get install %s)", name, name)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// checkService starts the built Caddy with docs/proxies/check.Caddyfile,
// its block extended with verification, traps and bans for the e2e
// matrix, and returns its port.
func checkService(t *testing.T, site *proxySite, feed, resolver, keyDir, caFile string) int {
	t.Helper()
	port := freePort(t)
	conf := checkRecipe(t, site.addr, port)
	extra := fmt.Sprintf(`
		verify {
			builtin off
			fetch_feeds at_start
			resolver %s
			operator google {
				tokens Googlebot
				ip_ranges %s
				rdns googlebot.com
			}
			operator acme {
				tokens AcmeBot
				ip_ranges %s
				signature_agents %s
			}
			web_bot_auth {
				ca_file %s
				allow_private_directories
			}
		}
		crawl_delay {
			key group
		}
		traps /trap/ {
			links client
			grace 0
		}
		bans {
			for 1h
		}
`, resolver, feed, filepath.ToSlash(filepath.Join(t.TempDir(), "missing.json")), keyDir, filepath.ToSlash(caFile))
	conf = strings.Replace(conf, "\t\tpath_prefix /check\n", "\t\tpath_prefix /check\n"+extra, 1)
	runCaddyfile(t, conf, port)
	return port
}

// checkRecipe returns docs/proxies/check.Caddyfile for a service on port
// whose origin is site, without its admin API (the tests run several).
func checkRecipe(t *testing.T, site string, port int) string {
	t.Helper()
	conf := recipe(t, "check.Caddyfile", site, port, 0)
	const admin = "\tadmin localhost:2020\n"
	if !strings.Contains(conf, admin) {
		t.Fatalf("check.Caddyfile has no line %q: its admin address is its own, beside the demo", admin)
	}
	return strings.Replace(conf, admin, "\tadmin off\n\tpersist_config off\n", 1)
}

// proxyClient sends requests to a proxy as a load balancer in front of it
// would: with the client's address in X-Forwarded-For.
type proxyClient struct {
	t    *testing.T
	addr string
	c    *http.Client
}

// get asks for path on host example.com as ua from ip; extra are header
// name and value pairs.
func (p proxyClient) get(path, ua, ip string, extra ...string) answer {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+path, nil)
	req.Host = "example.com"
	req.Header.Set("User-Agent", ua)
	browserHeaders(req.Header)
	req.Header.Set("X-Forwarded-For", ip)
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i] == "Host" {
			req.Host = extra[i+1]
			continue
		}
		req.Header.Set(extra[i], extra[i+1])
	}
	return p.do(req)
}

func (p proxyClient) do(req *http.Request) answer {
	p.t.Helper()
	return send(p.t, p.c, req)
}

// TestProxies runs the e2e matrix through real nginx, real HAProxy and
// Caddy's forward_auth, each configured with its recipe of docs/proxies
// and asking the built Caddy with robots_guard_check: a browser untouched,
// a bot's 403 with its body, a 429 with Retry-After, /robots.txt served
// (also to a banned client), a verified and a spoofed crawler (the
// address from the proxy), a trap link passed to the site and the ban
// that following it earns, a signed Web Bot Auth request, and forged
// forwarded headers that earn nothing.
func TestProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nginx, HAProxy and the built Caddy")
	}
	for _, px := range recipeProxies {
		t.Run(px.name, func(t *testing.T) {
			site := startProxySite(t)
			feed, _ := googleFeed(t)
			dns := testdns.Start(t)
			dns.PTR("66.249.66.1", "crawl-66-249-66-1.googlebot.com")
			dns.Host("crawl-66-249-66-1.googlebot.com", "66.249.66.1")
			dir, _ := testkeys.DirectoryServer(t)
			caFile := filepath.Join(t.TempDir(), "ca.pem")
			os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: dir.Certificate().Raw}), 0o644)
			checkPort := checkService(t, site, feed.URL, dns.Addr, dir.URL, caFile)
			addr := px.start(t, site.addr, checkPort)
			p := proxyClient{t: t, addr: addr, c: &http.Client{Timeout: 10 * time.Second}}
			proxyMatrix(t, p, site, dir.URL, checkPort)
		})
	}
}

// recipeProxies are the proxies whose recipes run here: each starts with
// the site's address and the service's port and returns its address.
var recipeProxies = []struct {
	name  string
	start func(t *testing.T, site string, checkPort int) string
}{
	{"nginx", startNginx},
	{"haproxy", startHAProxy},
	{"caddy_forward_auth", startForwardAuth},
}

// proxyMatrix is the e2e matrix through one proxy.
func proxyMatrix(t *testing.T, p proxyClient, site *proxySite, keyDir string, checkPort int) {
	// The feed loads in the background: wait until Googlebot is verified.
	deadline := time.Now().Add(15 * time.Second)
	for p.get("/private/a", googlebotUA, "66.249.64.5").status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("Googlebot from 66.249.64.5 not verified after 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.get("/private/x", browserUA, "198.51.100.1").check(t, "browser", 200, "page /private/x")
	p.get("/private/x", "FooBot/1.0", "198.51.100.2").check(t, "bot on a disallowed path", 403, "Disallowed by robots.txt line 14 for *")
	p.get("/a", "FooBot/1.0", "198.51.100.2").check(t, "bot on an allowed path", 200, "page /a")
	p.get("/robots.txt", "FooBot/1.0", "198.51.100.2").check(t, "robots.txt", 200, "Crawl-delay: 60")

	// Crawl-delay: the burst its tolerance allows, then 429 with Retry-After.
	var a answer
	for i := 0; i < 10; i++ {
		if a = p.get("/d", "DelayBot/1.0", "198.51.100.3"); a.status != 200 {
			break
		}
	}
	a.check(t, "DelayBot past its Crawl-delay", 429, "Crawl-delay of robots.txt for DelayBot exceeded")
	if ra, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Errorf("429 Retry-After %q, want 1 to 60 seconds", a.header.Get("Retry-After"))
	}

	// The proxy's own port, not one the client writes: no fresh budget.
	p.get("/d", "DelayBot/1.0", "198.51.100.3", "X-Forwarded-Port", "1111").check(t, "DelayBot with a forged X-Forwarded-Port", 429, "Crawl-delay")

	// Verification on the address the proxy forwarded.
	p.get("/private/a", googlebotUA, "66.249.64.5").check(t, "verified Googlebot", 200, "page /private/a")
	p.get("/private/a", googlebotUA, "11.0.113.9").check(t, "spoofed Googlebot", 403, "names a crawler of google")

	// A signed Web Bot Auth request: verified by its signature, judged
	// by its own group; the same claim unsigned answers to "*" too.
	signed := func(path string, from ...string) answer {
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+path, nil)
		req.Host = "example.com"
		req.Header.Set("User-Agent", "AcmeBot/2.0")
		req.Header.Set("X-Forwarded-For", append(from, "198.51.100.9")[0])
		priv, err := identity.PrivateJWK(testkeys.PrivateJWK)
		if err != nil {
			t.Fatal(err)
		}
		tp, _ := identity.Thumbprint(testkeys.PrivateJWK)
		now := time.Now()
		sr := &identity.SignedRequest{Method: "GET", Scheme: "http", Authority: req.Host, Path: req.URL.EscapedPath(), Header: req.Header}
		if err := identity.Sign(sr, priv, tp, keyDir, now, now.Add(time.Minute), "n-"+path); err != nil {
			t.Fatal(err)
		}
		return p.do(req)
	}
	signed("/private/signed").check(t, "signed AcmeBot", 200, "page /private/signed")
	unsigned := p.get("/private/unsigned", "AcmeBot/2.0", "198.51.100.9")
	unsigned.check(t, "unsigned AcmeBot", 403, "Disallowed by robots.txt")
	if got := unsigned.header.Get("Accept-Signature"); !strings.Contains(got, `tag="web-bot-auth"`) {
		t.Errorf("the 403 to an unsigned claim of a signing operator: Accept-Signature %q", got)
	}
	if got := p.get("/private/x", "FooBot/1.0", "198.51.100.2").header.Get("Accept-Signature"); got != "" {
		t.Errorf("a 403 to a bot that claims no signer: Accept-Signature %q", got)
	}
	// The same nonce from another address: a replay, 429; unreadable signature headers
	// on a claim of a signing operator: 400 (nginx's recipe turns the
	// service's 403 that says 400 back into it).
	signed("/replayed").check(t, "signed AcmeBot, first", 200, "page /replayed")
	signed("/replayed").check(t, "signed AcmeBot, again from its own address", 200, "page /replayed")
	signed("/replayed", "198.51.100.10").check(t, "signed AcmeBot, replayed from another address", 429, "fresh nonce")
	p.get("/a", "AcmeBot/2.0", "198.51.100.9", "Signature-Input", `sig1=("@authority";tag="web-bot-auth"`, "Signature", "sig1=:AAAA:").
		check(t, "unreadable signature headers", 400, "signature headers cannot be read")

	// A trap link, passed to the site by the proxy, and the ban that
	// following it earns; robots.txt is still served to the banned client.
	page := p.get("/page", "TrapBot/1.0", "203.0.113.7")
	page.check(t, "page with a trap link", 200, "page /page")
	m := regexp.MustCompile(`href="(/trap/[^"]+)"`).FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("no trap link in the page (X-Robots-Guard-Trap-Link not passed on): %q", page.body)
	}
	p.get(m[1], "TrapBot/1.0", "203.0.113.7").check(t, "the trap link", 403, "banned until")
	p.get("/page", "TrapBot/1.0", "203.0.113.7").check(t, "banned", 403, "for ignoring this site's robots.txt")
	p.get("/robots.txt", "TrapBot/1.0", "203.0.113.7").check(t, "robots.txt while banned", 200, "Disallow: /trap/")
	p.get("/page", "TrapBot/1.0", "203.0.113.8").check(t, "another client", 200, "page /page")

	// Forged forwarded headers from the client earn nothing: the proxy
	// writes its own.
	p.get("/private/x", "FooBot/1.0", "198.51.100.4", "X-Original-URI", "/a", "X-Forwarded-Uri", "/a").
		check(t, "forged X-Original-URI / X-Forwarded-Uri", 403, "Disallowed by robots.txt line 14 for *")
	// A comma is part of the target, never a list separator.
	p.get("/private/x?a=,/a", "FooBot/1.0", "198.51.100.4").check(t, "a comma in the query", 403, "line 14 for *")
	p.get("/private/x,/", "FooBot/1.0", "198.51.100.4").check(t, "a comma in the path", 403, "line 14 for *")
	p.get("/a", "FooBot/1.0", "198.51.100.4", "Host", "evil.test", "X-Forwarded-Host", "example.com").
		check(t, "unknown host with a forged X-Forwarded-Host", 403, "not a site this guard protects")
	if n := site.robotsFetches("evil.test"); n != 0 {
		t.Errorf("robots.txt fetched %d times for the client's host evil.test", n)
	}
	if n := site.robotsFetches("example.com"); n == 0 {
		t.Error("the site's robots.txt was never fetched with its own Host")
	}

	// The service itself: a question from an address it does not trust
	// is refused, and one without a forwarded target gets 400.
	direct := func(from string, h ...string) answer {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", checkPort), nil)
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		return proxyClient{t: t, c: c}.do(req)
	}
	direct("127.0.0.2", "User-Agent", browserUA, "X-Forwarded-Uri", "/a", "X-Forwarded-Host", "example.com").
		check(t, "question from an untrusted address", 403, "not a proxy this service trusts")
	direct("127.0.0.1", "User-Agent", browserUA).check(t, "question without a target", 400, "names no request")
}

// startNginx runs nginx with docs/proxies/nginx.conf and returns its
// address.
func startNginx(t *testing.T, site string, checkPort int) string {
	port := freePort(t)
	server := recipe(t, "nginx.conf", site, checkPort, port)
	server = strings.Replace(server, fmt.Sprintf("listen %d;", port), fmt.Sprintf("listen 127.0.0.1:%d;", port), 1)
	runNginx(t, server)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitListening(t, addr)
	return addr
}

// runNginx runs nginx with server, the http block's contents (server
// blocks, maps, upstreams), for the test's duration; its error log is
// shown when the test fails.
func runNginx(t *testing.T, server string) {
	t.Helper()
	bin := daemon(t, "nginx")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "site.conf"), []byte(server), 0o644)
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n"
	}
	main := fmt.Sprintf(`%sworker_processes 1;
error_log %[2]s/error.log info;
pid %[2]s/nginx.pid;
events {}
http {
	access_log off;
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	include %[2]s/site.conf;
}
`, user, dir)
	os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644)
	process(t, bin, nil, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx error.log:\n%s", b)
		}
	})
}

// startHAProxy runs HAProxy with docs/proxies/haproxy.cfg and
// robots_guard.lua and returns its address.
func startHAProxy(t *testing.T, site string, checkPort int) string {
	bin := daemon(t, "haproxy")
	port := freePort(t)
	dir := t.TempDir()
	lua, err := filepath.Abs(recipes + "robots_guard.lua")
	if err != nil {
		t.Fatal(err)
	}
	cfg := recipe(t, "haproxy.cfg", site, checkPort, port)
	cfg = strings.Replace(cfg, "/etc/haproxy/robots_guard.lua", lua, 1)
	cfg = strings.Replace(cfg, fmt.Sprintf("bind :%d", port), fmt.Sprintf("bind 127.0.0.1:%d", port), 1)
	file := filepath.Join(dir, "haproxy.cfg")
	os.WriteFile(file, []byte(cfg), 0o644)
	process(t, bin, []string{fmt.Sprintf("ROBOTS_GUARD_CHECK_URL=http://127.0.0.1:%d/", checkPort)}, "-db", "-f", file)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitListening(t, addr)
	return addr
}

// startForwardAuth runs a second built Caddy with
// docs/proxies/forward_auth.Caddyfile and returns its address.
func startForwardAuth(t *testing.T, site string, checkPort int) string {
	port := freePort(t)
	conf := recipe(t, "forward_auth.Caddyfile", site, checkPort, port)
	conf = strings.Replace(conf, "{\n", "{\n\tadmin off\n\tpersist_config off\n", 1)
	runCaddyfile(t, conf, port)
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// TestProxiesFailClosed: a proxy whose decision service does not answer
// lets nothing through (nginx 500, HAProxy 503, Caddy 502), robots.txt
// aside.
func TestProxiesFailClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nginx, HAProxy and the built Caddy")
	}
	for name, start := range map[string]func(t *testing.T, site string, checkPort int) string{
		"nginx": startNginx, "haproxy": startHAProxy, "caddy_forward_auth": startForwardAuth,
	} {
		t.Run(name, func(t *testing.T) {
			site := startProxySite(t)
			addr := start(t, site.addr, freePort(t)) // nothing listens there
			p := proxyClient{t: t, addr: addr, c: &http.Client{Timeout: 10 * time.Second}}
			for _, ua := range []string{browserUA, "FooBot/1.0"} {
				if a := p.get("/a", ua, "198.51.100.1"); a.status < 500 || strings.Contains(a.body, "page /a") {
					t.Errorf("%s without a decision service: %d %q, want a 5xx", ua, a.status, a.body)
				}
			}
			p.get("/robots.txt", "FooBot/1.0", "198.51.100.1").check(t, "robots.txt without a decision service", 200, "Disallow")
		})
	}
}
