package policy

import (
	"slices"
	"testing"
)

// TestLicenses: License lines (RSL 1.0) are global records wherever they
// stand, several allowed, in file order; a value that is no absolute
// http(s) URL is ignored with a warning, and one inside a group gets a
// note that it applies to the whole site. They change no rule.
func TestLicenses(t *testing.T) {
	body := "License: https://example.com/license.xml\n" +
		"User-agent: *\nDisallow: /private/\nlicense: https://example.com/other.rsl\n\n" +
		"LICENCE: http://cdn.example.net/l.xml\n" +
		"License: /relative.xml\nLicense: ftp://example.com/x\nLicense:\n"
	r := Parse([]byte(body))
	want := []string{"https://example.com/license.xml", "https://example.com/other.rsl", "http://cdn.example.net/l.xml"}
	if got := r.Licenses(); !slices.Equal(got, want) {
		t.Errorf("Licenses() = %q, want %q", got, want)
	}
	codes := map[string]int{}
	for _, d := range r.Lint() {
		codes[d.Code]++
	}
	if codes["license-url"] != 3 || codes["license-global"] != 1 || codes["accepted-typo"] != 1 {
		t.Errorf("lint codes %v; want 3 license-url (relative, ftp, empty), 1 license-global, 1 accepted-typo (Licence)", codes)
	}
	if r.Allowed("GPTBot", "/private/x") || !r.Allowed("GPTBot", "/public") {
		t.Errorf("License lines changed the rules")
	}
	r.Licenses()[0] = "changed"
	if r.Licenses()[0] == "changed" {
		t.Errorf("Licenses() does not return a copy")
	}
	var many string
	for range maxLicenses + 2 {
		many += "License: https://example.com/l.xml\n"
	}
	if n := len(Parse([]byte(many)).Licenses()); n != maxLicenses {
		t.Errorf("%d License lines kept, want %d", n, maxLicenses)
	}
}
