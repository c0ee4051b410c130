package server

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logpond/logpond/conf"
)

// crashChild is the body of the child process of TestCrashPoints: it runs
// the pipeline on the directories under LOGPOND_CRASH_ROOT and appends
// records from 8 goroutines, printing "ack <lsn> <writer> <seq>" for each
// acknowledged one, until it is killed.
func crashChild(root string, round int) {
	cfg := crashConfig(root)
	s, err := Open(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	go s.Run(context.Background())
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	for w := range 8 {
		go func() {
			for seq := 0; ; seq++ {
				writer := round*100 + w
				lsn, err := s.journal().Append(context.Background(), crashRecord(writer, seq))
				if err != nil {
					return
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %d %d %d\n", lsn, writer, seq)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	select {}
}

func crashRecord(writer, seq int) []byte {
	return testRecordText(fmt.Sprintf(`{"writer":%d,"seq":%d,"pad":"%s"}`, writer, seq, strings.Repeat("z", (writer*seq)%1500)))
}

// crashConfig uses small segments so that kills land during roll-overs on
// both sides, and a short flush interval so that they land between ledger
// writes, syncs and journal releases.
func crashConfig(root string) *conf.Config {
	cfg := conf.Default()
	cfg.Journal.Dir, cfg.Ledger.Dir = filepath.Join(root, "journal"), filepath.Join(root, "ledger")
	cfg.Input.Beats.Listen = "127.0.0.1:0"
	cfg.Output.Elasticsearch.Enabled = false // these tests look at the stores only
	cfg.Admin.Listen = ""
	cfg.Journal.SegmentBytes, cfg.Journal.MaxBytes = 1<<20, 64<<20
	cfg.Ledger.SegmentBytes, cfg.Ledger.MaxBytes = 1<<20, 1<<30
	cfg.Ledger.FlushInterval = conf.Duration(2 * time.Millisecond)
	return &cfg
}

// TestCrashPoints SIGKILLs a process running the pipeline at random
// moments (50–450 ms after its first acknowledgement, so every round
// acknowledges something however slowly the child starts), several times
// on the same directories, then recovers: every acknowledged record is in
// the ledger exactly once, at its LSN, and the ledger's LSNs run 1, 2, 3,
// … without a gap.
func TestCrashPoints(t *testing.T) {
	skipLong(t)
	if root := os.Getenv("LOGPOND_CRASH_ROOT"); root != "" {
		round, _ := strconv.Atoi(os.Getenv("LOGPOND_CRASH_ROUND"))
		crashChild(root, round)
		return
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	root := t.TempDir()
	acked := map[uint64]string{} // LSN → record text
	for round := range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashPoints$")
		cmd.Env = append(os.Environ(), "LOGPOND_CRASH_ROOT="+root, "LOGPOND_CRASH_ROUND="+strconv.Itoa(round))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// The kill lands at a random moment after the child's first
		// acknowledgement, not after its start: a slow start (a loaded
		// machine, a race-instrumented binary) must not leave a round
		// with nothing acknowledged. A child that acknowledges nothing
		// for a minute has failed.
		var kill <-chan time.Time
		noAck := time.After(time.Minute)
		delay := time.Duration(50+rng.IntN(400)) * time.Millisecond
	read:
		for {
			select {
			case <-kill:
				cmd.Process.Signal(syscall.SIGKILL)
				kill = nil
			case <-noAck:
				cmd.Process.Signal(syscall.SIGKILL)
				cmd.Wait()
				t.Fatalf("round %d: the child acknowledged nothing in a minute:\n%s", round, stderr.String())
			case line, ok := <-lines:
				if !ok {
					break read
				}
				var lsn uint64
				var w, seq int
				if _, err := fmt.Sscanf(line, "ack %d %d %d", &lsn, &w, &seq); err != nil {
					continue
				}
				if noAck != nil {
					noAck, kill = nil, time.After(delay)
				}
				if prev, dup := acked[lsn]; dup {
					t.Fatalf("LSN %d acknowledged twice (%s)", lsn, prev)
				}
				acked[lsn] = string(crashRecord(w, seq))
			}
		}
		cmd.Wait()
		if strings.Contains(stderr.String(), "open:") {
			t.Fatalf("round %d: child could not start:\n%s", round, stderr.String())
		}
	}
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged")
	}
	// Recover as a normal start would, let the flusher replay, stop.
	r := start(t, crashConfig(root))
	r.shutdown(t)
	got := ledgerContents(t, crashConfig(root))
	for lsn := uint64(1); lsn <= uint64(len(got)); lsn++ {
		if _, ok := got[lsn]; !ok {
			t.Fatalf("the ledger has %d records but not LSN %d", len(got), lsn)
		}
	}
	seen := map[string]uint64{}
	for lsn, b := range got {
		if prev, dup := seen[string(b)]; dup {
			t.Fatalf("record stored twice, at LSN %d and %d", prev, lsn)
		}
		seen[string(b)] = lsn
	}
	for lsn, want := range acked {
		if string(got[lsn]) != want {
			t.Fatalf("acknowledged LSN %d missing or different in the ledger", lsn)
		}
	}
	t.Logf("%d acknowledged records over 8 kills, %d in the ledger", len(acked), len(got))
}
