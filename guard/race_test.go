//go:build race

package guard

// raceEnabled reports whether the race detector is on.
const raceEnabled = true
