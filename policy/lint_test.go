package policy_test

// Table tests of (*Robots).Lint: every diagnostic code that parse.go and
// lint.go emit, with exact line numbers and severities, the match-order
// examples of the seed articles, the cap on match-order findings, and the
// findings on real files of ../testdata/robots.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/policy"
)

const (
	sevWarn = policy.Warning
	sevInfo = policy.Info
	sevErr  = policy.Error
)

// lintWant is one expected diagnostic.
type lintWant struct {
	line int
	code string
	sev  policy.Severity
}

func (w lintWant) String() string { return fmt.Sprintf("%d:%s:%s", w.line, w.code, w.sev) }

type lintCase struct {
	name string
	body string
	want []lintWant // the exact set of (Line, Code, Severity), any order
	// msgs, when set, maps an index of the sorted Lint output to a substring
	// its Message must hold.
	msgs map[int]string
}

// Bodies too long to write inline.
var (
	// 27 bytes of header, then 100-byte comment lines. 512000-27 = 511973
	// bytes hold 5119 whole comment lines (lines 3..5121) and 73 bytes of
	// line 5122, which is where the cap cuts.
	lintSizeCapBody = "User-agent: *\nDisallow: /a\n" + strings.Repeat("#"+strings.Repeat("x", 98)+"\n", 6000) + "Disallow: /b\n"
	// The cap falls exactly after the newline that ends line 2: line 3 is
	// the first line that is not read. Line 2 is also too long.
	lintSizeCapAtNewline = "User-agent: *\n" + strings.Repeat("#", policy.MaxBodySize-14-1) + "\n" + "Disallow: /\n"
	// Line 2 is 11+17000 bytes long.
	lintLongLine = "User-agent: *\nDisallow: /" + strings.Repeat("a", 17000) + "\nDisallow: /b\n" + strings.Repeat("#", policy.MaxLineLength+1) + "\n"
)

// lintAllowRun is "User-agent: *", "Disallow: /" and n lines "Allow: /aI":
// every Allow (lines 3..n+2) is read differently by first-match parsers.
func lintAllowRun(n int) string {
	var b strings.Builder
	b.WriteString("User-agent: *\nDisallow: /\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "Allow: /a%d\n", i)
	}
	return b.String()
}

// lintDisallowRun is "User-agent: *" and n lines "Disallow: /pI", then the
// same rules again: no conflicts, n distinct targets to probe.
func lintDisallowRun(n int) string {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "Disallow: /p%d\n", i)
	}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "Disallow: /p%d\n", i)
	}
	return b.String()
}

// lintOrderWants returns match-order findings on lines lo..hi.
func lintOrderWants(lo, hi int) []lintWant {
	var w []lintWant
	for l := lo; l <= hi; l++ {
		w = append(w, lintWant{l, "match-order", sevInfo})
	}
	return w
}

