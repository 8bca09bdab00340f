package integration_test

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/policy"
)

// One request, one reading: for every request a proxy recipe lets through
// to a bot, the site and file the upstream served must be ones the guard
// allowed. The proxy, the decision service and the site each read the
// request themselves (the target, the Host, the robots.txt exemption), so
// the harness sends raw requests of hostile forms through each recipe of
// docs/proxies as shipped, in front of real file servers (Caddy's
// file_server and nginx's static module) that serve two name-based sites,
// and checks what was served against the sites' robots.txt.

// oneReadSeed fixes the generator's seed (0: a new one, printed).
var oneReadSeed = flag.Uint64("oneread.seed", 0, "seed of TestOneReading's request generator (0: random, printed)")

// oneReadN is how many generated requests each proxy and file server get.
var oneReadN = flag.Int("oneread.n", 1500, "generated requests per proxy and file server in TestOneReading")

// The two sites: example.com is the file servers' default (any other
// Host gets it); open.example.com allows every bot everything.
const (
	siteDefault = "example.com"
	siteOpen    = "open.example.com"

	robotsDefault = `User-agent: *
Disallow: /private/

User-agent: DelayBot
Crawl-delay: 60
Disallow: /private/
`
	robotsOpen = "User-agent: *\nAllow: /\n"
)

// siteFiles are the files of each site; each one's body names its site
// and path ("served example.com /private/x"), so what the file server
// resolved a request to can be read off the answer.
var siteFiles = []string{"index.html", "a", "public/index.html", "public/x", "private/index.html", "private/x", "private/y"}

// siteTrees writes both sites' files and returns their roots.
func siteTrees(t *testing.T) map[string]string {
	roots := map[string]string{}
	for site, robots := range map[string]string{siteDefault: robotsDefault, siteOpen: robotsOpen} {
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, "robots.txt"), []byte(robots), 0o644)
		for _, f := range siteFiles {
			os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755)
			os.WriteFile(filepath.Join(root, f), []byte(siteFile(site, f)), 0o644)
		}
		roots[site] = root
	}
	return roots
}

// siteFile is the body of a site's file: a line that names it, padded to
// a size no other file has, so that the answer to a HEAD request (no
// body) names the file by its Content-Length (servedBySize).
func siteFile(site, f string) string {
	line := "served " + site + " /" + f + "\n"
	i := slices.Index(siteFiles, f)
	if site == siteOpen {
		i += len(siteFiles)
	}
	return line + strings.Repeat("#", 100+8*i-len(line))
}

// servedBySize names the file of each size siteFile gives.
var servedBySize = func() map[int64]string {
	m := map[int64]string{}
	for _, site := range []string{siteDefault, siteOpen} {
		for _, f := range siteFiles {
			body := siteFile(site, f)
			m[int64(len(body))], _, _ = strings.Cut(body, "\n")
		}
	}
	return m
}()

// rawSite is a site that reads the target raw, as many applications do
// (routers that match on the escaped path, Apache's AllowEncodedSlashes
// NoDecode): any path other than /robots.txt is a page, named by its
// escaped path, of open.example.com for that Host and of example.com for
// any other. It says what it served in X-Served too, for HEAD requests.
func rawSite(t *testing.T) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, robots := siteDefault, robotsDefault
		if h, _, _ := strings.Cut(r.Host, ":"); strings.EqualFold(h, siteOpen) {
			site, robots = siteOpen, robotsOpen
		}
		if r.URL.EscapedPath() == "/robots.txt" {
			io.WriteString(w, robots)
			return
		}
		w.Header().Set("X-Served", site+" "+r.URL.EscapedPath())
		io.WriteString(w, "served "+site+" "+r.URL.EscapedPath()+"\n")
	}))
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// startFileServer runs the upstream: the built Caddy's file_server, or
// nginx's static module, serving both sites on one port, example.com as
// the default. It returns its address.
func startFileServer(t *testing.T, kind string, roots map[string]string) string {
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	switch kind {
	case "caddy_file_server":
		conf := fmt.Sprintf(`{
	admin off
	persist_config off
	auto_https off
}
http://%[2]s:%[1]d {
	bind 127.0.0.1
	root * %[3]s
	file_server
}
http://:%[1]d {
	bind 127.0.0.1
	root * %[4]s
	file_server
}
`, port, siteOpen, filepath.ToSlash(roots[siteOpen]), filepath.ToSlash(roots[siteDefault]))
		runCaddyfile(t, conf)
	case "go_raw":
		return rawSite(t)
	case "nginx_static":
		runNginx(t, fmt.Sprintf(`server {
	listen %[1]s default_server;
	server_name %[2]s;
	root %[3]s;
}
server {
	listen %[1]s;
	server_name %[4]s;
	root %[5]s;
}
`, addr, siteDefault, roots[siteDefault], siteOpen, roots[siteOpen]))
	default:
		t.Fatalf("no file server %q", kind)
	}
	waitListening(t, addr)
	return addr
}

