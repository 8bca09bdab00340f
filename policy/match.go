package policy

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
)

// Patterns are compiled into one radix trie per rule set. A pattern
// without '*' ends at a trie node. A pattern with '*' is split at its
// first '*': the literal head is a trie path and the rest (literal
// segments, each preceded by a '*', and an optional '$') hangs off the node
// where the head ends, in a list sorted best first.
//
// Matching walks the trie once along the target (one deterministic path,
// linear in the target length), collecting the rules that end on the path.
// Then, for the wildcard lists met on the way, each pattern's remaining
// segments are searched for left to right, each at its leftmost occurrence
// after the previous one. Leftmost placement is always optimal for
// patterns whose only operator is '*', so one pass per pattern decides it
// without backtracking: the work is linear in the target length for every
// pattern. Lists are sorted by the verdict order (priority, then Allow,
// then file order), so a list is abandoned as soon as none of its
// remaining patterns could change the verdict, and a 128-bit byte filter
// skips patterns that need a byte the target does not have.

// node is a compiled trie node: a literal label, then a branch point.
type node struct {
	lab0, lab1 int32 // label = matcher.lab[lab0:lab1]
	kid0, kid1 int32 // children in matcher.kids / matcher.kidb, sorted by first byte
	st0, st1   int32 // wildcard patterns whose head ends here, scanned: matcher.stars[st0:st1]
	ix         int32 // more of them, indexed by a bigram: matcher.ix[ix], or -1

	// Star-free rules that end here: pref* match any continuation, end*
	// ($) only the end of the target. -1 when none. first* is the lowest
	// rule index ending here (file order), used by Lint to model
	// first-match parsers.
	prefAllow, prefDis, endAllow, endDis int32
	firstPref, firstEnd                  int32
}

// starPat is the part of a wildcard pattern after its first '*'.
type starPat struct {
	rule       int32
	prio       int32
	allow      bool
	anchored   bool      // the pattern ends in '$'
	seg0, seg1 int32     // literal segments: matcher.segs[seg0:seg1]
	need       [2]uint64 // the bytes the segments contain (ASCII; canonical forms are ASCII)
	bg         [4]uint16 // bigramBit of up to four bigrams of the segments, rarest first
	nbg        uint8
}

// span is a range of matcher.lab.
type span struct{ lo, hi int32 }

// matcher holds the flattened tries of all rule sets of a Robots.
type matcher struct {
	nodes []node
	lab   []byte
	kids  []int32
	kidb  []byte
	stars []starPat
	segs  []span

	// Bigram indexes of long wildcard lists (see starIndex).
	ix      []starIndex
	buckets []int32 // per index, popcount(occ)+1 offsets into bidx
	bidx    []int32 // indices into stars, each bucket sorted best first
}

// starIndex indexes the wildcard patterns of one trie node by the rarest
// bigram (two adjacent bytes) of their segments, so that only the patterns
// whose bigram occurs in the target are tried. Files such as shopify.com's
// have hundreds of "/*..." patterns; trying them all for every request
// would cost microseconds.
type starIndex struct {
	occ  [bigramWords]uint64 // bit h: some pattern's key bigram has bigramBit h
	rank [bigramWords]uint16 // buckets before word w of occ
	b0   int32               // buckets[b0:] holds popcount(occ)+1 offsets
	need starPat             // need: the bytes that every indexed pattern needs
	top  starPat             // the best indexed pattern (priority, kind, rule)
}

const (
	bigramBits  = 10 // bigram sets are 1<<bigramBits-bit Bloom filters
	bigramWords = 1 << bigramBits / 64
	minIndexed  = 8 // the length from which a node's wildcard list is indexed
	maxBigrams  = 4 // bigrams per pattern in its filter
)

// bigramBit maps the bigram (a, b) to a bit of a bigram set.
func bigramBit(a, b byte) uint32 {
	return (uint32(a)<<8 | uint32(b)) * 0x9E3779B1 >> (32 - bigramBits)
}

