package main

import (
	le "encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	lj "github.com/elastic/go-lumber/client/v2"
	"github.com/tidwall/gjson"

	"github.com/logpond/logpond/internal/testkit/estest"
	"github.com/logpond/logpond/internal/testkit/powerloss"
	"github.com/logpond/logpond/internal/testkit/syncbuf"
	"github.com/logpond/logpond/journal"
	"github.com/logpond/logpond/ledger"
	"github.com/logpond/logpond/record"
)

// TestPowerCutSoak is the promise under power cuts, as an operator's
// machine would lose power: the journal and the ledger are on two
// loop-mounted ext4 file systems; Beats-like clients send windows as
// fast as they are acknowledged while the real binary drains into
// Elasticsearch; at random moments both file systems lose everything not
// yet fsynced at once (EXT4_IOC_SHUTDOWN with NOLOGFLUSH), logpond is
// killed, the file systems are remounted and logpond starts again. After
// the last cut every event any client saw acknowledged must reach
// Elasticsearch.
//
// After each cut, before the restart, every acknowledged event that
// Elasticsearch lacks must still be in the journal or the ledger: a loss
// is reported at the cut that caused it, as the (connection, sequence)
// range of the window, the journal and ledger LSNs of the windows before
// and after it on its connection, and when its acknowledgement arrived
// relative to the moment the cut began. What never reaches Elasticsearch
// is reported the same way at the end, with the outputs' cursors and every
// warning logpond logged.
//
// In `make test` it runs briefly (6 s of load, two cuts). `make
// soak-power` runs it at scale through LOGPOND_POWERSOAK_SECONDS (seconds
// of load), LOGPOND_POWERSOAK_CUTS and LOGPOND_POWERSOAK_RUNS (runs back
// to back); LOGPOND_POWERSOAK_MIN_EVENTS makes each run acknowledge at
// least that many events whatever the machine's speed (a cut waits until
// its share of them is acknowledged); LOGPOND_POWERSOAK_SEED fixes the
// moments of the cuts.
func TestPowerCutSoak(t *testing.T) {
	skipLong(t)
	p := soakParams{seconds: 6, cuts: 2, conns: 4, window: 256, eventBytes: 512, settle: 120 * time.Second}
	if v, err := strconv.Atoi(os.Getenv("LOGPOND_POWERSOAK_SECONDS")); err == nil && v > 0 {
		p.seconds = v
	}
	if v, err := strconv.Atoi(os.Getenv("LOGPOND_POWERSOAK_CUTS")); err == nil && v > 0 {
		p.cuts = v
	}
	if v, err := strconv.Atoi(os.Getenv("LOGPOND_POWERSOAK_MIN_EVENTS")); err == nil && v > 0 {
		p.minEvents = v
	}
	runs := 1
	if v, err := strconv.Atoi(os.Getenv("LOGPOND_POWERSOAK_RUNS")); err == nil && v > 0 {
		runs = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("LOGPOND_POWERSOAK_SEED"), 10, 64); err == nil {
		seed = v
	}
	for run := range runs {
		t.Run(fmt.Sprintf("run%d", run+1), func(t *testing.T) {
			p.seed = seed + uint64(run)
			powerCutSoak(t, p)
		})
	}
}

type soakParams struct {
	seconds, cuts int
	conns, window int
	eventBytes    int
	minEvents     int           // acknowledged before the last cut, at least
	settle        time.Duration // how long the sink may take after the last restart
	seed          uint64
}

