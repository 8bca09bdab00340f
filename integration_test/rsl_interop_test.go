package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testlicense"
	"github.com/robotsguard/robotsguard/license"
)

// interopDir holds the node script of TestRSLInterop and its package.json
// and package-lock.json, which pin the npm package it runs (README.md
// there names it).
const interopDir = "../testdata/interop/rsl"

// interopCase is one token, judged by robotsguard's license.Verifier and
// by jose's jwtVerify.
type interopCase struct {
	Name     string `json:"name"`
	Server   string `json:"server"` // the licence server: its keys are at Server + "/key"
	Token    string `json:"token"`
	Audience string `json:"audience"` // the audience jose expects
	// request is the URL the Verifier checks the token for.
	request string
	// ours and jose are the verdicts each should give: valid or not.
	ours, jose bool
	// why, a key of refusals, is why a verifier that refuses the token
	// should refuse it.
	why string
}

// refusals holds, for each reason to refuse a token, the words of ours'
// error and of jose's error code (with the claim at fault) that say it.
var refusals = map[string][2]string{
	"expired":   {"expired", "ERR_JWT_EXPIRED:exp"},
	"audience":  {"audience", "ERR_JWT_CLAIM_VALIDATION_FAILED:aud"},
	"issuer":    {"issued by", "ERR_JWT_CLAIM_VALIDATION_FAILED:iss"},
	"no exp":    {"no exp claim", "ERR_JWT_CLAIM_VALIDATION_FAILED:exp"},
	"nbf":       {"not valid before", "ERR_JWT_CLAIM_VALIDATION_FAILED:nbf"},
	"key":       {"unknown key id", "ERR_JWKS_NO_MATCHING_KEY"},
	"signature": {"bad signature", "ERR_JWS_SIGNATURE_VERIFICATION_FAILED"},
	"alg":       {"is not accepted", "ERR_JOSE_ALG_NOT_ALLOWED"},
}

