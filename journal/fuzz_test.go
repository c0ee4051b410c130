package journal

import (
	"errors"
	"testing"

	"github.com/logpond/logpond/internal/framelog"
)

// FuzzExamineTail feeds arbitrary segment bytes to recovery's decision. It
// must never panic; a cut must leave a prefix that scans cleanly to exactly
// the records kept; a refusal must be located inside the data. Seeds (real
// segments, torn and damaged) live in testdata/fuzz/FuzzExamineTail.
func FuzzExamineTail(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		kept, rep, err := examineTail("seg", framelog.Bytes(data), 1)
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Offset < 0 || ce.Offset >= int64(len(data)) {
				t.Fatalf("refusal %v is not located inside the %d bytes", err, len(data))
			}
			return
		}
		end := len(data)
		if rep != nil {
			if rep.Offset < 0 || rep.Offset >= int64(len(data)) || rep.Bytes != int64(len(data))-rep.Offset {
				t.Fatalf("cut %+v outside the %d bytes", rep, len(data))
			}
			end = int(rep.Offset)
		}
		s := newScanner("seg", data[:end], 1, 0, false)
		n := 0
		for s.Next() {
			n++
		}
		if s.Err() != nil || n != kept {
			t.Fatalf("kept prefix scans to %d records (err %v), examine said %d", n, s.Err(), kept)
		}
	})
}
