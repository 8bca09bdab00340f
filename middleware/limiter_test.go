package middleware

import (
	"net/netip"
	"testing"
)

func TestIPKey(t *testing.T) {
	key := func(s string, bits int) [16]byte {
		p := netip.MustParsePrefix(s)
		return netip.PrefixFrom(p.Addr(), bits).Masked().Addr().As16()
	}
	tests := []struct {
		in   string
		want [16]byte
	}{
		{"192.0.2.1", key("192.0.2.1/32", 32)},
		{"192.0.2.1:1234", key("192.0.2.1/32", 32)},
		{"[2001:db8::1]:443", key("2001:db8::/64", 64)},
		{"2001:db8::ffff", key("2001:db8::/64", 64)},
		{"[2001:db8::1%eth0]:443", key("2001:db8::/64", 64)},
		{"fe80::1%eth0", key("fe80::/64", 64)},
		{"::ffff:192.0.2.1", key("192.0.2.1/32", 32)}, // v4-mapped: the v4 prefix
		{"[::ffff:192.0.2.1]:80", key("192.0.2.1/32", 32)},
		{"", [16]byte{}},
		{"garbage", [16]byte{}},
		{"192.0.2.1:", [16]byte{}},
		{"[::1]", [16]byte{}},
		{"192.0.2.1:1:2", [16]byte{}},
	}
	for _, tt := range tests {
		if got := ipKey(tt.in, 32, 64); got != tt.want {
			t.Errorf("ipKey(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { ipKey("192.0.2.1:1234", 32, 64) }); n != 0 {
		t.Errorf("ipKey(ip:port) allocates %v times", n)
	}
}