// bnode is a trie node while building.
type bnode struct {
	label []byte
	kids  []*bnode
	// idx finds a kid by its first byte (index + 1; 0 for none) once a
	// node has idxFrom kids: a trie level of hundreds of kids (a file with
	// thousands of paths) is not scanned once per inserted pattern.
	idx *[256]uint16
	// kidb holds the first bytes of the first idxFrom kids, so that a
	// node without an index finds a kid in its own bytes rather than by
	// following each kid's pointer and label.
	kidb [idxFrom]byte
	// stars are the wildcard patterns whose head ends here:
	// trieBuilder.starLists[stars-1], 0 for none (most nodes), so that
	// a node does not carry a slice header for them.
	stars int32
	term  [4]int32 // prefAllow, prefDis, endAllow, endDis
	first [2]int32
}

// bstar is a starPat while building.
type bstar struct {
	rule     int32
	anchored bool
	segs     [][]byte
}

type trieBuilder struct {
	m       matcher
	buf     []byte
	arena   []byte // backing store of the builder's pattern bytes
	segs    [][]byte
	slab    []bnode  // backing store of the builder's nodes
	sortBuf []*bnode // scratch of sortKids
	kidSlab []*bnode // backing store of the first kids (firstKid)
	// starLists are the nodes' wildcard patterns (bnode.stars).
	starLists [][]bstar
}

// idxFrom is the number of kids from which a node gets an index.
const idxFrom = 16

// node returns a new node from the builder's slab, so that a trie of
// thousands of nodes does not cost an allocation each. Slabs start at 16
// nodes and double up to 1,024.
func (b *trieBuilder) node(label []byte) *bnode {
	if len(b.slab) == cap(b.slab) {
		b.slab = make([]bnode, 0, min(1024, max(16, 2*cap(b.slab))))
	}
	b.slab = append(b.slab, bnode{label: label, term: [4]int32{-1, -1, -1, -1}, first: [2]int32{-1, -1}})
	return &b.slab[len(b.slab)-1]
}

// alloc returns n bytes of the builder's arena, so that the patterns of a
// large file do not cost one allocation each. Chunks start at 1 KiB and
// double up to 64 KiB: a small file does not pay for a large one's chunk
// (drupal.txt's 2 KB of patterns took a 64 KiB chunk, 83 % of its parse's
// bytes).
func (b *trieBuilder) alloc(n int) []byte {
	if cap(b.arena)-len(b.arena) < n {
		b.arena = make([]byte, 0, max(n, min(64<<10, max(1<<10, 2*cap(b.arena)))))
	}
	lo := len(b.arena)
	b.arena = b.arena[:lo+n]
	return b.arena[lo : lo : lo+n]
}

// firstKid returns a kid list of k alone, carved from the builder's slab
// with room for a second kid: most nodes have one or two, so a trie of
// thousands of nodes does not allocate a list for each; a third kid moves
// the list out of the slab (append copies it).
func (b *trieBuilder) firstKid(k *bnode) []*bnode {
	if cap(b.kidSlab)-len(b.kidSlab) < 2 {
		b.kidSlab = make([]*bnode, 0, min(2048, max(32, 2*cap(b.kidSlab))))
	}
	lo := len(b.kidSlab)
	b.kidSlab = append(b.kidSlab, k, nil)
	return b.kidSlab[lo : lo+1 : lo+2]
}

func newTrieBuilder() *trieBuilder { return &trieBuilder{} }

// Literal '$' and '*' of a target are matched as these two bytes, which no
// normalised form contains otherwise (control bytes are percent-encoded):
// escaping them as %24 and %2A would let a pattern such as "*2" match the
// '2' of an escape the client never sent.
const (
	litDollar = 0x01
	litStar   = 0x02
)

// maxEscapeChoices is how many %24 / %2A escapes of one pattern may also
// match a literal '$' / '*' of the target (SEMANTICS.md §6): each one
// doubles the compiled variants of the pattern, so the count is capped;
// later escapes match only themselves.
const maxEscapeChoices = 3

