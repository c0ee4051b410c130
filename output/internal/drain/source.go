package drain

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/processors"
	"github.com/logpond/logpond/output/skips"
)

// SourceOptions configure a Source.
type SourceOptions struct {
	// Ledger is the ledger the output drains.
	Ledger *ledger.Ledger
	// Log receives the Source's log lines (the output's logger).
	Log *slog.Logger
	// UnreadableAfter is how long the ledger's device must have failed
	// every attempt at the same read (segment and offset), with no read
	// working in between, while answering reads elsewhere, before the
	// bytes it will not return are taken for damage and passed.
	// Until then, and for ever when it is 0, the read is retried and
	// nothing is skipped.
	UnreadableAfter time.Duration
	// Sent is the verb of what the output does with an event, in its log
	// lines: "sent", "forwarded".
	Sent string
	// Sending names that work, in log lines and in Unreadable: "delivery",
	// "forwarding".
	Sending string
	// Chain is the output's processor chain, run on every event read
	// (Processor); nil sends events as stored.
	Chain *processors.Chain
	// LedgerFlushInterval is the server's ledger.flush_interval, the
	// flusher's period: while events arrive, the ledger grows at least
	// that often, so a batch lingering for more records (ReadHooks.Linger)
	// takes it that events have stopped arriving once the ledger has not
	// grown for twice as long. 0 makes it wait out the whole linger (Kafka's bulk_flush_frequency, which
	// waits like the producer's linger.ms, whatever arrives).
	LedgerFlushInterval time.Duration
}

// Source is an output's side of the ledger it reads: it passes damaged
// and skipped ranges (Pass), retries the reads the ledger's device fails
// (ReadFailed, ReadWorks), and counts all three (Counts). One Source
// serves one output over its lifetime, across its runs. Safe for
// concurrent use, though only one Reader at a time (the output's reader
// goroutine) calls Pass, ReadFailed and ReadWorks.
type Source struct {
	opts SourceOptions

	damagedRanges, damagedRecords atomic.Int64
	readErrors                    atomic.Int64
	skips                         skips.Tally

	fault readFault // reads of the ledger failing

	processing *Processing
}

// NewSource returns a Source with opts; it reads nothing until used.
func NewSource(opts SourceOptions) *Source {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Source{opts: opts, processing: NewProcessing(opts.Chain)}
}

// Processing is the output's chain and what it took out of the flow.
func (s *Source) Processing() *Processing { return s.processing }

// Processor returns a Processor of the output's chain, for one goroutine.
func (s *Source) Processor() *Processor { return s.processing.Processor() }

// waitMore is what ReadLoop does for an output holding a partial batch
// once its Reader r has caught up with the ledger: it waits for the ledger to grow,
// so that the batch fills further. It returns more when the ledger grew
// (read again before sending), and more false when the batch should go
// now: linger has passed since first (when the batch got its first
// event), or the ledger has not grown for twice LedgerFlushInterval.
// The flusher grows the ledger every LedgerFlushInterval while events
// arrive, so such a pause means the events have stopped: the batch is as
// full as it will get soon, and waiting out linger would only delay it
// (the last requests of a burst would wait up to a whole linger). ok is
// false when ctx ended.
func (s *Source) waitMore(ctx context.Context, r *ledger.Reader, first time.Time, linger time.Duration) (more, ok bool) {
	wait := time.Until(first.Add(linger))
	if idle := 2 * s.opts.LedgerFlushInterval; idle > 0 && idle < wait {
		wait = idle
	}
	if wait <= 0 {
		return false, true
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	err := r.Wait(wctx)
	cancel()
	if ctx.Err() != nil {
		return false, false
	}
	return err == nil, true
}

// Counts is what a Source passed and retried since it was made.
type Counts struct {
	// DamagedRanges counts the damaged ranges passed (each quarantined
	// and logged once); DamagedRecords the records they held.
	DamagedRanges, DamagedRecords int64
	// ReadErrors counts the reads the ledger's device failed (each
	// retried: nothing is skipped for them).
	ReadErrors int64
	// SkippedRecords counts the records retention deleted before the
	// output read them; SkippedEvents their events, where the ledger knew
	// their number; SkippedRanges the latest such ranges (first, last
	// LSN), oldest first.
	SkippedRecords, SkippedEvents int64
	SkippedRanges                 [][2]uint64
}

// Counts returns the current totals.
func (s *Source) Counts() Counts {
	return Counts{
		DamagedRanges: s.damagedRanges.Load(), DamagedRecords: s.damagedRecords.Load(),
		ReadErrors:     s.readErrors.Load(),
		SkippedRecords: s.skips.Records(), SkippedEvents: s.skips.Events(), SkippedRanges: s.skips.Ranges(),
	}
}
