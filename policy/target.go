package policy

import (
	"bytes"
	"net/url"
	"strings"
)

// This file reads request-targets: the path a rule is matched against
// (requestPath, SplitTarget), the origin-form target a Go server hands on
// (RequestTarget), and the second, decoded view (SEMANTICS.md §6a).

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

// RequestTarget returns the origin-form target (path and "?query") that a
// Go server hands to the upstream for the request-target t as sent, so
// that the guard judges the path the upstream serves:
//   - an absolute-form target, whatever its scheme and with or without
//     "//" ("http:/private/x", "x:/private/x", "http://h/private/x"), is
//     read as net/http reads it (url.ParseRequestURI) and reduced to its
//     path and query;
//   - a raw '#' is no fragment in a request-target (Go keeps it in the path,
//     and path.Clean then resolves "/#/../private" to "/private"), so it is
//     escaped as %23: the RFC view matches it as data and the decoded view
//     removes the dot-segments around it;
//   - ok is false for a target that has no path starting with '/' (the
//     asterisk form, an opaque URI, garbage), which bots are refused.
//
// An origin-form target without '#' is returned as it is, without
// allocating.
func RequestTarget(t string) (target string, ok bool) {
	if t == "" {
		return "/", true
	}
	if t[0] == '/' {
		if strings.IndexByte(t, '#') < 0 {
			return t, true
		}
		return strings.ReplaceAll(t, "#", "%23"), true
	}
	if i := schemeEnd(t); i > 0 {
		// The usual absolute form, scheme://authority/path: the path
		// starts after the authority, as net/http reads it, without a
		// parse (and so without allocating).
		rest := t[i:]
		j := strings.IndexAny(rest, "/?#")
		switch {
		case j < 0:
			return "/", true
		case rest[j] == '/':
			t = rest[j:]
		default:
			t = "/" + rest[j:]
		}
		if strings.IndexByte(t, '#') < 0 {
			return t, true
		}
		return strings.ReplaceAll(t, "#", "%23"), true
	}
	u, err := url.ParseRequestURI(t)
	if err != nil || !strings.HasPrefix(u.Path, "/") {
		return "", false
	}
	target = u.EscapedPath()
	if u.ForceQuery || u.RawQuery != "" {
		target += "?" + u.RawQuery
	}
	return strings.ReplaceAll(target, "#", "%23"), true
}

// SplitTarget returns the path and the query (with its '?') of a
// request-target, without a fragment; an absolute-form target loses its
// scheme and authority, and an empty path is "/".
func SplitTarget(t string) (path, query string) {
	t, _ = requestPath(t)
	path, query = t, ""
	if i := strings.IndexByte(t, '?'); i >= 0 {
		path, query = t[:i], t[i:]
	}
	if path == "" {
		path = "/"
	}
	return path, query
}

// NeedsDecodedView reports whether a decoded view of path can differ from
// path: it holds an escape, an empty segment, a dot-segment, a backslash
// or a path parameter (';').
func NeedsDecodedView(path string) bool {
	return needsView(path, true)
}

// needsView is NeedsDecodedView, with path parameters counted only when
// params is set (the views without ViewOptions.PathParams keep them).
func needsView(path string, params bool) bool {
	for i := 0; i < len(path); i++ {
		switch path[i] {
		case '%':
			return true
		case '/':
			if i+1 < len(path) && (path[i+1] == '/' || path[i+1] == '.') {
				return true
			}
		case '\\':
			return true
		case ';':
			if params {
				return true
			}
		}
	}
	return len(path) == 0 || path[0] != '/'
}

// ViewOptions chooses how a decoded view reads what servers disagree on.
// The zero value reads a backslash as '/' and keeps path parameters.
type ViewOptions struct {
	// KeepBackslash reads a backslash (raw or %5C) as an ordinary
	// character, as some servers do, instead of as '/'.
	KeepBackslash bool
	// PathParams drops each segment's path parameters, as servlet
	// containers (Tomcat, Jetty) do before they decode the path: a raw
	// ';' and what follows it up to the next raw '/' are removed, so
	// "/private;x/y" reads "/private/y" and "/a/..;/b" reads "/b". An
	// escaped ';' (%3B) is data.
	PathParams bool
}

