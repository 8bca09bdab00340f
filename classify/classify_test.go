package classify

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func loadBrowsers(t testing.TB) []string {
	f, err := os.Open("../testdata/useragents/browsers.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

type crawlerEntry struct {
	Pattern   string   `json:"pattern"`
	Instances []string `json:"instances"`
}

func loadCrawlers(t testing.TB) []crawlerEntry {
	b, err := os.ReadFile("../testdata/useragents/crawlers.json")
	if err != nil {
		t.Fatal(err)
	}
	var out []crawlerEntry
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustClassifier(t testing.TB, cfg Config) *Classifier {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg, nil, nil)
}

func TestBrowsersAreNeverBots(t *testing.T) {
	for _, cfg := range []Config{{}, {HTTPTools: true, EmptyUserAgent: true}} {
		c := mustClassifier(t, cfg)
		for _, ua := range loadBrowsers(t) {
			if c.IsBot(ua) {
				t.Errorf("browser classified as bot (tools=%v): %s", cfg.HTTPTools, ua)
			}
		}
	}
}

// notCrawlerPatterns are the crawler-user-agents patterns whose tokens
// internal/gencrawlers leaves out (notCrawlers: browsers, apps, device
// names; see the header of crawlers.txt): their instances are people's.
var notCrawlerPatterns = map[string]bool{
	`AP3A\.240617\.008`: true, `Code\/1\.`: true, "Expanse": true, "Fluid": true, "GTmetrix": true,
	"MetaIAB Facebook": true, `Miniature\.io\/`: true, "TSM-turingos": true, `Trae\/`: true,
	"Viber": true, "WhatsApp": true, "YLT Chrome": true, "GoogleImageProxy": true,
}

func TestEveryCrawlerInstanceIsBot(t *testing.T) {
	def := mustClassifier(t, Config{})
	tools := mustClassifier(t, Config{HTTPTools: true})
	n, toolOnly := 0, 0
	for _, e := range loadCrawlers(t) {
		if notCrawlerPatterns[e.Pattern] {
			continue
		}
		for _, ua := range e.Instances {
			n++
			if !tools.IsBot(ua) {
				t.Errorf("crawler not bound even with http_tools_are_bots (pattern %q): %s", e.Pattern, ua)
				continue
			}
			if !def.IsBot(ua) {
				toolOnly++
			}
		}
	}
	t.Logf("%d crawler instances; %d are HTTP tools bound only with http_tools_are_bots", n, toolOnly)
}

func TestTokenBoundaries(t *testing.T) {
	c := mustClassifier(t, Config{Tokens: []string{"lcc", "spider"}})
	tests := []struct {
		ua  string
		bot bool
	}{
		{"LCC (+http://corpora.uni-leipzig.de/crawler_faq.html)", true},
		{"Mozilla/5.0 (X11; Linux x86_64) XLCCX", false},
		{"Mozilla/5.0 (compatible; SPIDER/1.0)", true},
		{"Mozilla/5.0 (X11; Linux x86_64) Spiderman/2.0", false},
		{"Mozilla/5.0 (Linux; Android 9; KFONWI) Silk/136.4.1 like Chrome/136.0 Safari/537.36", false},
		{"Silk/1.0 crawler", true},
		{"www.deadlinkchecker.com XMLHTTP/1.0", true},
		{"Mozilla/5.0 (compatible; googlebot/2.1)", true},
		{"Mozilla/5.0 (compatible; GOOGLEBOT/2.1)", true},
	}
	for _, tt := range tests {
		if got := c.IsBot(tt.ua); got != tt.bot {
			t.Errorf("isBot(%q) = %v, want %v", tt.ua, got, tt.bot)
		}
	}
}

func FuzzClassify(f *testing.F) {
	for _, ua := range loadBrowsers(f)[:20] {
		f.Add(ua)
	}
	f.Add("Googlebot/2.1")
	f.Add("")
	f.Add(strings.Repeat("bot", 500))
	c := mustClassifier(f, Config{})
	tools := mustClassifier(f, Config{HTTPTools: true})
	f.Fuzz(func(t *testing.T, ua string) {
		a, b := c.IsBot(ua), c.IsBot(ua) // cached answer equals computed one
		if a != b || a != c.classify(ua) && strings.TrimSpace(ua) != "" {
			t.Fatalf("inconsistent classification of %q", ua)
		}
		if a && !tools.IsBot(ua) {
			t.Fatalf("opting in tools unbound %q", ua)
		}
		// Case does not matter for the token list.
		if c.tokens.match([]byte(strings.ToLower(ua))) != c.tokens.match(lowerBytes(strings.ToUpper(ua))) {
			t.Fatalf("token match depends on case: %q", ua)
		}
	})
}

func lowerBytes(s string) []byte { return []byte(strings.ToLower(s)) }

// TestClassifierCopy checks the lock-free copy of the classification
// cache: headers reach it after a few look-ups and are then answered from
// it without allocating, it says what the classification says, and a flood
// of distinct headers keeps both the cache and the copy within
// ua_cache_size.
func TestClassifierCopy(t *testing.T) {
	const size = 200
	c := mustClassifier(t, Config{CacheSize: size})
	browsers := loadBrowsers(t)[:20]
	crawlers := []string{"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)", "curl/8.5.0", "Wget/1.21.4"}
	uas := append(append([]string{}, browsers...), crawlers...)
	inCopy := func(ua string) bool {
		h := c.hot.Load()
		return h != nil && h.m[ua] != nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for !inCopy(uas[len(uas)-1]) {
		for _, ua := range uas {
			c.Lookup(ua)
		}
		if time.Now().After(deadline) {
			t.Fatal("headers looked up over and over never reached the copy")
		}
		time.Sleep(time.Millisecond)
	}
	for c.building.Load() {
		time.Sleep(time.Millisecond)
	}
	missed := c.misses.Load()
	for _, ua := range uas {
		got := c.Lookup(ua)
		bot, browser, _ := c.compute(ua)
		if got.Bot != bot || got.Browser != browser {
			t.Errorf("%q: copy says bot %v browser %v, classification %v %v", ua, got.Bot, got.Browser, bot, browser)
		}
		if !inCopy(ua) {
			t.Errorf("%q is not in the copy", ua)
		}
	}
	if a := testing.AllocsPerRun(1000, func() { c.Lookup(browsers[3]) }); a != 0 {
		t.Errorf("a look-up answered from the copy allocates %.2f times", a)
	}
	if n := c.misses.Load() - missed; n != 0 {
		t.Errorf("%d look-ups of headers in the copy went to the cache", n)
	}

	// A flood of distinct headers: both stay bounded, and what the copy
	// answers is still right.
	for i := range 20 * size {
		ua := "FloodBot/" + strconv.Itoa(i)
		if v := c.Lookup(ua); !v.Bot {
			t.Fatalf("%q classified as no bot", ua)
		}
		if i%7 == 0 {
			c.Lookup(browsers[0])
		}
	}
	for c.building.Load() {
		time.Sleep(time.Millisecond)
	}
	if n := c.cache.Len(); n > size {
		t.Errorf("cache holds %d headers, more than %d", n, size)
	}
	if h := c.hot.Load(); len(h.m) > size {
		t.Errorf("copy holds %d headers, more than %d", len(h.m), size)
	}
	if v := c.Lookup(browsers[0]); v.Bot || !v.Browser {
		t.Errorf("after the flood %q: bot %v browser %v", browsers[0], v.Bot, v.Browser)
	}
}
