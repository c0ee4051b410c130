package main

import (
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/logpond/logpond/record"
)

// compressor returns a conversion for buildMixed that compresses each
// record with a record.Compressor, closed with the test.
func compressor(t *testing.T) func(t *testing.T, rec []byte) []byte {
	c, err := record.NewCompressor(record.Zstd(record.LevelFastest))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return func(t *testing.T, rec []byte) []byte {
		out, err := c.Compress(nil, rec)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// sliceReader serves records from memory as the ledger's DirReader does,
// each at its own offset of one segment.
type sliceReader struct {
	recs [][]byte
	i    int
}

func (r *sliceReader) Next() bool       { r.i++; return r.i <= len(r.recs) }
func (r *sliceReader) LSN() uint64      { return uint64(r.i) }
func (r *sliceReader) Record() []byte   { return r.recs[r.i-1] }
func (r *sliceReader) BytesRead() int64 { return 0 }
func (r *sliceReader) Err() error       { return nil }
func (r *sliceReader) Segment() string  { return "1.seg" }
func (r *sliceReader) Offset() int64    { return int64(r.i) * 4096 }

// TestScanRecordsBothVersions: the scan counts and measures records of
// both versions from their headers; with a Decompressor it decompresses
// the compressed ones, and one whose block does not decode is a bad block
// at its place, counted as lost rather than read.
func TestScanRecordsBothVersions(t *testing.T) {
	z := compressor(t)
	var recs [][]byte
	var stored, raw int64
	for lsn := uint64(1); lsn <= 6; lsn++ {
		rec := testRecord(t, lsn)
		raw += int64(len(rec))
		if lsn > 3 {
			rec = z(t, rec)
		}
		stored += int64(len(rec))
		recs = append(recs, rec)
	}
	if recs[5][0] != record.VersionCompressed || recs[0][0] != record.Version {
		t.Fatalf("records 1 and 6 are versions %d and %d", recs[0][0], recs[5][0])
	}
	dec, err := record.NewDecompressor()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, d := range []*record.Decompressor{nil, dec} {
		var s storeScan
		scanRecords(&sliceReader{recs: recs}, &s, &progress{}, d)
		if s.Err != nil || s.Records != 6 || s.Events != 12 || s.RecordBytes != stored || s.RawBytes != raw ||
			s.FirstLSN != 1 || s.LastLSN != 6 || !s.Oldest.Equal(received(1)) || len(s.BadBlocks) != 0 {
			t.Fatalf("decompressing %v: %+v, want %d stored, %d raw", d != nil, s, stored, raw)
		}
		if s.Compressed == 0 || s.Compressed > 3 {
			t.Fatalf("%d compressed records", s.Compressed)
		}
	}

	// Record 6's block no longer decodes, though its CRC checks.
	bad := append([]byte(nil), recs[5]...)
	copy(bad[record.HeaderSizeCompressed:], []byte{0, 0, 0, 0})
	binary.LittleEndian.PutUint32(bad[len(bad)-4:], crc32.Checksum(bad[:len(bad)-4], crc32.MakeTable(crc32.Castagnoli)))
	if _, err := record.Verify(bad); err != nil {
		t.Fatal(err)
	}
	recs[5] = bad
	var s storeScan
	scanRecords(&sliceReader{recs: recs}, &s, &progress{}, nil)
	if s.Records != 6 || len(s.BadBlocks) != 0 {
		t.Fatalf("headers only: %+v", s)
	}
	s = storeScan{}
	scanRecords(&sliceReader{recs: recs}, &s, &progress{}, dec)
	if s.Err != nil || s.Records != 5 || s.Events != 10 || s.LastLSN != 6 || s.DamagedRecords != 1 || len(s.BadBlocks) != 1 {
		t.Fatalf("%+v", s)
	}
	if b := s.BadBlocks[0]; b.File != "1.seg" || b.Offset == nil || *b.Offset != 6*4096 || b.LSN != 6 || !strings.Contains(b.Error, "block") {
		t.Fatalf("bad block %+v", b)
	}
}
