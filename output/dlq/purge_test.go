package dlq

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// fullStore returns an open store filled until the next entry e does not
// fit, and a channel that receives when an Append starts waiting.
func fullStore(t *testing.T) (s *Store, sink *logSink, e Entry, waited chan struct{}) {
	t.Helper()
	opts, sink := testOpts(t, 1024, 4096)
	waited = make(chan struct{}, 1)
	opts.hooks.onWait = func() {
		select {
		case waited <- struct{}{}:
		default:
		}
	}
	s = mustOpen(t, t.TempDir(), opts)
	i := 1
	for ; s.UsedBytes()+frameSize(ptr(entry("s", i)))+fileHeaderSize <= opts.MaxBytes; i++ {
		mustAppend(t, s, entry("s", i))
	}
	if len(s.files) < 3 {
		t.Fatalf("full store has %d files", len(s.files))
	}
	return s, sink, entry("s", i), waited
}

func ptr(e Entry) *Entry { return &e }

// until polls cond; the test's own timeout bounds it.
func until(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

func TestFullStoreWaitsUntilPurge(t *testing.T) {
	s, sink, e, waited := fullStore(t)
	defer mustClose(t, s)
	done := make(chan error)
	go func() { done <- s.Append(context.Background(), []Entry{e}) }()
	<-waited
	if w := s.Waiting(); !strings.Contains(w, "full") {
		t.Fatalf("Waiting() = %q", w)
	}
	select {
	case err := <-done:
		t.Fatalf("Append returned %v while the store is full", err)
	default:
	}
	ps, es, err := scanAll(t, s.dir)
	if err != nil {
		t.Fatal(err)
	}
	last := 0 // the last entry of the oldest file
	for last+1 < len(ps) && ps[last+1].File == ps[0].File {
		last++
	}
	if n := s.Entries(); n != int64(len(es)) {
		t.Fatalf("Entries() = %d for a store holding %d", n, len(es))
	}
	if _, err := s.Purge(ps[last]); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, want := s.Entries(), int64(len(es)-last-1+1); n != want {
		t.Fatalf("Entries() = %d after the purge and one more append, want %d", n, want)
	}
	if w := s.Waiting(); w != "" {
		t.Fatalf("Waiting() = %q after the wait", w)
	}
	if s.UsedBytes() > s.opts.MaxBytes {
		t.Fatalf("used %d of %d", s.UsedBytes(), s.opts.MaxBytes)
	}
	expectEntries(t, s.dir, append(es[last+1:], e))
	if a, b := sink.count("store full"), sink.count("space again"); a != 1 || b != 1 {
		t.Fatalf("logged the wait %d times and its end %d times, want once each", a, b)
	}
}

func TestWaitEndsWithContextOrClose(t *testing.T) {
	s, sink, e, waited := fullStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error)
	go func() { first <- s.Append(ctx, []Entry{e}) }()
	<-waited
	second := make(chan error)
	go func() { second <- s.Append(context.Background(), []Entry{e}) }()
	until(func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.waiters == 2 })

	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled Append: %v", err)
	}
	<-waited // the second one now waits for space
	if s.Waiting() == "" {
		t.Fatal("Waiting() empty while an Append waits")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, ErrClosed) {
		t.Fatalf("Append waiting at Close: %v", err)
	}
	if w := s.Waiting(); w != "" {
		t.Fatalf("Waiting() = %q after every Append gave up", w)
	}
	if a, b := sink.count("store full"), sink.count("no longer waits"); a != 1 || b != 1 {
		t.Fatalf("logged the wait %d times and its end %d times, want once each", a, b)
	}
	if _, es, err := scanAll(t, s.dir); err != nil || len(es) == 0 || es[len(es)-1].LSN == e.LSN {
		t.Fatalf("after the abandoned Appends: %d entries, %v", len(es), err)
	}
}