func powerCutSoak(t *testing.T, p soakParams) {
	t.Logf("seed %d: %d s of load, %d cuts, %d connections of %d-event windows of %d B", p.seed, p.seconds, p.cuts, p.conns, p.window, p.eventBytes)
	rng := rand.New(rand.NewPCG(p.seed, 45))
	jdisk := powerloss.New(t, 2<<30)
	ldisk := powerloss.New(t, 4<<30)
	root := t.TempDir()

	sink := newSoakSink(p.conns)
	es, err := estest.Start(estest.Options{Seed: int64(p.seed)})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	es.SetFaults(estest.Faults{ItemHook: sink.hook})

	jdir, ldir := filepath.Join(jdisk.Dir, "journal"), filepath.Join(ldisk.Dir, "ledger")
	config := filepath.Join(root, "logpond.toml")
	// Defaults but for the directories, the ports, a ledger that fits its
	// 4 GiB disk, and retries short enough that the drain after the last
	// cut is not a backoff's wait: the journal, ledger and input timings
	// are the ones users run with.
	if err := os.WriteFile(config, fmt.Appendf(nil, `
[journal]
dir = %q
[ledger]
dir = %q
max_bytes = "3GiB"
[input.beats]
listen = "127.0.0.1:0"
[output.elasticsearch]
hosts = [%q]
retry_initial_interval = "100ms"
retry_max_interval = "1s"
[admin]
listen = ""
`, jdir, ldir, es.URL()), 0o644); err != nil {
		t.Fatal(err)
	}

	clients := newSoakClients(p)
	var lives []*syncbuf.Buffer
	var soakCmd *exec.Cmd
	start := func() string {
		t.Helper()
		cmd, log := startedFull(t, config)
		lives = append(lives, log)
		soakCmd = cmd
		return beatsAddr(t, log.String())
	}
	addr := start()
	clients.start(addr)
	life := time.Duration(p.seconds) * time.Second / time.Duration(p.cuts)
	for cut := range p.cuts {
		// Each life lasts between half and one and a half of its share,
		// and until its share of minEvents is acknowledged.
		time.Sleep(life/2 + time.Duration(rng.Int64N(int64(life))))
		for want := p.minEvents * (cut + 1) / p.cuts; clients.ackedEvents() < want; {
			time.Sleep(50 * time.Millisecond)
		}
		before := clients.ackedEvents()
		cutAt := time.Now()
		if err := powerloss.ShutdownAll(jdisk, ldisk); err != nil {
			t.Error(err)
		}
		if err := soakCmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		soakCmd.Wait()
		jdisk.Remount()
		ldisk.Remount()
		// Every acknowledged event Elasticsearch does not have must be
		// in the journal or the ledger now: otherwise this cut lost it.
		missing := sink.missing(clients)
		var from uint64
		if cs, err := ledger.ReadCursors(ldir); err == nil && len(cs) == 1 {
			from = cs[0].LSN
		}
		m := readStores(t, jdir, ldir, max(from, 64)-63)
		lost := m.check(t, fmt.Sprintf("cut %d", cut+1), missing, p.window, func(conn, seq int) string {
			clients.mu.Lock()
			defer clients.mu.Unlock()
			at, ok := clients.ackedAt[[2]int{conn, seq}]
			if !ok {
				return "acknowledged at an unknown time"
			}
			return fmt.Sprintf("acknowledged %s after the cut began", at.Sub(cutAt))
		})
		if lost > 0 {
			keepEvidence(t, jdir, ldir)
		}
		t.Logf("cut %d: %d events acknowledged (%d at the cut), %d stored, %d lost; journal LSNs %d–%d, ledger LSNs %d–%d from the cursor at %d",
			cut+1, clients.ackedEvents(), before, es.Count(), lost, m.journal[0], m.journal[1], m.ledger[0], m.ledger[1], from)
		addr = start()
		clients.redirect(addr)
	}
	// The last life: each client resends the window it had in flight,
	// then stops; everything acknowledged must reach Elasticsearch.
	clients.stop()
	acked := clients.ackedEvents()
	if acked == 0 {
		t.Fatal("nothing was acknowledged")
	}
	deadline := time.Now().Add(p.settle)
	var missing []seqRange
	for {
		missing = sink.missing(clients)
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	st := es.Stats()
	t.Logf("%d events acknowledged in %d windows, %d documents stored, %d creates answered 409", acked, clients.ackedWindows(), es.Count(), st.Conflicts409)
	if err := soakCmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exitCode(t, soakCmd)
	if len(missing) == 0 {
		return
	}
	n := 0
	for _, r := range missing {
		n += r.to - r.from + 1
	}
	t.Errorf("%d acknowledged events never reached Elasticsearch, in %d ranges", n, len(missing))
	m := readStores(t, jdir, ldir, 1)
	for _, r := range missing {
		t.Errorf("connection %d, seq %d–%d: first window %v", r.conn, r.from, r.to, m.at[[2]int{r.conn, r.from - r.from%p.window}])
	}
	if cs, err := ledger.ReadCursors(ldir); err == nil {
		for _, c := range cs {
			t.Logf("cursor %s at LSN %d (err %v)", c.Name, c.LSN, c.Err)
		}
	}
	for i, log := range lives {
		for line := range strings.Lines(log.String()) {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				t.Logf("life %d: %s", i+1, strings.TrimSpace(line))
			}
		}
	}
}

// seqRange is events from..to (inclusive) of one connection.
type seqRange struct{ conn, from, to int }

// soakClients are Beats-like clients: each connection sends windows of
// consecutive sequence numbers as fast as they are acknowledged, resends a
// window that was not acknowledged on its next connection (as Filebeat
// does) and records which events were acknowledged.
type soakClients struct {
	p    soakParams
	pad  string
	wg   sync.WaitGroup
	addr atomic.Pointer[string]
	halt atomic.Bool

	mu      sync.Mutex
	acked   [][]bool             // per connection, per event sequence number
	count   int                  // the events acked holds true
	ackedAt map[[2]int]time.Time // when each window (connection, first sequence number) was acknowledged
}

