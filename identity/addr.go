package identity

import "net/netip"

// notGlobal lists the special-purpose blocks of the IANA IPv4 and IPv6
// Special-Purpose Address Registries (RFC 6890 and its updates) that are not
// globally reachable: loopback, private, link-local, shared (CGNAT),
// documentation, benchmarking, reserved. No crawler operator sends from
// them.
var notGlobal4, notGlobal6 = func() (v4, v6 []netip.Prefix) {
	for _, s := range [...]string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
		"::/127", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "3fff::/20",
		"fc00::/7", "fe80::/10", "ff00::/8",
	} {
		if p := netip.MustParsePrefix(s); p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	return v4, v6
}()

// special4 marks the first octets that some block of notGlobal4 covers.
var special4 = func() (m [256]bool) {
	for _, p := range notGlobal4 {
		first := int(p.Addr().As4()[0])
		n := 1
		if p.Bits() < 8 {
			n = 1 << (8 - p.Bits())
		}
		for i := first; i < first+n; i++ {
			m[i] = true
		}
	}
	return m
}()

// GloballyReachable reports whether addr may be a crawler's own address:
// valid, and in none of the blocks that the IANA special-purpose registries
// mark as not globally reachable (loopback, private, link-local, CGNAT,
// documentation). A claim from any other address is Unverifiable at once,
// with no feed or DNS lookup: it comes through a proxy whose address is not
// trusted, or from a network no crawler operator uses.
func GloballyReachable(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsValid() {
		return false
	}
	ps := notGlobal6
	if addr.Is4() {
		if !special4[addr.As4()[0]] {
			return true // most first octets hold no special block
		}
		ps = notGlobal4
	}
	for _, p := range ps {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}