var lintCases = []lintCase{
	// A clean file has no findings.
	{name: "clean file", body: "# comment\nUser-agent: *\nDisallow: /private/\nAllow: /public/\n\nUser-agent: GPTBot\nDisallow: /\n\nSitemap: https://example.com/sitemap.xml\n"},
	{name: "empty body", body: ""},

	// License (RSL 1.0, SEMANTICS.md §8b): a global record with an
	// absolute http(s) URL; inside a group it still applies to the site.
	{name: "license lines", body: "License: https://example.com/l.xml\nUser-agent: *\nLicense: https://example.com/m.xml\nDisallow: /x\n\nLicense: /relative.xml\n",
		want: []lintWant{{3, "license-global", sevInfo}, {6, "license-url", sevWarn}}},
	{name: "too many licenses (16 kept)", body: strings.Repeat("License: https://example.com/l.xml\n", 17),
		want: []lintWant{{17, "too-many-licenses", sevWarn}}},
	{name: "only comments and blank lines", body: "# a\n\n   \n\t# b\n"},

	// size-cap (§1): reported on the line where reading stops.
	{name: "size-cap cuts inside line 5122", body: lintSizeCapBody,
		want: []lintWant{{5122, "size-cap", sevErr}}, msgs: map[int]string{0: "512000"}},
	{name: "size-cap right after a newline is reported on the next line", body: lintSizeCapAtNewline,
		want: []lintWant{{2, "line-too-long", sevWarn}, {3, "size-cap", sevErr}}},

	// line-too-long (§2).
	{name: "line-too-long", body: lintLongLine,
		want: []lintWant{{2, "line-too-long", sevWarn}, {4, "line-too-long", sevWarn}}, msgs: map[int]string{0: "17011"}},
	{name: "line of exactly MaxLineLength bytes is fine", body: "User-agent: *\n" + strings.Repeat("#", policy.MaxLineLength) + "\n"},

	// bom-mid-file (§2): a leading BOM (whole or partial) is skipped silently.
	{name: "leading BOM is skipped", body: "\xEF\xBB\xBFUser-agent: *\nDisallow: /a\n"},
	{name: "leading partial BOM is skipped", body: "\xEF\xBBUser-agent: *\nDisallow: /a\n"},
	{name: "BOM inside a value and at the start of a later line", body: "\xEF\xBB\xBFUser-agent: *\nDisallow: /a\xEF\xBB\xBF\n\xEF\xBB\xBFDisallow: /b\n",
		want: []lintWant{{2, "bom-mid-file", sevWarn}, {3, "bom-mid-file", sevWarn}, {3, "unknown-directive", sevWarn}}},
	{name: "two BOMs at the start: the second spoils line 1", body: "\xEF\xBB\xBF\xEF\xBB\xBFUser-agent: *\nDisallow: /a\n",
		want: []lintWant{{1, "bom-mid-file", sevWarn}, {1, "unknown-directive", sevWarn}, {2, "rule-before-user-agent", sevErr}}},
	{name: "double-encoded BOM spoils line 1", body: "\xC3\xAF\xC2\xBB\xC2\xBFUser-agent: *\nDisallow: /a\n",
		want: []lintWant{{1, "bom-mid-file", sevWarn}, {1, "unknown-directive", sevWarn}, {2, "rule-before-user-agent", sevErr}},
		msgs: map[int]string{0: "encoded twice"}},

	// unparsable-line (§2).
	{name: "unparsable lines", body: "User-agent: *\n<html>\nDisallow: /a\nthree words here\n:novalue\njustoneword\n",
		want: []lintWant{{2, "unparsable-line", sevWarn}, {4, "unparsable-line", sevWarn}, {5, "unparsable-line", sevWarn}, {6, "unparsable-line", sevWarn}}},
	{name: "HTML page", body: "<html>\n<a href=x>\n<meta charset=\"utf-8\">\n<body>hello world</body>\n",
		want: []lintWant{{1, "html-page", sevErr}, {1, "unparsable-line", sevWarn}, {2, "unknown-directive", sevWarn}, {3, "unknown-directive", sevWarn}, {4, "unknown-directive", sevWarn}}},

	// Line numbering with every kind of line end (§2).
	{name: "CR, CRLF, LF and LF CR line ends", body: "User-agent: *\rDisallow: foo\r\nAllow: bar\n\rFoo: x",
		want: []lintWant{{2, "never-matches", sevWarn}, {3, "never-matches", sevWarn}, {5, "unknown-directive", sevWarn}}},

	// accepted-typo (§2): every misspelling Google accepts.
	{name: "accepted-typo for every misspelling", body: "useragent: a\nuser agent: b\nDissallow: /1\nDissalow: /2\nDisalow: /3\nDiasllow: /4\nDisallaw: /5\nsite-map: https://x/s.xml\ncrawldelay: 1\ncrawl delay: 2\nUSERAGENTS: c\nDisallow: /6\n",
		want: []lintWant{{1, "accepted-typo", sevWarn}, {2, "accepted-typo", sevWarn}, {3, "accepted-typo", sevWarn}, {4, "accepted-typo", sevWarn}, {5, "accepted-typo", sevWarn},
			{6, "accepted-typo", sevWarn}, {7, "accepted-typo", sevWarn}, {8, "accepted-typo", sevWarn}, {9, "accepted-typo", sevWarn}, {10, "accepted-typo", sevWarn}, {11, "accepted-typo", sevWarn}}},

	// key-prefix (§2): keys that only start with a directive name.
	{name: "key-prefix", body: "User-agents: *\nDisallowed: /a\nAllowed: /b\nSitemaps: https://x/s.xml\nCrawl-delays: 1\nUser-Agent-X: y\nDisallow: /c\n",
		want: []lintWant{{1, "key-prefix", sevWarn}, {2, "key-prefix", sevWarn}, {3, "key-prefix", sevWarn}, {4, "key-prefix", sevWarn}, {5, "key-prefix", sevWarn}, {6, "key-prefix", sevWarn}}},

	// missing-colon (§2).
	{name: "missing-colon", body: "User-agent *\nDisallow /500\nCrawl-delay 5\nAllow /x\n",
		want: []lintWant{{1, "missing-colon", sevWarn}, {2, "missing-colon", sevWarn}, {3, "missing-colon", sevWarn}, {4, "missing-colon", sevWarn}},
		msgs: map[int]string{1: `"Disallow: /500"`}},
	{name: "missing-colon and accepted-typo on one line", body: "User-agent: *\nDissallow /6\n",
		want: []lintWant{{2, "accepted-typo", sevWarn}, {2, "missing-colon", sevWarn}}},
	{name: "two words of an unknown key: unknown-directive only", body: "User-agent: *\nFoo bar\n",
		want: []lintWant{{2, "unknown-directive", sevWarn}}},

	// ignored-directive and unknown-directive.
	{name: "ignored-directive for every known other record", body: "Host: a\nclean-param: a\nNOINDEX: /a\nnofollow: /b\nrequest-rate: 1/5\nvisit-time: 0100-0200\ncache-delay: 1\n",
		want: []lintWant{{1, "ignored-directive", sevInfo}, {2, "ignored-directive", sevInfo}, {3, "ignored-directive", sevInfo}, {4, "ignored-directive", sevInfo}, {5, "ignored-directive", sevInfo},
			{6, "ignored-directive", sevInfo}, {7, "ignored-directive", sevInfo}}},

	// AI-use preferences (SEMANTICS.md §8a).
	{name: "signal outside any group", body: "Content-Signal: ai-train=no\nUser-agent: *\nDisallow: /x\n",
		want: []lintWant{{1, "signal-outside-group", sevWarn}}},
	{name: "signal key typo", body: "User-agent: *\nContent-Signal: search=yes, ai_train=no\n",
		want: []lintWant{{2, "unknown-signal", sevWarn}}, msgs: map[int]string{0: `did you mean "ai-train"?`}},
	{name: "signal value", body: "User-agent: *\nContent-Signal: ai-train=never\n",
		want: []lintWant{{2, "bad-signal-value", sevWarn}}},
	{name: "signal not key=value", body: "User-agent: *\nContent-Signal: ai-train\nContent-Usage: /x/\n",
		want: []lintWant{{2, "bad-signal", sevWarn}, {3, "bad-signal", sevWarn}}},
	{name: "signal wildcard path", body: "User-agent: *\nContent-Usage: /a/*/b train-ai=n\n",
		want: []lintWant{{2, "signal-wildcard", sevInfo}, {2, "aipref-vocab", sevInfo}}},
	{name: "aipref vocabulary -08", body: "User-agent: *\nContent-Usage: search=y\nContent-Usage: /x/ ai-use=n\n",
		want: []lintWant{{2, "aipref-vocab", sevInfo}}, msgs: map[int]string{0: "vocab-08 (ai-use"}},
	{name: "signal conflict", body: "User-agent: *\nContent-Signal: ai-train=yes, ai-train=no\n",
		want: []lintWant{{2, "signal-conflict", sevWarn}}},
	{name: "signal not enforced", body: "User-agent: *\nContent-Signal: search=yes,ai-train=no,use=reference\n",
		want: []lintWant{{2, "signal-not-enforced", sevInfo}}},
	{name: "signal contradicts the rules", body: "User-agent: *\nContent-Signal: search=yes\nDisallow: /\n",
		want: []lintWant{{2, "signal-contradicts-rules", sevWarn}}},
	{name: "too many signal lines", body: "User-agent: *\n" + strings.Repeat("Content-Signal: ai-train=no\n", policy.MaxSignalLines+2),
		want: []lintWant{{policy.MaxSignalLines + 2, "too-many-signals", sevWarn}}},
	{name: "Cloudflare's managed block is clean", body: "User-Agent: *\nContent-signal: search=yes, ai-train=no\nAllow: /\n\nUser-agent: GPTBot\nDisallow: /\n"},
	{name: "unknown-directive", body: "User-agent: *\nFoo: bar\nHosts: x\nX-Robots-Tag: noindex\n",
		want: []lintWant{{2, "unknown-directive", sevWarn}, {3, "unknown-directive", sevWarn}, {4, "unknown-directive", sevWarn}}},

	// agent-truncated and agent-empty (§4).
	{name: "agent-truncated: product token cut (info: the token is still the bot's name)", body: "User-agent: Googlebot/2.1\nUser-agent: foo*bar\nUser-agent: Googlebot Images\nUser-agent: MJ12bot\nUser-agent: Hal-9000\nDisallow: /x\n",
		want: []lintWant{{1, "agent-truncated", sevInfo}, {2, "agent-truncated", sevInfo}, {3, "agent-truncated", sevInfo}}},
	{name: "agent-truncated: cut to a word many headers carry, or a number (warning)", body: "User-agent: https://bot.example\nUser-agent: Mozilla/5.0\nUser-agent: 173.212soso\nUser-agent: Google Bot\nDisallow: /x\n",
		want: []lintWant{{1, "agent-truncated", sevWarn}, {2, "agent-truncated", sevWarn}, {3, "agent-truncated", sevWarn}, {4, "agent-truncated", sevWarn}}},
	{name: "agent-truncated: '*' followed by whitespace is the global group (info)", body: "User-agent: * foo\nUser-agent: *\tbar\nDisallow: /x\n",
		want: []lintWant{{1, "agent-truncated", sevInfo}, {2, "agent-truncated", sevInfo}}},
	{name: "agent-empty", body: "User-agent: *Bot\nUser-agent: **\nUser-agent: /x\nUser-agent:\nDisallow: /x\n",
		want: []lintWant{{1, "agent-empty", sevWarn}, {2, "agent-empty", sevWarn}, {3, "agent-empty", sevWarn}, {4, "agent-empty", sevWarn}}},

	// crawl-delay-joins-group (§3): SEMANTICS.md's surprising example.
	{name: "crawl-delay-joins-group (SEMANTICS.md §3 example)", body: "User-agent: A\nCrawl-delay: 5\n\nUser-agent: *\nDisallow: /\n",
		want: []lintWant{{4, "crawl-delay-joins-group", sevWarn}}, msgs: map[int]string{0: "Crawl-delay of line 2 does not: robots_guard applies it only to \"A\""}},
	{name: "crawl-delay-joins-group names the whole run above the delay", body: "User-agent: A\n\nUser-agent: B\nCrawl-delay: 5\nUser-agent: C\nDisallow: /\n",
		want: []lintWant{{3, "blank-line-in-group", sevInfo}, {5, "crawl-delay-joins-group", sevWarn}}, msgs: map[int]string{1: "only to \"A\" and \"B\""}},
	{name: "crawl-delay-joins-group for every later user-agent", body: "User-agent: A\nCrawl-delay: 5\n\nUser-agent: B\n\nUser-agent: C\nDisallow: /\n",
		want: []lintWant{{4, "crawl-delay-joins-group", sevWarn}, {6, "crawl-delay-joins-group", sevWarn}}},
	// html-page: a web page served as /robots.txt.
	{name: "html-page: doctype", body: "<!DOCTYPE html>\n<html><head><title>Shop</title></head>\n<body>Disallow: /</body></html>\n",
		want: []lintWant{{1, "html-page", sevErr}, {1, "unknown-directive", sevWarn}, {2, "unparsable-line", sevWarn}, {3, "unknown-directive", sevWarn}},
		msgs: map[int]string{0: "this is an HTML page, not a robots.txt"}},
	{name: "html-page: BOM, blank lines and <html", body: "\xEF\xBB\xBF\n\n  <HTML lang=en>\n",
		want: []lintWant{{1, "html-page", sevErr}, {3, "unknown-directive", sevWarn}}},
	{name: "html-page: a '<' later in a real file is no page", body: "User-agent: *\nDisallow: /<html\n"},
	{name: "Crawl-delay after a rule does not join", body: "User-agent: A\nDisallow: /a\nCrawl-delay: 5\nUser-agent: B\nDisallow: /b\n"},
	{name: "invalid Crawl-delay does not join, blank line does", body: "User-agent: A\nCrawl-delay: soon\n\nUser-agent: B\nDisallow: /b\n",
		want: []lintWant{{2, "bad-crawl-delay", sevErr}, {4, "blank-line-in-group", sevInfo}}},

	// blank-line-in-group (§3, §9 record separation).
	{name: "blank-line-in-group", body: "User-agent: A\n\nUser-agent: B\nDisallow: /\n",
		want: []lintWant{{3, "blank-line-in-group", sevInfo}}, msgs: map[int]string{0: "line 1"}},
	{name: "whitespace-only line is a blank line", body: "User-agent: A\n  \t\nUser-agent: B\nDisallow: /\n",
		want: []lintWant{{3, "blank-line-in-group", sevInfo}}},
	{name: "blank line, then an unknown record", body: "User-agent: A\n\nFoo: x\nUser-agent: B\nDisallow: /\n",
		want: []lintWant{{3, "unknown-directive", sevWarn}, {4, "blank-line-in-group", sevInfo}}},
	{name: "consecutive user-agent lines are fine", body: "User-agent: A\nUser-agent: B\nDisallow: /\n"},
	// seeds/003: "Lines containing only a comment are ignored completely", so
	// a 1990s parser reads one record here, and the finding's claim ("1990s
	// parsers read two records") does not hold.
	{name: "comment-only line is not a blank line", body: "User-agent: A\n# B is the same crawler\nUser-agent: B\nDisallow: /\n"},

	// rule-before-user-agent (§3).
	{name: "rule-before-user-agent", body: "Disallow: /a\nAllow: /b\nCrawl-delay: 3\nDisallow:\nUser-agent: *\nDisallow: /c\n",
		want: []lintWant{{1, "rule-before-user-agent", sevErr}, {2, "rule-before-user-agent", sevErr}, {3, "rule-before-user-agent", sevErr}, {4, "rule-before-user-agent", sevErr}}},

	// never-matches (§6).
	{name: "never-matches", body: "User-agent: *\nDisallow: foo\nAllow: bar\nDisallow: %2Fa\nAllow: ?x\nDisallow: $\nDisallow: *x\nDisallow:\nAllow: /ok\n",
		want: []lintWant{{2, "never-matches", sevWarn}, {3, "never-matches", sevWarn}, {4, "never-matches", sevWarn}, {5, "never-matches", sevWarn}, {6, "never-matches", sevWarn}}},

	// bad-crawl-delay (§8).
	{name: "bad-crawl-delay", body: "User-agent: *\nCrawl-delay: -1\nCrawl-delay: abc\nCrawl-delay: .\nCrawl-delay:\nCrawl-delay: 1,5\nCrawl-delay: 5s\nCrawl-delay: 1e3\nCrawl-delay: +5\nDisallow: /x\n",
		want: []lintWant{{2, "bad-crawl-delay", sevErr}, {3, "bad-crawl-delay", sevErr}, {4, "bad-crawl-delay", sevErr}, {5, "bad-crawl-delay", sevErr},
			{6, "bad-crawl-delay", sevErr}, {7, "bad-crawl-delay", sevErr}, {8, "bad-crawl-delay", sevErr}, {9, "bad-crawl-delay", sevErr}}},
	{name: "valid Crawl-delay values", body: "User-agent: *\nCrawl-delay: 1.5\nCrawl-delay: .5\nCrawl-delay: 10.\nCrawl-delay: 0\nCrawl-delay: 99999999999999999999999\nDisallow: /x\n"},

	// match-order (§7, §9): the seed articles' examples.
	// seeds/000: first-match parsers never reach the Allow; RFC 9309 allows.
	{name: "match-order: seeds/000 Disallow /folder1/ before the longer Allow", body: "User-agent: Googlebot\nDisallow: /folder1/\nAllow: /folder1/myfile.html\n",
		want: []lintWant{{3, "match-order", sevInfo}}, msgs: map[int]string{0: "/folder1/myfile.html"}},
	// The same two rules the other way round: both readings allow the file.
	{name: "match-order: seeds/000 rules reversed, no finding", body: "User-agent: Googlebot\nAllow: /folder1/myfile.html\nDisallow: /folder1/\n"},
	// seeds/000 mulder: the draft's own example is read alike by both.
	{name: "match-order: seeds/000 mulder, no finding", body: "User-agent: *\nAllow: /xfiles/mulder/\nDisallow: /xfiles/\n"},
	// The reverse conflict: a short Allow first, a longer Disallow after.
	{name: "match-order: Allow / before a longer Disallow", body: "User-agent: *\nAllow: /\nDisallow: /private\n",
		want: []lintWant{{3, "match-order", sevInfo}}, msgs: map[int]string{0: "blocks it; first-match"}},
	{name: "match-order: Disallow / before Allow / (equal length, tie to Allow)", body: "User-agent: *\nDisallow: /\nAllow: /\n",
		want: []lintWant{{3, "match-order", sevInfo}}},
	// seeds/002 example 1 and 2: longest match and first match agree.
	{name: "match-order: seeds/002 example 1, no finding", body: "User-agent: *\nDisallow: /example.html\nAllow: /example*\n"},
	{name: "match-order: seeds/002 example 2, no finding", body: "User-agent: *\nDisallow: */example.html*\nAllow: /example.html$\n"},
	// seeds/002 example 3: the Allow of line 5 ties the Disallow of line 2.
	{name: "match-order: seeds/002 example 3", body: "User-agent: *\nDisallow: /example.html*\nAllow: /example.html\nDisallow: /example.html\nAllow: /example.html*\n",
		want: []lintWant{{5, "match-order", sevInfo}}},
	{name: "match-order: only Disallow rules, no finding", body: "User-agent: *\nDisallow: /a\nDisallow: /a/b\nDisallow: /\nDisallow: /*.php$\n"},
	{name: "match-order: disjoint Allow and Disallow, no finding", body: "User-agent: *\nDisallow: /a\nAllow: /b\nDisallow: /c/\nAllow: /d$\n"},
	{name: "match-order: empty Disallow first", body: "User-agent: *\nDisallow:\nDisallow: /a\n",
		want: []lintWant{{3, "match-order", sevInfo}}},
	{name: "match-order: Allow * first", body: "User-agent: *\nAllow: *\nDisallow: /a\n",
		want: []lintWant{{3, "match-order", sevInfo}}},
	{name: "match-order: index.html rule", body: "User-agent: *\nDisallow: /shop/\nAllow: /shop/index.html\n",
		want: []lintWant{{3, "match-order", sevInfo}}},
	{name: "match-order: across merged groups of one agent", body: "User-agent: A\nDisallow: /\n\nUser-agent: A\nAllow: /x\n",
		want: []lintWant{{5, "match-order", sevInfo}}},
	{name: "match-order: one finding for a group shared by two agents", body: "User-agent: A\nUser-agent: B\nDisallow: /\nAllow: /x\n",
		want: []lintWant{{4, "match-order", sevInfo}}},
	{name: "match-order: one finding per group", body: "User-agent: A\nDisallow: /\nAllow: /x\n\nUser-agent: B\nDisallow: /\nAllow: /y\n",
		want: []lintWant{{3, "match-order", sevInfo}, {7, "match-order", sevInfo}}},
	// The group of line 1 is both A's and part of the merged "*" groups, whose
	// rule sets differ; the one conflict of line 4 should be reported once.
	{name: "match-order: a rule pair shared by two rule sets is reported once", body: "User-agent: A\nUser-agent: *\nDisallow: /\nAllow: /x\n\nUser-agent: *\nDisallow: /y\n",
		want: []lintWant{{4, "match-order", sevInfo}}},

	// The cap: 20 findings per rule set, then one summary on the group's line.
	{name: "match-order: 20 findings, no summary", body: lintAllowRun(20), want: lintOrderWants(3, 22)},
	{name: "match-order: 21 findings, capped with a summary of 1", body: lintAllowRun(21),
		want: append(lintOrderWants(3, 22), lintWant{1, "match-order", sevInfo}), msgs: map[int]string{0: "1 more rule pairs"}},
	{name: "match-order: 25 findings, capped with a summary of 5", body: lintAllowRun(25),
		want: append(lintOrderWants(3, 22), lintWant{1, "match-order", sevInfo}), msgs: map[int]string{0: "5 more rule pairs", 1: `"/a1"`, 20: `"/a20"`}},

	// The probe cap: the match-order check tries at most 5000 distinct
	// targets per rule set and says so (info) on the first rule it skips.
	{name: "match-order: 5000 distinct rules are all probed", body: lintDisallowRun(5000)},
	{name: "match-order: the 5001st distinct rule stops the check", body: lintDisallowRun(5001),
		want: []lintWant{{5002, "match-order", sevInfo}}, msgs: map[int]string{0: "5000"}},
}

