// Package ledger is logpond's large store: records moved from the journal by
// the flusher, in segment files named by first LSN and written and read with
// O_DIRECT, drained by outputs through named cursors (design.md §5).
//
// Its contract: a record is "in the ledger" only after its segment was
// written, fdatasynced, and (for a new segment) the directory fsynced;
// synced bytes are never rewritten; a segment is deleted only when every
// cursor is past it and retention allows. The ledger never imports the
// journal: the flusher in package server moves records between them.
package ledger
