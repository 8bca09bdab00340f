package policy_test

// Independent table tests of /work/shared/SEMANTICS.md §2–§8 and the
// "Project" column of §9 and §10. Every row names the section it checks.

import (
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/policy"
)

const (
	// noGroup in semCase.group expects Decision.Group == "" (no group applies).
	noGroup = "<none>"
	// noRule in semCase.rule expects Decision.Rule == nil.
	noRule = "<no rule>"
	// star opens the global group.
	star = "User-agent: *\n"
)

// Real headers used by several rows.
const (
	semGooglebotUA  = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	semChromeUA     = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	semBytespiderUA = "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)"
	semYandexUA     = "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)"
	semApplebotUA   = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)"
	semMJ12UA       = "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)"
)

type semCase struct {
	name    string
	robots  string
	ua      string // "" means "FooBot"
	target  string
	allowed bool
	group   string // expected Decision.Group; "" = not checked; noGroup = expect ""
	rule    string // expected Decision.Rule.String(); "" = not checked; noRule = expect nil
	line    int    // expected Decision.Rule.Line when > 0
	prio    int    // expected Decision.Rule.Priority when > 0
	exempt  bool   // expected Decision.Exempt (always checked)
}

func runSemCases(t *testing.T, cases []semCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ua := c.ua
			if ua == "" {
				ua = "FooBot"
			}
			r := policy.Parse([]byte(c.robots))
			d := r.Decide(ua, c.target)
			in := func() string {
				rb := c.robots
				if len(rb) > 300 {
					rb = rb[:150] + "…(" + semItoa(len(rb)) + " bytes)…" + rb[len(rb)-120:]
				}
				return "robots=" + semQuote(rb) + " ua=" + semQuote(ua) + " target=" + semQuote(c.target)
			}
			if d.Allowed != c.allowed {
				t.Errorf("%s: Allowed = %v, want %v (decision: %s)", in(), d.Allowed, c.allowed, d)
			}
			if c.exempt != d.Exempt {
				t.Errorf("%s: Exempt = %v, want %v", in(), d.Exempt, c.exempt)
			}
			if c.exempt && d.Rule != nil {
				t.Errorf("%s: exempt decision has Rule %s, want nil", in(), d.Rule)
			}
			switch c.group {
			case "":
			case noGroup:
				if d.Group != "" {
					t.Errorf("%s: Group = %q, want \"\"", in(), d.Group)
				}
			default:
				if d.Group != c.group {
					t.Errorf("%s: Group = %q, want %q", in(), d.Group, c.group)
				}
			}
			if c.rule != "" {
				if got := d.Rule.String(); got != c.rule {
					t.Errorf("%s: Rule = %q, want %q", in(), got, c.rule)
				}
			}
			if (c.line > 0 || c.prio > 0) && d.Rule == nil {
				t.Errorf("%s: Rule = nil, want line %d priority %d", in(), c.line, c.prio)
			}
			if d.Rule != nil {
				if c.line > 0 && d.Rule.Line != c.line {
					t.Errorf("%s: Rule.Line = %d, want %d", in(), d.Rule.Line, c.line)
				}
				if c.prio > 0 && d.Rule.Priority != c.prio {
					t.Errorf("%s: Rule.Priority = %d, want %d", in(), d.Rule.Priority, c.prio)
				}
			}
			// The API equivalences of policy-api.md.
			if got := r.Allowed(ua, c.target); got != d.Allowed {
				t.Errorf("%s: Allowed() = %v but Decide().Allowed = %v", in(), got, d.Allowed)
			}
			a := r.Agent(ua)
			d2 := a.Decide(c.target)
			if d2.Allowed != d.Allowed || d2.Group != d.Group || d2.Rule.String() != d.Rule.String() || d2.Exempt != d.Exempt {
				t.Errorf("%s: Agent().Decide() = %s, Decide() = %s", in(), d2, d)
			}
			if a.Group() != d.Group {
				t.Errorf("%s: Agent().Group() = %q, Decide().Group = %q", in(), a.Group(), d.Group)
			}
		})
	}
}

func semQuote(s string) string {
	const max = 400
	if len(s) > max {
		s = s[:max] + "…"
	}
	return "\"" + strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`, "\"", `\"`).Replace(s) + "\""
}

func semItoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// semPad returns exactly n bytes of comment lines (n >= 1), ending with '\n'.
func semPad(n int) string {
	b := make([]byte, n)
	for i := range b {
		switch {
		case i%100 == 99:
			b[i] = '\n'
		case i%100 == 0:
			b[i] = '#'
		default:
			b[i] = 'x'
		}
	}
	b[n-1] = '\n'
	return string(b)
}

// Lines around the 16,663-byte line cap (§2).
var (
	// "/" at byte 16660: "/ab" is kept, "c" (byte 16663) is dropped.
	capCutValue = "Disallow:" + strings.Repeat(" ", 16651) + "/abc"
	// "/abc" ends at byte 16662: kept whole.
	capFitValue = "Disallow:" + strings.Repeat(" ", 16650) + "/abc"
	// Leading whitespace counts too: "/" at byte 16660.
	capCutLeading = strings.Repeat(" ", 16650) + "Disallow: /abc"
	// The whole value lies past the cap: what is left is an empty Disallow.
	capLostValue = "Disallow:" + strings.Repeat(" ", 16654) + "/x"
	// A long pattern: "/" + 16652 "a" reach the cap, "bcd" is dropped.
	capLongPattern = "Disallow: /" + strings.Repeat("a", 16652) + "bcd"
	capLongTarget  = "/" + strings.Repeat("a", 16652) + "zzz"
	// A comment that runs past the cap.
	capLongComment = "Disallow: /cm #" + strings.Repeat("x", 20000)
)

// Bodies around the 512,000-byte body cap (§1, §9).
var (
	bodyHead = "User-agent: *\nDisallow: /a\n"
	// The cap falls right after "Disallow: /b": "cd" and every later line are ignored.
	bodyOverCap = bodyHead + semPad(policy.MaxBodySize-len(bodyHead)-len("Disallow: /b")) + "Disallow: /b" + "cd\nDisallow: /z\n"
	// Exactly 512,000 bytes: the last rule is read whole.
	bodyAtCap = bodyHead + semPad(policy.MaxBodySize-len(bodyHead)-len("Disallow: /bcd")) + "Disallow: /bcd"
)

func TestSemanticsCapsBuilt(t *testing.T) {
	if len(bodyAtCap) != policy.MaxBodySize || policy.MaxBodySize != 512000 || policy.MaxLineLength != 16663 {
		t.Fatalf("test bodies are built wrong: %d", len(bodyAtCap))
	}
	if strings.Index(capCutValue, "/") != 16660 || strings.Index(capCutLeading, "/") != 16660 || strings.Index(capLostValue, "/") != 16663 {
		t.Fatal("cap lines are built wrong")
	}
}

