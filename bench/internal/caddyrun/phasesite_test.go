package caddyrun

import (
	"strings"
	"testing"
)

// TestPhaseSite checks that the recipe phase is in the site only when a
// recipe is given (an empty header_regexp would match every header).
func TestPhaseSite(t *testing.T) {
	with := PhaseSite("admin off", "/d", "127.0.0.1:1", 2, "(?i)(gptbot)")
	without := PhaseSite("admin off", "/d", "127.0.0.1:1", 2, "")
	if !strings.Contains(with, `header_regexp User-Agent "(?i)(gptbot)"`) || !strings.Contains(with, "@recipe header X-Phase recipe") {
		t.Errorf("the recipe phase is missing:\n%s", with)
	}
	if strings.Contains(without, "recipe") {
		t.Errorf("a recipe phase without a recipe:\n%s", without)
	}
	for _, s := range []string{with, without} {
		if !strings.Contains(s, "robots_guard @guard") || !strings.Contains(s, "reverse_proxy 127.0.0.1:1 {") {
			t.Errorf("a phase is missing:\n%s", s)
		}
	}
}
