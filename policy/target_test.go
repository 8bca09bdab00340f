package policy

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestDecodedTarget(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/a/b", ""},
		{"/a%2Fb", "/a/b"},
		{"/x/../a/b", "/a/b"},
		{"//a//b/", "/a/b/"},
		{"/a/./b/.", "/a/b/"},
		{"/../../a", "/a"},
		{"/%2e%2e/a?q=%2F", "/a?q=%2F"},
		{"/a%253F", "/a%253F"},
		{"/a%3Fb", "/a%3Fb"},
		{"/a\\b", "/a/b"},
		{"/private;x/y", ""},
		{"/public/..;/private/x", "/public/..;/private/x"}, // "..;" is a name here
	}
	for _, tt := range tests {
		p, q := SplitTarget(tt.in)
		got, ok := DecodedTarget(p, q)
		if !ok {
			got = ""
		}
		if got != tt.want {
			t.Errorf("decodedTarget(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDecodedViewPathParams: the servlet containers' reading drops each
// segment's raw ';' parameters before it decodes, so "..;" is a
// dot-segment there; an escaped ';' is data, and a path without a raw ';'
// has no such view ("").
func TestDecodedViewPathParams(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/private;x/y", "/private/y"},
		{"/private;jsessionid=1", "/private"},
		{"/private;jsessionid=1?q=1", "/private?q=1"},
		{"/public/..;/private/x", "/private/x"},
		{"/a;b/..;c/private/", "/private/"},
		{"/a;b;c/d", "/a/d"},
		{"/;x/private", "/private"},
		{"/private;x%2F../y", "/private/y"},
		{"/private%3Bx/y", ""},
		{"/p%61th;v/%2e%2e;w/x", "/x"},
		{"/private/x", ""},
		{"/x/../a/b", ""},
	}
	for _, tt := range tests {
		p, q := SplitTarget(tt.in)
		b, start, ok := AppendDecodedView([]byte("pre"), p, q, ViewOptions{PathParams: true})
		got := string(b[start:])
		if !ok {
			got = ""
		}
		if got != tt.want || string(b[:3]) != "pre" {
			t.Errorf("AppendDecodedView(%q, PathParams) = %q (%q), want %q", tt.in, got, b, tt.want)
		}
	}
	if !NeedsDecodedView("/private;x/y") {
		t.Error(`NeedsDecodedView("/private;x/y") = false: its path parameter view differs`)
	}
}

// refStripParams is the reference reading of path parameters: each raw
// '/'-separated segment of path is cut at its first raw ';'.
func refStripParams(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i], _, _ = strings.Cut(s, ";")
	}
	return strings.Join(segs, "/")
}

// refDecodeView is the first, allocating implementation of the decoded
// view (a fresh buffer at each step), kept as the reference that
// FuzzDecodedView holds the in-place one to.
func refDecodeView(path, query string, backslashIsSlash bool) string {
	dec := []byte{}
	if len(path) == 0 || path[0] != '/' {
		dec = append(dec, '/')
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == '%' && i+2 < len(path) {
			if hi, ok := unhex(path[i+1]); ok {
				if lo, ok := unhex(path[i+2]); ok {
					c = hi<<4 | lo
					i += 2
				}
			}
		}
		if c == '\\' && backslashIsSlash {
			c = '/'
		}
		dec = append(dec, c)
	}
	var out []byte
	var starts []int
	for i := 0; i < len(dec); {
		j := i + 1
		for j < len(dec) && dec[j] != '/' {
			j++
		}
		seg, last := string(dec[i+1:j]), j >= len(dec)
		switch seg {
		case "", ".":
		case "..":
			if n := len(starts); n > 0 {
				out, starts = out[:starts[n-1]], starts[:n-1]
			}
		default:
			starts = append(starts, len(out))
			out = append(append(out, '/'), seg...)
		}
		if last && (seg == "" || seg == "." || seg == "..") {
			out = append(out, '/')
		}
		i = j
	}
	if len(out) == 0 {
		out = []byte{'/'}
	}
	r := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")
	return r.Replace(string(out)) + query
}

