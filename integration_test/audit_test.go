package integration_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// auditRobots is the site's robots.txt in TestAuditMatchesLive.
const auditRobots = `User-agent: *
Disallow: /private/

User-agent: DelayBot
Crawl-delay: 60

User-agent: Googlebot
Allow: /
`

// TestAuditMatchesLive: real nginx (Combined log) in front of the built
// Caddy with robots_guard (JSON access log) in front of a site; a known
// mixture of clients goes through both, and "caddy robots audit" of each
// log finds exactly the clients the guard stopped live, with the counts
// it stopped them for.
func TestAuditMatchesLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nginx and the built Caddy")
	}
	bin, nginx := buildCaddy(t), daemon(t, "nginx")
	dir := t.TempDir()
	robotsFile, feed := filepath.Join(dir, "robots.txt"), filepath.Join(dir, "google.json")
	os.WriteFile(robotsFile, []byte(auditRobots), 0o644)
	os.WriteFile(feed, []byte(`{"creationTime":"2026-11-01T00:00:00","prefixes":[{"ipv4Prefix":"66.249.64.0/27"}]}`), 0o644)
	// The site serves the same robots.txt as the file the audit reads.
	robotsSite := newUpstream(t, auditRobots)

	// The guard: the built Caddy, its access log in JSON.
	guardPort, nginxPort := freePort(t), freePort(t)
	caddyLog, nginxLog := filepath.Join(dir, "caddy.log"), filepath.Join(dir, "nginx.log")
	verify := fmt.Sprintf(`verify {
			builtin off
			fetch_feeds at_start
			operator google {
				tokens Googlebot
				ip_ranges %s
			}
		}`, feed)
	caddyfile := fmt.Sprintf(`{
	admin off
	persist_config off
	servers {
		trusted_proxies static 127.0.0.1/32
		trusted_proxies_strict
	}
}
:%d {
	bind 127.0.0.1
	log {
		output file %s
		format json
	}
	robots_guard {
		%s
	}
	reverse_proxy %s
}
`, guardPort, caddyLog, verify, robotsSite.addr())
	runCaddyfile(t, caddyfile, guardPort)

	// nginx in front, as a load balancer's client: the Combined log.
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n"
	}
	conf := fmt.Sprintf(`%sworker_processes 1;
error_log %[2]s/error.log;
pid %[2]s/nginx.pid;
events {}
http {
	access_log %[3]s combined;
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	server {
		listen 127.0.0.1:%[4]d;
		set_real_ip_from 127.0.0.0/8;
		real_ip_header X-Forwarded-For;
		location / {
			proxy_set_header Host $host;
			proxy_set_header X-Forwarded-For $remote_addr;
			proxy_pass http://127.0.0.1:%[5]d;
		}
	}
}
`, user, dir, nginxLog, nginxPort, guardPort)
	os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644)
	process(t, nginx, nil, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
	p := proxyClient{t: t, addr: fmt.Sprintf("127.0.0.1:%d", nginxPort), c: &http.Client{Timeout: 10 * time.Second}}
	waitListening(t, p.addr)

	// Warm: the feed loaded (a verified Googlebot passes /private/).
	deadline := time.Now().Add(15 * time.Second)
	for p.get("/private/warm", googlebotUA, "66.249.64.9").status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("Googlebot not verified after 15s")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The mixture, and what the guard did with it live, per client.
	live := map[string]*[2]int{} // client address: [403s, 429s]
	send := func(path, ua, ip string) {
		a := p.get(path, ua, ip)
		if live[ip] == nil {
			live[ip] = &[2]int{}
		}
		switch a.status {
		case 403:
			live[ip][0]++
		case 429:
			live[ip][1]++
		case 200:
		default:
			t.Errorf("%s %s from %s: %d", ua, path, ip, a.status)
		}
	}
	for i := range 6 {
		send("/", browserUA, "198.51.100.1")                           // a browser, anywhere
		send(fmt.Sprintf("/private/%d", i), browserUA, "198.51.100.1") // even here
		send(fmt.Sprintf("/page/%d", i), "GoodBot/1.0", "192.0.2.10")  // compliant
		send("/d", "DelayBot/1.0", "192.0.2.20")                       // faster than Crawl-delay 60
		if i < 3 {
			send(fmt.Sprintf("/private/%d", i), "BadBot/1.0", "192.0.2.30") // ignores Disallow
			send("/private/g", googlebotUA, "11.0.113.9")                   // spoofed Googlebot
			send("/private/g", googlebotUA, "66.249.64.5")                  // the real one
		}
	}
	send("/robots.txt", "BadBot/1.0", "192.0.2.30")
	want := map[string]string{}
	for ip, n := range live {
		if n[0]+n[1] > 0 {
			want[ip+"/32"] = fmt.Sprintf("stopped %d, throttled %d", n[0], n[1])
		}
	}
	if len(want) != 3 {
		t.Fatalf("live: %v, want three offenders (BadBot, DelayBot, the spoofed Googlebot)", want)
	}

	// The audit of each log, with the guard's verify block in JSON.
	cfg := filepath.Join(dir, "guard.json")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`{"verify":{"builtin":false,"fetch_feeds":"at_start","operators":[{"name":"google","tokens":["Googlebot"],"ip_ranges":[%q]}]}}`, feed)), 0o644)
	waitFlushed(t, caddyLog, nginxLog)
	for _, log := range []string{nginxLog, caddyLog} {
		out, err := exec.Command(bin, "robots", "audit", "--json", "--robots", robotsFile, "--config", cfg, "--site", "http://example.com", log).Output()
		if code := exitCode(err); code != 1 {
			t.Fatalf("audit of %s: exit %d (%v), want 1 (offenders found)\n%s", filepath.Base(log), code, err, out)
		}
		var res struct {
			Files []struct{ Format string }
			Sites []struct {
				Site      string
				Offenders []struct {
					Client                                 string
					Disallowed, Spoofed, Throttled, Banned int
				}
			}
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, s := range res.Sites {
			for _, r := range s.Offenders {
				got[r.Client] = fmt.Sprintf("stopped %d, throttled %d", r.Disallowed+r.Spoofed+r.Banned, r.Throttled)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("audit of %s (%s): %v\nlive: %v", filepath.Base(log), res.Files[0].Format, got, want)
		}
	}

	// Offline, no claim is checked: the spoofed Googlebot is judged as
	// the guard judges a claim it cannot check (its group and "*"), so
	// its /private/ fetches are stopped, and the table says why.
	cmd := exec.Command(bin, "robots", "audit", "--offline", "--robots", robotsFile, "--config", cfg, "--site", "http://example.com", nginxLog)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	spoofed := ""
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "11.0.113.9/32 ") {
			spoofed = line
		}
	}
	if code := exitCode(err); code != 1 || !regexp.MustCompile(`unverifiable \(offline\) google +3 +3 `).MatchString(spoofed) || stderr.Len() > 0 {
		t.Errorf("offline audit: exit %d (%v)\n%s\nstandard error: %s", code, err, out, stderr.String())
	}
}

