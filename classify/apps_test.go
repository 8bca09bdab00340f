package classify

import (
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/identity"
)

// TestIssue45: the headers of issue 45 (testdata/useragents/issue45.jsonl):
// every people's header found refused on a path robots.txt disallows for
// "*" passes, as a person's app or as an agent that fetches for a person
// (a reader, a link preview from the person's device, Gmail's image
// proxy), http_tools on or off; the monitoring, screenshot and translation
// services that passed as people, and HTTP tools that give a crawler's
// contact page, are bots. Where the issue names only a service's token,
// the header is a browser's with that token added, as these services send
// it. integration_test.TestPeoplesSoftwareThroughCaddy sends them through
// the built Caddy.
func TestIssue45(t *testing.T) {
	for _, cfg := range []Config{{}, {HTTPTools: true}} {
		checkKinds(t, mustClassifier(t, cfg), "../testdata/useragents/issue45.jsonl")
	}
}

// TestPeopleAppsRules: what the list of people's apps wins over and what
// it does not. Its names count at the start of the header only; the
// first product's name and version are not read for markers, the rest is
// (a reader's contact and "feed" words aside); crawler tokens, the
// operator's tokens and operator claims still win; iMessage's and Gmail's
// headers earn nothing once a crawler is named before them.
func TestPeopleAppsRules(t *testing.T) {
	c := mustClassifier(t, Config{Tokens: []string{"MyCrawler"}})
	for ua, want := range map[string]bool{
		"Grammarly/1.0 (http://www.grammarly.com)":                           true, // Grammarly's fetcher: a contact
		"Dart/3.5 (dart:io) ContentBot/1.0":                                  true, // a crawler's name after the app's
		"VLC/3.0.21 (compatible; Googlebot/2.1)":                             true, // a known crawler's token
		"VLC/3.0.21 MyCrawler/1.0":                                           true, // the operator's token
		"Feeder/2.6.30 (Android) crawler":                                    true, // a reader that says it crawls
		"NetNewsWire (RSS Reader; https://netnewswire.com/; 12 subscribers)": true, // a reader run as a service
		"Liferea/1.15 (Linux; https://lzone.de/liferea/) fetcher":            true, // the same
		"FME(2024.1)": true, // an ETL tool, not a person's app
		"NetNewsWire (RSS Reader; https://netnewswire.com/) ${jndi:ldap://x}": true,  // a payload
		"Mozilla/5.0 (compatible; VLC/3.0.21)":                                true,  // not the first product: the shape rule
		"gPodder/3.11.4 (+http://gpodder.org/) Linux":                         false, // a reader's own page
		"Feeds Feeder/2.0": true,  // not the first product
		"Feeder":           false, // the name alone
		"Feederbot/1.0":    true,  // a longer word
		"Chrome":           true,  // a major browser's bare name is a script's
		"Spotify/1.0":      true,  // Spotify's podcast ingestion
		"Mozilla/5.0 (compatible; Googlebot/2.1) facebookexternalhit/1.1 Facebot Twitterbot/1.0":          true,
		"Mozilla/5.0 (X11; Linux) https://example.com/bot (via ggpht.com GoogleImageProxy)":               true,
		"Mozilla/5.0 AppleWebKit/601.2.4 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0 x": true,
	} {
		if got := c.IsBot(ua); got != want {
			t.Errorf("IsBot(%q) = %v, want %v", ua, got, want)
		}
	}
}

// TestCurrentApps: current apps' headers collected from their projects'
// source (testdata/useragents/apps-current.jsonl, each with where it comes
// from) are judged as the table says: a person's app, a person agent of
// the class given, or a bot.
func TestCurrentApps(t *testing.T) {
	checkKinds(t, mustClassifier(t, Config{}), "../testdata/useragents/apps-current.jsonl")
}

// checkKinds checks that c judges each header of the list at path as its
// kind says: a person's app ("person"), a person agent of the class given
// that no operator vouches for, or a bot.
func checkKinds(t *testing.T, c *Classifier, path string) {
	t.Helper()
	for _, l := range readListAt(t, path) {
		info := c.Lookup(l.UA)
		switch l.Kind {
		case "bot":
			if !info.Bot || info.Class != "" {
				t.Errorf("%s: bot %v class %q, want a bot: %s", l.Name, info.Bot, info.Class, l.UA)
			}
		case "person":
			if info.Bot || info.Browser || info.Class != "" {
				t.Errorf("%s: bot %v browser %v class %q, want a person's app: %s", l.Name, info.Bot, info.Browser, info.Class, l.UA)
			}
		default:
			if !info.UnverifiablePersonAgent() || info.Class != l.Kind || info.PersonOperator != "" {
				t.Errorf("%s: bot %v class %q operator %q, want a person agent %q: %s", l.Name, info.Bot, info.Class, info.PersonOperator, l.Kind, l.UA)
			}
		}
	}
}

