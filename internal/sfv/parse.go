package sfv

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a syntax error: what was wrong, and where.
type Error struct {
	Offset int
	What   string
	// Bound reports that the field is past one of this parser's bounds
	// (MaxMembers, MaxListLen), not that its syntax is wrong.
	Bound bool
}

func (e *Error) Error() string { return "sfv: " + e.What + " at character " + strconv.Itoa(e.Offset) }

// ParseDictionary parses the lines of a dictionary field (joined as one
// field, with commas) into f.
func (f *Field) ParseDictionary(lines []string) error {
	f.reset(lines)
	p := parser{s: f.text}
	p.skipSP()
	for !p.eof() {
		key, err := p.key()
		if err != nil {
			return err
		}
		var m Member
		m.Key = key
		if !p.eof() && p.s[p.off] == '=' {
			p.off++
			if err := p.itemOrInnerList(f, &m); err != nil {
				return err
			}
		} else {
			m.Item.Value = Bare{Kind: Boolean, Int: 1}
			if m.Item.params, err = p.params(f); err != nil {
				return err
			}
		}
		if err := f.addMember(m, p.off); err != nil {
			return err
		}
		p.skipOWS()
		if p.eof() {
			return nil
		}
		if p.s[p.off] != ',' {
			return p.fail("a dictionary member is not followed by a comma")
		}
		p.off++
		p.skipOWS()
		if p.eof() {
			return p.fail("a dictionary ends with a comma")
		}
	}
	return nil
}

// addMember adds m, or replaces the value of the member with m's key.
func (f *Field) addMember(m Member, off int) error {
	if old, ok := f.Get(m.Key); ok {
		*old = m
		return nil
	}
	if f.nm == MaxMembers {
		return &Error{off, "more than " + strconv.Itoa(MaxMembers) + " dictionary members", true}
	}
	if f.nm < len(f.inMembers) {
		f.inMembers[f.nm] = m
	} else {
		f.members = append(f.members, m)
	}
	f.nm++
	return nil
}

// ParseItem parses the lines of an item field into f and returns the item.
func (f *Field) ParseItem(lines []string) (*Item, error) {
	f.reset(lines)
	p := parser{s: f.text}
	p.skipSP()
	var m Member
	if err := p.item(f, &m.Item); err != nil {
		return nil, err
	}
	p.skipSP()
	if !p.eof() {
		return nil, p.fail("an item is followed by more")
	}
	m.Key = ""
	_ = f.addMember(m, p.off)
	return &f.Member(0).Item, nil
}

// parser is the state of one parse: the text and the offset reached. The
// Field parsed into is passed apart, so that escape analysis, which does
// not tell a struct's fields apart, sees that the text (stored into the
// Field's storage) leaks but the Field does not.
type parser struct {
	s   string
	off int
}

func (p *parser) eof() bool { return p.off >= len(p.s) }

func (p *parser) fail(what string) error { return &Error{p.off, what, false} }

// pastBound is fail for input past one of the parser's bounds.
func (p *parser) pastBound(what string) error { return &Error{p.off, what, true} }

func (p *parser) skipSP() {
	for p.off < len(p.s) && p.s[p.off] == ' ' {
		p.off++
	}
}

func (p *parser) skipOWS() {
	for p.off < len(p.s) && (p.s[p.off] == ' ' || p.s[p.off] == '\t') {
		p.off++
	}
}

func (p *parser) itemOrInnerList(f *Field, m *Member) error {
	if p.eof() {
		return p.fail("a dictionary member has no value")
	}
	if p.s[p.off] != '(' {
		return p.item(f, &m.Item)
	}
	m.Inner = true
	p.off++
	m.items.lo = f.nItems
	for {
		p.skipSP()
		if p.eof() {
			return p.fail("an inner list is not closed")
		}
		if p.s[p.off] == ')' {
			p.off++
			m.items.hi = f.nItems
			var err error
			m.params, err = p.params(f)
			return err
		}
		var it Item
		if err := p.item(f, &it); err != nil {
			return err
		}
		if p.eof() || (p.s[p.off] != ')' && p.s[p.off] != ' ') {
			return p.fail("an inner-list item is not followed by a space or ')'")
		}
		if f.nItems-m.items.lo == MaxListLen {
			return p.pastBound("more than " + strconv.Itoa(MaxListLen) + " items in an inner list")
		}
		if int(f.nItems) < len(f.inItems) {
			f.inItems[f.nItems] = it
		} else {
			f.exItems = append(f.exItems, it)
		}
		f.nItems++
	}
}

