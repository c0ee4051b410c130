//go:build race

package elasticsearch

// raceEnabled reports whether the test binary runs with the race detector,
// whose instrumentation moves some values to the heap: allocation counts
// are checked without it.
const raceEnabled = true
