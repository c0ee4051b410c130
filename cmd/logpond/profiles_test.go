package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestProfilesOfTheWholeRun: -blockprofile and -mutexprofile write, at
// the end of the run, pprof profiles that hold the waits and the
// contention of the run (their sample types: delay and contentions), and
// -cpuprofile a CPU profile.
func TestProfilesOfTheWholeRun(t *testing.T) {
	dir := t.TempDir()
	p := profiles{cpu: filepath.Join(dir, "cpu"), block: filepath.Join(dir, "block"), mutex: filepath.Join(dir, "mutex")}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	// A wait on a channel far longer than the sampling rate, and a mutex
	// held while others want it.
	ch := make(chan struct{})
	go func() { time.Sleep(20 * time.Millisecond); close(ch) }()
	<-ch
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				mu.Lock()
				time.Sleep(10 * time.Microsecond)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{p.block: "delay", p.mutex: "contentions", p.cpu: "cpu"} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: not a pprof profile: %v", filepath.Base(path), err)
		}
		raw, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("%s profile has no %q samples", filepath.Base(path), want)
		}
		if filepath.Base(path) == "block" && !bytes.Contains(raw, []byte("TestProfilesOfTheWholeRun")) {
			t.Errorf("block profile does not hold the test's wait")
		}
	}
}
