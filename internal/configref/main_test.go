package main

import (
	"bytes"
	"os"
	"testing"
)

// TestReferenceIsCurrent fails when docs/reference.md is not what the
// configuration's doc comments make: run go generate ./guard.
func TestReferenceIsCurrent(t *testing.T) {
	want, err := Generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/reference.md is stale: run go generate ./guard")
	}
	for _, block := range []string{"## robots_txt", "## bots", "## verify", "## verify.web_bot_auth", "## verify.operators[]",
		"## crawl_delay", "## clients", "## traps", "## bans", "## bans.after", "## store"} {
		if !bytes.Contains(want, []byte("\n"+block+"\n")) {
			t.Errorf("the reference has no section %q", block)
		}
	}
}
