package integration_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	cf := filepath.Join(dir, "Caddyfile")
	os.WriteFile(cf, []byte(caddyfile), 0o644)
	process(t, bin, []string{"XDG_CONFIG_HOME=" + t.TempDir(), "XDG_DATA_HOME=" + t.TempDir()}, "run", "--config", cf, "--adapter", "caddyfile")
	waitListening(t, fmt.Sprintf("127.0.0.1:%d", guardPort))

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
