package policy

import "testing"

// TestFromStatus: RFC 9309 §2.3.1's status classes.
func TestFromStatus(t *testing.T) {
	body := []byte("User-agent: *\nDisallow: /private/\n")
	for _, tc := range []struct {
		code int
		want Access
	}{
		{200, Rules}, {204, Rules}, {299, Rules},
		{100, Unreachable}, {301, Unreachable}, {304, Unreachable},
		{400, Unavailable}, {401, Unavailable}, {403, Unavailable}, {404, Unavailable}, {410, Unavailable}, {451, Unavailable},
		{429, Unreachable}, {500, Unreachable}, {503, Unreachable}, {599, Unreachable},
		{0, Unreachable}, {-1, Unreachable}, {600, Unreachable},
	} {
		r, a := FromStatus(tc.code, body)
		if a != tc.want || StatusAccess(tc.code) != tc.want {
			t.Errorf("%d: %v, want %v", tc.code, a, tc.want)
		}
		if got := !r.Agent("FooBot").Decide("/private/x").Allowed; got != (tc.want == Rules) {
			t.Errorf("%d: the body's rules applied: %v", tc.code, got)
		}
	}
}
