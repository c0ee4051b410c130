package journal

import (
	"errors"
	"log/slog"
	"os"
	"reflect"
	"unsafe"

	"github.com/tidwall/wal"
)

// Traps in tidwall/wal v1.2.1 that the journal works around by reaching
// unexported fields, and one thing it cannot do without them (writing into
// a recycled file). All are guarded by tests (TestTidwallLayout, and the
// power-loss tests), so a tidwall upgrade that changes the layout fails a
// test instead of silently leaking, slowing down or writing elsewhere.

// forceClose closes the segment file of a tidwall log whose Close failed.
//
// tidwall's Close fsyncs the segment first and returns that error without
// closing the file, so after an I/O error (EIO, a shut-down file system)
// the descriptor would leak for the life of the process and the device
// could not be unmounted.
func forceClose(l *wal.Log, log *slog.Logger) {
	f, ok := tidwallFile(l)
	if !ok {
		log.Error("journal: cannot close the segment file of a failed tidwall log: its layout changed")
		return
	}
	if err := f.Close(); err != nil {
		log.Warn("journal: close segment after failure", "err", err)
	}
}

// closeLog closes l (raw is the tidwall log under it) and, when Close
// fails, the segment file Close would leak. Every close of a tidwall log
// goes through it. It returns Close's error.
func closeLog(l walLog, raw *wal.Log, log *slog.Logger) error {
	err := l.Close()
	if err != nil && !errors.Is(err, wal.ErrClosed) {
		forceClose(raw, log)
	}
	return err
}

// replaceEmptySegmentFile makes a log that holds no entry write its
// segment through f, from f's current offset, instead of through the file
// tidwall created, and returns that file (the caller closes it). It
// reports false, changing nothing, when the log is not empty or tidwall's
// layout changed. tidwall creates a new log's segment with O_TRUNC and
// writes it sequentially through one descriptor without ever reading it
// back, so the only way to have it overwrite a recycled file (recycle.go)
// is to hand it that file's descriptor.
func replaceEmptySegmentFile(l *wal.Log, f *os.File) (*os.File, bool) {
	if !canReplaceSegmentFile(l) {
		return nil, false
	}
	old, _ := tidwallFile(l)
	v := reflect.ValueOf(l).Elem().FieldByName("sfile")
	reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem().Set(reflect.ValueOf(f))
	return old, true
}

// canReplaceSegmentFile reports whether replaceEmptySegmentFile would
// succeed on l.
func canReplaceSegmentFile(l *wal.Log) bool {
	if li, err := l.LastIndex(); err != nil || li != 0 {
		return false
	}
	if ebuf, ok := tailBuffer(l); !ok || ebuf.Len() != 0 {
		return false
	}
	_, ok := tidwallFile(l)
	return ok
}

func tidwallFile(l *wal.Log) (*os.File, bool) {
	if l == nil {
		return nil, false
	}
	v := reflect.ValueOf(l).Elem().FieldByName("sfile")
	if !v.IsValid() || v.Type() != reflect.TypeFor[*os.File]() || v.IsNil() {
		return nil, false
	}
	return (*os.File)(v.UnsafePointer()), true
}

// forgetWritten empties tidwall's in-memory copy of the log's segment,
// keeping its buffer for the next write when its capacity is at most keep,
// and reports whether it could.
//
// tidwall keeps every entry of its tail segment in memory (for its Read,
// which the journal never calls: the flusher reads the journal's own tail
// cache, or the files) and appends each batch to that copy before writing
// the batch's bytes to the file. Emptied after every write, the copy holds
// one group at a time instead of up to segment_bytes. tidwall uses the
// copy's length for nothing else: the journal opens it with a segment size
// it never reaches (it rotates generations itself), and writes go through
// the file's own offset. The entry positions (epos) go with it.
func forgetWritten(l *wal.Log, keep int) bool {
	ebuf, ok := tailBuffer(l)
	if !ok {
		return false
	}
	// tailBuffer checked that there is exactly one segment.
	epos := reflect.ValueOf(l).Elem().FieldByName("segments").Index(0).Elem().FieldByName("epos")
	if epos.Kind() != reflect.Slice {
		return false
	}
	buf := reflect.NewAt(ebuf.Type(), unsafe.Pointer(ebuf.UnsafeAddr())).Elem()
	if ebuf.Cap() <= keep {
		buf.SetLen(0)
	} else {
		buf.Set(reflect.Zero(ebuf.Type()))
	}
	reflect.NewAt(epos.Type(), unsafe.Pointer(epos.UnsafeAddr())).Elem().SetLen(0)
	return true
}

// presize gives the in-memory copy of an empty log's tail segment a capacity
// of n bytes, and reports whether it could. forgetWritten empties that copy
// after every write, so it needs to hold one group; n of them at once
// spares the appends of a group the copies of a buffer grown by append.
//
// reuse, when its capacity is at least n, is used instead of a new
// allocation: the buffer of the generation rotation just closed, so that
// a rotation does not allocate on the ack path.
func presize(l *wal.Log, n int, reuse []byte) bool {
	ebuf, ok := tailBuffer(l)
	if !ok || ebuf.Len() != 0 {
		return false
	}
	buf := reuse[:0]
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	settable := reflect.NewAt(ebuf.Type(), unsafe.Pointer(ebuf.UnsafeAddr())).Elem()
	settable.Set(reflect.ValueOf(buf))
	return true
}

// tailBuffer returns tidwall's in-memory copy of the log's only segment.
func tailBuffer(l *wal.Log) (reflect.Value, bool) {
	if l == nil {
		return reflect.Value{}, false
	}
	segs := reflect.ValueOf(l).Elem().FieldByName("segments")
	if !segs.IsValid() || segs.Kind() != reflect.Slice || segs.Len() != 1 {
		return reflect.Value{}, false
	}
	seg := segs.Index(0)
	if seg.Kind() != reflect.Pointer || seg.IsNil() {
		return reflect.Value{}, false
	}
	ebuf := seg.Elem().FieldByName("ebuf")
	if !ebuf.IsValid() || ebuf.Type() != reflect.TypeFor[[]byte]() {
		return reflect.Value{}, false
	}
	return ebuf, true
}

// takeTailBuffer returns the tail segment buffer of a log about to be
// closed, for the next generation (nil if it cannot). The journal never
// reads through tidwall, so nothing uses the buffer once the log is
// closed.
func takeTailBuffer(l *wal.Log) []byte {
	ebuf, ok := tailBuffer(l)
	if !ok {
		return nil
	}
	return ebuf.Bytes()
}