func newSoakClients(p soakParams) *soakClients {
	c := &soakClients{p: p, acked: make([][]bool, p.conns), ackedAt: map[[2]int]time.Time{}}
	// Hex noise: the events compress about as little as hashed ids and
	// tokens do, so the journal and the ledger turn their segments over.
	b := make([]byte, p.eventBytes)
	r := rand.New(rand.NewPCG(p.seed, 1))
	for i := 0; i+8 <= len(b); i += 8 {
		le.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	c.pad = hex.EncodeToString(b)
	return c
}

func (c *soakClients) start(addr string) {
	c.addr.Store(&addr)
	for conn := range c.p.conns {
		c.wg.Go(func() { c.run(conn) })
	}
}

// redirect points the clients at a restarted logpond.
func (c *soakClients) redirect(addr string) { c.addr.Store(&addr) }

// stop makes every client end after its window in flight is acknowledged
// (or could not be) and waits for them.
func (c *soakClients) stop() {
	c.halt.Store(true)
	c.wg.Wait()
}

// event is a soak event of about eventBytes: the connection and sequence
// number the sink counts by, and noise.
func (c *soakClients) event(conn, seq int) json.RawMessage {
	head := fmt.Sprintf(`{"@timestamp":"2026-12-05T10:00:00.000Z","@metadata":{"beat":"filebeat","version":"9.3.0"},"soak":{"c":%d,"s":%d},"message":"`, conn, seq)
	n := max(c.p.eventBytes-len(head)-2, 8)
	off := (seq * 13) % (len(c.pad) - n)
	return json.RawMessage(head + c.pad[off:off+n] + `"}`)
}

func (c *soakClients) run(conn int) {
	next := 0 // the first event of the window to send
	var cl *lj.SyncClient
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	resent := false // the window in flight was sent again after a failure
	for {
		if cl == nil {
			var err error
			cl, err = lj.SyncDial(*c.addr.Load(), lj.Timeout(10*time.Second))
			if err != nil {
				cl = nil
				if c.halt.Load() && resent {
					return
				}
				time.Sleep(20 * time.Millisecond)
				continue
			}
		}
		data := make([]any, c.p.window)
		for i := range data {
			data[i] = c.event(conn, next+i)
		}
		n, err := cl.Send(data)
		if n > 0 {
			c.mu.Lock()
			for len(c.acked[conn]) < next+n {
				c.acked[conn] = append(c.acked[conn], false)
			}
			for i := range n {
				if !c.acked[conn][next+i] {
					c.acked[conn][next+i] = true
					c.count++
				}
			}
			c.ackedAt[[2]int{conn, next}] = time.Now()
			c.mu.Unlock()
			next += n
		}
		if err != nil {
			cl.Close()
			cl = nil
			resent = c.halt.Load()
			continue
		}
		if c.halt.Load() {
			return
		}
	}
}

func (c *soakClients) ackedEvents() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

func (c *soakClients) ackedWindows() int { return c.ackedEvents() / c.p.window }

// soakSink counts the events Elasticsearch stored, by connection and
// sequence number (an ItemHook of the test Elasticsearch).
type soakSink struct {
	mu     sync.Mutex
	stored [][]uint8
}

func newSoakSink(conns int) *soakSink { return &soakSink{stored: make([][]uint8, conns)} }

func (s *soakSink) hook(action, index, id string, source []byte) (int, string, string, bool) {
	c, seq := gjson.GetBytes(source, "soak.c"), gjson.GetBytes(source, "soak.s")
	if !c.Exists() || !seq.Exists() {
		return 400, "mapper_parsing_exception", "soak event without soak.c and soak.s", true
	}
	conn, n := int(c.Int()), int(seq.Int())
	s.mu.Lock()
	defer s.mu.Unlock()
	if conn < 0 || conn >= len(s.stored) || n < 0 {
		return 400, "mapper_parsing_exception", "soak event with a connection or sequence number out of range", true
	}
	for len(s.stored[conn]) <= n {
		s.stored[conn] = append(s.stored[conn], 0)
	}
	s.stored[conn][n] = min(s.stored[conn][n]+1, 255)
	return 0, "", "", false
}

// missing lists the acknowledged events the sink has not seen, as ranges.
func (s *soakSink) missing(c *soakClients) []seqRange {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []seqRange
	for conn, acked := range c.acked {
		for seq, ok := range acked {
			if !ok || (seq < len(s.stored[conn]) && s.stored[conn][seq] > 0) {
				continue
			}
			if k := len(out) - 1; k >= 0 && out[k].conn == conn && out[k].to == seq-1 {
				out[k].to = seq
				continue
			}
			out = append(out, seqRange{conn, seq, seq})
		}
	}
	return out
}

// storeMap is where the soak's windows are in the journal and the ledger
// on disk, read while logpond is stopped: by (connection, first sequence
// number) of each record's events, the record's journal and ledger LSNs.
type storeMap struct {
	at                map[[2]int]*storeHit
	journal, ledger   [2]uint64 // first and last LSN read of each
	journalNote, note string    // how each read ended
}

type storeHit struct{ journal, ledger uint64 }

func (h *storeHit) String() string {
	if h == nil {
		return "in neither the journal nor the ledger"
	}
	return fmt.Sprintf("journal LSN %d, ledger LSN %d (0: not there)", h.journal, h.ledger)
}

// readStores maps the journal in jdir and the ledger in ldir from LSN
// ledgerFrom on.
func readStores(t *testing.T, jdir, ldir string, ledgerFrom uint64) *storeMap {
	t.Helper()
	m := &storeMap{at: map[[2]int]*storeHit{}}
	dz, err := record.NewDecompressor()
	if err != nil {
		t.Fatal(err)
	}
	defer dz.Close()
	add := func(lsn uint64, rec []byte, set func(*storeHit)) {
		dec, err := dz.Decode(rec, record.MaxBlockBytes)
		if err != nil {
			t.Logf("LSN %d does not decode: %v", lsn, err)
			return
		}
		for ev := range dec.Events() {
			k := [2]int{int(gjson.GetBytes(ev, "soak.c").Int()), int(gjson.GetBytes(ev, "soak.s").Int())}
			h := m.at[k]
			if h == nil {
				h = &storeHit{}
				m.at[k] = h
			}
			set(h)
			break // a window is one record: its first event names it
		}
	}
	span := func(s *[2]uint64, lsn uint64) {
		if s[0] == 0 {
			s[0] = lsn
		}
		s[1] = lsn
	}
	jr, err := journal.NewDirReader(jdir, 1)
	if err != nil {
		t.Fatalf("journal: %v", err)
	}
	for jr.Next() {
		lsn := jr.LSN()
		span(&m.journal, lsn)
		add(lsn, jr.Record(), func(h *storeHit) { h.journal = lsn })
	}
	m.journalNote = fmt.Sprintf("tail %v, err %v", jr.Tail(), jr.Err())
	lr, err := ledger.NewDirReader(ldir, ledgerFrom, ledger.InspectOptions{})
	if err != nil {
		t.Fatalf("ledger: %v", err)
	}
	defer lr.Close()
	for lr.Next() {
		lsn := lr.LSN()
		if lr.Record() == nil {
			t.Logf("ledger damage at LSN %d: %v", lsn, lr.Damage())
			continue
		}
		span(&m.ledger, lsn)
		add(lsn, lr.Record(), func(h *storeHit) { h.ledger = lsn })
	}
	m.note = fmt.Sprintf("tail %v, err %v", lr.Tail(), lr.Err())
	return m
}

// check reports every missing range that neither store holds any more
// (lost), with where the windows around it are, and returns how many
// events were lost.
func (m *storeMap) check(t *testing.T, when string, missing []seqRange, window int, ackedAt func(conn, seq int) string) int {
	t.Helper()
	lost := 0
	for _, r := range missing {
		for w := r.from - r.from%window; w <= r.to; w += window {
			if m.at[[2]int{r.conn, w}] != nil {
				continue
			}
			lost += min(w+window-1, r.to) - max(w, r.from) + 1
			t.Errorf("%s: acknowledged window of connection %d, seq %d–%d (%s), is in neither the journal (LSNs %d–%d, %s) nor the ledger (LSNs %d–%d read, %s); the window before it: %v; the window after it: %v",
				when, r.conn, w, w+window-1, ackedAt(r.conn, w), m.journal[0], m.journal[1], m.journalNote, m.ledger[0], m.ledger[1], m.note,
				m.at[[2]int{r.conn, w - window}], m.at[[2]int{r.conn, w + window}])
		}
	}
	return lost
}

// keepEvidence copies the journal and the ledger's cursors to a directory
// that outlives the test, and logs the files of both stores, for the
// analysis of a loss.
func keepEvidence(t *testing.T, jdir, ldir string) {
	t.Helper()
	keep, err := os.MkdirTemp("", "powersoak-evidence-")
	if err != nil {
		t.Log(err)
		return
	}
	for _, d := range []string{jdir, ldir} {
		out, _ := exec.Command("find", d, "-printf", "%p size=%s inode=%i mtime=%TT\n").CombinedOutput()
		t.Logf("files:\n%s", out)
	}
	if out, err := exec.Command("cp", "-a", jdir, filepath.Join(keep, "journal")).CombinedOutput(); err != nil {
		t.Logf("cp: %v: %s", err, out)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(ldir, "cursors"), filepath.Join(keep, "cursors")).CombinedOutput(); err != nil {
		t.Logf("cp: %v: %s", err, out)
	}
	t.Logf("the journal and the cursors are kept in %s", keep)
}
