package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logpond/logpond/record"
)

// zevents are the events of record lsn in the compression tests: a batch
// of Filebeat-like events, which compress many times over.
func zevents(lsn uint64) [][]byte {
	evs := make([][]byte, 20)
	for i := range evs {
		evs[i] = fmt.Appendf(nil, `{"@timestamp":"2026-12-02T12:00:%02dZ","message":"GET /item/%d/%d HTTP/1.1 200","log":{"file":{"path":"/var/log/nginx/access.log"},"offset":%d},"host":{"name":"web-01"},"agent":{"type":"filebeat","version":"9.1.0"}}`,
			i, lsn, i, lsn*1000+uint64(i))
	}
	return evs
}

func zrec(t testing.TB, lsn uint64) []byte {
	b, err := record.Encode(nil, t0, zevents(lsn))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkEvents fails unless the Reader's current record holds zevents(lsn).
func checkEvents(t testing.TB, r *Reader) {
	t.Helper()
	got := slices.Collect(r.Decoded().Events())
	if want := zevents(r.LSN()); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("LSN %d: %d events differ from the %d appended", r.LSN(), len(got), len(want))
	}
	if !r.Decoded().Received().Equal(t0) {
		t.Fatalf("LSN %d received %v, want %v", r.LSN(), r.Decoded().Received(), t0)
	}
}

