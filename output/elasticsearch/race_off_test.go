//go:build !race

package elasticsearch

// raceEnabled reports whether the test binary runs with the race detector.
const raceEnabled = false