// TestRSLInterop runs a public JOSE implementation from the npm registry,
// jose (pinned in testdata/interop/rsl), under Node.js against
// robotsguard's licence tokens (issue 49), both ways, on loopback:
//
//   - jose's jwtVerify, configured as license.Verifier (the licence
//     server's key set at <server>/key, iss the server, aud the site, exp
//     required, ES256, EdDSA and RS256), judges the tokens of
//     internal/testlicense, and the Verifier the tokens of a licence server
//     made with jose (its SignJWT and exportJWK, serving its JWK Set);
//   - every token is judged by both: valid ES256, EdDSA and RS256 tokens
//     and tokens with several audiences pass both; expired, not yet valid,
//     exp-less, other-site, other-issuer, tampered (payload or signature),
//     unpublished-key and alg "none" tokens are refused by both;
//   - the known differences are asserted as such: a token whose aud is a
//     path of the site ("https://site/articles", as testlicense's /token
//     issues for a resource "https://site/articles/*") covers the
//     request for ours but not for jose, which compares audiences whole;
//     jose's RFC 9864 "Ed25519" alg is accepted by both;
//   - a bot that sends a jose-issued token to a real Caddy site, whose RSL
//     document names the jose licence server, gets the page, and 401
//     invalid_token for an expired one.
//
// Outside CI, the test is skipped when node or npm is missing; under CI
// (CI set), .ci/run installs them and the test fails without them.
func TestRSLInterop(t *testing.T) {
	node := installInterop(t)
	port := freePort(t)
	site := fmt.Sprintf("http://127.0.0.1:%d", port)
	aud, other := site+"/", "https://other.example/"
	request := site + "/articles/1"

	ls := testlicense.Start(t)
	issuer := startJoseIssuer(t, node, aud, other)
	t.Logf("jose %s (npm), %s", issuer.Jose, nodeVersion(t, node))

	cases := append(testlicenseCases(t, ls, site, other), joseIssuedCases(t, issuer)...)
	for i := range cases {
		cases[i].Audience, cases[i].request = aud, request
	}
	// A difference: jose compares audiences whole, ours takes a URL
	// prefix of the request at a path boundary.
	cases = append(cases, interopCase{
		Name: "testlicense: aud a path of the site", Server: ls.URL, Token: ls.Token(site+"/articles", time.Hour),
		Audience: aud, request: request, ours: true, jose: false, why: "audience",
	})

	verdicts := joseVerify(t, node, cases)
	if verdicts.Jose != node.jose || issuer.Jose != node.jose {
		t.Errorf("jose %s verified and jose %s issued; package.json pins %s", verdicts.Jose, issuer.Jose, node.jose)
	}
	v := license.NewVerifier(license.VerifierConfig{})
	for i, c := range cases {
		err := v.Verify(context.Background(), c.Server, c.request, c.Token)
		if err != nil && !errors.Is(err, license.ErrInvalidToken) {
			t.Errorf("%s: ours could not check the token: %v", c.Name, err)
			continue
		}
		got := verdicts.Results[i]
		if got.Name != c.Name {
			t.Fatalf("jose answered %q for %q: the answers are out of order", got.Name, c.Name)
		}
		t.Logf("%s: ours %s; jose %s", c.Name, verdict(err == nil, err), verdict(got.Valid, got.Code))
		if ours := err == nil; ours != c.ours || got.Valid != c.jose {
			t.Errorf("%s: ours valid=%v (%v), jose valid=%v (%s); want ours %v, jose %v",
				c.Name, ours, err, got.Valid, got.Code, c.ours, c.jose)
			continue
		}
		words := refusals[c.why]
		if err != nil && !strings.Contains(err.Error(), words[0]) || !got.Valid && !strings.Contains(got.Code, words[1]) {
			t.Errorf("%s: ours %v, jose %s; want both to refuse it for its %s (%q, %q)", c.Name, err, got.Code, c.why, words[0], words[1])
		}
	}

	licensedByJose(t, port, issuer)
}

// testlicenseCases are tokens of internal/testlicense for the site (aud
// site + "/"), with the verdicts both verifiers should give.
func testlicenseCases(t *testing.T, ls *testlicense.Server, site, other string) []interopCase {
	aud := site + "/"
	now := time.Now()
	claims := func(change map[string]any) map[string]any { return ls.Claims(aud, change) }
	ed, rsaKey := testlicense.EdKey(), testlicense.RSAKey()
	ls.Publish("k-ed25519", ed.Public())
	ls.Publish("k-rsa", rsaKey.Public())
	valid := ls.Token(aud, time.Hour)

	cases := []interopCase{
		{Name: "valid ES256", Token: valid, ours: true, jose: true},
		{Name: "valid EdDSA", Token: testlicense.SignWith(ed, "k-ed25519", claims(nil)), ours: true, jose: true},
		{Name: "valid RS256", Token: testlicense.SignWith(rsaKey, "k-rsa", claims(nil)), ours: true, jose: true},
		{Name: "audiences, one the site", Token: ls.Sign(claims(map[string]any{"aud": []string{other, aud}})), ours: true, jose: true},
		{Name: "expired", Token: ls.Token(aud, -time.Hour), why: "expired"},
		{Name: "for another site", Token: ls.Token(other, time.Hour), why: "audience"},
		{Name: "another issuer", Token: ls.Sign(claims(map[string]any{"iss": "https://issuer.invalid"})), why: "issuer"},
		{Name: "no exp", Token: ls.Sign(claims(map[string]any{"exp": nil})), why: "no exp"},
		{Name: "not yet valid", Token: ls.Sign(claims(map[string]any{"nbf": now.Add(2 * time.Hour).Unix(), "exp": now.Add(3 * time.Hour).Unix()})), why: "nbf"},
		{Name: "unpublished key", Token: testlicense.SignWith(testlicense.ECKey(), "k-unpublished", claims(nil)), why: "key"},
		{Name: "payload tampered (exp extended)", Token: tamperPayload(t, valid), why: "signature"},
		{Name: "signature tampered", Token: testlicense.TamperSignature(valid), why: "signature"},
		{Name: `alg "none"`, Token: testlicense.Unsigned(`{"alg":"none","typ":"JWT"}`, claims(nil)), why: "alg"},
	}
	for i := range cases {
		cases[i].Name = "testlicense: " + cases[i].Name
		cases[i].Server = ls.URL
	}
	return cases
}

