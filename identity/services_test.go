package identity

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMostSpecificService: the entry with the longest prefix that holds
// an address speaks for it (JAFAR §3.3), whichever feed or order it comes
// in; an entry without services stands for all of the operator's clients.
func TestMostSpecificService(t *testing.T) {
	a, _ := ParseFeed([]byte(`{"prefixes": [
		{"ipv4Prefix": "198.51.100.0/22", "services": ["AcmeBot"]},
		{"ipv4Prefix": "198.51.101.0/24", "services": ["AcmeBot-News"]},
		{"ipv6Prefix": "2001:db8::/32", "services": ["AcmeBot"]}]}`))
	b, _ := ParseFeed([]byte(`{"prefixes": [
		{"ipv4Prefix": "198.51.101.128/25", "services": ["AcmeBot-Image", "Partner"]},
		{"ipv4Prefix": "198.51.101.0/24", "services": ["AcmeBot-Video"]},
		{"ipv4Prefix": "198.51.102.0/24"},
		{"ipv6Prefix": "2001:db8:0:1::/64", "services": ["Partner"]}]}`))
	x := buildOpIndex([]*FeedDocument{a, b}, func(s string) bool { return strings.HasPrefix(s, "AcmeBot") })
	for _, tc := range []struct {
		addr     string
		prefix   string
		services []string
		own      bool
	}{
		{"198.51.100.1", "198.51.100.0/22", []string{"AcmeBot"}, true},
		{"198.51.101.1", "198.51.101.0/24", []string{"AcmeBot-News", "AcmeBot-Video"}, true}, // the same prefix in two feeds
		{"198.51.101.200", "198.51.101.128/25", []string{"AcmeBot-Image", "Partner"}, true},
		{"198.51.102.9", "198.51.102.0/24", nil, false},
		{"2001:db8::1", "2001:db8::/32", []string{"AcmeBot"}, true},
		{"2001:db8:0:1::9", "2001:db8:0:1::/64", []string{"Partner"}, false},
		{"::ffff:198.51.100.1", "198.51.100.0/22", []string{"AcmeBot"}, true},
	} {
		e := x.svc.lookup(netip.MustParseAddr(tc.addr))
		if e == nil || e.prefix.String() != tc.prefix || !slices.Equal(e.services, tc.services) || e.own != tc.own {
			t.Errorf("%s: %+v", tc.addr, e)
		}
	}
	if e := x.svc.lookup(netip.MustParseAddr("203.0.113.1")); e != nil {
		t.Error("an address in no entry found one")
	}
	if x := buildOpIndex([]*FeedDocument{{Prefixes: []FeedPrefix{{Prefix: netip.MustParsePrefix("192.0.2.0/24")}}}}, nil); x.svc != nil {
		t.Error("a feed without services got a service index")
	}
}

func TestNamesService(t *testing.T) {
	for _, tc := range []struct {
		ua   string
		svcs []string
		want bool
	}{
		{"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)", []string{"GPTBot"}, true},
		{"mozilla/5.0 (compatible; gptbot/1.2)", []string{"GPTBot"}, true},
		{"Googlebot-Image/1.0", []string{"Googlebot"}, true}, // the hyphen fallback
		{"Googlebot/2.1", []string{"Googlebot-Image"}, false},
		{"NotGPTBot/1.0", []string{"GPTBot"}, false},
		{"GPTBotX/1.0", []string{"GPTBot"}, false},
		{"OAI-SearchBot/1.0", []string{"GPTBot", "OAI-SearchBot"}, true},
		{"", []string{"GPTBot"}, false},
		{"GPTBot", nil, false},
	} {
		if got := namesService(tc.ua, tc.svcs); got != tc.want {
			t.Errorf("namesService(%q, %q) = %v", tc.ua, tc.svcs, got)
		}
	}
}

// BenchmarkVerifyServices is a verified claim through a feed of 1,500
// prefixes (/24, /27 inside them, IPv6 /64) that list services: the most
// specific entry's lookup and the header's check included.
func BenchmarkVerifyServices(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"creationTime":"2026-11-27T00:00:00Z","prefixes":[`)
	for i := range 500 {
		fmt.Fprintf(&sb, `{"ipv4Prefix":"11.%d.%d.0/24","services":["GPTBot","OAI-SearchBot"]},`, i/256, i%256)
		fmt.Fprintf(&sb, `{"ipv4Prefix":"11.%d.%d.32/27","services":["OAI-SearchBot"]},`, i/256, i%256)
		fmt.Fprintf(&sb, `{"ipv6Prefix":"2001:db8:%x::/64","services":["ChatGPT-User"]},`, i)
	}
	sb.WriteString(`{"ipv4Prefix":"11.9.9.0/24"}]}`)
	srv := httptestFeed(b, sb.String())
	ops := []Operator{{Name: "openai", Tokens: []string{"GPTBot", "OAI-SearchBot", "ChatGPT-User"}, IPRanges: []string{srv}}}
	v, err := New(Config{Operators: ops})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	for !v.Feeds()[0].Loaded {
		time.Sleep(time.Millisecond)
	}
	ua := "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot)"
	claims := v.Claims(ua)
	a := netip.MustParseAddr("11.1.7.40")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r, _ := v.VerifyRequest(ctx, ua, claims, a, nil); r.Verdict != Verified || len(r.Services()) != 1 {
			b.Fatalf("%+v", r)
		}
	}
}
