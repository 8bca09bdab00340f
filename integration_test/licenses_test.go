package integration_test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/internal/testlicense"
)

// licensedSiteBlock is the Caddyfile block of a site at scheme://127.0.0.1:port,
// guarded by robots_guard with the given licenses setting ("" for the
// default, enforce), and an extra line (tls internal) before. Its
// robots.txt names its own /license.xml in a License line and disallows
// /private/ to every bot; that RSL document is licenseRSL's; every other
// path is a page that names itself.
func licensedSiteBlock(scheme string, port int, extra, licenses string, ls *testlicense.Server) string {
	base := fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
	guard := "robots_guard"
	if licenses != "" {
		guard = "robots_guard {\n\t\tlicenses " + licenses + "\n\t}"
	}
	return fmt.Sprintf(`%s {
	%s
	%s
	respond /robots.txt "License: %s/license.xml
User-agent: *
Disallow: /private/
"
	header /license.xml Content-Type application/rsl+xml
	respond /license.xml `+"`%s`"+`
	respond "page {path}"
}
`, base, extra, guard, base, licenseRSL(ls))
}

// licenseRSL is the RSL document of the licensed sites: /articles/* is
// licensed by the licence server ls, /paid/* by ls for a purchase, and
// /free/* under terms with no licence server.
func licenseRSL(ls *testlicense.Server) string {
	return `<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/articles/*" server="` + ls.URL + `"><license><permits type="usage">all</permits></license></content>
  <content url="/paid/*" server="` + ls.URL + `"><license><payment type="purchase"><amount currency="USD">10</amount></payment></license></content>
  <content url="/free/*"><license><payment type="free"/></license></content>
</rsl>`
}

// licenseLink is the Link header of an answer on content that the RSL
// document of the site at base covers.
func licenseLink(base string) string {
	return "<" + base + `/license.xml>; rel="license"; type="application/rsl+xml"`
}

// licensedGet sends GET url with client as browserGet does (the
// User-Agent ua and the headers browsers send) and, when token is not "",
// the Authorization: License header of RSL's Crawler Authorization
// Protocol.
func licensedGet(t *testing.T, client *http.Client, url, ua, token string) answer {
	t.Helper()
	req := browserRequest(t, url, ua)
	if token != "" {
		req.Header.Set("Authorization", "License "+token)
	}
	return send(t, client, req)
}