// DecodedTarget returns the second, defensive view of a request-target
// (SEMANTICS.md §6a): the path fully percent-decoded (reserved escapes such
// as %2F included), dot-segments removed (RFC 3986 §5.2.4) and repeated
// slashes collapsed, followed by the query as sent. Decoded bytes that
// would change how the target is read again ('%', '?', '#') are
// re-escaped, so decoding happens exactly once. ok is false when the view
// equals the target, so callers can skip it.
//
// A backslash (raw or %5C) is read as '/', as some servers do, and path
// parameters are kept; AppendDecodedView's ViewOptions give the other
// readings, and the enforcer judges a path in each that applies.
func DecodedTarget(path, query string) (string, bool) {
	b, start, ok := AppendDecodedView(nil, path, query, ViewOptions{})
	return string(b[start:]), ok
}

// AppendDecodedView is DecodedTarget into a caller's buffer, read as opts
// says: it appends working bytes and then the view to buf, and returns the
// buffer and where the view starts in it. It allocates only when buf is
// too small, and works in time linear in len(path). ok is false when the
// view would equal the target, and also, so that callers can skip a
// reading that changes nothing, with opts.KeepBackslash when path holds no
// backslash (the view would equal the one without it) and with
// opts.PathParams when path holds no raw ';'.
func AppendDecodedView(buf []byte, path, query string, opts ViewOptions) ([]byte, int, bool) {
	if opts.KeepBackslash && !hasBackslash(path) ||
		opts.PathParams && strings.IndexByte(path, ';') < 0 ||
		!needsView(path, opts.PathParams) {
		return buf, len(buf), false
	}
	buf, start := appendDecoded(buf, path, query, opts)
	return buf, start, true
}

// hasBackslash reports whether path holds a backslash, raw or as %5C.
func hasBackslash(path string) bool {
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\':
			return true
		case path[i] == '%' && i+2 < len(path) && path[i+1] == '5' && (path[i+2] == 'c' || path[i+2] == 'C'):
			return true
		}
	}
	return false
}

// appendDecoded appends the decoded path to buf (path parameters dropped
// first with opts.PathParams) and removes its dot-segments there, then
// appends the view, re-escaped, and query; it returns the buffer and where
// the view starts.
func appendDecoded(buf []byte, path, query string, opts ViewOptions) ([]byte, int) {
	base := len(buf)
	if len(path) == 0 || path[0] != '/' {
		buf = append(buf, '/')
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == ';' && opts.PathParams {
			for i+1 < len(path) && path[i+1] != '/' {
				i++
			}
			continue
		}
		if c == '%' && i+2 < len(path) {
			if v, ok := escapeAt(path, i); ok {
				c = v
				i += 2
			}
		}
		if c == '\\' && !opts.KeepBackslash {
			c = '/' // some servers treat a backslash as a separator
		}
		buf = append(buf, c)
	}
	segs := removeDotSegments(buf[base:])
	start := len(buf)
	for _, c := range segs {
		switch c {
		case '%':
			buf = append(buf, "%25"...)
		case '?':
			buf = append(buf, "%3F"...)
		case '#':
			buf = append(buf, "%23"...)
		default:
			buf = append(buf, c)
		}
	}
	buf = append(buf, query...)
	return buf, start
}

// removeDotSegments collapses repeated slashes and removes "." and ".."
// segments (RFC 3986 §5.2.4) of p, which starts with '/', in place; it
// returns the result, a prefix of p. A ".." drops the segment before it by
// cutting back to that segment's '/', so the work stays linear in len(p).
func removeDotSegments(p []byte) []byte {
	n := 0 // p[:n] is the output so far: "/seg" pieces
	for i := 0; i < len(p); {
		// p[i] == '/'
		j := i + 1
		for j < len(p) && p[j] != '/' {
			j++
		}
		seg := p[i+1 : j]
		last := j >= len(p)
		switch string(seg) {
		case "", ".":
			if last {
				p[n] = '/'
				n++
			}
		case "..":
			if k := bytes.LastIndexByte(p[:n], '/'); k >= 0 {
				n = k
			}
			if last {
				p[n] = '/'
				n++
			}
		default:
			// The output never passes the input (each piece is copied
			// from at or after where it lands), so copy is safe.
			p[n] = '/'
			n += 1 + copy(p[n+1:], seg)
		}
		i = j
	}
	if n == 0 {
		p[0] = '/'
		n = 1
	}
	return p[:n]
}

// IsRobotsTxt reports whether the path of a request-target is /robots.txt
// (its escapes of unreserved characters decoded, as rules read them): that
// path is always allowed (RFC 9309 §2.2.2). It does not allocate.
func IsRobotsTxt(target string) bool {
	// The common case at a glance, small enough to be inlined.
	return !(len(target) > 1 && target[0] == '/' && target[1] != 'r' && target[1] != '%') && isRobotsTxt(target)
}

// isRobotsTxt is IsRobotsTxt for a target that may name /robots.txt.
func isRobotsTxt(target string) bool {
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
