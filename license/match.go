package license

import (
	"strings"
	"sync"

	"github.com/robotsguard/robotsguard/policy"
)

// Matcher finds the content of a document that covers a request-target of
// one site. It is safe for concurrent use. A nil *Matcher matches nothing.
type Matcher struct {
	contents []Content
	pats     []pattern
	chunks   []chunk

	// The targets whose path is /robots.txt, which package policy never
	// matches, are matched against a second compilation whose patterns
	// (and the target) carry a prefix, made when first needed.
	exemptOnce   sync.Once
	exemptChunks []chunk
}

// pattern is one content's path pattern.
type pattern struct {
	content int32
	path    string
}

// chunk is one synthetic robots.txt: a "User-agent: *" group with a
// Disallow line per pattern. A document whose patterns do not fit in
// policy.MaxBodySize bytes is compiled into several chunks.
type chunk struct {
	agent policy.Agent
	// content[i] is the content of the pattern on line i+2.
	content []int32
}

// exemptPrefix is prepended to patterns and targets for the /robots.txt
// targets.
const exemptPrefix = "/_"

// For returns a matcher of the contents of d that apply to site, which is
// "scheme://host[:port]" as the guard names a site ("https://example.com").
// It keeps the contents whose URL is a path pattern (starting with '/' or
// '*') and those whose URL is an absolute URL of the same site (scheme and
// host compared case-insensitively, a default port equal to none), the
// latter reduced to their path and query; the others are left out. A
// pattern's white space, control characters and '#' are percent-encoded,
// which RFC 9309 matching treats alike. The document must not be changed
// afterwards. For of a nil Document returns nil.
func (d *Document) For(site string) *Matcher {
	if d == nil {
		return nil
	}
	so, siteOK := splitURL(site)
	m := &Matcher{contents: d.Contents}
	for i, c := range d.Contents {
		var path string
		switch {
		case strings.HasPrefix(c.URL, "/") || strings.HasPrefix(c.URL, "*"):
			path = c.URL
		default:
			u, ok := splitURL(c.URL)
			if !ok || !siteOK || u.origin != so.origin {
				continue
			}
			path = u.rest
		}
		m.pats = append(m.pats, pattern{content: int32(i), path: escapePattern(path)})
	}
	m.chunks = compile(m.pats, "")
	return m
}

// escapePattern percent-encodes the bytes of a pattern that a robots.txt
// line cannot hold: white space, controls and '#'.
func escapePattern(p string) string {
	if !strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '#' }) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c <= ' ' || c == 0x7f || c == '#' {
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// compile builds the chunks of the patterns, each prefixed by prefix.
func compile(pats []pattern, prefix string) []chunk {
	const header = "User-agent: *\n"
	var chunks []chunk
	var text []byte
	var index []int32
	flush := func() {
		if len(index) == 0 {
			return
		}
		r := policy.Parse(text)
		chunks = append(chunks, chunk{agent: r.Agent(""), content: index})
		text, index = nil, nil
	}
	for _, p := range pats {
		line := len("Disallow: ") + len(prefix) + len(p.path) + 1
		if len(text)+line > policy.MaxBodySize {
			flush()
		}
		if len(text) == 0 {
			text = append(text, header...)
		}
		text = append(text, "Disallow: "...)
		text = append(text, prefix...)
		text = append(text, p.path...)
		text = append(text, '\n')
		index = append(index, p.content)
	}
	flush()
	return chunks
}

// Match returns the content that covers target, the request-target as sent
// (the escaped path and an optional "?query"; an absolute URL works too),
// or nil when none does. Patterns are matched as robots.txt rules are
// (RFC 9309, with package policy's normalisation of percent-encoding):
// '*' matches any run of characters, a final '$' the end of the target,
// and the query takes part. The most specific content wins, the one whose
// pattern is the longest; of equally long ones, the first in the document.
// Match does not allocate, except for a target whose path is /robots.txt.
func (m *Matcher) Match(target string) *Content {
	if m == nil || len(m.chunks) == 0 {
		return nil
	}
	chunks := m.chunks
	if policy.IsRobotsTxt(target) {
		m.exemptOnce.Do(func() { m.exemptChunks = compile(m.pats, exemptPrefix) })
		chunks = m.exemptChunks
		path, query := policy.SplitTarget(target)
		target = exemptPrefix + path + query
	}
	best, prio := int32(-1), -1
	for i := range chunks {
		d := chunks[i].agent.Decide(target)
		if d.Allowed || d.Rule == nil {
			continue
		}
		if d.Rule.Priority > prio {
			best, prio = chunks[i].content[d.Rule.Line-2], d.Rule.Priority
		}
	}
	if best < 0 {
		return nil
	}
	return &m.contents[best]
}
