package lumberjack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	lumberlog "github.com/elastic/go-lumber/log"
	"go.uber.org/goleak"

	"github.com/logpond/logpond/internal/testkit/lumbertest"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/output/eventid"
	"github.com/logpond/logpond/output/internal/drain/draintest"
	"github.com/logpond/logpond/record"
)

func TestMain(m *testing.M) {
	// go-lumber's server logs every connection's start and end.
	lumberlog.Logger = stdlog.New(io.Discard, "", 0)
	goleak.VerifyTestMain(m)
}

// rig is a ledger with the events stored in it.
type rig struct {
	t      *testing.T
	dir    string
	ledger *ledger.Ledger
	lsn    uint64
	want   map[string][]byte // id → the event as stored in the ledger
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, dir: dir, want: map[string][]byte{}}
	r.open()
	t.Cleanup(func() { r.ledger.Close() })
	return r
}

func (r *rig) open() {
	l, err := ledger.Open(r.dir+"/ledger", ledger.Options{SegmentBytes: 1 << 20, MaxBytes: 1 << 30, DirectIO: true})
	if err != nil {
		r.t.Fatal(err)
	}
	r.ledger = l
}

// id is the id the Elasticsearch output derives for event pos of lsn.
func (r *rig) id(lsn uint64, pos int) string {
	p, err := eventid.Prefix(r.ledger.StreamID())
	if err != nil {
		r.t.Fatal(err)
	}
	return string(eventid.Append(nil, p, lsn, pos))
}

// store appends a record of events, syncs it, and returns its LSN.
func (r *rig) store(events ...[]byte) uint64 {
	r.t.Helper()
	rec, err := record.Encode(nil, time.Now(), events)
	if err != nil {
		r.t.Fatal(err)
	}
	r.lsn++
	if err := r.ledger.Append(r.lsn, rec); err != nil {
		r.t.Fatal(err)
	}
	if err := r.ledger.Sync(); err != nil {
		r.t.Fatal(err)
	}
	for i, ev := range events {
		r.want[r.id(r.lsn, i)] = ev
	}
	return r.lsn
}

// storeMany stores records of per events each, n events in all.
func (r *rig) storeMany(n, per int) {
	for i := 0; i < n; i += per {
		var evs [][]byte
		for j := i; j < min(i+per, n); j++ {
			evs = append(evs, fmt.Appendf(nil, `{"@timestamp":"2025-01-01T00:00:00Z","message":"event %d","@metadata":{"beat":"filebeat","version":"8.15.0"}}`, j))
		}
		r.store(evs...)
	}
}

func (r *rig) options(hosts []string, mod func(*Options)) Options {
	o := Options{
		Name: "test", Cursor: "lumberjack", Hosts: hosts, Workers: 1, BulkMaxSize: 50,
		Timeout: 10 * time.Second, BackoffInit: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&o)
	}
	return o
}

func (r *rig) cursor() uint64 {
	c, err := r.ledger.Cursor("lumberjack")
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// running is an Output running in the background.
type running = draintest.Running[*Output]

func (r *rig) start(opts Options) *running {
	r.t.Helper()
	out, err := New(r.ledger, opts)
	if err != nil {
		r.t.Fatal(err)
	}
	return draintest.Start(r.t, out)
}

// peer is the Lumberjack destination of these tests.
type peer = lumbertest.Peer

type peerOptions = lumbertest.PeerOptions

var startPeer = lumbertest.StartPeer

// idOf returns the event's @metadata._id.
func idOf(t *testing.T, ev []byte) string {
	t.Helper()
	var m struct {
		Meta struct {
			ID string `json:"_id"`
		} `json:"@metadata"`
	}
	if err := json.Unmarshal(ev, &m); err != nil {
		t.Fatalf("event %s: %v", ev, err)
	}
	return m.Meta.ID
}

// lsnOf is the LSN in a derived id.
func lsnOf(t *testing.T, id string) uint64 {
	parts := strings.Split(id, "-")
	if len(parts) < 3 {
		t.Fatalf("id %q is not derived", id)
	}
	n, err := strconv.ParseUint(parts[len(parts)-2], 10, 64)
	if err != nil {
		t.Fatalf("id %q: %v", id, err)
	}
	return n
}

// withoutDerivedID removes from ev the id member the output inserts
// (wherever it inserts it), to compare the rest byte for byte.
func withoutDerivedID(ev []byte, id string) []byte {
	for _, ins := range []string{`,"_id":"` + id + `"`, `"@metadata":{"_id":"` + id + `"},`, `"@metadata":{"_id":"` + id + `"}`, `"_id":"` + id + `"`} {
		if i := bytes.Index(ev, []byte(ins)); i >= 0 {
			return append(append([]byte(nil), ev[:i]...), ev[i+len(ins):]...)
		}
	}
	return ev
}

// checkAllOnce checks that the peers' events, received together, hold
// every stored event exactly once, under its id, and otherwise byte for
// byte as stored.
func (r *rig) checkAllOnce(received ...[]json.RawMessage) {
	r.t.Helper()
	seen := map[string]bool{}
	for _, events := range received {
		for _, ev := range events {
			id := idOf(r.t, ev)
			if seen[id] {
				r.t.Fatalf("event %s received twice", id)
			}
			seen[id] = true
			want, ok := r.want[id]
			if !ok {
				r.t.Fatalf("unexpected event %s: %s", id, ev)
			}
			got := ev
			if !bytes.Contains(want, []byte(id)) { // a derived id: inserted
				got = withoutDerivedID(ev, id)
			}
			if !bytes.Equal(got, want) {
				r.t.Fatalf("event %s:\n got %s\nwant %s", id, ev, want)
			}
		}
	}
	if len(seen) != len(r.want) {
		r.t.Fatalf("received %d distinct events, want %d", len(seen), len(r.want))
	}
}

// waitFor polls cond until it holds (draintest.WaitFor).
var waitFor = draintest.WaitFor
