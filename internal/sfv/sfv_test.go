package sfv

import (
	"regexp"
	"strings"
	"testing"

	"github.com/dunglas/httpsfv"
)

// serialize writes a parsed dictionary back the way RFC 9651 §4.1.2 does,
// with this package's Append methods.
func serialize(f *Field) string {
	var b []byte
	for i := range f.Len() {
		m := f.Member(i)
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, m.Key...)
		switch {
		case m.Inner:
			b = f.AppendInnerList(append(b, '='), m)
		case m.Item.Value.Kind == Boolean && m.Item.Value.Int == 1:
			b = f.appendParams(b, m.Item.params)
		default:
			b = f.AppendItem(append(b, '='), &m.Item)
		}
	}
	return string(b)
}

// Dictionaries, and what they serialize to ("" with err for a syntax
// error), after RFC 9651 and RFC 9421's examples.
func TestParseDictionary(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: ``, want: ``},
		{in: `sig1=("@method" "@authority" "@path");created=1618884473;keyid="test-key-rsa-pss"`,
			want: `sig1=("@method" "@authority" "@path");created=1618884473;keyid="test-key-rsa-pss"`},
		{in: `  a=1 ,	b=2;x`, want: `a=1, b=2;x`},
		{in: `a=1, a=2, b`, want: `a=2, b`},                         // the last value, in the first place
		{in: `a=(1 2);p=1;p=?0`, want: `a=(1 2);p=?0`},              // likewise for parameters
		{in: `a=(  "x"   "y";k  )`, want: `a=("x" "y";k)`},          // spaces inside an inner list
		{in: `a=007.500, b=-0.0, c=-0`, want: `a=7.5, b=-0.0, c=0`}, // canonical numbers
		{in: `a=:AB==:, b=:AA==:`, want: `a=:AA==:, b=:AA==:`},      // canonical base64
		{in: `a=%"%66o%c3%a9"`, want: `a=%"fo%c3%a9"`},
		{in: `a=@1659578233, b=?1, c=?0, d=*tok/en:x`, want: `a=@1659578233, b, c=?0, d=*tok/en:x`},
		{in: `a="x\"y\\z"`, want: `a="x\"y\\z"`},
		{in: `a=123456789012345, b=-123456789012.123`, want: `a=123456789012345, b=-123456789012.123`},
		{in: `a=1,`, err: `ends with a comma`},
		{in: `a=1 b=2`, err: `not followed by a comma`},
		{in: `A=1`, err: `key`},
		{in: `a=(1 2`, err: `followed by a space`},
		{in: `a=(1 2 `, err: `not closed`},
		{in: `a=(1;)`, err: `key`},
		{in: `a=(1,2)`, err: `followed by a space`},
		{in: `a="x`, err: `not closed`},
		{in: `a="\x"`, err: `bad escape`},
		{in: "a=\"\x7f\"", err: `printable`},
		{in: `a=:AB=:`, err: `padded`},
		{in: `a=:A=BC:`, err: `padded`},
		{in: `a=1234567890123456`, err: `too many digits`},
		{in: `a=1234567890123.1`, err: `12 integer digits`},
		{in: `a=1.1234`, err: `3 fractional`},
		{in: `a=1.`, err: `ends with '.'`},
		{in: `a=?2`, err: `boolean`},
		{in: `a=@1.5`, err: `date`},
		{in: `a=%"%c3"`, err: `UTF-8`},
		{in: `a=%"%C3%A9"`, err: `%-escape`},
		{in: `a=#`, err: `unexpected character`},
	} {
		var f Field
		err := f.ParseDictionary([]string{c.in})
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want one saying %q", c.in, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.in, err)
		case c.err == "" && serialize(&f) != c.want:
			t.Errorf("%q: %q, want %q", c.in, serialize(&f), c.want)
		}
	}
}

// A field in several lines is one field, its lines joined by commas.
func TestParseLines(t *testing.T) {
	var f Field
	if err := f.ParseDictionary([]string{`a=1`, ` b=("x")`}); err != nil || serialize(&f) != `a=1, b=("x")` {
		t.Fatalf("%q %v", serialize(&f), err)
	}
	it, err := f.ParseItem([]string{` "https://bot.example" `})
	if s, ok := it.Value.Str(); err != nil || !ok || s != "https://bot.example" {
		t.Fatalf("%q %v", s, err)
	}
	if _, err := f.ParseItem([]string{`"a"`, `"b"`}); err == nil {
		t.Fatal("two items read as one")
	}
}

