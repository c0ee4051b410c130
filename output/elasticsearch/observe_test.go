package elasticsearch

import (
	"fmt"
	"sync"
	"time"
)

// recorder is an Observer that keeps what it was told.
type recorder struct {
	mu       sync.Mutex
	items    map[string]int // "outcome status errType" → events
	requests map[int]int    // status → requests
	errs     []error        // errors of requests nothing answered
}

func newRecorder() *recorder {
	return &recorder{items: map[string]int{}, requests: map[int]int{}}
}

func (r *recorder) Request(_ time.Duration, status int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests[status]++
	if status == 0 {
		r.errs = append(r.errs, err)
	}
}

func (r *recorder) Items(status int, outcome, errType string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items[fmt.Sprintf("%s %d %s", outcome, status, errType)] += n
}

// count returns the events observed with outcome (and status, when not -1).
func (r *recorder) count(outcome string, status int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, v := range r.items {
		var o, e string
		var s int
		fmt.Sscanf(k, "%s %d %s", &o, &s, &e)
		if o == outcome && (status == -1 || s == status) {
			n += v
		}
	}
	return n
}