// plainCheckService runs the built Caddy with docs/proxies/check.Caddyfile
// as shipped, its origin the file server, and returns its port.
func plainCheckService(t *testing.T, origin string) int {
	port := freePort(t)
	runCaddyfile(t, checkRecipe(t, origin, port), port)
	return port
}

// hostileRequest is one request as its bytes are written: a request line,
// Host headers (none, one or several) and the User-Agent.
type hostileRequest struct {
	name   string // a named case; "" for generated ones
	method string
	target string
	proto  string   // HTTP/1.1 or HTTP/1.0
	hosts  []string // each a Host header line
	ua     string
}

func (r hostileRequest) bytes(clientIP string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\r\n", r.method, r.target, r.proto)
	for _, h := range r.hosts {
		fmt.Fprintf(&b, "Host: %s\r\n", h)
	}
	fmt.Fprintf(&b, "User-Agent: %s\r\n%sX-Forwarded-For: %s\r\nConnection: close\r\n\r\n", r.ua, browserHeaderLines, clientIP)
	return []byte(b.String())
}

func (r hostileRequest) String() string {
	s := fmt.Sprintf("%s %s %s", r.method, r.target, r.proto)
	if len(r.target) > 120 {
		s = fmt.Sprintf("%s %s…(%d bytes) %s", r.method, r.target[:100], len(r.target), r.proto)
	}
	for _, h := range r.hosts {
		s += " | Host: " + h
	}
	return s + " | UA " + r.ua
}

// send writes r to addr on a connection of its own and reads the answer:
// its status and the body's first line (0 and the error when there is no
// answer).
func (r hostileRequest) send(addr, clientIP string) (int, string) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := c.Write(r.bytes(clientIP)); err != nil {
		return 0, err.Error()
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: r.method})
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	line, _, _ := strings.Cut(string(body), "\n")
	switch x := resp.Header.Get("X-Served"); {
	case x != "":
		line = "served " + x
	case line == "" && r.method == http.MethodHead:
		line = servedBySize[resp.ContentLength]
	}
	return resp.StatusCode, line
}

// served reads what a file server's answer body names: the site and the
// URL path of the file served (an index.html as its directory), or
// ok false when the body is no site file (a refusal, an error page,
// robots.txt).
func served(body string) (site, path string, ok bool) {
	rest, found := strings.CutPrefix(body, "served ")
	if !found {
		return "", "", false
	}
	site, path, ok = strings.Cut(rest, " ")
	return site, strings.TrimSuffix(path, "index.html"), ok
}

// readings judges answers against the sites' robots.txt.
type readings struct {
	robots map[string]*policy.Robots
}

func newReadings() readings {
	return readings{robots: map[string]*policy.Robots{
		siteDefault: policy.Parse([]byte(robotsDefault)),
		siteOpen:    policy.Parse([]byte(robotsOpen)),
	}}
}

// mismatch returns why an answer breaks the invariant ("" when it does
// not): a site file served that its site's robots.txt disallows for ua.
func (rd readings) mismatch(ua string, status int, body string) string {
	site, path, ok := served(body)
	if !ok || status < 200 || status > 299 {
		return ""
	}
	r := rd.robots[site]
	if r == nil {
		return "served a file of an unknown site: " + body
	}
	if d := r.Decide(ua, path); !d.Allowed {
		return fmt.Sprintf("served %s %s, which its robots.txt disallows for %q (%s)", site, path, ua, d)
	}
	return ""
}

