package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// placementOptions configure the compression placement measure: where
// compressing records costs least on the acknowledgement path.
type placementOptions struct {
	// JournalDir and LedgerDir are where each run makes its stores (in a
	// fresh directory inside each, removed after the run): the report puts
	// the journal on the machine's disk and the ledger on its own device.
	JournalDir, LedgerDir string
	// Events are the events, each as a client sent it (Filebeat-shaped
	// JSON), that the records are built from, cycling.
	Events [][]byte
	// Producers is the number of goroutines submitting records, as that
	// many connections would.
	Producers int
	// BatchEvents is the events per record (a client's window).
	BatchEvents int
	// Duration is how long producers submit in each run.
	Duration time.Duration
	// Rounds is how many times each option runs; the options run in turn
	// within a round, so a slow spell of the shared machine falls on all.
	Rounds int
	// Compression is the codec and level of options (a) and (b).
	Compression record.Compression
	// FlushInterval is the flusher's period; 0 means 5 ms. (The flusher
	// is also woken when the journal's in-memory tail fills.)
	FlushInterval time.Duration
	// Rate, when positive, paces the producers together at this many
	// events/s offered (records start on a schedule, each producer still
	// waiting for its record's acknowledgement before taking the next),
	// so the options can be compared at a load the flusher keeps up
	// with; 0 submits as fast as acknowledgements come, which finds the
	// pipeline's ceiling and, when the flusher is slower than the journal,
	// fills the journal.
	Rate float64
}

// placement is where records are compressed.
type placement int

const (
	placeFlusher placement = iota // (a) the ledger compresses in Append
	placeInput                    // (b) the producer compresses before Submit
	placeNone                     // (c) nothing is compressed
)

var placements = []struct {
	key, what string
}{
	placeFlusher: {"a", "in the flusher (ledger Append)"},
	placeInput:   {"b", "in the input, before the journal"},
	placeNone:    {"c", "none"},
}

// placementRun is what one run of one option measured.
type placementRun struct {
	Events   int64         // events acknowledged
	Records  int64         // records acknowledged
	Raw      int64         // their bytes as version 1 records
	Journal  int64         // their bytes as submitted to the journal
	Stored   int64         // their bytes as the ledger stores them (CompressionStats.StoredBytes)
	Disk     int64         // the ledger's bytes on disk at the end (UsedBytes: frames and block padding included)
	Elapsed  time.Duration // from the first Submit until the last producer's last acknowledgement
	CPU      time.Duration // process CPU (user + system) from the start until the final flush is synced
	P50, P99 time.Duration // acknowledgement latency of a record, compression included
	// Backlog is the records durable in the journal and not yet synced
	// in the ledger when the producers stopped: 0 when the flusher kept
	// up (up to the records of its last few milliseconds).
	Backlog uint64
	// FileRecords is the records the flusher had to read back from the
	// journal's files because they had left its in-memory tail.
	FileRecords int64
	PeakHeap    uint64 // the largest HeapInuse sampled during the run
	// PeakJournal is the largest journal UsedBytes sampled: near the
	// journal's max_bytes, producers waited for the flusher to free space.
	PeakJournal int64
}

// placementRow is one option's results: its runs, and their medians.
type placementRow struct {
	Key, What string
	Runs      []placementRun
}

