package policy

// This file holds the percent-encoding normalisation that RFC 9309 §2.2.2
// asks for, applied the same way to patterns and to request targets
// (SEMANTICS.md §6).

const upperHex = "0123456789ABCDEF"

// unhex returns the value of a hex digit and whether c is one.
func unhex(c byte) (byte, bool) {
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

// escapeAt reports whether s[i:] starts with a valid %xx escape, and its
// value.
func escapeAt(s string, i int) (byte, bool) {
	if s[i] != '%' || i+2 >= len(s) {
		return 0, false
	}
	hi, ok1 := unhex(s[i+1])
	lo, ok2 := unhex(s[i+2])
	return hi<<4 | lo, ok1 && ok2
}

// isUnreserved reports whether c is an RFC 3986 unreserved character.
func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// mustEncode reports whether c may not stand raw in a URI and is therefore
// percent-encoded: bytes of 0x80 and above, controls, space, and
// " < > \ ^ ` { | }.
func mustEncode(c byte) bool {
	if c <= ' ' || c >= 0x7f {
		return true
	}
	switch c {
	case '"', '<', '>', '\\', '^', '`', '{', '|', '}':
		return true
	}
	return false
}

// special marks the bytes that appendNormalized may change in a target:
// '%', '*', '$' and the bytes of mustEncode. It is computed once and never
// written afterwards.
var special = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c == '%' || c == '*' || c == '$' || mustEncode(byte(c))
	}
	return t
}()

// changes marks the bytes that appendNormalized changes in a pattern
// ('%' and the bytes of mustEncode): a pattern without any is its own
// normalised form, as most are. It is computed once and never written
// afterwards.
var changes = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c == '%' || mustEncode(byte(c))
	}
	return t
}()

// plain reports whether s holds no byte that appendNormalized(_, s, false)
// changes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if changes[s[i]] {
			return false
		}
	}
	return true
}

// isCanonical reports whether s is its own normalised target form, as most
// request targets are, so that it can be matched as it is.
func isCanonical(s string) bool {
	for i := 0; i < len(s); i++ {
		if special[s[i]] {
			return false
		}
	}
	return true
}

// appendNormalized appends s to dst in the normalised form of SEMANTICS.md
// §6: every %xx escape with upper-case hex, escapes of unreserved characters
// decoded, and bytes that may not stand raw in a URI encoded. A '%' that does
// not start a valid escape is kept as it is, on both sides alike.
//
// With literal set (targets), a raw '*' or '$' is written as litStar or
// litDollar: that is the form in which targets are matched, so that a
// pattern's %2A and %24 (and a '$' that is not the pattern's last
// character) can match them literally, and no pattern byte matches them
// otherwise.
func appendNormalized(dst []byte, s string, literal bool) []byte {
	if !literal && plain(s) {
		return append(dst, s...)
	}
	marks := &changes
	if literal {
		marks = &special
	}
	for i := 0; i < len(s); {
		// Runs of bytes that stay as they are are copied at once.
		j := i
		for j < len(s) && !marks[s[j]] {
			j++
		}
		dst = append(dst, s[i:j]...)
		if j == len(s) {
			break
		}
		c := s[j]
		i = j + 1
		switch {
		case c == '%':
			if v, ok := escapeAt(s, j); ok {
				if isUnreserved(v) {
					dst = append(dst, v)
				} else {
					dst = append(dst, '%', upperHex[v>>4], upperHex[v&15])
				}
				i = j + 3
			} else {
				dst = append(dst, '%')
			}
		case mustEncode(c):
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		case c == '*': // literal only
			dst = append(dst, litStar)
		default: // '$', literal only
			dst = append(dst, litDollar)
		}
	}
	return dst
}

// normalizedLen returns len(appendNormalized(nil, s, false)) without
// building the string: a rule's priority (SEMANTICS.md §7).
func normalizedLen(s string) int {
	if plain(s) {
		return len(s)
	}
	n := 0
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && !changes[s[j]] {
			j++
		}
		n += j - i
		if j == len(s) {
			break
		}
		i = j + 1
		if v, ok := escapeAt(s, j); ok {
			if isUnreserved(v) {
				n++
			} else {
				n += 3
			}
			i = j + 3
		} else if mustEncode(s[j]) {
			n += 3
		} else {
			n++ // a '%' that starts no escape
		}
	}
	return n
}
