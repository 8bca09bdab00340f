package identity

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
)

// Bounds of a feed. A prefix shorter than the minimum would cover a large
// part of the Internet; no operator publishes one, so it is taken for a
// broken or hostile feed.
const (
	MaxFeedBytes  = 4 << 20
	MaxFeedRanges = 100000
	minV4Bits     = 8
	minV6Bits     = 16
)

// Bounds of a prefix entry's services (JAFAR): an entry with more, or a
// longer name, is read as naming none.
const (
	maxServices      = 32
	maxServiceLength = 128
)

// FeedDocument is a parsed IP-range feed.
type FeedDocument struct {
	// CreationTime is the feed's creationTime, as written.
	CreationTime string
	// SyncToken is the feed's synctoken (JAFAR) or syncToken (Google's
	// feeds), "" when absent.
	SyncToken string
	// Prefixes are the feed's valid entries, in its order, host bits
	// cleared.
	Prefixes []FeedPrefix
	// Ignored counts the entries that were not read: with both or neither
	// of ipv4Prefix and ipv6Prefix (which JAFAR tells consumers to
	// ignore), or a prefix that does not parse or is of the other family.
	Ignored int
	// UnreadServices counts the entries whose services were not read
	// (more than 32, or a name empty or longer than 128 bytes, or not
	// strings): their prefixes are read as naming no service.
	UnreadServices int
}

// FeedPrefix is one entry of a feed: a prefix and the services its
// publisher lists for it (JAFAR's "services", e.g. ["GPTBot"]; nil when
// the entry names none, so that it stands for all of the publisher's
// clients).
type FeedPrefix struct {
	Prefix   netip.Prefix
	Services []string
}

