package policy

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestSignals: Content-Signal and Content-Usage lines, as SEMANTICS.md §8a
// reads them: per group (the run of user-agent lines above), both syntaxes
// to one model, keys and values without case, longest path, no wins.
func TestSignals(t *testing.T) {
	const cloudflare = "User-Agent: *\nContent-Signal: search=yes, ai-input=yes, ai-train=no\nAllow: /\n"
	const aipref = "User-Agent: *\nAllow: /\nDisallow: /never/\nContent-Usage: train-ai=n\nContent-Usage: /ai-ok/ train-ai=y\n\nUser-Agent: ExampleBot\nAllow: /\nContent-Usage: train-ai=y\n"
	tests := []struct {
		name, file, ua, target string
		p                      Purpose
		want                   Signal
		line                   int
	}{
		{"cloudflare ai-train", cloudflare, "GPTBot/1.2", "/x", PurposeAITrain, No, 2},
		{"cloudflare search", cloudflare, "Googlebot/2.1", "/x", PurposeSearch, Yes, 2},
		{"cloudflare ai-input", cloudflare, "ChatGPT-User/1.0", "/x", PurposeAIInput, Yes, 2},
		{"purpose none", cloudflare, "GPTBot", "/x", PurposeNone, Unset, 0},
		{"aipref train-ai=n", aipref, "GPTBot", "/test", PurposeAITrain, No, 4},
		{"aipref longer path wins", aipref, "GPTBot", "/ai-ok/test", PurposeAITrain, Yes, 5},
		{"aipref own group", aipref, "ExampleBot/2", "/test", PurposeAITrain, Yes, 9},
		{"aipref search unset", aipref, "GPTBot", "/test", PurposeSearch, Unset, 0},
		{"aipref query ignored", aipref, "GPTBot", "/ai-ok/?q=1", PurposeAITrain, Yes, 5},
		{"case-insensitive key and value", "user-agent: *\ncontent-signal: AI-Train=NO\n", "GPTBot", "/", PurposeAITrain, No, 2},
		{"specific group does not inherit *", "User-agent: *\nContent-Signal: ai-train=no\n\nUser-agent: GPTBot\nDisallow: /private/\n", "GPTBot", "/", PurposeAITrain, Unset, 0},
		{"run above only", "User-agent: A\nContent-Signal: ai-train=no\nUser-agent: B\nDisallow: /x\n", "B", "/", PurposeAITrain, Unset, 0},
		{"run above reaches both agents", "User-agent: A\nUser-agent: B\nContent-Signal: ai-train=no\n", "B", "/", PurposeAITrain, No, 3},
		{"merged groups: no wins", "User-agent: A\nContent-Signal: ai-train=yes\nAllow: /\n\nUser-agent: A\nContent-Signal: ai-train=no\n", "A", "/", PurposeAITrain, No, 6},
		{"two statements in one line: no wins", "User-agent: *\nContent-Signal: ai-train=yes, ai-train=no\n", "X", "/", PurposeAITrain, No, 2},
		{"y/n in Content-Signal", "User-agent: *\nContent-Signal: ai-train=n\n", "X", "/", PurposeAITrain, No, 2},
		{"exact path", "User-agent: *\nContent-Usage: /a$ train-ai=n\n", "X", "/a/b", PurposeAITrain, Unset, 0},
		{"exact path matches", "User-agent: *\nContent-Usage: /a$ train-ai=n\n", "X", "/a", PurposeAITrain, No, 2},
		{"train-genai", "User-agent: *\nContent-Usage: train-genai=n\n", "X", "/", PurposeAITrain, No, 2},
		{"no signals", "User-agent: *\nDisallow: /x\n", "X", "/", PurposeAITrain, Unset, 0},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			r := Parse([]byte(c.file))
			s, line := r.Agent(c.ua).Signal(c.p, c.target)
			if s != c.want || line != c.line {
				t.Errorf("Signal(%v, %q) = %v line %d, want %v line %d", c.p, c.target, s, line, c.want, c.line)
			}
		})
	}
	if _, rule := Parse([]byte(cloudflare)).Agent("GPTBot").SignalRule(PurposeAITrain, "/"); rule.Text(PurposeAITrain) != "Content-Signal ai-train=no" {
		t.Errorf("rule text %q", rule.Text(PurposeAITrain))
	}
	if _, rule := Parse([]byte(aipref)).Agent("GPTBot").SignalRule(PurposeAITrain, "/ai-ok/x"); rule.Text(PurposeAITrain) != "Content-Usage /ai-ok/ train-ai=y" {
		t.Errorf("rule text %q", rule.Text(PurposeAITrain))
	}
}

