package policy

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
)

const (
	keyOther keyKind = iota
	keyUserAgent
	keyAllow
	keyDisallow
	keySitemap
	keyCrawlDelay
	keyContentSignal
	keyContentUsage
	keyLicense
)

// parser holds the state of one Parse call.
type parser struct {
	r          *Robots
	cur        int32 // current file group, -1 before the first user-agent line
	ruleSeen   bool  // an Allow/Disallow line came since cur opened
	delayLine  int   // line of a Crawl-delay in the current group before any rule, 0 if none
	delayFor   string
	lastUALine int
	blankSince bool // an empty line came since the last user-agent line
	byToken    map[string]int32
	// signalsCapped: the too-many-signals diagnostic has been given.
	signalsCapped bool
	// usageLine is the first Content-Usage line, usageKeys the aipref
	// keys its lines use (for the aipref-vocab diagnostic).
	usageLine int
	usageKeys map[string]bool
	// The run of consecutive user-agent lines a Crawl-delay belongs to
	// (SEMANTICS.md §8): agents[runStart:] of the current group. inRun
	// reports that no other directive came since the last user-agent line,
	// so that the next one extends the run.
	runStart int
	inRun    bool
	// Slabs the groups' agents and the merged groups' file groups are
	// carved from: a file of hundreds of one-agent groups does not cost
	// an allocation per group for each.
	agentSlab []string
	agentLo   int // where the current group's agents start in agentSlab
	fgSlab    []int32
	lower     []byte
}

// Parse reads a robots.txt body and compiles its rules. It never fails:
// lines it cannot read are skipped (and reported by Lint), and only the
// first MaxBodySize bytes are read. Any input, including HTML, binary data
// and empty input, yields a usable *Robots; an empty one allows everything.
func Parse(body []byte) *Robots {
	r := &Robots{global: -1, size: len(body), id: rand.Uint64() | 1}
	if len(body) > MaxBodySize {
		body = body[:MaxBodySize]
		r.trunc = true
	}
	bom := [3]byte{0xEF, 0xBB, 0xBF}
	skip := 0
	for skip < len(bom) && skip < len(body) && body[skip] == bom[skip] {
		skip++
	}
	r.text = string(body[skip:])
	// Size the token map and the merged groups for the user-agent lines
	// the file may hold (an upper bound from a fast count of "gent"), so
	// that a file of hundreds of groups does not grow them step by step
	// (who-int's 527 groups spent 11 % of its parse rehashing the map).
	agents := min(bytes.Count(body, []byte("gent")), bytes.Count(body, []byte("\n"))+1, 1<<14) + bytes.Count(body, []byte("GENT"))/2
	p := &parser{r: r, cur: -1, byToken: make(map[string]int32, agents),
		agentSlab: make([]string, 0, agents), fgSlab: make([]int32, 0, agents)}
	r.merged = make([]mergedGroup, 0, agents)
	// Likewise the rules, from a count of "llow" (Allow and Disallow
	// lines, and a few words that are neither): appended one by one, a
	// file of 5,640 rules allocated five times its rule list's size.
	r.rules = make([]Rule, 0, min(bytes.Count(body, []byte("llow"))+bytes.Count(body, []byte("LLOW"))+8, len(body)/8+8))
	if LooksLikeHTML(body) {
		r.html = true
		p.diag(1, Error, "html-page", "this is an HTML page, not a robots.txt: the server answered /robots.txt with a web page "+
			"(a single-page app or a catch-all route does this); its lines are skipped and no rule applies")
	}
	p.run()
	p.vocabulary()
	r.compile()
	r.scratch.New = newScratch
	return r
}

// run splits the text into lines and handles each (SEMANTICS.md §2).
func (p *parser) run() {
	text := p.r.text
	line := 0
	start := 0
	for i := 0; i <= len(text); i++ {
		if i < len(text) && text[i] != '\n' && text[i] != '\r' {
			continue
		}
		line++
		p.line(line, text[start:i])
		if i < len(text) && text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		start = i + 1
	}
	if p.r.trunc {
		p.diag(line, Error, "size-cap", "the file is "+strconv.Itoa(p.r.size)+" bytes; everything after the first "+
			strconv.Itoa(MaxBodySize)+" bytes (from this line on) is ignored")
	}
	if p.cur >= 0 {
		p.r.groups[p.cur].ruleHi = int32(len(p.r.rules))
	}
}

func (p *parser) diag(line int, sev Severity, code, msg string) {
	p.r.diags = append(p.r.diags, Diagnostic{Line: line, Severity: sev, Code: code, Message: msg})
}

