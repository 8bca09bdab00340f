// Package sfv reads the structured fields (RFC 9651) that HTTP Message
// Signatures (RFC 9421) carry — Signature-Input, Signature and
// Signature-Agent — and writes them back in canonical form, as a signature
// base needs.
//
// A general structured-field library builds maps, interfaces and copies
// for every member, parameter and string; verifying one Web Bot Auth
// signature that way took about 80 allocations. sfv keeps views into the
// header text instead: a bare item is its kind and the text the header
// wrote, and a Field stores the members, items and parameters of one
// header in small arrays of its own, spilling to the heap only past them.
// Parsing a signature's headers therefore allocates nothing in the common
// case; a string with escapes, a byte sequence or a display string is
// decoded only when asked for.
//
// The syntax accepted is RFC 9651's (dates and display strings included),
// checked against github.com/dunglas/httpsfv by this package's fuzz tests.
// The work a Field does is linear in its text: a dictionary has at most
// MaxMembers members, and an inner list or a parameter list at most
// MaxListLen entries, so that duplicates (the last one wins, in the first
// one's place) are found in bounded time.
package sfv

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is the type of a bare item.
type Kind uint8

// The kinds of bare items (RFC 9651 §3.3).
const (
	Invalid Kind = iota
	Integer
	Decimal
	String
	Token
	Bytes
	Boolean
	Date
	DisplayString
)

// Bounds of one Field, so that finding duplicates stays linear in the
// header's length.
const (
	// MaxMembers is the most members a dictionary may have.
	MaxMembers = 64
	// MaxListLen is the most items an inner list, or parameters a
	// parameter list, may have.
	MaxListLen = 64
)

// Bare is a bare item as the header wrote it.
type Bare struct {
	// Text is the item's text: a string's or display string's content
	// between the quotes (escapes as written), a token, a byte sequence's
	// base64, a decimal's digits (sign included).
	Text string
	// Int is the value of an integer or a date, and 1 or 0 for a boolean.
	Int  int64
	Kind Kind
}

// Str returns the value of a string item, its escapes removed (which
// allocates only when there are some), and whether b is a string.
func (b Bare) Str() (string, bool) {
	if b.Kind != String {
		return "", false
	}
	if strings.IndexByte(b.Text, '\\') < 0 {
		return b.Text, true
	}
	var s strings.Builder
	s.Grow(len(b.Text))
	for i := 0; i < len(b.Text); i++ {
		if b.Text[i] == '\\' {
			i++
		}
		s.WriteByte(b.Text[i])
	}
	return s.String(), true
}

// IsString reports whether b is the string s.
func (b Bare) IsString(s string) bool {
	if b.Kind != String {
		return false
	}
	t := b.Text
	i := 0
	for j := 0; j < len(t); j++ {
		if t[j] == '\\' {
			j++
		}
		if i >= len(s) || s[i] != t[j] {
			return false
		}
		i++
	}
	return i == len(s)
}

// Bytes appends the value of a byte-sequence item to dst; ok is false when
// b is not one.
func (b Bare) Bytes(dst []byte) (_ []byte, ok bool) {
	if b.Kind != Bytes {
		return dst, false
	}
	out, err := base64.StdEncoding.AppendDecode(dst, []byte(b.Text))
	return out, err == nil
}

// Equal reports whether a and b are the same value.
func (b Bare) Equal(o Bare) bool {
	if b.Kind != o.Kind {
		return false
	}
	if b.Text == o.Text && b.Int == o.Int {
		return true
	}
	switch b.Kind {
	case String:
		return o.IsString(mustStr(b))
	case Bytes, Decimal, DisplayString:
		// Compared as serialized, in buffers on the stack for values of
		// the usual sizes.
		var x, y [128]byte
		return string(b.Append(x[:0])) == string(o.Append(y[:0]))
	}
	return false
}

func mustStr(b Bare) string { s, _ := b.Str(); return s }

