package integration_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testlicense"
)

// startLicensedOrigin starts the site behind a proxy in the licence
// tests, for the test's duration, and returns its address and a function
// that sets the URL of its RSL document: its robots.txt names that URL in
// a License line and disallows /private/ to every bot; /license.xml is
// the document (licenseRSL, for the licence server ls); every other path
// is a page that names itself.
func startLicensedOrigin(t *testing.T, ls *testlicense.Server) (addr string, setDoc func(string)) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var doc atomic.Pointer[string]
	rsl := licenseRSL(ls)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "License: %s\nUser-agent: *\nDisallow: /private/\n", *doc.Load())
		case "/license.xml":
			w.Header().Set("Content-Type", "application/rsl+xml")
			io.WriteString(w, rsl)
		default:
			fmt.Fprintf(w, "page %s", r.URL.Path)
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String(), func(u string) { doc.Store(&u) }
}

// licensedCheckService runs the built Caddy with docs/proxies/check.Caddyfile
// on checkPort, its robots_txt origin the site at origin, with localhost
// in site_names beside the recipe's names: the licence tests' site is
// localhost, for the licence server on 127.0.0.1 is asked only for a site
// in the private network itself (a site's file chose its address).
func licensedCheckService(t *testing.T, origin string, checkPort int) {
	t.Helper()
	conf := checkRecipe(t, origin, checkPort)
	const names = "site_names example.com *.example.com\n"
	if !strings.Contains(conf, names) {
		t.Fatalf("check.Caddyfile has no line %q", names)
	}
	runCaddyfile(t, strings.Replace(conf, names, "site_names example.com *.example.com localhost\n", 1))
	waitListening(t, fmt.Sprintf("127.0.0.1:%d", checkPort))
}

// TestLicensesThroughProxies runs RSL 1.0 licence enforcement (issue 49)
// through each proxy of recipeProxies with its recipe of docs/proxies as
// shipped, asking the built Caddy with docs/proxies/check.Caddyfile, whose
// robots_txt origin is the site: the answers are the ones a Caddy site
// gives (TestLicenses). A bot without a token on licensed content gets 401
// with the WWW-Authenticate: License challenge, 402 for a purchase and 503
// when its token cannot be checked; with a valid token the page, with an
// expired one or one for another site 401 invalid_token; every answer to
// the bot on licensed content carries the Link to the document, and a
// browser is never asked. How each proxy gets there:
//   - nginx (nginx.conf): auth_request takes the service's 401 and passes
//     its challenge on, and the recipe gives it the message as its body;
//     the 503 the service answers nginx as 403, and the recipe turns it
//     back, with the challenge;
//   - caddy_forward_auth (forward_auth.Caddyfile): a refusal is the
//     service's own answer, passed on as it is, and the Link of an allowed
//     request is copied to the site's answer;
//   - haproxy (haproxy.cfg and robots_guard.lua): the Lua action passes the
//     client's Authorization: License token to the service, sends a
//     refusal (401, 402, 503) to the client as the service wrote it, with
//     its challenge, Link and body, and keeps the Link of an allowed
//     request in a variable, which the recipe's http-response rule adds to
//     the site's answer.
func TestLicensesThroughProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nginx, HAProxy and the built Caddy")
	}
	for _, px := range recipeProxies {
		t.Run(px.name, func(t *testing.T) { licensesThroughProxy(t, behind(px.start)) })
	}
}

// TestLicensesThroughNginxFiles is TestLicensesThroughProxies/nginx with
// nginx serving the site's files itself (docs/proxies/nginx-files.conf, its
// site named localhost), the service's origin.
func TestLicensesThroughNginxFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nginx and the built Caddy")
	}
	licensesThroughProxy(t, func(t *testing.T, ls *testlicense.Server) int {
		port, checkPort := freePort(t), freePort(t)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		root := t.TempDir()
		files := map[string]string{
			"robots.txt":  fmt.Sprintf("License: http://localhost:%d/license.xml\nUser-agent: *\nDisallow: /private/\n", port),
			"license.xml": licenseRSL(ls),
		}
		for _, p := range []string{"/articles/1", "/articles/2", "/articles/3", "/paid/x", "/free/x", "/public", "/private/x"} {
			files[p[1:]] = "page " + p
		}
		for name, body := range files {
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		server := recipe(t, "nginx-files.conf", "", checkPort, port)
		for _, r := range [][2]string{
			{fmt.Sprintf("listen %d;", port), "listen " + addr + ";"},
			{"root /var/www/example.com;", "root " + root + ";"},
			{"set $robots_guard_site example.com;", "set $robots_guard_site localhost;"},
		} {
			if !strings.Contains(server, r[0]) {
				t.Fatalf("nginx-files.conf has no %q", r[0])
			}
			server = strings.Replace(server, r[0], r[1], 1)
		}
		runNginx(t, server)
		waitListening(t, addr)
		licensedCheckService(t, addr, checkPort)
		return port
	})
}

// behind returns the start of licensesThroughProxy for a proxy that start
// runs with its recipe in front of startLicensedOrigin's site: the site's
// License line names its document at the site's own URL, through the
// proxy, as a real site's would.
func behind(start func(t *testing.T, site string, checkPort int) string) func(*testing.T, *testlicense.Server) int {
	return func(t *testing.T, ls *testlicense.Server) int {
		site, setDoc := startLicensedOrigin(t, ls)
		checkPort := freePort(t)
		licensedCheckService(t, site, checkPort)
		_, portText, _ := net.SplitHostPort(start(t, site, checkPort))
		port, _ := strconv.Atoi(portText)
		setDoc(fmt.Sprintf("http://localhost:%d/license.xml", port))
		return port
	}
}