// joseIssuedCases are the tokens of the jose licence server, with the
// verdicts both verifiers should give.
func joseIssuedCases(t *testing.T, issuer joseIssuer) []interopCase {
	// Why each token of interop.mjs is refused; "" for a valid one.
	why := map[string]string{
		"valid ES256": "", "valid EdDSA": "", "valid RS256": "", "audiences, one the site": "",
		"expired": "expired", "for another site": "audience", "another issuer": "issuer", "no exp": "no exp",
		"not yet valid": "nbf", "unpublished key": "key",
		// RFC 9864's fully-specified name of EdDSA on Ed25519, which jose
		// signs with; both accept it.
		"alg Ed25519 (RFC 9864)": "",
	}
	var cases []interopCase
	for _, name := range slices.Sorted(maps.Keys(issuer.Tokens)) {
		w, known := why[name]
		if !known {
			t.Errorf("interop.mjs issued a token %q this test does not know", name)
			continue
		}
		cases = append(cases, interopCase{Name: name, Token: issuer.Tokens[name], ours: w == "", jose: w == "", why: w})
	}
	if len(cases) != len(why) {
		t.Fatalf("interop.mjs issued %d of the %d tokens this test knows: %v", len(cases), len(why), slices.Sorted(maps.Keys(issuer.Tokens)))
	}
	es := issuer.Tokens["valid ES256"]
	cases = append(cases,
		interopCase{Name: "payload tampered (exp extended)", Token: tamperPayload(t, es), why: "signature"},
		interopCase{Name: "signature tampered", Token: testlicense.TamperSignature(es), why: "signature"})
	for i := range cases {
		cases[i].Name = "jose: " + cases[i].Name
		cases[i].Server = issuer.URL
	}
	return cases
}

// licensedByJose runs the Crawler Authorization Protocol through a real
// Caddy site on port whose RSL document names the jose licence server for
// /articles/*: a bot with a valid jose token gets the page, one with an
// expired jose token 401 invalid_token.
func licensedByJose(t *testing.T, port int, issuer joseIssuer) {
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	doc := `<rsl xmlns="https://rslstandard.org/rsl"><content url="/articles/*" server="` + issuer.URL +
		`"><license><permits type="usage">all</permits></license></content></rsl>`
	tc := load(t, "", fmt.Sprintf(`%s {
	robots_guard
	respond /robots.txt "License: %s/license.xml
User-agent: *
Allow: /
"
	header /license.xml Content-Type application/rsl+xml
	respond /license.xml `+"`%s`"+`
	respond "page {path}"
}
`, base, base, doc))
	link := licenseLink(base)
	a := licensedGet(t, tc.Client, base+"/articles/1", gptbotUA, issuer.Tokens["valid ES256"])
	if a.status != 200 || a.body != "page /articles/1" || a.header.Get("Link") != link {
		t.Errorf("GPTBot with a valid jose token: %d %q, Link %q; want 200 with the page and the Link %q", a.status, a.body, a.header.Get("Link"), link)
	}
	a = licensedGet(t, tc.Client, base+"/articles/1", gptbotUA, issuer.Tokens["expired"])
	if ch := a.header.Get("WWW-Authenticate"); a.status != 401 || !strings.Contains(ch, `error="invalid_token"`) {
		t.Errorf("GPTBot with an expired jose token: %d, WWW-Authenticate %q; want 401 invalid_token", a.status, ch)
	}
}

