// Package lumbertest holds the Lumberjack v2 side of tests: Window builds
// bytes for tests that need to send exactly what they choose (events that
// are not JSON, say), which go-lumber's client would refuse to encode,
// and Peer is a destination that keeps what it receives. Only tests
// import it.
package lumbertest

import (
	"bytes"
	"encoding/binary"
)

// Window returns a window frame for len(events) events followed by one
// JSON frame per event, numbered from 1, uncompressed.
func Window(events ...string) []byte {
	var b bytes.Buffer
	b.WriteString("2W")
	binary.Write(&b, binary.BigEndian, uint32(len(events)))
	for i, ev := range events {
		b.WriteString("2J")
		binary.Write(&b, binary.BigEndian, uint32(i+1))
		binary.Write(&b, binary.BigEndian, uint32(len(ev)))
		b.WriteString(ev)
	}
	return b.Bytes()
}