// ParseFeed reads an IP-range feed: a JAFAR document
// (draft-illyes-webbotauth-jafar-00) or one in Google's shape, of which
// JAFAR is the extension:
//
//	{"creationTime": "2026-11-01T00:00:00Z", "synctoken": "1", "prefixes": [
//		{"ipv4Prefix": "66.249.64.0/27", "services": ["Googlebot"]},
//		{"ipv6Prefix": "2001:4860:4801:10::/64"}]}
//
// It wants one JSON object with a "prefixes" array (empty is allowed:
// JAFAR lets a publisher with no active ranges say so); members it does
// not know are ignored, as JAFAR asks. An entry must hold exactly one of
// ipv4Prefix and ipv6Prefix, a CIDR prefix of that family; one that does
// not is ignored and counted (FeedDocument.Ignored), and a feed whose
// entries are all ignored is refused. A prefix shorter than /8 (IPv4) or
// /16 (IPv6) refuses the whole feed: no operator publishes one, so it is
// taken for a broken or hostile feed. Host bits are cleared.
func ParseFeed(b []byte) (*FeedDocument, error) {
	if len(b) > MaxFeedBytes {
		return nil, fmt.Errorf("feed is larger than %d bytes", MaxFeedBytes)
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	var doc struct {
		CreationTime *string            `json:"creationTime"`
		SyncToken    *string            `json:"synctoken"`
		Prefixes     *[]json.RawMessage `json:"prefixes"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON feed: %w", err)
	}
	if doc.Prefixes == nil {
		return nil, errors.New(`no "prefixes" array`)
	}
	if len(*doc.Prefixes) > MaxFeedRanges {
		return nil, fmt.Errorf("more than %d prefixes", MaxFeedRanges)
	}
	d := &FeedDocument{Prefixes: make([]FeedPrefix, 0, len(*doc.Prefixes))}
	if doc.CreationTime != nil {
		d.CreationTime = *doc.CreationTime
	}
	if doc.SyncToken != nil {
		d.SyncToken = *doc.SyncToken
	}
	names := make(map[string]string) // one copy of each service name
	for i, raw := range *doc.Prefixes {
		e, ok, unread := parseFeedPrefix(raw, names)
		if !ok {
			d.Ignored++
			continue
		}
		if unread {
			d.UnreadServices++
		}
		if p := e.Prefix; p.Addr().Is4() && p.Bits() < minV4Bits || p.Addr().Is6() && p.Bits() < minV6Bits {
			return nil, fmt.Errorf("prefixes[%d]: %s is too wide (at least /%d for IPv4, /%d for IPv6)", i, p, minV4Bits, minV6Bits)
		}
		d.Prefixes = append(d.Prefixes, e)
	}
	if len(d.Prefixes) == 0 && d.Ignored > 0 {
		return nil, fmt.Errorf("none of its %d prefix entries is valid (each needs exactly one of ipv4Prefix and ipv6Prefix, a CIDR prefix of that family)", d.Ignored)
	}
	return d, nil
}

// parseFeedPrefix reads one entry of a feed's prefixes: false for an
// entry to ignore; unread when its services were not read (the prefix
// then names none). names interns the service names.
func parseFeedPrefix(raw json.RawMessage, names map[string]string) (out FeedPrefix, ok, unread bool) {
	var e struct {
		V4       *string         `json:"ipv4Prefix"`
		V6       *string         `json:"ipv6Prefix"`
		Services json.RawMessage `json:"services"`
	}
	if json.Unmarshal(raw, &e) != nil || (e.V4 == nil) == (e.V6 == nil) {
		return out, false, false
	}
	s, v4 := "", e.V4 != nil
	if v4 {
		s = *e.V4
	} else {
		s = *e.V6
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Addr().Is4In6() || v4 != p.Addr().Is4() {
		return out, false, false
	}
	out.Prefix = p.Masked()
	if len(e.Services) == 0 || string(e.Services) == "null" {
		return out, true, false
	}
	var list []string
	if json.Unmarshal(e.Services, &list) != nil || len(list) > maxServices {
		return out, true, true
	}
	if len(list) == 0 {
		return out, true, false
	}
	out.Services = make([]string, 0, len(list))
	for _, name := range list {
		if name == "" || len(name) > maxServiceLength {
			out.Services = nil
			return out, true, true
		}
		if n, ok := names[name]; ok {
			name = n
		} else {
			names[name] = name
		}
		out.Services = append(out.Services, name)
	}
	return out, true, false
}

// u128 is an IPv6 address as a number.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

func (a u128) next() (u128, bool) {
	if a.lo == ^uint64(0) {
		if a.hi == ^uint64(0) {
			return a, false
		}
		return u128{a.hi + 1, 0}, true
	}
	return u128{a.hi, a.lo + 1}, true
}

type span4 struct{ lo, hi uint32 }
type span6 struct{ lo, hi u128 }

// rangeIndex is the union of an operator's loaded prefixes as sorted,
// merged, disjoint spans: a lookup is a binary search that does not
// allocate.
type rangeIndex struct {
	v4 []span4
	v6 []span6
	// When an entry of the operator's feeds lists services: plain holds
	// the prefixes of its feeds that list none, svcs one index per feed
	// that does (nil otherwise).
	plain *rangeIndex
	svcs  []*serviceIndex
	// loaded counts the operator's feeds whose copies the index holds, so
	// that "every feed loaded" and the prefixes come from one snapshot.
	loaded int
}

type indexPtr = atomic.Pointer[rangeIndex]

func to128(a netip.Addr) u128 {
	b := a.As16()
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// buildIndex merges prefixes into an index.
func buildIndex(prefixes []netip.Prefix) *rangeIndex {
	x := &rangeIndex{}
	for _, p := range prefixes {
		if p.Addr().Is4() {
			a := p.Addr().As4()
			lo := binary.BigEndian.Uint32(a[:])
			hi := lo | uint32(uint64(1)<<(32-p.Bits())-1)
			x.v4 = append(x.v4, span4{lo, hi})
			continue
		}
		lo := to128(p.Addr())
		hi := lo
		host := 128 - p.Bits()
		switch {
		case host >= 64:
			hi.lo = ^uint64(0)
			hi.hi |= uint64(1)<<(host-64) - 1
			if host == 128 {
				hi.hi = ^uint64(0)
			}
		default:
			hi.lo |= uint64(1)<<host - 1
		}
		x.v6 = append(x.v6, span6{lo, hi})
	}
	slices.SortFunc(x.v4, func(a, b span4) int { return cmp.Compare(a.lo, b.lo) })
	m4 := x.v4[:0]
	for _, s := range x.v4 {
		if n := len(m4); n > 0 && (s.lo <= m4[n-1].hi || m4[n-1].hi != ^uint32(0) && s.lo == m4[n-1].hi+1) {
			m4[n-1].hi = max(m4[n-1].hi, s.hi)
			continue
		}
		m4 = append(m4, s)
	}
	x.v4 = slices.Clip(m4)
	slices.SortFunc(x.v6, func(a, b span6) int {
		switch {
		case a.lo.less(b.lo):
			return -1
		case b.lo.less(a.lo):
			return 1
		}
		return 0
	})
	m6 := x.v6[:0]
	for _, s := range x.v6 {
		if n := len(m6); n > 0 {
			last := &m6[n-1]
			nx, ok := last.hi.next()
			if !ok || !nx.less(s.lo) { // s.lo <= last.hi+1
				if last.hi.less(s.hi) {
					last.hi = s.hi
				}
				continue
			}
		}
		m6 = append(m6, s)
	}
	x.v6 = slices.Clip(m6)
	return x
}

// contains reports whether a lies in the index.
func (x *rangeIndex) contains(a netip.Addr) bool {
	if x == nil {
		return false
	}
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		v := binary.BigEndian.Uint32(b[:])
		lo, hi := 0, len(x.v4)
		for lo < hi { // first span with lo > v
			m := int(uint(lo+hi) >> 1)
			if x.v4[m].lo <= v {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo > 0 && v <= x.v4[lo-1].hi
	}
	v := to128(a)
	lo, hi := 0, len(x.v6)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !v.less(x.v6[m].lo) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo > 0 && !x.v6[lo-1].hi.less(v)
}
