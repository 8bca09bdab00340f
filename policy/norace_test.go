//go:build !race

package policy_test

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
