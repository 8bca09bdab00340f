package middleware

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImportArrows holds the rooms of docs/ARCHITECTURE.md to their
// arrows: each package imports only the packages of ours listed for it,
// so no import runs back up (and none sideways that the document does not
// draw).
func TestImportArrows(t *testing.T) {
	const mod = "github.com/robotsguard/robotsguard/"
	allowed := map[string][]string{
		"policy":             {},
		"limit":              {},
		"internal/stripe":    {},
		"internal/logsample": {"internal/stripe"},
		"sites":              {"policy"},
		"internal/sfv":       {},
		"identity":           {"internal/sfv", "policy"},
		"report":             {"identity", "limit", "policy"},
		"dashboard":          {"identity", "report"},
		"middleware":         {"dashboard", "identity", "internal/logsample", "limit", "policy", "report", "sites"},
		"caddymodule":        {"dashboard", "identity", "limit", "middleware", "policy", "report", "sites"},
	}
	for pkg, ok := range allowed {
		p, err := build.Default.ImportDir(filepath.Join("..", filepath.FromSlash(pkg)), 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			ours, found := strings.CutPrefix(imp, mod)
			if found && !slices.Contains(ok, ours) {
				t.Errorf("%s imports %s: not an arrow of docs/ARCHITECTURE.md", pkg, ours)
			}
		}
	}
}
