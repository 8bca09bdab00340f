package identity

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/robotsguard/robotsguard/policy"
)

// serviceIndex is one feed's entries, for a feed where an entry lists
// services (JAFAR): it finds the most specific prefix that holds an
// address (JAFAR §3.3: when several entries of a document hold an
// address, the one with the longest prefix speaks for it).
type serviceIndex struct {
	src          string // the feed, for explanations
	lens4, lens6 []int  // the prefix lengths present, longest first
	at           map[netip.Prefix]*serviceEntry
	// own reports that some entry lists a service that is one of the
	// operator's product tokens (see serviceEntry.own).
	own bool
}

// serviceEntry is what a feed's entry says of its addresses.
type serviceEntry struct {
	prefix   netip.Prefix
	services []string
	// all: an entry of this prefix names no services (or more than are
	// read), so it stands for all of the operator's clients.
	all bool
	// own: a service is one of the operator's tokens, so an address here
	// verifies only a header that names one of the services (names).
	// Services that name none of its tokens narrow nothing.
	own   bool
	names *policy.Robots // a group of the services, matched as robots.txt groups are
}

// narrows reports whether the entry limits which of the operator's
// crawlers its addresses verify.
func (e *serviceEntry) narrows() bool { return e.own && !e.all }

// feedDoc is a loaded feed's document and source, for building indexes.
type feedDoc struct {
	src string
	doc *FeedDocument
}

// buildOpIndex is the index of an operator's loaded feeds: their prefixes
// merged for contains, and, for each feed where an entry lists services,
// a serviceIndex of its own (the most specific prefix is looked for
// within one document, as JAFAR says; an address verifies a claim when
// any feed that holds it does). names reports whether a service names one
// of the operator's tokens.
func buildOpIndex(docs []feedDoc, names func(string) bool) *rangeIndex {
	var all, plain []netip.Prefix
	var withServices []feedDoc
	for _, d := range docs {
		listed := false
		for _, e := range d.doc.Prefixes {
			all = append(all, e.Prefix)
			listed = listed || e.Services != nil
		}
		if !listed {
			for _, e := range d.doc.Prefixes {
				plain = append(plain, e.Prefix)
			}
			continue
		}
		withServices = append(withServices, d)
	}
	x := buildIndex(all)
	if len(withServices) == 0 {
		return x
	}
	x.plain = buildIndex(plain)
	matchers := make(map[string]*policy.Robots) // one per list of services
	for _, d := range withServices {
		x.svcs = append(x.svcs, buildServiceIndex(d, names, matchers))
	}
	return x
}

// buildServiceIndex indexes one feed's entries.
func buildServiceIndex(d feedDoc, names func(string) bool, matchers map[string]*policy.Robots) *serviceIndex {
	s := &serviceIndex{src: d.src, at: make(map[netip.Prefix]*serviceEntry, len(d.doc.Prefixes))}
	owned := make(map[*serviceEntry][]string) // each entry's services that are the operator's tokens
	for _, e := range d.doc.Prefixes {
		se := s.at[e.Prefix] // the same prefix in two entries: what both say
		if se == nil {
			se = &serviceEntry{prefix: e.Prefix}
			s.at[e.Prefix] = se
		}
		se.all = se.all || e.Services == nil
		for _, name := range e.Services {
			if slices.Contains(se.services, name) {
				continue
			}
			se.services = append(se.services, name)
			if tokenRE.MatchString(name) && names(name) {
				se.own, s.own = true, true
				owned[se] = append(owned[se], name)
			}
		}
		if p := e.Prefix; p.Addr().Is4() {
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
	for _, se := range s.at {
		se.services = slices.Clip(se.services)
		if se.narrows() {
			key := strings.Join(owned[se], " ") // product tokens hold no space
			if se.names = matchers[key]; se.names == nil {
				se.names = tokensMatcher(owned[se])
				matchers[key] = se.names
			}
		}
	}
	return s
}

// lookup returns the entry of the most specific prefix that holds a (a
// masked address with each length present: at most 33 map lookups for
// IPv4, 129 for IPv6, a handful in practice), nil when none does.
func (s *serviceIndex) lookup(a netip.Addr) *serviceEntry {
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

// admits reports whether the entry's addresses verify a claim made by the
// header ua: the entry does not narrow, or ua names one of its services.
func (e *serviceEntry) admits(ua string) bool {
	return !e.narrows() || e.names.Agent(ua).Specific()
}

// servicesVerdict is the verdict of an operator's feeds on a claim by the
// header ua from addr, which their merged prefixes hold: verified when a
// feed without services holds it, or a feed whose most specific entry for
// it admits ua (that entry and its feed are returned; nil for a feed
// without services). Otherwise the refusing entry and its feed are
// returned (spoofed: the publisher says these addresses are its other
// crawlers').
func (x *rangeIndex) servicesVerdict(addr netip.Addr, ua string) (ok bool, e *serviceEntry, src string) {
	if x.svcs == nil || ua == "" || x.plain.contains(addr) {
		return true, nil, ""
	}
	var refusing *serviceEntry
	for _, s := range x.svcs {
		switch se := s.lookup(addr); {
		case se == nil:
		case se.admits(ua):
			return true, se, s.src
		default:
			refusing, src = se, s.src
		}
	}
	return refusing == nil, refusing, src
}
