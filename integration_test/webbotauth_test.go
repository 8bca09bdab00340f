package integration_test

import (
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/identity"
	"github.com/robotsguard/robotsguard/internal/testkeys"
)

// TestWebBotAuthThroughCaddy: a Go client that signs with the RFC 9421 test
// key (internal/testkeys) is verified from any address;
// an unsigned request with the same header is not, nor a replayed one; the
// key directory is served by a loopback server, fetched with the SSRF
// allowance on and refused without it.
func TestWebBotAuthThroughCaddy(t *testing.T) {
	keyJSON := testkeys.PrivateJWK
	dir, _ := testkeys.DirectoryServer(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: dir.Certificate().Raw}), 0o644)

	up := newUpstream(t, "User-agent: AcmeBot\nDisallow: /noacme/\n\nUser-agent: *\nDisallow: /private/\n")
	port, guarded := freePort(t), freePort(t)
	site := func(port int, allow string) string {
		return fmt.Sprintf(`http://127.0.0.1:%d {
	header >X-Verification {http.robots_guard.verification}
	robots_guard {
		verify {
			builtin off
			operator acme {
				tokens AcmeBot
				ip_ranges %s
				signature_agents %s
			}
			web_bot_auth {
				ca_file %s
				%s
			}
		}
	}
	reverse_proxy %s
}
`, port, filepath.ToSlash(filepath.Join(t.TempDir(), "missing.json")), dir.URL, filepath.ToSlash(caFile), allow, up.addr())
	}
	tc := load(t, "", site(port, "allow_private_directories")+site(guarded, ""))

	priv, err := identity.PrivateJWK(keyJSON)
	if err != nil {
		t.Fatal(err)
	}
	tp, _ := identity.Thumbprint(keyJSON)
	do := func(port int, path string, sign bool, created time.Time) answer {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
		req.Header.Set("User-Agent", "AcmeBot/2.0")
		if sign {
			sr := &identity.SignedRequest{Method: "GET", Scheme: "http", Authority: req.Host, Path: req.URL.EscapedPath(), Header: req.Header}
			if err := identity.Sign(sr, priv, tp, dir.URL, created, created.Add(time.Minute), "n-"+path); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := tc.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b), resp.Header}
	}
	a := do(port, "/private/x", true, time.Now())
	a.check(t, "signed", 200, "page /private/x")
	if v := a.header.Get("X-Verification"); v != "verified" {
		t.Errorf("signed: placeholder %q", v)
	}
	a = do(port, "/private/x", false, time.Now())
	if v := a.header.Get("X-Verification"); v == "verified" {
		t.Errorf("unsigned: placeholder %q", v)
	}
	if v := do(port, "/x", true, time.Now().Add(-5*time.Minute)).header.Get("X-Verification"); v == "verified" {
		t.Errorf("replayed outside its window: %q", v)
	}
	// Without the allowance, the loopback directory is refused.
	if v := do(guarded, "/x", true, time.Now()).header.Get("X-Verification"); v == "verified" {
		t.Errorf("a directory at a loopback address was used without the allowance")
	}
	// Explain through the admin API shows the method only for the
	// allowed site (explain carries no signature headers: unverifiable).
	var x struct{ Verification struct{ Verdict string } }
	adminJSON(t, "GET", fmt.Sprintf("/robots_guard/explain?site=127.0.0.1:%d&ua=AcmeBot&path=/&ip=11.0.113.1", port), &x)
	if x.Verification.Verdict == "verified" {
		t.Errorf("explain without a signature: %+v", x)
	}
}
