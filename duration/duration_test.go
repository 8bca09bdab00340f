package duration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestParseDuration holds the cases of Caddy's own TestParseDuration
// (caddy_test.go, v2.11.9) and the edges of its scan; the Caddy module's
// tests compare ParseDuration with caddy.ParseDuration over many more.
func TestParse(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string // a substring of the error; "" for none
	}{
		// Caddy's cases.
		{"3h", 3 * time.Hour, ""},
		{"1d", day, ""},
		{"1d30m", day + 30*time.Minute, ""},
		{"1m2d", time.Minute + 2*day, ""},
		{"1m2d30s", time.Minute + 2*day + 30*time.Second, ""},
		{"1d2d", 3 * day, ""},
		{"1.5d", time.Duration(1.5 * float64(day)), ""},
		{"4m1.25d", 4*time.Minute + time.Duration(1.25*float64(day)), ""},
		{"-1.25d12h", time.Duration(-1.25*float64(day)) - 12*time.Hour, ""},
		// Go durations pass through.
		{"300ms", 300 * time.Millisecond, ""},
		{"2h45m", 2*time.Hour + 45*time.Minute, ""},
		{"5µs", 5 * time.Microsecond, ""},
		{"0", 0, ""},
		// The edges of the day scan.
		{"1d12h", 36 * time.Hour, ""},
		{"+1d", day, ""},
		{".5d", 12 * time.Hour, ""},
		{"1.d", day, ""},
		{"0d", 0, ""},
		{"7d", 7 * day, ""},
		{"d", 0, "invalid syntax"},
		{"hd", 0, "invalid syntax"},
		{"1hd", 0, "invalid syntax"},
		{"1dd", 0, "invalid syntax"},
		{"1d-1h", 0, `unknown unit "h-"`},
		{"1e3d", 0, `unknown unit "e"`},
		{"", 0, "invalid duration"},
		{"1", 0, "missing unit"},
		{"soon", 0, "invalid duration"},
		{"1 d", 0, "invalid syntax"},
		{"99999999999999999999d", 0, "invalid duration"},
		// The length bound.
		{strings.Repeat("0", 1023) + "s", 0, ""},
		{strings.Repeat("0", 1024) + "s", 0, "input string too long"},
	} {
		got, err := Parse(tc.in)
		name := tc.in
		if len(name) > 40 {
			name = name[:20] + "…"
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q) = %v, %v; want an error containing %q", name, got, err, tc.err)
		case got != tc.want:
			t.Errorf("Parse(%q) = %v, want %v", name, got, tc.want)
		}
	}
}

func TestDurationJSONForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{`"1d"`, 24 * time.Hour, true},
		{`"1d12h"`, 36 * time.Hour, true},
		{`"10m"`, 10 * time.Minute, true},
		{`"5\u00b5s"`, 5 * time.Microsecond, true},
		{`86400000000000`, 24 * time.Hour, true},
		{`null`, 0, true},
		{`"soon"`, 0, false},
		{`""`, 0, false},
		{`1.5`, 0, false},
		{`true`, 0, false},
	} {
		var d Duration
		err := json.Unmarshal([]byte(tc.in), &d)
		if (err == nil) != tc.ok || time.Duration(d) != tc.want {
			t.Errorf("Unmarshal %s = %v, %v; want %v, ok %v", tc.in, time.Duration(d), err, tc.want, tc.ok)
		}
	}
	b, err := json.Marshal(Duration(36 * time.Hour))
	if err != nil || string(b) != `"36h0m0s"` {
		t.Errorf("Marshal 36h = %s, %v", b, err)
	}
}