// licensesThroughProxy is the licence matrix through a proxy on the port
// that start returns, in front of a site whose robots.txt names the RSL
// document http://localhost:port/license.xml (licenseRSL, for the licence
// server ls), asked for as http://localhost:port.
func licensesThroughProxy(t *testing.T, start func(t *testing.T, ls *testlicense.Server) int) {
	ls := testlicense.Start(t)
	base := fmt.Sprintf("http://localhost:%d", start(t, ls))
	doc := base + "/license.xml"

	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	get := func(path, ua, token string) answer {
		t.Helper()
		return licensedGet(t, client, base+path, ua, token)
	}
	link := `<` + doc + `>; rel="license"; type="application/rsl+xml"`
	// The answer's Link values, joined: link alone when it is sent once.
	links := func(a answer) string { return strings.Join(a.header.Values("Link"), " | ") }
	// The answer's challenge: "" when there is none, and a value that
	// says so when there are two.
	challenge := func(a answer) string {
		if v := a.header.Values("WWW-Authenticate"); len(v) > 1 {
			return fmt.Sprintf("two challenges: %q", v)
		}
		return a.header.Get("WWW-Authenticate")
	}
	aud := base + "/"

	a := get("/articles/1", gptbotUA, "")
	wantChallenge := `License error="invalid_request", error_description="Access to this resource requires a valid license", authorization_uri="` + ls.URL + `/token"`
	if a.status != 401 || challenge(a) != wantChallenge || links(a) != link ||
		!strings.HasPrefix(a.body, "Licensed content: ") {
		t.Errorf("GPTBot on /articles/1 without a token: %d %q, WWW-Authenticate %q, Link %q; "+
			"want 401 with the message, one License challenge naming %s/token, the Link %q",
			a.status, a.body, challenge(a), links(a), ls.URL, link)
	}

	a = get("/articles/1", gptbotUA, ls.Token(aud, time.Hour))
	if a.status != 200 || a.body != "page /articles/1" || links(a) != link || challenge(a) != "" {
		t.Errorf("GPTBot on /articles/1 with a valid token: %d %q, Link %q, WWW-Authenticate %q; want 200 with the page and the Link, no challenge",
			a.status, a.body, links(a), challenge(a))
	}

	for _, bad := range []struct{ name, token string }{
		{"expired", ls.Token(aud, -time.Hour)},
		{"for another site", ls.Token("http://example.com/", time.Hour)},
	} {
		a := get("/articles/2", gptbotUA, bad.token)
		if a.status != 401 || !strings.HasPrefix(challenge(a), `License error="invalid_token"`) || links(a) != link {
			t.Errorf("GPTBot on /articles/2 with a token %s: %d %q, WWW-Authenticate %q, Link %q; want 401 invalid_token with the Link",
				bad.name, a.status, a.body, challenge(a), links(a))
		}
	}

	a = get("/paid/x", gptbotUA, "")
	if a.status != 402 || !strings.HasPrefix(challenge(a), "License ") || links(a) != link {
		t.Errorf("GPTBot on /paid/x (a purchase) without a token: %d %q, WWW-Authenticate %q, Link %q; want 402 with one challenge and the Link",
			a.status, a.body, challenge(a), links(a))
	}
	a = get("/free/x", gptbotUA, "")
	if a.status != 200 || a.body != "page /free/x" || links(a) != link || challenge(a) != "" {
		t.Errorf("GPTBot on /free/x (terms, no licence server): %d %q, Link %q; want 200 with the page and the Link", a.status, a.body, links(a))
	}
	a = get("/public", gptbotUA, "")
	if a.status != 200 || a.body != "page /public" || links(a) != "" {
		t.Errorf("GPTBot on /public (no licence): %d %q, Link %q; want 200 with the page, no Link", a.status, a.body, links(a))
	}
	a = get("/private/x", gptbotUA, ls.Token(aud, time.Hour))
	if a.status != 403 || challenge(a) != "" {
		t.Errorf("GPTBot on /private/x (robots.txt disallows it), with a valid token: %d %q, WWW-Authenticate %q; want 403", a.status, a.body, challenge(a))
	}
	a = get("/articles/1", browserUA, "")
	if a.status != 200 || a.body != "page /articles/1" || challenge(a) != "" || links(a) != "" {
		t.Errorf("a browser on /articles/1: %d %q, WWW-Authenticate %q, Link %q; want 200 with the page, no challenge, no Link",
			a.status, a.body, challenge(a), links(a))
	}

	// The licence server does not answer: a token it must be asked about
	// (opaque, introspected) cannot be checked, 503.
	ls.SetDown(true)
	a = get("/articles/3", gptbotUA, ls.Opaque(aud, time.Hour))
	ls.SetDown(false)
	if a.status != 503 || !strings.HasPrefix(challenge(a), `License error="server_error"`) || links(a) != link {
		t.Errorf("GPTBot on /articles/3, the licence server down: %d %q, WWW-Authenticate %q, Link %q; want 503 server_error with the Link",
			a.status, a.body, challenge(a), links(a))
	}
}