func (p *parser) item(f *Field, it *Item) error {
	v, err := p.bare()
	if err != nil {
		return err
	}
	it.Value = v
	it.params, err = p.params(f)
	return err
}

func (p *parser) params(f *Field) (span, error) {
	s := span{f.nParams, f.nParams}
	for !p.eof() && p.s[p.off] == ';' {
		p.off++
		p.skipSP()
		key, err := p.key()
		if err != nil {
			return s, err
		}
		v := Bare{Kind: Boolean, Int: 1}
		if !p.eof() && p.s[p.off] == '=' {
			p.off++
			if v, err = p.bare(); err != nil {
				return s, err
			}
		}
		replaced := false
		for i := s.lo; i < s.hi; i++ {
			if q := f.param(i); q.Key == key {
				q.Value, replaced = v, true
				break
			}
		}
		if replaced {
			continue
		}
		if s.hi-s.lo == MaxListLen {
			return s, p.pastBound("more than " + strconv.Itoa(MaxListLen) + " parameters")
		}
		if int(f.nParams) < len(f.inParams) {
			f.inParams[f.nParams] = Param{key, v}
		} else {
			f.exParams = append(f.exParams, Param{key, v})
		}
		f.nParams++
		s.hi = f.nParams
	}
	return s, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func (p *parser) key() (string, error) {
	if p.eof() || !('a' <= p.s[p.off] && p.s[p.off] <= 'z' || p.s[p.off] == '*') {
		return "", p.fail("a key does not start with a lower-case letter or '*'")
	}
	start := p.off
	for p.off++; p.off < len(p.s); p.off++ {
		c := p.s[p.off]
		if !('a' <= c && c <= 'z' || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
	}
	return p.s[start:p.off], nil
}

// tchar reports whether c may follow a token's first character.
func tchar(c byte) bool {
	if isAlpha(c) || isDigit(c) {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}

func (p *parser) bare() (Bare, error) {
	if p.eof() {
		return Bare{}, p.fail("a value is missing")
	}
	switch c := p.s[p.off]; {
	case c == '"':
		return p.str()
	case c == '?':
		if p.off+1 < len(p.s) && (p.s[p.off+1] == '0' || p.s[p.off+1] == '1') {
			p.off += 2
			return Bare{Kind: Boolean, Int: int64(p.s[p.off-1] - '0')}, nil
		}
		p.off++
		return Bare{}, p.fail("a boolean is not ?0 or ?1")
	case c == ':':
		return p.bytes()
	case c == '-' || isDigit(c):
		return p.number()
	case c == '@':
		p.off++
		b, err := p.number()
		if err != nil || b.Kind != Integer {
			return Bare{}, p.fail("a date is not an integer")
		}
		b.Kind = Date
		return b, nil
	case c == '%':
		return p.displayString()
	case c == '*' || isAlpha(c):
		start := p.off
		for p.off++; p.off < len(p.s) && tchar(p.s[p.off]); p.off++ {
		}
		return Bare{Kind: Token, Text: p.s[start:p.off]}, nil
	}
	return Bare{}, p.fail("a value starts with an unexpected character")
}

func (p *parser) str() (Bare, error) {
	p.off++
	start := p.off
	for p.off < len(p.s) {
		c := p.s[p.off]
		p.off++
		switch {
		case c == '\\':
			if p.eof() || (p.s[p.off] != '"' && p.s[p.off] != '\\') {
				return Bare{}, p.fail("a string has a bad escape")
			}
			p.off++
		case c == '"':
			return Bare{Kind: String, Text: p.s[start : p.off-1]}, nil
		case c < 0x20 || c >= 0x7f:
			return Bare{}, p.fail("a string has a character that is not printable ASCII")
		}
	}
	return Bare{}, p.fail("a string is not closed")
}

func (p *parser) bytes() (Bare, error) {
	p.off++
	start := p.off
	for ; p.off < len(p.s); p.off++ {
		c := p.s[p.off]
		if c == ':' {
			t := p.s[start:p.off]
			p.off++
			// Padded base64, as encoding/base64's StdEncoding (and
			// httpsfv) read it.
			if len(t)%4 != 0 || !validPadding(t) {
				return Bare{}, p.fail("a byte sequence is not padded base64")
			}
			return Bare{Kind: Bytes, Text: t}, nil
		}
		if !isAlpha(c) && !isDigit(c) && c != '+' && c != '/' && c != '=' {
			return Bare{}, p.fail("a byte sequence has a character that is not base64")
		}
	}
	return Bare{}, p.fail("a byte sequence is not closed")
}

// validPadding reports whether t (base64 characters, a multiple of 4) has
// '=' only as its last one or two characters.
func validPadding(t string) bool {
	n := len(t)
	i := strings.IndexByte(t, '=')
	switch {
	case i < 0:
		return true
	case i == n-1:
		return true
	case i == n-2:
		return t[n-1] == '='
	}
	return false
}

func (p *parser) number() (Bare, error) {
	if p.eof() {
		return Bare{}, p.fail("a number is missing")
	}
	neg := p.s[p.off] == '-'
	start := p.off
	if neg {
		p.off++
	}
	if p.eof() || !isDigit(p.s[p.off]) {
		return Bare{}, p.fail("a number has no digits")
	}
	digits, dot := 0, -1
	for ; p.off < len(p.s); p.off++ {
		c := p.s[p.off]
		if isDigit(c) {
			digits++
		} else if c == '.' && dot < 0 {
			if digits > 12 {
				return Bare{}, p.fail("a decimal has more than 12 integer digits")
			}
			dot = p.off
			digits++
		} else {
			break
		}
		if dot < 0 && digits > 15 || digits > 16 {
			return Bare{}, p.fail("a number has too many digits")
		}
	}
	if dot < 0 {
		var n int64
		for _, c := range []byte(p.s[start:p.off]) {
			if c != '-' {
				n = n*10 + int64(c-'0')
			}
		}
		if neg {
			n = -n
		}
		return Bare{Kind: Integer, Int: n}, nil
	}
	if dot == p.off-1 {
		return Bare{}, p.fail("a decimal ends with '.'")
	}
	if p.off-dot-1 > 3 {
		return Bare{}, p.fail("a decimal has more than 3 fractional digits")
	}
	return Bare{Kind: Decimal, Text: p.s[start:p.off]}, nil
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

func (p *parser) displayString() (Bare, error) {
	if p.off+1 >= len(p.s) || p.s[p.off+1] != '"' {
		p.off++
		return Bare{}, p.fail("a display string does not start with %\"")
	}
	p.off += 2
	start := p.off
	// The decoded bytes must be UTF-8: they are checked a rune at a time,
	// without decoding the whole string.
	var pend [utf8.UTFMax]byte
	np := 0
	for p.off < len(p.s) {
		c := p.s[p.off]
		p.off++
		switch {
		case c == '%':
			if p.off+1 >= len(p.s) || !lowerHex(p.s[p.off]) || !lowerHex(p.s[p.off+1]) {
				return Bare{}, p.fail("a display string has a bad %-escape")
			}
			c = unhex(p.s[p.off])<<4 | unhex(p.s[p.off+1])
			p.off += 2
		case c == '"':
			if np > 0 {
				return Bare{}, p.fail("a display string is not UTF-8")
			}
			return Bare{Kind: DisplayString, Text: p.s[start : p.off-1]}, nil
		case c < 0x20 || c >= 0x7f:
			return Bare{}, p.fail("a display string has a character that is not printable ASCII")
		}
		pend[np] = c
		np++
		if utf8.FullRune(pend[:np]) {
			if r, _ := utf8.DecodeRune(pend[:np]); r == utf8.RuneError && !(np == 3 && pend[0] == 0xef && pend[1] == 0xbf && pend[2] == 0xbd) {
				return Bare{}, p.fail("a display string is not UTF-8")
			}
			np = 0
		}
	}
	return Bare{}, p.fail("a display string is not closed")
}

func lowerHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' }
