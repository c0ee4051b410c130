package main

import (
	"fmt"

	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
)

// ledgerLoss is what accept-loss does on the ledger's side: records at the
// end of the ledger that the journal no longer holds, which make logpond
// refuse to start (damage ending the open segment, or a journal that
// starts after the ledger's last LSN + 1). The open segment is sealed as
// it is and a new one starts at Next (ledger.SealOpenSegment), so that the
// lost LSNs are a damaged range that the output passes, quarantines and
// counts.
type ledgerLoss struct {
	Segment string // the open segment, sealed
	LastLSN uint64 // its last valid record
	Next    uint64 // the new open segment's first LSN
	// Lost are the lost ranges, in LSN order: damage in the middle of the
	// segment, then the end (LastLSN+1..Next-1).
	Lost []lostRange
	// CountKnown is false when no journal exists: how many records the
	// damaged end held is then unknown (Next is past the damaged LSN and
	// every output's cursor, so no LSN an output may have sent is used
	// again).
	CountKnown bool
}

// lostRange is a run of lost LSNs in the ledger's open segment.
type lostRange struct {
	Offset            int64 // where the damage begins, or the segment's end
	FirstLSN, LastLSN uint64
	Reason            string
}

func (r lostRange) records() uint64 { return r.LastLSN - r.FirstLSN + 1 }

// records is the number of LSNs lost.
func (l *ledgerLoss) records() uint64 {
	var n uint64
	for _, r := range l.Lost {
		n += r.records()
	}
	return n
}

// planLedgerLoss finds the records at the end of the ledger that the
// journal no longer holds, and where the new open segment must start; nil
// when logpond would not refuse over the ledger.
func planLedgerLoss(e *env) (*ledgerLoss, error) {
	scan, err := ledger.ScanOpenSegment(e.ledgerDir, ledger.InspectOptions{DirectIO: e.directIO})
	if err != nil {
		return nil, err
	}
	jfirst, jexists, err := journal.FirstLSNOnDisk(e.journalDir)
	if err != nil {
		return nil, err
	}
	if scan == nil {
		if jexists && jfirst > 1 {
			return nil, fmt.Errorf("the ledger %s holds no segment while the journal starts at LSN %d: check that -ledger (or -config) names this logpond's ledger directory; a ledger lost whole is not a loss accept-loss can accept", e.ledgerDir, jfirst)
		}
		return nil, nil
	}
	// What logpond refuses over: damage in the open segment from an LSN
	// the journal no longer holds, or LSNs after the ledger's last that
	// the journal does not start at.
	uncovered := scan.Damage != nil && !(jexists && jfirst <= scan.Damage.LSN)
	gap := jexists && jfirst > scan.LastLSN+1
	if !uncovered && !gap {
		return nil, nil
	}
	p := &ledgerLoss{Segment: scan.Segment, LastLSN: scan.LastLSN, Next: scan.LastLSN + 1, CountKnown: jexists}
	if jexists {
		// The journal goes on at jfirst: the LSNs before it that the
		// segment does not hold are lost.
		p.Next = max(p.Next, jfirst)
	} else {
		// No journal to say where LSNs went on: past the damaged record
		// (it was written, and may have been sent) and past every
		// output's cursor, so that no new record takes an LSN (a document
		// id) that reached Elasticsearch.
		if scan.End != nil {
			p.Next = max(p.Next, scan.End.FirstLSN+1)
		}
		cursors, err := ledger.ReadCursors(e.ledgerDir)
		if err != nil {
			return nil, err
		}
		for _, c := range cursors {
			p.Next = max(p.Next, c.LSN+1)
		}
	}
	p.Next = max(p.Next, scan.FirstLSN+1)
	for _, d := range scan.Lost {
		p.Lost = append(p.Lost, lostRange{Offset: d.Start, FirstLSN: d.FirstLSN, LastLSN: d.LastLSN, Reason: d.Reason})
	}
	if p.Next > p.LastLSN+1 {
		end := lostRange{FirstLSN: p.LastLSN + 1, LastLSN: p.Next - 1}
		if d := scan.End; d != nil {
			end.Offset, end.Reason = d.Start, d.Reason
		} else {
			end.Offset = 0
			end.Reason = fmt.Sprintf("the segment ends cleanly after LSN %d: its last writes are gone from the disk", p.LastLSN)
		}
		if jexists {
			end.Reason += fmt.Sprintf("; the journal starts at LSN %d", jfirst)
		} else {
			end.Reason += "; no journal exists: how many records are lost is unknown"
		}
		p.Lost = append(p.Lost, end)
	}
	return p, nil
}

// printLedgerLoss prints what accept-loss found, or did, on the ledger.
func printLedgerLoss(e *env, p *ledgerLoss, dry bool) {
	w := e.stdout
	lost, would := "lost", "was "
	if dry {
		lost, would = "would be lost", "would be "
	}
	fmt.Fprintf(w, "ledger records the journal no longer holds: acknowledged, in neither store, %s:\n", lost)
	for _, r := range p.Lost {
		records := "1 record"
		if n := r.records(); n != 1 {
			records = fmt.Sprintf("%d records", n)
		}
		if !p.CountKnown && r.LastLSN == p.Next-1 {
			records = "at least " + records
		}
		fmt.Fprintf(w, "  LSNs %d–%d (%s, events unknown) in %s at offset %d: %s\n", r.FirstLSN, r.LastLSN, records, p.Segment, r.Offset, r.Reason)
	}
	fmt.Fprintf(w, "the open segment %s %ssealed as it is (its last valid record is LSN %d) and a new one %sstarted at LSN %d; the output passes the lost range (quarantined, counted) and delivers every other record\n",
		p.Segment, would, p.LastLSN, would, p.Next)
}

// ledgerLossJSON is the --json form of the ledger's part.
func ledgerLossJSON(p *ledgerLoss) any {
	if p == nil {
		return nil
	}
	out := struct {
		Segment    string     `json:"segment"`
		LastLSN    uint64     `json:"last_valid_lsn"`
		NextLSN    uint64     `json:"next_lsn"`
		Lost       []lostJSON `json:"lost"`
		Records    uint64     `json:"lost_records"`
		CountKnown bool       `json:"lost_records_known"`
	}{Segment: p.Segment, LastLSN: p.LastLSN, NextLSN: p.Next, Lost: []lostJSON{}, Records: p.records(), CountKnown: p.CountKnown}
	for _, r := range p.Lost {
		out.Lost = append(out.Lost, lostJSON{p.Segment, r.Offset, r.FirstLSN, r.LastLSN, r.records(), nil, r.Reason})
	}
	return out
}