func TestSemanticsReading(t *testing.T) { // §2 (and the §1 body cap)
	runSemCases(t, []semCase{
		// BOM.
		{name: "§2 full BOM EF BB BF at start is skipped", robots: "\xEF\xBB\xBFUser-agent: *\nDisallow: /a\n", target: "/a", allowed: false, group: "*", rule: "Disallow: /a", line: 2},
		{name: "§2 partial BOM EF at start is skipped", robots: "\xEFUser-agent: *\nDisallow: /a\n", target: "/a", allowed: false, group: "*"},
		{name: "§2 partial BOM EF BB at start is skipped", robots: "\xEF\xBBUser-agent: *\nDisallow: /a\n", target: "/a", allowed: false, group: "*"},
		{name: "§2 BOM at start, user-agent line is line 1", robots: "\xEF\xBB\xBFUser-agent: FooBot\nDisallow: /a\n", target: "/a/b", allowed: false, group: "FooBot", rule: "Disallow: /a", line: 2},
		{name: "§2 BOM mid-file spoils the key of its line", robots: "User-agent: *\n\xEF\xBB\xBFDisallow: /a\nDisallow: /b\n", target: "/a", allowed: true, group: "*", rule: noRule},
		{name: "§2 BOM mid-file: lines around it still read", robots: "User-agent: *\n\xEF\xBB\xBFDisallow: /a\nDisallow: /b\n", target: "/b", allowed: false, rule: "Disallow: /b", line: 3},
		{name: "§2 partial BOM EF mid-file spoils the key", robots: "User-agent: *\n\xEFDisallow: /a\n", target: "/a", allowed: true},
		{name: "§2 BOM mid-file spoils a user-agent key (Y not named)", robots: "User-agent: X\nDisallow: /x\n\xEF\xBB\xBFUser-agent: Y\nDisallow: /y\n", ua: "Y", target: "/x", allowed: true, group: noGroup},
		{name: "§2 BOM mid-file spoils a user-agent key (rule stays in X)", robots: "User-agent: X\nDisallow: /x\n\xEF\xBB\xBFUser-agent: Y\nDisallow: /y\n", ua: "X", target: "/y", allowed: false, group: "X", rule: "Disallow: /y", line: 4},

		// Line ends.
		{name: "§2 CR-only line ends", robots: "User-agent: *\rDisallow: /a\rAllow: /a/b\r", target: "/a/c", allowed: false, rule: "Disallow: /a", line: 2},
		{name: "§2 CR-only line ends (allow)", robots: "User-agent: *\rDisallow: /a\rAllow: /a/b\r", target: "/a/b", allowed: true, rule: "Allow: /a/b", line: 3},
		{name: "§2 mixed CRLF CR LF, no final terminator", robots: "User-agent: *\r\nDisallow: /a\rDisallow: /b\nDisallow: /c", target: "/c", allowed: false, rule: "Disallow: /c", line: 4},
		{name: "§2 mixed CRLF CR LF (lone CR)", robots: "User-agent: *\r\nDisallow: /a\rDisallow: /b\nDisallow: /c", target: "/b", allowed: false, rule: "Disallow: /b", line: 3},
		{name: "§2 lone CR inside a line ends that line", robots: "User-agent: *\nDisallow: /a\rAllow: /a/b\n", target: "/a/b", allowed: true, rule: "Allow: /a/b", line: 3},
		{name: "§2 lone CR inside a line: first part is a rule", robots: "User-agent: *\nDisallow: /a\rAllow: /a/b\n", target: "/a/x", allowed: false, rule: "Disallow: /a", line: 2},
		{name: "§2 CRLF is one line end, CR CRLF is two", robots: "User-agent: *\r\n\r\n\rDisallow: /a", target: "/a", allowed: false, rule: "Disallow: /a", line: 4},
		{name: "§2 LF CR is two line ends", robots: "User-agent: *\n\rDisallow: /a\n", target: "/a", allowed: false, rule: "Disallow: /a", line: 3},
		{name: "§2 last line needs no terminator", robots: "User-agent: *\nDisallow: /last", target: "/last", allowed: false, rule: "Disallow: /last", line: 2},

		// 16,663-byte line cap, applied to the raw line (before comment stripping and trimming).
		{name: "§2 line cap cuts a value pushed past 16663 bytes", robots: star + capCutValue + "\nDisallow: /next\n", target: "/abz", allowed: false, rule: "Disallow: /ab", line: 2},
		{name: "§2 line cap: dropped byte no longer required", robots: star + capCutValue + "\nDisallow: /next\n", target: "/az", allowed: true},
		{name: "§2 line cap: next line read normally", robots: star + capCutValue + "\nDisallow: /next\n", target: "/next", allowed: false, rule: "Disallow: /next", line: 3},
		{name: "§2 line cap: value ending at byte 16663 kept whole", robots: star + capFitValue + "\n", target: "/abz", allowed: true},
		{name: "§2 line cap: value ending at byte 16663 kept whole (match)", robots: star + capFitValue + "\n", target: "/abcz", allowed: false, rule: "Disallow: /abc"},
		{name: "§2 line cap counts leading whitespace (before trimming)", robots: star + capCutLeading + "\n", target: "/abz", allowed: false, rule: "Disallow: /ab"},
		{name: "§2 line cap: value wholly past the cap is lost", robots: star + capLostValue + "\n", target: "/x", allowed: true},
		{name: "§2 line cap truncates a long pattern", robots: star + capLongPattern + "\n", target: capLongTarget, allowed: false},
		{name: "§2 line cap with a long comment", robots: star + capLongComment + "\nDisallow: /after\n", target: "/cm", allowed: false, rule: "Disallow: /cm", line: 2},
		{name: "§2 line cap with a long comment: next line read", robots: star + capLongComment + "\nDisallow: /after\n", target: "/after", allowed: false, line: 3, rule: "Disallow: /after"},

		// 512,000-byte body cap.
		{name: "§1 body cap: rule before the cap applies", robots: bodyOverCap, target: "/a", allowed: false, rule: "Disallow: /a", line: 2},
		{name: "§1 body cap: line cut by the cap keeps its first bytes", robots: bodyOverCap, target: "/bx", allowed: false, rule: "Disallow: /b"},
		{name: "§1 body cap: rule after the cap is ignored", robots: bodyOverCap, target: "/z", allowed: true},
		{name: "§1 body of exactly 512000 bytes read whole", robots: bodyAtCap, target: "/bx", allowed: true},
		{name: "§1 body of exactly 512000 bytes read whole (match)", robots: bodyAtCap, target: "/bcdx", allowed: false, rule: "Disallow: /bcd"},

		// Comments.
		{name: "§2 # starts a comment inside a value", robots: star + "Disallow: /a#b\n", target: "/ax", allowed: false, rule: "Disallow: /a"},
		{name: "§2 comment after value and spaces", robots: star + "Disallow: /p # private\n", target: "/p", allowed: false, rule: "Disallow: /p", line: 2},
		{name: "§2 commented-out rule", robots: star + "# Disallow: /a\nDisallow: /b\n", target: "/a", allowed: true},
		{name: "§2 comment on the user-agent line", robots: "User-agent: * # everyone\nDisallow: /a\n", target: "/a", allowed: false, group: "*"},
		{name: "§2 comment-only lines ignored", robots: "#\n# hello: world\nUser-agent: FooBot\n#\nDisallow: /a\n", target: "/a", allowed: false, group: "FooBot", line: 5, rule: "Disallow: /a"},

		// key : value.
		{name: "§2 whitespace around key, colon and value", robots: star + "  Disallow  :   /a  \n", target: "/a", allowed: false, rule: "Disallow: /a"},
		{name: "§2 tabs around key and value", robots: "User-agent:\t*\n\tDisallow:\t/a\t\n", target: "/a", allowed: false, rule: "Disallow: /a"},
		{name: "§2 missing colon, exactly two words: rule", robots: star + "Disallow /a\n", target: "/a", allowed: false, rule: "Disallow: /a", line: 2},
		{name: "§2 missing colon, exactly two words: user-agent", robots: "User-agent FooBot\nDisallow: /a\n", target: "/a", allowed: false, group: "FooBot"},
		{name: "§2 missing colon, three words: ignored", robots: star + "Disallow /a /b\n", target: "/a", allowed: true},
		{name: "§2 missing colon, three words user agent: ignored", robots: "User agent FooBot\nDisallow: /a\n", target: "/a", allowed: true, group: noGroup},
		{name: "§2 missing colon, one word: ignored, does not close the run", robots: "User-agent: A\nDisallow\nUser-agent: B\nDisallow: /b\n", ua: "A", target: "/b", allowed: false, group: "A"},
		{name: "§2 comment stripped before the two-word check", robots: star + "Disallow /a # no colon here\n", target: "/a", allowed: false, rule: "Disallow: /a"},
		{name: "§2 unparsable HTML lines skipped, valid lines kept", robots: "<html>\n<body>\nUser-agent: *\n<p>hello there world</p>\nDisallow: /a\n</body></html>\n", target: "/a", allowed: false, rule: "Disallow: /a", line: 5},

		// Keys.
		{name: "§2 keys are case-insensitive (disallow)", robots: "uSeR-aGeNt: *\nDISALLOW: /a\nALLOW: /a/b\n", target: "/a/x", allowed: false, group: "*"},
		{name: "§2 keys are case-insensitive (allow)", robots: "uSeR-aGeNt: *\nDISALLOW: /a\nALLOW: /a/b\n", target: "/a/b", allowed: true, rule: "Allow: /a/b"},
		{name: "§2 key useragent", robots: "Useragent: FooBot\nDisallow: /a\n", target: "/a", allowed: false, group: "FooBot"},
		{name: "§2 key user agent", robots: "User agent: FooBot\nDisallow: /a\n", target: "/a", allowed: false, group: "FooBot"},
		{name: "§2 key prefix User-agents", robots: "User-agents: FooBot\nDisallow: /a\n", target: "/a", allowed: false, group: "FooBot"},
		{name: "§2 key typo dissallow", robots: star + "Dissallow: /a\n", target: "/a", allowed: false, rule: "Disallow: /a"},
		{name: "§2 key typo dissalow", robots: star + "Dissalow: /a\n", target: "/a", allowed: false, rule: "Disallow: /a"},
		{name: "§2 key typo disalow", robots: star + "disalow: /a\n", target: "/a", allowed: false, rule: "Disallow: /a"},
		{name: "§2 key typo diasllow", robots: star + "Diasllow: /a\n", target: "/a", allowed: false, rule: "Disallow: /a"},
		{name: "§2 key typo disallaw", robots: star + "DISALLAW: /a\n", target: "/a", allowed: false, rule: "Disallow: /a"},
		{name: "§2 key prefix Disallowed", robots: star + "Disallowed: /a\n", target: "/a", allowed: false, rule: "Disallow: /a"},
		{name: "§2 alow is NOT allow", robots: star + "Disallow: /a\nAlow: /a/b\n", target: "/a/b", allowed: false, rule: "Disallow: /a"},
		{name: "§2 alow is an other record: does not close the run", robots: "User-agent: A\nAlow: /x\nUser-agent: B\nDisallow: /b\n", ua: "A", target: "/b", allowed: false, group: "A"},
		{name: "§2 other records have no effect on matching", robots: star + "Noindex: /a\nHost: example.com\nClean-param: ref /a\nCrawl-delay: 3\nDisallow: /b\n", target: "/a", allowed: true},
		{name: "§2 site-map is a sitemap, not a rule", robots: star + "Site-map: /a\nDisallow: /b\n", target: "/a", allowed: true},
	})
}

