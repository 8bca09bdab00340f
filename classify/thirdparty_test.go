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
	f, err := os.Open("../testdata/useragents/thirdparty/" + name)
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
	name           string
	n, bots, mBots int
	examples       []string
}

// judgeList classifies every header of a list with c.
func judgeList(t testing.TB, c *Classifier, name string) listResult {
	r := listResult{name: name}
	for _, l := range readList(t, name) {
		r.n++
		if c.Lookup(l.UA).Bot {
			r.bots++
			if len(r.examples) < 400 {
				r.examples = append(r.examples, l.UA)
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
	"Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 5.1; i-NavFourF; TuneUp HTML Client Embedded Web Browser from: http://bsalsa.com/; .NET CLR 1.1.4322; .NET CLR 2.0.50727; .NET CLR 3.0.4506.2152; .NET CLR 3.5.30729)": "mileusna/useragent reads it as a bot (an embedded control of 2008)",
}

// Floors of the share of bots caught, as reached (issue 33 asks for 97 %
// of isbot's crawlers and 98 % of device-detector's bots; the HTTP tools
// they hold count when http_tools is on).
const (
	floorIsbotCrawlers = 0.69
	floorMatomoBots    = 0.817
)

// TestThirdPartyLists measures the classifier (the default configuration,
// with the built-in operator registry) on labelled lists that nobody on
// the project wrote, beside mileusna/useragent's Bot field: no browser or
// app header is judged a bot but those listedBots names, and no fewer
// bots are caught than the floors. -v lists the bots missed.
func TestThirdPartyLists(t *testing.T) {
	v, err := identity.New(identity.Config{Operators: identity.Builtin(), OnDemand: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	cfg, _ := Config{}.WithDefaults()
	c := New(cfg, v, nil)
	tools, _ := Config{HTTPTools: true}.WithDefaults()
	ct := New(tools, v, nil)
	var table strings.Builder
	table.WriteString("| list | mileusna Bot | robots_guard | robots_guard, http_tools on |\n|---|--:|--:|--:|\n")
	share := map[string]float64{}
	for _, name := range []string{"isbot-browsers.jsonl", "matomo-devices-browser.jsonl", "matomo-devices-mobile_app.jsonl", "isbot-crawlers.jsonl", "matomo-bots.jsonl"} {
		r, rt := judgeList(t, c, name), judgeList(t, ct, name)
		share[name] = float64(r.bots) / float64(r.n)
		fmt.Fprintf(&table, "| %s (%d): judged a bot | %s | %s (%d) | %s (%d) |\n", name, r.n, pct(r.mBots, r.n), pct(r.bots, r.n), r.bots, pct(rt.bots, rt.n), rt.bots)
		if strings.Contains(name, "browser") || strings.Contains(name, "mobile_app") {
			for _, ua := range r.examples {
				if _, ok := listedBots[ua]; !ok {
					t.Errorf("%s: a browser or app judged a bot: %s", name, ua)
				}
			}
		}
	}
	t.Log("\n" + table.String())
	if share["isbot-crawlers.jsonl"] < floorIsbotCrawlers || share["matomo-bots.jsonl"] < floorMatomoBots {
		t.Errorf("fewer bots caught than before: isbot %.3f (floor %.3f), device-detector %.3f (floor %.3f)",
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
