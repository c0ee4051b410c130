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

// presize gives the in-memory copy of an empty log's tail segment a capacity
// of n bytes, and reports whether it could.
//
// tidwall keeps the whole tail segment in memory and grows that buffer with
// append. For large slices Go grows by about 1.25×, so every byte was copied
// about four more times, into freshly faulted pages: measured here, that
// made a 64 KiB append cost 3× a plain write+fsync. A generation is at most
// about segment_bytes + max_group_bytes, so one allocation of that size
// removes the copies; its pages are touched only as records are written.
//
// reuse, when its capacity is at least n, is used instead of a new
// allocation: the buffer of the generation rotation just closed. Its pages
// are already faulted in, so the new generation's appends do not pay a
// page fault every 4 KiB (profiles under beatsbench counted those in the
// copies), and a rotation does not allocate (and the GC later clear) tens
// of MiB on the ack path.
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
