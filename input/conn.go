package input

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/logpond/logpond/input/lumberjack"
	"github.com/logpond/logpond/record"
)

// handle serves one connection: read a window, write its events into
// records, append each to the journal, acknowledge, repeat.
func (b *Beats) handle(conn net.Conn) {
	ctx, cancel := context.WithCancel(b.stop)
	defer cancel()
	if tc, ok := conn.(*tls.Conn); ok && !b.handshake(ctx, tc) {
		return
	}
	// Every record of this connection's batches carries its slot; a batch
	// that fails after some of its records were submitted is closed with
	// an abort record before the slot is given back (record/doc.go).
	slot, inherited, err := b.slotIDs.take()
	if err != nil {
		b.log.Warn("beats: closing connection", "remote", conn.RemoteAddr().String(), "err", err)
		return
	}
	c := &beatsConn{b: b, conn: conn, ctx: ctx, slot: slot, open: inherited}
	c.r = lumberjack.NewReader(conn, b.opts.Limits)
	defer c.r.Release()
	defer func() { b.releaseSlot(ctx, slot, c.open) }()
	defer func() { b.budget.release(c.held + c.pendingHeld + c.credit) }()
	c.r.OnWindow = c.onWindow
	c.r.Reserve = c.reserve
	for c.serveBatch() {
	}
}

