package caddymodule

import (
	"os"
	"path/filepath"
	"testing"
)

// testRobots is a robots.txt with a disallowed group, a Crawl-delay and
// an Allow inside a Disallow.
const testRobots = `User-agent: GPTBot
Disallow: /

User-agent: SlowBot
Crawl-delay: 5
Disallow: /private/

User-agent: *
Disallow: /private/
Allow: /private/open
`

// writeRobots writes body to a robots.txt in a temporary directory and
// returns its path.
func writeRobots(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
