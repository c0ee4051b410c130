package input

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
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

// TestIncompressibleBatchIsStoredSealed: with compression on, a batch
// whose record would not shrink is kept uncompressed, and the input seals
// it (it builds records unsealed, for the compressor to seal only what it
// keeps as is): the journal takes it, and it reads back whole.
func TestIncompressibleBatchIsStoredSealed(t *testing.T) {
	opts := testOptions()
	opts.Compression = record.S2(record.LevelFastest)
	j := openJournal(t)
	b := startBeats(t, opts, journalInput{j})
	cl, err := lj.SyncDial(b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rnd := rand.New(rand.NewPCG(1, 2))
	var data []interface{}
	for range 4 {
		raw := make([]byte, 300)
		for i := range raw {
			raw[i] = byte(rnd.Uint32())
		}
		data = append(data, json.RawMessage(`{"noise":"`+base64.StdEncoding.EncodeToString(raw)+`"}`))
	}
	if n, err := cl.Send(data); err != nil || n != len(data) {
		t.Fatalf("acked %d: %v", n, err)
	}
	r := j.Reader(1)
	var recs [][]byte
	for r.Next() {
		recs = append(recs, slices.Clone(r.Record()))
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	if recs[0][0] != record.Version {
		t.Fatalf("an incompressible record stored as version %d", recs[0][0])
	}
	rec, err := record.Decode(recs[0])
	if err != nil || rec.Count() != len(data) {
		t.Fatalf("stored record: %d events, %v", rec.Count(), err)
	}
}