// median returns the median over the row's runs of f (the lower middle
// for an even count).
func (r placementRow) median(f func(placementRun) float64) float64 {
	if len(r.Runs) == 0 {
		return 0
	}
	v := make([]float64, len(r.Runs))
	for i, run := range r.Runs {
		v[i] = f(run)
	}
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

func (r placementRun) eventsPerSec() float64 { return perSec(float64(r.Events), r.Elapsed) }
func (r placementRun) rawMBps() float64      { return perSec(float64(r.Raw)/1e6, r.Elapsed) }
func (r placementRun) cpuPerMillion() float64 {
	if r.Events == 0 {
		return 0
	}
	return r.CPU.Seconds() * 1e6 / float64(r.Events)
}
func (r placementRun) journalPerRaw() float64 { return share(r.Journal, r.Raw) }
func (r placementRun) storedPerRaw() float64  { return share(r.Stored, r.Raw) }
func (r placementRun) diskPerRaw() float64    { return share(r.Disk, r.Raw) }

func perSec(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// measurePlacement runs the in-process pipeline once per option and
// round — producers submitting records to a real journal and waiting for
// their durability, a flusher moving them to a real ledger — and returns
// one row per option: (a) compress in the flusher, (b) compress in the
// input before the journal, (c) no compression.
func measurePlacement(ctx context.Context, o placementOptions) ([]placementRow, error) {
	if o.Producers < 1 || o.BatchEvents < 1 || o.Duration <= 0 || o.Rounds < 1 || len(o.Events) == 0 {
		return nil, fmt.Errorf("placement: need producers, batch events, duration, rounds and events (got %d, %d, %s, %d, %d)",
			o.Producers, o.BatchEvents, o.Duration, o.Rounds, len(o.Events))
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 5 * time.Millisecond
	}
	recs, err := placementRecords(o.Events, o.BatchEvents)
	if err != nil {
		return nil, err
	}
	rows := make([]placementRow, len(placements))
	for p, pl := range placements {
		rows[p] = placementRow{Key: pl.key, What: pl.what}
	}
	for round := 0; round < o.Rounds; round++ {
		for p := range placements {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			run, err := placementOnce(ctx, o, placement(p), recs)
			if err != nil {
				return nil, fmt.Errorf("placement: option (%s), round %d: %w", placements[p].key, round+1, err)
			}
			rows[p].Runs = append(rows[p].Runs, run)
		}
	}
	return rows, nil
}

// placementRecords builds the version 1 records the producers submit,
// before anything is timed: record i holds the per events that follow
// record i-1's, cycling through events, so the records together hold
// every event once (or, with fewer events than per, repeat them).
func placementRecords(events [][]byte, per int) ([][]byte, error) {
	n := max((len(events)+per-1)/per, 1)
	at := time.Date(2026, 12, 2, 10, 57, 41, 0, time.UTC)
	recs := make([][]byte, n)
	batch := make([][]byte, per)
	for i := range recs {
		for k := range batch {
			batch[k] = events[(i*per+k)%len(events)]
		}
		rec, err := record.Encode(nil, at, batch)
		if err != nil {
			return nil, fmt.Errorf("placement: building record %d: %w", i, err)
		}
		recs[i] = rec
	}
	return recs, nil
}

// placementStores opens a fresh journal and ledger in new directories
// inside o's, with the default configuration's values; cleanup closes
// them and removes the directories.
func placementStores(o placementOptions, p placement) (*journal.Journal, *ledger.Ledger, func() error, error) {
	cfg := conf.Default()
	jdir, err := os.MkdirTemp(o.JournalDir, "placement-journal-")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("journal directory: %w", err)
	}
	ldir, err := os.MkdirTemp(o.LedgerDir, "placement-ledger-")
	if err != nil {
		os.RemoveAll(jdir)
		return nil, nil, nil, fmt.Errorf("ledger directory: %w", err)
	}
	quiet := slog.New(slog.DiscardHandler)
	// As server/options.go maps the configuration; the stores start
	// empty, so nothing is settled or continued.
	j, err := journal.Open(jdir, journal.Options{
		SegmentBytes:  int64(cfg.Journal.SegmentBytes),
		MaxBytes:      int64(cfg.Journal.MaxBytes),
		MaxGroupWait:  time.Duration(cfg.Journal.MaxGroupWait),
		MaxGroupBytes: int64(cfg.Journal.MaxGroupBytes),
		SpareSegments: cfg.Journal.SpareSegments,
		TailBytes:     cfg.JournalTailBytes(),
		Logger:        quiet,
	})
	if err != nil {
		os.RemoveAll(jdir)
		os.RemoveAll(ldir)
		return nil, nil, nil, err
	}
	lopts := ledger.Options{
		SegmentBytes: int64(cfg.Ledger.SegmentBytes),
		MaxBytes:     int64(cfg.Ledger.MaxBytes),
		DirectIO:     cfg.Ledger.DirectIO,
		Logger:       quiet,
	}
	if p == placeFlusher {
		lopts.Compression = o.Compression
	}
	l, err := ledger.Open(ldir, lopts)
	if err != nil {
		err = errors.Join(err, j.Close())
		os.RemoveAll(jdir)
		os.RemoveAll(ldir)
		return nil, nil, nil, err
	}
	cleanup := func() error {
		err := errors.Join(l.Close(), j.Close())
		return errors.Join(err, os.RemoveAll(jdir), os.RemoveAll(ldir))
	}
	return j, l, cleanup, nil
}

// placementOnce runs option p once on fresh stores.
func placementOnce(ctx context.Context, o placementOptions, p placement, recs [][]byte) (run placementRun, err error) {
	// The previous run's garbage must not count in this one's heap.
	runtime.GC()
	j, l, cleanup, err := placementStores(o, p)
	if err != nil {
		return run, err
	}
	defer func() { err = errors.Join(err, cleanup()) }()

	// Option (b)'s compressors, made before timing. The pool is bounded
	// at GOMAXPROCS: no more compressions than that can run at once, and
	// each Compressor holds its encoder's tables (record.CompressorMemory:
	// MiBs, 40 MiB at "best"), so one per connection would cost memory
	// in proportion to the connections (up to max_connections) for no
	// speed. A producer that finds none free waits, on its ack path.
	var pool chan *record.Compressor
	if p == placeInput {
		pool = make(chan *record.Compressor, runtime.GOMAXPROCS(0))
		defer func() {
			close(pool)
			for c := range pool {
				err = errors.Join(err, c.Close())
			}
		}()
		for range cap(pool) {
			c, cerr := record.NewCompressor(o.Compression)
			if cerr != nil {
				return run, cerr
			}
			pool <- c
		}
	}

	runCtx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() {
		cancel()
		bg.Wait()
	}()

	var peakHeap atomic.Uint64
	var peakJournal atomic.Int64
	bg.Go(func() { samplePeaks(runCtx, j, &peakHeap, &peakJournal) })

	fl := &placementFlusher{j: j, l: l}
	flCtx, stopFlusher := context.WithCancel(runCtx)
	defer stopFlusher() // on early returns; cancel covers it too
	flErr := make(chan error, 1)
	bg.Go(func() {
		err := fl.run(flCtx, o.FlushInterval)
		if err != nil {
			// The producers would otherwise wait for journal space
			// that no one frees.
			cancel()
		}
		flErr <- err
	})

	cpu0, err := processCPU()
	if err != nil {
		return run, err
	}
	start := time.Now()
	deadline := start.Add(o.Duration)
	var (
		next     atomic.Int64 // the next record to submit, cycling
		prodErr  error
		errOnce  sync.Once
		mu       sync.Mutex // guards the sums below
		lats     []time.Duration
		producer sync.WaitGroup
	)
	for range o.Producers {
		producer.Go(func() {
			var (
				buf  []byte
				mine []time.Duration
				sum  placementRun
			)
			for runCtx.Err() == nil && time.Now().Before(deadline) {
				n := next.Add(1) - 1
				if o.Rate > 0 {
					at := start.Add(time.Duration(float64(n) * float64(o.BatchEvents) / o.Rate * float64(time.Second)))
					if !at.Before(deadline) || !sleepUntil(runCtx, at) {
						break
					}
				}
				rec := recs[int(n)%len(recs)]
				t0 := time.Now()
				sub := rec
				if pool != nil {
					var c *record.Compressor
					select {
					case c = <-pool:
					case <-runCtx.Done():
						return
					}
					var cerr error
					buf, cerr = c.Compress(buf[:0], rec)
					pool <- c
					if cerr != nil {
						errOnce.Do(func() { prodErr = cerr; cancel() })
						return
					}
					// Submit copies the record, so buf is free again
					// as soon as it returns.
					sub = buf
				}
				pend, serr := j.Submit(runCtx, sub)
				if serr == nil {
					_, serr = pend.Wait()
				}
				if serr != nil {
					errOnce.Do(func() { prodErr = fmt.Errorf("submit: %w", serr); cancel() })
					return
				}
				mine = append(mine, time.Since(t0))
				sum.Events += int64(o.BatchEvents)
				sum.Records++
				sum.Raw += int64(len(rec))
				sum.Journal += int64(len(sub))
			}
			mu.Lock()
			defer mu.Unlock()
			lats = append(lats, mine...)
			run.Events += sum.Events
			run.Records += sum.Records
			run.Raw += sum.Raw
			run.Journal += sum.Journal
		})
	}
	producer.Wait()
	run.Elapsed = time.Since(start)
	if prodErr != nil {
		// A failed flusher cancels the producers: its error says why.
		stopFlusher()
		return run, errors.Join(<-flErr, prodErr)
	}
	// Whether the flusher kept up: what the journal made durable and the
	// ledger has not synced yet, as the producers stop.
	run.Backlog = j.LastLSN() - l.LastLSN()

	// Stop the flusher, then do the final flush here: the ledger has one
	// writer at a time.
	stopFlusher()
	if err := <-flErr; err != nil {
		return run, err
	}
	if err := fl.move(); err != nil {
		return run, fmt.Errorf("final flush: %w", err)
	}
	cpu1, err := processCPU()
	if err != nil {
		return run, err
	}
	run.CPU = cpu1 - cpu0
	if got, want := l.LastLSN(), uint64(run.Records); got != want || j.LastLSN() != want {
		return run, fmt.Errorf("the ledger holds %d records and the journal %d, the producers had %d acknowledged", got, j.LastLSN(), want)
	}
	run.Stored = l.Compression().StoredBytes
	run.Disk = l.UsedBytes()
	run.FileRecords = fl.fileRecords
	cancel()
	bg.Wait()
	run.PeakHeap, run.PeakJournal = peakHeap.Load(), peakJournal.Load()
	slices.Sort(lats)
	run.P50, run.P99 = quantile(lats, 0.50), quantile(lats, 0.99)
	return run, nil
}

// sleepUntil waits until at, or until ctx ends (false).
func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// quantile returns the q-quantile of sorted (nearest rank), 0 for none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// samplePeaks keeps in heap the largest HeapInuse, and in used the
// largest journal UsedBytes, seen every 20 ms until ctx ends.
// (ReadMemStats stops the world briefly: sampling more often would weigh
// on what is measured.)
func samplePeaks(ctx context.Context, j *journal.Journal, heap *atomic.Uint64, used *atomic.Int64) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	var ms runtime.MemStats
	for {
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > heap.Load() {
			heap.Store(ms.HeapInuse)
		}
		if u := j.UsedBytes(); u > used.Load() {
			used.Store(u)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// placementFlusher moves records from the journal to the ledger as
// server/flusher.go does in the normal case: records from the journal's
// in-memory tail (its files when they left it), Append, Sync, and only
// then Release. Store failures end the run instead of being recovered.
type placementFlusher struct {
	j *journal.Journal
	l *ledger.Ledger
	// fileRecords counts the records read back from the journal's files.
	fileRecords int64
}

// Chunk and sync sizes as the server's flusher's (flushChunk,
// flushSyncBytes): records taken from the tail at a time, and bytes
// moved between ledger Syncs while catching up.
const (
	placementChunk     = 512
	placementSyncBytes = 16 << 20
)

// run moves records every interval, and whenever the journal's tail
// fills, until ctx ends.
func (f *placementFlusher) run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-f.j.TailFilling():
		}
		if err := f.move(); err != nil {
			return err
		}
	}
}

