package input

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"github.com/logpond/logpond/record"
)

// MaxSlots is the number of connection slots a record can name (its slot
// field is 16 bits): the most connections the Beats input allows.
const MaxSlots = 1 << 16

// abortRetry is how often the input tries again to write the abort record
// of a slot whose batch failed while the journal refused appends.
const abortRetry = time.Second

// errNoSlot: every slot is taken (only possible while aborts are being
// retried on slots kept out of use).
var errNoSlot = errors.New("no free connection slot")

// slotTable numbers connections: each connection holds a slot, the lowest
// free one, for its lifetime, and every record of its batches carries it
// (record/doc.go, "Batches and flags"). A slot whose connection ended with
// a batch open in the journal is dirty until an abort record for it is
// durable, or until a later connection takes it: that connection's first
// record (a new batch) settles the old batch just as an abort does. A
// dirty slot is handed out only when no clean one is free, and never while
// an abort for it is being written, so that an abort cannot land after a
// new batch of the same slot.
type slotTable struct {
	mu       sync.Mutex
	used     [MaxSlots / 64]uint64 // held by a connection or by the abort retrier
	dirty    [MaxSlots / 64]uint64 // a batch of the slot may be open in the journal
	ndirty   int
	retrying bool // the retrier runs
}

// take returns the lowest free clean slot, else the lowest free dirty one
// (whose next record settles its open batch), and marks it used. dirty
// says which: the taker owes the slot its abort until a record of its own
// is durable, and gives it back dirty if it ends without one.
func (t *slotTable) take() (slot uint16, dirty bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, dirtyOK := range []bool{false, true} {
		for w := range t.used {
			free := ^t.used[w]
			if !dirtyOK {
				free &^= t.dirty[w]
			}
			if free == 0 {
				continue
			}
			s := w*64 + bits.TrailingZeros64(free)
			t.setDirty(s, false)
			t.used[w] |= 1 << (s % 64)
			return uint16(s), dirtyOK, nil
		}
	}
	return 0, false, errNoSlot
}

// put gives a slot back; dirty says whether a batch of it may still be open
// in the journal (its abort could not be written).
func (t *slotTable) put(s uint16, dirty bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.used[s/64] &^= 1 << (s % 64)
	t.setDirty(int(s), dirty)
}

func (t *slotTable) setDirty(s int, dirty bool) {
	w, bit := s/64, uint64(1)<<(s%64)
	switch was := t.dirty[w]&bit != 0; {
	case dirty && !was:
		t.dirty[w] |= bit
		t.ndirty++
	case !dirty && was:
		t.dirty[w] &^= bit
		t.ndirty--
	}
}

// takeDirty marks every free dirty slot used (the retrier holds them while
// it writes their aborts) and returns them. It returns nil, and records
// that the retrier stops, when no slot is dirty.
func (t *slotTable) takeDirty() []uint16 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ndirty == 0 {
		t.retrying = false
		return nil
	}
	var out []uint16
	for w := range t.dirty {
		for free := t.dirty[w] &^ t.used[w]; free != 0; free &= free - 1 {
			s := w*64 + bits.TrailingZeros64(free)
			t.used[w] |= 1 << (s % 64)
			out = append(out, uint16(s))
		}
	}
	return out
}

// startRetrier reports whether the caller must start the retrier: a slot
// is dirty and none runs.
func (t *slotTable) startRetrier() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ndirty == 0 || t.retrying {
		return false
	}
	t.retrying = true
	return true
}

// writeAbort writes the abort record of slot and waits until it is
// durable: the batch open on the slot failed (record/doc.go).
func (b *Beats) writeAbort(ctx context.Context, slot uint16) error {
	var buf [record.MinSize]byte
	d, err := b.journal.Submit(ctx, record.AppendAbort(buf[:0], slot, time.Now()))
	if err != nil {
		return err
	}
	_, err = d.Wait()
	return err
}

// releaseSlot ends a connection's hold on its slot. open says a batch of
// the connection may be open in the journal (records of it were submitted,
// and it failed): the slot's abort record is written first; if the
// journal refuses it, the slot is left dirty and the retrier writes it.
func (b *Beats) releaseSlot(ctx context.Context, slot uint16, open bool) {
	if open {
		if err := b.writeAbort(ctx, slot); err != nil && b.stop.Err() == nil {
			b.log.Warn("beats: writing the abort record of a failed batch; retrying every second (until then its records stay in the journal, see docs/operations.md, \"Failed batches\")",
				"slot", slot, "err", err)
		} else if err == nil {
			open = false
		}
	}
	b.slotIDs.put(slot, open)
	if open && b.slotIDs.startRetrier() {
		b.startAbortRetrier()
	}
}

// startAbortRetrier starts the goroutine that writes the abort records of
// dirty slots, every abortRetry, until none is dirty or Close. It is added
// to the input's WaitGroup, which Close waits for.
func (b *Beats) startAbortRetrier() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return // stopping: the flusher voids what is still open once the input has stopped
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		t := time.NewTicker(abortRetry)
		defer t.Stop()
		for {
			select {
			case <-b.stop.Done():
				return
			case <-t.C:
			}
			dirty := b.slotIDs.takeDirty()
			if dirty == nil {
				return
			}
			for _, s := range dirty {
				err := b.writeAbort(b.stop, s)
				if err == nil {
					b.log.Info("beats: wrote the abort record of a failed batch", "slot", s)
				}
				b.slotIDs.put(s, err != nil)
			}
		}
	}()
}

// checkSlots refuses a connection limit beyond the slots a record can name.
func checkSlots(maxConnections int) error {
	if maxConnections > MaxSlots {
		return fmt.Errorf("input: max connections %d: at most %d (the slot number in each record is 16 bits)", maxConnections, MaxSlots)
	}
	return nil
}
