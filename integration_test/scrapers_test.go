package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// debianPython is Debian's interpreter, which imports the python3-requests
// and python3-scrapy packages that .ci/run installs (a python3 earlier in
// PATH, a virtualenv's, may not).
const debianPython = "/usr/bin/python3"

// scraperPages is how many pages under /private/ the scrapers ask for.
const scraperPages = 20

// scraperPublic are the site's public pages, asked for after the private
// ones: "*" allows them, so that an undeclared bot is answered 200 there,
// which shows that each scraper reached the site and was judged by "*",
// not refused everything.
var scraperPublic = []string{"/", "/about.html", "/news.html"}

// fetched is one response a scraper got: the URL it asked for, the
// response's status and its body.
type fetched struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// scraperRun runs a scraper in dir on the URLs listed (one a line) in the
// file list, every one wearing ua, and returns what it got; https says the
// URLs are https ones, whose certificate is not to be checked.
type scraperRun func(t *testing.T, dir, list, ua string, https bool) []fetched

// scraper is a real scraper, as its users run it: its default headers,
// with only its User-Agent set to a browser's.
type scraper struct {
	name string
	// acceptLanguage reports a scraper that sends Accept-Language by
	// default (Scrapy: DEFAULT_REQUEST_HEADERS has "Accept-Language: en").
	// Over http no other header is read, so it passes as the browser it
	// names; over https the client hint it does not send gives it away.
	acceptLanguage bool
	// prepare checks that the scraper is installed (skipping the test, or
	// failing it under CI, when it is not) and returns how to run it.
	prepare func(t *testing.T) scraperRun
}

// TestUndeclaredScrapers: real scrapers (python-requests, GNU Wget, colly,
// Scrapy) that wear a current Chrome's User-Agent but send their own
// default headers are undeclared bots from their first request: over http
// and over https, every page robots.txt's "*" group disallows is answered
// 403, with a body that names the undeclared bot and the header it did not
// send, while "*" serves them the public pages. Scrapy, which sends
// Accept-Language by default, passes over http and is caught over https by
// its missing fetch metadata (Sec-Fetch-Mode). With undeclared off, the same
// scraper is served the disallowed pages, so the 403s are the feature's.
func TestUndeclaredScrapers(t *testing.T) {
	httpPort, httpsPort, offPort := freePort(t), freePort(t), freePort(t)
	tc := load(t, "skip_install_trust\n\tauto_https disable_redirects",
		scraperSite(fmt.Sprintf("http://127.0.0.1:%d", httpPort), "", "")+
			scraperSite(fmt.Sprintf("https://127.0.0.1:%d", httpsPort), "", "tls internal")+
			scraperSite(fmt.Sprintf("http://127.0.0.1:%d", offPort), " {\n\t\tbots {\n\t\t\tundeclared off\n\t\t}\n\t}", ""))
	bases := map[bool]string{false: fmt.Sprintf("http://127.0.0.1:%d", httpPort), true: fmt.Sprintf("https://127.0.0.1:%d", httpsPort)}
	waitCertificate(t, fmt.Sprintf("127.0.0.1:%d", httpsPort))

	// A browser's headers (browserHeaders) are served the private pages on
	// both schemes: what refuses the scrapers is what they send.
	for _, https := range []bool{false, true} {
		req, err := http.NewRequest(http.MethodGet, bases[https]+"/private/page-01.html", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", browserUA)
		browserHeaders(req.Header)
		resp, err := tc.Client.Do(req)
		if err != nil {
			t.Fatalf("the browser's request to %s: %v", req.URL, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the browser's request to %s: %d, want 200", req.URL, resp.StatusCode)
		}
	}

	scrapers := []scraper{
		{name: "python-requests", prepare: requestsScraper},
		{name: "wget", prepare: wgetScraper},
		{name: "colly", prepare: collyScraper},
		{name: "scrapy", acceptLanguage: true, prepare: scrapyScraper},
	}
	for _, s := range scrapers {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			run := s.prepare(t)
			for _, https := range []bool{false, true} {
				scheme := schemeName(https)
				t.Run(scheme, func(t *testing.T) {
					dir := t.TempDir()
					list, urls := scraperList(t, dir, bases[https])
					got := run(t, dir, list, browserUA, https)
					status, header := http.StatusForbidden, "Accept-Language"
					if s.acceptLanguage {
						status, header = http.StatusOK, ""
						if https {
							status, header = http.StatusForbidden, "Sec-Fetch-Mode"
						}
					}
					checkScraper(t, s.name+" over "+scheme, urls, got, status, header)
				})
			}
			if s.name == "python-requests" {
				// The control: the same scraper, judged as the Chrome it
				// names (undeclared off), is served every page.
				t.Run("http-undeclared-off", func(t *testing.T) {
					dir := t.TempDir()
					list, urls := scraperList(t, dir, fmt.Sprintf("http://127.0.0.1:%d", offPort))
					checkScraper(t, s.name+" with undeclared off", urls, run(t, dir, list, browserUA, false), http.StatusOK, "")
				})
			}
		})
	}
}

