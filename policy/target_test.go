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
// buffer already holds) equal the reference's, for both backslash readings.
func FuzzDecodedView(f *testing.F) {
	for _, s := range []string{"/a/./b/../c", "//x//y/", "/%2e%2e/%2E/p", "a/../../b", "/a\\..\\b", "/%5c../x", "/..", "/a/b/..", "", "/%25%3f%23/..//"} {
		f.Add(s, "?q=1", 3)
	}
	f.Fuzz(func(t *testing.T, path, query string, prefix int) {
		pre := bytes.Repeat([]byte{'z'}, prefix&63)
		if NeedsDecodedView(path) {
			b, start, ok := AppendDecodedView(slices.Clone(pre), path, query, false)
			if want := refDecodeView(path, query, true); !ok || string(b[start:]) != want || !bytes.Equal(b[:len(pre)], pre) {
				t.Fatalf("AppendDecodedView(%q, %q) = %q, %v; want %q", path, query, b[start:], ok, want)
			}
		}
		if NeedsDecodedView(path) && hasBackslash(path) {
			b, start, ok := AppendDecodedView(slices.Clone(pre), path, query, true)
			if want := refDecodeView(path, query, false); !ok || string(b[start:]) != want {
				t.Fatalf("AppendDecodedView(%q, keepBackslash, %q) = %q, %v; want %q", path, query, b[start:], ok, want)
			}
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
