package policy

import (
	"time"
)

// Character classes used when scanning User-Agent headers (SEMANTICS.md §5).
const (
	classToken    = 1 << iota // [A-Za-z0-9_-]: may appear in a product token
	classWordPrev             // [A-Za-z0-9_.-]: a token may not follow it
	classWordNext             // [A-Za-z0-9_.]: a token may not precede it
	classItemSep              // whitespace ; , ( ): separates header items
	classHyphen               // '-': the hyphen fallback may cut a word here
)

// charClass maps a byte to its classes. It is computed once and never
// written afterwards.
var charClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		alnum := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
		if alnum || b == '_' || b == '-' {
			t[c] |= classToken
		}
		if alnum || b == '_' || b == '.' || b == '-' {
			t[c] |= classWordPrev
		}
		if alnum || b == '_' || b == '.' {
			t[c] |= classWordNext
		}
		if b == '-' {
			t[c] |= classHyphen
		}
		switch b {
		case ' ', '\t', '\n', '\v', '\f', '\r', ';', ',', '(', ')':
			t[c] |= classItemSep
		}
	}
	return t
}()

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// tokenTable is an open-addressing hash set of the lower-cased group tokens,
// so that a header can be scanned once, hashing each candidate word as it
// grows, without allocating or lower-casing a copy.
type tokenTable struct {
	slots  []tokenSlot
	mask   uint64
	maxLen int
	lens   uint64 // bit n set: some token has length n (n < 64)
	long   bool   // some token is 64 bytes or longer
	filter [1 << filterBits / 64]uint64
	first  [4]uint64 // bit c: some token starts with the byte c (lower-case)
}

// filterBits sizes tokenTable.filter, a one-hash Bloom filter over (first
// byte, last byte, length) of the tokens: words of a browser's header
// almost never pass it, so they are never hashed in full.
const filterBits = 10

func filterBit(first, last byte, n int) uint32 {
	return (uint32(lower(first))<<16 | uint32(lower(last))<<8 | uint32(n&0xff)) * 0x9E3779B1 >> (32 - filterBits)
}

type tokenSlot struct {
	hash  uint64
	tok   string // lower-cased; "" marks an empty slot
	group int32
}