// line handles one line of the file.
func (p *parser) line(n int, s string) {
	if len(s) > MaxLineLength {
		p.diag(n, Warning, "line-too-long", "line is "+strconv.Itoa(len(s))+" bytes; only the first "+
			strconv.Itoa(MaxLineLength)+" are read")
		s = s[:MaxLineLength]
	}
	if i := strings.Index(s, "\xEF\xBB\xBF"); i >= 0 {
		p.diag(n, Warning, "bom-mid-file", "a UTF-8 byte order mark stands inside the file; it is read as ordinary bytes and spoils this line")
	} else if n == 1 && strings.HasPrefix(s, "\xC3\xAF\xC2\xBB\xC2\xBF") {
		p.diag(n, Warning, "bom-mid-file", "the file starts with a UTF-8 byte order mark encoded twice (bytes C3 AF C2 BB C2 BF); it spoils the first line")
	}
	comment := false
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s, comment = s[:i], true
	}
	s = trimSpace(s)
	if s == "" {
		// A line holding only a comment is ignored completely, also by
		// the 1990s parsers that end a record at a blank line.
		if !comment {
			p.blankSince = true
		}
		return
	}
	key, value, ok, noColon := splitKeyValue(s)
	if !ok {
		p.diag(n, Warning, "unparsable-line", "line is not a \"key: value\" directive and is ignored")
		p.inRun = false // user-agent lines around it are not consecutive (SEMANTICS.md §8)
		return
	}
	kind, spelling := classifyKey(key)
	if kind != keyOther {
		canonical := strings.ReplaceAll(spelling.prefix, " ", "-")
		switch {
		case spelling.typo:
			p.diag(n, Warning, "accepted-typo", "key \""+key+"\" is read as \""+canonicalName(kind)+"\"; other crawlers may ignore the line")
		case len(key) != len(spelling.prefix):
			p.diag(n, Warning, "key-prefix", "key \""+key+"\" is read as \""+canonicalName(kind)+"\" because it starts with \""+canonical+"\"; other crawlers may ignore the line")
		}
		if noColon {
			p.diag(n, Warning, "missing-colon", "line has no colon; it is read as \""+canonicalName(kind)+": "+value+"\", as Google does, but other crawlers ignore it")
		}
	}
	if kind != keyUserAgent {
		p.inRun = false
	}
	switch kind {
	case keyUserAgent:
		p.userAgent(n, value)
	case keyAllow:
		p.rule(n, Allow, value)
	case keyDisallow:
		p.rule(n, Disallow, value)
	case keySitemap:
		p.r.sitemaps = append(p.r.sitemaps, value)
	case keyLicense:
		p.license(n, value)
	case keyCrawlDelay:
		p.crawlDelay(n, value)
	case keyContentSignal:
		p.signal(n, false, value)
	case keyContentUsage:
		p.signal(n, true, value)
	default:
		lk := strings.ToLower(key)
		for _, k := range knownOther {
			if lk == k {
				p.diag(n, Info, "ignored-directive", "\""+key+"\" has no effect on what may be fetched")
				return
			}
		}
		p.diag(n, Warning, "unknown-directive", "unknown directive \""+key+"\" is ignored")
	}
}