func TestSemanticsGroups(t *testing.T) { // §3
	const (
		ab       = "User-agent: A\nDisallow: /a\nUser-agent: B\nDisallow: /b\n"
		merged   = "User-agent: FooBot\nDisallow: /a\n\nUser-agent: *\nDisallow: /c\n\nUser-agent: foobot\nDisallow: /b\n"
		stars    = "User-agent: *\nDisallow: /a\n\nUser-agent: X\nDisallow: /x\n\nUser-agent: *\nDisallow: /b\n"
		xAndStar = "User-agent: X\nUser-agent: *\nDisallow: /z\n\nUser-agent: *\nDisallow: /w\n"
		bare     = "User-agent: *\nDisallow: /\n\nUser-agent: X\n"
	)
	runSemCases(t, []semCase{
		{name: "§3 user-agent after a rule opens a new group (A)", robots: ab, ua: "A", target: "/b", allowed: true, group: "A"},
		{name: "§3 user-agent after a rule opens a new group (A own rule)", robots: ab, ua: "A", target: "/a", allowed: false, group: "A", rule: "Disallow: /a", line: 2},
		{name: "§3 user-agent after a rule opens a new group (B)", robots: ab, ua: "B", target: "/a", allowed: true, group: "B"},
		{name: "§3 consecutive user-agent lines share a group", robots: "User-agent: A\nUser-agent: B\nDisallow: /x\n", ua: "A", target: "/x", allowed: false, group: "A", rule: "Disallow: /x", line: 3},
		{name: "§3 blank line between user-agents joins them", robots: "User-agent: A\n\nUser-agent: B\nDisallow: /x\n", ua: "A", target: "/x", allowed: false, group: "A"},
		{name: "§3 comment, Sitemap and unknown record between user-agents join them", robots: "User-agent: A\n# c\nSitemap: https://example.com/s.xml\nHost: example.com\nUser-agent: B\nDisallow: /x\n", ua: "A", target: "/x", allowed: false, group: "A"},
		{name: "§3 Crawl-delay surprising consequence: A and * are one group", robots: "User-agent: A\nCrawl-delay: 5\n\nUser-agent: *\nDisallow: /\n", ua: "A", target: "/page", allowed: false, group: "A", rule: "Disallow: /", line: 5},
		{name: "§3 Crawl-delay surprising consequence: * side", robots: "User-agent: A\nCrawl-delay: 5\n\nUser-agent: *\nDisallow: /\n", ua: "Other", target: "/page", allowed: false, group: "*"},
		{name: "§3 blank line does not end a group", robots: "User-agent: A\nDisallow: /a\n\nDisallow: /b\n", ua: "A", target: "/b", allowed: false, rule: "Disallow: /b", line: 4},
		{name: "§3 Sitemap does not close a group", robots: "User-agent: A\nDisallow: /a\nSitemap: https://x/s.xml\nDisallow: /b\n", ua: "A", target: "/b", allowed: false},
		{name: "§3 empty Disallow closes the user-agent run (A)", robots: "User-agent: A\nDisallow:\nUser-agent: B\nDisallow: /b\n", ua: "A", target: "/b", allowed: true, group: "A"},
		{name: "§3 empty Disallow closes the user-agent run (B)", robots: "User-agent: A\nDisallow:\nUser-agent: B\nDisallow: /b\n", ua: "B", target: "/b", allowed: false, group: "B"},
		{name: "§3 empty Allow closes the user-agent run", robots: "User-agent: A\nAllow:\nUser-agent: B\nDisallow: /b\n", ua: "A", target: "/b", allowed: true, group: "A"},
		{name: "§3 a rule that can never match still closes the run", robots: "User-agent: A\nDisallow: a\nUser-agent: B\nDisallow: /b\n", ua: "A", target: "/b", allowed: true, group: "A"},
		{name: "§3 empty user-agent value opens a group that never matches", robots: "User-agent:\nDisallow: /a\nUser-agent: *\nDisallow: /b\n", ua: "Other", target: "/a", allowed: true, group: "*"},
		{name: "§3 empty user-agent value joins the current group", robots: "User-agent: *\nUser-agent:\nDisallow: /a\n", ua: "Other", target: "/a", allowed: false, group: "*"},
		{name: "§3 empty Disallow never wins", robots: star + "Disallow:\nDisallow: /a\n", target: "/a", allowed: false, rule: "Disallow: /a", line: 3},
		{name: "§3 empty Allow never wins", robots: star + "Allow:\nDisallow: /a\n", target: "/a/b", allowed: false, rule: "Disallow: /a", line: 3},
		{name: "§3 empty Allow does not beat Disallow: /", robots: star + "Disallow: /\nAllow:\n", target: "/x", allowed: false, rule: "Disallow: /"},
		{name: "§3 only an empty Disallow: allowed, empty Disallow reported", robots: star + "Disallow:\n", target: "/x", allowed: true, group: "*", rule: "Disallow:", line: 2},
		{name: "§3 rules before the first user-agent ignored", robots: "Disallow: /a\nAllow: /b\nUser-agent: *\nDisallow: /b\n", target: "/a", allowed: true, group: "*"},
		{name: "§3 rules before the first user-agent ignored (allow too)", robots: "Disallow: /a\nAllow: /b\nUser-agent: *\nDisallow: /b\n", target: "/b/x", allowed: false, rule: "Disallow: /b", line: 4},
		{name: "§3 rules with no user-agent at all ignored", robots: "Disallow: /\n", target: "/x", allowed: true, group: noGroup, rule: noRule},
		{name: "§3 same-token groups merged case-insensitively (later rule)", robots: merged, target: "/b", allowed: false, group: "FooBot", rule: "Disallow: /b", line: 8},
		{name: "§3 same-token groups merged case-insensitively (earlier rule)", robots: merged, target: "/a", allowed: false, group: "FooBot", rule: "Disallow: /a", line: 2},
		{name: "§3 same-token groups merged, * not merged in", robots: merged, target: "/c", allowed: true, group: "FooBot"},
		{name: "§3 merged groups compete by length", robots: "User-agent: FooBot\nDisallow: /a\n\nUser-agent: FOOBOT\nAllow: /a/b\n", target: "/a/b", allowed: true, group: "FooBot", rule: "Allow: /a/b", line: 5},
		{name: "§3 all * groups merged (first)", robots: stars, ua: "Other", target: "/a", allowed: false, group: "*"},
		{name: "§3 all * groups merged (second)", robots: stars, ua: "Other", target: "/b", allowed: false, group: "*", rule: "Disallow: /b", line: 8},
		{name: "§3 * groups merged, specific not merged in", robots: stars, ua: "Other", target: "/x", allowed: true, group: "*"},
		{name: "§3 specific never merged with * (a)", robots: stars, ua: "X", target: "/a", allowed: true, group: "X"},
		{name: "§3 specific never merged with * (b)", robots: stars, ua: "X", target: "/b", allowed: true, group: "X"},
		{name: "§3 specific never merged with * (own)", robots: stars, ua: "X", target: "/x", allowed: false, group: "X"},
		{name: "§3 group naming X and *: X uses only groups naming X", robots: xAndStar, ua: "X", target: "/w", allowed: true, group: "X"},
		{name: "§3 group naming X and *: X gets its own rules", robots: xAndStar, ua: "X", target: "/z", allowed: false, group: "X"},
		{name: "§3 group naming X and *: others get all * groups (z)", robots: xAndStar, ua: "Other", target: "/z", allowed: false, group: "*"},
		{name: "§3 group naming X and *: others get all * groups (w)", robots: xAndStar, ua: "Other", target: "/w", allowed: false, group: "*"},
		{name: "§3 bare matched group allows everything, * not consulted", robots: bare, ua: "X", target: "/page", allowed: true, group: "X", rule: noRule},
		{name: "§3 bare group at the end: others still get *", robots: bare, ua: "Other", target: "/page", allowed: false, group: "*"},
	})
}

