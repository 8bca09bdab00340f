package caddymodule

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

var update = flag.Bool("update", false, "rewrite the adapt golden files")

// TestAdaptGolden adapts each testdata/adapt/*.caddyfile, the
// repository's Caddyfile.example and the Caddyfiles of docs/proxies to JSON and compares it with the golden
// .json file beside it (go test -run TestAdaptGolden -update rewrites them).
func TestAdaptGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/adapt/*.caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	// The proxy recipes' Caddyfiles too (docs/proxies: the decision
	// service and forward_auth).
	inputs = append(inputs, "../Caddyfile.example", "../docs/proxies/check.Caddyfile", "../docs/proxies/forward_auth.Caddyfile")
	for _, in := range inputs {
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(in), ".caddyfile"), ".Caddyfile")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(body, map[string]any{"filename": in})
			if err != nil {
				t.Fatalf("adapt: %v", err)
			}
			for _, w := range warnings {
				t.Errorf("adapt warning: %s:%d: %s", w.File, w.Line, w.Message)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, out, "", "\t"); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			golden := filepath.Join("testdata", "adapt", name+".json")
			if *update {
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("adapted JSON differs from %s:\n%s", golden, pretty.String())
			}
		})
	}
}

// TestAdaptRejectsBadValues checks that "caddy adapt" names a bad value.
func TestAdaptRejectsBadValues(t *testing.T) {
	for in, want := range map[string]string{
		"http://a {\n\trobots_guard {\n\t\trobots_txt {\n\t\t\trefresh 25h\n\t\t}\n\t}\n}\n":         "robots_txt: refresh: must be at most 24h",
		"http://a {\n\trobots_guard {\n\t\tcrawl_delay ip\n\t}\n}\n":                                 `crawl_delay takes a block, not "ip"`,
		"http://a {\n\trobots_guard {\n\t\tclients {\n\t\t\tipv4_prefix 40\n\t\t}\n\t}\n}\n":         "clients: ipv4_prefix",
		"http://a {\n\trobots_guard {\n\t\trobots_txt {\n\t\t\ton_unreachable deny\n\t\t}\n\t}\n}\n": "robots_txt: on_unreachable",
		"http://a {\n\trobots_guard {\n\t\ttrap_grace 1h\n\t}\n}\n":                                  `trap_grace is now written "traps <path-pattern...> { grace <duration> }"`,
	} {
		_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(in), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("adapt %q: error %v, want one containing %q", in, err, want)
		}
	}
}

// TestREADMECaddyfiles adapts every complete Caddyfile of the README and
// of the pages in docs/ (the ```caddyfile blocks without <placeholders>),
// so that what users copy works. The snippet "(guard)" block and the
// global-options block are complete Caddyfiles too.
func TestREADMECaddyfiles(t *testing.T) {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, file := range append([]string{"../README.md"}, pages...) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(file, "../")
		blocks := strings.Split(string(text), "```caddyfile\n")[1:]
		for i, b := range blocks {
			body, _, ok := strings.Cut(b, "\n```")
			if !ok {
				t.Fatalf("%s: block %d is not closed", name, i)
			}
			if strings.Contains(body, "<matcher>") || strings.HasPrefix(body, "robots_guard") {
				continue // the syntax reference
			}
			n++
			_, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(body+"\n"), map[string]any{"filename": name})
			if err != nil {
				t.Errorf("%s Caddyfile %d:\n%s\nadapt: %v", name, i, body, err)
			}
			for _, w := range warnings {
				t.Errorf("%s Caddyfile %d: adapt warning: line %d: %s", name, i, w.Line, w.Message)
			}
		}
	}
	if n < 7 {
		t.Fatalf("only %d Caddyfiles found in the README and docs/", n)
	}
}