// Append appends the canonical serialization of b (RFC 9651 §4.1.3) to dst.
func (b Bare) Append(dst []byte) []byte {
	switch b.Kind {
	case Integer:
		return strconv.AppendInt(dst, b.Int, 10)
	case Date:
		return strconv.AppendInt(append(dst, '@'), b.Int, 10)
	case Boolean:
		if b.Int != 0 {
			return append(dst, "?1"...)
		}
		return append(dst, "?0"...)
	case String:
		// The only escapes are \" and \\, which serializing writes
		// again: the text as written is canonical.
		dst = append(dst, '"')
		dst = append(dst, b.Text...)
		return append(dst, '"')
	case Token:
		return append(dst, b.Text...)
	case Decimal:
		return appendDecimal(dst, b.Text)
	case Bytes:
		dst = append(dst, ':')
		if canonicalBase64(b.Text) {
			dst = append(dst, b.Text...)
		} else {
			v, _ := b.Bytes(nil)
			dst = base64.StdEncoding.AppendEncode(dst, v)
		}
		return append(dst, ':')
	case DisplayString:
		dst = append(dst, '%', '"')
		const hex = "0123456789abcdef"
		for i := 0; i < len(b.Text); i++ {
			c := b.Text[i]
			if c == '%' {
				c = unhex(b.Text[i+1])<<4 | unhex(b.Text[i+2])
				i += 2
			}
			if c == '%' || c == '"' || c < 0x20 || c >= 0x7f {
				dst = append(dst, '%', hex[c>>4], hex[c&15])
			} else {
				dst = append(dst, c)
			}
		}
		return append(dst, '"')
	}
	return dst
}

// appendDecimal writes a decimal's digits canonically: no leading zeros in
// the integer part, no trailing zeros in the fraction but one digit.
func appendDecimal(dst []byte, t string) []byte {
	if t[0] == '-' {
		dst = append(dst, '-')
		t = t[1:]
	}
	dot := strings.IndexByte(t, '.')
	ip, fp := strings.TrimLeft(t[:dot], "0"), strings.TrimRight(t[dot+1:], "0")
	if ip == "" {
		ip = "0"
	}
	if fp == "" {
		fp = "0"
	}
	dst = append(dst, ip...)
	dst = append(dst, '.')
	return append(dst, fp...)
}

// canonicalBase64 reports whether s (valid padded base64) is what encoding
// its bytes writes: the unused bits of its last character are zero.
func canonicalBase64(s string) bool {
	pad := len(s) - len(strings.TrimRight(s, "="))
	if pad == 0 || len(s) < 1+pad {
		return true
	}
	c := s[len(s)-1-pad]
	const enc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	v := strings.IndexByte(enc, c)
	if pad == 1 {
		return v&3 == 0
	}
	return v&15 == 0
}

// Param is one parameter: its key and value (true when the header wrote
// the key alone).
type Param struct {
	Key   string
	Value Bare
}

// span is a range [lo, hi) of a Field's items or parameters.
type span struct{ lo, hi int32 }

// Item is an item: a bare item and its parameters.
type Item struct {
	Value  Bare
	params span
}

// Member is a dictionary member: an item, or an inner list of items with
// parameters of its own.
type Member struct {
	Key string
	// Item is the member's value when it is not an inner list.
	Item  Item
	Inner bool
	items span // an inner list's items
	// params are an inner list's parameters (an item's are in Item).
	params span
}

// Field holds one parsed header field. Its zero value is ready; parsing
// again reuses its storage. The views it returns are valid until then.
type Field struct {
	text string
	nm   int // members in all
	// The first members, items and parameters are stored inline, the
	// rest on the heap past them.
	members   []Member
	inMembers [4]Member
	inItems   [8]Item
	inParams  [16]Param
	exItems   []Item
	exParams  []Param
	nItems    int32
	nParams   int32
}

// reset empties f for a new parse of text.
func (f *Field) reset(lines []string) {
	switch len(lines) {
	case 0:
		f.text = ""
	case 1:
		f.text = lines[0]
	default:
		f.text = strings.Join(lines, ",")
	}
	f.members = f.members[:0]
	f.nm, f.nItems, f.nParams = 0, 0, 0
	f.exItems, f.exParams = f.exItems[:0], f.exParams[:0]
}

// Len returns the number of members of a parsed dictionary.
func (f *Field) Len() int { return f.nm }

// Member returns member i of a parsed dictionary, in the order of first
// appearance.
func (f *Field) Member(i int) *Member {
	if i < len(f.inMembers) {
		return &f.inMembers[i]
	}
	return &f.members[i-len(f.inMembers)]
}

