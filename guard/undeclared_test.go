package guard

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/classify"
)

// TestUndeclaredBots: a header that names a browser, contradicted by the
// request's other headers, is judged as a bot by "*" from its first
// request: 403 on a path "*" disallows (the body says why), "*"'s
// Crawl-delay, the verdict naming the rule; a browser's full headers
// pass; report mode lets it pass in dry run; off judges the header alone.
func TestUndeclaredBots(t *testing.T) {
	const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	origin := site("User-agent: Mozilla\nAllow: /\n\nUser-agent: *\nDisallow: /private/\nCrawl-delay: 60\n")
	decide := func(e *Engine, https bool, target string, headers ...string) Verdict {
		scheme := "http"
		if https {
			scheme = "https"
		}
		r := httptest.NewRequest("GET", scheme+"://example.com"+target, nil)
		r.RequestURI = target
		r.Header.Set("User-Agent", chrome)
		for _, h := range headers {
			name, value, _ := strings.Cut(h, ": ")
			r.Header.Set(name, value)
		}
		return e.DecideHTTP(r, nil, "192.0.2.7", origin)
	}
	browser := []string{"Accept-Language: en-US,en;q=0.9", `Sec-CH-UA: "Chromium";v="137"`, "Sec-Fetch-Mode: navigate"}
	e := mustNew(t, Config{})
	defer e.Close()
	for _, https := range []bool{false, true} {
		if v := decide(e, https, "/private/a", browser...); v.Action != Allow || v.Bot || v.Undeclared != "" {
			t.Errorf("https %v, a browser's headers: %+v; want a browser that passes", https, v)
		}
	}
	v := decide(e, false, "/private/a")
	if v.Action != Deny || !v.Bot || v.Undeclared != "no-accept-language" || v.Group != "*" ||
		!strings.Contains(v.Message(), "undeclared bot") || !strings.Contains(v.Message(), "Accept-Language") {
		t.Errorf("no Accept-Language: %+v (%q); want 403 by \"*\" (not the Mozilla group its header names), naming the rule", v, v.Message())
	}
	if v := decide(e, true, "/private/b", browser[0], browser[2]); v.Undeclared != "no-client-hints" || v.Action != Deny {
		t.Errorf("https without Sec-CH-UA: %+v; want denied as no-client-hints", v)
	}
	if v := decide(e, true, "/private/b", browser[0], browser[1]); v.Undeclared != "no-fetch-metadata" || v.Action != Deny {
		t.Errorf("https without Sec-Fetch-Mode: %+v; want denied as no-fetch-metadata", v)
	}
	if v := decide(e, false, "/private/b", browser[0]); v.Undeclared != "" || v.Action != Allow {
		t.Errorf("http with Accept-Language only (as browsers send over http): %+v; want a browser", v)
	}
	// "*"'s Crawl-delay: the next allowed page of the same client within
	// the delay is throttled once its burst is spent.
	throttled := false
	for range burst + 1 {
		if v := decide(e, false, "/public"); v.Action == Throttle {
			throttled = v.Undeclared == "no-accept-language" && v.CrawlDelay > 0
		}
	}
	if !throttled {
		t.Errorf("an undeclared bot past its burst is not throttled by \"*\"'s Crawl-delay")
	}

	report := mustNew(t, Config{Bots: classify.Config{Undeclared: classify.UndeclaredReport}})
	defer report.Close()
	if v := decide(report, false, "/private/a"); v.Action != Deny || !v.DryRun || v.Enforced() || v.Undeclared == "" {
		t.Errorf("undeclared report: %+v; want a dry-run deny that passes", v)
	}
	off := mustNew(t, Config{Bots: classify.Config{Undeclared: classify.UndeclaredOff}})
	defer off.Close()
	if v := decide(off, true, "/private/a"); v.Action != Allow || v.Bot {
		t.Errorf("undeclared off: %+v; want the browser its header names", v)
	}
}

// TestUndeclaredExplain: explain names the rule, its header and evidence
// when the request's headers are given, and nothing when they are not.
func TestUndeclaredExplain(t *testing.T) {
	const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36"
	e := mustNew(t, Config{})
	defer e.Close()
	req := Request{Scheme: "https", Host: "example.com", Target: "/private/a", UserAgent: chrome, Origin: site("User-agent: *\nDisallow: /private/\n")}
	x, err := e.Explain(t.Context(), req)
	if err != nil || x.Undeclared != nil || x.Bot {
		t.Fatalf("no headers given: %+v, %v; want a browser, nothing undeclared", x, err)
	}
	req.Evidence = classify.Evidence{Read: true, AcceptLanguage: true}
	x, err = e.Explain(t.Context(), req)
	if err != nil || x.Undeclared == nil || x.Undeclared.Rule != "no-fetch-metadata" || x.Undeclared.Header != "Sec-Fetch-Mode" || !x.Undeclared.Enforced || x.Status != 403 {
		t.Errorf("Accept-Language only, over https: %+v, %v; want no-fetch-metadata, enforced, 403", x, err)
	}
}

// TestLicensesShown: the License lines of a site's robots.txt (RSL 1.0)
// are in its status, which the sites list, explain and the dashboard show.
func TestLicensesShown(t *testing.T) {
	e := mustNew(t, Config{})
	defer e.Close()
	req := Request{Scheme: "https", Host: "example.com", Target: "/", UserAgent: "GPTBot/1.2",
		Origin: site("License: https://example.com/license.xml\nUser-agent: *\nDisallow: /private/\n")}
	x, err := e.Explain(t.Context(), req)
	if err != nil || x.RobotsTxt == nil || len(x.RobotsTxt.Licenses) != 1 || x.RobotsTxt.Licenses[0] != "https://example.com/license.xml" {
		t.Fatalf("explain: %+v, %v; want the robots.txt's licence listed", x.RobotsTxt, err)
	}
}