// TestCompressedLedger appends with compression, without, and with it
// again across reopens: the segments hold both record versions, as
// configured at each append, and a Reader returns every record's events
// intact whatever its version. The stats count what compression did.
func TestCompressedLedger(t *testing.T) {
	dir := t.TempDir()
	phases := []struct {
		level    record.Compression
		from, to uint64
		version  uint8
	}{
		{record.Zstd(record.LevelFastest), 1, 50, record.VersionCompressed},
		{record.Compression{}, 51, 70, record.Version},
		{record.S2(record.LevelFastest), 71, 85, record.VersionCompressed},
		{record.Zstd(record.LevelBest), 86, 100, record.VersionCompressed},
	}
	for _, p := range phases {
		opts := testOpts(t, true)
		opts.Compression = p.level
		l := mustOpen(t, dir, opts)
		var raw int64
		for lsn := p.from; lsn <= p.to; lsn++ {
			b := zrec(t, lsn)
			raw += int64(len(b))
			if err := l.Append(lsn, b); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		st := l.Compression()
		if st.Compression != p.level || st.RawBytes != raw {
			t.Fatalf("level %v: stats %+v, want level %v and %d raw bytes", p.level, st, p.level, raw)
		}
		if !p.level.Enabled() && st.StoredBytes != raw {
			t.Fatalf("without compression %d bytes stored of %d", st.StoredBytes, raw)
		}
		if p.level.Enabled() && st.Ratio() > 0.5 {
			t.Fatalf("level %v stored %.3f of the bytes of Filebeat-like records", p.level, st.Ratio())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	l := mustOpen(t, dir, testOpts(t, true))
	defer l.Close()
	r := l.Reader(1)
	defer r.Close()
	n := uint64(0)
	for r.Next() {
		n++
		if r.LSN() != n {
			t.Fatalf("LSN %d after %d records", r.LSN(), n-1)
		}
		checkEvents(t, r)
		for _, p := range phases {
			if n >= p.from && n <= p.to && r.Record()[0] != p.version {
				t.Fatalf("LSN %d stored as version %d, want %d", n, r.Record()[0], p.version)
			}
		}
	}
	if r.Err() != nil || n != 100 {
		t.Fatalf("read %d of 100 records, err %v", n, r.Err())
	}
	if l.events != -1 && l.events == 0 {
		t.Fatal("open counted no events in the open segment")
	}
}

// TestCompressedRecordsAsTheyCome: records compression does not shrink
// stay version 1; records already compressed are stored as they are and
// counted at their uncompressed size.
func TestCompressedRecordsAsTheyCome(t *testing.T) {
	opts := testOpts(t, false)
	opts.Compression = record.Zstd(record.LevelFastest)
	l := mustOpen(t, t.TempDir(), opts)
	defer l.Close()
	abort := record.AppendAbort(nil, 3, t0)
	c, err := record.NewCompressor(record.S2(record.LevelDefault))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v1 := zrec(t, 2)
	v2, err := c.Compress(nil, v1)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range [][]byte{abort, v2} {
		if err := l.Append(uint64(i+1), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Append(3, []byte("not a record")); err == nil {
		t.Fatal("Append took bytes that are not a record")
	}
	if err := l.Append(3, zrec(t, 3)); err != nil {
		t.Fatalf("the ledger is unusable after refusing bytes that are not a record: %v", err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if st := l.Compression(); st.RawBytes != int64(len(abort)+2*len(v1)) {
		t.Fatalf("raw bytes %d, want %d", st.RawBytes, len(abort)+2*len(v1))
	}
	r := l.Reader(1)
	defer r.Close()
	want := [][]byte{abort, v2}
	for r.Next() {
		if r.LSN() <= 2 && !bytes.Equal(r.Record(), want[r.LSN()-1]) {
			t.Fatalf("LSN %d was not stored as given", r.LSN())
		}
		if r.LSN() >= 2 {
			checkEvents(t, r)
		}
	}
	if r.Err() != nil || r.LSN() != 3 {
		t.Fatalf("read to LSN %d, err %v", r.LSN(), r.Err())
	}
}

// TestCompressedDamage: damage in compressed records follows the ledger's
// rules. Bytes changed on disk fail a CRC and are a damaged range as in
// uncompressed records; a record whose CRC checks but whose block does
// not decode (a faulty writer) is damage of that one record. A Reader
// that passes damage reports the range, which quarantines, and delivers
// every other record; one that does not stops with a *CorruptionError.
func TestCompressedDamage(t *testing.T) {
	const n, bad = 30, 12
	cases := []struct {
		name string
		// damage changes segment bytes b; start is where record bad's
		// frame starts, size its length.
		damage func(b []byte, start, size int)
	}{
		{"a flipped bit in the block", func(b []byte, start, size int) {
			b[start+frameHeader+record.HeaderSizeCompressed+size/2] ^= 0x10
		}},
		{"a block that does not decode, CRC resealed", func(b []byte, start, size int) {
			rec := b[start+frameHeader : start+size]
			for i := record.HeaderSizeCompressed; i < len(rec)-record.TrailerSize; i++ {
				rec[i] = 0x5A
			}
			reseal(rec)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := testOpts(t, true)
			opts.Compression = record.Zstd(record.LevelFastest)
			// A write per record takes a block: 16 records per
			// segment, so record bad is in a sealed segment.
			opts.SegmentBytes = 16 * BlockSize
			l := mustOpen(t, dir, opts)
			for lsn := uint64(1); lsn <= n; lsn++ {
				if err := l.Append(lsn, zrec(t, lsn)); err != nil {
					t.Fatal(err)
				}
				if err := l.Sync(); err != nil { // a write per record: damage stays in one
					t.Fatal(err)
				}
			}
			var start, size int
			r := l.Reader(bad)
			if !r.Next() || r.LSN() != bad || r.Record()[0] != record.VersionCompressed {
				t.Fatalf("fixture: LSN %d not a compressed record (err %v)", r.LSN(), r.Err())
			}
			start, size = int(r.sc.recOff), int(frameSize(len(r.Record())))
			r.Close()
			seg := filepath.Join(dir, segmentName(1))
			l.Close()
			b, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(b, start, size)
			if err := os.WriteFile(seg, b, 0o640); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, opts)
			if segs, _ := listSegments(dir); len(segs) < 2 {
				t.Fatalf("fixture: %d segments, want record %d in a sealed one", len(segs), bad)
			}
			defer l.Close()

			strict := l.Reader(1)
			for strict.Next() {
				checkEvents(t, strict)
			}
			var ce *CorruptionError
			if !errors.As(strict.Err(), &ce) || ce.Segment != seg || ce.LSN != bad {
				t.Fatalf("a reader that stops at damage: %v, want a *CorruptionError at LSN %d of %s", strict.Err(), bad, seg)
			}
			strict.Close()

			r = l.Reader(1)
			defer r.Close()
			r.SkipDamage()
			var got []uint64
			var damage *Damage
			for r.Next() {
				if d := r.Damage(); d != nil {
					if damage != nil {
						t.Fatalf("second damage %v after %v", d, damage)
					}
					damage = d
					continue
				}
				checkEvents(t, r)
				got = append(got, r.LSN())
			}
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			if damage == nil || damage.FirstLSN != bad || damage.LastLSN != bad || damage.Segment != seg {
				t.Fatalf("damage %v, want record %d of %s alone", damage, bad, seg)
			}
			if len(got) != n-1 || slices.Contains(got, bad) {
				t.Fatalf("read %d records (%v), want all %d but %d", len(got), got, n-1, bad)
			}
			path, err := l.Quarantine(*damage)
			if err != nil {
				t.Fatal(err)
			}
			q, err := os.ReadFile(filepath.Join(filepath.Dir(path), quarantineName(*damage)+".bin"))
			if err != nil || !bytes.Equal(q, b[damage.Start:damage.End]) {
				t.Fatalf("quarantined %d bytes (%v), want the record's %d", len(q), err, damage.End-damage.Start)
			}
		})
	}
}

// reseal recomputes a record's CRC after a test changed it, to stand for
// a writer that stored a bad block.
func reseal(rec []byte) {
	le.PutUint32(rec[len(rec)-record.TrailerSize:], crc32.Checksum(rec[:len(rec)-record.TrailerSize], castagnoli))
}

// TestCompressedByTheWriter: a ledger that does not compress stores
// records compressed before it (by the input) as they are, and counts
// them at their uncompressed size.
func TestCompressedByTheWriter(t *testing.T) {
	l := mustOpen(t, t.TempDir(), testOpts(t, false))
	defer l.Close()
	c, err := record.NewCompressor(record.Zstd(record.LevelFastest))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v1 := zrec(t, 1)
	v2, err := c.Compress(nil, v1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(1, v2); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if st := l.Compression(); st.Compression.Enabled() || st.RawBytes != int64(len(v1)) || st.StoredBytes != int64(len(v2)) {
		t.Fatalf("stats %+v, want %d raw and %d stored bytes", st, len(v1), len(v2))
	}
	r := l.Reader(1)
	defer r.Close()
	if !r.Next() || !bytes.Equal(r.Record(), v2) {
		t.Fatalf("the record was not stored as given (err %v)", r.Err())
	}
	checkEvents(t, r)
}

// TestReaderDecodeTo: a Reader decompresses the events of the compressed
// record Next returns into the buffer DecodeTo gave when they fit, for
// that one call; an uncompressed record, a buffer too small and a call of
// Next without DecodeTo use the Reader's own buffer. The events are the
// record's either way.
func TestReaderDecodeTo(t *testing.T) {
	dir := t.TempDir()
	opts := testOpts(t, true)
	opts.Compression = record.S2(record.LevelFastest)
	l := mustOpen(t, dir, opts)
	defer l.Close()
	for lsn := uint64(1); lsn <= 3; lsn++ {
		if err := l.Append(lsn, zrec(t, lsn)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	r := l.Reader(1)
	defer r.Close()
	buf := append(make([]byte, 0, 64<<10), "kept"...)
	r.DecodeTo(buf)
	if !r.Next() || !r.DecodedTo() {
		t.Fatalf("LSN 1: decoded into the buffer %v, err %v", r.DecodedTo(), r.Err())
	}
	checkEvents(t, r)
	ev := slices.Collect(r.Decoded().Events())[0]
	if &buf[:cap(buf)][len(buf)+4] != &ev[0] || string(buf) != "kept" {
		t.Fatalf("LSN 1: events not in the buffer's spare capacity (after a length prefix), or its contents changed")
	}
	// Once only: the next record goes to the Reader's buffer.
	if !r.Next() || r.DecodedTo() {
		t.Fatalf("LSN 2: decoded into the buffer %v without DecodeTo, err %v", r.DecodedTo(), r.Err())
	}
	checkEvents(t, r)
	r.DecodeTo(make([]byte, 0, 16))
	if !r.Next() || r.DecodedTo() {
		t.Fatalf("LSN 3: decoded into a buffer too small: %v, err %v", r.DecodedTo(), r.Err())
	}
	checkEvents(t, r)
}
