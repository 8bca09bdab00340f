// Command gencrawlers derives the embedded list of known crawler tokens
// (classify/crawlers.txt) from the crawler-user-agents and ai.robots.txt
// data sets in testdata/useragents.
//
// crawlers.json holds regular expressions. The middleware never runs them: it
// matches plain tokens case-insensitively on word boundaries. This program
// turns each pattern into tokens where the pattern is a literal, possibly
// with anchors, escaped punctuation, two-case letter classes such as [wW],
// and top-level or grouped alternations; it drops every other pattern and
// lists the dropped ones in the output's header, so that nothing is lost
// silently. Tokens shorter than three bytes are dropped too.
//
// Usage (see the go:generate line in classify/classify.go):
//
//	go run ./internal/gencrawlers -in ../testdata/useragents -out crawlers.txt
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/robotsguard/robotsguard/classify/internal/gen"
)

// toolTokens are HTTP libraries and command-line tools. They are written
// with kind "tool" so that the middleware binds them only when the operator
// opts in (Config.Bots.HTTPTools).
var toolTokens = []string{
	"aiohttp", "apache-httpclient", "axios", "curl", "go-http-client",
	"guzzlehttp", "httpie", "java", "libwww-perl", "lwp-trivial", "mechanize",
	"node-fetch", "okhttp", "php-curl-class", "pycurl", "python-httpx",
	"python-requests", "python-urllib", "sindresorhus/got",
	"undici", "wget", "winhttp", "http_request2", "faraday", "httpunit",
	"libcurl", "ruby", "powershell", "httpclient",
}

// Scrapy and Colly are crawling frameworks, not HTTP clients: their
// default headers ("Scrapy/2.11 (+https://scrapy.org)", "colly -
// https://github.com/gocolly/colly") are crawlers', whatever http_tools
// says.
var frameworkTokens = []string{"scrapy", "colly"}

// notCrawlers are tokens of the upstream lists that are not a crawler's
// name: device names, build ids, browsers and apps that real people use
// (classify.TestNoTokenMatchesABrowser checks every token of the list
// against the labelled browser and app lists of
// testdata/useragents/thirdparty, and fails on any other). Each is dropped
// with its reason, written into the list's header. Agents that fetch a page
// because a person asked (link previews, page testers, IDE fetchers) are
// among them: a site's "*" group is not about them, and a group that names
// them still applies.
var notCrawlers = map[string]string{
	"ap3a.240617.008":  "an Android 15 build id: every phone on that build (OPPO, realme, OnePlus, Infinix)",
	"silk/":            "Amazon's Silk browser (Kindle Fire, Fire TV)",
	"sonic":            "the Slack desktop app's engine, and phone models",
	"butterfly":        "a phone model (HTC Butterfly)",
	"fever":            "a phone model",
	"speedy":           "a phone model",
	"expanse":          "a phone model",
	"fluid":            "Fluid, a macOS site-specific browser",
	"spider":           "a phone model; crawlers named spider are caught by their full names or the generic markers",
	"code":             "Visual Studio Code's embedded browser (Code/1.x)",
	"code/1.":          "Visual Studio Code's embedded browser",
	"metaiab facebook": "Facebook's in-app browser",
	"whatsapp":         "the WhatsApp app (its link previews are a person's, not a crawl)",
	"viber":            "the Viber app (its link previews are a person's, not a crawl)",
	"trae":             "Trae, an IDE (an Electron app)",
	"trae/":            "Trae, an IDE (an Electron app)",
	"tsm-turingos":     "a browser build (isbot: misidentified browsers)",
	"ylt chrome":       "a browser build (isbot: misidentified browsers)",
	"gtmetrix":         "GTmetrix, a page test a person starts for their own page",
	"amzn-user":        "Amazon's user-triggered fetcher (it fetches because a person asked)",
	"miniature.io/":    "a screenshot service a person asks for (isbot: a QtWebEngine browser)",
	"grammarly/":       "the Grammarly desktop app (\"Grammarly/1.0 (Windows 10)\", apps.txt); Grammarly's own fetcher gives its URL, a contact marker",
	"googleimageproxy": "Gmail's image proxy, which fetches a mail's images when a person opens it (classify: a fetcher for a person)",
}