func hashString(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// build fills the table with the specific (non-"*") merged groups.
func (t *tokenTable) build(merged []mergedGroup, global int32) {
	n := 0
	for i := range merged {
		if int32(i) != global {
			n++
		}
	}
	size := 8
	for size < 2*n {
		size <<= 1
	}
	t.slots = make([]tokenSlot, size)
	t.mask = uint64(size - 1)
	for i := range merged {
		if int32(i) == global {
			continue
		}
		tok := merged[i].lower
		h := hashString(tok)
		j := h & t.mask
		for t.slots[j].tok != "" {
			j = (j + 1) & t.mask
		}
		t.slots[j] = tokenSlot{hash: h, tok: tok, group: int32(i)}
		t.maxLen = max(t.maxLen, len(tok))
		if len(tok) < 64 {
			t.lens |= 1 << len(tok)
		} else {
			t.long = true
		}
		b := filterBit(tok[0], tok[len(tok)-1], len(tok))
		t.filter[b>>6] |= 1 << (b & 63)
		t.first[tok[0]>>6] |= 1 << (tok[0] & 63)
	}
}

// lookup returns the group whose token equals the lower-cased s, or -1.
func (t *tokenTable) lookup(s string, h uint64) int32 {
	for j := h & t.mask; ; j = (j + 1) & t.mask {
		sl := &t.slots[j]
		if sl.tok == "" {
			return -1
		}
		if sl.hash == h && len(sl.tok) == len(s) && equalLower(s, sl.tok) {
			return sl.group
		}
	}
}

// equalLower reports whether s lower-cased equals the lower-case l.
func equalLower(s, l string) bool {
	for i := 0; i < len(s); i++ {
		if lower(s[i]) != l[i] {
			return false
		}
	}
	return true
}

// scanTokens calls fn for every group token that occurs in the header ua as
// a whole word (SEMANTICS.md §5): items holding "://" or "@" are skipped; a
// token must not follow [a-z0-9_.-] nor precede [a-z0-9_.], and may precede
// '-' (the hyphen fallback). fn receives the group and the token length.
//
// The header is read once, a byte at a time with one table lookup: the
// tokens found in an item are held back until the item ends, and dropped if
// it turns out to be a URL or an e-mail. A word is hashed only when its
// length, first and last bytes pass the table's filter.
func (t *tokenTable) scanTokens(ua string, fn func(group int32, n int)) {
	if t.maxLen == 0 {
		return
	}
	var h heldHits
	item := 0 // start of the current item
	skip := false
	for i := 0; i < len(ua); {
		c := ua[i]
		cl := charClass[c]
		if cl&classToken != 0 && (i == item || charClass[ua[i-1]]&classWordPrev == 0) {
			// A word starts: read its run of token bytes. Words whose
			// first byte starts no token (most of a browser's header:
			// versions, platform names) are skipped without any check.
			j := i
			if lc := lower(c); t.first[lc>>6]&(1<<(lc&63)) == 0 || skip {
				for i++; i < len(ua) && charClass[ua[i]]&classToken != 0; i++ {
				}
				continue
			}
			for i++; i < len(ua); i++ {
				cl = charClass[ua[i]]
				if cl&classToken == 0 {
					break
				}
				if cl&classHyphen != 0 && !skip && t.passes(ua[j:i]) {
					t.candidate(ua[j:i], &h)
				}
			}
			if !skip && (i == len(ua) || cl&classWordNext == 0) && t.passes(ua[j:i]) {
				t.candidate(ua[j:i], &h)
			}
			continue
		}
		switch {
		case cl&classItemSep != 0:
			h.flush(t, ua, item, i, skip, fn)
			skip = false
			item = i + 1
		case c == '@' || c == ':' && i+2 < len(ua) && ua[i+1] == '/' && ua[i+2] == '/':
			skip = true
		}
		i++
	}
	h.flush(t, ua, item, len(ua), skip, fn)
}

// heldHits holds the tokens found in the current header item.
type heldHits struct {
	hits [4]tokenHit
	n    int
	lost bool // more hits than hits has room for: rescan the item
}

func (h *heldHits) add(group int32, n int) {
	if h.n == len(h.hits) {
		h.lost = true
		return
	}
	h.hits[h.n] = tokenHit{group, n}
	h.n++
}

// flush reports the hits of the item ua[lo:hi] unless it is skipped.
func (h *heldHits) flush(t *tokenTable, ua string, lo, hi int, skip bool, fn func(group int32, n int)) {
	switch {
	case h.n == 0 && !h.lost, skip:
	case h.lost:
		t.scanItem(ua, lo, hi, fn)
	default:
		for _, x := range h.hits[:h.n] {
			fn(x.group, x.n)
		}
	}
	h.n, h.lost = 0, false
}

// tokenHit is a group token found in a header.
type tokenHit struct {
	group int32
	n     int
}

// scanItem scans ua[lo:hi], one header item, for group tokens.
func (t *tokenTable) scanItem(ua string, lo, hi int, fn func(group int32, n int)) {
	for j := lo; j < hi; {
		c := ua[j]
		if charClass[c]&classToken == 0 || j > lo && charClass[ua[j-1]]&classWordPrev != 0 {
			j++
			continue
		}
		j = t.scanWord(ua, j, hi, fn)
	}
}

// scanWord reads the run of token bytes that starts a word at ua[j], up to
// hi, reports the group tokens among the word and its parts before each
// '-', and returns the end of the run.
func (t *tokenTable) scanWord(ua string, j, hi int, fn func(group int32, n int)) int {
	e := j
	for ; e < hi && charClass[ua[e]]&classToken != 0; e++ {
		if ua[e] == '-' && e > j && t.passes(ua[j:e]) {
			if g := t.find(ua[j:e]); g >= 0 {
				fn(g, e-j)
			}
		}
	}
	if (e == hi || charClass[ua[e]]&classWordNext == 0) && t.passes(ua[j:e]) {
		if g := t.find(ua[j:e]); g >= 0 {
			fn(g, e-j)
		}
	}
	return e
}

// passes reports whether s may be a group token: its length, first and
// last bytes pass the filter. It is cheap, and false for nearly every word
// of a browser's header.
func (t *tokenTable) passes(s string) bool {
	n := len(s)
	if n > t.maxLen || n < 64 && t.lens&(1<<n) == 0 || n >= 64 && !t.long {
		return false
	}
	b := filterBit(s[0], s[n-1], n)
	return t.filter[b>>6]&(1<<(b&63)) != 0
}

// find returns the group whose token is s (case-insensitively), or -1.
func (t *tokenTable) find(s string) int32 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(lower(s[i]))) * fnvPrime
	}
	return t.lookup(s, h)
}