// sortWants orders by line, then code, then severity.
func sortWants(ws []lintWant) []lintWant {
	ws = slices.Clone(ws)
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].line != ws[j].line {
			return ws[i].line < ws[j].line
		}
		if ws[i].code != ws[j].code {
			return ws[i].code < ws[j].code
		}
		return ws[i].sev < ws[j].sev
	})
	return ws
}

func toWants(ds []policy.Diagnostic) []lintWant {
	out := make([]lintWant, len(ds))
	for i, d := range ds {
		out[i] = lintWant{d.Line, d.Code, d.Severity}
	}
	return out
}

func shortBody(s string) string {
	if len(s) > 200 {
		return fmt.Sprintf("%q…(%d bytes)", s[:120], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// checkLintOutput checks the properties every Lint result has: sorted by
// line, a known code and severity, a message, and the same result twice.
func checkLintOutput(t *testing.T, r *policy.Robots, ds []policy.Diagnostic) {
	t.Helper()
	if !sort.SliceIsSorted(ds, func(i, j int) bool { return ds[i].Line < ds[j].Line }) {
		t.Errorf("Lint output is not sorted by line: %v", toWants(ds))
	}
	for _, d := range ds {
		if d.Line < 0 {
			t.Errorf("diagnostic with negative line: %s", d)
		}
		if d.Severity != policy.Info && d.Severity != policy.Warning && d.Severity != policy.Error {
			t.Errorf("diagnostic with unknown severity: %s", d)
		}
		if c := d.Category(); c != policy.CategorySyntax && c != policy.CategoryRules && c != policy.CategoryCompat && c != policy.CategoryFile {
			t.Errorf("diagnostic with unknown category %q: %s", c, d)
		}
		if d.Message == "" || d.Code == "" {
			t.Errorf("diagnostic without code or message: %#v", d)
		}
		if want := fmt.Sprintf("line %d: %s: %s [%s]", d.Line, d.Severity, d.Message, d.Code); d.String() != want {
			t.Errorf("Diagnostic.String() = %q, want %q", d.String(), want)
		}
	}
	if again := r.Lint(); !slices.Equal(again, ds) {
		t.Errorf("a second Lint call differs from the first")
	}
}

func TestLint(t *testing.T) {
	for _, c := range lintCases {
		t.Run(c.name, func(t *testing.T) {
			r := policy.Parse([]byte(c.body))
			ds := r.Lint()
			checkLintOutput(t, r, ds)
			got, want := sortWants(toWants(ds)), sortWants(c.want)
			if !slices.Equal(got, want) {
				var msgs []string
				for _, d := range ds {
					msgs = append(msgs, d.String())
				}
				t.Errorf("body %s:\n got  %v\n want %v\nfull output:\n\t%s", shortBody(c.body), got, want, strings.Join(msgs, "\n\t"))
			}
			for i, sub := range c.msgs {
				if i >= len(ds) {
					t.Errorf("no diagnostic #%d (want message with %q)", i, sub)
					continue
				}
				if !strings.Contains(ds[i].Message, sub) {
					t.Errorf("diagnostic #%d = %s; want message containing %q", i, ds[i], sub)
				}
			}
		})
	}
}

// TestLintResultIsACopy checks that changing Lint's result does not change
// the next one.
func TestLintResultIsACopy(t *testing.T) {
	r := policy.Parse([]byte("Foo: bar\nUser-agent: *\nDisallow: /\nAllow: /x\n"))
	first := r.Lint()
	if len(first) != 2 {
		t.Fatalf("Lint = %v, want 2 findings", first)
	}
	want := slices.Clone(first)
	for i := range first {
		first[i].Line, first[i].Code, first[i].Message = -1, "changed", "changed"
	}
	if got := r.Lint(); !slices.Equal(got, want) {
		t.Errorf("Lint after changing a previous result = %v, want %v", got, want)
	}
}

// diagCodeRE finds the codes passed to the diag helper or set in a
// Diagnostic literal in the package's source.
var diagCodeRE = regexp.MustCompile(`(?:\.diag\([^,]+,\s*(?:Warning|Info|Error|sev),\s*|Code:\s*)"([a-z0-9-]+)"`)

// TestLintCoversEveryCode fails when the package emits a code that no row
// of lintCases produces, so that new codes get a test.
func TestLintCoversEveryCode(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	emitted := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range diagCodeRE.FindAllSubmatch(src, -1) {
			emitted[string(m[1])] = true
		}
	}
	for code := range emitted {
		if !policy.IsLintCode(code) {
			t.Errorf("code %q has no category (policy's categories table)", code)
		}
	}
	// The codes the brief lists; the source must still emit all of them.
	for _, code := range []string{"size-cap", "line-too-long", "bom-mid-file", "unparsable-line", "accepted-typo", "key-prefix",
		"missing-colon", "ignored-directive", "unknown-directive", "agent-truncated", "agent-empty", "crawl-delay-joins-group",
		"blank-line-in-group", "rule-before-user-agent", "never-matches", "bad-crawl-delay", "match-order", "html-page"} {
		if !emitted[code] {
			t.Errorf("code %q is no longer found in the package source (or diagCodeRE misses it)", code)
		}
	}
	tested := map[string]bool{}
	for _, c := range lintCases {
		for _, w := range c.want {
			tested[w.code] = true
		}
	}
	for code := range emitted {
		if !tested[code] {
			t.Errorf("code %q is emitted by the package but no lintCases row expects it", code)
		}
	}
}

// TestLintNoDuplicateFindings checks that no corpus file gets the same
// diagnostic twice. A group whose file group is also part of another
// merged group (nytimes.txt: "User-agent: *" and "User-agent: Googlebot"
// share lines 17-102, and Googlebot has a second group at line 107) has
// two rule sets holding the same rule pairs.
func TestLintNoDuplicateFindings(t *testing.T) {
	for _, name := range corpusNames(t) {
		r := policy.Parse(corpusFile(t, name))
		seen := map[policy.Diagnostic]bool{}
		var dups []string
		for _, d := range r.Lint() {
			if seen[d] {
				dups = append(dups, d.String())
			}
			seen[d] = true
		}
		if len(dups) > 0 {
			t.Errorf("%s: %d diagnostics reported twice, e.g.\n\t%s", name, len(dups), dups[0])
		}
	}
}

// TestLintCorpus lints the real files and checks findings verified by
// reading them.
func TestLintCorpus(t *testing.T) {
	t.Run("shopify.txt", func(t *testing.T) {
		// grep -n: 24:"User-agent:  alexa site audit #Alexa audit crawler",
		// 35:"Disallow /500". No Allow lines, so no match-order.
		r := policy.Parse(corpusFile(t, "shopify.txt"))
		ds := r.Lint()
		checkLintOutput(t, r, ds)
		want := []lintWant{{24, "agent-truncated", sevInfo}, {35, "missing-colon", sevWarn}}
		if got := toWants(ds); !slices.Equal(got, want) {
			t.Errorf("Lint = %v, want %v", got, want)
		}
		for _, d := range ds {
			if d.Code == "missing-colon" && !strings.Contains(d.Message, `"Disallow: /500"`) {
				t.Errorf("missing-colon message %q does not show the line as read", d.Message)
			}
			if d.Code == "agent-truncated" && !strings.Contains(d.Message, `"alexa"`) {
				t.Errorf("agent-truncated message %q does not name the token \"alexa\"", d.Message)
			}
		}
	})
	t.Run("venture-gr.txt", func(t *testing.T) {
		// The file starts with a doubly encoded BOM (C3 AF C2 BB C2 BF), so
		// "User-agent: *" of line 1 is spoiled and the rules of lines 2 and
		// 3 come before any user-agent. 375 user-agent values are not bare
		// tokens (counted with awk over the file), e.g. line 4
		// "173.212soso", line 6 "192.comagent", line 18 "3g bot".
		r := policy.Parse(corpusFile(t, "venture-gr.txt"))
		ds := r.Lint()
		checkLintOutput(t, r, ds)
		var other []lintWant
		truncated := map[int]bool{}
		for _, d := range ds {
			if d.Code == "agent-truncated" {
				// "173.212soso" is read as a number, "3g bot" as "3g".
				if want := map[int]policy.Severity{4: sevWarn, 18: sevInfo}[d.Line]; want != 0 && d.Severity != want {
					t.Errorf("%s: want severity %s", d, want)
				}
				truncated[d.Line] = true
				continue
			}
			other = append(other, lintWant{d.Line, d.Code, d.Severity})
		}
		want := []lintWant{{1, "bom-mid-file", sevWarn}, {1, "unknown-directive", sevWarn}, {2, "rule-before-user-agent", sevErr}, {3, "rule-before-user-agent", sevErr}}
		if got := sortWants(other); !slices.Equal(got, sortWants(want)) {
			t.Errorf("findings other than agent-truncated = %v, want %v", got, want)
		}
		if len(truncated) != 375 {
			t.Errorf("agent-truncated on %d lines, want 375", len(truncated))
		}
		for _, l := range []int{4, 6, 18} {
			if !truncated[l] {
				t.Errorf("no agent-truncated on line %d", l)
			}
		}
		if truncated[12] { // "360Spider": digits are kept, nothing is cut
			t.Errorf("agent-truncated on line 12 (360Spider)")
		}
	})
	t.Run("github.txt", func(t *testing.T) {
		// Line 3 "User-agent: baidu", line 4 "crawl-delay: 1", lines 5-6
		// blank, line 7 "User-agent: *". Line 65 "Allow:
		// /*?tab=achievements&achievement=*" after line 64 "Disallow: /*tab=*".
		r := policy.Parse(corpusFile(t, "github.txt"))
		ds := r.Lint()
		checkLintOutput(t, r, ds)
		want := []lintWant{{7, "crawl-delay-joins-group", sevWarn}, {65, "match-order", sevInfo}}
		if got := toWants(ds); !slices.Equal(got, want) {
			t.Errorf("Lint = %v, want %v", got, want)
		}
	})
	t.Run("wikimedia-config.txt", func(t *testing.T) {
		// Line 129 "User-agent: SemrushBot", 130 "Crawl-delay: 5", 148
		// "User-agent: *" with no rule in between.
		r := policy.Parse(corpusFile(t, "wikimedia-config.txt"))
		ds := r.Lint()
		checkLintOutput(t, r, ds)
		n := 0
		for _, d := range ds {
			if d.Code == "crawl-delay-joins-group" {
				n++
				if d.Line != 148 || !strings.Contains(d.Message, "line 129") || !strings.Contains(d.Message, "line 130") ||
					!strings.Contains(d.Message, `only to "SemrushBot"`) {
					t.Errorf("unexpected %s", d)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d crawl-delay-joins-group findings, want 1", n)
		}
	})
	t.Run("oracle-docs.txt never-matches", func(t *testing.T) {
		// Line 139 is a Disallow whose pattern lacks its leading '/'.
		r := policy.Parse(corpusFile(t, "oracle-docs.txt"))
		ds := r.Lint()
		checkLintOutput(t, r, ds)
		var lines []int
		for _, d := range ds {
			if d.Code == "never-matches" {
				lines = append(lines, d.Line)
			}
		}
		if !slices.Equal(lines, []int{139}) {
			t.Errorf("never-matches on lines %v, want [139]", lines)
		}
	})
	t.Run("yandex-ru.txt Clean-param", func(t *testing.T) {
		// Lines 1089-1102 are Clean-param records.
		r := policy.Parse(corpusFile(t, "yandex-ru.txt"))
		ds := r.Lint()
		checkLintOutput(t, r, ds)
		var lines []int
		for _, d := range ds {
			if d.Code == "ignored-directive" {
				lines = append(lines, d.Line)
			}
		}
		want := []int{1089, 1090, 1091, 1092, 1093, 1094, 1095, 1096, 1097, 1098, 1099, 1100, 1101, 1102}
		if !slices.Equal(lines, want) {
			t.Errorf("ignored-directive on lines %v, want %v", lines, want)
		}
	})
	t.Run("xuexi-cn.txt size-cap", func(t *testing.T) {
		r := policy.Parse(corpusFile(t, "xuexi-cn.txt"))
		ds := r.Lint()
		checkLintOutput(t, r, ds)
		// The first 512000 bytes hold 6481 line ends (counted with Python),
		// so reading stops inside line 6482. Lines 2.. are distinct Allow
		// rules of one "*" group: the match-order check stops at the
		// 5001st, line 5002.
		want := []lintWant{{5002, "match-order", sevInfo}, {6482, "size-cap", sevErr}}
		if got := toWants(ds); !slices.Equal(got, want) {
			t.Errorf("Lint = %v, want %v", got, want)
		}
	})
}
