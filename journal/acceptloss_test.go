package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/record"
)

// TestAcceptLoss: damage to journal records after the ledger's last LSN
// (Settled) is refused by Open; AcceptLoss rewrites the damaged
// generations so that Open succeeds, every intact record after Settled is
// still read, each lost LSN reads as an empty void record, and the
// damaged originals are kept aside. FindLoss reports beforehand exactly
// what AcceptLoss then does.
func TestAcceptLoss(t *testing.T) {
	const total = 700
	src := inspectFixture(t, total)
	segs, err := Segments(src)
	if err != nil || len(segs) < 4 {
		t.Fatalf("fixture: %+v, %v; want at least 4 generations", segs, err)
	}
	closed, closed2, newest := segs[1], segs[2], segs[len(segs)-1]
	offsets := map[uint64]int64{}
	r, _ := NewDirReader(src, 1)
	for r.Next() {
		offsets[r.LSN()] = r.Offset()
	}
	cf, cl, nf := closed.FirstLSN, closed.LastLSN, newest.FirstLSN
	// Entries are a 2-byte length prefix, a 20-byte frame header, the
	// record: these offsets land in each part.
	const inPrefix, inHeader, inBody = 0, 2 + 5, 2 + frameHeader + 40
	flip := func(lsn uint64, at int64) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) { storetest.Flip(t, fileOf(dir, segs, lsn), offsets[lsn]+at) }
	}
	both := func(fs ...func(*testing.T, string)) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			for _, f := range fs {
				f(t, dir)
			}
		}
	}
	type span struct {
		first, last uint64
		events      int
	}
	cases := []struct {
		name    string
		settled uint64
		damage  func(t *testing.T, dir string)
		lost    []span
		held    uint64
		tailAt  uint64 // the first LSN of a torn tail cut from the newest generation; 0: none
	}{
		{"closed generation, record body", cf - 1, flip(cf+5, inBody), []span{{cf + 5, cf + 5, -1}}, 0, 0},
		{"closed generation, frame header", cf - 1, flip(cf+5, inHeader), []span{{cf + 5, cf + 5, 1}}, 0, 0},
		{"closed generation, length prefix", cf - 1, flip(cf+5, inPrefix), []span{{cf + 5, cf + 5, 1}}, 0, 0},
		{"closed generation, its first record", cf - 1, flip(cf, inBody), []span{{cf, cf, -1}}, 0, 0},
		{"closed generation, its last record", cf - 1, flip(cl, inBody), []span{{cl, cl, -1}}, 0, 0},
		{"closed generation, two records in a row", cf - 1,
			both(flip(cf+5, inBody), flip(cf+6, inBody)), []span{{cf + 5, cf + 6, -1}}, 0, 0},
		{"closed generation, cut short", cf - 1,
			func(t *testing.T, dir string) { os.Truncate(fileOf(dir, segs, cf+7), offsets[cf+7]) }, []span{{cf + 7, cl, -1}}, 0, 0},
		{"closed generation holding the ledger's last LSN, damage on both sides", cf + 3,
			both(flip(cf+1, inBody), flip(cf+8, inBody)), []span{{cf + 8, cf + 8, -1}}, 1, 0},
		{"newest generation, record body", cf - 1, flip(nf+3, inBody), []span{{nf + 3, nf + 3, -1}}, 0, 0},
		{"newest generation, length prefix", cf - 1, flip(nf+3, inPrefix), []span{{nf + 3, nf + 3, 1}}, 0, 0},
		{"newest generation, damage then a torn tail", cf - 1,
			both(flip(nf+3, inBody), func(t *testing.T, dir string) {
				os.Truncate(fileOf(dir, segs, total), offsets[total]+10)
			}), []span{{nf + 3, nf + 3, -1}}, 0, total},
		{"several spans in several generations", cf - 1,
			both(flip(cf+2, inBody), flip(cf+9, inHeader), flip(closed2.FirstLSN+1, inBody), flip(nf+1, inBody)),
			[]span{{cf + 2, cf + 2, -1}, {cf + 9, cf + 9, 1}, {closed2.FirstLSN + 1, closed2.FirstLSN + 1, -1}, {nf + 1, nf + 1, -1}}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, src)
			tc.damage(t, dir)
			opts := smallOpts()
			opts.StartAfter, opts.Settled = tc.settled, tc.settled
			if j, err := Open(dir, opts); err == nil {
				j.Close()
				t.Fatal("Open accepted damage past the ledger's last LSN")
			} else if ce := (*CorruptionError)(nil); !errors.As(err, &ce) || ce.LSN != tc.lost[0].first {
				t.Fatalf("Open: %v; want a *CorruptionError naming LSN %d", err, tc.lost[0].first)
			}
			before := map[string][]byte{}
			for _, sp := range tc.lost {
				f := fileOf(dir, segs, sp.first)
				before[f], _ = os.ReadFile(f)
			}

			found, err := FindLoss(dir, tc.settled)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := AcceptLoss(dir, tc.settled)
			if err != nil {
				t.Fatal(err)
			}
			var got []span
			for _, s := range rep.Lost {
				got = append(got, span{s.FirstLSN, s.LastLSN, s.Events})
			}
			if !reflect.DeepEqual(got, tc.lost) || rep.Held != tc.held {
				t.Fatalf("lost %v, held %d; want %v, %d (%s)", got, rep.Held, tc.lost, tc.held, rep.Summary())
			}
			if !reflect.DeepEqual(found.Lost, rep.Lost) || found.Held != rep.Held {
				t.Fatalf("FindLoss said %s, AcceptLoss did %s", found.Summary(), rep.Summary())
			}
			switch {
			case tc.tailAt == 0 && rep.Tail != nil:
				t.Fatalf("cut a tail: %+v", rep.Tail)
			case tc.tailAt != 0 && (rep.Tail == nil || rep.Tail.FirstLSN != tc.tailAt):
				t.Fatalf("tail %+v, want one from LSN %d", rep.Tail, tc.tailAt)
			}
			// The damaged originals are kept, byte for byte.
			if len(rep.SetAside) != len(rep.Rewritten) || len(rep.Rewritten) == 0 {
				t.Fatalf("rewritten %v, set aside %v", rep.Rewritten, rep.SetAside)
			}
			for i, f := range rep.Rewritten {
				kept, err := os.ReadFile(filepath.Join(rep.SetAside[i], segmentFile))
				if err != nil || (before[f] != nil && !bytes.Equal(kept, before[f])) {
					t.Fatalf("the damaged original of %s is not kept in %s: %v", f, rep.SetAside[i], err)
				}
			}

			lost := map[uint64]bool{}
			for _, s := range tc.lost {
				for l := s.first; l <= s.last; l++ {
					lost[l] = true
				}
			}
			last := uint64(total)
			if tc.tailAt != 0 {
				last = tc.tailAt - 1
			}
			j := mustOpen(t, dir, opts)
			defer j.Close()
			if j.LastLSN() != last {
				t.Fatalf("journal ends at %d, want %d", j.LastLSN(), last)
			}
			rd := j.Reader(tc.settled + 1)
			next := tc.settled + 1
			for rd.Next() {
				if rd.LSN() != next {
					t.Fatalf("read LSN %d, want %d", rd.LSN(), next)
				}
				if lost[next] {
					dec, err := record.Decode(rd.Record())
					if err != nil || dec.Count() != 0 || dec.Flags() != record.Void {
						t.Fatalf("lost LSN %d reads as %v (%v), want an empty void record", next, dec.Flags(), err)
					}
				} else if !bytes.Equal(rd.Record(), inspectRec(t, next)) {
					t.Fatalf("LSN %d has the wrong content", next)
				}
				next++
			}
			if rd.Err() != nil || next != last+1 {
				t.Fatalf("read up to %d of %d: %v", next-1, last, rd.Err())
			}
			j.Close()
			// Accepted once: nothing more to accept.
			if again, err := FindLoss(dir, tc.settled); err != nil || len(again.Lost) != 0 || again.Tail != nil {
				t.Fatalf("after AcceptLoss, FindLoss reports %+v, %v", again, err)
			}
		})
	}
}

// TestAcceptLossNothingToAccept: an intact journal, or one whose newest
// generation merely ends in a torn write (which Open cuts, never
// acknowledged), is left alone.
func TestAcceptLossNothingToAccept(t *testing.T) {
	dir := inspectFixture(t, 200)
	segs, err := Segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	newest := segs[len(segs)-1]
	for _, torn := range []bool{false, true} {
		if torn {
			if err := os.Truncate(newest.File, newest.Bytes-10); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := os.ReadFile(newest.File)
		rep, err := AcceptLoss(dir, 10)
		after, _ := os.ReadFile(newest.File)
		if err != nil || len(rep.Lost) != 0 || rep.Tail != nil || len(rep.Rewritten) != 0 || !bytes.Equal(before, after) {
			t.Fatalf("AcceptLoss (torn tail: %v): %+v, %v", torn, rep, err)
		}
	}
}

// fileOf is the segment file in dir holding lsn, by the fixture's
// generations.
func fileOf(dir string, segs []SegmentInfo, lsn uint64) string {
	for i, s := range segs {
		if lsn <= s.LastLSN || i == len(segs)-1 {
			return filepath.Join(dir, filepath.Base(s.Dir), segmentFile)
		}
	}
	return ""
}
