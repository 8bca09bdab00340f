//go:build race

package report

// raceEnabled reports whether the race detector is on.
const raceEnabled = true
