package processors

import "github.com/logpond/logpond/internal/jsontree"

// undoLog records a processor's edits of an event so that, when a later
// field fails, the processor can put the event back as it was, member
// order included, as Filebeat restores its backup of the event. Its
// methods on a nil *undoLog record nothing: a processor that cannot fail
// halfway passes nil.
type undoLog []undoEntry

// undoLog returns the event's undo log, empty; give it back with
// keepUndo so that its memory serves the next processor.
func (e *event) undoLog() undoLog { return e.undo[:0] }

func (e *event) keepUndo(u undoLog) { e.undo = u[:0] }

// undoEntry is one recorded edit of the member at.key of the object
// at.in: a set, when it held old before (nil: was absent), or its
// removal (taken).
type undoEntry struct {
	at    spot
	old   *jsontree.Value
	taken jsontree.Member
	took  bool
}

// set records that the spot s is about to be set, after a walk that made
// the object made (made.in nil: none). Taking the write back is then
// deleting what the walk made, or putting back what s held.
func (u *undoLog) set(made, s spot) {
	switch {
	case u == nil:
	case made.in != nil:
		u.add(made, nil)
	default:
		u.add(s, s.value())
	}
}

// took records that the member m was taken from the spot s.
func (u *undoLog) took(s spot, m jsontree.Member) {
	u.add(s, nil)
	ent := &(*u)[len(*u)-1]
	ent.taken, ent.took = m, true
}

// add appends an entry for a set. It is filled in place: appending an
// undoEntry literal builds it on the stack and copies it, which costs
// more than the rest of a field write.
func (u *undoLog) add(at spot, old *jsontree.Value) {
	if u == nil {
		return
	}
	n := len(*u)
	if n == cap(*u) {
		*u = append(*u, undoEntry{at: at, old: old})
		return
	}
	*u = (*u)[:n+1]
	ent := &(*u)[n]
	ent.at, ent.old, ent.took = at, old, false
}

// revert takes the recorded edits back, last first: each entry's object
// is then in the event as it was when the edit was recorded, so members
// go back where they were.
func (u undoLog) revert() {
	for i := len(u) - 1; i >= 0; i-- {
		ent := &u[i]
		o, _ := ent.at.in.Object()
		switch {
		case ent.took:
			o.Restore(ent.taken)
		case ent.old == nil:
			o.Del(ent.at.key)
		default:
			o.Set(ent.at.key, ent.old) // in place
		}
	}
}