// FuzzDecodedView: the in-place decoded views (written after whatever the
// buffer already holds) equal the reference's, for both backslash readings
// and with path parameters dropped; a view is skipped (ok false) exactly
// when the reading does not apply.
func FuzzDecodedView(f *testing.F) {
	for _, s := range []string{"/a/./b/../c", "//x//y/", "/%2e%2e/%2E/p", "a/../../b", "/a\\..\\b", "/%5c../x", "/..", "/a/b/..", "", "/%25%3f%23/..//",
		"/private;x/y", "/public/..;/private/x", "/a;b/..;c/private/", "/private%3Bx/y", ";x/../y", "/a;%2F/..\\;b", "/a;x\\..\\b"} {
		f.Add(s, "?q=1", 3)
	}
	f.Fuzz(func(t *testing.T, path, query string, prefix int) {
		pre := bytes.Repeat([]byte{'z'}, prefix&63)
		for _, tc := range []struct {
			opts    ViewOptions
			applies bool
			want    func() string
		}{
			{ViewOptions{}, needsView(path, false), func() string { return refDecodeView(path, query, true) }},
			{ViewOptions{KeepBackslash: true}, needsView(path, false) && hasBackslash(path), func() string { return refDecodeView(path, query, false) }},
			{ViewOptions{PathParams: true}, strings.Contains(path, ";"), func() string { return refDecodeView(refStripParams(path), query, true) }},
		} {
			b, start, ok := AppendDecodedView(slices.Clone(pre), path, query, tc.opts)
			if !bytes.Equal(b[:len(pre)], pre) {
				t.Fatalf("AppendDecodedView(%q, %+v) overwrote the buffer's %q: %q", path, tc.opts, pre, b)
			}
			if ok != tc.applies {
				t.Fatalf("AppendDecodedView(%q, %+v): ok %v, want %v", path, tc.opts, ok, tc.applies)
			}
			if want := tc.want(); ok && string(b[start:]) != want {
				t.Fatalf("AppendDecodedView(%q, %+v, %q) = %q; want %q", path, tc.opts, query, b[start:], want)
			}
		}
		if needsView(path, false) && !NeedsDecodedView(path) {
			t.Fatalf("NeedsDecodedView(%q) = false, but its decoded view differs", path)
		}
	})
}

// TestIsRobotsTxt: the one path that is always allowed, in every form a
// request-target can give it.
func TestIsRobotsTxt(t *testing.T) {
	for target, want := range map[string]bool{
		"/robots.txt":                     true,
		"/robots.txt?x=1":                 true,
		"/robots.txt#frag":                true,
		"/robots%2Etxt":                   true,
		"http://example.com/robots.txt":   true,
		"/robots.txt/":                    false,
		"/robots.txt%23x":                 false,
		"/ROBOTS.TXT":                     false,
		"/a/robots.txt":                   false,
		"https://example.com/robots.txtx": false,
	} {
		if got := IsRobotsTxt(target); got != want {
			t.Errorf("IsRobotsTxt(%q) = %v, want %v", target, got, want)
		}
	}
}

// TestAgents: the distinct group tokens, first spelling kept, "*" when
// there is a global group; walked without allocating.
func TestAgents(t *testing.T) {
	r := Parse([]byte("User-agent: Googlebot\nUser-agent: bingbot\nDisallow: /a\n\nUser-agent: *\nUser-agent: GOOGLEBOT\nDisallow: /b\n"))
	got := slices.Collect(r.Agents())
	if want := []string{"Googlebot", "bingbot", "*"}; !slices.Equal(got, want) {
		t.Fatalf("Agents() = %q, want %q", got, want)
	}
	if n := testing.AllocsPerRun(100, func() {
		for range r.Agents() {
		}
	}); n != 0 {
		t.Errorf("walking Agents allocates %v times", n)
	}
	for a := range r.Agents() {
		if a != "Googlebot" {
			t.Fatalf("Agents went on after the loop stopped at %q", a)
		}
		break
	}
	if n := len(slices.Collect(Parse(nil).Agents())); n != 0 {
		t.Errorf("an empty file has %d agents", n)
	}
}

// BenchmarkDecodedView: what the enforcer's second view costs per path,
// into a reused buffer as guard's decideDecoded writes it. A plain path is
// the common case: NeedsDecodedView answers no, without allocating.
func BenchmarkDecodedView(b *testing.B) {
	buf := make([]byte, 0, 128)
	for _, path := range []string{"/public/page", "/x/../a/b", "/public/..;/private/x"} {
		b.Run(strings.Trim(path, "/"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !NeedsDecodedView(path) {
					continue
				}
				for _, opts := range [...]ViewOptions{{}, {KeepBackslash: true}, {PathParams: true}} {
					buf, _, _ = AppendDecodedView(buf[:0], path, "?q=1", opts)
				}
			}
		})
	}
}
