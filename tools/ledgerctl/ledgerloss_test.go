package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/ledger"
)

// TestAcceptLedgerLoss: records at the end of the ledger that the journal
// no longer holds make logpond refuse to start: the last record of the
// open segment damaged (ledger.Open refuses), or the open segment ending
// cleanly before the journal's first LSN (the server's gap check refuses).
// verify names accept-loss; --dry-run names exactly the lost LSNs and
// changes nothing; accept-loss seals the open segment unchanged and starts
// a new one at the journal's first LSN, so that the ledger opens, goes on
// where the journal does, and a reader that passes damage reads every
// record but the lost ones, reported as one damaged range.
func TestAcceptLedgerLoss(t *testing.T) {
	cases := []struct {
		name       string
		damageLast bool   // damage LSN 300, the open segment's last record
		jfirst     uint64 // the journal's first LSN (where the ledger goes on)
		lost       [2]uint64
		refused    bool // ledger.Open refuses (else only the gap check)
		noJournal  bool // the journal directory is empty
	}{
		{"last record of the open segment damaged", true, 303, [2]uint64{300, 302}, true, false},
		{"the journal starts after the ledger's last LSN + 1", false, 306, [2]uint64{301, 305}, false, false},
		// Nothing says how many records the damaged end held: the ledger
		// goes on after the damaged LSN.
		{"last record of the open segment damaged, no journal", true, 301, [2]uint64{300, 300}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := buildStores(t)
			if tc.damageLast {
				at := ledgerOffsets(t, s.ledger)[300]
				storetest.Flip(t, at.file, at.off+40)
			}
			// The journal has released everything before jfirst.
			if err := os.RemoveAll(s.journal); err != nil {
				t.Fatal(err)
			}
			if tc.noJournal {
				os.Mkdir(s.journal, 0o750) // an empty journal directory
			} else {
				writeJournal(t, s.journal, tc.jfirst-1, tc.jfirst, tc.jfirst+20)
			}
			opts := ledger.Options{SegmentBytes: 64 << 10, DirectIO: true, Covered: func(lsn uint64) bool { return lsn >= tc.jfirst }}
			l, err := ledger.Open(s.ledger, opts)
			var ce *ledger.CorruptionError
			switch {
			case tc.refused && !errors.As(err, &ce):
				t.Fatalf("ledger.Open: %v, want a *CorruptionError", err)
			case !tc.refused && err != nil:
				t.Fatal(err)
			case !tc.refused:
				if l.LastLSN()+1 >= tc.jfirst {
					t.Fatalf("ledger ends at %d: no gap before the journal's %d", l.LastLSN(), tc.jfirst)
				}
				l.Close()
			}
			base := []string{"-journal", s.journal, "-ledger", s.ledger}
			if out, _, code := ctl(t, append(base, "verify")...); !tc.noJournal && (code != exitFailed || !strings.Contains(out, "-ledger "+s.ledger+" accept-loss")) {
				t.Fatalf("verify: exit %d, want 1 naming accept-loss:\n%s", code, out)
			}

			snapshot := func() map[string]string {
				m := map[string]string{}
				des, _ := os.ReadDir(s.ledger)
				for _, de := range des {
					b, _ := os.ReadFile(filepath.Join(s.ledger, de.Name()))
					m[de.Name()] = string(b)
				}
				return m
			}
			before := snapshot()
			want := fmt.Sprintf("LSNs %d–%d (%d records, events unknown)", tc.lost[0], tc.lost[1], tc.lost[1]-tc.lost[0]+1)
			if tc.noJournal {
				want = fmt.Sprintf("LSNs %d–%d (at least 1 record, events unknown)", tc.lost[0], tc.lost[1])
			}
			out, _, code := ctl(t, append(base, "accept-loss", "--dry-run")...)
			if code != exitOK || !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("started at LSN %d", tc.jfirst)) {
				t.Fatalf("dry run: exit %d, want %q:\n%s", code, want, out)
			}
			if after := snapshot(); !maps.Equal(before, after) {
				t.Fatal("the dry run changed the ledger")
			}

			out, _, code = ctl(t, append(base, "--json", "accept-loss")...)
			var rep struct {
				LedgerLastLSN uint64 `json:"ledger_last_lsn"`
				Ledger        *struct {
					Next uint64 `json:"next_lsn"`
					Lost []struct {
						FirstLSN uint64 `json:"first_lsn"`
						LastLSN  uint64 `json:"last_lsn"`
						Events   *int   `json:"events"`
					} `json:"lost"`
					Records uint64 `json:"lost_records"`
				} `json:"ledger"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK {
				t.Fatalf("exit %d, %v:\n%s", code, err, out)
			}
			if lr := rep.Ledger; rep.LedgerLastLSN != tc.jfirst-1 || lr == nil || lr.Next != tc.jfirst || len(lr.Lost) != 1 ||
				lr.Lost[0].FirstLSN != tc.lost[0] || lr.Lost[0].LastLSN != tc.lost[1] || lr.Lost[0].Events != nil || lr.Records != tc.lost[1]-tc.lost[0]+1 {
				t.Fatalf("report %s", out)
			}
			// Every file of the ledger is as it was; one segment is new.
			after := snapshot()
			for name, b := range before {
				if after[name] != b && !strings.HasSuffix(name, ".idx") {
					t.Fatalf("%s changed", name)
				}
			}

			l, err = ledger.Open(s.ledger, opts)
			if err != nil {
				t.Fatalf("after accept-loss: %v", err)
			}
			defer l.Close()
			if l.LastLSN() != tc.jfirst-1 {
				t.Fatalf("after accept-loss the ledger ends at %d, want %d", l.LastLSN(), tc.jfirst-1)
			}
			r := l.Reader(1)
			defer r.Close()
			r.SkipDamage()
			var read []uint64
			var lost [2]uint64
			for r.Next() {
				if d := r.Damage(); d != nil {
					if lost != [2]uint64{} {
						t.Fatalf("a second damaged range %v", d)
					}
					lost = [2]uint64{d.FirstLSN, d.LastLSN}
					continue
				}
				read = append(read, r.LSN())
			}
			var wantRead []uint64
			for lsn := uint64(1); lsn < tc.lost[0]; lsn++ {
				wantRead = append(wantRead, lsn)
			}
			if r.Err() != nil || !slices.Equal(read, wantRead) || lost != tc.lost {
				t.Fatalf("read %d records up to %v, damaged range %v, err %v; want up to %d, %v", len(read), read[len(read)-1], lost, r.Err(), tc.lost[0]-1, tc.lost)
			}

			// Nothing more to accept.
			l.Close()
			if out, _, code := ctl(t, append(base, "accept-loss")...); code != exitOK || !strings.Contains(out, "nothing to accept") {
				t.Fatalf("second run: exit %d:\n%s", code, out)
			}
		})
	}
}
