// Package draintest runs an output in the background for the outputs'
// tests: started with Start, stopped with Stop (or at the test's end),
// with Run's result checked.
package draintest

import (
	"context"
	"testing"
	"time"
)

// Runner is an output: Run drains until its context ends.
type Runner interface {
	Run(ctx context.Context) error
}

// Running is an output running in the background.
type Running[O Runner] struct {
	// Out is the output running.
	Out O
	// Done receives what Run returned, once.
	Done   chan error
	cancel context.CancelFunc
}

// Start runs out.Run in the background until Stop, which the end of t
// calls too.
func Start[O Runner](t testing.TB, out O) *Running[O] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	run := &Running[O]{Out: out, cancel: cancel, Done: make(chan error, 1)}
	go func() { run.Done <- out.Run(ctx) }()
	t.Cleanup(func() { run.Stop(t) })
	return run
}

// Stop ends Run and waits for it to return; an error it returns fails t.
// Stopping again does nothing.
func (run *Running[O]) Stop(t testing.TB) {
	t.Helper()
	if run.cancel == nil {
		return
	}
	run.cancel()
	run.cancel = nil
	if err := <-run.Done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// Returned reports the error Run returned, if it has returned, leaving it
// for Stop.
func (run *Running[O]) Returned() (error, bool) {
	select {
	case err := <-run.Done:
		run.Done <- err
		return err, true
	default:
		return nil, false
	}
}

// WaitFor polls cond until it holds, failing t if it has not after a
// minute: the bound is generous because it is no performance assertion,
// only a guard against a hang.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
