package input

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/logpond/logpond/record"
)

// TestCompressorsAreShared: connections compress with at most the pool's
// compressors, each record in place, into a version 2 record holding the
// same events; a connection waiting for a compressor stops waiting when
// its context ends.
func TestCompressorsAreShared(t *testing.T) {
	p := newCompressors(record.S2(record.LevelFastest), 2)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				var evs [][]byte
				for k := range 50 {
					evs = append(evs, fmt.Appendf(nil, `{"g":%d,"i":%d,"k":%d,"message":"the same words again and again"}`, g, i, k))
				}
				v1, err := record.Encode(nil, time.Unix(1_800_000_000, 0), evs)
				if err != nil {
					errs <- err
					return
				}
				out, err := p.compress(context.Background(), v1)
				if err != nil {
					errs <- err
					return
				}
				if out[0] != record.VersionCompressed || &out[0] != &v1[0] {
					errs <- fmt.Errorf("goroutine %d record %d: version %d, in place %v", g, i, out[0], &out[0] == &v1[0])
					return
				}
				if h, err := record.Verify(out); err != nil || h.Count != 50 {
					errs <- fmt.Errorf("goroutine %d record %d: %d events, %v", g, i, h.Count, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	made := 0
	for range cap(p.free) {
		z := <-p.free
		if z.c != nil {
			made++
		}
		defer func() { p.free <- z }()
	}
	if made == 0 || made > 2 {
		t.Fatalf("%d compressors made, want 1 or 2 (the pool's)", made)
	}
	// All are taken now (above): a wait ends with its context.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := p.compress(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("compress with every compressor taken: %v, want the context's end", err)
	}
	t.Cleanup(p.close)
}
