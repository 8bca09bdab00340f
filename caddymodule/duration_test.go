package caddymodule

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/robotsguard/robotsguard/duration"
	"github.com/robotsguard/robotsguard/guard"
)

// durationInputs are the seeds of the differential tests: Caddy's own
// cases, the edges of its day scan, and malformed ones.
var durationInputs = []string{
	"3h", "1d", "1d30m", "1m2d", "1m2d30s", "1d2d", "1.5d", "4m1.25d", "-1.25d12h",
	"", "0", "1", "d", "dd", "1dd", "hd", "1hd", "h1d", "1d1", "+1d", "-1d", "+-1d", ".d", ".5d", "1.d",
	"1..5d", "1e3d", "1E3d", "0x10d", "1_0d", "1 d", " 1d", "1d ", "1d-1h", "1h-1d", "1d1h1m1s1ms1us1ns",
	"5µs", "5μs", "1.5h", "2h45m", "300ms", "-0", "+0s", "1s.5d", "9999999999d", "99999999999999999999d",
	"106751d", "106752d", "0.000001d", "1d\x00", "١d", "∞d", "NaNd", "Infd", "1Infd", "1.5.d",
	strings.Repeat("1", 1023) + "d", strings.Repeat("1", 1024) + "d", strings.Repeat("0", 1020) + "1d",
}

// randomDuration draws a short string over the characters Caddy's scan
// treats specially and a few others.
func randomDuration(r *rand.Rand) string {
	const alphabet = "0123456789.+-dhmsun µ e"
	var b strings.Builder
	for range r.IntN(12) {
		if r.IntN(4) == 0 { // favour digit runs before a unit
			b.WriteString(fmt.Sprint(r.IntN(1000)))
		}
		c := []rune(alphabet)[r.IntN(len([]rune(alphabet)))]
		b.WriteRune(c)
	}
	return b.String()
}

// TestParseDurationMatchesCaddy compares duration.Parse with
// caddy.ParseDuration (the one the middleware mirrors without importing
// Caddy) over the seeds and many random strings: the same value, and an
// error for the same inputs.
func TestParseDurationMatchesCaddy(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 2024))
	inputs := append([]string(nil), durationInputs...)
	for range 50000 {
		inputs = append(inputs, randomDuration(r))
	}
	ok := 0
	for _, in := range inputs {
		want, werr := caddy.ParseDuration(in)
		got, err := duration.Parse(in)
		if got != want || (err == nil) != (werr == nil) {
			t.Errorf("ParseDuration(%q) = %v, %v; caddy.ParseDuration: %v, %v", in, got, err, want, werr)
		}
		if werr == nil {
			ok++
		}
	}
	if ok < 1000 {
		t.Errorf("only %d of %d inputs parse: the random inputs test little", ok, len(inputs))
	}
}

