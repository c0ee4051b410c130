// Package lumberjack reads the Lumberjack v2 protocol that Beats'
// output.logstash speaks, hardened against hostile clients: every size a
// client declares is checked against a limit before anything is allocated
// or read, decompression is capped, and each violation is a
// *ProtocolError naming what was wrong. It is built on go-lumber's protocol
// constants; go-lumber's own server reader sizes allocations from
// client-declared numbers and inflates without a cap, so it is not used.
//
// # Frames (all integers big-endian)
//
//	'2' 'W' count:u32                      window: the next count events form a batch
//	'2' 'J' seq:u32 len:u32 payload        one event, raw JSON
//	'2' 'C' len:u32 zlib(frames)           compressed frames (J, or C nested)
//	'2' 'A' seq:u32                        acknowledgement, server → client
//
// A batch is acknowledged with the sequence number of its last event.
package lumberjack

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	v2 "github.com/elastic/go-lumber/protocol/v2"
	"github.com/klauspost/compress/zlib"

	"github.com/logpond/logpond/internal/jsonvalid"
)

// Limits bound what one client can make the reader allocate or do. Zero
// values are invalid; use DefaultLimits as a base.
type Limits struct {
	// MaxWindow is the most events one window may announce.
	MaxWindow int
	// MaxEventBytes is the largest event (one J payload).
	MaxEventBytes int
	// MaxBatchBytes bounds a batch's bytes after decompression: the sum of
	// its events and of everything inflated from its C frames.
	MaxBatchBytes int64
	// MaxNesting is how deeply C frames may be nested (1: no nesting).
	MaxNesting int
	// ValidateJSON refuses events that are not valid JSON.
	ValidateJSON bool
}

// ReadBatchHook, when set on a Reader, is called once a window frame has
// been read and accepted, with its event count, before any event is read:
// the place to switch from an idle timeout to a batch timeout.
type ReadBatchHook func(events int) error

// DefaultLimits fit real Beats traffic: Filebeat's default window is 2048
// (bulk_max_size) and real users ship 10 MiB lines.
func DefaultLimits() Limits {
	return Limits{MaxWindow: 16384, MaxEventBytes: 16 << 20, MaxBatchBytes: 256 << 20, MaxNesting: 2, ValidateJSON: true}
}

// Reasons a ProtocolError gives; stable, for metrics labels.
const (
	ReasonBadVersion     = "bad_version"
	ReasonUnknownFrame   = "unknown_frame"
	ReasonWindowTooLarge = "window_too_large"
	ReasonEmptyWindow    = "empty_window"
	ReasonEventTooLarge  = "event_too_large"
	ReasonBatchTooLarge  = "batch_too_large"
	ReasonNesting        = "nesting_too_deep"
	ReasonCompression    = "bad_compression"
	ReasonInvalidJSON    = "invalid_json"
	ReasonTruncated      = "truncated"
)

// ErrBetweenBatches marks an error ReadBatch met while it waited for the
// first byte of a batch, when nothing of one had arrived: the client sent
// nothing after its last batch. A read deadline that expires there is an
// idle connection, which is normal (Beats send nothing while they have
// nothing to send); one that expires once a batch has begun is a stalled
// batch. ReadBatch wraps such errors with it; a clean close there is
// io.EOF, unwrapped.
var ErrBetweenBatches = errors.New("lumberjack: no batch began")

// ProtocolError is a client's violation of the protocol or of a limit. The
// connection must be closed; nothing of the batch was acknowledged.
type ProtocolError struct {
	Reason string
	Detail string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("lumberjack: %s: %s", e.Reason, e.Detail)
}

func protoErr(reason, format string, args ...any) error {
	return &ProtocolError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Reader reads batches from one connection. Not safe for concurrent use.
type Reader struct {
	// OnWindow, if set, is called when a window has been accepted.
	OnWindow ReadBatchHook
	// Reserve, if set, is called with an event's size once its header
	// passed the limits and before its payload is allocated or read: the
	// place to take memory budget (and to block, which stops reading).
	Reserve func(n int) error

	idle   *bufio.Reader // the connection's own small buffer
	batch  *bufio.Reader // from batchBuffers while a batch is read, or holds unread bytes
	limits Limits
	event  []byte // reused payload buffer; grows up to MaxEventBytes
	zbufs  []*bufio.Reader
}

// Read buffers. A connection waits for its next batch, which may be a long
// time, holding only its idleBufferBytes buffer; once the batch's first
// byte is there it borrows a batchBufferBytes buffer, which reads from the
// idle one (bufio hands a large read straight to the connection once the
// small buffer is empty) and goes back to the pool when the batch left no
// unread bytes in it. A window of 2048 1 KiB events is 2 MiB: large reads
// make fewer system calls on the ack path (docs/design.md, "Measured
// choices on the ack path"). Memory: at most max_connections × both sizes.
const (
	idleBufferBytes  = 16 << 10
	batchBufferBytes = 64 << 10
)

var batchBuffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, batchBufferBytes) }}

// NewReader reads Lumberjack v2 from r.
func NewReader(r io.Reader, limits Limits) *Reader {
	return &Reader{idle: bufio.NewReaderSize(r, idleBufferBytes), limits: limits}
}

