package policy

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// maxOrderFindings caps the match-order findings reported per rule set, and
// maxOrderProbes the distinct example targets tried per rule set, which
// bounds Lint's work on huge files.
const (
	maxOrderFindings = 20
	maxOrderProbes   = 5000
)

// Lint returns diagnostics for the file, sorted by line: lines that are
// ignored or misread (unknown directives, accepted typos and key prefixes,
// missing colons, rules before any user-agent line, unparsable lines),
// agent names that lose characters, patterns that can never match,
// Crawl-delay lines that glue two groups together, content past the size
// cap, byte order marks inside the file, and rule pairs that longest-match
// parsers (RFC 9309, Google) and first-match parsers (the 1996 draft and
// many older libraries) read differently.
func (r *Robots) Lint() []Diagnostic {
	out := append([]Diagnostic(nil), r.diags...)
	done := make(map[int32]bool)
	seen := make(map[[2]int32]bool) // pairs already reported, across rule sets
	for _, m := range r.merged {
		if done[m.set] {
			continue
		}
		done[m.set] = true
		out = append(out, r.lintOrder(m, seen)...)
	}
	out = append(out, r.lintSignals()...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// lintOrder finds targets whose verdict differs between longest-match and
// first-match readings of the rules of m. For every rule it tries the
// shortest target the rule matches, so every finding is backed by a real
// example; pairs that only conflict on longer targets may be missed.
func (r *Robots) lintOrder(m mergedGroup, seen map[[2]int32]bool) []Diagnostic {
	var out []Diagnostic
	probed := make(map[string]bool)
	extra := 0
	sc := r.scratch.Get().(*scratch)
	defer r.scratch.Put(sc)
	var buf []byte
groups:
	for _, fg := range m.fgs {
		g := r.groups[fg]
		for ri := g.ruleLo; ri < g.ruleHi; ri++ {
			p := r.rules[ri].Pattern
			if p == "" || p[0] != '/' && p[0] != '*' {
				continue
			}
			var segs [][]byte
			segs, _, _, buf = canonicalPattern(buf, p, nil, nil, 0)
			sc.target = sc.target[:0]
			for _, s := range segs {
				sc.target = append(sc.target, s...)
			}
			if probed[string(sc.target)] {
				continue
			}
			if len(probed) == maxOrderProbes {
				out = append(out, Diagnostic{
					Line: r.rules[ri].Line, Severity: Info, Code: "match-order",
					Message: fmt.Sprintf("match-order check stopped after %d distinct rules of the group of %q", maxOrderProbes, m.name),
				})
				break groups
			}
			probed[string(sc.target)] = true
			res := newResult()
			r.matchSet(m.set, sc.target, &res, true)
			d := Decision{Allowed: true}
			r.verdict(&res, &d)
			if res.first < 0 || d.Rule == nil {
				continue
			}
			first := &r.rules[res.first]
			firstAllows := first.Kind == Allow || first.Pattern == ""
			if firstAllows == d.Allowed {
				continue
			}
			key := [2]int32{res.first, int32(d.Rule.Line)}
			if seen[key] {
				continue
			}
			seen[key] = true
			if len(out) >= maxOrderFindings {
				extra++
				continue
			}
			verb := map[bool]string{true: "allows", false: "blocks"}
			out = append(out, Diagnostic{
				Line:     d.Rule.Line,
				Severity: Info,
				Code:     "match-order",
				Message: fmt.Sprintf("for %q the longest match (RFC 9309, Google) is %q (line %d), which %s it; "+
					"first-match parsers (1996 draft) apply %q (line %d) and %s it",
					readable(sc.target), d.Rule.String(), d.Rule.Line, verb[d.Allowed], first.String(), first.Line, verb[firstAllows]),
			})
		}
	}
	if extra > 0 {
		out = append(out, Diagnostic{
			Line: r.groups[m.fgs[0]].line, Severity: Info, Code: "match-order",
			Message: fmt.Sprintf("%d more rule pairs of the group of %q read differently under first-match parsers", extra, m.name),
		})
	}
	return out
}

// readable writes a canonical target for a message: litDollar and litStar
// back as '$' and '*'.
func readable(t []byte) string {
	return strings.NewReplacer(string(rune(litDollar)), "$", string(rune(litStar)), "*").Replace(string(t))
}

// lintSignals finds signals that grant a use where the rules of the same
// group keep the crawler out: "search=yes" above "Disallow: /" grants
// nothing, since a preference applies only to paths a crawler may fetch
// (SEMANTICS.md §8a).
func (r *Robots) lintSignals() []Diagnostic {
	var out []Diagnostic
	for i := range r.signals {
		st := &r.signals[i]
		var yes []string
		for p := Purpose(1); int(p) < numPurposes; p++ {
			if st.prefs[p] == Yes {
				yes = append(yes, st.keys[p]+"="+map[bool]string{false: "yes", true: "y"}[st.usage])
			}
		}
		if len(yes) == 0 {
			continue
		}
		path := st.path
		if path == "" {
			path = "/"
		}
		for _, g := range r.groups {
			if int(st.agentLo) >= len(g.agents) || g.line > st.Line || !slicesContainsInt32(g.signals, int32(i)) {
				continue
			}
			tok := g.agents[st.agentLo]
			ua := tok
			if tok == "*" {
				ua = "robots-guard-lint-any-agent"
			}
			if d := r.Agent(ua).Decide(path); !d.Allowed && d.Rule != nil {
				out = append(out, Diagnostic{Line: st.Line, Severity: Warning, Code: "signal-contradicts-rules",
					Message: strings.Join(yes, ", ") + " grants nothing to " + strconv.Quote(tok) + " on " + path + ": line " +
						strconv.Itoa(d.Rule.Line) + " (" + d.Rule.String() + ") keeps it out, and a preference applies only where a crawler may go"})
			}
			break
		}
	}
	return out
}

func slicesContainsInt32(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
