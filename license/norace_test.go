//go:build !race

package license

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
