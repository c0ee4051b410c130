package lumberjack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/logpond/logpond/output/dlq"
	"github.com/tidwall/gjson"
)

// Refused windows (doc.go, "Refused events").
//
// A Lumberjack receiver refuses a window by closing the connection once
// it has read it, acknowledging none of it (refusedError): a window with
// more events or bytes than it takes, or an event it cannot take. Sending
// the same window again would be refused again for ever, and nothing
// after it would be forwarded. So a window refused refusalsToIsolate
// times in a row is halved, and each half sent on its own, halving again
// whatever is refused again, until what the receiver refuses is a single
// event. That event becomes a dead letter, and counts as done, once the
// receiver has also shown that it takes other events: it ACKed a window
// since the event's window was first refused. Without that, a receiver
// that closes every connection (a broken proxy, a receiver shutting
// down) would turn the whole backlog into dead letters: such an event
// is sent again instead, like any window during an outage.
const refusalsToIsolate = 2

// refusedAgain counts a refusal of b (err is its failure): it reports
// whether the receiver has now refused b refusalsToIsolate times in a
// row. Any other failure resets the count.
func (s *sender) refusedAgain(b *batch, err error) bool {
	var refused *refusedError
	if !errors.As(err, &refused) {
		b.refused = 0
		return false
	}
	if b.refused == 0 {
		b.ackedAt = s.o.acks.Load()
	}
	b.refused++
	return b.refused >= refusalsToIsolate
}

// awaitsEvidence reports whether b was refused repeatedly and the
// receiver has ACKed no window since it was first refused (acks is the
// output's count of ACKed windows): sending b again shows nothing new,
// while another window ACKed would show that the receiver refuses b, not
// every window.
func (b *batch) awaitsEvidence(acks int64) bool {
	return b.refused >= refusalsToIsolate && acks == b.ackedAt
}

// isolate sends the window b, which the receiver refused repeatedly, in
// halves, halving again what is refused again, until every event of it
// is ACKed or, refused alone while the receiver takes other windows,
// dead-lettered. It runs on this sender's connection; other senders go on
// with other windows meanwhile. When the output stops, the host may not
// be used (it backs off past its turn, or another host took over), or it
// fails other than by refusing, what is left of b goes back to the
// retry queue as one window, for any sender; so does a lone event when
// nothing shows yet that the receiver takes other events. It returns an
// error only when the output must stop (the tracker refusing, the
// dead-letter store failing).
func (s *sender) isolate(ctx context.Context, b *batch) error {
	o := s.o
	note := fmt.Sprintf("the receiver %s refused a window of %d events (from LSN %d) %d times, closing the connection without acknowledging any of it: sending it in halves to find the events it refuses (each goes to the output's dead letters once the receiver has acknowledged other windows); see the receiver's log for what it refused (max_window, max_batch_bytes, max_event_bytes, or an event it cannot take)",
		s.h.addr, len(b.events), b.spans[0].lsn, b.refused)
	o.isolating.Store(&note)
	defer o.isolating.Store(nil)
	o.stats.isolated.Add(1)
	o.log.Warn("the receiver refuses a window: sending it in halves to isolate what it refuses", "host", s.h.addr,
		"events", len(b.events), "from_lsn", b.spans[0].lsn, "refusals", b.refused)

	pieces := []*batch{b}
	giveBack := func() error {
		if len(pieces) > 0 {
			s.retry <- join(pieces)
		}
		return nil
	}
	for len(pieces) > 0 {
		p := pieces[0]
		if p.refused >= refusalsToIsolate && len(p.events) > 1 {
			first, rest := p.split()
			pieces = append([]*batch{first, rest}, pieces[1:]...)
			continue
		}
		if ctx.Err() != nil {
			return giveBack()
		}
		ok, wait, changed := o.hosts.turn(s.h)
		if !ok {
			if wait == 0 {
				return giveBack() // another host's turn (failover)
			}
			if sleep(ctx, wait, changed) != nil {
				return giveBack()
			}
			continue
		}
		if s.conn == nil {
			if err := s.dial(ctx); err != nil {
				if ctx.Err() == nil {
					o.hosts.failed(s.h, err)
				}
				return giveBack()
			}
		}
		err, fatal := s.window(ctx, p)
		switch {
		case fatal != nil:
			return fatal
		case err == nil:
			pieces = pieces[1:]
			continue
		case ctx.Err() != nil:
			return giveBack()
		case !s.refusedAgain(p, err):
			if p.refused == 0 {
				return giveBack() // the host fails otherwise: not a refusal
			}
			continue // refused once: once more before halving it
		case len(p.events) > 1:
			continue // halved at the top of the loop
		case !p.awaitsEvidence(o.acks.Load()) && o.opts.DeadLetters != nil:
			if err := s.deadLetter(ctx, p); err != nil {
				if ctx.Err() != nil {
					return giveBack()
				}
				return err
			}
			pieces = pieces[1:]
		case len(pieces) > 1 && !allAwaitEvidence(pieces, o.acks.Load()):
			// The others first: an ACK of one of them shows that the
			// receiver takes other events.
			pieces = append(pieces[1:], p)
		default:
			return giveBack()
		}
	}
	return nil
}

// allAwaitEvidence reports whether every piece awaits evidence.
func allAwaitEvidence(pieces []*batch, acks int64) bool {
	for _, p := range pieces {
		if !p.awaitsEvidence(acks) {
			return false
		}
	}
	return true
}

// deadLetter writes the lone event of p, which the receiver refused
// alone while it took other windows, to the output's dead letters
// (synced), and only then marks it done, so that the cursor never passes
// an event that is neither at a receiver nor in the dead-letter store.
func (s *sender) deadLetter(ctx context.Context, p *batch) error {
	o := s.o
	ev := p.events[0].(json.RawMessage)
	sp := p.spans[0]
	id := gjson.GetBytes(ev, "@metadata._id").String()
	reason := fmt.Sprintf("the receiver %s closed the connection without acknowledging it %d times when it was sent alone, while it acknowledged other windows: it refuses this event (see its log: max_event_bytes, or an event it cannot take)", s.h.addr, p.refused)
	entry := dlq.Entry{
		Stream: o.ledger.StreamID(), LSN: sp.lsn, Position: uint32(sp.pos), Index: s.h.addr, Action: "forward", DocID: id,
		ErrType: "window_refused", Reason: reason, Received: sp.received, Failed: time.Now(), Event: ev,
	}
	if err := o.opts.DeadLetters.Append(ctx, []dlq.Entry{entry}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("lumberjack: output %q: dead-letter store: %w", o.opts.Name, err)
	}
	if err := s.tr.Finish(sp.lsn, 1); err != nil {
		return fmt.Errorf("lumberjack: output %q: %w", o.opts.Name, err)
	}
	o.stats.dead.Add(1)
	o.deadLog.Written([]dlq.Entry{entry})
	return nil
}
