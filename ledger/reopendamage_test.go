package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// readPassingDamage reads l from its oldest record with a Reader that
// passes damage, and returns the LSNs read and the damaged ranges met.
func readPassingDamage(t *testing.T, l *Ledger, pad int) (read []uint64, lost [][2]uint64) {
	t.Helper()
	r := l.Reader(1)
	defer r.Close()
	r.SkipDamage()
	for r.Next() {
		if d := r.Damage(); d != nil {
			lost = append(lost, [2]uint64{d.FirstLSN, d.LastLSN})
			continue
		}
		if string(r.Record()) != string(rec(t, r.LSN(), pad)) {
			t.Fatalf("LSN %d: wrong content", r.LSN())
		}
		read = append(read, r.LSN())
	}
	if r.Err() != nil {
		t.Fatalf("reader stopped: %v", r.Err())
	}
	return read, lost
}

// lsnsBut is from..to without the LSNs of the ranges in lost.
func lsnsBut(from, to uint64, lost [][2]uint64) []uint64 {
	var out []uint64
	for lsn := from; lsn <= to; lsn++ {
		if !slices.ContainsFunc(lost, func(r [2]uint64) bool { return lsn >= r[0] && lsn <= r[1] }) {
			out = append(out, lsn)
		}
	}
	return out
}

// TestReopenSettlesOpenSegmentDamageAsOpenDoes: damage in synced bytes of
// the open segment met by Reopen (the flusher's recovery after a failed
// write or fdatasync) is settled by the rule Open follows at a restart,
// never refused for ever while the flusher retries: cut and replayed when
// the journal still holds the records; sealed as it is, with a reader
// passing the damaged range, when it does not. Reopen knows where the
// failed instance's synced records end, so it also seals damage at their
// end, which Open (which cannot tell it from a torn write) refuses; and
// it cuts what was written after them but never synced before sealing.
func TestReopenSettlesOpenSegmentDamageAsOpenDoes(t *testing.T) {
	const pad = 100
	cases := []struct {
		name     string
		damaged  uint64 // the record whose body is damaged (one write per record)
		unsynced bool   // records 41–45 were written after 40, and their fdatasync failed
		covered  func(uint64) bool
		// Reopen keeps up to kept (the reopened ledger's last LSN) and a
		// reader passes lost; repaired: Reopen cut damage to synced bytes
		// (Recovery().Damage). refuse: Reopen fails with an UnsyncedError
		// from that LSN on.
		kept     uint64
		lost     [][2]uint64
		repaired bool
		refuse   uint64
		// openRefuses: Open on the same bytes refuses (it cannot tell
		// where the records end).
		openRefuses bool
	}{
		{name: "middle, journal released it", damaged: 20, covered: coveredFrom(41), kept: 40, lost: [][2]uint64{{20, 20}}},
		{name: "middle, journal holds it", damaged: 20, covered: coveredFrom(20), kept: 19, repaired: true},
		{name: "last synced record, journal released it", damaged: 40, covered: coveredFrom(41), kept: 40, lost: [][2]uint64{{40, 40}}, openRefuses: true},
		{name: "middle, never-synced records after the last synced one", damaged: 20, unsynced: true, covered: coveredFrom(41), kept: 40, lost: [][2]uint64{{20, 20}}},
		{name: "middle, never-synced records the journal no longer holds", damaged: 20, unsynced: true, covered: coveredFrom(43), refuse: 41},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := testOpts(t, true)
			opts.SegmentBytes = 1 << 20
			fail := failFdatasync(&opts)
			l := mustOpen(t, dir, opts)
			fill(t, l, 1, 40, pad, true) // record n is the write at block n-1
			seg := filepath.Join(dir, segmentName(1))
			if tc.unsynced {
				*fail = true
				for lsn := uint64(41); lsn <= 45; lsn++ {
					if err := l.Append(lsn, rec(t, lsn, pad)); err != nil {
						t.Fatal(err)
					}
				}
				if err := l.Sync(); !errors.Is(err, ErrPoisoned) {
					t.Fatalf("Sync with a failing fdatasync: %v", err)
				}
				*fail = false
			}
			b := readFile(t, seg)
			b[int64(tc.damaged-1)*BlockSize+frameHeader+40] ^= 0xff
			if err := os.WriteFile(seg, b, 0o640); err != nil {
				t.Fatal(err)
			}
			l.Close()

			// What Open (a restart) does with the same bytes.
			opened := copyDir(t, dir)
			oopts := opts
			oopts.Covered = tc.covered
			if lo, err := Open(opened, oopts); tc.openRefuses != (err != nil) {
				t.Fatalf("Open: %v, want refusal %v", err, tc.openRefuses)
			} else if err == nil {
				lo.Close()
			}

			l2, err := l.Reopen(tc.covered)
			if tc.refuse != 0 {
				var ue *UnsyncedError
				if !errors.As(err, &ue) || ue.FirstLSN != tc.refuse {
					t.Fatalf("Reopen: %v, want an UnsyncedError from LSN %d", err, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatalf("Reopen: %v", err)
			}
			if l2.LastLSN() != tc.kept {
				t.Fatalf("reopened at LSN %d, want %d", l2.LastLSN(), tc.kept)
			}
			if rp := l2.Recovery(); tc.repaired != (rp != nil && rp.Damage) {
				t.Fatalf("recovery %+v, want damage repaired %v", rp, tc.repaired)
			}
			// Writing goes on after what was kept (the journal replays the
			// rest), and a reader passes only the damaged range.
			fill(t, l2, tc.kept+1, 50, pad, false)
			read, lost := readPassingDamage(t, l2, pad)
			if want := lsnsBut(1, 50, tc.lost); !slices.Equal(read, want) || !slices.Equal(lost, tc.lost) {
				t.Fatalf("read %s, damaged ranges %v; want %s, %v", brief(read), lost, brief(want), tc.lost)
			}
			l2.Close()
			// A restart agrees.
			oopts.Covered = coveredFrom(51)
			l3, err := Open(dir, oopts)
			if err != nil {
				t.Fatalf("Open after Reopen: %v", err)
			}
			defer l3.Close()
			if l3.LastLSN() != 50 {
				t.Fatalf("Open after Reopen: last LSN %d, want 50", l3.LastLSN())
			}
		})
	}
}
