package policy

import (
	"bytes"
	"sort"
)

// Patterns are compiled into one radix trie per rule set, with '*' as a
// special edge. Matching a target runs the trie as a Thompson NFA: the set
// of live positions advances one target byte at a time, so the work is
// linear in the target length for a given file, whatever the patterns,
// and there is no backtracking. A trie without '*' is walked as a plain
// deterministic trie. Patterns that share prefixes are matched once.

// node is a compiled trie node: a literal label, then a branch point.
type node struct {
	lab0, lab1 int32 // label = matcher.lab[lab0:lab1]
	slot       int32 // first of the node's len(label)+1 dedup slots
	kid0, kid1 int32 // children in matcher.kids / matcher.kidb, sorted by first byte
	star       int32 // child through '*', or -1
	isStar     bool  // the node was entered through '*' (it loops on any byte)

	// Rules that end here: pref* match any continuation, end* ($) only the
	// end of the target. -1 when none. first* is the lowest rule index
	// ending here (file order), used by Lint to model first-match parsers.
	prefAllow, prefDis, endAllow, endDis int32
	firstPref, firstEnd                  int32
}

// matcher holds the flattened tries of all rule sets of a Robots.
type matcher struct {
	nodes  []node
	lab    []byte
	kids   []int32
	kidb   []byte
	nslots int
	star   bool // some rule set has a '*'
}

// bnode is a trie node while building.
type bnode struct {
	label  []byte
	isStar bool
	kids   []*bnode
	star   *bnode
	term   [4]int32 // prefAllow, prefDis, endAllow, endDis
	first  [2]int32
	index  int32
}

func newBnode(label []byte, isStar bool) *bnode {
	return &bnode{label: label, isStar: isStar, term: [4]int32{-1, -1, -1, -1}, first: [2]int32{-1, -1}}
}

type trieBuilder struct {
	m   matcher
	buf []byte
}

func newTrieBuilder() *trieBuilder { return &trieBuilder{} }

// canonicalPattern turns a pattern into the literal segments between its
// '*'s, in the byte form in which targets are matched: normalised, with a
// '$' that is not last written %24. anchored reports a final '$'.
func canonicalPattern(buf []byte, pattern string) (segs [][]byte, anchored bool, _ []byte) {
	if pattern != "" && pattern[len(pattern)-1] == '$' {
		anchored = true
		pattern = pattern[:len(pattern)-1]
	}
	buf = appendNormalized(buf[:0], pattern, false)
	// Within the normalised pattern, '*' is a wildcard and '$' a literal.
	out := make([]byte, 0, len(buf)+8)
	start := 0
	for _, c := range buf {
		switch c {
		case '*':
			segs = append(segs, out[start:len(out):len(out)])
			start = len(out)
			continue
		case '$':
			out = append(out, '%', '2', '4')
			continue
		}
		out = append(out, c)
	}
	segs = append(segs, out[start:len(out):len(out)])
	return segs, anchored, buf
}

