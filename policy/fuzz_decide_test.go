package policy_test

// Differential fuzz test: policy.Decide against a naive reference written
// straight from SEMANTICS.md §5–§7. The reference trusts only Robots.Groups()
// (the parse, patterns as written); group choice, normalisation, glob
// matching and the longest-match decision are its own.

import (
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/policy"
)

// refHeader applies §5 step 1 and the lower-casing of step 2.
func refHeader(ua string) string {
	items := strings.FieldsFunc(ua, func(c rune) bool { return strings.ContainsRune(" \t\r\n\v\f;,()", c) })
	var kept []string
	for _, it := range items {
		if !strings.Contains(it, "://") && !strings.Contains(it, "@") {
			kept = append(kept, strings.ToLower(it))
		}
	}
	return strings.Join(kept, " ")
}

// refWordIn reports whether tok occurs in h as a whole word (§5 step 2).
func refWordIn(h, tok string) bool {
	for i := 0; i+len(tok) <= len(h); i++ {
		if h[i:i+len(tok)] != tok {
			continue
		}
		if i > 0 && strings.IndexByte("abcdefghijklmnopqrstuvwxyz0123456789_.-", h[i-1]) >= 0 {
			continue
		}
		if j := i + len(tok); j < len(h) && strings.IndexByte("abcdefghijklmnopqrstuvwxyz0123456789_.", h[j]) >= 0 {
			continue
		}
		return true
	}
	return false
}

// refChoose returns the groups that apply (§5 steps 3–4) and the spellings
// Decision.Group may take.
func refChoose(groups []policy.Group, ua string) (chosen []policy.Group, names []string) {
	h := refHeader(ua)
	matches := func(a string) bool { return a != "" && a != "*" && refWordIn(h, strings.ToLower(a)) }
	best := 0
	for _, g := range groups {
		for _, a := range g.Agents {
			if matches(a) && len(a) > best {
				best = len(a)
			}
		}
	}
	for _, g := range groups {
		in := false
		for _, a := range g.Agents {
			if best > 0 && len(a) == best && matches(a) {
				in = true
				names = append(names, a)
			}
			if best == 0 && a == "*" {
				in = true
			}
		}
		if in {
			chosen = append(chosen, g)
		}
	}
	if best == 0 && len(chosen) > 0 {
		names = []string{"*"}
	}
	if len(chosen) == 0 {
		names = []string{""}
	}
	return chosen, names
}

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

// refNorm normalises a pattern or a target (§6).
func refNorm(s string) string {
	const hex = "0123456789ABCDEF"
	unreserved := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v := strings.IndexByte(hex, upper(s[i+1]))<<4 | strings.IndexByte(hex, upper(s[i+2]))
			if strings.IndexByte(unreserved, byte(v)) >= 0 {
				b.WriteByte(byte(v))
			} else {
				b.WriteString("%" + string(upper(s[i+1])) + string(upper(s[i+2])))
			}
			i += 2
		case c >= 0x80 || c <= 0x20 || c == 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0:
			b.WriteString("%" + string(hex[c>>4]) + string(hex[c&15]))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func upper(c byte) byte { return strings.ToUpper(string(c))[0] }

// refMatch reports whether normalised pattern p matches normalised target t
// from its first octet: '*' any run, a final '$' the end, %2A / %24 also a
// literal '*' / '$' (§6).
func refMatch(p, t string) bool {
	if p == "" || (p[0] != '/' && p[0] != '*') {
		return false
	}
	anchored := strings.HasSuffix(p, "$")
	if anchored {
		p = p[:len(p)-1]
	}
	memo := map[[2]int]bool{}
	var m func(pi, ti int) bool
	m = func(pi, ti int) bool {
		if pi == len(p) {
			return !anchored || ti == len(t)
		}
		k := [2]int{pi, ti}
		if v, ok := memo[k]; ok {
			return v
		}
		res := false
		if p[pi] == '*' {
			res = m(pi+1, ti) || (ti < len(t) && m(pi, ti+1))
		} else if ti < len(t) {
			res = p[pi] == t[ti] && m(pi+1, ti+1)
			if !res && ((strings.HasPrefix(p[pi:], "%2A") && t[ti] == '*') || (strings.HasPrefix(p[pi:], "%24") && t[ti] == '$')) {
				res = m(pi+3, ti+1)
			}
		}
		memo[k] = res
		return res
	}
	return m(0, 0)
}

// refIndex returns "<prefix>/$" for an Allow whose last /-segment starts
// with /index.htm (§7), or "".
func refIndex(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 && strings.HasPrefix(p[i:], "/index.htm") {
		return p[:i+1] + "$"
	}
	return ""
}

// refAllowed decides a target for the chosen groups (§6 exemption, §7).
func refAllowed(chosen []policy.Group, target string) bool {
	t := refNorm(target)
	if target == "" {
		t = "/"
	}
	if path, _, _ := strings.Cut(t, "?"); path == "/robots.txt" {
		return true
	}
	bestAllow, bestDisallow := -1, -1
	for _, g := range chosen {
		for _, r := range g.Rules {
			p := refNorm(r.Pattern)
			ok := refMatch(p, t)
			if !ok && r.Kind == policy.Allow && refIndex(p) != "" && refMatch(refIndex(p), t) {
				// §7: the implied "<prefix>/$" Allow, at its own length.
				bestAllow = max(bestAllow, len(refIndex(p)))
			}
			switch {
			case ok && r.Kind == policy.Allow:
				bestAllow = max(bestAllow, len(p))
			case ok && r.Kind == policy.Disallow:
				bestDisallow = max(bestDisallow, len(p))
			}
		}
	}
	return !(bestDisallow > 0 && bestDisallow > bestAllow)
}

// badPercent reports a '%' not followed by two hex digits: SEMANTICS.md does
// not say how to normalise it, so such inputs are skipped.
func badPercent(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && (i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2])) {
			return true
		}
	}
	return false
}