// canonicalPattern turns a pattern into the literal segments between its
// '*'s, in the byte form in which targets are matched: normalised, with a
// '$' that is not last written litDollar. anchored reports a final '$'.
// The pattern's first maxEscapeChoices %24 and %2A escapes are choices:
// bit i of variant makes the i-th one match the literal byte
// (litDollar, litStar) instead of the escape itself; choices reports how
// many there are (compile variants 0 to 1<<min(choices, maxEscapeChoices)-1).
//
// The segments are appended to segs[:0] and their bytes carved from out,
// which must have room for 3*len(pattern) bytes; both may be nil.
func canonicalPattern(buf []byte, pattern string, segs [][]byte, out []byte, variant uint) (_ [][]byte, anchored bool, choices int, _ []byte) {
	segs = segs[:0]
	if pattern != "" && pattern[len(pattern)-1] == '$' {
		anchored = true
		pattern = pattern[:len(pattern)-1]
	}
	buf = appendNormalized(buf[:0], pattern, false)
	if out == nil {
		out = make([]byte, 0, 3*len(pattern))
	}
	if !hasPatternSyntax(buf) {
		// One literal segment, as most patterns are.
		out = append(out, buf...)
		return append(segs, out[:len(out):len(out)]), anchored, 0, buf
	}
	start := 0
	for i := 0; i < len(buf); i++ {
		c := buf[i]
		switch {
		case c == '*':
			segs = append(segs, out[start:len(out):len(out)])
			start = len(out)
		case c == '$':
			out = append(out, litDollar)
		case c == '%' && i+2 < len(buf) && buf[i+1] == '2' && (buf[i+2] == '4' || buf[i+2] == 'A'):
			if choices < maxEscapeChoices && variant&(1<<choices) != 0 {
				if buf[i+2] == '4' {
					out = append(out, litDollar)
				} else {
					out = append(out, litStar)
				}
			} else {
				out = append(out, buf[i:i+3]...)
			}
			choices++
			i += 2
		default:
			out = append(out, c)
		}
	}
	segs = append(segs, out[start:len(out):len(out)])
	return segs, anchored, choices, buf
}

// build compiles the rules with the given indices into a trie and returns
// its root.
func (b *trieBuilder) build(rules []Rule, ids []int32, implied map[int32]int32) int32 {
	root := b.node(nil)
	insert := func(segs [][]byte, anchored bool, ri int32) {
		n := b.insertLiteral(root, segs[0])
		rest := segs[1:]
		if allEmpty(rest) {
			// "/a*" and "/a*$" match what the prefix "/a" matches.
			anchored = anchored && len(rest) == 0
			rest = nil
		}
		if len(rest) > 0 {
			// "**" is one '*': drop empty segments but the last (a
			// trailing '*' or "*$" matches anything).
			kept := make([][]byte, 0, len(rest))
			for i, s := range rest {
				if len(s) > 0 || i == len(rest)-1 {
					kept = append(kept, s)
				}
			}
			if n.stars == 0 {
				b.starLists = append(b.starLists, nil)
				n.stars = int32(len(b.starLists))
			}
			b.starLists[n.stars-1] = append(b.starLists[n.stars-1], bstar{rule: ri, anchored: anchored, segs: kept})
			return
		}
		slot, fslot := 0, 0
		if anchored {
			slot, fslot = 2, 1
		}
		if rules[ri].Kind == Disallow {
			slot++
		}
		if old := n.term[slot]; old < 0 || rules[ri].Priority > rules[old].Priority {
			n.term[slot] = ri
		}
		// Implied rules do not exist for first-match parsers (Lint).
		if !rules[ri].Implied && (n.first[fslot] < 0 || ri < n.first[fslot]) {
			n.first[fslot] = ri
		}
	}
	for _, ri := range ids {
		rule := &rules[ri]
		p := rule.Pattern
		if p != "" && p[0] != '/' && p[0] != '*' {
			continue // never matches (SEMANTICS.md §6)
		}
		b.insertVariants(p, false, ri, insert)
		// Index.html rule (SEMANTICS.md §7): Allow: <prefix>/index.htm...
		// also allows <prefix>/ exactly, ranked at the length of the
		// implied pattern "<prefix>/$" (see Robots.addImplied).
		if ii, ok := implied[ri]; ok {
			b.insertVariants(rules[ii].Pattern, false, ii, insert)
		}
	}
	return b.flatten(rules, root)
}

