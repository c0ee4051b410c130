package lumberjack

import (
	"encoding/binary"
	"io"

	v2 "github.com/elastic/go-lumber/protocol/v2"
)

// WriteACK writes the acknowledgement frame '2' 'A' seq. seq is the
// sequence number of a batch's last event, or 0 for a keepalive while a
// batch is still being made durable (clients reset their timeout on it).
func WriteACK(w io.Writer, seq uint32) error {
	var ack [6]byte
	ack[0], ack[1] = v2.CodeVersion, v2.CodeACK
	binary.BigEndian.PutUint32(ack[2:], seq)
	_, err := w.Write(ack[:])
	return err
}