// handshake runs a TLS connection's handshake before anything is read, so
// that a client that stalls it is told apart from a quiet one: the
// handshake must end within BatchTimeout, like a batch, and one that does
// not is a violation (tls_handshake_timeout), never an idle close. A
// handshake that fails otherwise (no or a wrong client certificate, not
// TLS) ends the connection as any failed read does. It reports whether
// the connection is ready for batches.
func (b *Beats) handshake(ctx context.Context, conn *tls.Conn) bool {
	if err := b.readDeadline(conn, b.opts.BatchTimeout); err != nil {
		return false // Close
	}
	err := conn.HandshakeContext(ctx)
	if err == nil {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && !b.isClosed() {
		b.violation(conn, "tls_handshake_timeout", fmt.Errorf("the TLS handshake did not end within batch_timeout (%s): %w", b.opts.BatchTimeout, err))
		return false
	}
	b.closeWith(conn, fmt.Errorf("TLS handshake: %w", err))
	return false
}

// beatsConn is one connection's state while its handler runs. Only the
// handler's goroutine uses it, except wmu, which the keepalive timer takes
// too.
type beatsConn struct {
	b    *Beats
	conn net.Conn
	ctx  context.Context // ends with Close, or when the handler returns
	r    *lumberjack.Reader
	slot uint16
	// open: a batch of this slot may be open in the journal — one of this
	// connection's, with a part that said more would follow, or, on a
	// slot taken dirty, the failed one of an earlier connection, until a
	// batch of this one is durable (its first record settles the old one).
	open bool

	bl          *record.Builder // from builders while a batch is read; an idle connection holds none
	parts       int             // records of the current batch submitted
	held        int64           // budget held for events read into bl
	credit      int64           // budget taken ahead for the batch's next events (reserveChunk)
	pending     []Durable       // records of this batch submitted, not yet known durable
	pendingHeld int64           // budget held for their events
	stalled     time.Duration   // reading this batch stood still for logpond (budget, journal space) this long
	wmu         sync.Mutex      // serializes ACK writes (keepalives come from a timer)
}

// serveBatch reads one batch, makes it durable and acknowledges it. It
// returns false when the connection is done: closed by the client or by
// Close, broken, or closed for a violation.
func (c *beatsConn) serveBatch() bool {
	b := c.b
	if err := b.readDeadline(c.conn, b.opts.IdleTimeout); err != nil {
		return false // Close interrupted the read (the last batch was acknowledged), or the connection broke
	}
	c.bl = builders.Get().(*record.Builder)
	c.bl.Reset(time.Now())
	c.parts = 0
	c.stalled = 0
	var batchBytes int64
	n, seq, err := c.r.ReadBatch(func(ev []byte) error {
		batchBytes += int64(len(ev))
		if c.bl.Count() > 0 && c.bl.Size()+record.EventOverhead+len(ev) > b.opts.MaxRecordBytes {
			start := b.now()
			err := c.submit(false) // may wait for journal space
			c.stalled += b.now().Sub(start)
			if err != nil {
				return err
			}
		}
		return c.bl.Add(ev)
	})
	// The batch is read: the budget taken ahead for it goes back.
	b.budget.release(c.credit)
	c.credit = 0
	// The batch's last byte is read: from here on the client only waits
	// for logpond.
	readAt := b.now()
	if err == nil {
		err = c.submit(true)
	}
	// Also after a failure: what was submitted is being written, and its
	// budget is freed once it is durable.
	if werr := c.waitDurable(); err == nil {
		err = werr
	}
	builders.Put(c.bl)
	c.bl = nil
	if err != nil {
		b.closeWith(c.conn, err) // open: the handler's releaseSlot writes the abort
		return false
	}
	c.open = false // complete and durable, whether or not the ACK arrives
	c.wmu.Lock()
	err = writeACK(c.conn, seq)
	c.wmu.Unlock()
	if err != nil {
		b.log.Debug("beats: write ACK", "remote", c.conn.RemoteAddr().String(), "err", err)
		return false
	}
	if b.opts.Acked != nil {
		// Measured from the batch's last byte, plus the time reading it
		// stood still for logpond: how long the batch took to cross the
		// network is the link's, and counted here it would make a slow
		// link look like a busy logpond (internal/ackwatch).
		b.opts.Acked(b.now().Sub(readAt)+c.stalled, n)
	}
	b.mu.Lock()
	b.events += int64(n)
	b.batches++
	b.bytes += batchBytes
	b.mu.Unlock()
	return true
}

// onWindow is the reader's OnWindow hook: the window started, and from now
// on the whole batch must arrive within BatchTimeout.
func (c *beatsConn) onWindow(int) error {
	return c.b.readDeadline(c.conn, c.b.opts.BatchTimeout)
}

// reserveChunk is how much budget a connection takes ahead of its
// events when the budget has room: 64 KiB, the read buffer a batch
// borrows. It is given back when the batch is read, so only connections
// reading a batch hold it: at most reserveChunk each beyond their events'
// bytes, all of it within max_inflight_bytes.
const reserveChunk = 64 << 10

// reserve is the reader's Reserve hook: budget for an event of n bytes,
// taken before the event is read. While waiting, this connection reads
// nothing more (TCP backpressure); the wait is bounded by the batch
// timeout.
func (c *beatsConn) reserve(n int) error {
	b := c.b
	size := int64(record.EventOverhead + n)
	if c.credit >= size {
		c.credit -= size
		c.held += size
		return nil
	}
	// Take reserveChunk ahead while the budget has room for it: one
	// acquisition then serves the next events of the batch, where one per
	// event made the budget's lock a cost of every event, and contended.
	if size+reserveChunk <= b.budget.total && b.budget.tryAcquire(size+reserveChunk) {
		c.credit += reserveChunk
		c.held += size
		return nil
	}
	if b.budget.tryAcquire(size) {
		c.held += size
		return nil
	}
	// No waiting while holding budget taken ahead.
	b.budget.release(c.credit)
	c.credit = 0
	// Reading stops here for logpond: that wait is acknowledgement
	// latency (serveBatch).
	start := b.now()
	defer func() { c.stalled += b.now().Sub(start) }()
	// Never wait for budget this connection holds itself: submit the
	// record being built (its events hold budget too, and the record limit
	// may exceed the whole budget) and wait for its submitted records to
	// be durable, which frees their budget.
	if err := c.submit(false); err != nil {
		return err
	}
	if err := c.waitDurable(); err != nil {
		return err
	}
	if err := b.budget.acquire(c.ctx, size, b.opts.BatchTimeout); err != nil {
		return err
	}
	c.held += size
	return nil
}

// submit writes the record being built as the next part of the batch;
// last says no part follows. The last part is written even without events
// when earlier parts said more follow, so that it closes them.
func (c *beatsConn) submit(last bool) error {
	if c.bl.Count() == 0 && (!last || c.parts == 0) {
		return nil
	}
	var flags record.Flags
	if c.parts > 0 {
		flags |= record.Cont
	}
	if !last {
		flags |= record.More
	}
	var rec []byte
	var err error
	if c.b.zs != nil {
		// Sealed by the compressor only if it keeps the record as it is:
		// no checksum over raw events the compressed record replaces.
		if rec, err = c.bl.FinishBatchUnsealed(flags, c.slot); err == nil {
			rec, err = c.b.zs.compress(c.ctx, rec)
		}
	} else {
		rec, err = c.bl.FinishBatch(flags, c.slot)
	}
	if err != nil {
		return err
	}
	stop := c.b.keepalive(c.conn, &c.wmu) // Submit may wait for journal space
	d, err := c.b.journal.Submit(c.ctx, rec)
	stop()
	c.bl.Reset(time.Now()) // Submit copied rec
	if err != nil {
		return err
	}
	c.parts++
	if !last {
		c.open = true
	}
	c.pending = append(c.pending, d)
	c.pendingHeld += c.held
	c.held = 0
	return nil
}

// waitDurable waits for every submitted record, then frees their budget.
// It returns the first failure.
func (c *beatsConn) waitDurable() error {
	if len(c.pending) == 0 {
		return nil
	}
	stop := c.b.keepalive(c.conn, &c.wmu)
	defer stop()
	var first error
	for _, d := range c.pending {
		if _, err := d.Wait(); err != nil && first == nil {
			first = err
		}
	}
	clear(c.pending)
	c.pending = c.pending[:0]
	c.b.budget.release(c.pendingHeld)
	c.pendingHeld = 0
	return first
}
