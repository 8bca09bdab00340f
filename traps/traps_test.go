package traps

import (
	"strings"
	"testing"
	"time"

	"github.com/robotsguard/robotsguard/limit"
	"github.com/robotsguard/robotsguard/policy"
)

func TestCheck(t *testing.T) {
	for p, want := range map[string]string{
		"/no-robots/": "", "/*/print-all$": "", "*.pdf": "",
		"":                             "starting with '/'",
		"no-robots":                    "starting with '/'",
		"/":                            "every path",
		"/*":                           "every path",
		"/a b":                         "no spaces",
		"/a#b":                         "no spaces or '#'",
		"/" + strings.Repeat("a", 600): "longer than 512",
	} {
		err := Check(p)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%.20q) = %v, want %q", p, err, want)
		}
	}
}

// TestArmed: a trap is armed only where every group, "*" included,
// disallows the path it covers.
func TestArmed(t *testing.T) {
	for _, tc := range []struct {
		robots, trap string
		armed        bool
		by           string
	}{
		{"User-agent: *\nDisallow: /no-robots/\n", "/no-robots/", true, ""},
		{"User-agent: *\nDisallow: /no-robots/\n\nUser-agent: Googlebot\nDisallow: /private/\n", "/no-robots/", false, "Googlebot"},
		{"User-agent: Googlebot\nDisallow: /\n", "/no-robots/", false, "bots no group names"},
		{"User-agent: *\nDisallow: /t/\n", "/t/*.html", true, ""},
		{"User-agent: *\nDisallow: /t/\nAllow: /t/open\n", "/t/open", false, "*"},
	} {
		ok, by := Armed(policy.Parse([]byte(tc.robots)), tc.trap)
		if ok != tc.armed || !strings.Contains(by, tc.by) {
			t.Errorf("%q in %q: %v %q, want %v %q", tc.trap, tc.robots, ok, by, tc.armed, tc.by)
		}
	}
}

func TestSetHit(t *testing.T) {
	s := NewSet([]string{"/no-robots/", "/*/print-all$"})
	for target, want := range map[string]int{"/no-robots/x": 0, "/no-robots/": 0, "/a/print-all": 1, "/%6Eo-robots/x": 0, "/page": -1, "/a/print-all?x": -1} {
		i, ok := s.Hit(target)
		if !ok {
			i = -1
		}
		if i != want {
			t.Errorf("Hit(%q) = %d, want %d", target, i, want)
		}
	}
	if NewSet(nil) != nil {
		t.Error("a set without patterns")
	}
}

// TestToken: a client's token is the same for one key, day and site and
// differs for another client, day, key or site.
func TestToken(t *testing.T) {
	k1, k2 := []byte("0123456789abcdef0123"), []byte("another key of enough bytes")
	a, b := limit.ClientOf("192.0.2.1", 32, 64), limit.ClientOf("192.0.2.2", 32, 64)
	const site = "https://a.example"
	tok := Token(k1, a, 100, site)
	if len(tok) != TokenLen || tok != Token(k1, a, 100, site) {
		t.Fatalf("token %q", tok)
	}
	for _, other := range []string{Token(k1, b, 100, site), Token(k1, a, 101, site), Token(k2, a, 100, site), Token(k1, a, 100, "https://b.example")} {
		if other == tok {
			t.Errorf("a token that another client, day, key or site shares: %q", tok)
		}
	}
	if LinkPath([]string{"/*.pdf", "/no-robots"}) != "/no-robots/" || LinkPath([]string{"/*.pdf"}) != "" {
		t.Error("LinkPath")
	}
}

// TestDenialCounter: n denials within the window ban, fewer or spread
// wider do not, and the counter stays within its bound.
func TestDenialCounter(t *testing.T) {
	c := NewDenialCounter(100, time.Minute, 3)
	a := limit.ClientOf("192.0.2.1", 32, 64)
	sec := int64(time.Second)
	if c.Add(a, 0) || c.Add(a, 50*sec) || c.Add(a, 110*sec) {
		t.Fatal("three denials over more than a window")
	}
	if c.Add(a, 120*sec) || !c.Add(a, 121*sec) || c.Add(a, 122*sec) {
		t.Fatal("the third denial within a window bans, and counting starts again")
	}
	for i := range 1000 {
		c.Add(limit.ClientOf("10.0.0."+string(rune('0'+i%10))+"0", 32, 64), int64(i)*sec)
	}
	if len(c.m) > 100 {
		t.Fatalf("%d clients counted, bound 100", len(c.m))
	}
}

func TestConfigWithDefaults(t *testing.T) {
	c, err := Config{Paths: []string{"/no-robots/"}}.WithDefaults()
	if err != nil || c.Links != LinksClient || c.Grace == nil || time.Duration(*c.Grace) != DefaultGrace {
		t.Fatalf("%+v %v", c, err)
	}
	for cfg, want := range map[*Config]string{
		{Paths: []string{"/*/print$"}}:             "robots_guard: traps: links: per-client trap links need a trap that is a plain path",
		{Paths: []string{"/t/"}, Secret: "short"}:  "robots_guard: traps: secret: must be at least 16 bytes, got 5",
		{Paths: []string{"/t/"}, Links: "dynamic"}: `robots_guard: traps: links: must be "client" or "static", got "dynamic"`,
		{Paths: []string{"t"}}:                     "robots_guard: traps: paths[0]:",
	} {
		if _, err := cfg.WithDefaults(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", *cfg, err, want)
		}
	}
}
