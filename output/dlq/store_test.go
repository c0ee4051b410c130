package dlq

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/dirlock"
)

func TestRoundTrip(t *testing.T) {
	full := entry("6f1c1b8e-3c1a-4c1e-9a7e-2f9d5c1e0b11", 42)
	tests := []struct {
		name string
		e    Entry
	}{
		{"every field", full},
		{"zero entry", Entry{}},
		{"invalid JSON event", func() Entry { e := full; e.Event = []byte("{\"a\":\xff\xfe, not json\n"); return e }()},
		{"empty event", func() Entry { e := full; e.Event = []byte{}; return e }()},
		{"nil event", func() Entry { e := full; e.Event = nil; return e }()},
		{"unicode reason", func() Entry {
			e := full
			e.Reason, e.ErrType = "échec d'analyse du champ « message » — 解析失败 🚫", "event_too_large"
			return e
		}()},
		{"binary strings", func() Entry { e := full; e.DocID, e.Index = "\x00\xff\x00", "\n"; return e }()},
		{"extremes", func() Entry {
			e := full
			e.LSN, e.Position, e.Status = ^uint64(0), ^uint32(0), -1
			e.Received = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
			e.Failed = time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)
			return e
		}()},
		{"local time zone", func() Entry { e := full; e.Received = t0.In(time.FixedZone("X", 5*3600+1800)); return e }()},
		{"large event", func() Entry { e := full; e.Event = []byte(strings.Repeat("é", 20000)); return e }()},
	}
	dir := t.TempDir()
	opts, _ := testOpts(t, 0, 0)
	s := mustOpen(t, dir, opts)
	var want []Entry
	for _, tc := range tests {
		mustAppend(t, s, tc.e)
		want = append(want, tc.e)
	}
	// Scan while the Store is open, then after Close.
	ps := expectEntries(t, dir, want)
	mustClose(t, s)
	_, got, err := scanAll(t, dir)
	if err != nil || len(got) != len(tests) {
		t.Fatalf("after close: %d entries, %v", len(got), err)
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !sameEntry(got[i], tc.e) {
				t.Fatalf("got %+v\nwant %+v", got[i], tc.e)
			}
			if got[i].Received.Location() != time.UTC || got[i].Failed.Location() != time.UTC {
				t.Fatal("times not in UTC")
			}
			if ps[i].File != fileName(1) || (i > 0 && ps[i].Offset <= ps[i-1].Offset) {
				t.Fatalf("position %+v", ps[i])
			}
		})
	}
	if got[0].Event == nil || len(got[0].Event) == 0 {
		t.Fatal("event lost")
	}
}