// batchReader returns the buffer to read a batch through, borrowing one
// once the batch has begun to arrive. An error comes from the wait for
// its first byte: io.EOF for a clean close, anything else wrapped with
// ErrBetweenBatches.
func (r *Reader) batchReader() (*bufio.Reader, error) {
	if r.batch != nil {
		return r.batch, nil
	}
	if _, err := r.idle.Peek(1); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("%w: %w", ErrBetweenBatches, err)
	}
	r.batch = batchBuffers.Get().(*bufio.Reader)
	r.batch.Reset(r.idle)
	return r.batch, nil
}

// returnBatchReader gives the batch buffer back once nothing is left in it
// (a client that pipelines may have sent part of its next batch).
func (r *Reader) returnBatchReader() {
	if r.batch != nil && r.batch.Buffered() == 0 {
		r.Release()
	}
}

// Release gives back the batch buffer the Reader holds, dropping whatever
// is buffered in it; call it when the connection is done.
func (r *Reader) Release() {
	if r.batch != nil {
		r.batch.Reset(nil)
		batchBuffers.Put(r.batch)
		r.batch = nil
	}
}

// batchState tracks one window while it is read.
type batchState struct {
	want, got int
	bytes     int64
	lastSeq   uint32
	fn        func([]byte) error
}

// ReadBatch reads the next window and its events, calling fn once per
// event in order with the event's bytes, valid only during the call (copy
// what you keep). It returns the number of events and the sequence number
// to acknowledge. io.EOF means the client closed cleanly between batches;
// any other error met before the batch's first byte wraps
// ErrBetweenBatches.
func (r *Reader) ReadBatch(fn func(event []byte) error) (int, uint32, error) {
	br, err := r.batchReader()
	if err != nil {
		return 0, 0, err
	}
	typ, err := r.frameType(br, true)
	if err != nil {
		return 0, 0, err
	}
	if typ != v2.CodeWindowSize {
		return 0, 0, protoErr(ReasonUnknownFrame, "expected a window frame 'W', got %q", typ)
	}
	n, err := readWord(br)
	if err != nil {
		return 0, 0, err
	}
	if n == 0 {
		return 0, 0, protoErr(ReasonEmptyWindow, "window of 0 events")
	}
	if uint64(n) > uint64(r.limits.MaxWindow) {
		return 0, 0, protoErr(ReasonWindowTooLarge, "window of %d events exceeds max_window %d", n, r.limits.MaxWindow)
	}
	if r.OnWindow != nil {
		if err := r.OnWindow(int(n)); err != nil {
			return 0, 0, err
		}
	}
	b := &batchState{want: int(n), fn: fn}
	for b.got < b.want {
		if err := r.frame(br, b, 0); err != nil {
			return b.got, 0, err
		}
	}
	r.returnBatchReader()
	if cap(r.event) > keepEventBuffer {
		r.event = nil // an idle connection must not keep a huge buffer
	}
	return b.got, b.lastSeq, nil
}

// keepEventBuffer is the largest event buffer a Reader keeps between
// batches.
const keepEventBuffer = 64 << 10

// frameType reads a version byte and a frame type. atStart reports a clean
// EOF before the version byte as io.EOF.
func (r *Reader) frameType(br *bufio.Reader, atStart bool) (byte, error) {
	ver, err := br.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) && atStart {
			return 0, io.EOF
		}
		return 0, truncated(err)
	}
	if ver != v2.CodeVersion {
		return 0, protoErr(ReasonBadVersion, "version byte %q, want '2' (Lumberjack v2)", ver)
	}
	typ, err := br.ReadByte()
	if err != nil {
		return 0, truncated(err)
	}
	return typ, nil
}

// frame reads one J or C frame of the current batch from br.
func (r *Reader) frame(br *bufio.Reader, b *batchState, depth int) error {
	typ, err := r.frameType(br, false)
	if err != nil {
		return err
	}
	switch typ {
	case v2.CodeJSONDataFrame:
		return r.jsonFrame(br, b)
	case v2.CodeCompressed:
		return r.compressedFrame(br, b, depth)
	case v2.CodeWindowSize:
		return protoErr(ReasonUnknownFrame, "window frame inside a batch (%d of %d events read)", b.got, b.want)
	}
	return protoErr(ReasonUnknownFrame, "frame type %q", typ)
}