// TestDurationJSONMatchesCaddy: duration.Duration reads every JSON value
// that caddy.Duration reads, to the same value, and refuses the others.
// (caddy.Duration does not decode a string's escapes: those are left out,
// duration.Duration decodes them.)
func TestDurationJSONMatchesCaddy(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 309))
	var docs []string
	for _, in := range durationInputs {
		b, _ := json.Marshal(in)
		if !strings.Contains(string(b), `\`) {
			docs = append(docs, string(b))
		}
	}
	for range 5000 {
		b, _ := json.Marshal(randomDuration(r))
		if !strings.Contains(string(b), `\`) {
			docs = append(docs, string(b))
		}
	}
	docs = append(docs, "0", "86400000000000", "-5", "1.5", "1e9", "null", "true", `{}`, `[]`, "9223372036854775807", "9223372036854775808")
	for _, doc := range docs {
		var want caddy.Duration
		werr := json.Unmarshal([]byte(doc), &want)
		var got duration.Duration
		err := json.Unmarshal([]byte(doc), &got)
		if (err == nil) != (werr == nil) || (err == nil && time.Duration(got) != time.Duration(want)) {
			t.Errorf("Unmarshal %s = %v, %v; caddy.Duration: %v, %v", doc, time.Duration(got), err, time.Duration(want), werr)
		}
	}
}

// durationField is a duration of the module's configuration: where it is
// in the JSON, where the Caddyfile sets it, and the name its bound error
// gives.
type durationField struct {
	name      string                                  // its path in the JSON
	json      func(v string) string                   // the handler's JSON with the field at v
	caddyfile func(v string) string                   // a robots_guard block with it at v
	get       func(c *guard.Config) duration.Duration // its value
	boundErr  string                                  // the error prefix of an out-of-bounds value
	inBounds  string                                  // a value in days within its bounds
}

var durationFields = []durationField{
	{"robots_txt.refresh", func(v string) string { return `{"robots_txt":{"refresh":` + v + `}}` },
		func(v string) string { return "robots_txt {\nrefresh " + v + "\n}" },
		func(c *guard.Config) duration.Duration { return c.RobotsTxt.Refresh },
		"robots_guard: robots_txt: refresh: ", "0.5d"},
	{"robots_txt.fetch_timeout", func(v string) string { return `{"robots_txt":{"fetch_timeout":` + v + `}}` },
		func(v string) string { return "robots_txt {\nfetch_timeout " + v + "\n}" },
		func(c *guard.Config) duration.Duration { return c.RobotsTxt.FetchTimeout },
		"robots_guard: robots_txt: fetch_timeout: ", "0.0001d"},
	{"traps.grace", func(v string) string { return `{"traps":{"grace":` + v + `}}` },
		func(v string) string { return "traps /t/ {\ngrace " + v + "\n}" },
		func(c *guard.Config) duration.Duration { return *c.Traps.Grace },
		"robots_guard: traps: grace: ", "2d"},
	{"bans.for", func(v string) string { return `{"bans":{"for":` + v + `,"max":"30d"}}` },
		func(v string) string { return "bans {\nfor " + v + "\nmax 30d\n}" },
		func(c *guard.Config) duration.Duration { return c.Bans.For },
		"robots_guard: bans: for: ", "2d"},
	{"bans.max", func(v string) string { return `{"bans":{"max":` + v + `}}` },
		func(v string) string { return "bans {\nmax " + v + "\n}" },
		func(c *guard.Config) duration.Duration { return c.Bans.Max },
		"robots_guard: bans: max: ", "7d"},
	{"bans.after.window", func(v string) string { return `{"bans":{"after":{"denials":5,"window":` + v + `}}}` },
		func(v string) string { return "bans {\nafter 5 " + v + "\n}" },
		func(c *guard.Config) duration.Duration { return c.Bans.After.Window },
		"robots_guard: bans: after: window ", "0.5d"},
	{"verify.refresh", func(v string) string { return `{"verify":{"refresh":` + v + `}}` },
		func(v string) string { return "verify {\nrefresh " + v + "\n}" },
		func(c *guard.Config) duration.Duration { return c.Verify.Refresh },
		"robots_guard: verify: refresh: ", "2d"},
	{"verify.dns_timeout", func(v string) string { return `{"verify":{"dns_timeout":` + v + `}}` },
		func(v string) string { return "verify {\ndns_timeout " + v + "\n}" },
		func(c *guard.Config) duration.Duration { return c.Verify.DNSTimeout },
		"robots_guard: verify: dns_timeout: ", "0.0001d"},
	{"verify.web_bot_auth.max_window", func(v string) string { return `{"verify":{"web_bot_auth":{"max_window":` + v + `}}}` },
		func(v string) string { return "verify {\nweb_bot_auth {\nmax_window " + v + "\n}\n}" },
		func(c *guard.Config) duration.Duration { return c.Verify.WebBotAuth.MaxWindow },
		"robots_guard: verify: web_bot_auth: max_window: ", "2d"},
	{"store.timeout", func(v string) string { return `{"store":{"redis":"redis://127.0.0.1:6379","timeout":` + v + `}}` },
		func(v string) string { return "store redis redis://127.0.0.1:6379 {\ntimeout " + v + "\n}" },
		func(c *guard.Config) duration.Duration { return c.Store.Timeout },
		"robots_guard: store: timeout: ", "0.00005d"},
}

// checkDuration checks that a field read as want and that the
// configuration's error, if any, is the field's bound.
func checkDuration(t *testing.T, f durationField, v string, g *RobotsGuard, want time.Duration) {
	t.Helper()
	if got := time.Duration(f.get(&g.Config)); got != want {
		t.Errorf("%s %s = %v, want %v", f.name, v, got, want)
	}
	if err := g.Config.Validate(); err != nil && !strings.HasPrefix(err.Error(), f.boundErr) {
		t.Errorf("%s %s: %v, want nil or an error starting %q", f.name, v, err, f.boundErr)
	}
}

// TestDurationsTakeDaysInJSON: every duration field of the module's JSON
// reads "1d" and "1d12h", as Caddy's own durations do; the only error a
// day may get is the field's bound, and a value in days within the bound
// passes.
func TestDurationsTakeDaysInJSON(t *testing.T) {
	const day = 24 * time.Hour
	for _, f := range durationFields {
		for v, want := range map[string]time.Duration{`"1d"`: day, `"1d12h"`: day + 12*time.Hour, `129600000000000`: day + 12*time.Hour} {
			var g RobotsGuard
			// As Caddy decodes a module's JSON: unknown fields are errors.
			if err := caddy.StrictUnmarshalJSON([]byte(f.json(v)), &g); err != nil {
				t.Errorf("%s %s: %v", f.name, v, err)
				continue
			}
			checkDuration(t, f, v, &g, want)
		}
		var g RobotsGuard
		if err := caddy.StrictUnmarshalJSON([]byte(f.json(`"`+f.inBounds+`"`)), &g); err != nil {
			t.Fatalf("%s %s: %v", f.name, f.inBounds, err)
		}
		want, _ := caddy.ParseDuration(f.inBounds)
		if got := time.Duration(f.get(&g.Config)); got != want {
			t.Errorf("%s %s = %v, want %v", f.name, f.inBounds, got, want)
		}
		if err := g.Config.Validate(); err != nil {
			t.Errorf("%s %s: %v", f.name, f.inBounds, err)
		}
	}
}

// TestDurationsTakeDaysInCaddyfile: every duration subdirective reads
// "1d" (and "1d12h"); where a day is out of the field's bounds, the error
// is the bound, and a value in days within them passes.
func TestDurationsTakeDaysInCaddyfile(t *testing.T) {
	const day = 24 * time.Hour
	for _, f := range durationFields {
		inBounds, _ := caddy.ParseDuration(f.inBounds)
		for _, c := range []struct {
			v    string
			want time.Duration
		}{{"1d", day}, {"1d12h", day + 12*time.Hour}, {f.inBounds, inBounds}} {
			in := "robots_guard {\n" + f.caddyfile(c.v) + "\n}"
			var g RobotsGuard
			err := g.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in))
			if err != nil && (c.v == f.inBounds || !strings.Contains(err.Error(), f.boundErr)) {
				t.Errorf("%s %s: %v", f.name, c.v, err)
				continue
			}
			checkDuration(t, f, c.v, &g, c.want)
		}
	}
}

// TestDurationsTakeDaysThroughAdapt: a Caddyfile with a value in days for
// every duration adapts to JSON that Caddy decodes into the module with
// those values.
func TestDurationsTakeDaysThroughAdapt(t *testing.T) {
	in := `http://a {
	robots_guard {
		robots_txt {
			refresh 0.5d
			fetch_timeout 0.0001d
		}
		traps /t/ {
			grace 2d
		}
		bans {
			for 2d
			max 7d
			after 5 0.5d
		}
		verify {
			refresh 2d
			dns_timeout 0.0001d
			web_bot_auth {
				max_window 2d
			}
		}
		store redis redis://127.0.0.1:6379 {
			timeout 0.00005d
		}
	}
}
`
	out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(in), nil)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("adapt: %v %v", err, warnings)
	}
	handler := findHandler(t, out, "robots_guard")
	var g RobotsGuard
	if err := caddy.StrictUnmarshalJSON(handler, &g); err != nil {
		t.Fatalf("%s: %v", handler, err)
	}
	if err := g.Config.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, f := range durationFields {
		v := f.inBounds
		if f.name == "bans.for" {
			v = "2d"
		}
		want, _ := caddy.ParseDuration(v)
		if got := time.Duration(f.get(&g.Config)); got != want {
			t.Errorf("%s = %v, want %v (%s)", f.name, got, want, v)
		}
	}
}

// findHandler returns the JSON of the first handler named name in an
// adapted configuration, without its "handler" key (as Caddy decodes it).
func findHandler(t *testing.T, config []byte, name string) []byte {
	t.Helper()
	var doc any
	if err := json.Unmarshal(config, &doc); err != nil {
		t.Fatal(err)
	}
	var found map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["handler"] == name && found == nil {
				found = v
				return
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	if found == nil {
		t.Fatalf("no %s handler in %s", name, config)
	}
	delete(found, "handler")
	b, err := json.Marshal(found)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
