package middleware

import (
	"bytes"
	"net/url"
	"strings"
)

// requestTarget returns the origin-form target (path and "?query") that a
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
func requestTarget(t string) (target string, ok bool) {
	if t == "" {
		return "/", true
	}
	if t[0] == '/' {
		if strings.IndexByte(t, '#') < 0 {
			return t, true
		}
		return strings.ReplaceAll(t, "#", "%23"), true
	}
	if i := strings.Index(t, "://"); i > 0 && isScheme(t[:i]) {
		// The usual absolute form, scheme://authority/path: the path
		// starts after the authority, as net/http reads it, without a
		// parse (and so without allocating).
		rest := t[i+3:]
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

// isScheme reports whether s is a URI scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// splitTarget returns the path and the query (with its '?') of a
// request-target. An absolute-form target loses its scheme and authority.
func splitTarget(t string) (path, query string) {
	if len(t) > 0 && t[0] != '/' {
		if i := strings.Index(t, "://"); i >= 0 {
			rest := t[i+3:]
			if j := strings.IndexAny(rest, "/?"); j >= 0 {
				t = rest[j:]
			} else {
				t = ""
			}
		}
	}
	if i := strings.IndexByte(t, '#'); i >= 0 {
		t = t[:i]
	}
	path, query = t, ""
	if i := strings.IndexByte(t, '?'); i >= 0 {
		path, query = t[:i], t[i:]
	}
	if path == "" {
		path = "/"
	}
	return path, query
}

// needsDecodedView reports whether the decoded view of path can differ from
// path: it holds an escape, an empty segment or a dot-segment.
func needsDecodedView(path string) bool {
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
		}
	}
	return len(path) == 0 || path[0] != '/'
}

// decodedTarget returns the second, defensive view of a request-target
// (SEMANTICS.md §6a): the path fully percent-decoded (reserved escapes such
// as %2F included), dot-segments removed (RFC 3986 §5.2.4) and repeated
// slashes collapsed, followed by the query as sent. Decoded bytes that
// would change how the target is read again ('%', '?', '#') are
// re-escaped, so decoding happens exactly once. ok is false when the view
// equals the target, so callers can skip it without allocating.
//
// A backslash (raw or %5C) is read as '/', as some servers do; since others
// read it as an ordinary character, appendViewKeepBackslash gives the
// view for those, and a path that holds one is judged in both.
func decodedTarget(path, query string) (string, bool) {
	b, start, ok := appendView(nil, path, query)
	return string(b[start:]), ok
}

// appendView is decodedTarget into a caller's buffer: it appends working
// bytes and then the view to buf, and returns the buffer and where the view
// starts in it. It allocates only when buf is too small.
func appendView(buf []byte, path, query string) ([]byte, int, bool) {
	return appendDecoded(buf, path, query, true)
}

// appendViewKeepBackslash is appendView with backslashes kept as ordinary
// characters; ok is false when path holds no backslash (the view would
// equal appendView's).
func appendViewKeepBackslash(buf []byte, path, query string) ([]byte, int, bool) {
	if !hasBackslash(path) {
		return buf, len(buf), false
	}
	return appendDecoded(buf, path, query, false)
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

func appendDecoded(buf []byte, path, query string, backslashIsSlash bool) ([]byte, int, bool) {
	if !needsDecodedView(path) {
		return buf, len(buf), false
	}
	base := len(buf)
	if len(path) == 0 || path[0] != '/' {
		buf = append(buf, '/')
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == '%' && i+2 < len(path) {
			if hi, ok := unhexDigit(path[i+1]); ok {
				if lo, ok := unhexDigit(path[i+2]); ok {
					c = hi<<4 | lo
					i += 2
				}
			}
		}
		if c == '\\' && backslashIsSlash {
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
	return buf, start, true
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

func unhexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
