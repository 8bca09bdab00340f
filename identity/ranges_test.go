package identity

import (
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseFeed(t *testing.T) {
	good := `{"creationTime": "2026-11-01T00:00:00.000000", "syncToken": "1", "prefixes": [
		{"ipv4Prefix": "66.249.64.0/27"}, {"ipv6Prefix": "2001:4860:4801:10::/64"}, {"ipv4Prefix": "192.0.2.7/24"}]}`
	d, err := ParseFeed([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if d.CreationTime != "2026-11-01T00:00:00.000000" || d.SyncToken != "1" || len(d.Prefixes) != 3 || d.Prefixes[2].Prefix.String() != "192.0.2.0/24" || d.Ignored != 0 {
		t.Fatalf("got %+v", d)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"html", `<html>Service unavailable</html>`, "not a JSON feed"},
		{"empty body", ``, "not a JSON feed"},
		{"trailing garbage", `{"prefixes":[{"ipv4Prefix":"1.2.3.0/24"}]} x`, "not a JSON feed"},
		{"array", `[{"ipv4Prefix":"1.2.3.0/24"}]`, "not a JSON feed"},
		{"no prefixes", `{"creationTime":"x"}`, `no "prefixes"`},
		{"null prefixes", `{"prefixes":null}`, `no "prefixes"`},
		{"only both families", `{"prefixes":[{"ipv4Prefix":"1.2.3.0/24","ipv6Prefix":"2001:db8::/32"}]}`, "none of its 1 prefix entries is valid"},
		{"only neither", `{"prefixes":[{"ipPrefix":"1.2.3.0/24"}]}`, "none of its 1"},
		{"only v6 as v4", `{"prefixes":[{"ipv4Prefix":"2001:db8::/32"}]}`, "none of its 1"},
		{"only v4 as v6", `{"prefixes":[{"ipv6Prefix":"1.2.3.0/24"}]}`, "none of its 1"},
		{"only a bare address", `{"prefixes":[{"ipv4Prefix":"1.2.3.4"}]}`, "none of its 1"},
		{"only a number", `{"prefixes":[{"ipv4Prefix":5}]}`, "none of its 1"},
		{"too wide v4", `{"prefixes":[{"ipv4Prefix":"0.0.0.0/0"}]}`, "too wide"},
		{"too wide v6", `{"prefixes":[{"ipv6Prefix":"::/0"}]}`, "too wide"},
		{"too wide among good ones", `{"prefixes":[{"ipv4Prefix":"1.2.3.0/24"},{"ipv4Prefix":"4.0.0.0/7"}]}`, "prefixes[1]: 4.0.0.0/7 is too wide"},
		{"huge", `{"prefixes":[` + strings.Repeat(`{"ipv4Prefix":"1.2.3.0/24"},`, MaxFeedBytes/28) + `{"ipv4Prefix":"1.2.3.0/24"}]}`, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFeed([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestParseJAFAR: the three examples of draft-illyes-webbotauth-jafar-00
// §4 (testdata/jafar, with their source note) read as written; invalid
// entries are ignored and counted, not fatal (§2.3), and services out of
// bounds leave their prefix naming none; members nobody knows are ignored
// (§2.4); an empty prefixes array is a feed with no ranges.
func TestParseJAFAR(t *testing.T) {
	for _, tc := range []struct {
		file     string
		prefixes []string
		services [][]string
		sync     string
	}{
		{"example1.json", []string{"66.249.64.0/20", "34.64.0.0/12", "2001:4860:4000::/36"}, [][]string{nil, nil, nil}, ""},
		{"example2.json", []string{"66.249.64.0/24", "2001:4860:4860::/48"}, [][]string{{"ExampleCloud-Crawler", "ExampleCloud-Ads"}, {"ExampleCloud-Fetcher"}}, ""},
		{"example3.json", []string{"192.0.2.0/24", "198.51.100.0/24", "2001:db8:abc::/48"},
			[][]string{{"SearchEngine-A-Crawler", "SearchEngine-A-ImageBot"}, {"SocialMedia-B-Preview"}, {"TechCo-C-HealthCheck", "TechCo-C-Ads"}}, "20260410223000"},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "jafar", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		d, err := ParseFeed(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if len(d.Prefixes) != len(tc.prefixes) || d.SyncToken != tc.sync || d.Ignored != 0 {
			t.Fatalf("%s: %+v", tc.file, d)
		}
		for i, e := range d.Prefixes {
			if e.Prefix.String() != tc.prefixes[i] || !slices.Equal(e.Services, tc.services[i]) {
				t.Fatalf("%s: entry %d = %v %q", tc.file, i, e.Prefix, e.Services)
			}
		}
	}
	d, err := ParseFeed([]byte(`{"creationTime": "2026-11-01T00:00:00Z", "notes": "n", "publisher": {"x": 1}, "prefixes": [
		{"ipv4Prefix": "1.2.3.0/24", "ipv6Prefix": "2001:db8::/32"},
		{"services": ["A"]},
		{"ipv4Prefix": "not a prefix"},
		{"ipv4Prefix": "198.51.100.0/24", "services": "GPTBot"},
		{"ipv4Prefix": "198.51.100.0/24", "services": [""]},
		{"ipv4Prefix": "198.51.100.0/24", "services": [` + strings.Repeat(`"S",`, maxServices) + `"S"]},
		{"ipv4Prefix": "203.0.113.9/24", "services": ["GPTBot"], "comment": "unknown members are ignored"},
		{"ipv6Prefix": "2001:db8:1::/48", "services": []}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// Three entries ignored; three whose services are not read (a string,
	// an empty name, 33 names) keep their prefix, naming no service.
	if d.Ignored != 3 || d.UnreadServices != 3 || len(d.Prefixes) != 5 || d.Prefixes[3].Prefix.String() != "203.0.113.0/24" ||
		!slices.Equal(d.Prefixes[3].Services, []string{"GPTBot"}) || d.Prefixes[0].Services != nil || d.Prefixes[2].Services != nil || d.Prefixes[4].Services != nil {
		t.Fatalf("got %+v", d)
	}
	if d, err := ParseFeed([]byte(`{"creationTime": "2026-11-01T00:00:00Z", "prefixes": []}`)); err != nil || len(d.Prefixes) != 0 {
		t.Fatalf("an empty feed: %+v %v", d, err)
	}
}

func TestIndexContains(t *testing.T) {
	x := buildIndex([]netip.Prefix{
		netip.MustParsePrefix("66.249.64.0/27"),
		netip.MustParsePrefix("66.249.64.32/27"), // adjacent: merged
		netip.MustParsePrefix("66.249.64.8/29"),  // inside
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("255.255.255.0/24"),
		netip.MustParsePrefix("2001:4860:4801:10::/64"),
		netip.MustParsePrefix("2001:4860:4801:11::/64"),
		netip.MustParsePrefix("ffff:ffff:ffff:ffff::/64"),
	})
	if len(x.v4) != 3 || len(x.v6) != 2 {
		t.Fatalf("spans v4 %v v6 %v", x.v4, x.v6)
	}
	for addr, want := range map[string]bool{
		"66.249.64.0": true, "66.249.64.63": true, "66.249.64.64": false, "66.249.63.255": false,
		"10.255.255.255": true, "11.0.0.0": false, "9.255.255.255": false, "0.0.0.0": false,
		"255.255.255.255": true, "::ffff:66.249.64.1": true,
		"2001:4860:4801:10::1": true, "2001:4860:4801:11:ffff:ffff:ffff:ffff": true, "2001:4860:4801:12::": false,
		"2001:4860:4801:f::ffff": false, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff": true, "::": false,
	} {
		if got := x.contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("contains(%s) = %v, want %v", addr, got, want)
		}
	}
	var nilIndex *rangeIndex
	if nilIndex.contains(netip.MustParseAddr("1.2.3.4")) {
		t.Error("a nil index contains nothing")
	}
}

// FuzzIndex checks the merged index against a linear scan of the prefixes.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{66, 249, 64, 0, 27, 66, 249, 64, 32, 27}, []byte{66, 249, 64, 40})
	f.Add([]byte{32, 1, 13, 184, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64}, []byte{32, 1, 13, 184, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, spec, probe []byte) {
		// The check below is quadratic in the prefixes; 200 of them are
		// plenty for the merging logic, and keep the fuzzer fast.
		spec = spec[:min(len(spec), 200*5)]
		var ps []netip.Prefix
		for len(spec) >= 5 {
			n := 5
			if spec[0]&1 == 1 && len(spec) >= 17 { // IPv6
				n = 17
				a := netip.AddrFrom16([16]byte(spec[:16]))
				bits := minV6Bits + int(spec[16])%(129-minV6Bits)
				ps = append(ps, netip.PrefixFrom(a, bits).Masked())
			} else {
				a := netip.AddrFrom4([4]byte(spec[:4]))
				bits := minV4Bits + int(spec[4])%(33-minV4Bits)
				ps = append(ps, netip.PrefixFrom(a, bits).Masked())
			}
			spec = spec[n:]
		}
		x := buildIndex(ps)
		var probes []netip.Addr
		if len(probe) >= 16 {
			probes = append(probes, netip.AddrFrom16([16]byte(probe[:16])))
		}
		if len(probe) >= 4 {
			probes = append(probes, netip.AddrFrom4([4]byte(probe[:4])))
		}
		for _, p := range ps { // edges of every prefix
			lo := p.Addr()
			probes = append(probes, lo, lo.Prev(), lastAddr(p), lastAddr(p).Next())
		}
		for _, a := range probes {
			if !a.IsValid() {
				continue
			}
			want := false
			for _, p := range ps {
				want = want || p.Contains(a)
			}
			if got := x.contains(a); got != want {
				t.Fatalf("contains(%s) = %v, linear scan says %v (prefixes %v)", a, got, want, ps)
			}
		}
	})
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	host := 128 - p.Bits()
	if p.Addr().Is4() {
		host = 32 - p.Bits()
	}
	for i := 15; i >= 0 && host > 0; i-- {
		n := min(host, 8)
		b[i] |= byte(1<<n - 1)
		host -= n
	}
	if p.Addr().Is4() {
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return netip.AddrFrom16(b)
}

func BenchmarkIndexContains(b *testing.B) {
	// The size of Google's and Bing's feeds together: about 1,500 prefixes.
	var ps []netip.Prefix
	for i := range 1000 {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], uint32(0x42000000+i*64))
		ps = append(ps, netip.PrefixFrom(netip.AddrFrom4(a), 27))
	}
	for i := range 500 {
		var a [16]byte
		binary.BigEndian.PutUint64(a[:], 0x2001486048010000+uint64(i)*2)
		ps = append(ps, netip.PrefixFrom(netip.AddrFrom16(a), 64))
	}
	x := buildIndex(ps)
	v4 := netip.MustParseAddr("66.0.62.129")
	v6 := netip.MustParseAddr("2001:4860:4801:0064::1")
	b.Run("v4", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !x.contains(v4) {
				b.Fatal("not found")
			}
		}
	})
	b.Run("v6", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !x.contains(v6) {
				b.Fatal("not found")
			}
		}
	})
}

// FuzzParseFeed: any input either fails with an error or yields prefixes
// that obey the documented bounds; nothing panics.
func FuzzParseFeed(f *testing.F) {
	f.Add([]byte(`{"creationTime":"x","prefixes":[{"ipv4Prefix":"66.249.64.0/27"},{"ipv6Prefix":"2001:4860::/32"}]}`))
	f.Add([]byte(`{"prefixes":[{"ipv4Prefix":"1.2.3.4/33"}]}`))
	f.Add([]byte(`<html>`))
	f.Add([]byte(`{"prefixes":[{"ipv4Prefix":"198.51.100.0/22","services":["A"]},{"ipv4Prefix":"198.51.101.0/24","services":["B","C"]},{"ipv6Prefix":"1.2.3.0/24"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseFeed(b)
		if err != nil {
			return
		}
		ps := make([]netip.Prefix, 0, len(d.Prefixes))
		for _, e := range d.Prefixes {
			ps = append(ps, e.Prefix)
			if len(e.Services) > maxServices || e.Services != nil && len(e.Services) == 0 {
				t.Fatalf("services %q out of bounds", e.Services)
			}
		}
		for _, p := range ps {
			if !p.IsValid() || p != p.Masked() || p.Addr().Is4() && p.Bits() < minV4Bits || p.Addr().Is6() && p.Bits() < minV6Bits {
				t.Fatalf("prefix %v out of bounds", p)
			}
		}
		x := buildIndex(ps)
		for _, p := range ps {
			if !x.contains(p.Addr()) || !x.contains(lastAddr(p)) {
				t.Fatalf("index misses %v", p)
			}
		}
		sx := buildOpIndex([]feedDoc{{"fuzz", d}}, func(string) bool { return true })
		for _, p := range ps {
			if sx.svcs == nil {
				break
			}
			if e := sx.svcs[0].lookup(p.Addr()); e == nil || e.prefix.Bits() < p.Bits() {
				t.Fatalf("service index misses %v: %+v", p, e)
			}
		}
	})
}
