package policy_test

// Every worked example of the seed articles in /work/shared/seeds, with the
// RFC/project result of SEMANTICS.md (§9: first-match examples of seeds/000
// get the longest-match result; seeds/002 is the length rule).

import (
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/policy"
)

// seeds/000_becbb0e4a458f630.txt "More On Robots Exclusion".
func TestSeed000MoreOnRobotsExclusion(t *testing.T) {
	const (
		simple  = "User-agent: *\nDisallow: /xfiles/\n\nUser-agent: YourBot\nDisallow: /myfiles/\n"
		mulder  = "User-agent: *\nAllow: /xfiles/mulder/\nDisallow: /xfiles/\n"
		folder1 = "User-agent: Googlebot\nDisallow: /folder1/\nAllow: /folder1/myfile.html\n"
	)
	runSemCases(t, []semCase{
		// "YourBot can access everything but /myfiles/. All other bots can access everything except /xfiles/."
		{name: "000 simple file: YourBot may not fetch /myfiles/", robots: simple, ua: "YourBot", target: "/myfiles/a.html", allowed: false, group: "YourBot", rule: "Disallow: /myfiles/", line: 5},
		{name: "000 simple file: YourBot is not bound by /xfiles/", robots: simple, ua: "YourBot", target: "/xfiles/a.html", allowed: true, group: "YourBot"},
		{name: "000 simple file: YourBot may fetch the rest", robots: simple, ua: "YourBot", target: "/index.html", allowed: true, group: "YourBot"},
		{name: "000 simple file: other bots may not fetch /xfiles/", robots: simple, ua: "OtherBot", target: "/xfiles/a.html", allowed: false, group: "*", rule: "Disallow: /xfiles/", line: 2},
		{name: "000 simple file: other bots may fetch /myfiles/", robots: simple, ua: "OtherBot", target: "/myfiles/a.html", allowed: true, group: "*"},
		// Rules 1-4 of the crawler.
		{name: "000 rule 1: no robots.txt, anything allowed", robots: "", ua: "YourBot", target: "/anything", allowed: true, group: noGroup, rule: noRule},
		{name: "000 rule 2: entry with my name is followed, * ignored", robots: simple, ua: "Mozilla/5.0 (compatible; YourBot/1.0)", target: "/xfiles/", allowed: true, group: "YourBot"},
		{name: "000 rule 3: * entry followed otherwise", robots: simple, ua: "Mozilla/5.0 (compatible; TheirBot/1.0)", target: "/xfiles/", allowed: false, group: "*"},
		{name: "000 rule 4: otherwise everything allowed", robots: "User-agent: YourBot\nDisallow: /\n", ua: "OtherBot", target: "/x", allowed: true, group: noGroup},
		// The draft's first-match example: the project uses longest match (same result here).
		{name: "000 mulder: /xfiles/mulder/ allowed", robots: mulder, target: "/xfiles/mulder/", allowed: true, rule: "Allow: /xfiles/mulder/", line: 2},
		{name: "000 mulder: /xfiles/mulder/file allowed", robots: mulder, target: "/xfiles/mulder/file.html", allowed: true},
		{name: "000 mulder: other /xfiles/ disallowed", robots: mulder, target: "/xfiles/scully/", allowed: false, rule: "Disallow: /xfiles/", line: 3},
		// First match would forbid /folder1/myfile.html; longest match allows it.
		{name: "000 folder1: /folder1/myfile.html allowed (longest match, not first)", robots: folder1, ua: "Googlebot", target: "/folder1/myfile.html", allowed: true, group: "Googlebot", rule: "Allow: /folder1/myfile.html", line: 3},
		{name: "000 folder1: rest of /folder1/ disallowed", robots: folder1, ua: "Googlebot", target: "/folder1/other.html", allowed: false, rule: "Disallow: /folder1/", line: 2},
		{name: "000 folder1: Googlebot header", robots: folder1, ua: semGooglebotUA, target: "/folder1/myfile.html", allowed: true, group: "Googlebot"},
		{name: "000 folder1: only Googlebot bound", robots: folder1, ua: "OtherBot", target: "/folder1/other.html", allowed: true, group: noGroup},
	})
}

