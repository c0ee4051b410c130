package drain

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Run runs an output's goroutines (its reader and its senders, each
// given the context they share) with the cursor persisted every second
// meanwhile, from the cursor from the run started at, and returns once
// they all have: the first of them to fail stops the others (they must
// return when the context ends), and its error is returned. Then the
// cursor is persisted a last time at tr's done LSN, which Run returns;
// a failure of that write wraps notSaved and is joined to the error.
//
// Every second: each persist is a small synced write to the ledger's
// device, and the cursor lagging what is done by up to a second costs,
// after a crash, only a resend of those events, which their ids make
// harmless (or, for an output that keeps its position at its destination,
// nothing).
func Run(ctx context.Context, c *Cursor, tr *Tracker, from uint64, notSaved error, workers ...func(context.Context) error) (uint64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(workers))
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			if err := w(ctx); err != nil && ctx.Err() == nil {
				errs <- err
				cancel()
			}
		})
	}
	wg.Go(func() { c.Commit(ctx, tr, from, time.Second, "every second") })
	wg.Wait()
	var runErr error
	select {
	case runErr = <-errs:
	default:
	}
	done, err := c.Final(tr, from, notSaved)
	if err != nil {
		runErr = errors.Join(runErr, err)
	}
	return done, runErr
}