func TestReopenAppendsAfterExisting(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOpts(t, 2048, 1<<20)
	for round := range 3 {
		s := mustOpen(t, dir, opts)
		if r := s.Recovery(); r != nil {
			t.Fatalf("round %d: unexpected repair %+v", round, r)
		}
		mustAppend(t, s, entries("s", round*20+1, round*20+20)...)
		mustClose(t, s)
	}
	expectEntries(t, dir, entries("s", 1, 60))
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	const segment = 1024
	opts, _ := testOpts(t, segment, 1<<20)
	s := mustOpen(t, dir, opts)
	// One by one, and in slices that do not fit in what is left of a file.
	for i := 1; i <= 100; i += 5 {
		mustAppend(t, s, entries("s", i, i+4)...)
	}
	mustClose(t, s)
	ps := expectEntries(t, dir, entries("s", 1, 100))
	files := dlqFiles(t, dir)
	if len(files) < 10 {
		t.Fatalf("%d files, want rotation", len(files))
	}
	var total int64
	for i, name := range files {
		if name != fileName(uint64(i+1)) {
			t.Fatalf("file %d is %s", i, name)
		}
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > segment {
			t.Fatalf("%s has %d bytes, segment bytes %d", name, st.Size(), segment)
		}
		total += st.Size()
	}
	for i := 1; i < len(ps); i++ {
		if ps[i].File < ps[i-1].File || (ps[i].File == ps[i-1].File && ps[i].Offset <= ps[i-1].Offset) {
			t.Fatalf("positions out of order: %+v then %+v", ps[i-1], ps[i])
		}
	}
	s = mustOpen(t, dir, opts)
	defer mustClose(t, s)
	if s.UsedBytes() != total {
		t.Fatalf("used bytes %d, files hold %d", s.UsedBytes(), total)
	}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
		seg     int64
		max     int64
	}{
		{"defaults", Options{}, "", DefaultSegmentBytes, DefaultMaxBytes},
		{"segment from a small max", Options{MaxBytes: 10 << 20}, "", 5 << 20, 10 << 20},
		{"negative", Options{MaxBytes: -1}, "negative", 0, 0},
		{"segment above half of max", Options{MaxBytes: 100 << 20, SegmentBytes: 64 << 20}, "at most half", 0, 0},
		{"tiny segment", Options{SegmentBytes: 100}, "between", 0, 0},
		{"huge segment", Options{SegmentBytes: 2 << 30, MaxBytes: 8 << 30}, "between", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(filepath.Join(t.TempDir(), "dlq"), tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer mustClose(t, s)
			if s.opts.SegmentBytes != tc.seg || s.opts.MaxBytes != tc.max {
				t.Fatalf("segment %d max %d, want %d %d", s.opts.SegmentBytes, s.opts.MaxBytes, tc.seg, tc.max)
			}
		})
	}
}

func TestOpenDirectory(t *testing.T) {
	parent := t.TempDir()
	if _, err := Open(filepath.Join(parent, "missing", "dlq"), Options{}); err == nil || !strings.Contains(err.Error(), "parent must exist") {
		t.Fatalf("missing parent: %v", err)
	}
	dir := filepath.Join(parent, "dlq")
	s := mustOpen(t, dir, Options{})
	if _, err := Open(dir, Options{}); !errors.As(err, new(*dirlock.LockedError)) {
		t.Fatalf("second Open on a locked directory: %v", err)
	}
	mustClose(t, s)
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Append(context.Background(), entries("s", 1, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := s.Purge(Pos{File: fileName(1), Offset: fileHeaderSize}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Purge after Close: %v", err)
	}
	s = mustOpen(t, dir, Options{}) // the lock was released
	mustClose(t, s)

	os.WriteFile(filepath.Join(dir, "1.dlq"), nil, 0o640)
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), `unexpected file "1.dlq"`) {
		t.Fatalf("badly named file: %v", err)
	}
	if _, _, err := scanAll(t, dir); err == nil {
		t.Fatal("Scan accepted a badly named file")
	}
}

func TestInvalidEntries(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOpts(t, 4096, 1<<20)
	s := mustOpen(t, dir, opts)
	defer mustClose(t, s)
	big := entry("s", 2)
	big.Event = make([]byte, 4096)
	fits := entry("s", 3)
	fits.Event = make([]byte, 4096-fileHeaderSize-frameSize(&Entry{Stream: "s", Index: fits.Index, Action: fits.Action, DocID: fits.DocID, ErrType: fits.ErrType, Reason: fits.Reason}))
	if frameSize(&fits) != 4096-fileHeaderSize {
		t.Fatalf("test entry is %d bytes", frameSize(&fits))
	}
	old := entry("s", 4)
	old.Failed = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)

	if err := s.Append(context.Background(), []Entry{entry("s", 1), big}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	if err := s.Append(context.Background(), []Entry{entry("s", 1), old}); err == nil || !strings.Contains(err.Error(), "years 1 to 9999") {
		t.Fatalf("time out of range: %v", err)
	}
	mustAppend(t, s, fits)
	expectEntries(t, dir, []Entry{fits}) // nothing of the failed slices was written
}

// faults injects failures into one Store's files.
type faults struct {
	mu      sync.Mutex
	write   error // WriteAt writes half, then fails with it
	sync    error // Datasync fails with it
	syncDir error
}

