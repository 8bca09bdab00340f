package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestDashboardCaddyfile(t *testing.T) {
	for _, c := range []struct {
		in, err string
		want    Dashboard
	}{
		{in: "robots_guard_dashboard", want: Dashboard{}},
		{in: "robots_guard_dashboard {\n read_only\n title \"Ops: robots\"\n}", want: Dashboard{ReadOnly: true, Title: "Ops: robots"}},
		{in: "robots_guard_dashboard extra", err: "wrong argument count"},
		{in: "robots_guard_dashboard {\n unban_all\n}", err: `unknown subdirective "unban_all"`},
		{in: "robots_guard_dashboard {\n title\n}", err: "wrong argument count"},
		{in: "robots_guard_dashboard {\n title a b\n}", err: "title: one argument"},
		{in: "robots_guard_dashboard {\n read_only yes\n}", err: "wrong argument count"},
	} {
		var d Dashboard
		err := d.UnmarshalCaddyfile(caddyfile.NewTestDispenser(c.in))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.in, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: err %v, want %q", c.in, err, c.err)
		case c.err == "" && (d.ReadOnly != c.want.ReadOnly || d.Title != c.want.Title):
			t.Errorf("%q: %+v, want %+v", c.in, d, c.want)
		}
	}
}
