package middleware

import (
	"net/netip"
	"strings"
)

// ipKey parses "ip" or "ip:port" and masks it to the configured prefix. It
// returns the zero key for unparsable input, so such clients share a budget.
func ipKey(s string, v4bits, v6bits int) [16]byte {
	a := clientAddr(s)
	if !a.IsValid() {
		return [16]byte{}
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

// clientAddr parses a client address, "ip" or "ip:port" ("[v6]:port"),
// without allocating; the zero Addr when it does not parse.
func clientAddr(s string) netip.Addr {
	// "[v6]:port" and "v4:port" carry a port; trying ParseAddr on them first
	// would allocate an error on every request.
	if withPort := strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1; withPort {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return netip.Addr{}
		}
		return ap.Addr().Unmap().WithZone("")
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap().WithZone("")
}