func TestSemanticsAgentValue(t *testing.T) { // §4
	const fooBar = "User-agent: FooBot, BarBot\nDisallow: /\n\nUser-agent: *\nDisallow: /s\n"
	runSemCases(t, []semCase{
		{name: "§4 exactly * is global", robots: "User-agent: *\nDisallow: /a\n", ua: "Other", target: "/a", allowed: false, group: "*"},
		{name: "§4 * followed by space is global", robots: "User-agent: * foo\nDisallow: /a\n", ua: "Other", target: "/a", allowed: false, group: "*"},
		{name: "§4 * followed by tab is global", robots: "User-agent: *\tfoo\nDisallow: /a\n", ua: "Other", target: "/a", allowed: false, group: "*"},
		{name: "§4 *Bot is not global", robots: "User-agent: *Bot\nDisallow: /a\n", ua: "Other", target: "/a", allowed: true, group: noGroup},
		{name: "§4 *Bot names no token (not Bot)", robots: "User-agent: *Bot\nDisallow: /a\n", ua: "Bot", target: "/a", allowed: true, group: noGroup},
		{name: "§4 *, is not global", robots: "User-agent: *,\nDisallow: /a\n", ua: "Other", target: "/a", allowed: true, group: noGroup},
		{name: "§4 *Bot group is not merged into *", robots: "User-agent: *Bot\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n", ua: "Other", target: "/a", allowed: true, group: "*"},
		{name: "§4 Googlebot/2.1 becomes googlebot", robots: "User-agent: Googlebot/2.1\nDisallow: /a\n", ua: "googlebot", target: "/a", allowed: false, group: "Googlebot"},
		{name: "§4 googlebot* becomes googlebot", robots: "User-agent: googlebot*\nDisallow: /a\n", ua: "Googlebot", target: "/a", allowed: false, group: "googlebot"},
		{name: "§4 Googlebot Images becomes googlebot", robots: "User-agent: Googlebot Images\nDisallow: /a\n", ua: "Googlebot", target: "/a", allowed: false, group: "Googlebot"},
		{name: "§4 Googlebot Images does not name Images", robots: "User-agent: Googlebot Images\nDisallow: /a\n", ua: "Images", target: "/a", allowed: true, group: noGroup},
		{name: "§4 FooBot, BarBot names FooBot", robots: fooBar, ua: "FooBot", target: "/x", allowed: false, group: "FooBot"},
		{name: "§4 FooBot, BarBot does not name BarBot", robots: fooBar, ua: "BarBot", target: "/x", allowed: true, group: "*"},
		{name: "§4 token cut at .", robots: "User-agent: Foo.Bot\nDisallow: /a\n", ua: "Foo", target: "/a", allowed: false, group: "Foo"},
		{name: "§4 digits kept: MJ12bot matches its header", robots: "User-agent: MJ12bot\nDisallow: /\n", ua: semMJ12UA, target: "/x", allowed: false, group: "MJ12bot"},
		{name: "§4 digits kept: MJ12bot does not name MJ", robots: "User-agent: MJ12bot\nDisallow: /\n", ua: "MJ", target: "/x", allowed: true, group: noGroup},
		{name: "§4 digits kept: group MJ does not bind MJ12bot", robots: "User-agent: MJ\nDisallow: /\n", ua: "MJ12bot", target: "/x", allowed: true, group: noGroup},
		{name: "§4 digits kept: 360Spider", robots: "User-agent: 360Spider\nDisallow: /\n", ua: "360Spider", target: "/x", allowed: false, group: "360Spider"},
		{name: "§4 digits kept: 360Spider does not name Spider", robots: "User-agent: 360Spider\nDisallow: /\n", ua: "Spider", target: "/x", allowed: true, group: noGroup},
		{name: "§4 digits kept: Hal-9000", robots: "User-agent: Hal-9000\nDisallow: /\n", ua: "Hal-9000", target: "/x", allowed: false, group: "Hal-9000"},
		{name: "§4 digits kept: Bot2000 does not name Bot", robots: "User-agent: Bot2000\nDisallow: /\n", ua: "Bot", target: "/x", allowed: true, group: noGroup},
		{name: "§4 digits kept: Bot2000 names Bot2000", robots: "User-agent: Bot2000\nDisallow: /\n", ua: "Bot2000/1.0", target: "/x", allowed: false, group: "Bot2000"},
		{name: "§4 tokens compared case-insensitively", robots: "User-agent: foobot\nDisallow: /\n", ua: "FOOBOT", target: "/x", allowed: false, group: "foobot"},
		{name: "§4 no substring match (group shorter)", robots: "User-agent: Foo\nDisallow: /\n", ua: "FooBot", target: "/x", allowed: true, group: noGroup},
		{name: "§4 no substring match (group longer)", robots: "User-agent: FooBotX\nDisallow: /\n", ua: "FooBot", target: "/x", allowed: true, group: noGroup},
		{name: "§4 underscore kept in token", robots: "User-agent: my_bot\nDisallow: /\n", ua: "my_bot", target: "/x", allowed: false, group: "my_bot"},
	})
}