// extraTokens are added by hand where a pattern's literal does not end on a
// word boundary in real headers (the instance "PingdomTMS/2020.2" of the
// pattern "[pP]ingdom").
var extraTokens = []string{"pingdomtms"}

// serviceAgents are the fetchers of services whose header never carries
// a person's browsing, each with the reason. They are missing from the
// upstream lists and have no generic marker: their headers are shaped
// like an app's.
var serviceAgents = map[string]string{
	"googleweblight": "Google Web Light, Google's transcoding proxy, which fetches and rewrites pages",
	"^swcd":          "Apple's associated-domains daemon, which fetches /.well-known/apple-app-site-association for installed apps",
	"^duckduckgo/":   "the DuckDuckGo apps' own fetches (favicons); the DuckDuckGo browser writes \"Mozilla/5.0 ... DuckDuckGo/5\"",
	"^ddg_android/":  "the DuckDuckGo Android app's own fetches",
	"^ddg-android-":  "the DuckDuckGo Android app's own fetches",
	// Monitoring and screenshot services (issue 45) whose headers are a
	// browser's with the service's name added, and no generic marker.
	"neustar wpm": "Neustar's Web Performance Management: synthetic monitoring",
	"debugbear":   "DebugBear: scheduled page-speed monitoring",
	"webthumb":    "Webthumb: a screenshot service",
}

func main() {
	gen.Main("crawlers.json and ai-robots.json", "crawlers.txt", generate)
}

type crawler struct {
	Pattern string `json:"pattern"`
}

// generate writes the list derived from the data sets in the directory in
// to w.
func generate(w io.Writer, in string) error {
	var crawlers []crawler
	if err := readJSON(filepath.Join(in, "crawlers.json"), &crawlers); err != nil {
		return err
	}
	var ai map[string]json.RawMessage
	if err := readJSON(filepath.Join(in, "ai-robots.json"), &ai); err != nil {
		return err
	}
	tools, notSeen := map[string]bool{}, map[string]bool{}
	for _, t := range toolTokens {
		tools[t] = true
	}
	for t := range notCrawlers {
		notSeen[t] = true
	}
	kinds := map[string]string{} // token -> "crawler" | "tool"
	add := func(tok string) {
		tok = strings.ToLower(strings.TrimSpace(tok))
		if len(tok) < 3 {
			return
		}
		if _, no := notCrawlers[strings.TrimPrefix(tok, "^")]; no {
			delete(notSeen, strings.TrimPrefix(tok, "^"))
			return
		}
		kind := "crawler"
		if tools[strings.Trim(tok, "^/")] {
			kind = "tool"
		}
		kinds[tok] = kind
	}
	var dropped []string
	for _, c := range crawlers {
		toks, ok := literals(c.Pattern)
		if !ok {
			dropped = append(dropped, c.Pattern)
			continue
		}
		for _, t := range toks {
			add(t)
		}
	}
	for k := range ai {
		add(k)
	}
	for _, t := range slices.Concat(toolTokens, extraTokens, frameworkTokens, slices.Collect(maps.Keys(serviceAgents))) {
		add(t)
	}
	fmt.Fprintf(w, `# Known crawler and HTTP tool tokens, generated by internal/gencrawlers; DO NOT EDIT.
#
# Derived from two MIT-licensed data sets; their copyright notices and
# licenses are those of the upstream repositories:
#   https://github.com/monperrus/crawler-user-agents (crawler-user-agents.json)
#   https://github.com/ai-robots-txt/ai.robots.txt (robots.json)
# See testdata/useragents/SOURCES.md for the exact commits.
#
# Format: one token per line, "<kind><TAB><token>", kind is crawler or tool.
# Tokens are lower-case and are matched case-insensitively on word
# boundaries (never as raw substrings); a token starting with '^' matches
# only at the start of the header.
#
# %d patterns of crawlers.json are not plain literals. They are listed
# here; where their leading literal is at least 8 bytes long it is kept as
# a token (shown after "->"), otherwise the pattern is dropped:
`, len(dropped))
	for _, d := range dropped {
		kept := "dropped"
		if pre := literalPrefix(d); len(pre) >= 8 {
			add(pre)
			kept = strings.ToLower(pre)
		}
		fmt.Fprintf(w, "#   %s -> %s\n", d, kept)
	}
	if err := writeNotCrawlers(w, notSeen); err != nil {
		return err
	}
	toks := make([]string, 0, len(kinds))
	for t := range kinds {
		toks = append(toks, t)
	}
	sort.Strings(toks)
	for _, t := range toks {
		fmt.Fprintf(w, "%s\t%s\n", kinds[t], t)
	}
	return nil
}