func (r *Reader) jsonFrame(br *bufio.Reader, b *batchState) error {
	seq, err := readWord(br)
	if err != nil {
		return err
	}
	n, err := readWord(br)
	if err != nil {
		return err
	}
	// Checked before allocating: the length is the client's word.
	if uint64(n) > uint64(r.limits.MaxEventBytes) {
		return protoErr(ReasonEventTooLarge, "event of %d bytes exceeds max_event_bytes %d", n, r.limits.MaxEventBytes)
	}
	if b.bytes+int64(n) > r.limits.MaxBatchBytes {
		return protoErr(ReasonBatchTooLarge, "batch exceeds %d bytes", r.limits.MaxBatchBytes)
	}
	if r.Reserve != nil {
		if err := r.Reserve(int(n)); err != nil {
			return err
		}
	}
	// An event that fits the read buffer is checked and handed to fn in
	// place (one copy fewer per event); a bigger one is read out into the
	// reused event buffer.
	var ev []byte
	inPlace := int(n) <= br.Size()
	if inPlace {
		var err error
		if ev, err = br.Peek(int(n)); err != nil {
			return truncated(err)
		}
	} else {
		if cap(r.event) < int(n) {
			r.event = make([]byte, n)
		}
		ev = r.event[:n]
		if err := readFull(br, ev); err != nil {
			return err
		}
	}
	// logpond's own validator (internal/jsonvalid): the general-purpose
	// ones cost a large share of the server's CPU (docs/design.md).
	if r.limits.ValidateJSON && !jsonvalid.Valid(ev) {
		return protoErr(ReasonInvalidJSON, "event %d (sequence %d) is not valid JSON", b.got+1, seq)
	}
	b.bytes += int64(n)
	b.got++
	b.lastSeq = seq
	if b.got > b.want {
		return protoErr(ReasonUnknownFrame, "more events than the window announced (%d)", b.want)
	}
	err = b.fn(ev)
	if inPlace {
		// Only now: ev aliases the read buffer until then. Discard cannot
		// fail here, the bytes were peeked.
		_, _ = br.Discard(int(n))
	}
	return err
}

func (r *Reader) compressedFrame(br *bufio.Reader, b *batchState, depth int) error {
	if depth+1 > r.limits.MaxNesting {
		return protoErr(ReasonNesting, "compressed frames nested %d deep (at most %d)", depth+1, r.limits.MaxNesting)
	}
	word, err := readWord(br)
	if err != nil {
		return err
	}
	n := int64(word)
	if b.bytes+n > r.limits.MaxBatchBytes {
		return protoErr(ReasonBatchTooLarge, "compressed frame of %d bytes exceeds the batch limit %d", n, r.limits.MaxBatchBytes)
	}
	before := b.bytes
	compressed := io.LimitReader(br, n)
	zr, err := zlib.NewReader(compressed)
	if err != nil {
		return zlibErr(err)
	}
	defer zr.Close()
	// Every inflated byte counts against the batch: a zip bomb stops at
	// the limit instead of filling memory.
	inflated := &capReader{r: zr, left: r.limits.MaxBatchBytes - b.bytes}
	zb := r.zbuf(depth, inflated)
	for {
		if _, err := zb.Peek(1); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return wrapInflate(err)
		}
		if err := r.frame(zb, b, depth+1); err != nil {
			return wrapInflate(err)
		}
	}
	// The batch used at least everything inflated here (the events inside
	// were counted as they were read, so take the larger).
	b.bytes = max(b.bytes, before+inflated.read)
	// The compressed payload must be consumed exactly: leftover bytes would
	// be read as the next frame.
	if rest, _ := io.Copy(io.Discard, compressed); rest > 0 {
		return protoErr(ReasonCompression, "%d bytes after the end of the zlib stream", rest)
	}
	return nil
}

// zbuf returns a reusable buffered reader for nesting level depth.
func (r *Reader) zbuf(depth int, src io.Reader) *bufio.Reader {
	for len(r.zbufs) <= depth {
		r.zbufs = append(r.zbufs, bufio.NewReaderSize(nil, 16<<10))
	}
	r.zbufs[depth].Reset(src)
	return r.zbufs[depth]
}

// capReader fails once more than left bytes are read from r.
type capReader struct {
	r    io.Reader
	left int64
	read int64
}

var errInflateCap = errors.New("inflated past the batch limit")

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// Probe for one more byte: a stream that ends exactly at the limit
		// is fine.
		var one [1]byte
		if n, _ := c.r.Read(one[:]); n > 0 {
			return 0, errInflateCap
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.read += int64(n)
	return n, err
}

func wrapInflate(err error) error {
	var pe *ProtocolError
	switch {
	case errors.As(err, &pe):
		return err
	case errors.Is(err, errInflateCap):
		return protoErr(ReasonBatchTooLarge, "compressed frame inflates past the batch limit")
	}
	return zlibErr(err)
}

func zlibErr(err error) error {
	return protoErr(ReasonCompression, "zlib: %v", err)
}

// readWord reads one big-endian 32-bit word of a frame from br. It reads
// in br's buffer: a header array passed to io.ReadFull would escape to
// the heap, an allocation for every event.
func readWord(br *bufio.Reader) (uint32, error) {
	b, err := br.Peek(4)
	if err != nil {
		return 0, truncated(err)
	}
	w := binary.BigEndian.Uint32(b)
	_, _ = br.Discard(4) // cannot fail: the bytes were peeked
	return w, nil
}

func readFull(r io.Reader, b []byte) error {
	if _, err := io.ReadFull(r, b); err != nil {
		return truncated(err)
	}
	return nil
}

// truncated turns an unexpected end of stream into a ProtocolError; other
// errors (timeouts, resets) pass through for the caller to report.
func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return protoErr(ReasonTruncated, "stream ended inside a frame")
	}
	return err
}