// TestSignalDiagnostics: typos, bad values, lines outside a group and keys
// that are read but not enforced are reported.
func TestSignalDiagnostics(t *testing.T) {
	for file, want := range map[string]string{
		"Content-Signal: ai-train=no\nUser-agent: *\n":              "signal-outside-group",
		"User-agent: *\nContent-Signal: ai_train=no\n":              `did you mean "ai-train"?`,
		"User-agent: *\nContent-Signal: ai-train=maybe\n":           "bad-signal-value",
		"User-agent: *\nContent-Signal: search=yes,use=reference\n": "signal-not-enforced",
		"User-agent: *\nContent-Usage: bots=n\n":                    "signal-not-enforced",
		"User-agent: *\nContent-Signal: ai-train\n":                 "bad-signal",
		"User-agent: *\nContent-Signals: ai-train=no\n":             "key-prefix",
	} {
		var got []string
		for _, d := range Parse([]byte(file)).Lint() {
			got = append(got, d.Code+": "+d.Message)
		}
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("%q: diagnostics %q lack %q", file, got, want)
		}
	}
	// Still read: the plural spelling crawler-commons also accepts.
	if s, _ := Parse([]byte("User-agent: *\nContent-Signals: ai-train=no\n")).Agent("X").Signal(PurposeAITrain, "/"); s != No {
		t.Errorf("Content-Signals: %v", s)
	}
}

// BenchmarkSignal is the signal check of a decision, for a file with
// Cloudflare's line under * (0 allocs).
func BenchmarkSignal(b *testing.B) {
	r := Parse([]byte("User-Agent: *\nContent-Signal: search=yes, ai-input=yes, ai-train=no\nAllow: /\n"))
	a := r.Agent("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)")
	b.ReportAllocs()
	for b.Loop() {
		if s, _ := a.Signal(PurposeAITrain, "/blog/post?id=1"); s != No {
			b.Fatal(s)
		}
	}
}

// TestSignalFiles: the published examples and a real file that carries
// signals (testdata/robots/signals, sources in SOURCES.md) read as their
// authors say.
func TestSignalFiles(t *testing.T) {
	read := func(name string) *Robots {
		b, err := os.ReadFile("../testdata/robots/signals/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return Parse(b)
	}
	aipref := read("aipref-attach-05-example.txt")
	for _, c := range []struct {
		ua, path string
		want     Signal
	}{
		{"AnyBot", "/test", No},        // "train-ai=n"
		{"AnyBot", "/ai-ok/test", Yes}, // "train-ai=y"
		{"ExampleBot", "/test", Yes},   // its own group
	} {
		if s, _ := aipref.Agent(c.ua).Signal(PurposeAITrain, c.path); s != c.want {
			t.Errorf("aipref example: %s %s: %v, want %v", c.ua, c.path, s, c.want)
		}
	}
	if d := aipref.Agent("AnyBot").Decide("/never/test"); d.Allowed {
		t.Error("aipref example: /never/ is allowed")
	}

	cf := read("cloudflare-example.txt")
	for p, want := range map[Purpose]Signal{PurposeSearch: Yes, PurposeAIInput: Unset, PurposeAITrain: No} {
		if s, _ := cf.Agent("AnyBot").Signal(p, "/"); s != want {
			t.Errorf("Cloudflare example: %v: %v, want %v", p, s, want)
		}
	}

	// serchen.com: Cloudflare's managed block before the site's own file,
	// two "*" groups merged; use=reference read, reported, not enforced.
	serchen := read("serchen.txt")
	if s, line := serchen.Agent("MistralAI-Training/1.0").Signal(PurposeAITrain, "/companies/x"); s != No || line != 30 {
		t.Errorf("serchen: a training crawler under *: %v line %d, want no on line 30", s, line)
	}
	if s, _ := serchen.Agent("Googlebot/2.1").Signal(PurposeSearch, "/"); s != Yes {
		t.Errorf("serchen: search: %v", s)
	}
	if d := serchen.Agent("Googlebot/2.1").Decide("/admin/x"); d.Allowed {
		t.Error("serchen: the second * group's Disallow: /admin/ is lost")
	}
	if s, _ := serchen.Agent("GPTBot").Signal(PurposeAITrain, "/"); s != Unset {
		t.Errorf("serchen: GPTBot's own groups carry no signal: %v", s)
	}
	found := false
	for _, d := range serchen.Lint() {
		if d.Code == "signal-not-enforced" && d.Line == 30 {
			found = true
		}
		if d.Severity == Error {
			t.Errorf("serchen: %+v", d)
		}
	}
	if !found {
		t.Error("serchen: use=reference not reported")
	}
}

// TestSignalLinesBounded: a file with more signal lines than
// MaxSignalLines keeps the first ones and reports the rest once, so the
// per-request work of Agent.Signal stays bounded whatever the file holds.
func TestSignalLinesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "Content-Usage: /p%d/ train-ai=n\n", i)
	}
	r := Parse([]byte(b.String()))
	if s, line := r.Agent("X").Signal(PurposeAITrain, "/p255/x"); s != No || line != 257 {
		t.Errorf("the 256th line: %v line %d", s, line)
	}
	if s, _ := r.Agent("X").Signal(PurposeAITrain, "/p256/x"); s != Unset {
		t.Errorf("the 257th line was read: %v", s)
	}
	n := 0
	for _, d := range r.Lint() {
		if d.Code == "too-many-signals" {
			n++
			if d.Line != 258 {
				t.Errorf("reported on line %d", d.Line)
			}
		}
	}
	if n != 1 {
		t.Errorf("too-many-signals reported %d times, want once", n)
	}
}