func allEmpty(segs [][]byte) bool {
	for _, s := range segs {
		if len(s) > 0 {
			return false
		}
	}
	return true
}

// insertVariants inserts every compiled variant of pattern p (see
// canonicalPattern); anchor forces a final '$'.
func (b *trieBuilder) insertVariants(p string, anchor bool, ri int32, insert func([][]byte, bool, int32)) {
	// A pattern with no byte to encode keeps its length; another may
	// grow to three times it.
	need := len(p)
	if !plain(p) {
		need = 3 * len(p)
	}
	for v, n := uint(0), uint(1); v < n; v++ {
		segs, anchored, choices, buf := canonicalPattern(b.buf, p, b.segs, b.alloc(need), v)
		b.buf, b.segs = buf, segs
		n = 1 << min(choices, maxEscapeChoices)
		insert(segs, anchored || anchor, ri)
	}
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// insertLiteral walks or extends the radix trie below n along seg and
// returns the node at which seg ends.
func (b *trieBuilder) insertLiteral(n *bnode, seg []byte) *bnode {
	for len(seg) > 0 {
		var k *bnode
		if n.idx != nil {
			if i := n.idx[seg[0]]; i > 0 {
				k = n.kids[i-1]
			}
		} else if i := bytes.IndexByte(n.kidb[:len(n.kids)], seg[0]); i >= 0 {
			k = n.kids[i]
		}
		if k == nil {
			k = b.node(seg)
			if len(n.kids) < idxFrom {
				n.kidb[len(n.kids)] = seg[0]
			}
			if n.kids == nil {
				n.kids = b.firstKid(k)
			} else {
				n.kids = append(n.kids, k)
			}
			switch {
			case n.idx != nil:
				n.idx[seg[0]] = uint16(len(n.kids))
			case len(n.kids) == idxFrom:
				n.idx = new([256]uint16)
				for i, c := range n.kids {
					n.idx[c.label[0]] = uint16(i + 1)
				}
			}
			return k
		}
		common := commonPrefix(k.label, seg)
		if common < len(k.label) {
			// Split k: its tail moves into a new child.
			tail := b.node(k.label[common:])
			tail.kids, tail.kidb, tail.idx, tail.stars, tail.term, tail.first = k.kids, k.kidb, k.idx, k.stars, k.term, k.first
			k.label = k.label[:common]
			k.kids, k.idx = b.firstKid(tail), nil
			k.kidb[0] = tail.label[0]
			k.stars = 0
			k.term = [4]int32{-1, -1, -1, -1}
			k.first = [2]int32{-1, -1}
		}
		n = k
		seg = seg[common:]
	}
	return n
}

// commonPrefix returns the length of the longest common prefix of a and
// b, comparing eight bytes at a time (labels of long paths share dozens).
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// flatten appends the trie below root to the matcher and returns the
// root's index.
func (b *trieBuilder) flatten(rules []Rule, root *bnode) int32 {
	m := &b.m
	// The nodes, their kids and their labels are counted first, so that
	// the matcher's arrays grow once per trie.
	var nodes, labels int
	var count func(n *bnode)
	count = func(n *bnode) {
		nodes++
		labels += len(n.label)
		for _, k := range n.kids {
			count(k)
		}
	}
	count(root)
	m.nodes = slices.Grow(m.nodes, nodes)
	m.lab = slices.Grow(m.lab, labels)
	m.kids = slices.Grow(m.kids, nodes)
	m.kidb = slices.Grow(m.kidb, nodes)
	var visit func(n *bnode) int32
	visit = func(n *bnode) int32 {
		idx := int32(len(m.nodes))
		m.nodes = append(m.nodes, node{})
		lab0 := int32(len(m.lab))
		m.lab = append(m.lab, n.label...)
		nd := node{
			lab0: lab0, lab1: int32(len(m.lab)),
			prefAllow: n.term[0], prefDis: n.term[1], endAllow: n.term[2], endDis: n.term[3],
			firstPref: n.first[0], firstEnd: n.first[1],
		}
		// Best first: priority, then Allow, then file order (see
		// result.improves).
		var stars []bstar
		if n.stars > 0 {
			stars = b.starLists[n.stars-1]
		}
		if len(stars) > 1 {
			slices.SortStableFunc(stars, func(x, y bstar) int {
				a, b := &rules[x.rule], &rules[y.rule]
				switch {
				case a.Priority != b.Priority:
					return cmp.Compare(b.Priority, a.Priority)
				case a.Kind != b.Kind:
					if a.Kind == Allow {
						return -1
					}
					return 1
				}
				return cmp.Compare(x.rule, y.rule)
			})
		}
		nd.ix = -1
		var bgs [][]int
		if len(stars) > 0 {
			bgs = chooseBigrams(stars) // per pattern, rarest first
		}
		indexed := len(stars) >= minIndexed
		first := int32(len(m.stars))
		// Scanned patterns first, contiguous; indexed ones (those with a
		// bigram, in a long list) after them; both keep the sorted order.
		var scan, ixd []int
		for i := range stars {
			if indexed && len(bgs[i]) > 0 {
				ixd = append(ixd, i)
			} else {
				scan = append(scan, i)
			}
		}
		for _, i := range append(scan, ixd...) {
			s := stars[i]
			sp := starPat{
				rule: s.rule, prio: int32(rules[s.rule].Priority), allow: rules[s.rule].Kind == Allow,
				anchored: s.anchored, seg0: int32(len(m.segs)),
			}
			for _, seg := range s.segs {
				lo := int32(len(m.lab))
				m.lab = append(m.lab, seg...)
				m.segs = append(m.segs, span{lo, int32(len(m.lab))})
				for _, c := range seg {
					sp.need[c>>6&1] |= 1 << (c & 63)
				}
			}
			sp.seg1 = int32(len(m.segs))
			for _, k := range bgs[i] {
				sp.bg[sp.nbg] = uint16(bigramBit(byte(k>>8), byte(k)))
				sp.nbg++
			}
			m.stars = append(m.stars, sp)
		}
		nd.st0, nd.st1 = first, first+int32(len(scan))
		if len(ixd) > 0 {
			var lists [1 << bigramBits][]int32
			for j := range ixd {
				si := nd.st1 + int32(j)
				h := m.stars[si].bg[0]
				lists[h] = append(lists[h], si)
			}
			x := starIndex{b0: int32(len(m.buckets)), top: m.stars[nd.st1]}
			x.need.need = [2]uint64{^uint64(0), ^uint64(0)}
			for _, sp := range m.stars[nd.st1:] {
				x.need.need[0] &= sp.need[0]
				x.need.need[1] &= sp.need[1]
			}
			nb := 0
			for h, l := range lists {
				if h%64 == 0 {
					x.rank[h/64] = uint16(nb)
				}
				if len(l) > 0 {
					x.occ[h/64] |= 1 << (h % 64)
					m.buckets = append(m.buckets, int32(len(m.bidx)))
					m.bidx = append(m.bidx, l...) // best first, as m.stars
					nb++
				}
			}
			m.buckets = append(m.buckets, int32(len(m.bidx)))
			nd.ix = int32(len(m.ix))
			m.ix = append(m.ix, x)
		}
		b.sortKids(n)
		// The node is written whole before its kids are visited (while
		// its cache line is warm), with slots for its kids' indexes
		// reserved in m.kids; each visit below fills its slot.
		nd.kid0 = int32(len(m.kids))
		m.kids = append(m.kids, make([]int32, len(n.kids))...)
		m.kidb = append(m.kidb, n.kidb[:min(len(n.kids), idxFrom)]...)
		for _, k := range n.kids[min(len(n.kids), idxFrom):] {
			m.kidb = append(m.kidb, k.label[0])
		}
		nd.kid1 = int32(len(m.kids))
		m.nodes[idx] = nd
		for i, k := range n.kids {
			v := visit(k)
			m.kids[nd.kid0+int32(i)] = v
		}
		return idx
	}
	return visit(root)
}

func (b *trieBuilder) finish() matcher { return b.m }

// sortKids orders n's kids by first byte, keeping n.kidb in step: a node
// with an index lists them from the index (no comparisons), a smaller one
// is insertion-sorted on its own kidb bytes rather than by following each
// kid's label.
func (b *trieBuilder) sortKids(n *bnode) {
	if n.idx != nil {
		k := b.sortBuf[:0]
		for c := range 256 {
			if i := n.idx[c]; i > 0 {
				k = append(k, n.kids[i-1])
			}
		}
		copy(n.kids, k)
		b.sortBuf = k[:0]
		for i := range idxFrom {
			n.kidb[i] = n.kids[i].label[0]
		}
		return
	}
	for i := 1; i < len(n.kids); i++ {
		for j := i; j > 0 && n.kidb[j] < n.kidb[j-1]; j-- {
			n.kidb[j], n.kidb[j-1] = n.kidb[j-1], n.kidb[j]
			n.kids[j], n.kids[j-1] = n.kids[j-1], n.kids[j]
		}
	}
}

// chooseBigrams returns for each wildcard pattern (after its head) up to
// maxBigrams distinct bigrams of its segments, as a<<8|b, the ones that
// the fewest patterns of the list share first: the first is the pattern's
// index key, and the rarer the key the shorter its bucket.
func chooseBigrams(stars []bstar) [][]int {
	count := make(map[int]int)
	all := make([][]int, len(stars))
	for i, s := range stars {
		for _, seg := range s.segs {
			for j := 0; j+1 < len(seg); j++ {
				k := int(seg[j])<<8 | int(seg[j+1])
				if !slices.Contains(all[i], k) {
					all[i] = append(all[i], k)
					count[k]++
				}
			}
		}
	}
	for i, ks := range all {
		slices.SortStableFunc(ks, func(a, b int) int { return count[a] - count[b] })
		all[i] = ks[:min(len(ks), maxBigrams)]
	}
	return all
}

// size is the compiled size of the matcher, in bytes of labels plus
// entries of its tables; it grows at most linearly with the input.
func (m *matcher) size() int {
	return len(m.nodes) + len(m.lab) + len(m.kids) + len(m.stars) + len(m.segs) + len(m.buckets) + len(m.bidx) + len(m.ix)
}

// child returns the child of n whose label starts with c, or -1.
func (m *matcher) child(n *node, c byte) int32 {
	lo, hi := n.kid0, n.kid1
	if hi-lo <= 8 {
		for i := lo; i < hi; i++ {
			if m.kidb[i] == c {
				return m.kids[i]
			}
		}
		return -1
	}
	for lo < hi {
		mid := int32(uint32(lo+hi) >> 1)
		if m.kidb[mid] < c {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < n.kid1 && m.kidb[lo] == c {
		return m.kids[lo]
	}
	return -1
}

// result accumulates the rules that matched one target.
type result struct {
	allow, dis         int32 // best matching rule of each kind, -1 if none
	allowPrio, disPrio int
	first              int32 // lowest matching rule index (file order), -1 if none
}

func newResult() result {
	return result{allow: -1, dis: -1, allowPrio: -1, disPrio: -1, first: -1}
}

// take records a matching rule.
func (res *result) take(rules []Rule, ri int32) {
	r := &rules[ri]
	if r.Kind == Allow {
		if r.Priority > res.allowPrio || r.Priority == res.allowPrio && ri < res.allow {
			res.allow, res.allowPrio = ri, r.Priority
		}
	} else if r.Priority > res.disPrio || r.Priority == res.disPrio && ri < res.dis {
		res.dis, res.disPrio = ri, r.Priority
	}
}

// improves reports whether a matching wildcard rule would change the
// verdict or the deciding rule (see Robots.verdict). Along a list sorted
// best first it is true for a prefix of the list only.
func (res *result) improves(sp *starPat) bool {
	p := int(sp.prio)
	best := max(res.allowPrio, res.disPrio)
	if p != best {
		return p > best
	}
	if sp.allow {
		return res.allowPrio < p || sp.rule < res.allow
	}
	return res.allowPrio < p && sp.rule < res.dis
}

func (res *result) takeFirst(ri int32) {
	if ri >= 0 && (res.first < 0 || ri < res.first) {
		res.first = ri
	}
}

// reached records the prefix rules of node n, reached during matching.
func (m *matcher) reached(rules []Rule, n *node, res *result) {
	if n.prefAllow >= 0 {
		res.take(rules, n.prefAllow)
	}
	if n.prefDis >= 0 {
		res.take(rules, n.prefDis)
	}
	res.takeFirst(n.firstPref)
}

// ended records the '$' rules of node n, reached at the end of the target.
func (m *matcher) ended(rules []Rule, n *node, res *result) {
	if n.endAllow >= 0 {
		res.take(rules, n.endAllow)
	}
	if n.endDis >= 0 {
		res.take(rules, n.endDis)
	}
	res.takeFirst(n.firstEnd)
}

// starAt is a node with wildcard patterns met while walking, and the
// target offset at which its head ended.
type starAt struct{ n, off int32 }

// match records in res the rules of the trie at root that match the
// canonical target t. With all set, every matching rule is recorded (for
// Lint's first-match model); otherwise wildcard patterns that cannot
// change the verdict are skipped.
func (m *matcher) match(rules []Rule, root int32, t []byte, res *result, all bool) {
	var pending [8]starAt
	np := 0
	var have byteFilter
	n := &m.nodes[root]
	idx := root
	i := 0
	for {
		m.reached(rules, n, res)
		if n.st1 > n.st0 || n.ix >= 0 {
			if np < len(pending) {
				pending[np] = starAt{idx, int32(i)}
				np++
			} else {
				m.tryStars(rules, n, t, i, &have, res, all)
			}
		}
		if i == len(t) {
			m.ended(rules, n, res)
			break
		}
		k := m.child(n, t[i])
		if k < 0 {
			break
		}
		n, idx = &m.nodes[k], k
		lab := m.lab[n.lab0:n.lab1]
		if len(t)-i < len(lab) || !bytes.Equal(t[i:i+len(lab)], lab) {
			break
		}
		i += len(lab)
	}
	if np == 0 {
		return
	}
	// Deepest first: longer heads tend to make longer patterns.
	for j := np - 1; j >= 0; j-- {
		m.tryStars(rules, &m.nodes[pending[j].n], t, int(pending[j].off), &have, res, all)
	}
}

// byteFilter holds the set of bytes and the set of bigrams of the target,
// computed when first needed. Bytes of 0x80 and above fold onto ASCII,
// which only weakens the filter (canonical targets are ASCII anyway).
type byteFilter struct {
	set  [2]uint64
	bg   [bigramWords]uint64
	done bool
}

func (f *byteFilter) fill(t []byte) {
	for i, c := range t {
		f.set[c>>6&1] |= 1 << (c & 63)
		if i+1 < len(t) {
			h := bigramBit(c, t[i+1])
			f.bg[h/64] |= 1 << (h % 64)
		}
	}
	f.done = true
}

// lacks reports whether the target lacks a byte or a bigram that sp needs.
func (f *byteFilter) lacks(sp *starPat, t []byte) bool {
	if !f.done {
		f.fill(t)
	}
	if sp.need[0]&^f.set[0] != 0 || sp.need[1]&^f.set[1] != 0 {
		return true
	}
	for _, h := range sp.bg[:sp.nbg] {
		if f.bg[h/64]&(1<<(h%64)) == 0 {
			return true
		}
	}
	return false
}

// tryStars matches the wildcard patterns of node n against t[off:], the
// target after the pattern heads.
func (m *matcher) tryStars(rules []Rule, n *node, t []byte, off int, have *byteFilter, res *result, all bool) {
	if n.ix >= 0 && (all || res.improves(&m.ix[n.ix].top)) && !have.lacks(&m.ix[n.ix].need, t) {
		m.tryIndexed(rules, &m.ix[n.ix], t, off, have, res, all)
	}
	m.tryList(rules, m.stars[n.st0:n.st1], t, off, have, res, all)
}

// tryList tries a best-first list of wildcard patterns.
func (m *matcher) tryList(rules []Rule, list []starPat, t []byte, off int, have *byteFilter, res *result, all bool) {
	for i := range list {
		if m.try(rules, &list[i], t, off, have, res, all) {
			return
		}
	}
}

// tryIndexed tries the patterns of the buckets whose key bigram occurs in
// the target.
func (m *matcher) tryIndexed(rules []Rule, x *starIndex, t []byte, off int, have *byteFilter, res *result, all bool) {
	if !have.done {
		have.fill(t)
	}
	for w := range x.occ {
		hit := x.occ[w] & have.bg[w]
		for hit != 0 {
			b := bits.TrailingZeros64(hit)
			hit &= hit - 1
			r := x.b0 + int32(x.rank[w]) + int32(bits.OnesCount64(x.occ[w]&(1<<b-1)))
			for _, si := range m.bidx[m.buckets[r]:m.buckets[r+1]] {
				if m.try(rules, &m.stars[si], t, off, have, res, all) {
					break
				}
			}
		}
	}
}

// try matches the wildcard pattern sp of a best-first list against
// t[off:] and records it if it matches. It reports whether the rest of
// the list can be skipped: nothing after sp can change the verdict. In
// all mode (Lint) it never does, but it skips sp when sp can change
// neither the verdict nor the first match.
func (m *matcher) try(rules []Rule, sp *starPat, t []byte, off int, have *byteFilter, res *result, all bool) (done bool) {
	if !res.improves(sp) {
		if !all {
			return true
		}
		if res.first >= 0 && sp.rule > res.first {
			return false
		}
	}
	if have.lacks(sp, t) || !m.tail(sp, t[off:]) {
		return false
	}
	res.take(rules, sp.rule)
	if !rules[sp.rule].Implied { // not a rule for first-match parsers
		res.takeFirst(sp.rule)
	}
	return !all // the rest of the list is worse
}

// tail reports whether rest matches "*seg1*seg2...*segN" (and '$' when
// anchored). Each segment is placed at its leftmost occurrence after the
// previous one, which leaves the most room for the segments after it; the
// last segment of an anchored pattern must end the target instead.
func (m *matcher) tail(sp *starPat, rest []byte) bool {
	segs := m.segs[sp.seg0:sp.seg1]
	pos := 0
	for j, s := range segs {
		lab := m.lab[s.lo:s.hi]
		if j == len(segs)-1 && sp.anchored {
			return len(rest)-pos >= len(lab) && bytes.Equal(rest[len(rest)-len(lab):], lab)
		}
		k := bytes.Index(rest[pos:], lab)
		if k < 0 {
			return false
		}
		pos += k + len(lab)
	}
	return true
}

// scratch is the per-call working memory of Decide, pooled per Robots.
// A scratch is written at every decision by the P that holds it; it is
// padded to two cache lines so that scratches of different Ps, which the
// allocator places side by side, never share one (false sharing took 13 %
// of a two-core benchmark's CPU before).
type scratch struct {
	target []byte
	_      [128 - 24]byte
}

func newScratch() any { return &scratch{target: make([]byte, 0, 256)} }

// hasPatternSyntax reports whether a normalised pattern holds a byte that
// canonicalPattern treats specially: '*', '$' or the '%' of an escape.
func hasPatternSyntax(b []byte) bool {
	for _, c := range b {
		if c == '*' || c == '$' || c == '%' {
			return true
		}
	}
	return false
}
