package input

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	"go.uber.org/goleak"

	"github.com/logpond/logpond/input/lumberjack"
	"github.com/logpond/logpond/internal/testkit/lumbertest"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testOptions() BeatsOptions {
	return BeatsOptions{Listen: "127.0.0.1:0", MaxConnections: 8, IdleTimeout: 5 * time.Second, BatchTimeout: 5 * time.Second,
		Keepalive: time.Second, MaxInflightBytes: 64 << 20, MaxRecordBytes: 1 << 20, Limits: lumberjack.DefaultLimits(),
		Logger: slog.New(slog.DiscardHandler)}
}

func startBeats(t *testing.T, opts BeatsOptions, app Appender) *Beats {
	t.Helper()
	b, err := ListenBeats(opts, app)
	if err != nil {
		t.Fatal(err)
	}
	go b.Serve()
	t.Cleanup(func() { b.Close() })
	return b
}

func openJournal(t *testing.T) *journal.Journal {
	j, err := journal.Open(t.TempDir(), journal.Options{SegmentBytes: 16 << 20, MaxBytes: 1 << 30, MaxGroupBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// journalInput gives the input a journal, as the server does.
type journalInput struct{ j *journal.Journal }

func (a journalInput) Submit(ctx context.Context, rec []byte) (Durable, error) {
	p, err := a.j.Submit(ctx, rec)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// journalEvents returns every event in the journal, in order, and how
// many records hold them (of either version).
func journalEvents(t *testing.T, j *journal.Journal) (events [][]byte, records int) {
	events, codecs := journalEventsByCodec(t, j)
	for _, n := range codecs {
		records += n
	}
	return events, records
}

// journalEventsByCodec returns every event in the journal, in order,
// and its records counted by codec (0: version 1, not compressed).
func journalEventsByCodec(t *testing.T, j *journal.Journal) (events [][]byte, codecs map[record.Codec]int) {
	dz, err := record.NewDecompressor()
	if err != nil {
		t.Fatal(err)
	}
	defer dz.Close()
	codecs = map[record.Codec]int{}
	r := j.Reader(1)
	for r.Next() {
		rec, err := dz.Decode(r.Record(), record.MaxBlockBytes)
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.Verify(r.Record())
		if err != nil {
			t.Fatal(err)
		}
		codecs[h.Codec]++
		for ev := range rec.Events() {
			events = append(events, bytes.Clone(ev))
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return events, codecs
}

func TestEventsReachTheJournalBeforeTheACK(t *testing.T) {
	for _, c := range []record.Compression{{}, record.Zstd(record.LevelFastest), record.S2(record.LevelFastest)} {
		t.Run(c.String(), func(t *testing.T) { eventsReachTheJournal(t, c) })
	}
}

// eventsReachTheJournal sends three 2048-event batches, with records
// compressed as zc says, and checks that the journal holds each batch's
// events when its ACK arrives, split into records of at most
// MaxRecordBytes, all of zc's codec.
func eventsReachTheJournal(t *testing.T, zc record.Compression) {
	j := openJournal(t)
	opts := testOptions()
	opts.MaxRecordBytes = 64 << 10 // a 2048-event batch spans several records
	opts.Compression = zc
	b := startBeats(t, opts, journalInput{j})
	c, err := lj.SyncDial(b.Addr().String(), lj.CompressionLevel(3))
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for batch := range 3 {
		var data []interface{}
		for i := range 2048 {
			ev := json.RawMessage(fmt.Sprintf(`{"batch":%d,"i":%d,"message":"%0200d"}`, batch, i, i))
			want = append(want, ev)
			data = append(data, ev)
		}
		n, err := c.Send(data)
		if err != nil || n != 2048 {
			t.Fatalf("batch %d acked %d: %v", batch, n, err)
		}
		// The ACK came back: everything up to here is durable.
		got, _ := journalEvents(t, j)
		if len(got) != len(want) {
			t.Fatalf("after the ACK of batch %d the journal holds %d events, want %d", batch, len(got), len(want))
		}
	}
	c.Close()
	got, records := journalEvents(t, j)
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("event %d differs", i)
		}
	}
	if records <= 3 {
		t.Fatalf("%d records for 3 batches of ~450 KiB with 64 KiB records: batches were not split", records)
	}
	if _, byCodec := journalEventsByCodec(t, j); byCodec[zc.Codec] != records {
		t.Fatalf("records by codec %v, want all %d of codec %s", byCodec, records, zc.Codec)
	}
}

// TestAckedReportsLatencyAndEvents: every acknowledged batch is reported
// with its events and how long it took from its window to the ACK, which
// includes the wait for the journal.
func TestAckedReportsLatencyAndEvents(t *testing.T) {
	type acked struct {
		latency time.Duration
		events  int
	}
	got := make(chan acked, 8)
	opts := testOptions()
	opts.Acked = func(latency time.Duration, events int) { got <- acked{latency, events} }
	const delay = 30 * time.Millisecond
	b := startBeats(t, opts, &slowAppender{delay: delay})
	c, err := lj.SyncDial(b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range []int{1, 7} {
		data := make([]interface{}, n)
		for i := range data {
			data[i] = map[string]interface{}{"i": i}
		}
		if _, err := c.Send(data); err != nil {
			t.Fatal(err)
		}
		a := <-got
		if a.events != n || a.latency < delay {
			t.Errorf("batch of %d events reported as %d events acknowledged after %s; want %d, at least the journal's %s", n, a.events, a.latency, n, delay)
		}
	}
}

// slowAppender delays every append, to make batches wait for "the journal".
type slowAppender struct {
	delay time.Duration
	mu    sync.Mutex
	n     int
}

func (s *slowAppender) Submit(ctx context.Context, rec []byte) (Durable, error) {
	return s, nil
}

func (s *slowAppender) Wait() (uint64, error) {
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return uint64(s.n), nil
}

func TestKeepaliveWhileWaitingForTheJournal(t *testing.T) {
	opts := testOptions()
	opts.Keepalive = 50 * time.Millisecond
	b := startBeats(t, opts, &slowAppender{delay: 400 * time.Millisecond})
	conn, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(lumbertest.Window(`{"a":1}`, `{"b":2}`))
	keepalives := 0
	for {
		var ack [6]byte
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(conn, ack[:]); err != nil {
			t.Fatal(err)
		}
		if string(ack[:2]) != "2A" {
			t.Fatalf("got %q, want an ACK", ack[:2])
		}
		seq := binary.BigEndian.Uint32(ack[2:])
		if seq == 0 {
			keepalives++
			continue
		}
		if seq != 2 {
			t.Fatalf("ACK %d, want 2", seq)
		}
		break
	}
	if keepalives == 0 {
		t.Fatal("no keepalive ACK(0) while the batch waited for the journal")
	}
}

func TestViolationsCloseOnlyThatConnection(t *testing.T) {
	j := openJournal(t)
	opts := testOptions()
	opts.BatchTimeout = 200 * time.Millisecond
	opts.MaxConnections = 3
	b := startBeats(t, opts, journalInput{j})

	hostile := []struct {
		reason string
		send   []byte
	}{
		{lumberjack.ReasonWindowTooLarge, []byte("2W\xff\xff\xff\xff")},
		{lumberjack.ReasonBadVersion, []byte("1W\x00\x00\x00\x01")},
		{lumberjack.ReasonInvalidJSON, lumbertest.Window(`{"a":`)},
		{"batch_timeout", lumbertest.Window(`{"a":1}`)[:10]}, // stops inside its batch
	}
	for _, h := range hostile {
		conn, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(h.send)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Fatalf("%s: the server answered instead of closing", h.reason)
		}
		conn.Close()
		deadline := time.Now().Add(5 * time.Second)
		for b.Violations()[h.reason] == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if b.Violations()[h.reason] == 0 {
			t.Fatalf("violation %s not counted: %v", h.reason, b.Violations())
		}
		// A well-behaved client is still served.
		good, err := lj.SyncDial(b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if n, err := good.Send([]interface{}{json.RawMessage(`{"ok":true}`)}); err != nil || n != 1 {
			t.Fatalf("after %s a good client got %d, %v", h.reason, n, err)
		}
		good.Close()
	}
	// Connections beyond max_connections are closed at once.
	var extra []net.Conn
	for range opts.MaxConnections + 1 {
		c, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.Violations()["max_connections"] == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for _, c := range extra {
		c.Close()
	}
	if b.Violations()["max_connections"] == 0 {
		t.Fatalf("no max_connections violation: %v", b.Violations())
	}
}

// recordingAppender logs Submit ("S") and Wait ("W") calls in order.
type recordingAppender struct {
	mu  sync.Mutex
	log []byte
	n   uint64
}

func (a *recordingAppender) Submit(ctx context.Context, rec []byte) (Durable, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = append(a.log, 'S')
	a.n++
	return recordedWait{a, a.n}, nil
}

type recordedWait struct {
	a   *recordingAppender
	lsn uint64
}

func (w recordedWait) Wait() (uint64, error) {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	w.a.log = append(w.a.log, 'W')
	return w.lsn, nil
}

// sendBatch sends one batch of n events of about size bytes and fails the
// test unless all of them are acknowledged.
func sendBatch(t *testing.T, addr string, n, size int) {
	t.Helper()
	c, err := lj.SyncDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var data []interface{}
	for i := range n {
		data = append(data, json.RawMessage(fmt.Sprintf(`{"i":%d,"message":"%0*d"}`, i, size, i)))
	}
	if acked, err := c.Send(data); err != nil || acked != n {
		t.Fatalf("acked %d of %d: %v", acked, n, err)
	}
}

// recordOneBatch sends one batch of 100 events of 1000 bytes to an input
// over a recordingAppender and returns its log of submits and waits.
func recordOneBatch(t *testing.T, opts BeatsOptions) (string, *Beats) {
	t.Helper()
	app := &recordingAppender{}
	b := startBeats(t, opts, app)
	sendBatch(t, b.Addr().String(), 100, 1000)
	app.mu.Lock()
	defer app.mu.Unlock()
	return string(app.log), b
}

// TestBatchRecordsAreSubmittedTogether: the records of one batch are all
// submitted before the input waits for the first, so writing them overlaps
// reading the rest of the batch.
func TestBatchRecordsAreSubmittedTogether(t *testing.T) {
	opts := testOptions()
	opts.MaxRecordBytes = 16 << 10
	log, _ := recordOneBatch(t, opts)
	records := bytes.Count([]byte(log), []byte("S"))
	if records < 4 || log != strings.Repeat("S", records)+strings.Repeat("W", records) {
		t.Fatalf("submits and waits %q: want every record submitted, then every wait", log)
	}
}

// TestBatchBiggerThanTheBudget: a batch needing more budget than all there
// is goes through: the connection waits for its own submitted records to be
// durable (freeing their budget) instead of waiting for budget they hold.
func TestBatchBiggerThanTheBudget(t *testing.T) {
	opts := testOptions()
	opts.MaxInflightBytes = 32 << 10
	opts.MaxRecordBytes = 8 << 10
	log, b := recordOneBatch(t, opts)
	if !strings.Contains(log, "WS") {
		t.Fatalf("submits and waits %q: the batch never waited for its own records", log)
	}
	if v := b.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
}

// TestRecordBiggerThanTheBudget: with a record limit above the whole
// budget, the budget runs out while the connection's own record is still
// being built. The connection submits what it has and waits for it to be
// durable, instead of waiting (until the batch timeout) for budget only it
// holds.
func TestRecordBiggerThanTheBudget(t *testing.T) {
	opts := testOptions()
	opts.MaxInflightBytes = 32 << 10
	opts.MaxRecordBytes = 1 << 20
	opts.BatchTimeout = 2 * time.Second
	log, b := recordOneBatch(t, opts)
	if !strings.Contains(log, "SW") {
		t.Fatalf("submits and waits %q: the batch never submitted a record before its end", log)
	}
	if v := b.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
}
