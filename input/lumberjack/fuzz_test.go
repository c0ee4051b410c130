package lumberjack

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzReadBatch feeds arbitrary client bytes to the reader. It must never
// panic; every stream ends in io.EOF or a *ProtocolError; events handed
// out never exceed the limits. Seeds (the real Filebeat captures and the
// hostile streams) live in testdata/fuzz/FuzzReadBatch.
func FuzzReadBatch(f *testing.F) {
	f.Add([]byte("2W\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		limits := DefaultLimits()
		limits.MaxBatchBytes = 1 << 20
		limits.MaxEventBytes = 64 << 10
		r := NewReader(bytes.NewReader(data), limits)
		for range 100 {
			_, _, err := r.ReadBatch(func(ev []byte) error {
				if len(ev) > limits.MaxEventBytes {
					t.Fatalf("event of %d bytes passed a %d-byte limit", len(ev), limits.MaxEventBytes)
				}
				return nil
			})
			if err == nil {
				continue
			}
			var pe *ProtocolError
			if !errors.Is(err, io.EOF) && !errors.As(err, &pe) {
				t.Fatalf("error %v is neither EOF nor a ProtocolError", err)
			}
			return
		}
	})
}

// TestWriteReaderFuzzSeeds regenerates the seeds when LOGPOND_WRITE_SEEDS=1.
func TestWriteReaderFuzzSeeds(t *testing.T) {
	if os.Getenv("LOGPOND_WRITE_SEEDS") != "1" {
		t.Skip("set LOGPOND_WRITE_SEEDS=1 to regenerate the fuzz seeds")
	}
	out := filepath.Join("testdata", "fuzz", "FuzzReadBatch")
	os.MkdirAll(out, 0o755)
	write := func(name string, b []byte) {
		os.WriteFile(filepath.Join(out, name), []byte("go test fuzz v1\n[]byte("+strconv.Quote(string(b))+")\n"), 0o644)
	}
	for _, v := range []string{"7.17.29", "9.3.0"} {
		b, err := os.ReadFile(filepath.Join(captures, "filebeat-"+v+"-session.bin"))
		if err != nil {
			t.Fatal(err)
		}
		write("filebeat-"+v, b)
	}
	write("plain-two-events", (&frames{}).window(2).json(1, `{"a":1}`).json(2, `{"b":[1,2]}`).Bytes())
	inner := (&frames{}).json(1, `{"a":1}`)
	write("nested", (&frames{}).window(1).compressed((&frames{}).compressed(inner.Bytes()).Bytes()).Bytes())
	write("huge-window", []byte("2W\xff\xff\xff\xff"))
	write("huge-event", append((&frames{}).window(1).Bytes(), "2J\x00\x00\x00\x01\xff\xff\xff\xff"...))
	write("bad-version", []byte("1W\x00\x00\x00\x01"))
}