// seeds/001_383d5b8f00c6be8f.txt "State of robots.txt".
func TestSeed001StateOfRobotsTxt(t *testing.T) {
	const (
		googlebotEmpty = "User-agent: *\nDisallow: /\n\nUser-agent: googlebot\nDisallow: \n"
		posts          = "User-agent: *\nDisallow: /posts/\nAllow: /posts/public/\n"
	)
	runSemCases(t, []semCase{
		{name: "001 User-agent: Googlebot is case-insensitive", robots: "User-agent: Googlebot\nDisallow: /wp-admin\n", ua: "googlebot", target: "/wp-admin/x.php", allowed: false, group: "Googlebot"},
		{name: "001 Disallow: /wp-admin", robots: "User-agent: *\nDisallow: /wp-admin\n", target: "/wp-admin", allowed: false},
		{name: "001 Allow: /Posts/ is case-sensitive", robots: "User-agent: *\nDisallow: /\nAllow: /Posts/\n", target: "/posts/", allowed: false},
		{name: "001 allow: / # comment in line", robots: "User-agent: *\nDisallow: /x\nallow: / # comment in line\n# comment at the end\n", target: "/y", allowed: true, rule: "Allow: /", line: 3},
		{name: "001 $: /this/path/exactly$ matches exactly", robots: "User-agent: *\nDisallow: /\nallow: /this/path/exactly$\n", target: "/this/path/exactly", allowed: true},
		{name: "001 $: /this/path/exactly$ not longer paths", robots: "User-agent: *\nDisallow: /\nallow: /this/path/exactly$\n", target: "/this/path/exactly/more", allowed: false},
		{name: "001 *: /this/*/exactly", robots: "User-agent: *\nDisallow: /\nallow: /this/*/exactly\n", target: "/this/is/exactly", allowed: true},
		{name: "001 *: /this/*/exactly is a prefix", robots: "User-agent: *\nDisallow: /\nallow: /this/*/exactly\n", target: "/this/a/b/exactly/more", allowed: true},
		{name: "001 Disallow: / disallows everything", robots: "User-agent: *\nDisallow: /\n", target: "/any/thing?x", allowed: false},
		{name: "001 /images/$ disallows /images/", robots: "User-agent: *\nDisallow: /images/$\n", target: "/images/", allowed: false},
		{name: "001 /images/$ does not disallow /images/test.png", robots: "User-agent: *\nDisallow: /images/$\n", target: "/images/test.png", allowed: true},
		{name: "001 empty Disallow: for googlebot, allow everything", robots: googlebotEmpty, ua: "Googlebot", target: "/page", allowed: true, group: "googlebot"},
		{name: "001 empty Disallow: other agents disallowed everything", robots: googlebotEmpty, ua: "Bingbot", target: "/page", allowed: false, group: "*"},
		{name: "001 posts: /posts/public/test.html allowed", robots: posts, target: "/posts/public/test.html", allowed: true, rule: "Allow: /posts/public/"},
		{name: "001 posts: /posts/private/test.html disallowed", robots: posts, target: "/posts/private/test.html", allowed: false, rule: "Disallow: /posts/"},
		{name: "001 500 KiB size limit: a rule past 512,000 bytes is ignored", robots: bodyOverCap, target: "/z", allowed: true},
	})
	if got := policy.Parse([]byte("User-agent: *\nCrawl-delay: 10\n")).Agent("AnyBot").CrawlDelay(); got != 10*time.Second {
		t.Errorf("001 Crawl-delay: 10 = %v, want 10s", got)
	}
}