// namedReadings are the cases found by hand (issue 44): each got a page
// robots.txt disallows before its fix.
func namedReadings() []hostileRequest {
	const bot = "FooBot/1.0"
	return []hostileRequest{
		{name: "nginx: robots.txt location, fragment, dot segments", method: "GET", target: "/robots.txt#/../private/x", proto: "HTTP/1.1", hosts: []string{siteDefault}, ua: bot},
		{name: "robots.txt, ?#, dot segments", method: "GET", target: "/robots.txt?#/../private/x", proto: "HTTP/1.1", hosts: []string{siteDefault}, ua: bot},
		{name: "robots.txt, encoded # and dot segments", method: "GET", target: "/robots.txt%23/../private/x", proto: "HTTP/1.1", hosts: []string{siteDefault}, ua: bot},
		{name: "nginx: absolute-form host against Host", method: "GET", target: "http://example.com/private/x", proto: "HTTP/1.1", hosts: []string{siteOpen}, ua: bot},
		{name: "absolute-form https against Host", method: "GET", target: "https://example.com/private/x", proto: "HTTP/1.1", hosts: []string{siteOpen}, ua: bot},
		{name: "HAProxy: Host list", method: "GET", target: "/private/x", proto: "HTTP/1.1", hosts: []string{siteDefault + "," + siteOpen}, ua: bot},
		{name: "Host list, the other order", method: "GET", target: "/private/x", proto: "HTTP/1.1", hosts: []string{siteOpen + "," + siteDefault}, ua: bot},
		{name: "two Host headers", method: "GET", target: "/private/x", proto: "HTTP/1.1", hosts: []string{siteDefault, siteOpen}, ua: bot},
		{name: "two Host headers, the other order", method: "GET", target: "/private/x", proto: "HTTP/1.1", hosts: []string{siteOpen, siteDefault}, ua: bot},
		{name: "HTTP/1.0 without Host", method: "GET", target: "/private/x", proto: "HTTP/1.0", ua: bot},
	}
}

// targetForms are request-targets of hostile forms; {h} is replaced by
// a host, {P} by a long filler.
var targetForms = []string{
	"/private/x", "/private/", "/private", "/public/x", "/a", "/", "/robots.txt", "/robots.txt?x=1",
	"/robots.txt#/../private/x", "/robots.txt?#/../private/x", "/robots.txt%23/../private/x", "/robots.txt%23%2f..%2fprivate%2fx",
	"/robots.txt/../private/x", "/robots.txt/..%2fprivate/x", "/robots.txt;/../private/x", "/robots.txt%3f/../private/x",
	"/public/x#/../../private/x", "/public/#/../private/", "/public/..#/private/x",
	"/public/../private/x", "/./private/x", "/public/%2e%2e/private/x", "/public/.%2E/private/", "//private/x", "/private//x",
	"/%70rivate/x", "/private%2Fx", "/%2Fprivate/x", "/PRIVATE/x", "/Private/x",
	"/private;x/x", "/public;/../private/x", "/public/..;/private/x", "/private;a=b",
	"/public\\..\\private\\x", "/public/..\\private/x", "/%5cprivate/x", "/public/%5c..%5cprivate/x",
	"/public/{P}/../../private/x", "/private/{P}",
	"/private/x/..%2F..%2Frobots.txt", "/private/x/..%2f..%2frobots.txt?a", "/private%2F..%2Frobots.txt", "/private/%2e%2e/robots.txt",
	"http://{h}/private/x", "https://{h}/private/x", "http://{h}/robots.txt#/../private/x", "http://{h}:1/private/", "HTTP://{h}/private/x",
	"http://{h}/public/x", "//{h}/private/x", "*",
}

// hostForms are Host headers of hostile forms ("" for none; "|" splits
// two Host headers); {p} is the proxy's port.
var hostForms = []string{
	siteDefault, siteOpen, "EXAMPLE.COM", "Open.Example.Com", siteDefault + ".", siteOpen + ".", siteDefault + ":{p}", siteOpen + ":{p}",
	siteDefault + ":80", siteOpen + ":1", siteDefault + "," + siteOpen, siteOpen + "," + siteDefault, siteOpen + ", " + siteDefault,
	siteDefault + "|" + siteOpen, siteOpen + "|" + siteDefault, "", "x.example.com", "evil.test", siteOpen + " ", "127.0.0.1:{p}",
	"[::1]:{p}", siteOpen + "..", siteOpen + "%2e",
}

// generate returns n requests drawn from the forms with rng.
func generate(rng *rand.Rand, n, proxyPort int) []hostileRequest {
	uas := []string{"FooBot/1.0", "Mozilla/5.0 (compatible; FooBot/1.0; +https://foo.example/bot)", "foobot", "DelayBot/1.0"}
	protos := []string{"HTTP/1.1", "HTTP/1.1", "HTTP/1.0"}
	filler := strings.Repeat("abcdefgh", 1000)
	reqs := make([]hostileRequest, n)
	for i := range reqs {
		host := strings.ReplaceAll(hostForms[rng.IntN(len(hostForms))], "{p}", strconv.Itoa(proxyPort))
		other := strings.ReplaceAll(hostForms[rng.IntN(len(hostForms))], "{p}", strconv.Itoa(proxyPort))
		target := targetForms[rng.IntN(len(targetForms))]
		target = strings.ReplaceAll(target, "{P}", filler[:rng.IntN(len(filler))])
		target = strings.ReplaceAll(target, "{h}", strings.Split(other, "|")[0])
		r := hostileRequest{method: "GET", target: target, proto: protos[rng.IntN(len(protos))], ua: uas[rng.IntN(len(uas))]}
		if rng.IntN(8) == 0 {
			r.method = "HEAD"
		}
		if host != "" {
			r.hosts = strings.Split(host, "|")
		}
		reqs[i] = r
	}
	return reqs
}