func FuzzDecide(f *testing.F) {
	for _, s := range [][3]string{
		{"User-agent: *\nDisallow: /a\nAllow: /a/b\n", "FooBot", "/a/b/c"},
		{"User-agent: googlebot\nDisallow: /g\n\nUser-agent: googlebot-image\nAllow: /\nDisallow: /i$\n", "Mozilla/5.0 (compatible; Googlebot-Image/1.0; +http://www.google.com/bot.html)", "/i"},
		{"User-agent: *\nDisallow: /\nAllow: /*?$\nAllow: /shop/index.html\n", "x", "/shop/"},
		{"User-agent: *\nDisallow: /é\nAllow: /%C3%A9*\n", "Bot", "/%c3%a9x"},
		{"User-agent: A\nUser-agent: B\nDisallow: /a%2Ab$\nAllow: /a%24\n", "B/1.0", "/a*b"},
		{"User-agent: *\nDisallow: /robots.txt\n", "x", "/robots.txt?x"},
		{"user-agent: Bot-1\nDisallow: /a b\nAllow: /a%20*\n\nuser-agent: *\ndisallow: /\n", "bot-1 (spider@x.com)", "/a b"},
		{"User-agent: Mozilla\nDisallow: /m\nUser-agent: Googlebot\nDisallow: /*.pdf$\nAllow: /~x\n", "Mozilla/5.0 (compatible; Googlebot/2.1)", "/%7Ex.pdf"},
		{"User-agent: AlphaBot\nDisallow: /a\n\nUser-agent: GammaBot\nAllow: /a/\nUser-agent: *\nDisallow: /\n", "AlphaBot/1 GammaBot/2", "/a/b"},
		{"User-agent: *\nDisallow: /a$$\nDisallow: /x/../y\nAllow: /*/index.htm\n", "", "/a$"},
		{"User-agent: MJ12bot\nDisallow: /\nUser-agent: Hal-9000\nAllow: /\n", "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)", ""},
		{"User-agent: spider\nDisallow: /\nUser-agent: *\nDisallow: /s\n", "Bytespider; spider-feedback@bytedance.com", "/s?q={x}"},
		// A literal '$' of the target has no '2' for "*2" to match.
		{"UserAgent GoogleBot\nDisAlow *2", "GoogleBot", "/$"},
		{"User-agent: *\nDisallow: /*4\nAllow: /a%24%2A%24%2A$\n", "x", "/a$*%24%2A"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, robots, ua, target string) {
		if len(robots) > 4096 || len(ua) > 256 || len(target) > 256 {
			t.Skip()
		}
		// Stay where SEMANTICS.md is exact: printable-ASCII headers, targets that
		// are origin-form paths without fragment, well-formed escapes.
		for i := 0; i < len(ua); i++ {
			if ua[i] < 0x20 || ua[i] > 0x7e {
				t.Skip()
			}
		}
		if (target != "" && target[0] != '/') || strings.Contains(target, "#") || badPercent(target) {
			t.Skip()
		}
		rawPath, _, _ := strings.Cut(target, "?")
		normPath, _, _ := strings.Cut(refNorm(target), "?")
		if (rawPath == "/robots.txt") != (normPath == "/robots.txt") {
			t.Skip() // exemption of an escaped spelling of /robots.txt is not specified
		}
		r := policy.Parse([]byte(robots))
		groups := r.Groups()
		for _, g := range groups {
			for _, a := range g.Agents {
				if a != "*" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
					t.Fatalf("§4 agent token %q is not '*' or [A-Za-z0-9_-]*", a)
				}
			}
			for _, rule := range g.Rules {
				// Only the first three %24 / %2A escapes of a pattern also
				// match a literal '$' / '*' (a documented bound on compiled
				// variants, see maxEscapeChoices); the reference has no bound.
				if up := strings.ToUpper(rule.Pattern); strings.Count(up, "%24")+strings.Count(up, "%2A") > 3 {
					t.Skip()
				}
				if badPercent(rule.Pattern) || (rule.Kind == policy.Allow && (refIndex(rule.Pattern) == "") != (refIndex(refNorm(rule.Pattern)) == "")) {
					t.Skip()
				}
			}
		}
		chosen, names := refChoose(groups, ua)
		want := refAllowed(chosen, target)
		d := r.Decide(ua, target)
		in := "robots=" + semQuote(robots) + " ua=" + semQuote(ua) + " target=" + semQuote(target)
		if d.Allowed != want {
			t.Fatalf("%s: Allowed = %v, reference %v (decision: %s)", in, d.Allowed, want, d)
		}
		okName, same := false, true
		for _, n := range names {
			okName = okName || d.Group == n
			same = same && strings.EqualFold(n, names[0])
		}
		if same {
			okName = d.Group == names[0] // the first spelling of one merged token
		}
		if !okName {
			t.Fatalf("%s: Group = %q, reference %q", in, d.Group, names)
		}
		if r.Allowed(ua, target) != d.Allowed || r.Agent(ua).Decide(target).Allowed != d.Allowed {
			t.Fatalf("%s: Allowed / Agent().Decide disagree with Decide", in)
		}
		if d.Rule != nil && d.Rule.Priority != len(refNorm(d.Rule.Pattern)) {
			t.Fatalf("%s: Rule %s has Priority %d, reference %d", in, d.Rule, d.Rule.Priority, len(refNorm(d.Rule.Pattern)))
		}
		if !d.Allowed && (d.Rule == nil || d.Rule.Kind != policy.Disallow) {
			t.Fatalf("%s: disallowed with deciding rule %s", in, d.Rule)
		}
	})
}