// candidate holds the group whose token is s, if any.
func (t *tokenTable) candidate(s string, h *heldHits) {
	if g := t.find(s); g >= 0 {
		h.add(g, len(s))
	}
}

// Agent is the outcome of choosing a group for one user agent. It is a small
// value that holds no allocation; compute it once per request and call
// Decide for each view of the target.
type Agent struct {
	r     *Robots
	group int32  // merged group that applies; -1 when none
	ua    string // kept for the rare case of several equally specific groups
	n     int    // length of the winning token; 0 for "*" or none
	multi bool   // several groups of tokens of length n matched
}

// WeakAgent is an Agent that does not keep its Robots alive, for caches of
// group choices: a cache of many headers can hold one per header without
// pinning compiled files that are no longer in use. It names its Robots by
// the random 64-bit number each parsed file gets, which, unlike a weak
// pointer, costs nothing to check.
type WeakAgent struct {
	id    uint64 // of its Robots
	group int32
	ua    string
	n     int
	multi bool
}

// Weak returns a's group choice without a strong reference to its Robots.
func (a Agent) Weak() WeakAgent {
	var id uint64
	if a.r != nil {
		id = a.r.id
	}
	return WeakAgent{id: id, group: a.group, ua: a.ua, n: a.n, multi: a.multi}
}

// For returns the Agent that w stands for when it was made from an Agent of
// r, and false otherwise (another file). It does not allocate.
func (w WeakAgent) For(r *Robots) (Agent, bool) {
	if r == nil || r.id == 0 || r.id != w.id {
		return Agent{}, false
	}
	return Agent{r: r, group: w.group, ua: w.ua, n: w.n, multi: w.multi}, true
}

// Agent chooses the group that applies to userAgent (SEMANTICS.md §5): the
// longest group token found as a whole word in the header (URL and e-mail
// items ignored, case-insensitive, hyphen fallback), all equally long
// matches merged; else the merged "*" groups; else none. userAgent may be a
// bare product token or a whole User-Agent header.
func (r *Robots) Agent(userAgent string) Agent {
	if userAgent == "" {
		return Agent{r: r, group: r.global} // "*" (the enforcer's second look at an unproven claim)
	}
	a := Agent{r: r, group: -1, ua: userAgent}
	r.tokens.scanTokens(userAgent, func(g int32, n int) {
		switch {
		case n > a.n:
			a.n, a.group, a.multi = n, g, false
		case n == a.n && g != a.group:
			a.multi = true
			a.group = min(a.group, g)
		}
	})
	if a.group < 0 {
		a.group = r.global
		a.n = 0
	}
	return a
}

// Group returns the token of the group that applies, as written in the file
// (the first-written one when several apply); "*" for the global group; ""
// when no group applies.
func (a Agent) Group() string {
	if a.group < 0 {
		return ""
	}
	return a.r.merged[a.group].name
}

// Specific reports whether a group other than "*" applies, that is, whether
// the robots.txt names this user agent.
func (a Agent) Specific() bool {
	return a.group >= 0 && a.group != a.r.global
}

// CrawlDelay returns the Crawl-delay of the group that applies, the largest
// value when several groups are merged; 0 when there is none.
func (a Agent) CrawlDelay() time.Duration {
	if a.group < 0 {
		return 0
	}
	if !a.multi {
		return a.r.merged[a.group].delay
	}
	var d time.Duration
	a.r.tokens.scanTokens(a.ua, func(g int32, n int) {
		if n == a.n {
			d = max(d, a.r.merged[g].delay)
		}
	})
	return d
}