func TestSemanticsHeader(t *testing.T) { // §5
	const (
		botG  = "User-agent: bot\nDisallow: /\n"
		fooG  = "User-agent: foo\nDisallow: /\n"
		gbot  = "User-agent: Googlebot\nDisallow: /g\n\nUser-agent: *\nDisallow: /s\n"
		gimg  = "User-agent: googlebot\nDisallow: /g\n\nUser-agent: googlebot-image\nDisallow: /i\n"
		mozG  = "User-agent: Mozilla\nDisallow: /m\n\nUser-agent: Googlebot\nDisallow: /g\n"
		equal = "User-agent: AlphaBot\nDisallow: /a\n\nUser-agent: GammaBot\nDisallow: /g\n"
	)
	runSemCases(t, []semCase{
		// Step 1: URL and e-mail items.
		{name: "§5 URL item dropped (bot in URL path)", robots: botG, ua: "FooCrawler/1.0 (+http://example.com/bot)", target: "/x", allowed: true, group: noGroup},
		{name: "§5 URL item dropped (google, bot groups, Googlebot header)", robots: "User-agent: google\nDisallow: /g\n\nUser-agent: bot\nDisallow: /b\n\nUser-agent: *\nDisallow: /s\n", ua: semGooglebotUA, target: "/b", allowed: true, group: "*"},
		{name: "§5 URL item dropped (google, bot groups, * applies)", robots: "User-agent: google\nDisallow: /g\n\nUser-agent: bot\nDisallow: /b\n\nUser-agent: *\nDisallow: /s\n", ua: semGooglebotUA, target: "/s", allowed: false, group: "*"},
		{name: "§5 e-mail item dropped (spider)", robots: "User-agent: spider\nDisallow: /\n\nUser-agent: *\nDisallow: /s\n", ua: semBytespiderUA, target: "/x", allowed: true, group: "*"},
		{name: "§5 e-mail header still matches its own token", robots: "User-agent: Bytespider\nDisallow: /\n", ua: semBytespiderUA, target: "/x", allowed: false, group: "Bytespider"},

		// Step 2: whole words.
		{name: "§5 before T: hyphen is not a boundary", robots: botG, ua: "Foo-bot", target: "/x", allowed: true, group: noGroup},
		{name: "§5 before T: dot is not a boundary", robots: botG, ua: "foo.bot", target: "/x", allowed: true, group: noGroup},
		{name: "§5 before T: underscore is not a boundary", robots: botG, ua: "foo_bot", target: "/x", allowed: true, group: noGroup},
		{name: "§5 before T: letter is not a boundary (no substring)", robots: botG, ua: "Robot", target: "/x", allowed: true, group: noGroup},
		{name: "§5 before T: digit is not a boundary", robots: botG, ua: "2bot", target: "/x", allowed: true, group: noGroup},
		{name: "§5 before T: slash is a boundary", robots: botG, ua: "Mozilla/bot", target: "/x", allowed: false, group: "bot"},
		{name: "§5 before T: start of header", robots: botG, ua: "Bot/1.0 (x)", target: "/x", allowed: false, group: "bot"},
		{name: "§5 token as a middle word", robots: botG, ua: "Foo bot/1.0 Bar", target: "/x", allowed: false, group: "bot"},
		{name: "§5 later whole-word occurrence counts", robots: botG, ua: "Robot bot", target: "/x", allowed: false, group: "bot"},
		{name: "§5 later whole-word occurrence counts (after-boundary)", robots: fooG, ua: "foo.bar foo/2", target: "/x", allowed: false, group: "foo"},
		{name: "§5 hyphenated group token", robots: "User-agent: AdsBot-Google\nDisallow: /\n", ua: "AdsBot-Google (+http://www.google.com/adsbot.html)", target: "/x", allowed: false, group: "AdsBot-Google"},
		{name: "§5 longest hyphen fallback wins", robots: "User-agent: foo\nDisallow: /f\n\nUser-agent: foo-bar\nDisallow: /b\n", ua: "foo-bar-baz/1", target: "/b", allowed: false, group: "foo-bar"},
		{name: "§5 longest hyphen fallback wins (parent rules unused)", robots: "User-agent: foo\nDisallow: /f\n\nUser-agent: foo-bar\nDisallow: /b\n", ua: "foo-bar-baz/1", target: "/f", allowed: true, group: "foo-bar"},
		{name: "§5 separators ; without spaces", robots: "User-agent: Googlebot\nDisallow: /\n", ua: "Mozilla/5.0(compatible;Googlebot/2.1;+http://www.google.com/bot.html)", target: "/x", allowed: false, group: "Googlebot"},
		{name: "§5 after T: dot is not a boundary", robots: fooG, ua: "foo.bar", target: "/x", allowed: true, group: noGroup},
		{name: "§5 after T: underscore is not a boundary", robots: fooG, ua: "foo_bar", target: "/x", allowed: true, group: noGroup},
		{name: "§5 after T: digit is not a boundary", robots: fooG, ua: "foo2", target: "/x", allowed: true, group: noGroup},
		{name: "§5 after T: letter is not a boundary", robots: fooG, ua: "foobar", target: "/x", allowed: true, group: noGroup},
		{name: "§5 after T: slash is a boundary", robots: fooG, ua: "Foo/1.0", target: "/x", allowed: false, group: "foo"},
		{name: "§5 after T: semicolon is a boundary", robots: fooG, ua: "Mozilla/5.0 (compatible; FOO; x)", target: "/x", allowed: false, group: "foo"},
		{name: "§5 after T: parenthesis is a boundary", robots: fooG, ua: "x (foo)", target: "/x", allowed: false, group: "foo"},
		{name: "§5 after T: end of header", robots: fooG, ua: "bar foo", target: "/x", allowed: false, group: "foo"},
		{name: "§5 hyphen fallback", robots: fooG, ua: "foo-bar/1.0", target: "/x", allowed: false, group: "foo"},
		{name: "§5 hyphen fallback Googlebot-Image -> googlebot", robots: gbot, ua: "Googlebot-Image/1.0", target: "/g", allowed: false, group: "Googlebot"},
		{name: "§5 hyphen fallback Googlebot-Image: * not used", robots: gbot, ua: "Googlebot-Image/1.0", target: "/s", allowed: true, group: "Googlebot"},
		{name: "§5 hyphen fallback Googlebot-Video", robots: gbot, ua: "Googlebot-Video/1.0", target: "/g", allowed: false, group: "Googlebot"},
		{name: "§5 hyphen fallback Googlebot-Mobile", robots: gbot, ua: "Mozilla/5.0 (compatible; Googlebot-Mobile/2.1; +http://www.google.com/bot.html)", target: "/g", allowed: false, group: "Googlebot"},
		{name: "§5 hyphen fallback Baiduspider-render", robots: "User-agent: Baiduspider\nDisallow: /\n", ua: "Mozilla/5.0 (compatible; Baiduspider-render/2.0; +http://www.baidu.com/search/spider.html)", target: "/x", allowed: false, group: "Baiduspider"},
		{name: "§5 hyphen fallback DuckDuckBot-Https", robots: "User-agent: DuckDuckBot\nDisallow: /\n", ua: "DuckDuckBot-Https/1.1; (+https://duckduckgo.com/duckduckbot)", target: "/x", allowed: false, group: "DuckDuckBot"},
		{name: "§5 own googlebot-image group beats the fallback", robots: gimg, ua: "Googlebot-Image/1.0", target: "/i", allowed: false, group: "googlebot-image"},
		{name: "§5 own googlebot-image group only (googlebot rules not merged)", robots: gimg, ua: "Googlebot-Image/1.0", target: "/g", allowed: true, group: "googlebot-image"},
		{name: "§5 googlebot header does not get googlebot-image", robots: gimg, ua: semGooglebotUA, target: "/i", allowed: true, group: "googlebot"},

		// Step 3: most specific.
		{name: "§5 longest token wins: Googlebot over Mozilla", robots: mozG, ua: semGooglebotUA, target: "/g", allowed: false, group: "Googlebot"},
		{name: "§5 longest token wins: Mozilla rules not used", robots: mozG, ua: semGooglebotUA, target: "/m", allowed: true, group: "Googlebot"},
		{name: "§5 equal-length tokens merged (a)", robots: equal, ua: "AlphaBot/1.0 GammaBot/2.0", target: "/a", allowed: false},
		{name: "§5 equal-length tokens merged (g)", robots: equal, ua: "AlphaBot/1.0 GammaBot/2.0", target: "/g", allowed: false},
		{name: "§5 shorter match loses", robots: "User-agent: Alpha\nDisallow: /a\n\nUser-agent: GammaBot\nDisallow: /g\n", ua: "Alpha/1.0 GammaBot/2.0", target: "/a", allowed: true, group: "GammaBot"},

		// Step 4.
		{name: "§5 no token matches: merged * groups", robots: "User-agent: Other\nDisallow: /o\n\nUser-agent: *\nDisallow: /s\n", target: "/s", allowed: false, group: "*"},
		{name: "§5 no token matches, no *: allowed", robots: "User-agent: Other\nDisallow: /\n", target: "/x", allowed: true, group: noGroup, rule: noRule},
		{name: "§5 empty file: allowed", robots: "", target: "/x", allowed: true, group: noGroup, rule: noRule},
		{name: "§5 bare product token: exact case-insensitive", robots: "User-agent: FooBot\nDisallow: /\n", ua: "foobot", target: "/x", allowed: false, group: "FooBot"},

		// Known consequences.
		{name: "§5 Mozilla group binds browsers", robots: "User-agent: Mozilla\nDisallow: /\n", ua: semChromeUA, target: "/x", allowed: false, group: "Mozilla"},
		{name: "§5 Yandex does not cover YandexBot", robots: "User-agent: Yandex\nDisallow: /\n", ua: semYandexUA, target: "/x", allowed: true, group: noGroup},
		{name: "§5 Google-InspectionTool gets *", robots: gbot, ua: "Mozilla/5.0 (compatible; Google-InspectionTool/1.0;)", target: "/s", allowed: false, group: "*"},
		{name: "§5 Google-InspectionTool not bound by Googlebot", robots: gbot, ua: "Mozilla/5.0 (compatible; Google-InspectionTool/1.0;)", target: "/g", allowed: true, group: "*"},
		{name: "§5 AdsBot-Google gets *", robots: gbot, ua: "AdsBot-Google (+http://www.google.com/adsbot.html)", target: "/g", allowed: true, group: "*"},
		{name: "§5 Google-Extended never matches a Googlebot header", robots: "User-agent: Google-Extended\nDisallow: /\n", ua: semGooglebotUA, target: "/x", allowed: true, group: noGroup},
		{name: "§5 Applebot-Extended never matches an Applebot header", robots: "User-agent: Applebot-Extended\nDisallow: /\n", ua: semApplebotUA, target: "/x", allowed: true, group: noGroup},
	})
}

