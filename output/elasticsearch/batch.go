package elasticsearch

// item is one event in a bulk request: its action line and its source
// line, both newline-terminated, at buf[start:end] of its batch.
type item struct {
	lsn   uint64
	pos   uint32
	start int
	end   int
}

// batch is one bulk request: NDJSON bytes and the items they hold, in LSN
// order. It belongs to one worker. Its buffer is never reused once sent.
type batch struct {
	buf   []byte
	items []item
}

// body returns the request body for items, a subset of b.items in order:
// b.buf itself when items are all of them, else a new copy.
func (b *batch) body(items []item) []byte {
	if len(items) == len(b.items) {
		return b.buf
	}
	n := 0
	for _, it := range items {
		n += it.end - it.start
	}
	body := make([]byte, 0, n)
	for _, it := range items {
		body = append(body, b.buf[it.start:it.end]...)
	}
	return body
}
