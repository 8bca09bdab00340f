package identity

import (
	"net/netip"
	"testing"
)

func TestGloballyReachable(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"66.249.66.1", true}, {"8.8.8.8", true}, {"2001:4860:4801:10::1", true}, {"::ffff:66.249.66.1", true},
		{"127.0.0.1", false}, {"::1", false}, {"::", false}, {"0.0.0.0", false},
		{"10.1.2.3", false}, {"172.16.0.9", false}, {"172.32.0.1", true}, {"192.168.1.1", false},
		{"100.64.0.1", false}, {"100.128.0.1", true}, {"169.254.1.1", false}, {"fe80::1", false}, {"fd00::1", false},
		{"192.0.2.1", false}, {"198.51.100.7", false}, {"203.0.113.9", false}, {"2001:db8::1", false}, {"3fff::1", false},
		{"198.18.0.1", false}, {"240.0.0.1", false}, {"255.255.255.255", false}, {"::ffff:127.0.0.1", false},
	} {
		if got := GloballyReachable(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("GloballyReachable(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
	if GloballyReachable(netip.Addr{}) {
		t.Error("the zero Addr is reachable")
	}
}

func BenchmarkGloballyReachable(b *testing.B) {
	a := netip.MustParseAddr("66.249.66.1")
	for b.Loop() {
		if !GloballyReachable(a) {
			b.Fatal("not reachable")
		}
	}
}

// TestGloballyReachableEveryV4Block checks the first-octet shortcut
// against the plain block list at the edges of every block.
func TestGloballyReachableEveryV4Block(t *testing.T) {
	naive := func(a netip.Addr) bool {
		for _, q := range notGlobal4 {
			if q.Contains(a) {
				return false
			}
		}
		return true
	}
	for _, p := range notGlobal4 {
		b := p.Addr().As4()
		host := uint32(1)<<(32-p.Bits()) - 1
		n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		for _, x := range []uint32{n - 1, n, n + host, n + host + 1} {
			a := netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
			if GloballyReachable(a) != naive(a) {
				t.Errorf("%s (near %s): %v", a, p, GloballyReachable(a))
			}
		}
	}
}
