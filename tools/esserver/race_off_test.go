//go:build !race

package main

// raceEnabled reports whether the test binary runs with the race detector.
const raceEnabled = false
