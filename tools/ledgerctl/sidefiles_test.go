package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/servertest"
	"github.com/logpond/logpond/internal/testkit/storetest"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/dlq"
)

// TestCursorAndDeadLetterDamage damages the files beside the ledger's
// segments, a cursor file and a dead-letter file, in each way they can
// break. Each row says what verify reports before logpond starts (the
// damaged file, exit 1), what logpond does at start (it starts, sets the
// file aside as <file>.damaged and logs an ERROR naming it), and what
// verify reports after that start: OK, with a note naming the set-aside
// file until the operator deletes it.
func TestCursorAndDeadLetterDamage(t *testing.T) {
	cursor := func(s stores) string { return filepath.Join(s.ledger, "cursors", "elasticsearch.cursor") }
	// Dead letters in files of a few entries each, every entry its own
	// write; files lists each file's entry offsets, oldest file first.
	var files [][]int64
	var fileNames []string
	total := 0
	letters := func(t *testing.T, s stores) {
		ids := agedLetters(t, s.ledger, 12)
		total = len(ids)
		files, fileNames = nil, nil
		for _, id := range ids {
			p, err := dlq.ParsePos(id)
			if err != nil {
				t.Fatal(err)
			}
			if len(fileNames) == 0 || fileNames[len(fileNames)-1] != p.File {
				fileNames = append(fileNames, p.File)
				files = append(files, nil)
			}
			files[len(files)-1] = append(files[len(files)-1], p.Offset)
		}
		if len(files) < 3 || len(files[0]) < 2 || len(files[len(files)-1]) < 2 {
			t.Fatalf("dead letters in %d files (%v): the test wants 3 or more of 2 or more entries", len(files), files)
		}
	}
	dlqFile := func(s stores, i int) string {
		if i < 0 {
			i += len(fileNames)
		}
		return filepath.Join(dlq.Dir(s.ledger, "elasticsearch"), fileNames[i])
	}
	cases := []struct {
		name string
		// damage breaks the stores and returns the damaged file.
		damage func(t *testing.T, s stores) string
		verify string // what verify's DAMAGE line says besides the file
		log    string // the ERROR logpond logs at start
		// letters is the number of dead letters the store holds after the
		// start: those before the damage are stored again (nil: no
		// dead-letter store).
		letters func() int
	}{
		{"cursor file: a byte of the position flipped", func(t *testing.T, s stores) string {
			storetest.Flip(t, cursor(s), 3)
			return cursor(s)
		}, "checksum mismatch", "damaged cursor file set aside", nil},
		{"cursor file: a byte of the checksum flipped", func(t *testing.T, s stores) string {
			storetest.Flip(t, cursor(s), 10)
			return cursor(s)
		}, "checksum mismatch", "damaged cursor file set aside", nil},
		{"cursor file cut short", func(t *testing.T, s stores) string {
			os.Truncate(cursor(s), 5)
			return cursor(s)
		}, "5 bytes", "damaged cursor file set aside", nil},
		{"cursor file empty", func(t *testing.T, s stores) string {
			os.Truncate(cursor(s), 0)
			return cursor(s)
		}, "0 bytes", "damaged cursor file set aside", nil},
		{"cursor file grown", func(t *testing.T, s stores) string {
			storetest.AppendBytes(t, cursor(s), []byte{0})
			return cursor(s)
		}, "13 bytes", "damaged cursor file set aside", nil},
		{"closed dead-letter file: the first entry's payload flipped", func(t *testing.T, s stores) string {
			letters(t, s)
			storetest.Flip(t, dlqFile(s, 0), files[0][0]+60)
			return dlqFile(s, 0)
		}, "", "damaged dead-letter file set aside", func() int { return total - len(files[0]) }},
		{"closed dead-letter file: the second entry's header flipped", func(t *testing.T, s stores) string {
			letters(t, s)
			storetest.Flip(t, dlqFile(s, 0), files[0][1]+2)
			return dlqFile(s, 0)
		}, "", "damaged dead-letter file set aside", func() int { return total - len(files[0]) + 1 }},
		{"closed dead-letter file: its file header flipped", func(t *testing.T, s stores) string {
			letters(t, s)
			storetest.Flip(t, dlqFile(s, 0), 2)
			return dlqFile(s, 0)
		}, "", "damaged dead-letter file set aside", func() int { return total - len(files[0]) }},
		{"closed dead-letter file cut inside its last entry", func(t *testing.T, s stores) string {
			letters(t, s)
			st, _ := os.Stat(dlqFile(s, 1))
			os.Truncate(dlqFile(s, 1), st.Size()-3)
			return dlqFile(s, 1)
		}, "", "damaged dead-letter file set aside", func() int { return total - 1 }},
		{"newest dead-letter file: the first entry's payload flipped, a later write follows", func(t *testing.T, s stores) string {
			letters(t, s)
			storetest.Flip(t, dlqFile(s, -1), files[len(files)-1][0]+60)
			return dlqFile(s, -1)
		}, "", "damaged dead-letter file set aside", func() int { return total - len(files[len(files)-1]) }},
	}
	es, err := estest.Start(estest.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := buildStores(t)
			file := tc.damage(t, s)

			out, _, code := ctl(t, "-journal", s.journal, "-ledger", s.ledger, "verify")
			if code != exitFailed || !strings.Contains(out, "DAMAGE") || !strings.Contains(out, "file "+file) ||
				!strings.Contains(out, tc.verify) || !strings.Contains(out, "verify: FAILED: 1 damaged location(s)") {
				t.Fatalf("verify before the start: exit %d, want 1 naming %s", code, file)
			}

			cfg := servertest.Config(t.TempDir(), es.URL())
			cfg.Journal.Dir, cfg.Ledger.Dir = s.journal, s.ledger
			logs := &syncbuf.Buffer{}
			t.Run("start", func(t *testing.T) {
				servertest.Run(t, cfg, slog.New(slog.NewTextHandler(logs, nil)))
				// logpond goes on: the output delivers every record.
				for cursorAt(t, s.ledger) != 400 {
					time.Sleep(5 * time.Millisecond) // polling; the test's timeout bounds it
				}
			})
			if t.Failed() {
				t.Fatalf("server log:\n%s", logs)
			}
			log := logs.String()
			if !strings.Contains(log, "level=ERROR") || !strings.Contains(log, tc.log) || !strings.Contains(log, file) {
				t.Fatalf("no ERROR %q naming %s in the log:\n%s", tc.log, file, log)
			}
			if _, err := os.Stat(file + ".damaged"); err != nil {
				t.Fatalf("the damaged file was not set aside: %v", err)
			}
			if tc.letters != nil {
				if n, want := countLetters(t, s.ledger), tc.letters(); n != want {
					t.Fatalf("%d dead letters after the start, want %d", n, want)
				}
			}

			out, _, code = ctl(t, "-journal", s.journal, "-ledger", s.ledger, "verify")
			if code != exitOK || strings.Contains(out, "DAMAGE") || !strings.Contains(out, file+".damaged") {
				t.Fatalf("verify after the start: exit %d, want 0 with a note naming %s.damaged", code, file)
			}
		})
	}
}

// cursorAt reads the elasticsearch cursor of the ledger in dir, read-only
// (0 while it cannot be read).
func cursorAt(t *testing.T, dir string) uint64 {
	t.Helper()
	cs, err := ledger.ReadCursors(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Name == "elasticsearch" && c.Err == nil {
			return c.LSN
		}
	}
	return 0
}