// move moves every record the journal has made durable into the ledger,
// syncing it every placementSyncBytes and at the end, and releases the
// journal up to what the ledger synced.
func (f *placementFlusher) move() error {
	j, l := f.j, f.l
	next, last := l.AppendedLSN()+1, j.LastLSN()
	var pending int64
	sync := func() error {
		if err := l.Sync(); err != nil {
			return fmt.Errorf("ledger sync: %w", err)
		}
		pending = 0
		if err := j.Release(l.LastLSN()); err != nil {
			return fmt.Errorf("journal release: %w", err)
		}
		return nil
	}
	appendRec := func(rec []byte) error {
		if err := l.Append(next, rec); err != nil {
			return fmt.Errorf("ledger append LSN %d: %w", next, err)
		}
		pending += int64(len(rec))
		next++
		if pending >= placementSyncBytes {
			return sync()
		}
		return nil
	}
	for next <= last {
		recs, ok := j.Recent(next, placementChunk)
		if !ok {
			// Behind the in-memory tail: read the journal's files up to
			// last.
			r := j.Reader(next)
			for next <= last && r.Next() {
				if r.LSN() != next {
					r.Close()
					return fmt.Errorf("the journal skips from LSN %d to %d", next, r.LSN())
				}
				f.fileRecords++
				if err := appendRec(r.Record()); err != nil {
					r.Close()
					return err
				}
			}
			err := r.Err()
			r.Close()
			if err != nil {
				return fmt.Errorf("journal read: %w", err)
			}
			if next <= last {
				return fmt.Errorf("the journal ended at LSN %d, before its last LSN %d", next-1, last)
			}
			continue
		}
		if len(recs) == 0 {
			break
		}
		for _, rec := range recs {
			if err := appendRec(rec); err != nil {
				return err
			}
		}
	}
	if pending > 0 || l.AppendedLSN() > l.LastLSN() {
		return sync()
	}
	return nil
}

