package main

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/logpond/logpond/internal/testkit/filebeatlogs"
	"github.com/logpond/logpond/record"
)

// codecRecordEvents is how many events one record of the codec table
// holds: Filebeat's default window (bulk_max_size), which the input turns
// into one record.
const codecRecordEvents = 2048

// codecMinTime is how long each codec's compression and decompression is
// repeated at least, so that one pass over small log files is not timed
// alone at the clock's grain.
const codecMinTime = 300 * time.Millisecond

// codecRow is one codec's figures over every record of the real logs.
type codecRow struct {
	Codec, What     string
	Records, Events int
	Raw, Stored     int64   // version 1 record bytes, and what the codec stores for them
	FileMean        float64 // the mean over files of each file's stored/raw
	CompressMBps    float64 // of raw bytes, one goroutine
	DecompressMBps  float64
	CompressCPU     float64 // ms of CPU per 1000 events
	DecompressCPU   float64
	Memory          int64 // a bound of the codec's state (record.CompressorMemory), 0 when none is stated
}

// Ratio is stored bytes over raw bytes over all records.
func (r codecRow) Ratio() float64 {
	if r.Raw == 0 {
		return 0
	}
	return float64(r.Stored) / float64(r.Raw)
}

// codec is one way of storing a version 1 record: compress returns the
// bytes stored for it (appended to dst), decompress checks stored bytes
// against the record they came from (in the verifying pass; nil in the
// timed passes) and returns an error when they do not give its events
// back.
type codec struct {
	name, what string
	memory     int64
	compress   func(dst, rec []byte) ([]byte, error)
	decompress func(stored, rec []byte) error
	close      func()
}

// eventsArea is the events of a version 1 record, as its encoder laid
// them out (each event with its length), without header and CRC.
func eventsArea(rec []byte) []byte { return rec[record.HeaderSize : len(rec)-record.TrailerSize] }

// blockOverhead is what a version 2 record adds around its block: the
// codecs that are not the ledger's are charged it too, as if the ledger
// stored their block in the same layout.
const blockOverhead = record.HeaderSizeCompressed + record.TrailerSize

// codecs returns the codecs compared, logpond's own levels first.
func codecs() ([]codec, error) {
	var out []codec
	closeAll := func() {
		for _, c := range out {
			c.close()
		}
	}
	dec, err := record.NewDecompressor()
	if err != nil {
		return nil, err
	}
	out = append(out, codec{name: "decompressor", close: dec.Close}) // closed with the others, not measured
	for _, cm := range []record.Compression{
		record.Zstd(record.LevelFastest), record.Zstd(record.LevelDefault), record.Zstd(record.LevelBetter), record.Zstd(record.LevelBest),
		record.S2(record.LevelFastest), record.S2(record.LevelDefault), record.S2(record.LevelBetter),
	} {
		c, err := record.NewCompressor(cm)
		if err != nil {
			closeAll()
			return nil, err
		}
		out = append(out, codec{
			name: cm.String(), what: "logpond's record.Compressor: one " + cm.Codec.String() + " block per record", memory: int64(record.CompressorMemory(cm)),
			compress: c.Compress,
			decompress: func(stored, rec []byte) error {
				r, err := dec.Decode(stored, record.MaxBlockBytes)
				if err != nil {
					return err
				}
				if rec == nil {
					for range r.Events() {
					}
					return nil
				}
				want, err := record.Decode(rec)
				if err != nil {
					return err
				}
				var got, exp [][]byte
				for ev := range r.Events() {
					got = append(got, ev)
				}
				for ev := range want.Events() {
					exp = append(exp, ev)
				}
				if len(got) != len(exp) {
					return fmt.Errorf("%d events back, want %d", len(got), len(exp))
				}
				for i := range got {
					if !bytes.Equal(got[i], exp[i]) {
						return fmt.Errorf("event %d differs", i)
					}
				}
				return nil
			},
			close: func() { c.Close() },
		})
	}

	// zlib level 3 over the same events: about what keeping the client's
	// own compressed window would store, as Filebeat compresses each
	// window at level 3 by default.
	zw, err := zlib.NewWriterLevel(io.Discard, 3)
	if err != nil {
		closeAll()
		return nil, err
	}
	var zbuf bytes.Buffer
	var zr io.ReadCloser
	var zout []byte
	out = append(out, codec{
		name: "zlib 3", what: "deflate at level 3 over the record's events: keeping the client's compressed window",
		compress: func(dst, rec []byte) ([]byte, error) {
			zbuf.Reset()
			zbuf.Write(make([]byte, blockOverhead))
			zw.Reset(&zbuf)
			if _, err := zw.Write(eventsArea(rec)); err != nil {
				return dst, err
			}
			if err := zw.Close(); err != nil {
				return dst, err
			}
			return append(dst, zbuf.Bytes()...), nil
		},
		decompress: func(stored, rec []byte) error {
			src := bytes.NewReader(stored[blockOverhead:])
			var err error
			if zr == nil {
				zr, err = zlib.NewReader(src)
			} else {
				err = zr.(zlib.Resetter).Reset(src, nil)
			}
			if err != nil {
				return err
			}
			b := bytes.NewBuffer(zout[:0])
			if _, err := b.ReadFrom(zr); err != nil {
				return err
			}
			zout = b.Bytes()
			if rec != nil && !bytes.Equal(zout, eventsArea(rec)) {
				return fmt.Errorf("zlib gives other bytes back")
			}
			return nil
		},
		close: func() {},
	})

	// Each event compressed alone: what a queue that compresses event by
	// event (Logstash 9's persistent queue) stores, each frame with a
	// 4-byte length.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
	if err != nil {
		closeAll()
		return nil, err
	}
	zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		enc.Close()
		closeAll()
		return nil, err
	}
	var evbuf []byte
	out = append(out, codec{
		name: "zstd per event", what: "each event its own zstd frame (default level): a queue compressing event by event",
		compress: func(dst, rec []byte) ([]byte, error) {
			r, err := record.Decode(rec)
			if err != nil {
				return dst, err
			}
			dst = append(dst, make([]byte, blockOverhead)...)
			for ev := range r.Events() {
				at := len(dst)
				dst = append(dst, 0, 0, 0, 0)
				dst = enc.EncodeAll(ev, dst)
				binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
			}
			return dst, nil
		},
		decompress: func(stored, rec []byte) error {
			rest := stored[blockOverhead:]
			var want [][]byte
			if rec != nil {
				r, err := record.Decode(rec)
				if err != nil {
					return err
				}
				for ev := range r.Events() {
					want = append(want, ev)
				}
			}
			for n := 0; len(rest) > 0; n++ {
				if len(rest) < 4 || int(binary.LittleEndian.Uint32(rest)) > len(rest)-4 {
					return fmt.Errorf("frame %d cut short", n)
				}
				size := binary.LittleEndian.Uint32(rest)
				var err error
				if evbuf, err = zd.DecodeAll(rest[4:4+size], evbuf[:0]); err != nil {
					return err
				}
				if rec != nil && (n >= len(want) || !bytes.Equal(evbuf, want[n])) {
					return fmt.Errorf("event %d differs", n)
				}
				rest = rest[4+size:]
			}
			return nil
		},
		close: func() { enc.Close(); zd.Close() },
	})
	return out, nil
}

