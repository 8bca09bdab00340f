package classify

import (
	"strings"
	"testing"
)

// BenchmarkClassifyUncached: what a header the cache has not seen costs
// (a flood of made-up headers pays it on every request), over the
// labelled lists' browser headers, their bots, device-detector's client
// fixtures (people's apps, readers, players, libraries), and a 1 KiB
// header.
func BenchmarkClassifyUncached(b *testing.B) {
	c := mustClassifier(b, Config{})
	for _, bc := range []struct {
		name string
		uas  []string
	}{
		{"browsers", uas(b, "matomo-devices-browser.jsonl")},
		{"bots", uas(b, "matomo-bots.jsonl")},
		{"clients", uas(b, "matomo-clients.jsonl")},
		{"1KiB", []string{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) " + strings.Repeat("AppleWebKit/537.36 ", 50)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				c.classifyFull(bc.uas[i%len(bc.uas)])
			}
		})
	}
}

// uas returns the headers of a labelled list.
func uas(b *testing.B, name string) []string {
	var out []string
	for _, l := range readList(b, name) {
		out = append(out, l.UA)
	}
	return out
}