// scraperSite is a site block at addr whose robots.txt disallows /private/
// to "*", served by Caddy itself behind robots_guard (with the block
// guard), with an extra line (tls internal) before.
func scraperSite(addr, guard, extra string) string {
	return fmt.Sprintf(`%s {
	%s
	robots_guard%s
	respond /robots.txt "User-agent: *
Disallow: /private/
"
	respond /private/* "private page {path}"
	respond "public page {path}"
}
`, addr, extra, guard)
}

// scraperList writes into dir the list of URLs under base that a scraper
// is to fetch, the private pages first, and returns its path and the URLs.
func scraperList(t *testing.T, dir, base string) (string, []string) {
	t.Helper()
	var urls []string
	for i := 1; i <= scraperPages; i++ {
		urls = append(urls, fmt.Sprintf("%s/private/page-%02d.html", base, i))
	}
	for _, p := range scraperPublic {
		urls = append(urls, base+p)
	}
	list := filepath.Join(dir, "urls.txt")
	if err := os.WriteFile(list, []byte(strings.Join(urls, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return list, urls
}

// checkScraper checks that the scraper asked for each of urls once, and
// was answered 200 for the public pages and private for the private ones,
// with a body that names the undeclared bot and the header it did not send
// when private is 403. It logs the status counts and the first private
// page's body.
func checkScraper(t *testing.T, what string, urls []string, got []fetched, private int, header string) {
	t.Helper()
	byURL := map[string]fetched{}
	counts := map[int]int{}
	for _, f := range got {
		if _, dup := byURL[f.URL]; dup {
			t.Errorf("%s: %s was answered twice", what, f.URL)
		}
		byURL[f.URL] = f
		counts[f.Status]++
	}
	t.Logf("%s: %d responses, by status %v; %s: %q", what, len(got), counts, urls[0], byURL[urls[0]].Body)
	for _, u := range urls {
		f, ok := byURL[u]
		switch {
		case !ok:
			t.Errorf("%s: no response for %s", what, u)
		case !strings.Contains(u, "/private/"):
			if f.Status != http.StatusOK {
				t.Errorf("%s: public %s: %d %q, want 200", what, u, f.Status, f.Body)
			}
		case f.Status != private:
			t.Errorf("%s: %s: %d %q, want %d", what, u, f.Status, f.Body, private)
		case private == http.StatusForbidden && (!strings.Contains(f.Body, "undeclared bot") || !strings.Contains(f.Body, "it sent no "+header)):
			t.Errorf("%s: %s: 403 %q, want a body that names the undeclared bot and its missing %s", what, u, f.Body, header)
		}
	}
	if len(got) != len(urls) {
		t.Errorf("%s: %d responses for %d URLs", what, len(got), len(urls))
	}
}

// needScraper fails the test under CI, whose .ci/run installs the Debian
// package pkg, when ok is false, and otherwise skips it with the same
// message.
func needScraper(t *testing.T, ok bool, what, pkg string) {
	t.Helper()
	if ok {
		return
	}
	msg := fmt.Sprintf("%s is not installed: .ci/run installs Debian's %s (apt-get install %s)", what, pkg, pkg)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// pythonImports reports whether Debian's python3 imports module.
func pythonImports(module string) bool {
	return exec.Command(debianPython, "-c", "import "+module).Run() == nil
}

// runScraper runs name with args in dir, within timeout, and returns its
// standard output and error; it fails the test when the command fails with
// an exit status other than those in ok.
func runScraper(t *testing.T, dir string, timeout time.Duration, env []string, ok []int, name string, args ...string) (stdout, stderr []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && ctx.Err() == nil && containsInt(ok, exit.ExitCode())) {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, out.Bytes(), errOut.Bytes())
	}
	return out.Bytes(), errOut.Bytes()
}

// schemeName is "https" for https, "http" otherwise.
func schemeName(https bool) string {
	if https {
		return "https"
	}
	return "http"
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// jsonLines decodes the fetched records a scraper wrote, one JSON object
// a line.
func jsonLines(t *testing.T, what string, b []byte) []fetched {
	t.Helper()
	var got []fetched
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var f fetched
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("%s: %q: %v", what, sc.Bytes(), err)
		}
		got = append(got, f)
	}
	return got
}

// requestsScript fetches each URL of the list (argv[2]) with requests.get,
// wearing the User-Agent argv[1], and prints what it got, a JSON line for
// each; argv[3] "https" turns certificate checks off.
const requestsScript = `import json, sys
import requests, urllib3
urllib3.disable_warnings()
ua, urls, https = sys.argv[1], [l.strip() for l in open(sys.argv[2]) if l.strip()], sys.argv[3] == "https"
for u in urls:
    r = requests.get(u, headers={"User-Agent": ua}, verify=not https, timeout=10)
    print(json.dumps({"url": u, "status": r.status_code, "body": r.text}), flush=True)
`

// requestsScraper is python-requests (Debian's python3-requests).
func requestsScraper(t *testing.T) scraperRun {
	needScraper(t, pythonImports("requests"), "python-requests", "python3-requests")
	return func(t *testing.T, dir, list, ua string, https bool) []fetched {
		out, _ := runScraper(t, dir, 30*time.Second, nil, nil, debianPython, "-c", requestsScript, ua, list, schemeName(https))
		return jsonLines(t, "python-requests", out)
	}
}

var (
	// wgetURL is the line with which wget starts a URL ("--2025-06-01
	// 12:00:00--  http://...").
	wgetURL = regexp.MustCompile(`^--\d{4}-\d\d-\d\d \d\d:\d\d:\d\d--\s+(\S+)$`)
	// wgetStatus is a status line of --server-response ("  HTTP/1.1 403
	// Forbidden").
	wgetStatus = regexp.MustCompile(`^\s+HTTP/[\d.]+ (\d{3})`)
)

// wgetScraper is GNU Wget, given the list with -i: it writes each
// response's headers to its standard error (--server-response), where the
// statuses are read, and saves each body, 403s' too (--content-on-error),
// under the URL's path.
func wgetScraper(t *testing.T) scraperRun {
	_, err := exec.LookPath("wget")
	needScraper(t, err == nil, "wget", "wget")
	return func(t *testing.T, dir, list, ua string, https bool) []fetched {
		args := []string{"-e", "robots=off", "--user-agent=" + ua, "-i", list, "--server-response",
			"--content-on-error", "--force-directories", "--no-host-directories", "--directory-prefix=bodies",
			"--tries=1", "--timeout=10"}
		if https {
			args = append(args, "--no-check-certificate")
		}
		// wget exits 8 when a server answered an error (the 403s).
		_, stderr := runScraper(t, dir, 30*time.Second, []string{"LC_ALL=C"}, []int{8}, "wget", args...)
		var got []fetched
		for _, line := range strings.Split(string(stderr), "\n") {
			if m := wgetURL.FindStringSubmatch(line); m != nil {
				got = append(got, fetched{URL: m[1]})
			} else if m := wgetStatus.FindStringSubmatch(line); m != nil && len(got) > 0 {
				got[len(got)-1].Status, _ = strconv.Atoi(m[1])
			}
		}
		for i, f := range got {
			u, err := url.Parse(f.URL)
			if err != nil {
				t.Fatalf("wget: %s: %v", f.URL, err)
			}
			p := u.Path
			if strings.HasSuffix(p, "/") {
				p += "index.html"
			}
			b, err := os.ReadFile(filepath.Join(dir, "bodies", filepath.FromSlash(p)))
			if err != nil {
				t.Errorf("wget: the body of %s: %v", f.URL, err)
			}
			got[i].Body = string(b)
		}
		if len(got) == 0 {
			t.Fatalf("wget: no URL in its output:\n%s", stderr)
		}
		return got
	}
}

// collyVersion is the colly release the test builds: a fixed one, so that
// the headers it sends change with a change of this line only.
const collyVersion = "v2.3.0"

// collyProgram visits each URL of the list (os.Args[2]) with a default
// colly collector, wearing the User-Agent os.Args[1], and prints what it
// got, a JSON line for each; os.Args[3] "https" turns certificate checks
// off.
const collyProgram = `package main

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"strings"

	"github.com/gocolly/colly/v2"
)

func main() {
	list, err := os.ReadFile(os.Args[2])
	if err != nil {
		panic(err)
	}
	c := colly.NewCollector(colly.UserAgent(os.Args[1]))
	if os.Args[3] == "https" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		c.WithTransport(tr)
	}
	out := json.NewEncoder(os.Stdout)
	record := func(r *colly.Response) {
		out.Encode(map[string]any{"url": r.Request.URL.String(), "status": r.StatusCode, "body": string(r.Body)})
	}
	c.OnResponse(record)
	c.OnError(func(r *colly.Response, err error) { record(r) })
	for _, u := range strings.Fields(string(list)) {
		c.Visit(u)
	}
}
`

// collyScraper is github.com/gocolly/colly/v2, built from a module of its
// own in a temporary directory (the repository's go.mod does not require
// it), fetched through the Go module proxy. Offline, outside CI, the test
// is skipped.
func collyScraper(t *testing.T) scraperRun {
	goBinary, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("colly is built with the go command, which is not in PATH: %v", err)
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module scraper\n\ngo 1.24\n\nrequire github.com/gocolly/colly/v2 "+collyVersion+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(collyProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(src, "scraper")
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", bin, "."}} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, goBinary, args...)
		cmd.Dir, cmd.Env = src, env
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			msg := fmt.Sprintf("colly %s: go %s: %v\n%s", collyVersion, strings.Join(args, " "), err, out)
			if os.Getenv("CI") == "" && args[0] == "mod" {
				t.Skip(msg + "(is the Go module proxy unreachable?)")
			}
			t.Fatal(msg)
		}
	}
	return func(t *testing.T, dir, list, ua string, https bool) []fetched {
		out, _ := runScraper(t, dir, 30*time.Second, nil, nil, bin, ua, list, schemeName(https))
		return jsonLines(t, "colly", out)
	}
}

