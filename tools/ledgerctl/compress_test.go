package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// mixedLast is the last LSN of the ledgers buildMixed writes; LSNs up to
// mixedPlain are stored uncompressed, the rest compressed where that makes
// them smaller.
const (
	mixedPlain = 150
	mixedLast  = 300
)

// buildMixed writes LSNs 1..mixedLast, with the same events as
// buildStores, to two ledgers (16 KiB segments): plain, every record
// uncompressed; and mixed, LSNs up to mixedPlain uncompressed (whole
// segments of version 1 records), the rest compressed (version 2) by the
// ledger (Options.Compression) or, with precompressed, by the test
// (record.Compressor) before a ledger without compression stores them as
// given.
func buildMixed(t *testing.T, precompressed bool) (plain, mixed string) {
	t.Helper()
	root := t.TempDir()
	plain, mixed = filepath.Join(root, "plain"), filepath.Join(root, "mixed")
	write := func(dir string, from, to uint64, level record.Compression, conv func(t *testing.T, rec []byte) []byte) {
		l, err := ledger.Open(dir, ledger.Options{SegmentBytes: 16 << 10, DirectIO: true, Compression: level})
		if err != nil {
			t.Fatal(err)
		}
		for lsn := from; lsn <= to; lsn++ {
			rec := testRecord(t, lsn)
			if conv != nil {
				rec = conv(t, rec)
			}
			if err := l.Append(lsn, rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write(plain, 1, mixedLast, record.Compression{}, nil)
	write(mixed, 1, mixedPlain, record.Compression{}, nil)
	if precompressed {
		write(mixed, mixedPlain+1, mixedLast, record.Compression{}, compressor(t))
	} else {
		write(mixed, mixedPlain+1, mixedLast, record.S2(record.LevelFastest), nil)
	}
	return plain, mixed
}

// compressedLSNs are the LSNs of the ledger in dir stored as version 2.
func compressedLSNs(t *testing.T, dir string) []uint64 {
	t.Helper()
	r, err := ledger.NewDirReader(dir, 1, ledger.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []uint64
	for r.Next() {
		h, err := record.Verify(r.Record())
		if err != nil {
			t.Fatal(err)
		}
		if h.Compressed() {
			out = append(out, r.LSN())
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return out
}

// garbleBlock overwrites the start of the compressed block of the record
// at w (the zstd frame's magic number, so that it cannot decode) and
// seals the record's CRC again: the bytes check, the events do not.
func garbleBlock(t *testing.T, w where) {
	t.Helper()
	b, err := os.ReadFile(w.file)
	if err != nil {
		t.Fatal(err)
	}
	const frameHeader = 16 // ledger/doc.go
	rec := b[w.off+frameHeader:]
	rec = rec[:binary.LittleEndian.Uint32(rec[4:8])]
	if rec[0] != record.VersionCompressed {
		t.Fatalf("record at %s:%d is version %d", w.file, w.off, rec[0])
	}
	copy(rec[record.HeaderSizeCompressed:], []byte{0, 0, 0, 0})
	binary.LittleEndian.PutUint32(rec[len(rec)-4:], crc32.Checksum(rec[:len(rec)-4], crc32.MakeTable(crc32.Castagnoli)))
	if _, err := record.Verify(rec); err != nil {
		t.Fatalf("the garbled record no longer verifies: %v", err)
	}
	if err := os.WriteFile(w.file, b, 0o640); err != nil {
		t.Fatal(err)
	}
}

// TestCompressedDump: the events of a ledger holding compressed records
// dump exactly as those of the same records uncompressed, and so do the
// records but for their stored size.
func TestCompressedDump(t *testing.T) {
	t.Run("compressed by the ledger", func(t *testing.T) { testCompressedDump(t, false) })
	t.Run("compressed before Append", func(t *testing.T) { testCompressedDump(t, true) })
}

func testCompressedDump(t *testing.T, precompressed bool) {
	plain, mixed := buildMixed(t, precompressed)
	if n := len(compressedLSNs(t, mixed)); n < 100 {
		t.Fatalf("only %d records compressed", n)
	}
	want, _, code := ctl(t, "-ledger", plain, "dump", "--count", "1000", "--events")
	if code != exitOK || strings.Count(want, "\n") != 2*mixedLast {
		t.Fatalf("plain: exit %d, %d lines", code, strings.Count(want, "\n"))
	}
	got, _, code := ctl(t, "-ledger", mixed, "dump", "--count", "1000", "--events")
	if code != exitOK || got != want {
		t.Fatalf("exit %d, the events differ from the uncompressed ledger's", code)
	}

	wantRecs, _, _ := ctl(t, "-ledger", plain, "dump", "--count", "1000", "--json")
	gotRecs, _, code := ctl(t, "-ledger", mixed, "dump", "--count", "1000", "--json")
	w, g := strings.Split(strings.TrimSpace(wantRecs), "\n"), strings.Split(strings.TrimSpace(gotRecs), "\n")
	if code != exitOK || len(g) != len(w) {
		t.Fatalf("exit %d, %d records, want %d", code, len(g), len(w))
	}
	smaller := 0
	for i := range w {
		var a, b recordLine
		if err := json.Unmarshal([]byte(w[i]), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(g[i]), &b); err != nil {
			t.Fatal(err)
		}
		if b.Bytes < a.Bytes {
			smaller++
		}
		a.Bytes, b.Bytes = 0, 0
		if a.LSN != b.LSN || a.Store != b.Store || a.Events != b.Events || !a.Received.Equal(*b.Received) || a.Flags != b.Flags || a.Slot != b.Slot {
			t.Fatalf("record %d: %s, want %s", i, g[i], w[i])
		}
	}
	if smaller < 100 {
		t.Fatalf("only %d records are stored smaller", smaller)
	}
}

// TestCompressedVerify: verify decompresses every record of a mixed
// ledger, reports its ratio, and reports a compressed record whose CRC
// checks but whose block does not decode as damage, where it is; dump
// --events passes it the same way.
func TestCompressedVerify(t *testing.T) {
	plain, mixed := buildMixed(t, false)
	check := func(dir string) (verifyReport, int) {
		out, _, code := ctl(t, "-ledger", dir, "verify", "--json")
		var rep verifyReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return rep, code
	}
	rep, code := check(plain)
	if l := rep.Ledger; code != exitOK || l.Records != mixedLast || l.Ratio != 1 || l.RawBytes != l.RecordBytes {
		t.Fatalf("plain: exit %d, %+v", code, l)
	}
	rep, code = check(mixed)
	if l := rep.Ledger; code != exitOK || !rep.OK || l.Records != mixedLast || l.Ratio <= 0 || l.Ratio >= 1 || l.RawBytes <= l.RecordBytes {
		t.Fatalf("mixed: exit %d, %+v", code, l)
	}
	out, _, code := ctl(t, "-ledger", mixed, "verify")
	if code != exitOK || !strings.Contains(out, "300 records verified (LSN 1–300), ratio 0.") || !strings.Contains(out, "verify: OK") {
		t.Fatalf("exit %d:\n%s", code, out)
	}

	zs := compressedLSNs(t, mixed)
	if len(zs) < 21 {
		t.Fatalf("only %d records compressed", len(zs))
	}
	bad := zs[20]
	w := ledgerOffsets(t, mixed)[bad]
	garbleBlock(t, w)
	rep, code = check(mixed)
	if code != exitFailed || rep.OK || len(rep.Damage) != 1 || rep.Ledger.Records != mixedLast-1 || rep.Ledger.DamagedRecords != 1 {
		t.Fatalf("exit %d, %+v, damage %+v", code, rep.Ledger, rep.Damage)
	}
	d := rep.Damage[0]
	if d.Store != "ledger" || d.File != w.file || d.Offset == nil || *d.Offset != w.off || d.LSN != bad || d.Records == nil || *d.Records != 1 {
		t.Fatalf("damage %+v, want %s offset %d LSN %d", d, w.file, w.off, bad)
	}
	out, _, _ = ctl(t, "-ledger", mixed, "verify")
	if !strings.Contains(out, "DAMAGE ledger: file "+w.file) || !strings.Contains(out, "verify: FAILED: 1 damaged location(s)") {
		t.Fatalf("report:\n%s", out)
	}

	// dump --events says where it is, and dumps every other event.
	out, errOut, code := ctl(t, "-ledger", mixed, "dump", "--count", "1000", "--events")
	if code != exitFailed || strings.Count(out, "\n") != 2*(mixedLast-1) || !strings.Contains(errOut, "dump: ledger damaged: ledger: file "+w.file) {
		t.Fatalf("exit %d, %d lines, stderr %s", code, strings.Count(out, "\n"), errOut)
	}
	// The records themselves (headers) still dump.
	if _, _, code := ctl(t, "-ledger", mixed, "dump", "--count", "1000"); code != exitOK {
		t.Fatalf("dump of the records: exit %d", code)
	}
}

// TestCompressedStatAndSegments: stat gives the ledger's stored and
// uncompressed bytes and their ratio, below 1 for compressed events and 1
// for an uncompressed ledger; segments gives them per segment.
func TestCompressedStatAndSegments(t *testing.T) {
	plain, mixed := buildMixed(t, false)
	stat := func(dir string) *storeStat {
		var out, errb strings.Builder
		e := &env{ledgerDir: dir, directIO: true, stdout: &out, stderr: &errb, now: func() time.Time { return t0 }}
		if code := cmdStat(e, []string{"--json"}); code != exitOK {
			t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
		}
		var rep statReport
		if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Ledger
	}
	p, m := stat(plain), stat(mixed)
	switch {
	case p.Ratio != 1 || p.RawBytes != p.RecordBytes || p.CompressedRecords != 0:
		t.Fatalf("plain: %+v", p)
	case m.Records != mixedLast || m.Events != 2*mixedLast || m.RawBytes != p.RecordBytes || m.RecordBytes >= p.RecordBytes:
		t.Fatalf("mixed: %+v, plain %+v", m, p)
	case m.Ratio >= 1 || m.Ratio != ratio(m.RecordBytes, m.RawBytes) || m.CompressedRecords != uint64(len(compressedLSNs(t, mixed))):
		t.Fatalf("mixed: %+v", m)
	}
	txt, _, code := ctl(t, "-ledger", mixed, "stat")
	for _, want := range []string{"raw bytes ", "ratio           0.", " records compressed)"} {
		if code != exitOK || !strings.Contains(txt, want) {
			t.Fatalf("exit %d, no %q in:\n%s", code, want, txt)
		}
	}

	out, _, code := ctl(t, "-ledger", mixed, "segments", "--json")
	var doc struct {
		Segments []segmentRow `json:"segments"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK || len(doc.Segments) < 3 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	var stored, raw int64
	plainSegs, zSegs := 0, 0
	for i, r := range doc.Segments {
		stored, raw = stored+r.RecordBytes, raw+r.RawBytes
		if r.LastLSN <= mixedPlain {
			plainSegs++
		}
		if r.FirstLSN > mixedPlain {
			zSegs++
		}
		switch {
		case r.Damage != nil || r.RecordBytes <= 0 || r.RecordBytes >= r.Bytes || r.Ratio != ratio(r.RecordBytes, r.RawBytes):
			t.Fatalf("segment %d: %+v", i, r)
		case r.LastLSN <= mixedPlain && (r.Ratio != 1 || r.RawBytes != r.RecordBytes):
			t.Fatalf("uncompressed segment %d: %+v", i, r)
		case r.FirstLSN > mixedPlain && r.Ratio >= 1:
			t.Fatalf("compressed segment %d: %+v", i, r)
		}
	}
	if plainSegs == 0 || zSegs == 0 {
		t.Fatalf("%d segments of uncompressed records only, %d of compressed ones only", plainSegs, zSegs)
	}
	if stored != m.RecordBytes || raw != m.RawBytes {
		t.Fatalf("segments sum to %d stored, %d raw; stat says %d, %d", stored, raw, m.RecordBytes, m.RawBytes)
	}
	txt, _, code = ctl(t, "-ledger", mixed, "segments")
	if code != exitOK || !strings.Contains(txt, "RAW BYTES") || !strings.Contains(txt, "RATIO") || !strings.Contains(txt, "1.000") || !strings.Contains(txt, "  0.") {
		t.Fatalf("exit %d, table:\n%s", code, txt)
	}
}

// TestCompressedCursors: the cursor commands read a compressed record's
// receive time from its header.
func TestCompressedCursors(t *testing.T) {
	_, mixed := buildMixed(t, false)
	zs := compressedLSNs(t, mixed)
	if len(zs) < 11 {
		t.Fatalf("only %d records compressed", len(zs))
	}
	lsn, target := zs[10], zs[5]
	l, err := ledger.Open(mixed, ledger.Options{SegmentBytes: 16 << 10, DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetCursor("elasticsearch", lsn-1); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	e := &env{ledgerDir: mixed, directIO: true, stdout: &out, stderr: &errb, now: func() time.Time { return t0.Add(time.Hour) }}
	if code := cmdCursors(e, []string{"--json"}); code != exitOK {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	var doc struct {
		Cursors []cursorRow `json:"cursors"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cursors) != 1 || doc.Cursors[0].Oldest == nil || !doc.Cursors[0].Oldest.Equal(received(lsn)) {
		t.Fatalf("%+v, want oldest %v", doc.Cursors, received(lsn))
	}
	// rewind --from-time finds the compressed record received then.
	if _, _, code := ctl(t, "-ledger", mixed, "cursors", "rewind", "elasticsearch", "--from-time", received(target).Format(time.RFC3339)); code != exitOK {
		t.Fatalf("rewind: exit %d", code)
	}
	if got, err := ledger.ReadCursors(mixed); err != nil || len(got) != 1 || got[0].LSN != target-1 {
		t.Fatalf("cursor after rewind %+v, %v; want %d", got, err, target-1)
	}
}

// TestCompressedJournal: a journal holding compressed records dumps the
// same events as one holding them uncompressed, verifies clean, and a
// compressed record whose CRC checks but whose block does not decode is
// damage where it is.
func TestCompressedJournal(t *testing.T) {
	root := t.TempDir()
	plain, zipped := filepath.Join(root, "plain"), filepath.Join(root, "zipped")
	z := compressor(t)
	for _, dir := range []string{plain, zipped} {
		j := openJournal(t, dir)
		for lsn := uint64(1); lsn <= 40; lsn++ {
			rec := testRecord(t, lsn)
			if dir == zipped {
				rec = z(t, rec)
			}
			if _, err := j.Append(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
	want, _, _ := ctl(t, "-journal", plain, "dump", "--count", "100", "--events")
	got, _, code := ctl(t, "-journal", zipped, "dump", "--count", "100", "--events")
	if code != exitOK || got != want || strings.Count(got, "\n") != 80 {
		t.Fatalf("exit %d, the events differ from the uncompressed journal's:\n%s", code, got)
	}
	out, _, code := ctl(t, "-journal", zipped, "verify")
	if code != exitOK || !strings.Contains(out, "40 records verified (LSN 1–40), ratio 0.") {
		t.Fatalf("exit %d:\n%s", code, out)
	}

	var bad uint64
	r, err := journal.NewDirReader(zipped, 1)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		if r.LSN() >= 20 && r.Record()[0] == record.VersionCompressed {
			bad = r.LSN()
			break
		}
	}
	if bad == 0 {
		t.Fatal("no compressed record from LSN 20 on")
	}
	w := journalOffsets(t, zipped)[bad]
	garbleJournalBlock(t, w)
	out, _, code = ctl(t, "-journal", zipped, "verify", "--json")
	var rep verifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if code != exitFailed || rep.OK || rep.Journal.OK || rep.Journal.Records != 39 || len(rep.Damage) != 1 {
		t.Fatalf("exit %d, %+v, damage %+v", code, rep.Journal, rep.Damage)
	}
	if d := rep.Damage[0]; d.Store != "journal" || d.File != w.file || d.Offset == nil || *d.Offset != w.off || d.LSN != bad || !strings.Contains(d.Error, "block") {
		t.Fatalf("damage %+v, want %s offset %d LSN %d", d, w.file, w.off, bad)
	}
	out, errOut, code := ctl(t, "-journal", zipped, "dump", "--count", "100", "--events")
	if code != exitFailed || strings.Count(out, "\n") != 78 || !strings.Contains(errOut, "dump: journal damaged: journal: file "+w.file) {
		t.Fatalf("exit %d, %d lines, stderr %s", code, strings.Count(out, "\n"), errOut)
	}
}

// garbleJournalBlock is garbleBlock for the journal entry at w (a uvarint
// length, then the frame of journal/doc.go): the record's CRC and the
// frame's are sealed again.
func garbleJournalBlock(t *testing.T, w where) {
	t.Helper()
	b, err := os.ReadFile(w.file)
	if err != nil {
		t.Fatal(err)
	}
	_, n := binary.Uvarint(b[w.off:])
	frame := b[w.off+int64(n):]
	rec := frame[20:]
	rec = rec[:binary.LittleEndian.Uint32(rec[4:8])]
	if rec[0] != record.VersionCompressed {
		t.Fatalf("record at %s:%d is version %d", w.file, w.off, rec[0])
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	copy(rec[record.HeaderSizeCompressed:], []byte{0, 0, 0, 0})
	binary.LittleEndian.PutUint32(rec[len(rec)-4:], crc32.Checksum(rec[:len(rec)-4], tab))
	binary.LittleEndian.PutUint32(frame[0:4], crc32.Update(crc32.Checksum(frame[4:20], tab), tab, rec[len(rec)-4:]))
	if err := os.WriteFile(w.file, b, 0o640); err != nil {
		t.Fatal(err)
	}
}