// seeds/002_7890206a81574f2a.txt "Google's Hidden Interpretation of Robots.txt".
func TestSeed002GoogleHiddenInterpretation(t *testing.T) {
	const (
		html = "/example.html"
		htm  = "/example.htm"
	)
	g := func(lines string) string { return "User-agent: *\n" + lines }
	runSemCases(t, []semCase{
		{name: "002 Allow: /*?$ allows a URL ending in ?", robots: g("Disallow: /\nAllow: /*?$\n"), target: "/page?", allowed: true},
		{name: "002 Allow: /*?$ not with characters after the ?", robots: g("Disallow: /\nAllow: /*?$\n"), target: "/page?a", allowed: false},
		{name: "002 example 1: Disallow (13) beats Allow /example* (9)", robots: g("Disallow: /example.html\nAllow:    /example*\n"), target: html, allowed: false, rule: "Disallow: /example.html", prio: 13},
		{name: "002 example 2: Disallow */example.html* (15) beats Allow $ (14)", robots: g("Disallow: */example.html*\nAllow:    /example.html$\n"), target: html, allowed: false, rule: "Disallow: */example.html*", prio: 15},
		{name: "002 example 3a: Disallow /example.html* (14) beats Allow (13)", robots: g("Disallow: /example.html*\nAllow:    /example.html\n"), target: html, allowed: false, prio: 14},
		{name: "002 example 3b: Allow /example.html* (14) beats Disallow (13)", robots: g("Disallow: /example.html\nAllow:    /example.html*\n"), target: html, allowed: true, rule: "Allow: /example.html*", prio: 14},
		{name: "002 /exam* (6) loses to /examp* (7)", robots: g("Allow:    /exam*\nDisallow: /examp*\n"), target: htm, allowed: false, rule: "Disallow: /examp*", prio: 7},
		{name: "002 equal length: Allow wins", robots: g("Allow:    /examp*\nDisallow: /examp*\n"), target: htm, allowed: true, rule: "Allow: /examp*", prio: 7},
		{name: "002 even $ loses: */*example*htm (14) beats /example.htm$ (13)", robots: g("Allow:    /example.htm$\nDisallow: */*example*htm\n"), target: htm, allowed: false, rule: "Disallow: */*example*htm", prio: 14},
		{name: "002 trailing * adds a character: /example* (9) beats /example (8)", robots: g("Allow:    /example\nDisallow: /example*\n"), target: htm, allowed: false, prio: 9},
		{name: "002 tip 1: /example.htm vs /********htm, same length, Allow wins", robots: g("Allow: /example.htm\nDisallow: /********htm\n"), target: htm, allowed: true, rule: "Allow: /example.htm", prio: 12},
		{name: "002 bonus: two Disallows $ vs *, still disallowed", robots: g("Disallow: /example.htm$\nDisallow: /example.htm*\n"), target: htm, allowed: false, prio: 13},
		{name: "002 bonus: two Disallows /*xample.htm vs /****ple.htm, still disallowed", robots: g("Disallow: /*xample.htm\nDisallow: /****ple.htm\n"), target: htm, allowed: false, prio: 12},
	})
	// "Disallow: /example* (9 characters), Allow: /example.htm$ (13), Allow: /*htm$ (6)".
	gs := policy.Parse([]byte(g("Disallow: /example*\nAllow:    /example.htm$\nAllow:    /*htm$\n"))).Groups()
	want := []int{9, 13, 6}
	if len(gs) != 1 || len(gs[0].Rules) != 3 {
		t.Fatalf("002 length counting: Groups() = %#v", gs)
	}
	for i, r := range gs[0].Rules {
		if r.Priority != want[i] {
			t.Errorf("002 length counting: %s has Priority %d, want %d", r.String(), r.Priority, want[i])
		}
	}
}