// TestLicenses runs RSL 1.0 licence enforcement (issue 49) in a real
// Caddy, against a real licence server (internal/testlicense): a site's
// robots.txt names its RSL document in a License line, which the guard
// reads from the site itself. A bot that asks for content a licence with a
// licence server covers needs a valid token of that server: without one it
// gets 401 with the WWW-Authenticate: License challenge (402 where the
// licence asks a purchase); with a valid token for the site it gets the
// page; an expired token, or one for another site, gets 401
// invalid_token. Every answer to the bot on licensed content links the
// document, content under terms without a licence server passes, content
// no licence covers has no Link, a path robots.txt disallows stays 403,
// and a browser is never asked. "licenses report" lets the bot without a
// token pass (a dry run) with the Link, "licenses off" ignores the
// licences. The same holds over https, where a token's audience is the
// https site.
func TestLicenses(t *testing.T) {
	ls := testlicense.Start(t)
	enforce, report, off, secure := freePort(t), freePort(t), freePort(t), freePort(t)
	tc := load(t, "skip_install_trust\n\tauto_https disable_redirects",
		licensedSiteBlock("http", enforce, "", "", ls)+
			licensedSiteBlock("http", report, "", "report", ls)+
			licensedSiteBlock("http", off, "", "off", ls)+
			licensedSiteBlock("https", secure, "tls internal", "enforce", ls))
	client := tc.Client

	base := fmt.Sprintf("http://127.0.0.1:%d", enforce)
	link := licenseLink(base)
	aud := base + "/"
	challenge := func(a answer) string { return a.header.Get("WWW-Authenticate") }

	a := licensedGet(t, client, base+"/articles/1", gptbotUA, "")
	wantChallenge := `License error="invalid_request", error_description="Access to this resource requires a valid license", authorization_uri="` + ls.URL + `/token"`
	if a.status != 401 || challenge(a) != wantChallenge || a.header.Get("Link") != link {
		t.Errorf("GPTBot on /articles/1 without a token: %d, WWW-Authenticate %q, Link %q; want 401, a License challenge naming %s/token, the Link %q",
			a.status, challenge(a), a.header.Get("Link"), ls.URL, link)
	}

	a = licensedGet(t, client, base+"/articles/1", gptbotUA, ls.Token(aud, time.Hour))
	if a.status != 200 || a.header.Get("Link") != link || a.body != "page /articles/1" || challenge(a) != "" {
		t.Errorf("GPTBot on /articles/1 with a valid token: %d %q, Link %q, WWW-Authenticate %q; want 200 with the page and the Link, no challenge",
			a.status, a.body, a.header.Get("Link"), challenge(a))
	}

	for _, bad := range []struct{ name, token string }{
		{"expired", ls.Token(aud, -time.Hour)},
		{"for the site on another port", ls.Token(fmt.Sprintf("http://127.0.0.1:%d/", report), time.Hour)},
		{"for another host", ls.Token(fmt.Sprintf("http://localhost:%d/", enforce), time.Hour)},
	} {
		a := licensedGet(t, client, base+"/articles/2", gptbotUA, bad.token)
		if a.status != 401 || !strings.Contains(challenge(a), `error="invalid_token"`) || a.header.Get("Link") != link {
			t.Errorf("GPTBot on /articles/2 with a token %s: %d, WWW-Authenticate %q, Link %q; want 401 invalid_token with the Link",
				bad.name, a.status, challenge(a), a.header.Get("Link"))
		}
	}

	a = licensedGet(t, client, base+"/paid/x", gptbotUA, "")
	if a.status != 402 || !strings.HasPrefix(challenge(a), "License") || a.header.Get("Link") != link {
		t.Errorf("GPTBot on /paid/x (a purchase) without a token: %d, WWW-Authenticate %q, Link %q; want 402 with the challenge and the Link",
			a.status, challenge(a), a.header.Get("Link"))
	}
	a = licensedGet(t, client, base+"/free/x", gptbotUA, "")
	if a.status != 200 || a.header.Get("Link") != link || a.body != "page /free/x" {
		t.Errorf("GPTBot on /free/x (terms, no licence server): %d %q, Link %q; want 200 with the page and the Link", a.status, a.body, a.header.Get("Link"))
	}
	a = licensedGet(t, client, base+"/public", gptbotUA, "")
	if a.status != 200 || a.header.Get("Link") != "" || a.body != "page /public" {
		t.Errorf("GPTBot on /public (no licence): %d %q, Link %q; want 200 with the page, no Link", a.status, a.body, a.header.Get("Link"))
	}
	a = licensedGet(t, client, base+"/private/x", gptbotUA, ls.Token(aud, time.Hour))
	if a.status != 403 {
		t.Errorf("GPTBot on /private/x (robots.txt disallows it), with a valid token: %d %q; want 403", a.status, a.body)
	}
	a = licensedGet(t, client, base+"/articles/1", browserUA, "")
	if a.status != 200 || challenge(a) != "" || a.body != "page /articles/1" {
		t.Errorf("a browser on /articles/1: %d %q, WWW-Authenticate %q; want 200 with the page, no challenge", a.status, a.body, challenge(a))
	}

	reportBase := fmt.Sprintf("http://127.0.0.1:%d", report)
	a = licensedGet(t, client, reportBase+"/articles/1", gptbotUA, "")
	if a.status != 200 || a.header.Get("Link") != licenseLink(reportBase) || a.body != "page /articles/1" {
		t.Errorf("licenses report, GPTBot on /articles/1 without a token: %d %q, Link %q; want 200 (a dry run) with the page and the Link %q",
			a.status, a.body, a.header.Get("Link"), licenseLink(reportBase))
	}
	offBase := fmt.Sprintf("http://127.0.0.1:%d", off)
	a = licensedGet(t, client, offBase+"/articles/1", gptbotUA, "")
	if a.status != 200 || a.header.Get("Link") != "" || challenge(a) != "" || a.body != "page /articles/1" {
		t.Errorf("licenses off, GPTBot on /articles/1 without a token: %d %q, Link %q, WWW-Authenticate %q; want 200 with the page, no Link, no challenge",
			a.status, a.body, a.header.Get("Link"), challenge(a))
	}

	// Over https: the site is https://127.0.0.1:port, and so is the
	// audience of its tokens.
	waitCertificate(t, fmt.Sprintf("127.0.0.1:%d", secure))
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	defer tlsClient.CloseIdleConnections()
	secureBase := fmt.Sprintf("https://127.0.0.1:%d", secure)
	a = licensedGet(t, tlsClient, secureBase+"/articles/1", gptbotUA, ls.Token(secureBase+"/", time.Hour))
	if a.status != 200 || a.header.Get("Link") != licenseLink(secureBase) || a.body != "page /articles/1" {
		t.Errorf("https, GPTBot on /articles/1 with a valid token: %d %q, Link %q; want 200 with the page and the Link %q",
			a.status, a.body, a.header.Get("Link"), licenseLink(secureBase))
	}
}
