package policy

import (
	"bytes"
	"strings"
)

// requestPath returns the part of a request target that rules are matched
// against (SEMANTICS.md §6): the path and query, without a fragment and,
// for an absolute URL, without scheme and authority. It never allocates;
// the caller prepends '/' when needsSlash is set.
func requestPath(target string) (p string, needsSlash bool) {
	if i := strings.IndexByte(target, '#'); i >= 0 {
		target = target[:i]
	}
	if target != "" && target[0] != '/' && target[0] != '?' {
		if i := schemeEnd(target); i > 0 {
			rest := target[i:]
			j := 0
			for j < len(rest) && rest[j] != '/' && rest[j] != '?' {
				j++
			}
			target = rest[j:]
		}
	}
	if target == "" || target[0] == '?' {
		return target, true
	}
	return target, false
}

// schemeEnd returns the index just past "scheme://" at the start of s, or 0.
func schemeEnd(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0 && len(s) >= i+3 && s[i+1] == '/' && s[i+2] == '/':
			return i + 3
		default:
			return 0
		}
	}
	return 0
}

// canonicalTarget appends the target in the form in which it is matched:
// normalised as patterns are, with raw '*' and '$' escaped. It also returns
// the length of the path part (up to '?').
func canonicalTarget(dst []byte, target string) ([]byte, int) {
	p, slash := requestPath(target)
	dst = dst[:0]
	if slash {
		dst = append(dst, '/')
	}
	if isCanonical(p) {
		dst = append(dst, p...)
	} else {
		dst = appendNormalized(dst, p, true)
	}
	pathLen := bytes.IndexByte(dst, '?')
	if pathLen < 0 {
		pathLen = len(dst)
	}
	return dst, pathLen
}

const robotsPath = "/robots.txt"

// Decide decides whether the target may be fetched by userAgent. It is
// r.Agent(userAgent).Decide(target); see there.
func (r *Robots) Decide(userAgent, target string) Decision {
	return r.Agent(userAgent).Decide(target)
}

// Allowed reports whether the target may be fetched by userAgent; it is
// r.Decide(userAgent, target).Allowed.
func (r *Robots) Allowed(userAgent, target string) bool {
	return r.Agent(userAgent).Decide(target).Allowed
}

// Decide matches the target against the rules of the agent's group
// (SEMANTICS.md §6 and §7): the longest matching rule wins, ties go to
// Allow, and the target is disallowed only by a Disallow longer than 0.
// target is a request target (path and optional query; an absolute URL
// works too). Matching is exactly RFC 9309's: the target is normalised like
// the patterns but its dot-segments and repeated slashes are kept. A target
// whose path is /robots.txt is always allowed. Decide does not allocate,
// and keeps no part of target once it returns (the Decision holds none), so
// callers may pass a string over a buffer they reuse.
func (a Agent) Decide(target string) Decision {
	r := a.r
	d := Decision{Allowed: true}
	if r == nil || a.group < 0 {
		if r != nil {
			d.Exempt = isRobotsPath(target)
		}
		return d
	}
	d.Group = r.merged[a.group].name
	d.CrawlDelay = r.merged[a.group].delay
	sc := r.scratch.Get().(*scratch)
	var pathLen int
	sc.target, pathLen = canonicalTarget(sc.target, target)
	if string(sc.target[:pathLen]) == robotsPath {
		r.scratch.Put(sc)
		d.Exempt = true
		return d
	}
	res := newResult()
	if !a.multi {
		r.match(r.merged[a.group].set, sc, &res)
	} else {
		var delay = d.CrawlDelay
		r.tokens.scanTokens(a.ua, func(g int32, n int) {
			if n == a.n {
				r.match(r.merged[g].set, sc, &res)
				delay = max(delay, r.merged[g].delay)
			}
		})
		d.CrawlDelay = delay
	}
	r.scratch.Put(sc)
	r.verdict(&res, &d)
	return d
}

// match runs the matcher of rule set si over the canonical target in sc.
func (r *Robots) match(si int32, sc *scratch, res *result) {
	r.m.match(r.rules, r.sets[si].root, sc.target, res, false)
}

// verdict fills Allowed and Rule from the matching rules.
func (r *Robots) verdict(res *result, d *Decision) {
	switch {
	case res.dis >= 0 && res.disPrio > 0 && res.disPrio > res.allowPrio:
		d.Allowed = false
		d.Rule = &r.rules[res.dis]
	case res.allow >= 0:
		d.Rule = &r.rules[res.allow]
	case res.dis >= 0:
		d.Rule = &r.rules[res.dis]
	}
}

// isRobotsPath reports whether the target's path is /robots.txt, for the
// case where no group applies (and no scratch buffer is at hand).
func isRobotsPath(target string) bool {
	p, slash := requestPath(target)
	if slash {
		return false
	}
	if i := indexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	if p == robotsPath {
		return true
	}
	if len(p) > 3*len(robotsPath) || indexByte(p, '%') < 0 {
		return false
	}
	var buf [3 * len(robotsPath)]byte
	return string(appendNormalized(buf[:0], p, true)) == robotsPath
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