// waitFlushed waits until each log holds the last request (nginx and
// Caddy write their access log lines after the answer).
func waitFlushed(t *testing.T, logs ...string) {
	deadline := time.Now().Add(5 * time.Second)
	for _, l := range logs {
		for {
			b, _ := os.ReadFile(l)
			if strings.Contains(string(b), "/robots.txt") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s has no line of the last request", l)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// exitCode is the exit status of a command's error (0 for none).
func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestAuditByHistory: a robots.txt edited mid-log. The guard keeps each
// version of the site's robots.txt (the admin API's sites list shows both),
// and "caddy robots audit --history" judges the requests before the edit by
// the old version and those after it by the new one, as the guard did live.
func TestAuditByHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built Caddy's audit command")
	}
	bin := buildCaddy(t)
	up := newUpstream(t, "User-agent: *\nDisallow: /old/\n")
	port := freePort(t)
	logFile := filepath.Join(t.TempDir(), "access.log")
	tc := load(t, "", fmt.Sprintf("http://127.0.0.1:%d {\n\tlog {\n\t\toutput file %s\n\t\tformat json\n\t}\n\trobots_guard {\n\t\tverify off\n\t}\n\treverse_proxy %s\n}\n",
		port, filepath.ToSlash(logFile), up.addr()))
	get(t, tc, port, "/old/a", "FooBot/1.0").check(t, "before the edit, /old/", 403, "line 2")
	get(t, tc, port, "/new/a", "FooBot/1.0").check(t, "before the edit, /new/", 200, "page /new/a")
	time.Sleep(20 * time.Millisecond)
	up.set(200, "User-agent: *\nDisallow: /new/\n")
	if code, b := adminDo(t, "POST", "/robots_guard/refresh"); code != 200 {
		t.Fatalf("refresh: %d %s", code, b)
	}
	get(t, tc, port, "/old/b", "FooBot/1.0").check(t, "after the edit, /old/", 200, "page /old/b")
	get(t, tc, port, "/new/b", "FooBot/1.0").check(t, "after the edit, /new/", 403, "line 2")
	get(t, tc, port, "/robots.txt", "FooBot/1.0").check(t, "robots.txt", 200, "Disallow")

	var sitesList []struct {
		Site    string
		History []struct {
			SHA256    string
			FirstSeen time.Time `json:"first_seen"`
		}
	}
	adminJSON(t, "GET", "/robots_guard/sites", &sitesList)
	site := fmt.Sprintf("http://127.0.0.1:%d", port)
	found := false
	for _, s := range sitesList {
		if s.Site == site {
			found = true
			if len(s.History) != 2 || s.History[0].SHA256 == s.History[1].SHA256 || !s.History[1].FirstSeen.After(s.History[0].FirstSeen) {
				t.Errorf("history of %s: %+v, want the two versions", site, s.History)
			}
		}
	}
	if !found {
		t.Fatalf("%s not in the sites list", site)
	}
	waitFlushed(t, logFile)
	cmd := exec.Command(bin, "robots", "audit", "--json", "--offline", "--history", fmt.Sprintf("localhost:%d", adminPort), logFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitCode(err); code != 1 {
		t.Fatalf("audit: exit %d (%v)\n%s%s", code, err, out, stderr.String())
	}
	var res struct {
		History map[string]int
		Sites   []struct {
			Site      string
			Offenders []struct {
				Disallowed int
				Examples   []struct{ Target string }
			}
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	// Six requests judged by the site's history: all but the guard's first
	// robots.txt fetch, made before the first version was seen.
	if len(res.Sites) != 1 || len(res.Sites[0].Offenders) != 1 || res.Sites[0].Offenders[0].Disallowed != 2 ||
		fmt.Sprint(res.Sites[0].Offenders[0].Examples) != "[{/old/a} {/new/b}]" || res.History[site] != 6 {
		t.Errorf("audit by history: %s", out)
	}
}

// TestAuditPageInBrowser: "caddy robots audit --html" writes a page that
// headless Chromium shows with its offenders, lines and chart, without a
// request to anywhere but the file itself and without a console error (a
// style its policy refused would be one); a screenshot for the docs.
func TestAuditPageInBrowser(t *testing.T) {
	chrome := chromium(t)
	bin, dir := buildCaddy(t), t.TempDir()
	robots := filepath.Join(dir, "robots.txt")
	os.WriteFile(robots, []byte("User-agent: *\nDisallow: /private/\nDisallow: /search\nCrawl-delay: 30\n\nUser-agent: GPTBot\nDisallow: /\n"), 0o644)
	var log strings.Builder
	t0 := time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC)
	gptbot := "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	for i := range 3000 {
		at := t0.Add(time.Duration(i) * 7 * time.Second)
		ip, ua, path := fmt.Sprintf("198.51.100.%d", i%40), browserUA, fmt.Sprintf("/blog/%d", i%50)
		switch {
		case i%7 == 0:
			ip, ua, path = "192.0.2.66", gptbot, fmt.Sprintf("/blog/%d", i%50)
		case i%11 == 0:
			ip, ua, path = "192.0.2.30", "BadBot/1.0", fmt.Sprintf("/private/%d", i)
		case i%3 == 0: // every 21 s or so, under a Crawl-delay of 30
			ip, ua = "192.0.2.20", "FastBot/2.0"
		case i%13 == 0:
			ip, ua, path = "192.0.2.10", "GoodBot/1.0", "/about"
		}
		fmt.Fprintf(&log, "%s - - [%s] \"GET %s HTTP/1.1\" 200 512 \"-\" %q\n", ip, at.Format("02/Jan/2006:15:04:05 -0700"), path, ua)
	}
	logFile, page := filepath.Join(dir, "access.log"), filepath.Join(dir, "audit.html")
	os.WriteFile(logFile, []byte(log.String()), 0o644)
	out, err := exec.Command(bin, "robots", "audit", "--offline", "--robots", robots, "--site", "https://example.com", "--html", page, logFile).CombinedOutput()
	if code := exitCode(err); code != 1 {
		t.Fatalf("audit: exit %d\n%s", code, out)
	}

	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	browser := openPage(t, chrome, 1280, 900, time.Minute)
	ctx := browser.ctx
	url := "file://" + page
	must("open the page", chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("site-0"))))
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](`({
		offenders: document.querySelectorAll('table.offenders tbody tr').length,
		lines: document.querySelectorAll('table.lines tbody tr').length,
		bars: document.querySelectorAll('figure.chart rect:not(.hover)').length,
		styled: document.styleSheets.length,
	})`))
	must("read the page", err)
	if facts["offenders"] != 3 || facts["lines"] < 2 || facts["bars"] < 10 || facts["styled"] != 1 {
		t.Errorf("the page shows %v, want 3 offenders (GPTBot, BadBot, FastBot), the lines they broke and a chart", facts)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must("screenshot", err)
	shots := os.Getenv("ROBOTSGUARD_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "robotsguard-screenshots")
	}
	os.MkdirAll(shots, 0o755)
	must("screenshot", os.WriteFile(filepath.Join(shots, "audit.png"), png, 0o644))
	requests, problems := browser.seen()
	for _, u := range requests {
		if u != url {
			t.Errorf("the page made a request to %s", u)
		}
	}
	if len(problems) > 0 {
		t.Errorf("console errors or warnings: %q", problems)
	}
}
