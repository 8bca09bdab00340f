package limit

import (
	"net/netip"
	"strings"
)

// Client is a client's address prefix as a 16-byte key: an IPv4 address
// (as an IPv4-mapped IPv6 address) or an IPv6 address, masked to the
// configured prefix length. It keys Crawl-delay budgets, bans, the
// denial counters of ban_after and the violations report. The zero Client
// stands for no address (one that did not parse); keys of verified
// operators (identity.Result.ClientKey) start with 0xff, which no unicast
// address does.
type Client [16]byte

// IsZero reports whether c stands for no address.
func (c Client) IsZero() bool { return c == Client{} }

// ClientOf parses "ip" or "ip:port" ("[v6]:port") and masks it to v4bits
// (IPv4) or v6bits (IPv6). Input that does not parse gives the zero
// Client, so such clients share one key. It does not allocate.
func ClientOf(s string, v4bits, v6bits int) Client {
	return ClientOfAddr(ParseAddr(s), v4bits, v6bits)
}

// ClientOfAddr is ClientOf for an address already parsed (ParseAddr):
// the zero Addr gives the zero Client.
func ClientOfAddr(a netip.Addr, v4bits, v6bits int) Client {
	if !a.IsValid() {
		return Client{}
	}
	bits := v6bits
	if a.Is4() {
		bits = v4bits
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return Client{}
	}
	return p.Addr().As16()
}

// ParseAddr parses a client address, "ip" or "ip:port" ("[v6]:port"),
// unmapped and without zone, without allocating; the zero Addr when it
// does not parse.
func ParseAddr(s string) netip.Addr {
	if a, ok := parseIPv4(s); ok {
		return a // what Caddy's client_ip holds for IPv4 clients
	}
	return parseAddrNetip(s)
}

// parseAddrNetip is ParseAddr through netip.
func parseAddrNetip(s string) netip.Addr {
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

// parseIPv4 parses a dotted-decimal IPv4 address as netip.ParseAddr does
// (four fields of 0 to 255, no leading zeros) and reports false for
// anything else, which ParseAddr then hands to netip. It is ParseAddr's
// fast path: in a bot's request through Caddy (bench/footprint), it ran
// 229 instructions and 8 instruction cache misses where netip's parse and
// the unmapping ran 433 and 22 (code no other part of a request keeps in
// the core's caches).
func parseIPv4(s string) (netip.Addr, bool) {
	if len(s) < len("0.0.0.0") || len(s) > len("255.255.255.255") {
		return netip.Addr{}, false
	}
	var b [4]byte
	field, val, digits := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			if digits == 1 && val == 0 {
				return netip.Addr{}, false // a leading zero
			}
			if val = val*10 + int(c-'0'); val > 255 {
				return netip.Addr{}, false
			}
			digits++
		case c == '.' && digits > 0 && field < 3:
			b[field] = byte(val)
			field, val, digits = field+1, 0, 0
		default:
			return netip.Addr{}, false
		}
	}
	if field != 3 || digits == 0 {
		return netip.Addr{}, false
	}
	b[3] = byte(val)
	return netip.AddrFrom4(b), true
}

// Format writes c as a prefix of v4bits or v6bits, "203.0.113.7/32" or
// "2001:db8:1:2::/64"; "(unknown)" for the zero Client and "(verified
// operator)" for an operator's key.
func (c Client) Format(v4bits, v6bits int) string {
	if c.IsZero() {
		return "(unknown)"
	}
	if c.IsNet() {
		return c.NetPrefix().String()
	}
	a := netip.AddrFrom16(c)
	if a.Is4In6() {
		return netip.PrefixFrom(a.Unmap(), v4bits).String()
	}
	if c[0] == 0xff {
		return "(verified operator)"
	}
	return netip.PrefixFrom(a, v6bits).String()
}

// Networks that aggregated bans cover (a flood of bans from one network
// becomes one ban of it): an IPv4 /24 or an IPv6 /48.
const (
	NetBitsV4 = 24
	NetBitsV6 = 48
)

// NetOf returns the key of the network that covers c for an aggregated
// ban, and false when c is no address or is as wide already (a client
// prefix of /24 or less for IPv4, /48 or less for IPv6: v4bits, v6bits).
// A network key starts with 0xfe and its prefix length, which no client
// key does (fe18::/16 and fe30::/16 are reserved, never assigned), and
// holds the network's bytes after them.
func NetOf(c Client, v4bits, v6bits int) (Client, bool) {
	if c.IsZero() || c[0] == 0xff || c.IsNet() {
		return Client{}, false
	}
	var n Client
	n[0] = 0xfe
	if netip.AddrFrom16(c).Is4In6() {
		if v4bits <= NetBitsV4 {
			return Client{}, false
		}
		n[1] = NetBitsV4
		copy(n[2:], c[12:15])
		return n, true
	}
	if v6bits <= NetBitsV6 {
		return Client{}, false
	}
	n[1] = NetBitsV6
	copy(n[2:], c[:6])
	return n, true
}

// IsNet reports whether c is a network key of NetOf.
func (c Client) IsNet() bool { return c[0] == 0xfe && (c[1] == NetBitsV4 || c[1] == NetBitsV6) }

// NetPrefix returns the network a key of NetOf stands for.
func (c Client) NetPrefix() netip.Prefix {
	if c[1] == NetBitsV4 {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{c[2], c[3], c[4], 0}), NetBitsV4)
	}
	var a [16]byte
	copy(a[:6], c[2:8])
	return netip.PrefixFrom(netip.AddrFrom16(a), NetBitsV6)
}

// NetKey returns the network key of NetOf for a prefix written as one
// ("203.0.113.0/24", "2001:db8:1::/48"), and false for any other.
func NetKey(p netip.Prefix) (Client, bool) {
	p = p.Masked()
	var c Client
	switch {
	case p.Addr().Is4() && p.Bits() == NetBitsV4:
		c = p.Addr().As16()
		return NetOf(c, 32, 128)
	case p.Addr().Is6() && !p.Addr().Is4In6() && p.Bits() == NetBitsV6:
		c = p.Addr().As16()
		return NetOf(c, 32, 128)
	}
	return Client{}, false
}
