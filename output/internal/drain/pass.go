package drain

import (
	"fmt"

	"github.com/logpond/logpond/ledger"
)

// Pass handles what r's last Next stopped at when it is not a record: a
// damaged range (r.Damage) is quarantined, logged and counted; a range
// retention deleted before the output read it (r.Skipped, max_lag) is
// logged and counted. Either way its records are added to tr as done, with
// no event, so that the cursor moves past them. Pass returns false when r
// stopped at a record, which the caller then handles; an error only from
// tr (a bug), which should stop the output. r must skip damage
// (ledger.Reader.SkipDamage).
func (s *Source) Pass(r *ledger.Reader, tr *Tracker) (bool, error) {
	if d := r.Damage(); d != nil {
		return true, s.quarantine(d, tr)
	}
	if sk := r.Skipped(); sk != nil {
		// Deleted by max_lag retention before this output read them:
		// nothing else can be done, the records are gone.
		s.skips.Pass(s.opts.Log, sk)
		return true, tr.AddDone(sk.FirstLSN, sk.LastLSN)
	}
	return false, nil
}

// quarantine keeps a damaged range the reader passed (its bytes and
// description, in the ledger's quarantine directory), says so once as an
// ERROR, and counts its records done: their events cannot be trusted, so
// none is sent, and the cursor may move past them. A range that cannot be
// quarantined (the ledger's device failing) is still logged in full and
// passed: its bytes stay in the segment until retention deletes it.
func (s *Source) quarantine(d *ledger.Damage, tr *Tracker) error {
	l := s.opts.Ledger
	path, qerr := l.Quarantine(*d)
	attrs := []any{"segment", d.Segment, "start_offset", d.Start, "end_offset", d.End,
		"first_lsn", d.FirstLSN, "last_lsn", d.LastLSN, "records_lost", d.Records(), "reason", d.Reason,
		"inspect", fmt.Sprintf("ledgerctl -ledger %s verify", l.Dir())}
	if qerr != nil {
		attrs = append(attrs, "quarantine_err", qerr)
	} else {
		attrs = append(attrs, "quarantined", path)
	}
	msg := "damaged ledger records skipped: their events are lost and not " + s.opts.Sent + "; every other event is " + s.opts.Sent
	if d.Records() == 0 {
		msg = "damaged bytes in the ledger skipped: no record lost (garbage where padding belonged)"
	}
	s.opts.Log.Error(msg, attrs...)
	s.damagedRanges.Add(1)
	s.damagedRecords.Add(int64(d.Records()))
	if d.Records() == 0 {
		return nil
	}
	return tr.AddDone(d.FirstLSN, d.LastLSN)
}
