package lumberjack

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/logpond/logpond/internal/waitlog"
)

// hostSet decides which hosts the senders may use: with load balancing,
// every host out of its backoff; without, only the active one. As in
// Filebeat's output.logstash without loadbalance, no host has precedence:
// the active host is chosen at random at start, and when it fails another
// is chosen at random among the others, preferring those out of their
// backoff (failover). The output stays with a host while it answers; there
// is no return to a "first" host. It also keeps the outage state: every
// host tried has failed since the last ACK. Safe for concurrent use.
type hostSet struct {
	lb          bool
	init, limit time.Duration // backoff bounds
	name        string
	log         *slog.Logger
	pick        func(n int) int // a random index in [0, n) (tests fix it)

	mu      sync.Mutex // guards the fields below
	hosts   []*host
	active  int           // the host in use without load balancing
	changed chan struct{} // closed and replaced at each change of state
	down    waitlog.Episode
	outages int64
}

// host is one Lumberjack server's state.
type host struct {
	addr string
	i    int
	// failures counts the failures in a row (connecting, sending, or an
	// ACK not coming in time) since the last ACK; retryAt is when the
	// host may be tried again.
	failures int
	retryAt  time.Time
	lastErr  error
	conns    int // connections open to it
}

func newHostSet(opts *Options, log *slog.Logger) *hostSet {
	s := &hostSet{lb: opts.LoadBalance, init: opts.BackoffInit, limit: opts.BackoffMax, name: opts.Name, log: log,
		pick: rand.IntN, changed: make(chan struct{})}
	for i, a := range opts.Hosts {
		s.hosts = append(s.hosts, &host{addr: a, i: i})
	}
	if len(s.hosts) > 0 {
		s.active = s.pick(len(s.hosts))
	}
	return s
}

// failOverLocked makes another host than the failed active one active: one
// at random among those out of their backoff at now, else the one whose
// backoff ends first. s.mu must be held.
func (s *hostSet) failOverLocked(now time.Time) {
	if len(s.hosts) < 2 {
		return
	}
	var ready []int
	next := -1
	for _, h := range s.hosts {
		if h.i == s.active {
			continue
		}
		if !now.Before(h.retryAt) {
			ready = append(ready, h.i)
		} else if next < 0 || h.retryAt.Before(s.hosts[next].retryAt) {
			next = h.i
		}
	}
	if len(ready) > 0 {
		next = ready[s.pick(len(ready))]
	}
	s.active = next
}

// broadcast wakes every sender waiting for a change; s.mu must be held.
func (s *hostSet) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// turn says whether h may be used now; when not, how long its backoff
// lasts (0: until its turn comes) and a channel closed at the next
// change.
func (s *hostSet) turn(h *host) (ok bool, wait time.Duration, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.lb && s.active != h.i {
		return false, 0, s.changed
	}
	if d := time.Until(h.retryAt); d > 0 {
		return false, d, s.changed
	}
	return true, 0, s.changed
}

// connected counts a connection to h opened (+1) or closed (-1).
func (s *hostSet) connected(h *host, delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.conns += delta
}

// failed records that h failed with err: it backs off (doubling with
// each failure in a row; failures during a backoff already begun, from
// the host's other connections, do not double it again), and without
// load balancing the next host takes over. When every host has failed
// since the last ACK, the output waits: logged once.
func (s *hostSet) failed(h *host, err error) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.lastErr = err
	now := time.Now()
	if !now.Before(h.retryAt) {
		h.failures++
		d := s.init
		for i := 1; i < h.failures && d < s.limit; i++ {
			d *= 2
		}
		h.retryAt = now.Add(min(d, s.limit))
	}
	if !s.lb && s.active == h.i {
		s.failOverLocked(now)
	}
	all := true
	for _, x := range s.hosts {
		all = all && x.failures > 0
	}
	if all && s.down.Enter(s.log, slog.LevelWarn, "no host answers: retrying with backoff; events wait in the ledger", "reason", s.reasonLocked()) {
		s.outages++
	}
	s.broadcast()
	return time.Until(h.retryAt)
}

// acked records that h ACKed a window: its failures are forgotten, and an
// outage ends.
func (s *hostSet) acked(h *host) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h.failures == 0 && !s.down.Active() {
		return // the common case: nothing changes
	}
	h.failures, h.retryAt, h.lastErr = 0, time.Time{}, nil
	if s.down.Active() {
		s.down.Leave(s.log, "a host answers again", "host", h.addr, "outage", s.down.Lasted().Round(time.Millisecond).String())
	}
	s.broadcast()
}

// reasonLocked lists each failing host's last error; s.mu must be held.
func (s *hostSet) reasonLocked() string {
	var b strings.Builder
	for _, h := range s.hosts {
		if h.lastErr == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %v", h.addr, h.lastErr)
	}
	return b.String()
}

// waiting is Output.Waiting.
func (s *hostSet) waiting() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down.Active() {
		return ""
	}
	return fmt.Sprintf("no host of output.lumberjack.%s answers since %s: %s", s.name, s.down.Began().Format(time.RFC3339), s.reasonLocked())
}

// connectedHosts is the number of hosts with a connection open.
func (s *hostSet) connectedHosts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.hosts {
		if h.conns > 0 {
			n++
		}
	}
	return n
}
