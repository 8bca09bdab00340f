package middleware

import (
	"net/netip"
)

// ipKey parses "ip" or "ip:port" and masks it to the configured prefix. It
// returns the zero key for unparsable input, so such clients share a budget.
func ipKey(s string, v4bits, v6bits int) [16]byte {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return [16]byte{}
		}
		a = ap.Addr()
	}
	a = a.Unmap().WithZone("")
	bits := v6bits
	if a.Is4() {
		bits = v4bits
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return [16]byte{}
	}
	return p.Addr().As16()
}