// build compiles the rules with the given indices into a trie and returns
// its root and whether it holds a '*'.
func (b *trieBuilder) build(rules []Rule, ids []int32) (int32, bool) {
	root := newBnode(nil, false)
	hasStar := false
	insert := func(segs [][]byte, anchored bool, ri int32) {
		n := root
		for i, seg := range segs {
			if i > 0 && !n.isStar { // "**" is one '*'
				if n.star == nil {
					n.star = newBnode(nil, true)
				}
				n = n.star
				hasStar = true
			} else if i > 0 {
				hasStar = true
			}
			n = insertLiteral(n, seg)
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
		if n.first[fslot] < 0 || ri < n.first[fslot] {
			n.first[fslot] = ri
		}
	}
	for _, ri := range ids {
		rule := &rules[ri]
		p := rule.Pattern
		if p != "" && p[0] != '/' && p[0] != '*' {
			continue // never matches (SEMANTICS.md §6)
		}
		var segs [][]byte
		var anchored bool
		segs, anchored, b.buf = canonicalPattern(b.buf, p)
		insert(segs, anchored, ri)
		// Index.html rule (SEMANTICS.md §7): Allow: <prefix>/index.htm...
		// also allows <prefix>/ exactly, at the Allow's own priority.
		if rule.Kind == Allow {
			if slash := lastSlash(p); slash >= 0 && hasPrefix(p[slash:], "/index.htm") {
				segs, _, b.buf = canonicalPattern(b.buf, p[:slash+1])
				insert(segs, true, ri)
			}
		}
	}
	return b.flatten(root), hasStar
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
func insertLiteral(n *bnode, seg []byte) *bnode {
	for len(seg) > 0 {
		var k *bnode
		for _, c := range n.kids {
			if c.label[0] == seg[0] {
				k = c
				break
			}
		}
		if k == nil {
			k = newBnode(seg, false)
			n.kids = append(n.kids, k)
			return k
		}
		common := 0
		for common < len(k.label) && common < len(seg) && k.label[common] == seg[common] {
			common++
		}
		if common < len(k.label) {
			// Split k: its tail moves into a new child.
			tail := &bnode{label: k.label[common:], kids: k.kids, star: k.star, term: k.term, first: k.first}
			k.label = k.label[:common]
			k.kids = []*bnode{tail}
			k.star = nil
			k.term = [4]int32{-1, -1, -1, -1}
			k.first = [2]int32{-1, -1}
		}
		n = k
		seg = seg[common:]
	}
	return n
}

// flatten appends the trie below root to the matcher and returns the
// root's index.
func (b *trieBuilder) flatten(root *bnode) int32 {
	m := &b.m
	var visit func(n *bnode) int32
	visit = func(n *bnode) int32 {
		idx := int32(len(m.nodes))
		m.nodes = append(m.nodes, node{})
		lab0 := int32(len(m.lab))
		m.lab = append(m.lab, n.label...)
		nd := node{
			lab0: lab0, lab1: int32(len(m.lab)), slot: int32(m.nslots),
			star: -1, isStar: n.isStar,
			prefAllow: n.term[0], prefDis: n.term[1], endAllow: n.term[2], endDis: n.term[3],
			firstPref: n.first[0], firstEnd: n.first[1],
		}
		m.nslots += len(n.label) + 1
		sort.Slice(n.kids, func(i, j int) bool { return n.kids[i].label[0] < n.kids[j].label[0] })
		kidIdx := make([]int32, len(n.kids))
		for i, k := range n.kids {
			kidIdx[i] = visit(k)
		}
		if n.star != nil {
			nd.star = visit(n.star)
			m.star = true
		}
		nd.kid0 = int32(len(m.kids))
		for i, k := range n.kids {
			m.kids = append(m.kids, kidIdx[i])
			m.kidb = append(m.kidb, k.label[0])
		}
		nd.kid1 = int32(len(m.kids))
		m.nodes[idx] = nd
		return idx
	}
	return visit(root)
}

func (b *trieBuilder) finish() matcher { return b.m }

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

// ended records the '$' rules of node n, live at the end of the target.
func (m *matcher) ended(rules []Rule, n *node, res *result) {
	if n.endAllow >= 0 {
		res.take(rules, n.endAllow)
	}
	if n.endDis >= 0 {
		res.take(rules, n.endDis)
	}
	res.takeFirst(n.firstEnd)
}

// walk matches the canonical target t against a trie without '*': a single
// path down the trie.
func (m *matcher) walk(rules []Rule, root int32, t []byte, res *result) {
	n := &m.nodes[root]
	m.reached(rules, n, res)
	i := 0
	for {
		// At the end of n's label.
		if i == len(t) {
			m.ended(rules, n, res)
			return
		}
		k := m.child(n, t[i])
		if k < 0 {
			return
		}
		n = &m.nodes[k]
		lab := m.lab[n.lab0:n.lab1]
		if len(t)-i < len(lab) || !bytes.Equal(t[i:i+len(lab)], lab) {
			return
		}
		i += len(lab)
		m.reached(rules, n, res)
	}
}

// state is a live NFA position: node n, off bytes into its label.
type state struct{ n, off int32 }

// scratch is the per-call working memory of the NFA, pooled per Robots.
type scratch struct {
	target   []byte
	cur, nxt []state
	mark     []uint32
	gen      uint32
}

func (m *matcher) newScratch() any {
	s := &scratch{target: make([]byte, 0, 256)}
	if m.star {
		s.mark = make([]uint32, m.nslots)
		s.cur = make([]state, 0, 16)
		s.nxt = make([]state, 0, 16)
	}
	return s
}

// nfa matches the canonical target t against a trie with '*'.
func (m *matcher) nfa(rules []Rule, root int32, t []byte, res *result, sc *scratch) {
	sc.cur = sc.cur[:0]
	m.nextGen(sc)
	sc.cur = m.arrive(rules, sc.cur, root, res, sc)
	for i := 0; i < len(t) && len(sc.cur) > 0; i++ {
		c := t[i]
		m.nextGen(sc)
		nxt := sc.nxt[:0]
		for _, s := range sc.cur {
			n := &m.nodes[s.n]
			if ln := n.lab1 - n.lab0; s.off < ln {
				if m.lab[n.lab0+s.off] == c {
					if s.off+1 == ln {
						nxt = m.arrive(rules, nxt, s.n, res, sc)
					} else {
						nxt = m.push(nxt, state{s.n, s.off + 1}, sc)
					}
				}
				continue
			}
			if n.isStar {
				nxt = m.push(nxt, s, sc)
			}
			if k := m.child(n, c); k >= 0 {
				kn := &m.nodes[k]
				if kn.lab1-kn.lab0 == 1 {
					nxt = m.arrive(rules, nxt, k, res, sc)
				} else {
					nxt = m.push(nxt, state{k, 1}, sc)
				}
			}
		}
		sc.cur, sc.nxt = nxt, sc.cur
	}
	for _, s := range sc.cur {
		n := &m.nodes[s.n]
		if s.off == n.lab1-n.lab0 {
			m.ended(rules, n, res)
		}
	}
}

func (m *matcher) nextGen(sc *scratch) {
	sc.gen++
	if sc.gen == 0 {
		clear(sc.mark)
		sc.gen = 1
	}
}

// push adds s to the live set unless it is already there.
func (m *matcher) push(set []state, s state, sc *scratch) []state {
	slot := m.nodes[s.n].slot + s.off
	if sc.mark[slot] == sc.gen {
		return set
	}
	sc.mark[slot] = sc.gen
	return append(set, s)
}

// arrive adds the end of node k's label to the live set, records its prefix
// rules, and follows its '*' edge, which matches the empty string too.
func (m *matcher) arrive(rules []Rule, set []state, k int32, res *result, sc *scratch) []state {
	n := &m.nodes[k]
	slot := n.slot + (n.lab1 - n.lab0)
	if sc.mark[slot] == sc.gen {
		return set
	}
	sc.mark[slot] = sc.gen
	m.reached(rules, n, res)
	set = append(set, state{k, n.lab1 - n.lab0})
	if n.star >= 0 {
		set = m.arrive(rules, set, n.star, res, sc)
	}
	return set
}