// measureCodecs builds records of codecRecordEvents consecutive events of
// one file each (a file's last record smaller: lines are not repeated,
// which would flatter the ratios) and measures every codec on them, on
// this goroutine locked to its thread, whose CPU time it reads. Every
// codec's output is first decompressed and checked against the events it
// came from: a codec that does not give them back is an error.
func measureCodecs(files []filebeatlogs.LogFile) ([]codecRow, error) {
	cs, err := codecs()
	if err != nil {
		return nil, fmt.Errorf("codecs: %w", err)
	}
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	return measureWith(files, cs)
}

// measureWith is measureCodecs with the codecs given (those without a
// compress function are skipped).
func measureWith(files []filebeatlogs.LogFile, cs []codec) ([]codecRow, error) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	byFile := make([][][]byte, len(files))
	events := 0
	for f, lf := range files {
		for i := 0; i < len(lf.Events); i += codecRecordEvents {
			rec, err := record.Encode(nil, t0, lf.Events[i:min(i+codecRecordEvents, len(lf.Events))])
			if err != nil {
				return nil, fmt.Errorf("codecs: a record of %s: %w", lf.Name, err)
			}
			byFile[f] = append(byFile[f], rec)
		}
		events += len(lf.Events)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var rows []codecRow
	for _, c := range cs {
		if c.compress == nil {
			continue
		}
		row := codecRow{Codec: c.name, What: c.what, Events: events, Memory: c.memory}
		var stored [][]byte
		var recs [][]byte
		for _, fileRecs := range byFile {
			var s, r int64
			for _, rec := range fileRecs {
				out, err := c.compress(nil, rec)
				if err != nil {
					return nil, fmt.Errorf("codecs: %s: %w", c.name, err)
				}
				if err := c.decompress(out, rec); err != nil {
					return nil, fmt.Errorf("codecs: %s does not give the record back: %w", c.name, err)
				}
				stored, recs = append(stored, out), append(recs, rec)
				s, r = s+int64(len(out)), r+int64(len(rec))
			}
			row.Stored, row.Raw = row.Stored+s, row.Raw+r
			row.FileMean += float64(s) / float64(r) / float64(len(byFile))
		}
		row.Records = len(recs)
		var dst []byte
		wall, cpu, passes, err := timed(func() error {
			for _, rec := range recs {
				var err error
				if dst, err = c.compress(dst[:0], rec); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("codecs: %s: %w", c.name, err)
		}
		row.CompressMBps = float64(row.Raw) * float64(passes) / 1e6 / wall.Seconds()
		row.CompressCPU = cpu.Seconds() * 1e3 / (float64(events) * float64(passes) / 1000)
		wall, cpu, passes, err = timed(func() error {
			for _, s := range stored {
				if err := c.decompress(s, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("codecs: %s: %w", c.name, err)
		}
		row.DecompressMBps = float64(row.Raw) * float64(passes) / 1e6 / wall.Seconds()
		row.DecompressCPU = cpu.Seconds() * 1e3 / (float64(events) * float64(passes) / 1000)
		rows = append(rows, row)
	}
	return rows, nil
}

// timed runs pass until codecMinTime has gone by (at least once) and
// returns the wall time, this thread's CPU time and the passes run. The
// caller has locked its goroutine to its thread.
func timed(pass func() error) (wall, cpu time.Duration, passes int, err error) {
	cpu0 := threadCPU()
	start := time.Now()
	for passes == 0 || time.Since(start) < codecMinTime {
		if err := pass(); err != nil {
			return 0, 0, 0, err
		}
		passes++
	}
	return time.Since(start), threadCPU() - cpu0, passes, nil
}

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// threadCPU is the calling thread's user and system CPU time, 0 when
// unknown.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
