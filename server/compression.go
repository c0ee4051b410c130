package server

import (
	"sync"

	"github.com/logpond/logpond/conf"
	"github.com/logpond/logpond/ledger"
)

// compressionTally counts, since logpond started, the bytes of the
// records appended to the ledger before and after compression, over every
// ledger instance it opened: a failed ledger is replaced by a fresh open
// of its directory (reopen.go), whose own counters start at zero, and the
// metrics are counters, which must not go back. Safe for concurrent use.
type compressionTally struct {
	mu sync.Mutex
	// replaced sums the instances no longer in use.
	replaced ledger.CompressionStats
	cur      *ledger.Ledger
}

// opened makes l the instance counted from now on; the one it replaces
// keeps the counts it reached (a closed ledger's counters stay readable).
func (t *compressionTally) opened(l *ledger.Ledger) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == l {
		return
	}
	if t.cur != nil {
		c := t.cur.Compression()
		t.replaced.RawBytes += c.RawBytes
		t.replaced.StoredBytes += c.StoredBytes
	}
	t.cur = l
}

// totals are the bytes appended since the start, uncompressed (raw) and
// as stored.
func (t *compressionTally) totals() (raw, stored int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	raw, stored = t.replaced.RawBytes, t.replaced.StoredBytes
	if t.cur != nil {
		c := t.cur.Compression()
		raw, stored = raw+c.RawBytes, stored+c.StoredBytes
	}
	return raw, stored
}

// compressionState is the ledger's compression as the admin endpoints
// report it.
type compressionState struct {
	codec       string // conf.CompressionZstd or conf.CompressionNone
	level       string // the level's name when compressed, "" with none
	raw, stored int64
}

// ratio is stored over raw bytes since the start: the fraction of its
// uncompressed size a record takes in the ledger. It is 1 before any
// record was appended: no saving is measured yet, and a capacity
// estimate divided by it stays the uncompressed one.
func (c compressionState) ratio() float64 {
	if c.raw <= 0 {
		return 1
	}
	return float64(c.stored) / float64(c.raw)
}

// compression reads the tally with the configured codec and level.
func (s *Server) compression() compressionState {
	c := compressionState{codec: conf.CompressionNone}
	if rc := s.cfg.Ledger.RecordCompression(); rc.Enabled() {
		c.codec, c.level = rc.Codec.String(), rc.Level.String()
	}
	c.raw, c.stored = s.metrics.compression.totals()
	return c
}