// The bounds: more members, items or parameters than allowed fail, and
// storage past the inline arrays is used and reused.
func TestBounds(t *testing.T) {
	list := func(n int, f func(i int) string) string {
		var s []string
		for i := range n {
			s = append(s, f(i))
		}
		return strings.Join(s, "")
	}
	key := func(i int) string { return "k" + strings.Repeat("a", i) }
	var f Field
	for _, c := range []struct {
		in string
		ok bool
	}{
		{list(MaxMembers, func(i int) string { return key(i) + "=1," }) + "z=2", false},
		{list(MaxMembers-1, func(i int) string { return key(i) + "=1," }) + "z=2", true},
		{"a=(" + list(MaxListLen, func(i int) string { return "1 " }) + ")", true},
		{"a=(" + list(MaxListLen+1, func(i int) string { return "1 " }) + ")", false},
		{"a=1" + list(MaxListLen, func(i int) string { return ";" + key(i) }), true},
		{"a=1" + list(MaxListLen+1, func(i int) string { return ";" + key(i) }), false},
		{"a=1" + list(10*MaxListLen, func(i int) string { return ";a" }), true}, // duplicates replace
	} {
		if err := f.ParseDictionary([]string{c.in}); (err == nil) != c.ok {
			t.Errorf("%.40q…: %v", c.in, err)
		} else if c.ok {
			if ref, err := httpsfv.UnmarshalDictionary([]string{c.in}); err != nil {
				t.Fatal(err)
			} else if want, _ := httpsfv.Marshal(ref); serialize(&f) != want {
				t.Errorf("%.40q…: %.60q…, want %.60q…", c.in, serialize(&f), want)
			}
		}
	}
}

// Accessors: items, parameters, Get, SameItem, Str, IsString, Bytes.
func TestAccessors(t *testing.T) {
	var f Field
	in := `sig1=("@authority" "signature-agent";key="a" "x";a=1;b=2 "x";b=2;a=1 "y\"z");keyid="k\\1";created=5, sig2=:AAEC:`
	if err := f.ParseDictionary([]string{in}); err != nil {
		t.Fatal(err)
	}
	m, ok := f.Get("sig1")
	if !ok || !m.Inner || f.Items(m) != 5 || f.ListParams(m) != 2 {
		t.Fatalf("%+v", m)
	}
	if v, ok := f.ListParamValue(m, "created"); !ok || v.Kind != Integer || v.Int != 5 {
		t.Fatalf("%+v", v)
	}
	if v, _ := f.ListParamValue(m, "keyid"); mustStr(v) != `k\1` || !v.IsString(`k\1`) || v.IsString(`k\\1`) || v.IsString(`k\`) {
		t.Fatalf("%+v", v)
	}
	if v, _ := f.ItemParam(f.Item(m, 1), "key"); !v.IsString("a") {
		t.Fatalf("%+v", v)
	}
	if !f.SameItem(f.Item(m, 2), f.Item(m, 3)) || f.SameItem(f.Item(m, 1), f.Item(m, 2)) || f.SameItem(f.Item(m, 0), f.Item(m, 1)) {
		t.Fatal("SameItem")
	}
	if !f.Item(m, 4).Value.IsString(`y"z`) {
		t.Fatal(f.Item(m, 4).Value)
	}
	s, _ := f.Get("sig2")
	if b, ok := s.Item.Value.Bytes(nil); !ok || string(b) != "\x00\x01\x02" {
		t.Fatalf("%q", b)
	}
	if _, ok := f.Get("sig3"); ok {
		t.Fatal("sig3")
	}
}