func TestSemanticsTarget(t *testing.T) { // §6
	runSemCases(t, []semCase{
		// The target.
		{name: "§6 query is part of the target", robots: star + "Disallow: /a?b=1\n", target: "/a?b=1", allowed: false, rule: "Disallow: /a?b=1"},
		{name: "§6 query is part of the target (no query)", robots: star + "Disallow: /a?b=1\n", target: "/a", allowed: true},
		{name: "§6 query is part of the target (other query)", robots: star + "Disallow: /a?b=1\n", target: "/a?b=2", allowed: true},
		{name: "§6 * reaches into the query", robots: star + "Disallow: /*?\n", target: "/x?y", allowed: false},
		{name: "§6 no query, no ?", robots: star + "Disallow: /*?\n", target: "/x", allowed: true},
		{name: "§6 bare trailing ? kept: /*?$ matches", robots: star + "Disallow: /\nAllow: /*?$\n", target: "/page?", allowed: true, rule: "Allow: /*?$", line: 3, prio: 4},
		{name: "§6 /*?$ does not match a real query", robots: star + "Disallow: /\nAllow: /*?$\n", target: "/page?x=1", allowed: false},
		{name: "§6 /*?$ does not match no query", robots: star + "Disallow: /\nAllow: /*?$\n", target: "/page", allowed: false},
		{name: "§6 empty path is /", robots: star + "Disallow: /$\n", target: "", allowed: false, rule: "Disallow: /$"},
		{name: "§6 /$ does not match deeper paths", robots: star + "Disallow: /$\n", target: "/x", allowed: true},
		{name: "§6 absolute URL target", robots: star + "Disallow: /private\n", target: "https://example.com/private/x", allowed: false},
		{name: "§6 absolute URL target with port, not matching", robots: star + "Disallow: /private\n", target: "https://example.com:8080/public", allowed: true},
		{name: "§6 absolute URL target with query", robots: star + "Disallow: /a?b\n", target: "http://example.com/a?b=1", allowed: false},
		{name: "§6 absolute URL with empty path is /", robots: star + "Disallow: /$\n", target: "http://example.com", allowed: false},
		{name: "§6 absolute URL with empty path and a query", robots: star + "Disallow: /?x\n", target: "http://example.com?x", allowed: false},
		{name: "§6 matching is case-sensitive", robots: star + "Disallow: /Admin\n", target: "/admin", allowed: true},
		{name: "§6 matching is case-sensitive (match)", robots: star + "Disallow: /Admin\n", target: "/Admin/x", allowed: false},
		{name: "§6 no dot-segment removal", robots: star + "Disallow: /a/b\n", target: "/x/../a/b", allowed: true},
		{name: "§6 no dot-segment removal (./)", robots: star + "Disallow: /a/b\n", target: "/a/./b", allowed: true},
		{name: "§6 no slash collapsing", robots: star + "Disallow: /a/b\n", target: "//a/b", allowed: true},
		{name: "§6 //a/b is a path, not an authority", robots: star + "Disallow: //a\n", target: "//a/b", allowed: false},
		{name: "§6 dot segments matched as written", robots: star + "Disallow: /x/../\n", target: "/x/../y", allowed: false},

		// Normalisation of both sides.
		{name: "§6 UTF-8 pattern matches upper-case percent-encoded target", robots: star + "Disallow: /é\n", target: "/%C3%A9", allowed: false, rule: "Disallow: /é", prio: 7},
		{name: "§6 UTF-8 pattern matches lower-case percent-encoded target", robots: star + "Disallow: /é\n", target: "/%c3%a9", allowed: false},
		{name: "§6 UTF-8 pattern matches raw UTF-8 target", robots: star + "Disallow: /é\n", target: "/é", allowed: false},
		{name: "§6 percent-encoded pattern matches UTF-8 target", robots: star + "Disallow: /%C3%A9\n", target: "/é", allowed: false},
		{name: "§6 lower-case hex in pattern", robots: star + "Disallow: /%c3%a9\n", target: "/%C3%A9", allowed: false, prio: 7},
		{name: "§6 lower-case hex in pattern vs raw target", robots: star + "Disallow: /%c3%a9\n", target: "/é", allowed: false},
		{name: "§6 byte 0xFF in pattern encoded", robots: star + "Disallow: /\xff\n", target: "/%ff", allowed: false},
		{name: "§6 %7E in pattern decoded to ~", robots: star + "Disallow: /%7Euser\n", target: "/~user", allowed: false},
		{name: "§6 %7e in target decoded to ~", robots: star + "Disallow: /~user\n", target: "/%7euser/x", allowed: false},
		{name: "§6 %41 decoded to A", robots: star + "Disallow: /%41\n", target: "/A", allowed: false},
		{name: "§6 %41 decoded to A, still case-sensitive", robots: star + "Disallow: /%41\n", target: "/a", allowed: true},
		{name: "§6 unreserved escape in target decoded", robots: star + "Disallow: /admin\n", target: "/%61dmin", allowed: false},
		{name: "§6 %2F in pattern is not /", robots: star + "Disallow: /a%2Fb\n", target: "/a/b", allowed: true},
		{name: "§6 %2F in pattern matches %2f", robots: star + "Disallow: /a%2Fb\n", target: "/a%2fb", allowed: false},
		{name: "§6 / in pattern is not %2F", robots: star + "Disallow: /a/b\n", target: "/a%2Fb", allowed: true},
		{name: "§6 %3F is not ?", robots: star + "Disallow: /a%3Fb\n", target: "/a?b", allowed: true},
		{name: "§6 %3F matches %3f", robots: star + "Disallow: /a%3Fb\n", target: "/a%3fb", allowed: false},
		{name: "§6 raw space in pattern matches %20", robots: star + "Disallow: /a b\n", target: "/a%20b", allowed: false, rule: "Disallow: /a b", prio: 6},
		{name: "§6 raw space in target matches %20", robots: star + "Disallow: /a%20b\n", target: "/a b", allowed: false},
		{name: "§6 | in pattern encoded", robots: star + "Disallow: /a|b\n", target: "/a%7Cb", allowed: false},
		{name: "§6 {} in target encoded", robots: star + "Disallow: /%7bx%7d\n", target: "/{x}", allowed: false},
		{name: "§6 \" < > \\ ^ backquote encoded", robots: star + "Disallow: /\"<>\\^`\n", target: "/%22%3C%3E%5C%5E%60", allowed: false},
		{name: "§6 tab (control) in pattern encoded", robots: star + "Disallow: /a\tb\n", target: "/a%09b", allowed: false},

		// Wildcards.
		{name: "§6 * matches any sequence", robots: star + "Disallow: /*.pdf\n", target: "/a/b.pdf", allowed: false},
		{name: "§6 * match is case-sensitive", robots: star + "Disallow: /*.pdf\n", target: "/a.PDF", allowed: true},
		{name: "§6 several *", robots: star + "Disallow: /a*b*c\n", target: "/aXbYc", allowed: false},
		{name: "§6 several *, missing part", robots: star + "Disallow: /a*b*c\n", target: "/aXc", allowed: true},
		{name: "§6 * crosses / and ?", robots: star + "Disallow: /a*z\n", target: "/a/b?q=z", allowed: false},
		{name: "§6 pattern starting with *", robots: star + "Disallow: *.gif\n", target: "/img/x.gif", allowed: false},
		{name: "§6 $ anchors the end", robots: star + "Disallow: /*.pdf$\n", target: "/x.pdf", allowed: false},
		{name: "§6 $ anchors the end (query follows)", robots: star + "Disallow: /*.pdf$\n", target: "/x.pdf?y", allowed: true},
		{name: "§6 $ anchors the end (more path)", robots: star + "Disallow: /*.pdf$\n", target: "/x.pdfx", allowed: true},
		{name: "§6 /a$ exact", robots: star + "Disallow: /a$\n", target: "/a", allowed: false},
		{name: "§6 /a$ exact, longer target", robots: star + "Disallow: /a$\n", target: "/ab", allowed: true},
		{name: "§6 $ not last is literal", robots: star + "Disallow: /a$b\n", target: "/a$b", allowed: false},
		{name: "§6 $ not last is literal (not an anchor)", robots: star + "Disallow: /a$b\n", target: "/a", allowed: true},
		{name: "§6 /a$$ means exactly /a$", robots: star + "Disallow: /a$$\n", target: "/a$", allowed: false, prio: 4, rule: "Disallow: /a$$"},
		{name: "§6 /a$$ does not match /a$b", robots: star + "Disallow: /a$$\n", target: "/a$b", allowed: true},
		{name: "§6 /a$$ does not match /a", robots: star + "Disallow: /a$$\n", target: "/a", allowed: true},
		{name: "§6 pattern not starting with / or * never matches", robots: star + "Disallow: a\n", target: "/a", allowed: true},
		{name: "§6 pattern with a host never matches", robots: star + "Disallow: example.com/a\n", target: "/a", allowed: true},
		{name: "§6 pattern $ alone never matches", robots: star + "Disallow: $\n", target: "/", allowed: true},
		{name: "§6 Allow not starting with / never matches", robots: star + "Disallow: /\nAllow: page\n", target: "/page", allowed: false},
		{name: "§6 %2A in pattern matches a literal *", robots: star + "Disallow: /a%2Ab\n", target: "/a*b", allowed: false},
		{name: "§6 %2A in pattern is not a wildcard", robots: star + "Disallow: /a%2Ab\n", target: "/axb", allowed: true},
		{name: "§6 %2A in pattern matches %2A in target", robots: star + "Disallow: /a%2Ab\n", target: "/a%2ab", allowed: false},
		{name: "§6 %24 in pattern matches a literal $", robots: star + "Disallow: /a%24\n", target: "/a$", allowed: false},
		{name: "§6 %24 at the end is not an anchor", robots: star + "Disallow: /a%24\n", target: "/a$b", allowed: false},
		{name: "§6 %24 does not match nothing", robots: star + "Disallow: /a%24\n", target: "/a", allowed: true},

		// /robots.txt.
		{name: "§6 /robots.txt always allowed", robots: star + "Disallow: /\n", target: "/robots.txt", allowed: true, exempt: true, rule: noRule},
		{name: "§6 /robots.txt with a query", robots: star + "Disallow: /\n", target: "/robots.txt?x=1", allowed: true, exempt: true},
		{name: "§6 /robots.txt with a bare ?", robots: star + "Disallow: /\n", target: "/robots.txt?", allowed: true, exempt: true},
		{name: "§6 /robots.txt under an explicit Disallow", robots: star + "Disallow: /robots.txt\n", target: "/robots.txt", allowed: true, exempt: true},
		{name: "§6 /robots.txt as absolute URL", robots: star + "Disallow: /\n", target: "http://example.com/robots.txt?a", allowed: true, exempt: true},
		{name: "§6 /robots.txt for a specific group", robots: "User-agent: FooBot\nDisallow: /\n", target: "/robots.txt", allowed: true, exempt: true},
		{name: "§6 /robots.txtx is not exempt", robots: star + "Disallow: /\n", target: "/robots.txtx", allowed: false},
		{name: "§6 /robots.txt/ is not exempt", robots: star + "Disallow: /\n", target: "/robots.txt/", allowed: false},
		{name: "§6 /a/robots.txt is not exempt", robots: star + "Disallow: /\n", target: "/a/robots.txt", allowed: false},
		{name: "§6 /ROBOTS.TXT is not exempt", robots: star + "Disallow: /\n", target: "/ROBOTS.TXT", allowed: false},
	})
}