// appsWithContact are people's headers that start with a name of the list
// and give a contact page the way a service does (Grammarly's fetcher
// writes "Grammarly/1.0 (http://www.grammarly.com)"): only readers' contacts
// are let be, so these old players' headers are judged bots.
var appsWithContact = map[string]string{
	"Banshee 1.5.1 (http://banshee-project.org/)":                                                              "Banshee, a media player (2013's last release)",
	"Banshee/2.6.2 (http://banshee-project.org/)":                                                              "Banshee, a media player",
	"XBMC/9.04 r19840 (Mac OS X; Darwin 9.6.0; http://www.xbmc.org)":                                           "XBMC 9 (2009), now Kodi",
	"XBMC/9.04-beta1 r19639 (Windows; Windows XP Professional Service Pack 2 build 2600; http://www.xbmc.org)": "XBMC 9 (2009), now Kodi",
	"Miro/3.0.1 (http://www.getmiro.com/; Darwin 8.11.1 i386)":                                                 "Miro, a media player (2010)",
}

// TestAppsList reviews the list of people's apps as the crawler list is
// reviewed: every name is read (as many as the file lists, each of a known
// class), no name is dead (a crawler token in it would win), no name is
// the start of a people's header that is judged a bot, and no name of the
// bot lists' headers makes a person's app but those listedPeople names
// (TestThirdPartyLists). The derivation itself is held by
// internal/genapps's test: apps.txt is what go generate writes.
func TestAppsList(t *testing.T) {
	c := mustClassifier(t, Config{})
	lines := 0
	for line := range strings.Lines(appsTxt) {
		line = strings.TrimRight(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lines++
		class, name, ok := strings.Cut(line, "\t")
		if !ok || name != strings.ToLower(name) || strings.TrimSpace(name) != name {
			t.Errorf("apps.txt: a malformed line %q", line)
			continue
		}
		switch class {
		case "app", "reader", "preview":
		default:
			t.Errorf("apps.txt: %q: unknown class %q", name, class)
		}
		if k := c.tokens.match([]byte(name + "/1.0")); k&(kindCrawler|kindTool) != 0 {
			t.Errorf("apps.txt: %q holds a token of the crawler list, which wins: the entry is dead", name)
		}
		if a, _ := c.apps.first([]byte(name + "/1.0")); a == nil || a.tok != name {
			t.Errorf("apps.txt: %q is not found at the start of %q", name, name+"/1.0")
		}
	}
	n := len(builtinApps.short)
	for _, ts := range builtinApps.byPrefix {
		n += len(ts)
	}
	if n != lines || n < 250 {
		t.Errorf("apps.txt: %d names read of %d lines (at least 250 expected)", n, lines)
	}
	for _, name := range []string{"isbot-browsers.jsonl", "matomo-devices-browser.jsonl", "matomo-devices-mobile_app.jsonl", "matomo-clients.jsonl"} {
		for _, l := range readList(t, name) {
			if a, _ := c.apps.first([]byte(strings.ToLower(l.UA))); a != nil && c.IsBot(l.UA) {
				if _, ok := appsWithContact[l.UA]; !ok {
					t.Errorf("%s: a header that starts with the people's app %q is judged a bot: %s", name, a.tok, l.UA)
				}
			}
		}
	}
}

// TestDevicePreviewClaimsNoOperator: iMessage's link preview names
// facebookexternalhit and Twitterbot after Safari's header; with operators
// of those tokens configured, the phone's fetch still claims none of them
// (its address would be judged theirs, and spoofed), while the crawler's
// own header does.
func TestDevicePreviewClaimsNoOperator(t *testing.T) {
	v, err := identity.New(identity.Config{NoBackground: true, Operators: []identity.Operator{
		{Name: "meta", Tokens: []string{"facebookexternalhit"}, RDNS: []string{"facebook.com"}},
		{Name: "x", Tokens: []string{"Twitterbot"}, RDNS: []string{"twitter.com"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	cfg, _ := Config{}.WithDefaults()
	c := New(cfg, v, nil)
	const iMessage = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0"
	if info := c.Lookup(iMessage); info.Bot || info.Claims != 0 || info.Class != Unfurler {
		t.Errorf("iMessage's preview: bot %v claims %v class %q, want a person agent that claims no operator", info.Bot, info.Claims, info.Class)
	}
	if info := c.Lookup("facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)"); !info.Bot || info.Claims == 0 {
		t.Errorf("Meta's crawler: bot %v claims %v, want a claim of meta", info.Bot, info.Claims)
	}
}

// TestPersonRegistry: the agents that fetch for a person come from
// identity's one registry of agents, with this package's classes.
func TestPersonRegistry(t *testing.T) {
	classes := map[string]int{}
	for _, a := range personAgents {
		classes[a.class]++
		if a.operator == "" || !strings.HasPrefix(a.source, "https://") {
			t.Errorf("%s: operator %q, source %q", a.token, a.operator, a.source)
		}
	}
	if classes[Fetcher] < 7 || classes[Unfurler] < 5 || len(classes) != 2 {
		t.Errorf("classes of the person agents: %v, want fetchers and unfurlers only", classes)
	}
}