// BenchmarkSignalWorstCase: the most work Agent.Signal does, a group
// reached by MaxSignalLines Content-Usage lines, none of whose paths
// matches.
func BenchmarkSignalWorstCase(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("User-agent: *\n")
	for i := range MaxSignalLines {
		fmt.Fprintf(&sb, "Content-Usage: /section-%d/ train-ai=n\n", i)
	}
	a := Parse([]byte(sb.String())).Agent("GPTBot/1.2")
	b.ReportAllocs()
	for b.Loop() {
		if s, _ := a.Signal(PurposeAITrain, "/blog/post?id=1"); s != Unset {
			b.Fatal(s)
		}
	}
}

// TestUsageVocab08: the examples of draft-ietf-aipref-vocab-08 §6 as a
// Content-Usage line, read as SEMANTICS.md §8a says: -08's new ai-use is
// the answer-time input of a generative model (ai-input); keys and values
// are read leniently (the draft parses a strict RFC 9651 Dictionary, in
// which upper case fails, a bare key is the boolean true and the last of
// a key given twice counts: the rows marked "draft:" differ, as §8a
// decides), and within a line no wins.
func TestUsageVocab08(t *testing.T) {
	u, y, n := Unset, Yes, No
	for _, c := range []struct {
		value                  string
		train, aiInput, search Signal
	}{
		{"train-ai=y, search=n", y, u, n},                       // §6, as the draft
		{`train-ai=y, train-ai, search=n, search="n"`, y, u, n}, // draft: all unknown (§6.5.1)
		{"train-ai;allow=n, train-ai=y", y, u, u},               // §6.5.2, as the draft: parameters do not apply
		{`train-ai;has;parameters="?";`, u, u, u},               // §6.5.2, as the draft
		{"Train-AI=n", n, u, u},                                 // draft: unknown (upper case does not parse)
		{"ai-use=n, search=y", u, n, y},                         // -08's new category
		{"train-ai=n, train-ai=y", n, u, u},                     // draft: y (the last counts); §8a: no wins
	} {
		a := Parse([]byte("User-agent: *\nAllow: /\nContent-Usage: " + c.value + "\n")).Agent("GPTBot")
		for p, want := range map[Purpose]Signal{PurposeAITrain: c.train, PurposeAIInput: c.aiInput, PurposeSearch: c.search} {
			if got, _ := a.SignalRule(p, "/"); got != want {
				t.Errorf("Content-Usage: %s: %s %v, want %v", c.value, p, got, want)
			}
		}
	}
}
