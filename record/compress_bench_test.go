package record

import (
	"flag"
	"fmt"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/logpond/logpond/internal/testkit/filebeatlogs"
)

// logsDir names a folder of real log files (one line per log line, *.log),
// e.g. /work/shared/testdata/logs. BenchmarkCompression skips without it:
// the figures depend on what real logs look like, and the tests must pass
// without that folder.
var logsDir = flag.String("logs", "", "folder of *.log files for BenchmarkCompression")

// benchRecords builds version 1 records of perRecord consecutive events of
// one file each (a file with fewer lines gives one smaller record: lines
// are not repeated, which would flatter the ratio). It returns the records
// of each file.
func benchRecords(b *testing.B, files [][][]byte, perRecord int) [][][]byte {
	recs := make([][][]byte, len(files))
	for f, events := range files {
		for i := 0; i < len(events); i += perRecord {
			rec, err := Encode(nil, t0, events[i:min(i+perRecord, len(events))])
			if err != nil {
				b.Fatal(err)
			}
			recs[f] = append(recs[f], rec)
		}
	}
	return recs
}

// ratios compresses every record with c and returns stored bytes over
// record bytes in all, and the mean over files of each file's ratio (every
// kind of log counts the same, however many lines it has).
func ratios(c benchCodec, byFile [][][]byte) (total, fileMean float64) {
	var stored, raw int
	for _, recs := range byFile {
		var s, r int
		for _, rec := range recs {
			s += len(c.compress(nil, rec))
			r += len(rec)
		}
		stored += s
		raw += r
		fileMean += float64(s) / float64(r) / float64(len(byFile))
	}
	return float64(stored) / float64(raw), fileMean
}

// benchCodec is one way of storing a record's events: compress turns a v1
// record into the stored bytes, decode reads them back to the events area
// and returns the number of events.
type benchCodec struct {
	name     string
	compress func(dst, rec []byte) []byte
	decode   func(stored []byte) int
}

func benchCodecs(b *testing.B) []benchCodec {
	var codecs []benchCodec
	d, err := NewDecompressor()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Close)
	decode := func(stored []byte) int {
		r, err := d.Decode(stored, MaxBlockBytes)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for range r.Events() {
			n++
		}
		return n
	}
	codecs = append(codecs, benchCodec{"none", func(dst, rec []byte) []byte { return append(dst, rec...) }, decode})
	for _, cm := range []Compression{Zstd(LevelFastest), Zstd(LevelDefault), Zstd(LevelBetter), S2(LevelFastest), S2(LevelDefault)} {
		c, err := NewCompressor(cm)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		codecs = append(codecs, benchCodec{cm.Codec.String() + "-" + cm.Level.String(), func(dst, rec []byte) []byte {
			out, err := c.Compress(dst, rec)
			if err != nil {
				b.Fatal(err)
			}
			return out
		}, decode})
	}

	// Each event compressed alone at the default level, for contrast:
	// count × { u32 frame length, frame } between a v2 header and CRC.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false), zstd.WithWindowSize(encoderWindow), zstd.WithLowerEncoderMem(true))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { enc.Close() })
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(dec.Close)
	var evbuf []byte
	codecs = append(codecs, benchCodec{"zstd-per-event", func(dst, rec []byte) []byte {
		r, err := Decode(rec)
		if err != nil {
			b.Fatal(err)
		}
		start := len(dst)
		dst = append(dst, rec[:HeaderSize]...)
		dst = append(dst, 1, 0, 0, 0, 0, 0, 0, 0)
		for ev := range r.Events() {
			at := len(dst)
			dst = append(dst, 0, 0, 0, 0)
			dst = enc.EncodeAll(ev, dst)
			le.PutUint32(dst[at:], uint32(len(dst)-at-4))
		}
		le.PutUint32(dst[start+offLength:], uint32(len(dst)-start+TrailerSize))
		return le.AppendUint32(dst, checksum(dst[start:]))
	}, func(stored []byte) int {
		if checksum(stored[:len(stored)-TrailerSize]) != le.Uint32(stored[len(stored)-TrailerSize:]) {
			b.Fatal("per-event: checksum")
		}
		rest := stored[HeaderSizeCompressed : len(stored)-TrailerSize]
		n := 0
		for len(rest) > 0 {
			size := le.Uint32(rest)
			var err error
			if evbuf, err = dec.DecodeAll(rest[4:4+size], evbuf[:0]); err != nil {
				b.Fatal(err)
			}
			rest = rest[4+size:]
			n++
		}
		return n
	}})
	return codecs
}

// loadLogs wraps the lines of every *.log in -logs DIR as Filebeat
// events (filebeatlogs); it skips b without the flag.
func loadLogs(b *testing.B) (names []string, files [][][]byte) {
	if *logsDir == "" {
		b.Skip("no -logs DIR: the figures need real log lines")
	}
	logs, err := filebeatlogs.Load(*logsDir)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range logs {
		names = append(names, f.Name)
		files = append(files, f.Events)
	}
	return names, files
}

// BenchmarkCompression measures, on real log lines wrapped as Filebeat
// events (-logs DIR), what each codec makes of records of 50, 250 and 2048
// events: "ratio" is stored bytes over version 1 record bytes in all,
// "file-ratio" the mean of each file's ratio (so that one big repetitive
// log does not stand for all), and MB/s is of version 1 record bytes, for
// compressing (.../compress) and for decoding and iterating the events
// (.../decode).
//
//	go test -run '^$' -bench Compression ./record -logs /work/shared/testdata/logs
func BenchmarkCompression(b *testing.B) {
	_, files := loadLogs(b)
	codecs := benchCodecs(b)
	for _, perRecord := range []int{50, 250, 2048} {
		byFile := benchRecords(b, files, perRecord)
		recs := slices.Concat(byFile...)
		raw := 0
		for _, rec := range recs {
			raw += len(rec)
		}
		for _, c := range codecs {
			stored := make([][]byte, len(recs))
			for i, rec := range recs {
				stored[i] = c.compress(nil, rec)
			}
			ratio, fileRatio := ratios(c, byFile)
			name := fmt.Sprintf("events=%d/%s", perRecord, c.name)
			b.Run(name+"/compress", func(b *testing.B) {
				b.SetBytes(int64(raw))
				var dst []byte
				for b.Loop() {
					for _, rec := range recs {
						dst = c.compress(dst[:0], rec)
					}
				}
				b.ReportMetric(ratio, "ratio")
				b.ReportMetric(fileRatio, "file-ratio")
			})
			b.Run(name+"/decode", func(b *testing.B) {
				b.SetBytes(int64(raw))
				for b.Loop() {
					for _, s := range stored {
						c.decode(s)
					}
				}
				b.ReportMetric(ratio, "ratio")
			})
		}
	}
}

// BenchmarkCompressionByFile reports each file's ratio (and compression
// MB/s) for records of 250 events, per codec: how much the figures depend
// on the kind of log. A file of fewer lines is one smaller record.
func BenchmarkCompressionByFile(b *testing.B) {
	names, files := loadLogs(b)
	codecs := benchCodecs(b)
	byFile := benchRecords(b, files, 250)
	for f, name := range names {
		for _, c := range codecs[1:] {
			ratio, _ := ratios(c, byFile[f:f+1])
			raw := 0
			for _, rec := range byFile[f] {
				raw += len(rec)
			}
			b.Run(name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(int64(raw))
				var dst []byte
				for b.Loop() {
					for _, rec := range byFile[f] {
						dst = c.compress(dst[:0], rec)
					}
				}
				b.ReportMetric(ratio, "ratio")
			})
		}
	}
}
