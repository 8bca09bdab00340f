package license

import (
	"strings"
	"testing"

	"github.com/robotsguard/robotsguard/policy"
)

// TestGrants: RSL 1.0's usage values read as the three purposes
// (SEMANTICS.md §8b), prohibits before permits.
func TestGrants(t *testing.T) {
	const (
		search = policy.PurposeSearch
		input  = policy.PurposeAIInput
		train  = policy.PurposeAITrain
	)
	tests := []struct {
		name               string
		permits, prohibits []string
		want               [3]bool // search, ai-input, ai-train
	}{
		{"no terms", nil, nil, [3]bool{true, true, true}},
		{"permits all", []string{"all"}, nil, [3]bool{true, true, true}},
		{"prohibits all", nil, []string{"all"}, [3]bool{false, false, false}},
		{"permits search", []string{"search"}, nil, [3]bool{true, false, false}},
		{"permits ai-all", []string{"ai-all"}, nil, [3]bool{true, true, true}},
		{"prohibits ai-all", nil, []string{"ai-all"}, [3]bool{true, false, false}},
		{"permits ai-index: search too", []string{"ai-index"}, nil, [3]bool{true, false, false}},
		{"prohibits ai-index: not search", nil, []string{"ai-index"}, [3]bool{true, true, true}},
		{"prohibits ai-train", nil, []string{"ai-train"}, [3]bool{true, true, false}},
		{"permits ai-input", []string{"ai-input"}, nil, [3]bool{false, true, false}},
		{"prohibits win", []string{"all"}, []string{"ai-train"}, [3]bool{true, true, false}},
		{"unknown values cover nothing", []string{"tdm", "ai-trian"}, nil, [3]bool{false, false, false}},
		{"unknown prohibition refuses nothing", nil, []string{"tdm"}, [3]bool{true, true, true}},
	}
	for _, tt := range tests {
		terms := Terms{Permits: tt.permits, Prohibits: tt.prohibits}
		for i, p := range []policy.Purpose{search, input, train} {
			if got := terms.Grants(p); got != tt.want[i] {
				t.Errorf("%s: Grants(%s) = %v, want %v", tt.name, p, got, tt.want[i])
			}
		}
	}
}

// TestTermsFor: the first licence that grants the purpose decides (its
// payment with it); none, and no token can help.
func TestTermsFor(t *testing.T) {
	c := Content{URL: "/", Licenses: []Terms{
		{Payment: "purchase", Permits: []string{"ai-train", "ai-input"}},
		{Payment: "free", Permits: []string{"search"}},
	}}
	for _, tt := range []struct {
		p       policy.Purpose
		payment string
		ok      bool
	}{
		{policy.PurposeSearch, "free", true},
		{policy.PurposeAITrain, "purchase", true},
		{policy.PurposeAIInput, "purchase", true},
		{policy.PurposeNone, "free", true}, // use unknown: any licence, a free one first
	} {
		got, ok := c.TermsFor(tt.p)
		if ok != tt.ok || got.Payment != tt.payment {
			t.Errorf("TermsFor(%q) = %+v, %v; want payment %q, %v", tt.p, got, ok, tt.payment, tt.ok)
		}
	}
	// RSL 1.0's own example (specScopes, /articles/): a subscription
	// that prohibits training, and a free licence for search.
	doc, err := Parse([]byte(specScopes))
	if err != nil {
		t.Fatal(err)
	}
	articles := doc.Contents[1]
	if got, ok := articles.TermsFor(policy.PurposeSearch); !ok || got.Paid() {
		t.Errorf("search on /articles/: %+v, %v; want the free licence", got, ok)
	}
	if got, ok := articles.TermsFor(policy.PurposeAIInput); !ok || !got.Paid() {
		t.Errorf("ai-input on /articles/: %+v, %v; want the subscription", got, ok)
	}
	if _, ok := articles.TermsFor(policy.PurposeAITrain); ok {
		t.Error("ai-train on /articles/ is granted; both licences refuse it")
	}
	onlySearch := Content{URL: "/", Licenses: []Terms{{Permits: []string{"search"}}}}
	if _, ok := onlySearch.TermsFor(policy.PurposeAITrain); ok {
		t.Error("a licence for search only grants ai-train")
	}
	// A bot whose use is not known: a licence that prohibits every use
	// licenses it no more than the others.
	for _, prohibits := range [][]string{{"all"}, {"search", "ai-all"}} {
		refused := Content{URL: "/", Licenses: []Terms{{Prohibits: prohibits}}}
		if _, ok := refused.TermsFor(policy.PurposeNone); ok {
			t.Errorf("prohibits %q: a bot whose use is not known is licensed", prohibits)
		}
	}
	if _, ok := (&Content{URL: "/", Licenses: []Terms{{Prohibits: []string{"ai-all"}}}}).TermsFor(policy.PurposeNone); !ok {
		t.Error("prohibits ai-all: a bot whose use is not known is refused; search is still licensed")
	}
	if got, ok := (&Content{URL: "/"}).TermsFor(policy.PurposeAITrain); !ok || got.Payment != "" {
		t.Errorf("a content without a licence: %+v, %v; want empty terms, true", got, ok)
	}
}

// TestTermsForBounded: the terms a request reads are bounded by Parse
// (16 licences, 16 values per list) and read without allocating.
func TestTermsForBounded(t *testing.T) {
	lic := `<license>` + strings.Repeat(`<permits type="usage">tdm ai-index</permits>`, 500) +
		`<permits type="usage">x1 x2 x3 x4 x5 x6 x7 x8 x9 x10 x11 x12 x13 x14 ai-train</permits></license>`
	doc, err := Parse([]byte(`<rsl><content url="/">` + strings.Repeat(lic, 16) + `</content></rsl>`))
	if err != nil {
		t.Fatal(err)
	}
	c := &doc.Contents[0]
	if n := len(c.Licenses[0].Permits); n != 17 {
		t.Errorf("%d values kept, want 17 (16 others and ai-train)", n)
	}
	if allocs := testing.AllocsPerRun(100, func() { c.TermsFor(policy.PurposeAITrain) }); allocs != 0 {
		t.Errorf("TermsFor: %v allocations, want 0", allocs)
	}
	if _, ok := c.TermsFor(policy.PurposeAITrain); !ok {
		t.Error("ai-train, written after 16 other values, is dropped")
	}
	// A prohibition after 16 other values still holds (a cap on every
	// value let it through).
	doc, err = Parse([]byte(`<rsl><content url="/"><license><prohibits type="usage">x1 x2 x3 x4 x5 x6 x7 x8 x9 x10 x11 x12 x13 x14 x15 x16 x17 ai-train</prohibits></license></content></rsl>`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Contents[0].TermsFor(policy.PurposeAITrain); ok {
		t.Error("ai-train, prohibited after 17 other values, is granted")
	}
}