// renderPlacement writes the placement section: one row per option, with
// medians over the rounds and ratios to option (c), and how it was
// measured.
func renderPlacement(w io.Writer, rows []placementRow, o placementOptions) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("### Where to compress: in the flusher, in the input, or not at all\n\n")
	if len(rows) == 0 {
		return
	}
	var base placementRow
	for _, r := range rows {
		if r.Key == placements[placeNone].key {
			base = r
		}
	}
	med := func(r placementRow, f func(placementRun) float64) float64 { return r.median(f) }
	dur := func(f func(placementRun) time.Duration) func(placementRun) float64 {
		return func(r placementRun) float64 { return float64(f(r)) }
	}
	cfg := conf.Default()
	pacing := "as fast as the acknowledgements come"
	if o.Rate > 0 {
		pacing = fmt.Sprintf("paced together at %.0f events/s offered (records start on a schedule)", o.Rate)
	}
	p50 := dur(func(r placementRun) time.Duration { return r.P50 })
	p99 := dur(func(r placementRun) time.Duration { return r.P99 })
	p("| option | compressed | acked events/s | × none | raw MB/s | CPU s per M events | × none | ack p50 ms | ack p99 ms | p99 × none | journal B per raw B | ledger B per raw B | ledger disk B per raw B | backlog at stop (records, max) | records read from journal files (max) | peak journal MiB (max) | peak heap MiB |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		var backlog uint64
		var files, jpeak int64
		for _, run := range r.Runs {
			backlog = max(backlog, run.Backlog)
			files = max(files, run.FileRecords)
			jpeak = max(jpeak, run.PeakJournal)
		}
		eps, cpuM := med(r, placementRun.eventsPerSec), med(r, placementRun.cpuPerMillion)
		l99 := med(r, p99)
		p("| (%s) | %s | %.0f | %s | %.1f | %.2f | %s | %s | %s | %s | %.3f | %.3f | %.3f | %d | %d | %s | %s |\n",
			r.Key, r.What, eps, ratio(eps, med(base, placementRun.eventsPerSec)), med(r, placementRun.rawMBps),
			cpuM, ratio(cpuM, med(base, placementRun.cpuPerMillion)),
			ms(time.Duration(med(r, p50))), ms(time.Duration(l99)), ratio(l99, med(base, p99)),
			med(r, placementRun.journalPerRaw), med(r, placementRun.storedPerRaw), med(r, placementRun.diskPerRaw),
			backlog, files, mib(jpeak), mib(int64(med(r, func(run placementRun) float64 { return float64(run.PeakHeap) }))))
	}
	p("\nOne process runs the pipeline in memory, without the network: %d producer goroutines (as %d connections) each take the next record of %d events (version 1 records built before timing from %d Filebeat-shaped events, cycling), submit it to a real journal (the default configuration: `max_group_bytes` %d MiB, %d MiB segments, an in-memory tail of %d MiB) and wait until it is durable, %s, for %s per run; one flusher goroutine moves records as the server's does (the journal's in-memory tail or its files, ledger Append, Sync, then journal Release) every %s or when the tail fills, into a real ledger (O_DIRECT: %t, %d MiB segments). "+
		"(a) the ledger compresses each record in Append (%s), on the flusher goroutine; (b) the producer compresses each record before Submit with a Compressor from a pool of GOMAXPROCS (%d) — no more compressions run at once, and each Compressor holds MiBs of encoder tables, so one per connection would cost memory for no speed — and the ledger stores the version 2 records as given; (c) nothing is compressed. "+
		"Each option runs %d times on fresh stores, the three in turn in each round; the table shows medians over the rounds (backlog and journal-file reads: the largest). "+
		"Ack latency runs from taking a record (before compressing it in (b)) until the journal says it is durable. CPU is the whole process's (getrusage) from the first Submit until the final flush is synced, flusher included, per million acknowledged events. "+
		"Journal and ledger bytes are the records' sizes as submitted and as stored (ledger disk: frames and 4 KiB block padding included) over their size as version 1 records. Peak journal is the journal's largest size sampled every 20 ms: at its `max_bytes` (%d MiB, %d MiB of it for records) the producers waited for the flusher to free space, so the rate was the flusher's, not the journal's. "+
		"Backlog is the records the journal held durably and the ledger had not synced when the producers stopped; records read from journal files are those that left the journal's in-memory tail before the flusher took them: both are 0 when the flusher keeps up. "+
		"Peak heap is the largest HeapInuse sampled every 20 ms; RSS is not measured per option, since the three share one process. The machine's two cores are shared with other work, so the figures are relative to each other, not absolute.\n\n",
		o.Producers, o.Producers, o.BatchEvents, len(o.Events), cfg.Journal.MaxGroupBytes>>20, cfg.Journal.SegmentBytes>>20, cfg.JournalTailBytes()>>20,
		pacing, o.Duration, flushIntervalOf(o), cfg.Ledger.DirectIO, cfg.Ledger.SegmentBytes>>20, o.Compression.String(), runtime.GOMAXPROCS(0), o.Rounds,
		cfg.Journal.MaxBytes>>20, (cfg.Journal.MaxBytes-conf.Size(cfg.Journal.SpareSegments)*cfg.Journal.SegmentBytes)>>20)
}

// flushIntervalOf is o's flusher period, its default applied.
func flushIntervalOf(o placementOptions) time.Duration {
	if o.FlushInterval <= 0 {
		return 5 * time.Millisecond
	}
	return o.FlushInterval
}
