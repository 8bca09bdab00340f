// Package settings holds the checks that every room's configuration
// block makes the same way, so that their messages read alike:
// "robots_guard: <block>: <field>: must be ...".
package settings

import "fmt"

// Errorf returns the error of an invalid field of a block, e.g.
// Errorf("crawl_delay", "key", "must be %q or %q, got %q", ...).
func Errorf(block, field, format string, args ...any) error {
	return fmt.Errorf("robots_guard: %s: %s: "+format, append([]any{block, field}, args...)...)
}

// Either sets an empty *v to def and refuses a value other than def and
// other.
func Either(v *string, def, other, block, field string) error {
	switch *v {
	case "":
		*v = def
	case def, other:
	default:
		return Errorf(block, field, "must be %q or %q, got %q", def, other, *v)
	}
	return nil
}

// OrDefault sets a zero *v to def and refuses a negative one.
func OrDefault[T int | int64](v *T, def T, block, field string) error {
	switch {
	case *v == 0:
		*v = def
	case *v < 0:
		return Errorf(block, field, "must be positive, got %d", *v)
	}
	return nil
}
