package integration_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// chromium returns the path of a headless-capable Chromium. Under CI its
// absence fails the test (.ci/run installs Debian's chromium); elsewhere
// the test is skipped with a message saying what to install.
func chromium(t *testing.T) string {
	t.Helper()
	return browserBinary(t, "chromium", "chromium", "chromium-browser", "google-chrome")
}

// browserBinary returns the path of the first of names installed. Under
// CI its absence fails the test, naming the Debian package that .ci/run
// installs; elsewhere the test is skipped with the same words.
func browserBinary(t *testing.T, pkg string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed: .ci/run installs Debian's %s package", names[0], pkg)
	}
	t.Skipf("%s is not installed (apt-get install %s); the browser tests need a real browser", names[0], pkg)
	return ""
}

// browse loads url in headless Chromium, runs its scripts for a few
// seconds of virtual time and returns the DOM it ends with.
func browse(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium(t), "--headless", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--disable-extensions", "--user-data-dir="+t.TempDir(),
		"--user-agent="+browserUA, "--virtual-time-budget=5000", "--dump-dom", url)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, out)
	}
	return string(out)
}

// TestThirdPartyCannotAimTrap: a page on another origin (plain http) makes
// a real browser load the trap path as an image, in an iframe and as a
// navigation, with the bare path and made-up tokens. With per-client trap
// links the visitor is refused those requests and banned for none of
// them: no third party can know its token.
func TestThirdPartyCannotAimTrap(t *testing.T) {
	chromium(t)
	port := freePort(t)
	load(t, "", trapLinkSite(port, ""))
	site := fmt.Sprintf("http://127.0.0.1:%d", port)
	// Warm the site's robots.txt (a bot waits for the first fetch).
	req, _ := http.NewRequest("GET", site+"/", nil)
	req.Header.Set("User-Agent", "FooBot/1.0")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>elsewhere</title>
<img src="%[1]s/no-robots/">
<img src="%[1]s/no-robots/AAAAAAAAAAAAAAAA">
<iframe src="%[1]s/no-robots/frame"></iframe>
<script>setTimeout(function () { location.href = "%[1]s/no-robots/navigate"; }, 300)</script>`, site)
	}))
	defer attacker.Close()
	// Another site (localhost, not 127.0.0.1), as an attacker's would be.
	browse(t, strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1))

	var bans []struct{ Client string }
	adminJSON(t, "GET", "/robots_guard/bans", &bans)
	if len(bans) != 0 {
		t.Fatalf("a third-party page got the visitor banned: %+v", bans)
	}
	var rep struct {
		Sites []struct {
			LastHour []struct {
				Client            string
				UnattributedTraps int64 `json:"unattributed_traps"`
			} `json:"last_hour"`
		}
	}
	adminJSON(t, "GET", "/robots_guard/report", &rep)
	n := int64(0)
	for _, s := range rep.Sites {
		for _, c := range s.LastHour {
			n += c.UnattributedTraps
		}
	}
	if n < 4 {
		t.Fatalf("the browser made %d trap requests, want the image, the iframe and the navigation (4): the test proves nothing", n)
	}
	// The visitor's own page still loads, with its own link in it.
	if dom := browse(t, site+"/page"); !strings.Contains(dom, "page") || !strings.Contains(dom, "/no-robots/") {
		t.Fatalf("the visitor's page after the attack: %q", dom)
	}
}