// userAgent handles a user-agent line (SEMANTICS.md §3 and §4).
func (p *parser) userAgent(n int, value string) {
	r := p.r
	tok, global := agentToken(value)
	switch {
	case global && value != "*":
		p.diag(n, Info, "agent-truncated", "user-agent \""+value+"\" is read as \"*\"")
	case !global && tok == "":
		p.diag(n, Warning, "agent-empty", "user-agent \""+value+"\" has no product token (letters, digits, '_' and '-') and never matches")
	case !global && tok != value:
		// A version or punctuation cut off ("Googlebot/2.1") changes
		// nothing; a cut that leaves a word many headers carry
		// ("https://bot.example" read as "https") binds other bots.
		sev := Info
		if genericToken(tok) {
			sev = Warning
		}
		p.diag(n, sev, "agent-truncated", "user-agent \""+value+"\" is cut to \""+tok+"\": only letters, digits, '_' and '-' form a token")
	}
	if p.cur < 0 || p.ruleSeen {
		if p.cur >= 0 {
			r.groups[p.cur].ruleHi = int32(len(r.rules))
		}
		r.groups = append(r.groups, fileGroup{line: n, ruleLo: int32(len(r.rules))})
		p.cur = int32(len(r.groups) - 1)
		p.agentLo = len(p.agentSlab)
		p.ruleSeen = false
		p.delayLine = 0
	} else {
		switch {
		case p.delayLine > 0:
			p.diag(n, Warning, "crawl-delay-joins-group", "this user-agent joins the group of line "+strconv.Itoa(r.groups[p.cur].line)+
				" because no Allow or Disallow came between them, so the rules below apply to both; the Crawl-delay of line "+
				strconv.Itoa(p.delayLine)+" does not: robots_guard applies it only to "+p.delayFor+
				", the user-agent lines right above it (as Bing and Yandex read it), and gives this one no delay from it")
		case p.blankSince:
			p.diag(n, Info, "blank-line-in-group", "a blank line does not end a group (RFC 9309): this user-agent shares the rules of line "+
				strconv.Itoa(r.groups[p.cur].line)+"'s group, while 1990s parsers read two records")
		}
	}
	p.lastUALine = n
	p.blankSince = false
	g := &r.groups[p.cur]
	if !p.inRun {
		p.runStart, p.inRun = len(g.agents), true
	}
	// A group's agents are consecutive lines, so they are consecutive in
	// the slab; capped, so that no append through g.agents writes into
	// the slab.
	p.agentSlab = append(p.agentSlab, tok)
	g.agents = p.agentSlab[p.agentLo:len(p.agentSlab):len(p.agentSlab)]
	if tok == "" {
		return
	}
	// Looked up through a lower-cased copy in a reused buffer: the key
	// is allocated only for a token not seen before, and only when it has
	// upper-case letters.
	p.lower = appendLower(p.lower[:0], tok)
	mi, ok := p.byToken[string(p.lower)]
	if !ok {
		key := tok
		if string(p.lower) != tok {
			key = string(p.lower)
		}
		mi = int32(len(r.merged))
		r.merged = append(r.merged, mergedGroup{name: tok, lower: key})
		p.byToken[key] = mi
		if global {
			r.global = mi
		}
	}
	m := &r.merged[mi]
	switch {
	case len(m.fgs) == 0:
		// Most tokens are named by one group: carved from the slab
		// with no room to grow, so that a second group copies it out.
		p.fgSlab = append(p.fgSlab, p.cur)
		m.fgs = p.fgSlab[len(p.fgSlab)-1 : len(p.fgSlab) : len(p.fgSlab)]
	case m.fgs[len(m.fgs)-1] != p.cur:
		m.fgs = append(m.fgs, p.cur)
	}
}

// rule handles an Allow or Disallow line.
func (p *parser) rule(n int, kind RuleKind, value string) {
	if p.cur < 0 {
		p.diag(n, Error, "rule-before-user-agent", kind.String()+" line comes before any user-agent line and is ignored")
		return
	}
	p.ruleSeen = true
	if value != "" && value[0] != '/' && value[0] != '*' {
		p.diag(n, Warning, "never-matches", "pattern \""+value+"\" does not start with '/' or '*' and never matches")
	}
	p.r.rules = append(p.r.rules, Rule{Kind: kind, Pattern: value, Line: n, Priority: normalizedLen(value)})
}

// crawlDelay handles a Crawl-delay line (SEMANTICS.md §8).
func (p *parser) crawlDelay(n int, value string) {
	if p.cur < 0 {
		p.diag(n, Error, "rule-before-user-agent", "Crawl-delay line comes before any user-agent line and is ignored")
		return
	}
	d, ok := parseDelay(value)
	if !ok {
		p.diag(n, Error, "bad-crawl-delay", "Crawl-delay \""+value+"\" is not a non-negative number of seconds and is ignored")
		return
	}
	g := &p.r.groups[p.cur]
	g.delay, g.hasDelay = max(g.delay, d), true
	// SEMANTICS.md §8: the delay belongs to the nearest run of user-agent
	// lines above it, not to user-agent lines that join the group later.
	// The per-agent delays exist only in groups with a Crawl-delay: the
	// agents above it get theirs now, later ones when they come (zero).
	for len(g.delays) < len(g.agents) {
		g.delays, g.delayLines = append(g.delays, 0), append(g.delayLines, 0)
	}
	for i := p.runStart; i < len(g.delays); i++ {
		if d > g.delays[i] || g.delayLines[i] == 0 {
			g.delays[i], g.delayLines[i] = max(g.delays[i], d), n
		}
	}
	if !p.ruleSeen && p.delayLine == 0 {
		p.delayLine = n
		p.delayFor = agentList(g.agents[p.runStart:])
	}
}

