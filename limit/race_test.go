//go:build race

package limit

// raceEnabled reports whether the race detector is on.
const raceEnabled = true
