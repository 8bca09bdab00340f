//go:build !race

package middleware

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
