package policy

import (
	"bytes"
)

// canonicalTarget appends a target's path and query p (requestPath's, with
// a '/' first when slash says so) in the form in which it is matched:
// normalised as patterns are, with raw '*' and '$' escaped.
func canonicalTarget(dst []byte, p string, slash bool) []byte {
	dst = dst[:0]
	if slash {
		dst = append(dst, '/')
	}
	if isCanonical(p) {
		return append(dst, p...)
	}
	return appendNormalized(dst, p, true)
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
			d.Exempt = IsRobotsTxt(target)
		}
		return d
	}
	d.Group = r.merged[a.group].name
	d.CrawlDelay, d.CrawlDelayLine = r.merged[a.group].delay, r.merged[a.group].delayLine
	// The canonical target: most request targets are canonical already
	// and are copied as they are into a buffer on the stack; longer ones,
	// and the others, which are normalised, into a pooled scratch buffer.
	var buf [stackTarget]byte
	var t []byte
	var sc *scratch
	if p, slash := requestPath(target); !slash && len(p) <= len(buf) && isCanonical(p) {
		t = append(buf[:0], p...)
	} else {
		sc = r.scratch.Get().(*scratch)
		sc.target = canonicalTarget(sc.target, p, slash)
		t = sc.target
	}
	pathLen := bytes.IndexByte(t, '?')
	if pathLen < 0 {
		pathLen = len(t)
	}
	if string(t[:pathLen]) == robotsPath {
		d.Exempt = true
	} else {
		d = r.decideSets(a, t, d)
	}
	if sc != nil {
		r.scratch.Put(sc)
	}
	return d
}

// stackTarget is the longest canonical target Decide copies to its stack
// (most are far shorter).
const stackTarget = 256

// decideSets matches canonical target t against the rule sets of a's
// group (or groups) and fills d's verdict (and Crawl-delay, for several).
func (r *Robots) decideSets(a Agent, t []byte, d Decision) Decision {
	res := newResult()
	if !a.multi {
		r.matchSet(r.merged[a.group].set, t, &res, false)
	} else {
		delay, line := d.CrawlDelay, d.CrawlDelayLine
		r.tokens.scanTokens(a.ua, func(g int32, n int) {
			if n == a.n {
				r.matchSet(r.merged[g].set, t, &res, false)
				if m := &r.merged[g]; m.delay > delay {
					delay, line = m.delay, m.delayLine
				}
			}
		})
		d.CrawlDelay, d.CrawlDelayLine = delay, line
	}
	r.verdict(&res, &d)
	return d
}

// Both combines the decisions of two groups for one target, for a client
// that both groups bind: the target is allowed only when both allow it, and
// the longer Crawl-delay applies. The result is d when d denies or both
// allow (with the longer delay), and also when only also denies. A client
// whose claim to a group is not proven is judged this way by its group and
// "*", so that no header earns more than "*" or escapes its own group.
func Both(d, also Decision) Decision {
	if d.Exempt || also.Exempt {
		return d
	}
	longer := d
	if also.CrawlDelay > d.CrawlDelay {
		longer = also
	}
	if d.Allowed && !also.Allowed {
		d = also
	}
	d.CrawlDelay, d.CrawlDelayLine = longer.CrawlDelay, longer.CrawlDelayLine
	return d
}

// matchSet runs the tries of rule set si over target (see ruleSet).
func (r *Robots) matchSet(si int32, target []byte, res *result, all bool) {
	set := &r.sets[si]
	r.m.match(r.rules, set.root, target, res, all)
	for _, root := range set.more {
		r.m.match(r.rules, root, target, res, all)
	}
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
