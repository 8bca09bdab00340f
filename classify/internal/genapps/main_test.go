package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGenerated: classify/apps.txt is what go generate writes from the
// copy of uap-core's regexes and the crawler list: the list cannot be
// edited by hand, nor the generator changed without regenerating it.
func TestGenerated(t *testing.T) {
	var buf bytes.Buffer
	if err := Generate(&buf, "../../../testdata/useragents/uap-core-regexes.yaml", "../../crawlers.txt"); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../apps.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Error("classify/apps.txt differs from what internal/genapps writes: run go generate ./classify/...")
	}
}

// TestNames: the names read from uap-core's patterns.
func TestNames(t *testing.T) {
	for src, want := range map[string]string{
		`^(AntennaPod|VLC)/(\d+)`:        "AntennaPod,VLC",
		`\b(Vert.x-WebClient|curl)(?:/)`: "Vert.x-WebClient,curl",
		`(UP\.Browser)/(\d+)`:            "UP.Browser",
		`^(.{0,200})/(\d+) CFNetwork`:    "",
		`(Chromium|Chrome)/(\d+)`:        "Chromium,Chrome",
		`Mozilla.{1,100}(PetalBot)`:      "",
	} {
		got := ""
		for i, n := range names(&parser{src: src}) {
			if i > 0 {
				got += ","
			}
			got += n
		}
		if got != want {
			t.Errorf("names(%q) = %q, want %q", src, got, want)
		}
	}
}