func TestPurge(t *testing.T) {
	tests := []struct {
		name  string
		purge func(t *testing.T, s *Store, fx *fixture) purgeResult
	}{
		{"an entry inside an older file", func(t *testing.T, s *Store, fx *fixture) purgeResult {
			is := fx.entriesIn(fx.files[1])
			return purgeResult{"", 1}.check(errOf(s.Purge(fx.pos[is[1]])))
		}},
		{"the last entry of an older file", func(t *testing.T, s *Store, fx *fixture) purgeResult {
			is := fx.entriesIn(fx.files[1])
			return purgeResult{"", 2}.check(errOf(s.Purge(fx.pos[is[len(is)-1]])))
		}},
		{"an entry inside the open file", func(t *testing.T, s *Store, fx *fixture) purgeResult {
			is := fx.entriesIn(fx.files[len(fx.files)-1])
			return purgeResult{"", len(fx.files) - 1}.check(errOf(s.Purge(fx.pos[is[0]])))
		}},
		{"the last entry of all", func(t *testing.T, s *Store, fx *fixture) purgeResult {
			return purgeResult{"", len(fx.files)}.check(errOf(s.Purge(fx.pos[len(fx.pos)-1])))
		}},
		{"twice, the second time in a purged file", func(t *testing.T, s *Store, fx *fixture) purgeResult {
			is := fx.entriesIn(fx.files[0])
			if _, err := s.Purge(fx.pos[is[len(is)-1]]); err != nil {
				t.Fatal(err)
			}
			return purgeResult{"", 1}.check(errOf(s.Purge(fx.pos[is[0]])))
		}},
		{"an offset that is no entry", func(t *testing.T, s *Store, fx *fixture) purgeResult {
			return purgeResult{"no entry at offset", 0}.check(errOf(s.Purge(Pos{File: fx.files[1], Offset: fx.pos[fx.entriesIn(fx.files[1])[1]].Offset + 1})))
		}},
		{"an offset past the last entry", func(t *testing.T, s *Store, fx *fixture) purgeResult {
			return purgeResult{"no entry at offset", 0}.check(errOf(s.Purge(Pos{File: fx.files[0], Offset: 1 << 20})))
		}},
		{"not a file name", func(t *testing.T, s *Store, fx *fixture) purgeResult {
			return purgeResult{"not a dead-letter file name", 0}.check(errOf(s.Purge(Pos{File: "LOCK", Offset: fileHeaderSize})))
		}},
		{"a file newer than the newest", func(t *testing.T, s *Store, fx *fixture) purgeResult {
			return purgeResult{"never had a file", 0}.check(errOf(s.Purge(Pos{File: fileName(99), Offset: fileHeaderSize})))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			opts, _ := testOpts(t, 2048, 1<<20)
			s := mustOpen(t, fx.dir, opts)
			defer mustClose(t, s)
			want := tc.purge(t, s, fx)
			if want.err != "" {
				t.Fatal(want.err)
			}
			// Every file but the dropped ones survives whole, in order.
			var kept []Entry
			for i, p := range fx.pos {
				if want.dropped < len(fx.files) && p.File >= fx.files[want.dropped] {
					kept = append(kept, fx.es[i])
				}
			}
			expectEntries(t, fx.dir, kept)
			files := dlqFiles(t, fx.dir)
			if want.dropped == len(fx.files) {
				// Everything went: a new, empty file keeps the sequence going.
				if len(files) != 1 || files[0] != fileName(uint64(len(fx.files)+1)) || s.UsedBytes() != fileHeaderSize {
					t.Fatalf("files %v, used %d", files, s.UsedBytes())
				}
			} else if len(files) != len(fx.files)-want.dropped {
				t.Fatalf("files %v, want %d dropped", files, want.dropped)
			}
			mustAppend(t, s, entry("s", 1000))
			expectEntries(t, fx.dir, append(kept, entry("s", 1000)))
		})
	}
}

// purgeResult is what a Purge case expects, and after check what it got.
type purgeResult struct {
	err     string // substring of the expected error; after check, a failure
	dropped int    // files deleted
}

// check compares Purge's error with the expected one: it returns r without
// err when they match, or a result whose err says what went wrong.
func (r purgeResult) check(err error) purgeResult {
	switch {
	case r.err == "" && err != nil:
		return purgeResult{err: "unexpected error: " + err.Error()}
	case r.err != "" && err == nil:
		return purgeResult{err: "no error, want one with " + r.err}
	case r.err != "" && !strings.Contains(err.Error(), r.err):
		return purgeResult{err: "got " + err.Error() + ", want an error with " + r.err}
	}
	return purgeResult{dropped: r.dropped}
}