// scrapySpider has the list (the spider argument urls) as its start_urls
// and records every response, whatever its status (HTTPERROR_ALLOW_ALL).
const scrapySpider = `import scrapy


class Scraper(scrapy.Spider):
    name = "scraper"

    def __init__(self, urls, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [l.strip() for l in open(urls) if l.strip()]

    def parse(self, response):
        yield {"url": response.url, "status": response.status,
               "body": response.body.decode("utf-8", "replace")}
`

// scrapyScraper is Scrapy (Debian's python3-scrapy), run with runspider.
// It does not check certificates.
func scrapyScraper(t *testing.T) scraperRun {
	needScraper(t, pythonImports("scrapy"), "Scrapy", "python3-scrapy")
	return func(t *testing.T, dir, list, ua string, https bool) []fetched {
		if err := os.WriteFile(filepath.Join(dir, "spider.py"), []byte(scrapySpider), 0o644); err != nil {
			t.Fatal(err)
		}
		runScraper(t, dir, 45*time.Second, nil, nil, debianPython, "-m", "scrapy", "runspider", "spider.py",
			"-a", "urls="+list, "-s", "USER_AGENT="+ua, "-s", "ROBOTSTXT_OBEY=False", "-s", "HTTPERROR_ALLOW_ALL=True",
			"-s", "LOG_LEVEL=WARNING", "-s", "TELNETCONSOLE_ENABLED=False", "-s", "REQUEST_FINGERPRINTER_IMPLEMENTATION=2.7",
			"-o", "out.jsonl:jsonlines")
		b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
		if err != nil {
			t.Fatalf("scrapy: %v", err)
		}
		return jsonLines(t, "scrapy", b)
	}
}