// TestOneReading is the differential harness of one request, one reading:
// through real nginx, real HAProxy and Caddy's forward_auth, each with its
// recipe of docs/proxies as shipped and asking the built Caddy's
// robots_guard_check, in front of Caddy's file_server and nginx's static
// module serving example.com (the default) and open.example.com, no
// request may get a file that its site's robots.txt disallows for the
// bot; and one client's Crawl-delay budget is one, whatever the spelling
// of the site's Host. The named cases failed before their fixes; the
// generated ones print their seed (-oneread.seed repeats a run).
func TestOneReading(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nginx, HAProxy and the built Caddy")
	}
	seed := *oneReadSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (go test ./integration_test -run TestOneReading -oneread.seed %d)", seed, seed)
	roots := siteTrees(t)
	rd := newReadings()
	for _, upstream := range []string{"caddy_file_server", "nginx_static", "go_raw"} {
		for _, px := range recipeProxies {
			t.Run(px.name+"/"+upstream, func(t *testing.T) {
				origin := startFileServer(t, upstream, roots)
				addr := px.start(t, origin, plainCheckService(t, origin))
				_, portText, _ := net.SplitHostPort(addr)
				port, _ := strconv.Atoi(portText)
				oneReading(t, addr, port, rd, seed)
			})
		}
	}
	// nginx that serves the files itself (docs/proxies/nginx-files.conf):
	// the site is nginx, and the service's origin.
	t.Run("nginx_files", func(t *testing.T) {
		addr, port := startNginxFiles(t, roots[siteDefault])
		oneReading(t, addr, port, rd, seed)
	})
}

// startNginxFiles runs nginx with docs/proxies/nginx-files.conf serving
// root itself, and the decision service whose origin it is; it returns
// nginx's address and port.
func startNginxFiles(t *testing.T, root string) (string, int) {
	port, checkPort := freePort(t), freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	server := recipe(t, "nginx-files.conf", "", checkPort, port)
	server = strings.Replace(server, fmt.Sprintf("listen %d;", port), "listen "+addr+";", 1)
	server = strings.Replace(server, "root /var/www/example.com;", "root "+root+";", 1)
	runNginx(t, server)
	waitListening(t, addr)
	runCaddyfile(t, checkRecipe(t, addr, checkPort), checkPort)
	return addr, port
}

// TestNginxServesFiles: nginx serving a site itself asks the service again
// for each internal redirect of one request (the index file of a
// directory URL); the recipe's $request_id makes that one Crawl-delay
// unit, so a bot's three requests to a directory URL at once pass (the
// tolerance of Crawl-delay 60) and the fourth gets 429, as in Caddy.
func TestNginxServesFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nginx and the built Caddy")
	}
	roots := siteTrees(t)
	addr, _ := startNginxFiles(t, roots[siteDefault])
	dir := hostileRequest{method: "GET", target: "/public/", proto: "HTTP/1.1", hosts: []string{siteDefault}, ua: "DelayBot/1.0"}
	var got []string
	for i := range 4 {
		status, body := dir.send(addr, "198.51.100.50")
		got = append(got, fmt.Sprintf("%d %s", status, body))
		want := http.StatusOK
		if i == 3 {
			want = http.StatusTooManyRequests
		}
		if status != want {
			t.Errorf("request %d to a directory URL: %d %q, want %d (all: %q)", i+1, status, body, want, got)
		}
	}
	if !strings.HasPrefix(got[0], "200 served example.com /public/index.html") {
		t.Errorf("the directory URL's answer %q, want its index file", got[0])
	}
	// Another bot, to a file: one question each, the same tolerance.
	file := dir
	file.target, file.ua = "/public/x", "DelayBot/2.0"
	for i := range 4 {
		if status, _ := file.send(addr, "198.51.100.51"); (status == http.StatusOK) != (i < 3) {
			t.Errorf("request %d to a file: %d", i+1, status)
		}
	}
}

