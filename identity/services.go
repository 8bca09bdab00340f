package identity

import (
	"net/netip"
	"slices"
	"strings"
)

// serviceIndex finds, among an operator's feed entries, the most specific
// prefix that holds an address, for the services it lists (JAFAR §3.3:
// when several entries hold an address, the one with the longest prefix
// speaks for it). It exists only when an entry lists services.
type serviceIndex struct {
	lens4, lens6 []int // the prefix lengths present, longest first
	at           map[netip.Prefix]*serviceEntry
	// own reports that some entry lists a service that is one of the
	// operator's product tokens: only then are the services read as
	// naming the operator's crawlers (see serviceEntry.own).
	own bool
}

// serviceEntry is what the most specific prefix says of its addresses.
type serviceEntry struct {
	prefix   netip.Prefix
	services []string // nil: the entry names none (all of the operator's clients)
	// own: a service is one of the operator's tokens, so a claim from
	// these addresses is verified only for a crawler the header names
	// among them. Services that name none of its tokens narrow nothing.
	own bool
}

// buildOpIndex is the index of an operator's loaded feeds: their prefixes
// merged for Contains, and a serviceIndex when an entry lists services.
// names reports whether a service names one of the operator's tokens.
func buildOpIndex(docs []*FeedDocument, names func(string) bool) *rangeIndex {
	var all []netip.Prefix
	withServices := false
	for _, d := range docs {
		for _, e := range d.Prefixes {
			all = append(all, e.Prefix)
			withServices = withServices || e.Services != nil
		}
	}
	x := buildIndex(all)
	if !withServices {
		return x
	}
	s := &serviceIndex{at: make(map[netip.Prefix]*serviceEntry, len(all))}
	for _, d := range docs {
		for _, e := range d.Prefixes {
			se := s.at[e.Prefix] // the same prefix in two entries: their services together
			if se == nil {
				se = &serviceEntry{prefix: e.Prefix}
				s.at[e.Prefix] = se
			}
			for _, name := range e.Services {
				if !slices.Contains(se.services, name) {
					se.services = append(se.services, name)
				}
				if names(name) {
					se.own, s.own = true, true
				}
			}
		}
	}
	for p := range s.at {
		if p.Addr().Is4() {
			s.lens4 = append(s.lens4, p.Bits())
		} else {
			s.lens6 = append(s.lens6, p.Bits())
		}
	}
	for _, l := range []*[]int{&s.lens4, &s.lens6} {
		slices.Sort(*l)
		slices.Reverse(*l)
		*l = slices.Compact(*l)
	}
	x.svc = s
	return x
}

// lookup returns the entry of the most specific prefix that holds a (a
// masked address with each length present: at most 33 map lookups for
// IPv4, 129 for IPv6, a handful in practice), nil when none does.
func (s *serviceIndex) lookup(a netip.Addr) *serviceEntry {
	if s == nil {
		return nil
	}
	a = a.Unmap()
	lens := s.lens6
	if a.Is4() {
		lens = s.lens4
	}
	for _, l := range lens {
		p, err := a.Prefix(l)
		if err != nil {
			continue
		}
		if e := s.at[p]; e != nil {
			return e
		}
	}
	return nil
}

// namesService reports whether the User-Agent header ua names one of
// services as a product token: case-insensitively, as a whole token, or
// followed by '-' (the hyphen fallback of robots.txt groups: the service
// "Googlebot" covers the header's "Googlebot-Image").
func namesService(ua string, services []string) bool {
	for _, s := range services {
		for i := 0; i+len(s) <= len(ua); i++ {
			if lowerByte(ua[i]) != lowerByte(s[0]) || !strings.EqualFold(ua[i:i+len(s)], s) {
				continue
			}
			end := i + len(s)
			if (i == 0 || !tokenByte(lowerByte(ua[i-1]))) && (end == len(ua) || ua[end] == '-' || !tokenByte(lowerByte(ua[end]))) {
				return true
			}
		}
	}
	return false
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
