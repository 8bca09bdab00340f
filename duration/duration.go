// Package duration is the one duration type of the configuration: every
// block's durations read "90s", "1h30m" or "1d12h" (or nanoseconds) in
// JSON, as Caddy's caddy.Duration does, in the Caddy module and in a JSON
// file read by a net/http program alike.
package duration

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Duration is a time.Duration that reads and writes JSON the way every
// duration of the configuration is written, in the Caddy module as in a
// JSON file read by a net/http program: a string such as "90s", "1h30m" or
// "1d12h" (see Parse), or an integer number of nanoseconds. It
// accepts what Caddy's caddy.Duration accepts, so that a duration written
// for one field works for every other. It writes strings such as "1h30m0s".
type Duration time.Duration

// UnmarshalJSON accepts a duration string (Parse), an integer
// number of nanoseconds, or null (zero: the field's default), as
// caddy.Duration does. Unlike caddy.Duration it decodes the string's JSON
// escapes first, so "5\u00b5s" is 5µs as any JSON reader would take it.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v time.Duration
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		p, err := Parse(s)
		if err != nil {
			return err
		}
		v = p
	} else if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("duration must be a string such as \"10m\" or \"1d\", or integer nanoseconds, got %s", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string such as "10m0s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// maxDurationLen bounds the input of Parse, as caddy.Parse
// bounds it.
const maxDurationLen = 1024

// Parse parses a duration as Caddy's caddy.Parse does
// (Caddy v2's caddy.go), so that the Caddyfile, the Caddy module's JSON and
// a net/http program's JSON agree: a Go duration (time.ParseDuration: "300ms",
// "1.5h", "2h45m") in which a number may also carry the unit d, a day of
// 24 hours ("1d", "1.5d", "1d12h"). Inputs longer than 1024 bytes are
// refused. It is written without importing Caddy, so that the net/http
// middleware does not depend on it; a test in the Caddy module compares
// the two over many inputs.
func Parse(s string) (time.Duration, error) {
	if len(s) > maxDurationLen {
		return 0, errors.New("parsing duration: input string too long")
	}
	// Each "<number>d" is replaced by "<24×number>h", then the whole is
	// read by time.ParseDuration. A number is a run of digits, '.', '+'
	// and '-' (as Caddy scans it); the run before a 'd' is the day count,
	// and a 'd' after anything else is an error.
	inNumber := false
	numStart := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch == 'd' {
			days, err := strconv.ParseFloat(s[numStart:i], 64)
			if err != nil {
				return 0, err
			}
			hours := strconv.FormatFloat(days*24, 'f', -1, 64)
			s = s[:numStart] + hours + "h" + s[i+1:]
			// Scan on from the same index, now inside the hours (as
			// Caddy's loop does: i-- then continue), with inNumber as
			// it was.
			i--
			continue
		}
		if !inNumber {
			numStart = i
		}
		inNumber = (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '+'
	}
	return time.ParseDuration(s)
}