func TestSemanticsDeciding(t *testing.T) { // §7
	runSemCases(t, []semCase{
		{name: "§7 Allow: /é counts 7, beats a 6-octet Disallow", robots: star + "Disallow: /*%A9\nAllow: /é\n", target: "/é", allowed: true, rule: "Allow: /é", prio: 7, line: 3},
		{name: "§7 Allow: /é ties Disallow: /%C3%A9", robots: star + "Disallow: /%C3%A9\nAllow: /é\n", target: "/%C3%A9", allowed: true, rule: "Allow: /é"},
		{name: "§7 Allow: /é loses to an 8-octet Disallow", robots: star + "Disallow: /*%C3%A9\nAllow: /é\n", target: "/é", allowed: false, rule: "Disallow: /*%C3%A9", prio: 8},
		{name: "§7 decoded escape shortens the priority", robots: star + "Disallow: /%7Eab\nAllow: /~a*\n", target: "/~abc", allowed: true, rule: "Allow: /~a*", prio: 4},
		{name: "§7 encoded space lengthens the priority", robots: star + "Disallow: /a b\nAllow: /a*b\n", target: "/a%20b", allowed: false, prio: 6},
		{name: "§7 * and $ counted: tie goes to Allow", robots: star + "Allow: /a$\nDisallow: /a*\n", target: "/a", allowed: true, rule: "Allow: /a$"},
		{name: "§7 * counted: longer Disallow wins", robots: star + "Allow: /a$\nDisallow: /a**\n", target: "/a", allowed: false, prio: 4},
		{name: "§7 longest match wins (disallow)", robots: star + "Allow: /a\nDisallow: /a/b\n", target: "/a/b", allowed: false, rule: "Disallow: /a/b"},
		{name: "§7 longest match wins (allow)", robots: star + "Allow: /a\nDisallow: /a/b\n", target: "/a/c", allowed: true, rule: "Allow: /a"},
		{name: "§7 tie goes to Allow", robots: star + "Disallow: /p\nAllow: /p\n", target: "/p", allowed: true, rule: "Allow: /p", line: 3},
		{name: "§7 tie goes to Allow (order reversed)", robots: star + "Allow: /p\nDisallow: /p\n", target: "/p", allowed: true, rule: "Allow: /p", line: 2},
		{name: "§7 order never matters (Disallow first)", robots: star + "Disallow: /f/\nAllow: /f/x\n", target: "/f/x", allowed: true},
		{name: "§7 order never matters (Allow first)", robots: star + "Allow: /f/\nDisallow: /f/x\n", target: "/f/x", allowed: false},
		{name: "§7 nothing matches: allowed", robots: star + "Disallow: /a\n", target: "/b", allowed: true, group: "*", rule: noRule},
		{name: "§7 deciding Disallow reported", robots: star + "Disallow: /a\nDisallow: /a/b\nAllow: /a/b/c\n", target: "/a/b/x", allowed: false, rule: "Disallow: /a/b", line: 3, prio: 4},
		{name: "§7 deciding Allow reported", robots: star + "Disallow: /a\nDisallow: /a/b\nAllow: /a/b/c\n", target: "/a/b/c", allowed: true, rule: "Allow: /a/b/c", line: 4, prio: 6},
		{name: "§7 index.html rule opens /shop/ (implied /shop/$ counts 7 > 6)", robots: star + "Disallow: /shop/\nAllow: /shop/index.html\n", target: "/shop/", allowed: true, rule: "Allow: /shop/$ (implied by index.html)", prio: 7},
		{name: "§7 index.html rule does not open /shop/?p=2", robots: star + "Disallow: /shop/\nAllow: /shop/index.html\n", target: "/shop/?p=2", allowed: false},
		{name: "§7 index.html itself allowed", robots: star + "Disallow: /shop/\nAllow: /shop/index.html\n", target: "/shop/index.html", allowed: true},
		{name: "§7 index.html rule does not open siblings", robots: star + "Disallow: /shop/\nAllow: /shop/index.html\n", target: "/shop/x", allowed: false},
		{name: "§7 index.htm variant opens /", robots: star + "Disallow: /\nAllow: /index.htm\n", target: "/", allowed: true},
		{name: "§7 index.htm variant: /? not opened", robots: star + "Disallow: /\nAllow: /index.htm\n", target: "/?a", allowed: false},
		{name: "§7 index.html rule at the implied pattern's length (7 < 14)", robots: star + "Disallow: /shop/********\nAllow: /shop/index.html\n", target: "/shop/", allowed: false},
		{name: "§7 index.html rule under Disallow: /shop/** (7 < 8)", robots: star + "Disallow: /shop/**\nAllow: /shop/index.html\n", target: "/shop/", allowed: false},
		// SEMANTICS.md §7 counts "Disallow: /shop/*" as 8, but it has 7
		// octets: the implied /shop/$ (7) ties it and the tie goes to
		// Allow, as in Google's robots.cc (disallowed only when the
		// Disallow's priority is greater).
		{name: "§7 index.html rule under Disallow: /shop/* (7 = 7, tie to Allow)", robots: star + "Disallow: /shop/*\nAllow: /shop/index.html\n", target: "/shop/", allowed: true},
		{name: "§7 Google parity: Disallow: /** beats the implied /$ (3 > 2)", robots: star + "Disallow: /**\nAllow: /index.html\n", target: "/", allowed: false},
		{name: "§7 implied /$ (2) beats Disallow: / (1)", robots: star + "Disallow: /\nAllow: /index.html\n", target: "/", allowed: true, rule: "Allow: /$ (implied by index.html)", prio: 2},
		{name: "§7 implied /shop/$ ties a 7-byte Disallow: Allow wins", robots: star + "Disallow: /shop*$\nAllow: /shop/index.html\n", target: "/shop/", allowed: true},
		{name: "§7 index.html rule loses to a longer Disallow", robots: star + "Disallow: /shop/*****************$\nAllow: /shop/index.html\n", target: "/shop/", allowed: false},
		{name: "§7 index.html rule is for Allow only", robots: star + "Disallow: /shop/index.html\n", target: "/shop/", allowed: true},
		{name: "§7 index.php is not covered", robots: star + "Disallow: /shop/\nAllow: /shop/index.php\n", target: "/shop/", allowed: false},
		{name: "§7 index.html not in the last segment", robots: star + "Disallow: /s/\nAllow: /s/index.html/x\n", target: "/s/", allowed: false},
		{name: "§7 index.html rule with a * in the prefix", robots: star + "Disallow: /\nAllow: /*/index.html\n", target: "/shop/", allowed: true},
		{name: "§7 index.html rule with $ pattern", robots: star + "Disallow: /\nAllow: /d/index.html$\n", target: "/d/", allowed: true},
	})
}

