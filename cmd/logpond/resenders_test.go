package main

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
)

// resenders are Beats-like clients for the end-to-end tests: client c
// sends its batches b = 0, 1, … in order, each of perBatch events with
// the payload "c<c>-b<b>-e<i>", and when a batch is not acknowledged (the
// server went away) sends it again on its next connection, as Filebeat
// does. Safe for concurrent use.
type resenders struct {
	perBatch int
	pause    time.Duration // between a batch's ACK and the next batch
	// meta is the @metadata object of an event, given its payload.
	meta func(payload string, i int) string
	// body is the rest of the event's members, given its payload:
	// "payload":"<payload>" unless set.
	body func(payload string, i int) string

	mu    sync.Mutex
	next  []int          // each client's next batch
	limit []int          // no batch from limit on
	sends map[string]int // payload → times a client sent it
	acked map[string]bool
}

// newResenders makes clients clients that send up to limit batches each.
func newResenders(clients, perBatch, limit int, pause time.Duration) *resenders {
	r := &resenders{perBatch: perBatch, pause: pause, next: make([]int, clients), limit: make([]int, clients),
		sends: map[string]int{}, acked: map[string]bool{},
		meta: func(string, int) string { return `{"beat":"filebeat","version":"9.3.0"}` },
		body: func(p string, _ int) string { return fmt.Sprintf(`"payload":%q`, p) }}
	for c := range r.limit {
		r.limit[c] = limit
	}
	return r
}

func payload(c, b, i int) string { return fmt.Sprintf("c%d-b%d-e%d", c, b, i) }

// send runs every client against addr until each reached its limit or
// the server went away.
func (r *resenders) send(addr string) {
	var wg sync.WaitGroup
	for c := range r.next {
		wg.Go(func() {
			cl, err := lj.SyncDial(addr, lj.Timeout(5*time.Second))
			if err != nil {
				return
			}
			defer cl.Close()
			for {
				r.mu.Lock()
				b, end := r.next[c], r.limit[c]
				if b >= end {
					r.mu.Unlock()
					return
				}
				data := make([]any, r.perBatch)
				for i := range data {
					p := payload(c, b, i)
					data[i] = json.RawMessage(fmt.Sprintf(`{"@metadata":%s,%s}`, r.meta(p, i), r.body(p, i)))
					r.sends[p]++
				}
				r.mu.Unlock()
				if n, err := cl.Send(data); err != nil || n != len(data) {
					return
				}
				r.mu.Lock()
				for i := range data {
					r.acked[payload(c, b, i)] = true
				}
				r.next[c] = b + 1
				r.mu.Unlock()
				time.Sleep(r.pause)
			}
		})
	}
	wg.Wait()
}

// done reports whether every client sent every batch up to its limit.
func (r *resenders) done() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c, b := range r.next {
		if b < r.limit[c] {
			return false
		}
	}
	return true
}

// endAfterNext lets each client send its unacknowledged batch and no more;
// it returns how many events that makes in all.
func (r *resenders) endAfterNext() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := 0
	for c := range r.limit {
		r.limit[c] = r.next[c] + 1
		total += r.limit[c] * r.perBatch
	}
	return total
}

// ackedPayloads returns a copy of the acknowledged payloads.
func (r *resenders) ackedPayloads() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.acked))
	for p := range r.acked {
		out[p] = true
	}
	return out
}

// sent is how many times a client sent the payload p.
func (r *resenders) sent(p string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sends[p]
}
