package journal

import (
	"log/slog"
	"os"
	"reflect"

	"github.com/tidwall/wal"
)

// forceClose closes the segment file of a tidwall log whose Close failed.
//
// tidwall/wal v1.2.1's Close fsyncs the segment first and returns that
// error without closing the file, so after an I/O error (EIO, a shut-down
// file system) the descriptor would leak for the life of the process and
// the device could not be unmounted. The file is an unexported field
// ("sfile"); this reaches it by reflection. TestPoisonedJournalClosesItsFiles
// guards it, so a tidwall upgrade that renames the field fails a test
// rather than leaking silently.
func forceClose(l *wal.Log, log *slog.Logger) {
	if l == nil {
		return
	}
	v := reflect.ValueOf(l).Elem().FieldByName("sfile")
	if !v.IsValid() || v.Type() != reflect.TypeFor[*os.File]() || v.IsNil() {
		log.Error("journal: cannot close the segment file of a failed tidwall log: its layout changed")
		return
	}
	f := (*os.File)(v.UnsafePointer())
	if err := f.Close(); err != nil {
		log.Warn("journal: close segment after failure", "err", err)
	}
}