func (f *faults) get() (write, sync, syncDir error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.write, f.sync, f.syncDir
}

func (f *faults) set(write, sync, syncDir error) {
	f.mu.Lock()
	f.write, f.sync, f.syncDir = write, sync, syncDir
	f.mu.Unlock()
}

type faultyFile struct {
	file
	faults *faults
}

func (f faultyFile) WriteAt(b []byte, off int64) (int, error) {
	if err, _, _ := f.faults.get(); err != nil {
		n, _ := f.file.WriteAt(b[:len(b)/2], off)
		return n, err
	}
	return f.file.WriteAt(b, off)
}

func (f faultyFile) Datasync() error {
	if _, err, _ := f.faults.get(); err != nil {
		return err
	}
	return f.file.Datasync()
}

func (f *faults) hook(o *Options) {
	o.hooks.openFile = func(path string, flag int) (file, error) {
		fl, err := openOSFile(path, flag)
		if err != nil {
			return nil, err
		}
		return faultyFile{fl, f}, nil
	}
	o.hooks.syncDir = func(dir string) error {
		if _, _, err := f.get(); err != nil {
			return err
		}
		return nil
	}
}

func TestPoisonedAfterFailure(t *testing.T) {
	tests := []struct {
		name           string
		write, sync    error
		syncDir        error
		rotate         bool // the failing Append starts a new file
		afterReopenLen int  // entries Scan finds after a reopen
	}{
		{name: "write fails (ENOSPC)", write: syscall.ENOSPC, afterReopenLen: 3},
		{name: "fdatasync fails (EIO)", sync: syscall.EIO, afterReopenLen: 4}, // the page cache kept it: stored at least once
		{name: "directory fsync fails on a new file", syncDir: syscall.EIO, rotate: true, afterReopenLen: 3},
		{name: "header fdatasync fails on a new file", sync: syscall.EIO, rotate: true, afterReopenLen: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts, sink := testOpts(t, 1024, 1<<20)
			fs := &faults{}
			fs.hook(&opts)
			s := mustOpen(t, dir, opts)
			mustAppend(t, s, entries("s", 1, 3)...)
			next := entry("s", 4)
			if tc.rotate {
				next.Event = make([]byte, 700) // does not fit behind three entries
			}
			fs.set(tc.write, tc.sync, tc.syncDir)
			first := tc.write
			if first == nil {
				first = tc.sync
			}
			if first == nil {
				first = tc.syncDir
			}
			err := s.Append(context.Background(), []Entry{next})
			if !errors.Is(err, ErrPoisoned) || !errors.Is(err, first) {
				t.Fatalf("failing Append: %v", err)
			}
			if n := len(dlqFiles(t, dir)); (n == 2) != tc.rotate {
				t.Fatalf("%d files after the failing Append", n)
			}
			fs.set(nil, nil, nil)
			err = s.Append(context.Background(), entries("s", 5, 5))
			if !errors.Is(err, ErrPoisoned) || !errors.Is(err, first) {
				t.Fatalf("Append after the failure: %v, want the first failure again", err)
			}
			if _, err := s.Purge(Pos{File: fileName(1), Offset: fileHeaderSize}); !errors.Is(err, ErrPoisoned) {
				t.Fatalf("Purge after the failure: %v", err)
			}
			if err := s.Close(); !errors.Is(err, first) {
				t.Fatalf("Close: %v, want the sticky failure", err)
			}
			if sink.count("poisoned") != 1 {
				t.Fatalf("%d poison log records", sink.count("poisoned"))
			}
			s = mustOpen(t, dir, Options{Logger: opts.Logger})
			want := append(entries("s", 1, 3), next)[:tc.afterReopenLen]
			expectEntries(t, dir, want)
			mustAppend(t, s, entry("s", 6))
			mustClose(t, s)
			expectEntries(t, dir, append(want, entry("s", 6)))
		})
	}
}
