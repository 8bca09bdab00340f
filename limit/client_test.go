package limit

import (
	"context"
	"net/netip"
	"testing"
)

func TestClientOf(t *testing.T) {
	key := func(s string, bits int) Client {
		p := netip.MustParsePrefix(s)
		return netip.PrefixFrom(p.Addr(), bits).Masked().Addr().As16()
	}
	tests := []struct {
		in   string
		want Client
	}{
		{"192.0.2.1", key("192.0.2.1/32", 32)},
		{"192.0.2.1:1234", key("192.0.2.1/32", 32)},
		{"[2001:db8::1]:443", key("2001:db8::/64", 64)},
		{"2001:db8::ffff", key("2001:db8::/64", 64)},
		{"[2001:db8::1%eth0]:443", key("2001:db8::/64", 64)},
		{"fe80::1%eth0", key("fe80::/64", 64)},
		{"::ffff:192.0.2.1", key("192.0.2.1/32", 32)}, // v4-mapped: the v4 prefix
		{"[::ffff:192.0.2.1]:80", key("192.0.2.1/32", 32)},
		{"", Client{}},
		{"garbage", Client{}},
		{"192.0.2.1:", Client{}},
		{"[::1]", Client{}},
		{"192.0.2.1:1:2", Client{}},
	}
	for _, tt := range tests {
		if got := ClientOf(tt.in, 32, 64); got != tt.want {
			t.Errorf("ClientOf(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { ClientOf("192.0.2.1:1234", 32, 64) }); n != 0 {
		t.Errorf("ClientOf(ip:port) allocates %v times", n)
	}
}

func TestClientFormat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{"203.0.113.7:1", "203.0.113.7/32"},
		{"[2001:db8:1:2::9]:443", "2001:db8:1:2::/64"},
		{"garbage", "(unknown)"},
	} {
		if got := ClientOf(c.in, 32, 64).Format(32, 64); got != c.want {
			t.Errorf("ClientOf(%q).Format = %q, want %q", c.in, got, c.want)
		}
	}
	if got := (Client{0: 0xff, 15: 1}).Format(32, 64); got != "(verified operator)" {
		t.Errorf("an operator key formats as %q", got)
	}
}

// bg is the context of the tests' calls.
var bg = context.Background()

var parseAddrCases = []string{
	"0.0.0.0", "1.2.3.4", "203.0.113.7", "255.255.255.255", "256.1.1.1", "1.2.3.256",
	"01.2.3.4", "1.02.3.4", "1.2.3.04", "1.2.3.0", "0.0.0.00", "1.2.3", "1.2.3.4.5",
	"1..3.4", ".1.2.3", "1.2.3.", "1.2.3.4:80", "1.2.3.4 ", " 1.2.3.4", "1.2.3.-4",
	"1.2.3.4%eth0", "::ffff:1.2.3.4", "[::ffff:1.2.3.4]:80", "2001:db8::1", "[2001:db8::1]:443",
	"fe80::1%eth0", "999.999.999.999", "1.2.3.a", "", "1234.1.1.1", "1.2.3.4444",
}

// TestParseAddrIPv4 checks ParseAddr's IPv4 fast path against netip.
func TestParseAddrIPv4(t *testing.T) {
	for _, s := range parseAddrCases {
		if got, want := ParseAddr(s), parseAddrNetip(s); got != want {
			t.Errorf("ParseAddr(%q) = %v, netip says %v", s, got, want)
		}
	}
	if a := testing.AllocsPerRun(100, func() { ParseAddr("203.0.113.7") }); a != 0 {
		t.Errorf("ParseAddr allocates %.1f times", a)
	}
}

// FuzzParseAddr checks that ParseAddr says what netip says of any text.
func FuzzParseAddr(f *testing.F) {
	for _, s := range parseAddrCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ParseAddr(s), parseAddrNetip(s); got != want {
			t.Errorf("ParseAddr(%q) = %v, netip says %v", s, got, want)
		}
	})
}

func BenchmarkParseAddr(b *testing.B) {
	for _, s := range []string{"203.0.113.7", "[2001:db8::1]:443"} {
		b.Run(s, func(b *testing.B) {
			for b.Loop() {
				ParseAddr(s)
			}
		})
		b.Run(s+"/netip", func(b *testing.B) {
			for b.Loop() {
				parseAddrNetip(s)
			}
		})
	}
}

// TestNetOf: the network key of a client covers its /24 or /48, is no
// client's key, formats as the network, and round-trips through NetKey.
func TestNetOf(t *testing.T) {
	for _, tc := range []struct{ ip, want string }{
		{"203.0.113.77", "203.0.113.0/24"},
		{"2001:db8:1:2:3::4", "2001:db8:1::/48"},
	} {
		c := ClientOf(tc.ip, 32, 64)
		n, ok := NetOf(c, 32, 64)
		if !ok || !n.IsNet() || c.IsNet() || n.Format(32, 64) != tc.want {
			t.Errorf("%s: %v %v %q", tc.ip, ok, n.IsNet(), n.Format(32, 64))
		}
		if k, ok := NetKey(netip.MustParsePrefix(tc.want)); !ok || k != n {
			t.Errorf("NetKey(%s) = %v, %v", tc.want, k, ok)
		}
	}
	if _, ok := NetOf(ClientOf("203.0.113.77", 24, 64), 24, 64); ok {
		t.Error("a /24 client has a wider network")
	}
	if _, ok := NetKey(netip.MustParsePrefix("2001:db8::/64")); ok {
		t.Error("a /64 is no network key")
	}
}
