package license

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Documents from the RSL notes (docs/SEMANTICS.md §8b's sources): the
// specification's "ai-all" example, the CAP guide's free licence that still
// needs a token, and §3.1.2's site-wide licence narrowed under /articles/.
const (
	specAIAll = `<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/">
    <license>
      <prohibits type="usage">ai-all</prohibits>
    </license>
  </content>
</rsl>`

	specCAP = `<rsl xmlns="https://rslstandard.org/rsl">
<content url="/" server="https://api.rslcollective.org">
  <license>
    <permits type="usage">all</permits>
  </license>
</content>
</rsl>`

	specScopes = `<?xml version="1.0" encoding="UTF-8"?>
<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/">
    <license>
      <permits type="usage">all</permits>
    </license>
  </content>
  <content url="/articles/" server="https://license.example.com/olp/">
    <license>
      <prohibits type="usage">ai-train</prohibits>
      <payment type="subscription">
        <standard>https://rslcollective.org/license</standard>
        <amount currency="USD">10</amount>
      </payment>
    </license>
    <license>
      <permits type="usage">search</permits>
    </license>
    <terms>https://example.com/terms</terms>
  </content>
</rsl>`
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []Content
	}{
		{"spec ai-all", specAIAll, []Content{{URL: "/", Licenses: []Terms{{Prohibits: []string{"ai-all"}}}}}},
		{"spec CAP", specCAP, []Content{{URL: "/", Server: "https://api.rslcollective.org", Licenses: []Terms{{Permits: []string{"all"}}}}}},
		{"spec scopes", specScopes, []Content{
			{URL: "/", Licenses: []Terms{{Permits: []string{"all"}}}},
			{URL: "/articles/", Server: "https://license.example.com/olp/", Licenses: []Terms{{Payment: "subscription", Prohibits: []string{"ai-train"}}, {Permits: []string{"search"}}}},
		}},
		{"no namespace", `<rsl><content url="/a"/></rsl>`, []Content{{URL: "/a"}}},
		{"prefixed namespace", `<r:rsl xmlns:r="https://rslstandard.org/rsl"><r:content url="/a" server="http://127.0.0.1:8080"><r:license><r:payment type="free"/></r:license></r:content></r:rsl>`,
			[]Content{{URL: "/a", Server: "http://127.0.0.1:8080", Licenses: []Terms{{Payment: "free"}}}}},
		{"byte order mark and comments", "\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- hi -->\n<rsl xmlns=\"https://rslstandard.org/rsl\"><content url=\" /b \"/></rsl>\n<!-- bye -->\n",
			[]Content{{URL: "/b"}}},
		{"words by spaces and commas", `<rsl><content url="https://example.com/*"><license>
			<permits type="usage">ai-input, search
			ai-index</permits><permits type="user">commercial</permits><prohibits type="geo">EU</prohibits>
			<prohibits type="usage">ai-train,,tdm</prohibits></license></content></rsl>`,
			[]Content{{URL: "https://example.com/*", Licenses: []Terms{{Permits: []string{"ai-input", "search", "ai-index"}, Prohibits: []string{"ai-train", "tdm"}}}}}},
		{"other namespaces and unknown elements skipped", `<rsl xmlns="https://rslstandard.org/rsl" xmlns:x="urn:x">
			<x:content url="/not-this"/>
			<schema>{"a":1}</schema>
			<content url="/this" x:server="ftp://ignored"><x:license><payment/></x:license>
			  <copyright type="person"/><license><x:payment type="no"/><future><deep><er/></deep></future>
			  <permits type="usage">search<x:ext/>  ai-input</permits></license></content></rsl>`,
			[]Content{{URL: "/this", Licenses: []Terms{{Permits: []string{"search", "ai-input"}}}}}},
		{"empty license is free", `<rsl><content url="/"><license/></content><content url="/x"/></rsl>`,
			[]Content{{URL: "/", Licenses: []Terms{{}}}, {URL: "/x"}}},
		{"several licences, in order", `<rsl><content url="/" server="https://l.example"><license><permits type="usage">search</permits><payment type="free"/></license>
			<license><permits type="usage">ai-train</permits><payment type="purchase"/></license></content></rsl>`,
			[]Content{{URL: "/", Server: "https://l.example", Licenses: []Terms{{Payment: "free", Permits: []string{"search"}}, {Payment: "purchase", Permits: []string{"ai-train"}}}}}},
		{"maxLicenses licences", `<rsl><content url="/">` + strings.Repeat(`<license><payment type="free"/></license>`, maxLicenses) + `</content></rsl>`,
			[]Content{{URL: "/", Licenses: slices.Repeat([]Terms{{Payment: "free"}}, maxLicenses)}}},
		{"usage values lower-cased, each once, at most maxUsages unknown", `<rsl><content url="/"><license><permits type="usage">Search AI-Train search</permits>
			<prohibits type="usage">` + strings.Repeat("x ", 3) + strings.Repeat("a b c d e f g h i j k l m n o p q ", 40) + `ALL</prohibits></license></content></rsl>`,
			[]Content{{URL: "/", Licenses: []Terms{{Permits: []string{"search", "ai-train"}, Prohibits: append(append([]string{"x"}, strings.Fields("a b c d e f g h i j k l m n o")...), "all")}}}}},
		{"CDATA", `<rsl><content url="/"><license><permits type="usage"><![CDATA[all]]></permits></license></content></rsl>`,
			[]Content{{URL: "/", Licenses: []Terms{{Permits: []string{"all"}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse([]byte(tt.doc))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(doc.Contents, tt.want) {
				t.Errorf("Parse:\n got %#v\nwant %#v", doc.Contents, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	many := "<rsl>" + strings.Repeat(`<content url="/"/>`, MaxContents+1) + "</rsl>"
	tests := []struct {
		name, doc, want string
	}{
		{"empty", "", "rsl: no root element"},
		{"text", "hello", "rsl: text before the root element"},
		{"html", "<html><body/></html>", "rsl: the root element is <html>, not <rsl>"},
		{"wrong namespace", `<rsl xmlns="https://example.com/rsl"><content url="/"/></rsl>`, `rsl: the root element <rsl> is in the namespace "https://example.com/rsl"`},
		{"no content", `<rsl xmlns="https://rslstandard.org/rsl"></rsl>`, "rsl: no content element"},
		{"no url", `<rsl><content url="/"/><content server="https://l.example"/></rsl>`, "rsl: content[2]: no url attribute"},
		{"empty url", `<rsl><content url=" "/></rsl>`, "rsl: content[1]: url: empty"},
		{"long url", `<rsl><content url="/` + strings.Repeat("a", MaxURLLength) + `"/></rsl>`, "rsl: content[1]: url: 2049 bytes, more than 2048"},
		{"server relative", `<rsl><content url="/"/><content url="/"/><content url="/" server="/olp"/></rsl>`, `rsl: content[3]: server: not an absolute http(s) URL: "/olp"`},
		{"server ftp", `<rsl><content url="/" server="ftp://l.example"/></rsl>`, "rsl: content[1]: server: not an absolute http(s) URL"},
		{"server userinfo", `<rsl><content url="/" server="https://u:p@l.example"/></rsl>`, "rsl: content[1]: server: not an absolute http(s) URL"},
		{"server query", `<rsl><content url="/" server="https://l.example/?a=b"/></rsl>`, "rsl: content[1]: server: has a query or fragment"},
		{"server fragment", `<rsl><content url="/" server="https://l.example/#x"/></rsl>`, "rsl: content[1]: server: has a query or fragment"},
		{"server no host", `<rsl><content url="/" server="https:///olp"/></rsl>`, "rsl: content[1]: server: not an absolute http(s) URL"},
		{"server bad port", `<rsl><content url="/" server="https://l.example:99999"/></rsl>`, "rsl: content[1]: server: not an absolute http(s) URL"},
		{"server space", `<rsl><content url="/" server="https://l.example/a b"/></rsl>`, "rsl: content[1]: server: holds white space"},
		{"server quote", `<rsl><content url="/" server="https://l.example/a&quot;b"/></rsl>`, "rsl: content[1]: server: holds a quote or a backslash"},
		{"payment without type", `<rsl><content url="/"><license><payment><amount currency="USD">1</amount></payment></license></content></rsl>`, "rsl: content[1]: license[1]: payment: no type attribute"},
		{"long permits", `<rsl><content url="/"><license><permits type="usage">` + strings.Repeat("all ", 1025) + `</permits></license></content></rsl>`, "rsl: content[1]: license[1]: permits: text longer than 4096 bytes"},
		{"too many contents", many, "rsl: more than 1000 content elements"},
		{"too many licences", `<rsl><content url="/">` + strings.Repeat(`<license/>`, maxLicenses+1) + `</content></rsl>`, "rsl: content[1]: license[17]: more than 16 licences in one content"},
		{"too big", "<rsl>" + strings.Repeat(" ", MaxDocumentBytes) + "</rsl>", "rsl: the document is 524299 bytes, more than 524288"},
		{"unclosed", `<rsl><content url="/"><license>`, "rsl: content[1]: license[1]: XML syntax error on line 1: unexpected EOF"},
		{"mismatched", `<rsl><content url="/"></license></rsl>`, "rsl: content[1]: XML syntax error"},
		{"unknown entity", `<rsl><content url="/&ent;"/></rsl>`, "rsl: XML syntax error"},
		{"element after root", `<rsl><content url="/"/></rsl><rsl/>`, "rsl: element <rsl> after the root element"},
		{"text after root", `<rsl><content url="/"/></rsl>junk`, "rsl: text after the root element"},
		{"too deep", "<rsl><content url=\"/\"><license>" + strings.Repeat("<x>", maxDepth) + strings.Repeat("</x>", maxDepth) + "</license></content></rsl>", "nested more than 64 deep"},
		{"repeated attribute", `<rsl><content url="/" url="/b"/></rsl>`, "rsl: content[1]: url: repeated attribute"},
		{"undeclared encoding", `<?xml version="1.0" encoding="ISO-8859-1"?><rsl><content url="/"/></rsl>`, "rsl: xml: encoding \"ISO-8859-1\" declared but Decoder.CharsetReader is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Parse = %+v, want an error %q", doc, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: error %q, want it to hold %q", err, tt.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	doc, err := Parse([]byte(`<rsl xmlns="https://rslstandard.org/rsl">
		<content url="/"/>                                       <!-- 0 -->
		<content url="/articles/*"/>                             <!-- 1 -->
		<content url="https://example.com/articles/special$"/>   <!-- 2 -->
		<content url="https://other.example/x"/>                 <!-- 3 -->
		<content url="*.pdf$"/>                                  <!-- 4 -->
		<content url="/articles/"/>                              <!-- 5 -->
		<content url="HTTPS://Example.COM:443/shop?x=*"/>        <!-- 6 -->
		<content url="relative/path"/>                           <!-- 7 -->
		<content url="/a b#c"/>                                  <!-- 8 -->
		<content url="/dup"/>                                    <!-- 9 -->
		<content url="/dup"/>                                    <!-- 10 -->
		<content url="/ab*"/>                                    <!-- 11 -->
		<content url="/a*c"/>                                    <!-- 12 -->
		<content url="https://example.com"/>                     <!-- 13 -->
		<content url="/caf%C3%A9"/>                              <!-- 14 -->
		<content url="http://example.com/plain-http/"/>          <!-- 15 -->
	</rsl>`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		site, target string
		want         int // -1: none
	}{
		{"https://example.com", "/", 0}, // ties with content 13's "/", which comes later
		{"https://example.com", "/foo", 0},
		{"https://example.com", "/articles/x", 1},       // "/articles/*" (11) beats "/articles/" (10)
		{"https://example.com", "/articles/special", 2}, // 18 octets
		{"https://example.com", "/articles/special/x", 1},
		{"https://example.com", "/x", 0}, // another site's pattern is left out
		{"https://example.com", "/doc.pdf", 4},
		{"https://example.com", "/doc.pdf?x", 0}, // '$' ends the match
		{"https://example.com", "/articles/doc.pdf", 1},
		{"https://example.com", "/shop?x=1", 6},
		{"https://example.com", "/shop", 0},
		{"https://example.com", "/a%20b%23c", 8},
		{"https://example.com", "/dup", 9},  // equal patterns: the first
		{"https://example.com", "/abc", 11}, // equally long: the first
		{"https://example.com", "/caf%c3%a9", 14},
		{"https://example.com", "/caf\xc3\xa9", 14},
		{"https://example.com", "/robots.txt", 0}, // matched too, though policy exempts it
		{"https://example.com", "/robots.txt?x=1", 0},
		{"https://example.com", "https://example.com/articles/x", 1},
		{"https://example.com", "/plain-http/x", 0},
		{"http://example.com", "/plain-http/x", 15},
		{"http://example.com", "/articles/special", 1}, // the https patterns are left out
		{"https://example.com:8443", "/shop?x=1", 0},
		{"https://other.example", "/x", 3},
		{"https://other.example", "/articles/special", 1},
		{"not a site", "/articles/special", 1},
	}
	for _, tt := range tests {
		m := doc.For(tt.site)
		got := m.Match(tt.target)
		want := (*Content)(nil)
		if tt.want >= 0 {
			want = &doc.Contents[tt.want]
		}
		if got != want {
			t.Errorf("For(%q).Match(%q) = %v, want %v", tt.site, tt.target, describe(doc, got), describe(doc, want))
		}
	}
}

// TestMatchTies checks that a pattern from an absolute URL and an equal path
// pattern tie by document order, and that a document whose patterns all
// belong to other sites matches nothing.
func TestMatchTies(t *testing.T) {
	doc, err := Parse([]byte(`<rsl><content url="https://example.com/"/><content url="/"/></rsl>`))
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.For("https://example.com").Match("/x"); got != &doc.Contents[0] {
		t.Errorf("Match = %v, want content 0", describe(doc, got))
	}
	other, err := Parse([]byte(`<rsl><content url="https://other.example/"/></rsl>`))
	if err != nil {
		t.Fatal(err)
	}
	if got := other.For("https://example.com").Match("/x"); got != nil {
		t.Errorf("Match = %v, want nil", got)
	}
	var m *Matcher
	if m.Match("/") != nil {
		t.Error("a nil Matcher matched")
	}
	var d *Document
	if d.For("https://example.com").Match("/") != nil {
		t.Error("a nil Document's matcher matched")
	}
}

// TestMatchChunks checks a document whose patterns do not fit in one
// synthetic robots.txt: each space of its patterns takes three bytes there.
func TestMatchChunks(t *testing.T) {
	var b strings.Builder
	b.WriteString("<rsl>")
	const n = 200
	for i := range n {
		fmt.Fprintf(&b, `<content url="/%03d/%s"/>`, i, strings.Repeat("a b", 680))
	}
	b.WriteString(`<content url="/short"/>`)
	b.WriteString("</rsl>")
	doc, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.For("https://example.com")
	if len(m.chunks) < 2 {
		t.Fatalf("%d chunks, want several", len(m.chunks))
	}
	for _, i := range []int{0, 100, n - 1} {
		target := strings.ReplaceAll(doc.Contents[i].URL, " ", "%20") + "/x"
		if got := m.Match(target); got != &doc.Contents[i] {
			t.Errorf("Match(content %d's URL) = %v", i, describe(doc, got))
		}
	}
	if got := m.Match("/short/x"); got != &doc.Contents[n] {
		t.Errorf("Match(/short/x) = %v", describe(doc, got))
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("skipped under the race detector: sync.Pool drops items at random")
	}
	doc, err := Parse([]byte(benchDoc))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.For("https://example.com")
	for _, target := range benchTargets {
		m.Match(target)
		if n := testing.AllocsPerRun(50, func() { m.Match(target) }); n != 0 {
			t.Errorf("Match(%q) allocates %v times", target, n)
		}
	}
}

func describe(doc *Document, c *Content) string {
	if c == nil {
		return "nil"
	}
	for i := range doc.Contents {
		if &doc.Contents[i] == c {
			return fmt.Sprintf("content %d (%q)", i, c.URL)
		}
	}
	return fmt.Sprintf("foreign %q", c.URL)
}

const benchDoc = `<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/" server="https://license.example.com"><license><permits type="usage">search</permits></license></content>
  <content url="/articles/*"><license><prohibits type="usage">ai-train</prohibits></license></content>
  <content url="/articles/premium/"><license><payment type="subscription"/></license></content>
  <content url="*.pdf$"><license><payment type="purchase"/></license></content>
  <content url="https://example.com/images/"><license><permits type="usage">all</permits></license></content>
  <content url="/news/*/video/*"><license><prohibits type="usage">ai-all</prohibits></license></content>
  <content url="/search?q=*"><license><prohibits type="usage">all</prohibits></license></content>
  <content url="/api/$"/>
</rsl>`

var benchTargets = []string{
	"/",
	"/articles/2026/05/some-long-article-title-here",
	"/articles/premium/x?utm_source=feed",
	"/files/report.pdf",
	"/images/cat.jpg",
	"/news/world/video/123",
	"/search?q=robots",
	"/wiki/L%c3%b6schpr%c3%bcfung",
}

func BenchmarkMatch(b *testing.B) {
	doc, err := Parse([]byte(benchDoc))
	if err != nil {
		b.Fatal(err)
	}
	m := doc.For("https://example.com")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Match(benchTargets[i%len(benchTargets)])
	}
}