// oneReading runs the named and generated requests through the proxy at
// addr and the Crawl-delay check.
func oneReading(t *testing.T, addr string, port int, rd readings, seed uint64) {
	// The service fetches robots.txt at the first bot's question: wait
	// for a bot's refusal on a disallowed path.
	deadline := time.Now().Add(15 * time.Second)
	probe := hostileRequest{method: "GET", target: "/private/x", proto: "HTTP/1.1", hosts: []string{siteDefault}, ua: "FooBot/1.0"}
	for {
		status, body := probe.send(addr, "198.51.100.1")
		if status == http.StatusForbidden {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a bot on a disallowed path: %d %q, want 403", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, r := range namedReadings() {
		status, body := r.send(addr, "198.51.100.2")
		if why := rd.mismatch(r.ua, status, body); why != "" {
			t.Errorf("named case %q: %s: %d %s", r.name, r, status, why)
		}
	}
	reqs := generate(rand.New(rand.NewPCG(seed, uint64(port))), *oneReadN, port)
	var mu sync.Mutex
	statuses := map[int]int{}
	mismatches := 0
	var wg sync.WaitGroup
	next := make(chan int)
	for range 6 {
		wg.Go(func() {
			for i := range next {
				r := reqs[i]
				// A client address per request: no Crawl-delay budget
				// is shared, so every request is judged on its path.
				status, body := r.send(addr, fmt.Sprintf("203.0.%d.%d", i/250, i%250+1))
				why := rd.mismatch(r.ua, status, body)
				mu.Lock()
				statuses[status]++
				if why != "" {
					if mismatches++; mismatches <= 20 {
						t.Errorf("request %d: %s: %d %s", i, r, status, why)
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := range reqs {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Logf("%d generated requests: answers by status %v, %d mismatches", len(reqs), statuses, mismatches)
	oneBudget(t, addr, port)
}

// oneBudget: DelayBot (Crawl-delay 60 on example.com) from one address,
// with every spelling of example.com's Host the proxies may take, gets
// example.com's pages no more often than its tolerance allows (3 at once):
// a spelling that is judged as another site would get a fresh budget.
// (Another name, x.example.com, is another site under check.Caddyfile's
// site_names *.example.com, with its own budget, even where the file
// server serves it as its default: docs/proxies.md says so.)
func oneBudget(t *testing.T, addr string, port int) {
	p := strconv.Itoa(port)
	forms := []hostileRequest{
		{target: "/public/x", hosts: []string{siteDefault}},
		{target: "/public/x", hosts: []string{"EXAMPLE.COM"}},
		{target: "/public/x", hosts: []string{siteDefault + "."}},
		{target: "/public/x", hosts: []string{siteDefault + ":" + p}},
		{target: "/public/x", hosts: []string{"Example.Com.:" + p}},
		{target: "/public/x", hosts: []string{siteDefault + ":80"}},
		{target: "http://example.com/public/x", hosts: []string{siteDefault}},
		{target: "http://EXAMPLE.com./public/x", hosts: []string{siteDefault}},
		{target: "http://example.com/public/x", hosts: []string{siteOpen}},
		{target: "http://" + siteOpen + "/public/x", hosts: []string{siteDefault}},
		{target: "/public/x", hosts: []string{siteDefault + "," + siteOpen}},
		{target: "/public/x", hosts: []string{siteOpen + "," + siteDefault}},
		{target: "/public/x", hosts: []string{"x3.example.com," + siteDefault}},
		{target: "/public/x", hosts: []string{siteDefault, "x4.example.com"}},
		{target: "/public/x", hosts: []string{"x5.example.com", siteDefault}},
		{target: "/public/x", proto: "HTTP/1.0"},
		{target: "/public/x", hosts: []string{"127.0.0.1:" + p}},
		{target: "/public/x", hosts: []string{siteDefault}},
		{target: "/public/x", hosts: []string{siteDefault}},
		{target: "/public/x", hosts: []string{siteDefault}},
		{target: "/public/x", hosts: []string{siteDefault}},
	}
	got := 0
	var passed []string
	for _, r := range forms {
		r.method, r.ua = "GET", "DelayBot/1.0"
		if r.proto == "" {
			r.proto = "HTTP/1.1"
		}
		status, body := r.send(addr, "198.51.100.77")
		if site, _, ok := served(body); ok && status == http.StatusOK && site == siteDefault {
			got++
			passed = append(passed, r.String())
		}
	}
	if got > 3 {
		t.Errorf("DelayBot (Crawl-delay 60) from one address got example.com's page %d times of %d, want at most 3:\n%s",
			got, len(forms), strings.Join(passed, "\n"))
	}
}