// writeNotCrawlers lists the tokens left out, with their reasons, in the
// header; notSeen are those that no upstream pattern yielded, an error
// (the list would keep a stale entry).
func writeNotCrawlers(w io.Writer, notSeen map[string]bool) error {
	if len(notSeen) > 0 {
		return fmt.Errorf("notCrawlers lists tokens that no upstream pattern yields any more: %v", notSeen)
	}
	gen.WriteReasons(w, "%d tokens of the upstream lists are not a crawler's name and are left out:", notCrawlers)
	gen.WriteReasons(w, "%d tokens are added: fetchers of services that no upstream list names:", serviceAgents)
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// literals expands a simple regular expression into the literal strings it
// matches. It reports false for anything it does not understand.
//
// A pattern anchored with '^' yields tokens that start with '^': the
// middleware matches them only at the start of the header.
func literals(p string) ([]string, bool) {
	p = strings.TrimPrefix(p, "(^| )")
	anchor := ""
	if strings.HasPrefix(p, "^") {
		p, anchor = p[1:], "^"
	}
	p = strings.TrimSuffix(p, "([^-]|$)")
	if strings.HasSuffix(p, "$") && !strings.HasSuffix(p, `\$`) {
		p = p[:len(p)-1]
	}
	var alts []string
	depth := 0
	start := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
		case '|':
			if depth == 0 {
				alts = append(alts, p[start:i])
				start = i + 1
			}
		}
	}
	alts = append(alts, p[start:])
	var out []string
	for _, a := range alts {
		exp, ok := expand(a)
		if !ok {
			return nil, false
		}
		for _, e := range exp {
			out = append(out, anchor+e)
		}
	}
	return out, true
}

// expand expands one alternative: literals, escapes, [xX] classes and one
// level of (a|b) groups.
func expand(p string) ([]string, bool) {
	res := []string{""}
	appendAll := func(opts ...string) {
		var next []string
		for _, r := range res {
			for _, o := range opts {
				next = append(next, r+o)
			}
		}
		res = next
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '\\':
			if i+1 >= len(p) || isAlnum(p[i+1]) {
				return nil, false // \d, \s, \w ...
			}
			i++
			appendAll(string(p[i]))
		case '[':
			end := strings.IndexByte(p[i:], ']')
			if end != 3 || !strings.EqualFold(p[i+1:i+2], p[i+2:i+3]) {
				return nil, false
			}
			appendAll(strings.ToLower(p[i+1 : i+2]))
			i += end
		case '(':
			end := strings.IndexByte(p[i:], ')')
			if end < 0 {
				return nil, false
			}
			var opts []string
			for _, o := range strings.Split(p[i+1:i+end], "|") {
				e, ok := expand(o)
				if !ok || len(e) != 1 {
					return nil, false
				}
				opts = append(opts, e[0])
			}
			appendAll(opts...)
			i += end
		case '.', '*', '+', '?', '{', '}', ']', ')', '^', '$', '|':
			return nil, false
		default:
			appendAll(string(c))
		}
	}
	return res, true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// literalPrefix returns the leading run of plain letters, digits and '-' of
// a pattern.
func literalPrefix(p string) string {
	p = strings.TrimPrefix(p, "^")
	for i := 0; i < len(p); i++ {
		if !isAlnum(p[i]) && p[i] != '-' {
			return p[:i]
		}
	}
	return p
}
