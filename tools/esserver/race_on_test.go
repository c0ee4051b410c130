//go:build race

package main

// raceEnabled reports whether the test binary runs with the race detector;
// the demo tests then build their binaries with -race too, which reuses
// the packages `go test -race` compiled anyway.
const raceEnabled = true
