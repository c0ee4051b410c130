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

// undoEntry is one recorded edit: the member at.key of the object at.in
// held old (nil: was absent) before it.
type undoEntry struct {
	at  spot
	old *jsontree.Value
	pos int // for a member removed, where it was; -1 otherwise
}

// put sets p to val as the event's put does, recording what it changes.
func (u *undoLog) put(e *event, p *path, val *jsontree.Value) error {
	var s, made spot
	if err := e.find(&s, p, true, &made); err != nil {
		return err
	}
	u.set(made, s)
	s.set(val)
	return nil
}

// set records that the spot s is about to be set, after a walk that made
// the object made (made.in nil: none). Taking the write back is then
// deleting what the walk made, or putting back what s held.
func (u *undoLog) set(made, s spot) {
	switch {
	case u == nil:
	case made.in != nil:
		u.add(made, nil, -1)
	default:
		u.add(s, s.value(), -1)
	}
}

// del records that the member at s, holding old, is about to be removed.
func (u *undoLog) del(s spot, old *jsontree.Value) {
	if u == nil {
		return
	}
	o, _ := s.in.Object()
	pos, i := -1, 0
	o.Visit(func(k []byte, _ *jsontree.Value) {
		if pos < 0 && string(k) == s.key {
			pos = i
		}
		i++
	})
	u.add(s, old, pos)
}

// add appends an entry. It is filled in place: appending an undoEntry
// literal builds it on the stack and copies it, which costs more than
// the rest of a field write.
func (u *undoLog) add(at spot, old *jsontree.Value, pos int) {
	if u == nil {
		return
	}
	n := len(*u)
	if n == cap(*u) {
		*u = append(*u, undoEntry{at: at, old: old, pos: pos})
		return
	}
	*u = (*u)[:n+1]
	ent := &(*u)[n]
	ent.at, ent.old, ent.pos = at, old, pos
}

// revert takes the recorded edits back, last first: each entry's object
// is then in the event as it was when the edit was recorded.
func (u undoLog) revert() {
	for i := len(u) - 1; i >= 0; i-- {
		ent := &u[i]
		o, _ := ent.at.in.Object()
		switch {
		case ent.pos >= 0:
			insertAt(o, ent.at.key, ent.old, ent.pos)
		case ent.old == nil:
			o.Del(ent.at.key)
		default:
			o.Set(ent.at.key, ent.old) // in place
		}
	}
}

// insertAt puts the member key back into o at position pos.
func insertAt(o *jsontree.Object, key string, v *jsontree.Value, pos int) {
	type kv struct {
		k string
		v *jsontree.Value
	}
	var tail []kv
	i := 0
	o.Visit(func(k []byte, m *jsontree.Value) {
		if i >= pos {
			tail = append(tail, kv{string(k), m})
		}
		i++
	})
	for _, t := range tail {
		o.Del(t.k)
	}
	o.Set(key, v)
	for _, t := range tail {
		o.Set(t.k, t.v)
	}
}
