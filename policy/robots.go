package policy

import (
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Robots is a parsed and compiled robots.txt file. It is immutable after
// Parse and safe for concurrent use by many goroutines.
type Robots struct {
	text     string      // the parsed part of the body, after the BOM
	rules    []Rule      // every rule of every group, in file order
	groups   []fileGroup // groups as written
	merged   []mergedGroup
	global   int32 // index into merged of the merged "*" group, or -1
	tokens   tokenTable
	sets     []ruleSet
	sitemaps []string
	licenses []string     // the License lines' URLs (RSL 1.0), in file order
	signals  []SignalRule // every Content-Signal and Content-Usage line, in file order
	diags    []Diagnostic // found while parsing; Lint adds the rest
	trunc    bool
	html     bool // the body looks like an HTML document
	// id tells this Robots apart from every other (random, not 0), for
	// WeakAgent, which must not keep it alive.
	id   uint64
	size int // bytes of the original body

	m       matcher
	scratch sync.Pool                // *scratch
	agents  atomic.Pointer[[]string] // Agents, made on first use
}

// fileGroup is a group as written: its agent tokens and a contiguous range
// of r.rules.
type fileGroup struct {
	agents         []string
	delays         []time.Duration // per agent: the Crawl-delay of its run (SEMANTICS.md §8)
	delayLines     []int           // per agent: the line of that Crawl-delay, 0 for none
	line           int
	ruleLo, ruleHi int32
	delay          time.Duration // largest Crawl-delay given inside the group
	hasDelay       bool          // some Crawl-delay line stands in the group
	signals        []int32       // its Content-Signal and Content-Usage lines (indices into Robots.signals)
}

// mergedGroup is every group that names one token (case-insensitively), or
// every "*" group, merged (RFC 9309 §2.2.1).
type mergedGroup struct {
	name  string  // the token as first written
	lower string  // lower-cased token, "*" for the global group
	fgs   []int32 // file groups, in file order
	set   int32   // index into Robots.sets
	delay time.Duration
	// delayLine is the line of the Crawl-delay that gives delay, 0 for none.
	delayLine int
	// signals are the Content-Signal and Content-Usage lines that reach
	// this token (SEMANTICS.md §8a), indices into Robots.signals.
	signals []int32
}

// ruleSet is the compiled union of the rules of some file groups: one trie
// per file group, so that a group that several merged groups share (the
// "*" group that also names applebot, which a later group names again) is
// compiled once. Merged groups made of the same file groups share one set
// (a group of 166 agents with one rule compiles once). The best match over
// the tries is the best match over the union (result.improves is a total
// order), so a set of several is matched trie by trie.
type ruleSet struct {
	root int32   // the first file group's trie
	more []int32 // the others', for a token named by several groups
}

// Groups returns the groups of the file as written, in file order, without
// merging. The result is a copy.
func (r *Robots) Groups() []Group {
	out := make([]Group, len(r.groups))
	for i, g := range r.groups {
		delays := make([]time.Duration, len(g.agents)) // one per agent; none stored for a group without Crawl-delay
		copy(delays, g.delays)
		out[i] = Group{
			Agents:     append([]string(nil), g.agents...),
			Delays:     delays,
			Line:       g.line,
			Rules:      append([]Rule(nil), r.rules[g.ruleLo:g.ruleHi]...),
			CrawlDelay: g.delay,
		}
	}
	return out
}

// Agents yields the distinct User-agent tokens of the file's groups in
// file order (the first spelling of each, compared case-insensitively),
// "*" included when there is a global group. The list is made on first use
// and kept; walking it does not allocate.
func (r *Robots) Agents() iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, a := range r.agentList() {
			if !yield(a) {
				return
			}
		}
	}
}

// agentList is the list behind Agents, made once.
func (r *Robots) agentList() []string {
	if p := r.agents.Load(); p != nil {
		return *p
	}
	seen := map[string]bool{}
	out := []string{}
	for _, g := range r.groups {
		for _, a := range g.agents {
			if k := strings.ToLower(a); a != "" && !seen[k] {
				seen[k] = true
				out = append(out, a)
			}
		}
	}
	r.agents.CompareAndSwap(nil, &out)
	return *r.agents.Load()
}

// Sitemaps returns the values of the Sitemap lines, in file order.
func (r *Robots) Sitemaps() []string {
	return append([]string(nil), r.sitemaps...)
}

// Licenses returns the URLs of the License lines (Really Simple Licensing
// 1.0: the RSL documents that say how the site's content is licensed), in
// file order; lines whose value is no absolute http or https URL are left
// out (and reported by Lint).
func (r *Robots) Licenses() []string {
	return append([]string(nil), r.licenses...)
}

// Truncated reports whether the body was longer than MaxBodySize, so that
// its tail was ignored.
func (r *Robots) Truncated() bool { return r.trunc }

// Text returns the part of the body that was parsed (after a byte order
// mark; the first 500 KiB of a longer file), as fetched: line n of the file
// is line n of Text, the numbering of rules and diagnostics.
func (r *Robots) Text() string { return r.text }

// HTML reports whether the body looks like an HTML document (see
// LooksLikeHTML). Such a body is still parsed as RFC 9309 says, and usually
// yields no rule; Lint reports it as "html-page".
func (r *Robots) HTML() bool { return r.html }

// Restricts reports whether the file can stop or slow some bot: some group
// has a Disallow with a non-empty pattern or a Crawl-delay. A file for which
// it is false (empty, comments only, only "Disallow:" or Allow lines, an
// HTML page) allows every bot everything.
func (r *Robots) Restricts() bool {
	for _, g := range r.groups {
		if g.delay > 0 {
			return true
		}
	}
	for _, rule := range r.rules {
		if rule.Kind == Disallow && rule.Pattern != "" {
			return true
		}
	}
	return false
}

// LooksLikeHTML reports whether body starts like an HTML document: after an
// optional byte order mark and white space, "<!doctype html", "<html",
// "<head", "<body" or "<!--" (ASCII case ignored). A robots.txt never starts
// with '<', so a server that answers /robots.txt with a web page is told
// apart from a real file whatever its Content-Type says.
func LooksLikeHTML(body []byte) bool {
	body = body[:min(len(body), 1024)]
	for len(body) >= 3 && body[0] == 0xEF && body[1] == 0xBB && body[2] == 0xBF {
		body = body[3:]
	}
	i := 0
	for i < len(body) && isSpace(body[i]) {
		i++
	}
	body = body[i:]
	for _, p := range [...]string{"<!doctype html", "<html", "<head", "<body", "<!--"} {
		if len(body) >= len(p) && strings.EqualFold(string(body[:len(p)]), p) {
			return true
		}
	}
	return false
}