// nodeRun is node, and the directory where the script of interopDir and
// its npm packages are installed; jose is the version package.json pins.
type nodeRun struct{ node, dir, jose string }

// command is node running the script in its directory with args.
func (n nodeRun) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, n.node, append([]string{"interop.mjs"}, args...)...)
	cmd.Dir = n.dir
	return cmd
}

// installInterop installs the npm packages of interopDir with npm ci in a
// temporary directory, beside a copy of the script. Without node or npm
// it skips the test, or fails it under CI.
func installInterop(t *testing.T) nodeRun {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		msg := "node and npm are not both installed: .ci/run installs Debian's nodejs and npm (apt-get install nodejs npm)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	for _, name := range []string{"package.json", "package-lock.json", "interop.mjs"} {
		b, err := os.ReadFile(filepath.Join(interopDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if name == "package.json" && json.Unmarshal(b, &pkg) != nil {
			t.Fatalf("%s/package.json is not JSON", interopDir)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--prefix", dir, "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci of %s: %v\n%s", interopDir, err, out)
	}
	return nodeRun{node, dir, pkg.Dependencies["jose"]}
}

// nodeVersion returns node's version, for the log.
func nodeVersion(t *testing.T, n nodeRun) string {
	out, err := exec.Command(n.node, "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	return "node " + strings.TrimSpace(string(out))
}

// joseVerdicts is the answer of "node interop.mjs verify".
type joseVerdicts struct {
	Jose    string `json:"jose"`
	Results []struct {
		Name  string `json:"name"`
		Valid bool   `json:"valid"`
		Code  string `json:"code"`
	} `json:"results"`
}

// joseVerify has jose judge the cases, in order.
func joseVerify(t *testing.T, n nodeRun, cases []interopCase) joseVerdicts {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := n.command(ctx, "verify")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node interop.mjs verify: %v\n%s", err, stderr.Bytes())
	}
	var v joseVerdicts
	if err := json.Unmarshal(out, &v); err != nil || len(v.Results) != len(cases) {
		t.Fatalf("node interop.mjs verify: %d answers for %d cases (%v): %s", len(v.Results), len(cases), err, out)
	}
	return v
}

// joseIssuer is the jose licence server of "node interop.mjs issue".
type joseIssuer struct {
	Jose   string            `json:"jose"`
	URL    string            `json:"url"`
	Tokens map[string]string `json:"tokens"`
}

// startJoseIssuer starts the jose licence server, whose tokens are for
// aud (and other), until the test ends.
func startJoseIssuer(t *testing.T, n nodeRun, aud, other string) joseIssuer {
	t.Helper()
	cmd := n.command(context.Background(), "issue", aud, other)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	t.Cleanup(func() {
		stdin.Close() // the server stops when its standard input ends
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, stdout)
		done <- cmd.Wait()
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatalf("node interop.mjs issue: no answer in 30 s\n%s", stderr.Bytes())
	}
	var is joseIssuer
	if err := json.Unmarshal([]byte(line), &is); err != nil || is.URL == "" {
		t.Fatalf("node interop.mjs issue: %q (%v)\n%s", line, err, stderr.Bytes())
	}
	return is
}

// verdict reads a verifier's answer for the log: "valid", or why not.
func verdict(valid bool, why any) string {
	if valid {
		return "valid"
	}
	return fmt.Sprintf("refused (%v)", why)
}

// b64JSON is the base64url JSON of v, a JWS segment.
func b64JSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// tamperPayload returns the JWS tok with its exp a day later and its
// signature kept.
func tamperPayload(t *testing.T, tok string) string {
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	c["exp"] = c["exp"].(float64) + 86400
	parts[1] = b64JSON(t, c)
	return strings.Join(parts, ".")
}
