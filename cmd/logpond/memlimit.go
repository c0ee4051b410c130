package main

import (
	"log/slog"
	"runtime/debug"

	"github.com/logpond/logpond/conf"
)

// applyMemoryLimit gives the Go collector a soft memory limit
// (runtime/debug.SetMemoryLimit) of 90% of the configuration's memory
// formula (conf.Memory, docs/operations.md), so that garbage is collected
// before the process grows past what its bounded buffers need, rather than
// when the heap has doubled. The 10% are for what the limit does not
// count (the program's code) and what the collector frees late: with
// them, the process stays within the formula. GOMEMLIMIT in the environment (gomemlimit, its
// value or "") wins: the runtime has applied it already. It logs which
// limit applies and returns a function that restores the previous limit.
func applyMemoryLimit(cfg *conf.Config, gomemlimit string, log *slog.Logger) (restore func()) {
	m := cfg.Memory()
	if gomemlimit != "" {
		log.Info("memory limit from GOMEMLIMIT", "gomemlimit", gomemlimit,
			"limit_bytes", debug.SetMemoryLimit(-1), "formula_bytes", m.Total())
		return func() {}
	}
	limit := m.Total() / 10 * 9
	prev := debug.SetMemoryLimit(limit)
	log.Info("memory limit from the configuration (docs/operations.md, Memory; GOMEMLIMIT overrides it)",
		"limit_bytes", limit, "formula_bytes", m.Total(), "input", m.Input, "connections", m.Connections, "input_compression", m.InputCompression, "journal_tail", m.JournalTail,
		"journal_write", m.JournalWrite, "journal_read", m.JournalRead, "ledger", m.Ledger, "output", m.Output, "overhead", m.Overhead)
	return func() { debug.SetMemoryLimit(prev) }
}
