package identity

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestServicesVerdict: within a feed, the entry with the longest prefix
// that holds an address speaks for it (JAFAR §3.3); an entry that names
// none of the operator's tokens, or no service, narrows nothing; an
// address verifies a claim when any feed that holds it admits the header
// (OpenAI and Google publish several feeds, one per crawler).
func TestServicesVerdict(t *testing.T) {
	a, _ := ParseFeed([]byte(`{"prefixes": [
		{"ipv4Prefix": "198.51.100.0/22", "services": ["AcmeBot"]},
		{"ipv4Prefix": "198.51.101.0/24", "services": ["AcmeBot-News"]},
		{"ipv4Prefix": "198.51.101.128/25", "services": ["AcmeBot-Image", "Partner"]},
		{"ipv4Prefix": "198.51.102.0/24", "services": ["AcmeBot-News"]},
		{"ipv4Prefix": "198.51.102.0/24"},
		{"ipv4Prefix": "198.51.103.0/24", "services": ["Partner"]},
		{"ipv6Prefix": "2001:db8::/32", "services": ["AcmeBot"]},
		{"ipv6Prefix": "2001:db8:0:1::/64", "services": ["AcmeBot-Video"]}]}`))
	b, _ := ParseFeed([]byte(`{"prefixes": [{"ipv4Prefix": "198.51.101.0/28", "services": ["AcmeBot-Video"]}]}`))
	plain, _ := ParseFeed([]byte(`{"prefixes": [{"ipv4Prefix": "198.51.101.64/26"}]}`))
	x := buildOpIndex([]feedDoc{{"a", a}, {"b", b}, {"plain", plain}}, func(s string) bool { return strings.HasPrefix(strings.ToLower(s), "acmebot") })
	for _, tc := range []struct {
		addr, ua string
		ok       bool
		refusing string // the prefix of the refusing entry
	}{
		{"198.51.100.1", "AcmeBot/1.0", true, ""},
		{"198.51.100.1", "Mozilla/5.0 (compatible; AcmeBot-News/2.0)", true, ""}, // the hyphen fallback: AcmeBot covers AcmeBot-News
		{"198.51.101.1", "AcmeBot-News/2.0", true, ""},
		{"198.51.101.1", "AcmeBot/1.0", false, "198.51.101.0/28"},          // the /24 of a says News only, the /28 of b Video only
		{"198.51.101.1", "AcmeBot-Video/1.0", true, ""},                    // feed b admits it
		{"198.51.101.200", "AcmeBot-Image/1.0", true, ""},                  // the /25 inside the /24
		{"198.51.101.200", "AcmeBot-News/2.0", false, "198.51.101.128/25"}, // the most specific speaks
		{"198.51.101.70", "AcmeBot/1.0", true, ""},                         // a feed without services holds it
		{"198.51.102.9", "AcmeBot/1.0", true, ""},                          // the same prefix with no services: all clients
		{"198.51.103.9", "AcmeBot/1.0", true, ""},                          // services that are not the operator's: no narrowing
		{"2001:db8::1", "AcmeBot/1.0", true, ""},
		{"2001:db8:0:1::9", "AcmeBot/1.0", false, "2001:db8:0:1::/64"},
		{"::ffff:198.51.101.200", "AcmeBot-News/2.0", false, "198.51.101.128/25"},                           // an IPv4-mapped address finds the /25
		{"198.51.101.200", "AcmeBot/1.0 Partner/1.0", false, "198.51.101.128/25"},                           // Partner is not the operator's: it admits nothing
		{"198.51.101.200", "Mozilla/5.0 (+https://acme.example/acmebot-image)", false, "198.51.101.128/25"}, // named in a URL only
		{"198.51.101.200", "", true, ""},                                                                    // no header at hand (Verify)
	} {
		ok, refusing, _ := x.servicesVerdict(netip.MustParseAddr(tc.addr), tc.ua)
		got := ""
		if refusing != nil {
			got = refusing.prefix.String()
		}
		if ok != tc.ok || !ok && got != tc.refusing {
			t.Errorf("%s %q: %v, refused by %q; want %v, %q", tc.addr, tc.ua, ok, got, tc.ok, tc.refusing)
		}
	}
	if x := buildOpIndex([]feedDoc{{"plain", plain}}, nil); x.svcs != nil {
		t.Error("a feed without services got a service index")
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
		if r, _ := v.VerifyRequest(ctx, ua, claims, a, nil); r.Verdict != Verified {
			b.Fatalf("%+v", r)
		}
	}
}