// Parsing the headers of a Web Bot Auth signature allocates nothing.
func TestParseDoesNotAllocate(t *testing.T) {
	var f Field
	in := []string{`sig2=("@authority" "signature-agent";key="agent2");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="ZO3/XMEZjrvSnLtAP9M7jK0WGQf3J+pbmQRUpKDhF9/jsNCWqUh2sq+TH4WUqmMNXMmuL5QvtJeHH2VIYCGCUg==";tag="web-bot-auth"`}
	var buf [512]byte
	if n := testing.AllocsPerRun(100, func() {
		if err := f.ParseDictionary(in); err != nil {
			t.Fatal(err)
		}
		m := f.Member(0)
		_ = f.AppendInnerList(buf[:0], m)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// httpsfv counts an integer's 15 digits before it looks at the next
// character, and so refuses "a=123456789012345," which RFC 9651 §4.2.4
// reads; such inputs are not compared.
var fifteenDigits = regexp.MustCompile(`[0-9]{15}`)

// compare checks that ours (err, serialized as got) and httpsfv (ref,
// serialized) agree.
func compare(t *testing.T, in []string, err error, got string, refErr error, want string) {
	t.Helper()
	if (err == nil) != (refErr == nil) {
		if err != nil && strings.Contains(err.Error(), "more than") || err == nil && fifteenDigits.MatchString(strings.Join(in, ",")) {
			return
		}
		t.Fatalf("%q: ours %v, httpsfv %v", in, err, refErr)
	}
	if err == nil && got != want {
		t.Fatalf("%q: ours %q, httpsfv %q", in, got, want)
	}
}

// FuzzDictionary checks ParseDictionary against httpsfv: the same inputs
// are accepted, and read as the same dictionary.
func FuzzDictionary(f *testing.F) {
	for _, s := range []string{
		`sig1=("@authority" "signature-agent");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg==";tag="web-bot-auth"`,
		`sig1=:uz2SAv+VIemw+Oo890bhYh6Xf5qZdLUgv6/PbiQfCFXcX/vt1A8Pf7OcgL2yUDUYXFtffNpkEr5W6dldqFrkDg==:`,
		`agent2="https://signature-agent.test";type=directory, a=?0, b, c=%"x%22"`,
		`a=(1.5 "x" :AA==: tok @5);p=-1`,
	} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		in := []string{a}
		if b != "" {
			in = append(in, b)
		}
		var fl Field
		err := fl.ParseDictionary(in)
		ref, refErr := httpsfv.UnmarshalDictionary(in)
		var want string
		if refErr == nil {
			if want, refErr = httpsfv.Marshal(ref); refErr != nil {
				return // httpsfv cannot write what it read (a decimal rounding): not compared
			}
		}
		compare(t, in, err, serialize(&fl), refErr, want)
	})
}

// FuzzItem checks ParseItem against httpsfv, and that SameItem agrees
// with comparing serializations.
func FuzzItem(f *testing.F) {
	for _, s := range []string{`"https://bot.example"`, `"a";type=directory`, `x;a=1;b="2"`, `:AA==:;k=%"%c3%a9"`, `1.50;q`} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var fa, fb Field
		ia, err := fa.ParseItem([]string{a})
		ref, refErr := httpsfv.UnmarshalItem([]string{a})
		var got, want string
		if err == nil {
			got = string(fa.AppendItem(nil, ia))
		}
		if refErr == nil {
			if want, refErr = httpsfv.Marshal(ref); refErr != nil {
				return
			}
		}
		compare(t, []string{a}, err, got, refErr, want)
		ib, err2 := fb.ParseItem([]string{b})
		if err != nil || err2 != nil {
			return
		}
		// Both items in one Field, to compare them.
		var f2 Field
		if err := f2.ParseDictionary([]string{"a=(" + a + " " + b + ")"}); err != nil {
			return // an item that is not a valid inner-list item (none)
		}
		m := f2.Member(0)
		same := f2.SameItem(f2.Item(m, 0), f2.Item(m, 1))
		// Parameters in another order are the same item: compare sorted.
		if want := sameBySerialization(&fa, ia, &fb, ib); same != want {
			t.Fatalf("SameItem(%q, %q) = %v, want %v", a, b, same, want)
		}
	})
}

// sameBySerialization compares two items by their values and their
// parameters' serializations, in any order.
func sameBySerialization(fa *Field, a *Item, fb *Field, b *Item) bool {
	if string(a.Value.Append(nil)) != string(b.Value.Append(nil)) || fa.Params(a) != fb.Params(b) {
		return false
	}
	ps := func(f *Field, it *Item) map[string]string {
		m := map[string]string{}
		for i := range f.Params(it) {
			p := f.Param(it, i)
			m[p.Key] = string(p.Value.Append(nil))
		}
		return m
	}
	pa, pb := ps(fa, a), ps(fb, b)
	for k, v := range pa {
		if pb[k] != v {
			return false
		}
	}
	return true
}

// BenchmarkParseSignatureInput is one Web Bot Auth Signature-Input parsed
// and its inner list serialized (for the signature base).
func BenchmarkParseSignatureInput(b *testing.B) {
	in := []string{`sig2=("@authority" "signature-agent";key="agent2");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="ZO3/XMEZjrvSnLtAP9M7jK0WGQf3J+pbmQRUpKDhF9/jsNCWqUh2sq+TH4WUqmMNXMmuL5QvtJeHH2VIYCGCUg==";tag="web-bot-auth"`}
	var f Field
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		if err := f.ParseDictionary(in); err != nil {
			b.Fatal(err)
		}
		buf = f.AppendInnerList(buf[:0], f.Member(0))
	}
}

// BenchmarkHTTPSFVSignatureInput is the same with httpsfv.
func BenchmarkHTTPSFVSignatureInput(b *testing.B) {
	in := []string{`sig2=("@authority" "signature-agent";key="agent2");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="ZO3/XMEZjrvSnLtAP9M7jK0WGQf3J+pbmQRUpKDhF9/jsNCWqUh2sq+TH4WUqmMNXMmuL5QvtJeHH2VIYCGCUg==";tag="web-bot-auth"`}
	b.ReportAllocs()
	for b.Loop() {
		d, err := httpsfv.UnmarshalDictionary(in)
		if err != nil {
			b.Fatal(err)
		}
		m, _ := d.Get("sig2")
		if _, err := httpsfv.Marshal(m.(httpsfv.InnerList)); err != nil {
			b.Fatal(err)
		}
	}
}