// agentList names agents for a message: "A", "A and B", "A, B and C".
func agentList(agents []string) string {
	q := make([]string, len(agents))
	for i, a := range agents {
		q[i] = strconv.Quote(a)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// compile builds the merged groups' rule sets and the token table.
func (r *Robots) compile() {
	implied := r.addImplied()
	b := newTrieBuilder()
	setByKey := make(map[string]int32)      // sets of several file groups
	setOfFG := make([]int32, len(r.groups)) // sets of one file group, + 1
	var key []byte
	var ids []int32
	// rootOf compiles the trie of file group fg once (roots holds it + 1).
	roots := make([]int32, len(r.groups))
	rootOf := func(fg int32) int32 {
		if roots[fg] == 0 {
			g := r.groups[fg]
			ids = ids[:0]
			for ri := g.ruleLo; ri < g.ruleHi; ri++ {
				ids = append(ids, ri)
			}
			roots[fg] = b.build(r.rules, ids, implied) + 1
		}
		return roots[fg] - 1
	}
	for i := range r.merged {
		m := &r.merged[i]
		for _, fg := range m.fgs {
			g := &r.groups[fg]
			// Most groups have no Crawl-delay: skip their agents (a group
			// of 166 agents would cost 166 × 166 comparisons).
			for ai := 0; g.hasDelay && ai < len(g.delayLines); ai++ {
				if g.delayLines[ai] != 0 && (g.delays[ai] > m.delay || m.delayLine == 0) && strings.EqualFold(g.agents[ai], m.lower) {
					m.delay, m.delayLine = g.delays[ai], g.delayLines[ai]
				}
			}
			// SEMANTICS.md §8a: a signal reaches the run of user-agent
			// lines above it, as a Crawl-delay does.
			for _, si := range g.signals {
				st := &r.signals[si]
				for ai := st.agentLo; ai < st.agent; ai++ {
					if strings.EqualFold(g.agents[ai], m.lower) {
						m.signals = append(m.signals, si)
						break
					}
				}
			}
		}
		var si int32
		ok := false
		if len(m.fgs) == 1 {
			si, ok = setOfFG[m.fgs[0]]-1, setOfFG[m.fgs[0]] > 0
		} else {
			key = key[:0]
			for _, fg := range m.fgs {
				key = strconv.AppendInt(key, int64(fg), 10)
				key = append(key, ',')
			}
			si, ok = setByKey[string(key)]
		}
		if !ok {
			si = int32(len(r.sets))
			set := ruleSet{root: rootOf(m.fgs[0])}
			for _, fg := range m.fgs[1:] {
				set.more = append(set.more, rootOf(fg))
			}
			r.sets = append(r.sets, set)
			if len(m.fgs) == 1 {
				setOfFG[m.fgs[0]] = si + 1
			} else {
				setByKey[string(key)] = si
			}
		}
		m.set = si
	}
	r.m = b.finish()
	r.tokens.build(r.merged, r.global)
}

// addImplied appends to r.rules the "<dir>/$" Allow implied by each
// "Allow: <dir>/index.htm..." rule (SEMANTICS.md §7), ranked at its own
// length, and returns a map from the index of each such Allow to the index
// of its implied rule. The file's groups keep their ranges of r.rules, so
// implied rules are never listed as written.
func (r *Robots) addImplied() map[int32]int32 {
	var implied map[int32]int32
	n := len(r.rules)
	for i := 0; i < n; i++ {
		rule := r.rules[i]
		if rule.Kind != Allow {
			continue
		}
		slash := lastSlash(rule.Pattern)
		if slash < 0 || !hasPrefix(rule.Pattern[slash:], "/index.htm") {
			continue
		}
		if rule.Pattern[0] != '/' && rule.Pattern[0] != '*' {
			continue // never matches, nor does what it implies
		}
		p := rule.Pattern[:slash+1] + "$"
		if implied == nil {
			implied = make(map[int32]int32)
		}
		implied[int32(i)] = int32(len(r.rules))
		r.rules = append(r.rules, Rule{Kind: Allow, Pattern: p, Line: rule.Line, Priority: normalizedLen(p), Implied: true})
	}
	return implied
}

// genericTokens are words that many User-Agent headers carry: a group
// named by one of them binds far more than its author meant.
var genericTokens = map[string]bool{
	"http": true, "https": true, "www": true, "mozilla": true, "compatible": true, "applewebkit": true,
	"khtml": true, "gecko": true, "chrome": true, "safari": true, "bot": true, "crawler": true,
	"spider": true, "robot": true, "google": true, "mail": true, "web": true, "search": true,
}

// genericToken reports whether a user-agent token, cut from a longer
// value, is a generic word or a number.
func genericToken(tok string) bool {
	if genericTokens[strings.ToLower(tok)] {
		return true
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}

// appendLower appends s in ASCII lower case to b (product tokens are
// letters, digits, '_' and '-').
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}
