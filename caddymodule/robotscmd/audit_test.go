package robotscmd

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/audit"
	"github.com/robotsguard/robotsguard/guard"
	"github.com/robotsguard/robotsguard/identity"
)

// logLine is a Combined Log Format line.
func logLine(ip string, at time.Time, target, ua string) string {
	return fmt.Sprintf("%s - - [%s] \"GET %s HTTP/1.1\" 200 12 \"-\" %q\n", ip, at.Format("02/Jan/2006:15:04:05 -0700"), target, ua)
}

// TestAudit: "caddy robots audit" over two rotations given newest first
// (one gzip-compressed), with two dated robots.txt copies (a file and a
// URL); exit status 1 with offenders, 0 without, 2 on a usage error.
func TestAudit(t *testing.T) {
	dir := t.TempDir()
	jan := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	feb := time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC)
	old := filepath.Join(dir, "old.txt")
	os.WriteFile(old, []byte("User-agent: *\nDisallow: /old/\n"), 0o644)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /new/\n")
	}))
	defer srv.Close()

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(logLine("192.0.2.1", jan, "/old/a", "FooBot/1.0") + logLine("192.0.2.1", jan.Add(time.Hour), "/new/a", "FooBot/1.0")))
	zw.Close()
	os.WriteFile(filepath.Join(dir, "access.log.1.gz"), gz.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "access.log"), []byte(logLine("192.0.2.1", feb, "/new/b", "FooBot/1.0")+logLine("192.0.2.1", feb, "/old/b", "FooBot/1.0")), 0o644)
	logs := []string{filepath.Join(dir, "access.log"), filepath.Join(dir, "access.log.1.gz")}

	var out bytes.Buffer
	code, err := runAudit(context.Background(), &out, logs, auditOpts{offline: true, site: "https://example.com",
		robots: []string{old + "@2026-01-01", srv.URL + "/robots.txt@2026-02-01"}})
	if err != nil || code != exitFinding {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	for _, want := range []string{"access.log.1.gz: combined, 2 lines, 2 requests", "192.0.2.1/32", "https://example.com: 4 requests, 4 of bots; 1 clients would have been stopped",
		"/old/a (disallowed, line 2)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// The rotations ran oldest first: /old/a (January) and /new/b
	// (February) were disallowed, 2 in all.
	if !strings.Contains(out.String(), "4         2           0") {
		t.Errorf("counts:\n%s", out.String())
	}

	out.Reset()
	code, err = runAudit(context.Background(), &out, logs, auditOpts{offline: true, robots: []string{old + "@2025-01-01"}, asJSON: true, all: true})
	if err != nil || code != exitFinding || !strings.Contains(out.String(), `"disallowed": 2`) {
		t.Errorf("JSON: exit %d, %v\n%s", code, err, out.String())
	}
	out.Reset()
	code, _ = runAudit(context.Background(), &out, logs, auditOpts{offline: true, robots: []string{filepath.Join(dir, "missing.txt")}})
	if code != exitError {
		t.Errorf("missing robots.txt: exit %d", code)
	}
	code, _ = runAudit(context.Background(), &out, logs, auditOpts{offline: true})
	if code != exitError {
		t.Errorf("no robots.txt: exit %d", code)
	}
	os.WriteFile(old, []byte("User-agent: *\nDisallow: /nothing-here/\n"), 0o644)
	if code, err = runAudit(context.Background(), &out, logs, auditOpts{offline: true, robots: []string{old}}); code != exitOK {
		t.Errorf("no offender: exit %d, %v", code, err)
	}
}

// TestProgressLine: what the progress display says.
func TestProgressLine(t *testing.T) {
	dir := t.TempDir()
	robots := filepath.Join(dir, "r.txt")
	os.WriteFile(robots, []byte("User-agent: *\nDisallow: /x\n"), 0o644)
	a, err := audit.New(guard.Config{Verify: &identity.VerifyConfig{Off: true}}, audit.Options{Versions: []audit.Version{{Name: "r", Body: []byte("")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var log strings.Builder
	for i := range 10000 {
		log.WriteString(logLine("192.0.2.1", time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), "/", "FooBot/1.0"))
	}
	half := int64(log.Len())
	if err := a.Read(context.Background(), strings.NewReader(log.String()), "x"); err != nil {
		t.Fatal(err)
	}
	got := progressLine(a, 2*half, 2*time.Second)
	if !strings.HasPrefix(got, " 50% · ") || !strings.Contains(got, "lines/s · 2s left") {
		t.Errorf("progress: %q", got)
	}
	if got := progressLine(a, 0, time.Second); !strings.Contains(got, "MB · 0.01M lines/s") {
		t.Errorf("progress without a total: %q", got)
	}
	// Not a terminal: no display.
	f, _ := os.Create(filepath.Join(dir, "out"))
	defer f.Close()
	if showProgress(f, a, nil) != nil {
		t.Error("a progress display on a file")
	}
}