// Get returns the member named key of a parsed dictionary.
func (f *Field) Get(key string) (*Member, bool) {
	for i := range f.nm {
		if m := f.Member(i); m.Key == key {
			return m, true
		}
	}
	return nil, false
}

// Items returns the number of items of inner list m.
func (f *Field) Items(m *Member) int { return int(m.items.hi - m.items.lo) }

// Item returns item i of inner list m.
func (f *Field) Item(m *Member, i int) *Item { return f.item(m.items.lo + int32(i)) }

func (f *Field) item(i int32) *Item {
	if int(i) < len(f.inItems) {
		return &f.inItems[i]
	}
	return &f.exItems[int(i)-len(f.inItems)]
}

func (f *Field) param(i int32) *Param {
	if int(i) < len(f.inParams) {
		return &f.inParams[i]
	}
	return &f.exParams[int(i)-len(f.inParams)]
}

// Params returns the number of parameters of it.
func (f *Field) Params(it *Item) int { return int(it.params.hi - it.params.lo) }

// Param returns parameter i of it.
func (f *Field) Param(it *Item, i int) *Param { return f.param(it.params.lo + int32(i)) }

// ListParams returns the number of parameters of inner list m.
func (f *Field) ListParams(m *Member) int { return int(m.params.hi - m.params.lo) }

// ListParam returns parameter i of inner list m.
func (f *Field) ListParam(m *Member, i int) *Param { return f.param(m.params.lo + int32(i)) }

// ItemParam returns the value of it's parameter key.
func (f *Field) ItemParam(it *Item, key string) (Bare, bool) { return f.get(it.params, key) }

// ListParamValue returns the value of inner list m's parameter key.
func (f *Field) ListParamValue(m *Member, key string) (Bare, bool) { return f.get(m.params, key) }

func (f *Field) get(s span, key string) (Bare, bool) {
	for i := s.lo; i < s.hi; i++ {
		if p := f.param(i); p.Key == key {
			return p.Value, true
		}
	}
	return Bare{}, false
}

// AppendItem appends the canonical serialization of it (its parameters
// included) to dst.
func (f *Field) AppendItem(dst []byte, it *Item) []byte {
	return f.appendParams(it.Value.Append(dst), it.params)
}

// AppendInnerList appends the canonical serialization of inner list m to
// dst.
func (f *Field) AppendInnerList(dst []byte, m *Member) []byte {
	dst = append(dst, '(')
	for i := m.items.lo; i < m.items.hi; i++ {
		if i > m.items.lo {
			dst = append(dst, ' ')
		}
		dst = f.AppendItem(dst, f.item(i))
	}
	dst = append(dst, ')')
	return f.appendParams(dst, m.params)
}

func (f *Field) appendParams(dst []byte, s span) []byte {
	for i := s.lo; i < s.hi; i++ {
		p := f.param(i)
		dst = append(dst, ';')
		dst = append(dst, p.Key...)
		if p.Value.Kind == Boolean && p.Value.Int == 1 {
			continue
		}
		dst = append(dst, '=')
		dst = p.Value.Append(dst)
	}
	return dst
}

// SameItem reports whether a and b (items of f) are the same value with
// the same parameters, in any order.
func (f *Field) SameItem(a, b *Item) bool {
	if !a.Value.Equal(b.Value) || a.params.hi-a.params.lo != b.params.hi-b.params.lo {
		return false
	}
	for i := a.params.lo; i < a.params.hi; i++ {
		p := f.param(i)
		v, ok := f.get(b.params, p.Key)
		if !ok || !v.Equal(p.Value) {
			return false
		}
	}
	return true
}

// Error is a syntax error: what was wrong, and where.
type Error struct {
	Offset int
	What   string
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
		return &Error{off, "more than " + strconv.Itoa(MaxMembers) + " dictionary members"}
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

func (p *parser) fail(what string) error { return &Error{p.off, what} }

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
			return p.fail("more than " + strconv.Itoa(MaxListLen) + " items in an inner list")
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
			return s, p.fail("more than " + strconv.Itoa(MaxListLen) + " parameters")
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