// seeds/003_2c2a577728dfac61.txt "Robots and Spiders" (1994-style conventions).
func TestSeed003RobotsAndSpiders(t *testing.T) {
	const (
		tmp      = "User-agent: *\nDisallow: /closeddir/test/ \nDisallow: /tmp/ \n"
		scooter  = "User-agent: *\nDisallow: /closeddir/test/ \n\nUser-agent: scooter\nDisallow:\n"
		infoseek = "# Infoseek robot (SideWinder) can visit Infoseek-optimized dir,\n" +
			"# but not Northern Light-optimized directory.\n" +
			"User-agent: sidewinder\n" +
			"Disallow: /northernlight_optimised_directory/\n" +
			"\n" +
			"# Northern Light (Gulliver) can visit Northern Light-optimized dir,\n" +
			"# but not Infoseek-optimized directory.\n" +
			"User-agent: gulliver\n" +
			"Disallow: /infoseek_optimised_directory/\n" +
			"\n" +
			"# All other robots denied access to both directories\n" +
			"User-agent: *\n" +
			"Disallow: /infoseek_optimised_directory/\n" +
			"Disallow: /northernlight_optimised_directory/\n"
		nl = "/northernlight_optimised_directory/page.html"
		is = "/infoseek_optimised_directory/page.html"
	)
	runSemCases(t, []semCase{
		{name: "003 /help disallows /help.html", robots: "User-agent: *\nDisallow: /help\n", target: "/help.html", allowed: false},
		{name: "003 /help disallows /help/index.html", robots: "User-agent: *\nDisallow: /help\n", target: "/help/index.html", allowed: false},
		{name: "003 /help/ disallows /help/index.html", robots: "User-agent: *\nDisallow: /help/\n", target: "/help/index.html", allowed: false},
		{name: "003 /help/ allows /help.html", robots: "User-agent: *\nDisallow: /help/\n", target: "/help.html", allowed: true},
		{name: "003 empty value: all URLs can be retrieved", robots: "User-agent: *\nDisallow:\n", target: "/any", allowed: true},
		{name: "003 empty robots.txt: as if not present", robots: "", target: "/any", allowed: true, group: noGroup},
		{name: "003 closeddir/test and tmp: /closeddir/test/ disallowed", robots: tmp, target: "/closeddir/test/a.html", allowed: false, rule: "Disallow: /closeddir/test/"},
		{name: "003 closeddir/test and tmp: /tmp/ disallowed", robots: tmp, target: "/tmp/x", allowed: false, rule: "Disallow: /tmp/"},
		{name: "003 closeddir/test and tmp: other dirs allowed", robots: tmp, target: "/closeddir/other.html", allowed: true},
		{name: "003 all robots except scooter: others disallowed", robots: scooter, ua: "Lycos", target: "/closeddir/test/x", allowed: false, group: "*"},
		{name: "003 all robots except scooter: scooter allowed", robots: scooter, ua: "Scooter/3.3", target: "/closeddir/test/x", allowed: true, group: "scooter"},
		{name: "003 stay away: Disallow: /", robots: "User-agent: *\nDisallow: /\n", target: "/index.html", allowed: false},
		{name: "003 sidewinder: northernlight dir disallowed", robots: infoseek, ua: "sidewinder", target: nl, allowed: false, group: "sidewinder", line: 4},
		{name: "003 sidewinder: infoseek dir allowed", robots: infoseek, ua: "sidewinder", target: is, allowed: true, group: "sidewinder"},
		{name: "003 Infoseek Sidewinder header matches sidewinder", robots: infoseek, ua: "Infoseek Sidewinder", target: is, allowed: true, group: "sidewinder"},
		{name: "003 gulliver: infoseek dir disallowed", robots: infoseek, ua: "Gulliver", target: is, allowed: false, group: "gulliver", line: 9},
		{name: "003 gulliver: northernlight dir allowed", robots: infoseek, ua: "Gulliver", target: nl, allowed: true, group: "gulliver"},
		{name: "003 other robots: infoseek dir disallowed", robots: infoseek, ua: "Slurp", target: is, allowed: false, group: "*", line: 13},
		{name: "003 other robots: northernlight dir disallowed", robots: infoseek, ua: "ArchitextSpider", target: nl, allowed: false, group: "*", line: 14},
		// Where the article's conventions differ, the project result (§9).
		{name: "003 substring match recommended; project: exact token", robots: "User-agent: scooter\nDisallow: /\n", ua: "superscooter", target: "/x", allowed: true, group: noGroup},
		{name: "003 blank line ends a record; project: blank lines ignored", robots: "User-agent: *\nDisallow: /a\n\nDisallow: /b\n", target: "/b", allowed: false, group: "*"},
		{name: "003 several * records forbidden; project: merged", robots: "User-agent: *\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n", target: "/a", allowed: false, group: "*"},
		{name: "003 comment-only lines ignored completely", robots: "# comment\nUser-agent: *\n# comment\nDisallow: /a\n", target: "/a", allowed: false, line: 4},
	})
}

// seeds/004_729804bda1e8a83e.txt "The Standard for Robot Exclusion".
func TestSeed004StandardForRobotExclusion(t *testing.T) {
	const (
		sample = "# Sample robots.txt file\nUser-agent: *\nDisallow: /tmp/documents/\n"
		hal    = "# Sample robots.txt file\nUser-agent: *\nDisallow: /tmp/documents/\nDisallow: /under_construction/\nUser-agent: Hal-9000\nDisallow:\n"
	)
	runSemCases(t, []semCase{
		{name: "004 sample: /tmp/documents disallowed", robots: sample, target: "/tmp/documents/a.html", allowed: false, rule: "Disallow: /tmp/documents/", line: 3},
		{name: "004 sample: subdirectories disallowed", robots: sample, target: "/tmp/documents/sub/dir/x", allowed: false},
		{name: "004 sample: other paths allowed", robots: sample, target: "/tmp/other", allowed: true},
		{name: "004 Hal-9000: unrestricted", robots: hal, ua: "Hal-9000", target: "/tmp/documents/a", allowed: true, group: "Hal-9000"},
		{name: "004 Hal-9000: unrestricted (under_construction)", robots: hal, ua: "Hal-9000/1.0", target: "/under_construction/x", allowed: true, group: "Hal-9000"},
		{name: "004 Hal-9000: others may not fetch /tmp/documents", robots: hal, ua: "OtherBot", target: "/tmp/documents/a", allowed: false, group: "*", line: 3},
		{name: "004 Hal-9000: others may not fetch /under_construction", robots: hal, ua: "OtherBot", target: "/under_construction/x", allowed: false, group: "*", line: 4},
		{name: "004 Hal-9000: Hal alone is not Hal-9000", robots: hal, ua: "Hal", target: "/tmp/documents/a", allowed: false, group: "*"},
		{name: "004 skip the site altogether", robots: "User-agent: *\nDisallow: /\n", target: "/", allowed: false},
	})
}