func TestSemanticsProject(t *testing.T) { // §9 "Project" column and §10
	runSemCases(t, []semCase{
		{name: "§9 Allow vs Disallow: longest match, not first match", robots: star + "Disallow: /folder1/\nAllow: /folder1/myfile.html\n", target: "/folder1/myfile.html", allowed: true},
		{name: "§9 record separation: blank lines ignored", robots: "User-agent: A\n\nUser-agent: B\n\nDisallow: /x\n", ua: "A", target: "/x", allowed: false, group: "A"},
		{name: "§9 agent matching: exact token, no substring", robots: "User-agent: Google\nDisallow: /\n", ua: "Googlebot", target: "/x", allowed: true, group: noGroup},
		{name: "§9 several * records merged", robots: star + "Disallow: /a\n\n" + star + "Disallow: /b\n", target: "/b", allowed: false, group: "*"},
		{name: "§9 %xx case normalised on both sides", robots: star + "Disallow: /%aa\n", target: "/%AA", allowed: false},
		{name: "§9 unreserved escapes normalised on the request side too", robots: star + "Disallow: /~x\n", target: "/%7Ex", allowed: false},
		{name: "§9 %2A means * (RFC)", robots: star + "Disallow: /%2A\n", target: "/*", allowed: false},
		{name: "§9 %24 means $ (RFC)", robots: star + "Disallow: /%24\n", target: "/$", allowed: false},
		{name: "§9 /robots.txt allowed under Disallow: / (RFC)", robots: star + "Disallow: /\n", target: "/robots.txt", allowed: true, exempt: true},
		{name: "§9 size limit: Google's 512,000 bytes", robots: bodyOverCap, target: "/z", allowed: true},
		{name: "§9 line over 16,663 bytes truncated", robots: star + capCutValue + "\n", target: "/abz", allowed: false},
		{name: "§9 missing colon accepted", robots: star + "Disallow /m\n", target: "/m", allowed: false},
		{name: "§9 key typo accepted", robots: star + "Dissallow: /m\n", target: "/m", allowed: false},
		{name: "§9 key prefix accepted", robots: "User-agents: *\nDisallow: /m\n", target: "/m", allowed: false},
		{name: "§9 index.html rule", robots: star + "Disallow: /\nAllow: /d/index.html\n", target: "/d/", allowed: true},
		{name: "§9 BOM skipped", robots: "\xEF\xBB\xBF" + star + "Disallow: /m\n", target: "/m", allowed: false},
		{name: "§9 digits kept on both sides (MJ12bot)", robots: "User-agent: MJ12bot\nDisallow: /\n", ua: "MJ12bot/1.4", target: "/x", allowed: false, group: "MJ12bot"},
		{name: "§9 digits kept on both sides (Hal-9000)", robots: "User-agent: Hal-9000\nDisallow: /\n\nUser-agent: *\nDisallow:\n", ua: "Hal-9000", target: "/x", allowed: false, group: "Hal-9000"},
		{name: "§9 encoding tricks: policy view matches as written (%2F)", robots: star + "Disallow: /a/b\n", target: "/a%2Fb", allowed: true},
		{name: "§9 encoding tricks: policy view matches as written (dot-segment)", robots: star + "Disallow: /a/b\n", target: "/x/../a/b", allowed: true},
		{name: "§10 library is classification-free: a browser gets *", robots: star + "Disallow: /\n", ua: semChromeUA, target: "/x", allowed: false, group: "*"},
		{name: "§10 raw space in a pattern is percent-encoded", robots: star + "Disallow: /my file\n", target: "/my%20file.txt", allowed: false},
		{name: "§10 /robots.txt exempt whatever its query", robots: star + "Disallow: /\n", target: "/robots.txt?a=b&c=%2F", allowed: true, exempt: true},
	})
}
