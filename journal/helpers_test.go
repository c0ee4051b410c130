package journal

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/logpond/logpond/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// rec encodes a record with one event naming its writer and sequence, so
// content can be checked after recovery.
func rec(t testing.TB, writer, seq int, pad int) []byte {
	ev := fmt.Appendf(nil, `{"writer":%d,"seq":%d,"pad":"%s"}`, writer, seq, bytes.Repeat([]byte("p"), pad))
	b, err := record.Encode(nil, t0, [][]byte{ev})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func smallOpts() Options {
	return Options{SegmentBytes: 64 << 10, MaxBytes: 64 << 20, MaxGroupBytes: 1 << 20}
}

func mustOpen(t testing.TB, dir string, opts Options) *Journal {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	j, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

func mustAppend(t testing.TB, j *Journal, r []byte) uint64 {
	t.Helper()
	lsn, err := j.Append(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return lsn
}

// readAll returns every record the journal holds, by LSN.
func readAll(t testing.TB, j *Journal) map[uint64][]byte {
	t.Helper()
	out := map[uint64][]byte{}
	r := j.Reader(j.FirstLSN())
	for r.Next() {
		out[r.LSN()] = append([]byte(nil), r.Record()...)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// countingLog wraps the active segment and counts, at the fsync call itself, how
// many records each fsync made durable. It can fail writes or fsyncs and
// hold an fsync until released.
type countingLog struct {
	segmentLog
	mu        sync.Mutex
	index     uint64 // entries in the current segment (its last entry's index)
	pending   int    // records written since the last fsync
	perSync   []int  // records made durable by each fsync
	failWrite error
	failSync  error
	skipSync  bool          // a journal that never fsyncs (negative control)
	hold      chan struct{} // when set, Sync waits for it to be closed
	syncs     int           // Sync calls entered
	holdWrite chan struct{} // when set, Write waits for it to be closed
	writes    int           // Write calls entered
}

// waitWrites waits until n Write calls have been entered.
func (c *countingLog) waitWrites(n int) { c.waitUntil(func() bool { return c.writes >= n }) }

// waitUntil polls done, under c.mu, until it holds.
func (c *countingLog) waitUntil(done func() bool) {
	for {
		c.mu.Lock()
		ok := done()
		c.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// waitWritten waits until the journal under c has written LSN lsn (whose
// generation's base is 0).
func (c *countingLog) waitWritten(lsn uint64) {
	c.waitUntil(func() bool { return c.index >= lsn })
}

// lastIndex is how many entries the current segment holds.
func (c *countingLog) lastIndex() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.index
}

// waitSyncs waits until n Sync calls have been entered.
func (c *countingLog) waitSyncs(n int) { c.waitUntil(func() bool { return c.syncs >= n }) }

func (c *countingLog) Write(frames [][]byte) error {
	c.mu.Lock()
	err, hold := c.failWrite, c.holdWrite
	c.writes++
	c.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if err != nil {
		return err
	}
	if err := c.segmentLog.Write(frames); err != nil {
		return err
	}
	c.mu.Lock()
	c.pending += len(frames)
	c.index += uint64(len(frames))
	c.mu.Unlock()
	return nil
}

func (c *countingLog) Sync() error {
	c.mu.Lock()
	hold, fail, skip := c.hold, c.failSync, c.skipSync
	c.syncs++
	c.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if fail != nil {
		return fail
	}
	if !skip {
		if err := c.segmentLog.Sync(); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.perSync = append(c.perSync, c.pending)
	c.pending = 0
	c.mu.Unlock()
	return nil
}

// counting installs a countingLog on opts and returns a getter for the
// current one (rotation opens a new segment per generation; the wrapper
// state is shared across them through the returned pointer).
func counting(opts *Options) *countingLog {
	c := &countingLog{}
	opts.hooks.wrapLog = func(s segmentLog) segmentLog {
		c.mu.Lock()
		c.segmentLog = s
		c.index = s.(*tidwallSegment).index // not written yet: the committer has not started on it
		c.mu.Unlock()
		return c
	}
	return c
}
