//go:build !race

package lumberjack

const raceEnabled = false
