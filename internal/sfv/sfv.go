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
