// Package jsontree holds a JSON document as a tree that is parsed lazily,
// edited in place and serialized once: what a processor chain needs to
// run several processors on one event for the cost of about one parse
// and one copy.
//
// Text from outside (Parse) is validated with github.com/tidwall/gjson;
// text known to be valid (ParseValid: the ledger's events, which the
// input validated) is not checked again. Then:
//
//   - An object or array is split into members only when something reads
//     or edits it. One nobody touched is written back as the bytes it was
//     read from: an event whose chain reads message and writes three
//     fields costs a scan of its top level, not a full parse.
//   - Scalars keep their text as read (strings escaped as they were), and
//     are written back as is; only values built here are encoded, with
//     JSON's escaping: control characters as \u00XX, invalid UTF-8 as
//     U+FFFD, so that the output is always valid JSON.
//   - Deleting a member of an object nobody split cuts it out of the
//     object's text, found by searching for its key (Delete).
//   - A caller that builds a whole subtree can write its JSON text into
//     the arena and hold it as one lazy value (Arena.Text, NewText).
//
// A Value belongs to the Arena (or Parser) that made it and is valid
// until its Reset (or next Parse); nothing here is safe for concurrent
// use.
package jsontree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Type is the JSON type of a Value.
type Type uint8

// The JSON types.
const (
	TypeNull Type = iota
	TypeObject
	TypeArray
	TypeString
	TypeNumber
	TypeTrue
	TypeFalse
)

func (t Type) String() string {
	switch t {
	case TypeObject:
		return "object"
	case TypeArray:
		return "array"
	case TypeString:
		return "string"
	case TypeNumber:
		return "number"
	case TypeTrue:
		return "true"
	case TypeFalse:
		return "false"
	}
	return "null"
}

// Value is one JSON value.
type Value struct {
	t Type
	// sdone says s holds a string's decoded text.
	sdone bool
	// expanded says kvs (objects) or items (arrays) hold the members;
	// an expanded container is written from them.
	expanded bool
	// raw is the value's JSON text as read ("" for a value built here).
	// A container is written back as raw until it is expanded.
	raw string
	// s is a string's decoded text (once sdone), or a built number's
	// text.
	s   string
	kvs []kv
	// keys has the keyBit of every member of kvs set (and may have
	// bits of members since removed): a clear bit means no such key.
	keys  uint64
	items []*Value
	a     *Arena // where the members of a lazy container come from
}

type kv struct {
	k      string
	rawKey string // the key as read, quotes included ("" when set here)
	v      *Value
}

// Object is a Value of TypeObject, seen through its members.
type Object Value

// Type returns v's JSON type.
func (v *Value) Type() Type { return v.t }

var errNotObject = errors.New("jsontree: not an object")

// Object returns v as an Object, or an error when it is not one.
func (v *Value) Object() (*Object, error) {
	if v.t != TypeObject {
		return nil, fmt.Errorf("%w: it is %s", errNotObject, v.t)
	}
	v.expand()
	return (*Object)(v), nil
}

// Array returns the items of v, or an error when it is not an array. The
// slice is v's own: change items with SetArrayItem.
func (v *Value) Array() ([]*Value, error) {
	if v.t != TypeArray {
		return nil, fmt.Errorf("jsontree: not an array: it is %s", v.t)
	}
	v.expand()
	return v.items, nil
}

// StringBytes returns a string's decoded bytes, which must not be
// changed; an error when v is not a string.
func (v *Value) StringBytes() ([]byte, error) {
	if v.t != TypeString {
		return nil, fmt.Errorf("jsontree: not a string: it is %s", v.t)
	}
	s := v.Str()
	return unsafe.Slice(unsafe.StringData(s), len(s)), nil
}

// Str returns a string's decoded text ("" when v is not a string),
// decoding it on first use.
func (v *Value) Str() string {
	if v.t != TypeString {
		return ""
	}
	if !v.sdone {
		v.s, v.sdone = v.a.decode(v.raw), true
	}
	return v.s
}

// numberText is a number's JSON text.
func (v *Value) numberText() string {
	if v.raw != "" {
		return v.raw
	}
	return v.s
}

// Float64 returns a number's value.
func (v *Value) Float64() (float64, error) {
	if v.t != TypeNumber {
		return 0, fmt.Errorf("jsontree: not a number: it is %s", v.t)
	}
	return strconv.ParseFloat(v.numberText(), 64)
}

// Int64 returns a number's value when it is an integer that fits.
func (v *Value) Int64() (int64, error) {
	if v.t != TypeNumber {
		return 0, fmt.Errorf("jsontree: not a number: it is %s", v.t)
	}
	return strconv.ParseInt(v.numberText(), 10, 64)
}

// Get walks keys through nested objects and returns the value there, or
// nil.
func (v *Value) Get(keys ...string) *Value {
	for _, k := range keys {
		if v == nil || v.t != TypeObject {
			return nil
		}
		o, _ := v.Object()
		v = o.Get(k)
	}
	return v
}

// Set sets key in v when it is an object (nothing otherwise).
func (v *Value) Set(key string, val *Value) {
	if o, err := v.Object(); err == nil {
		o.Set(key, val)
	}
}

// Del removes key from v when it is an object.
func (v *Value) Del(key string) {
	if o, err := v.Object(); err == nil {
		o.Del(key)
	}
}

// SetArrayItem sets the item at idx of an array: idx may be the length
// (an append); past it, the gap is filled with nulls. Nothing happens
// when v is not an array.
func (v *Value) SetArrayItem(idx int, val *Value) {
	if v.t != TypeArray || idx < 0 {
		return
	}
	v.expand()
	for len(v.items) < idx {
		v.items = append(v.items, valueNull)
	}
	if idx == len(v.items) {
		v.items = append(v.items, val)
		return
	}
	v.items[idx] = val
}

// Get returns the member key, or nil.
func (o *Object) Get(key string) *Value {
	if i := o.index(key); i >= 0 {
		return o.kvs[i].v
	}
	return nil
}

// index returns the position of member key, or -1. Objects are searched
// in order (events have tens of members, and keep their order); the
// length and first byte are compared before the rest, which rules out
// most members without a call to compare memory. Before that, the
// object's key bits rule out most absent keys, which processors look
// up as often as present ones (the fields they are about to add).
func (o *Object) index(key string) int {
	if o.keys&keyBit(key) == 0 {
		return -1
	}
	if key == "" {
		for i := range o.kvs {
			if o.kvs[i].k == "" {
				return i
			}
		}
		return -1
	}
	c := key[0]
	for i := range o.kvs {
		k := o.kvs[i].k
		if len(k) == len(key) && k[0] == c && k == key {
			return i
		}
	}
	return -1
}

// Set sets member key to val, in place when it exists, else last.
func (o *Object) Set(key string, val *Value) { o.SetQuoted(key, "", val) }

// Quote returns s as a JSON string, quotes included: the form SetQuoted
// and SetNewQuoted take.
func Quote(s string) string { return string(AppendString(nil, s)) }

// SetQuoted is Set with the key also given as Quote(key), which is
// written as is when the object is serialized. Keys a processor chain
// sets on every event are quoted once, when it is compiled, instead of
// being checked for escapes on every event. An empty quoted is allowed:
// the key is then quoted when written.
func (o *Object) SetQuoted(key, quoted string, val *Value) {
	if val == nil {
		val = valueNull
	}
	if i := o.index(key); i >= 0 {
		o.kvs[i].v = val
		return
	}
	o.addMember(key, quoted, val)
}

// SetNewQuoted adds member key, which the caller knows o does not hold
// (it just looked): SetQuoted without the search.
func (o *Object) SetNewQuoted(key, quoted string, val *Value) {
	if val == nil {
		val = valueNull
	}
	o.addMember(key, quoted, val)
}

// Del removes member key.
func (o *Object) Del(key string) {
	if i := o.index(key); i >= 0 {
		o.kvs = append(o.kvs[:i], o.kvs[i+1:]...)
	}
}

// A Member is a member taken out of an object by Take, with its place,
// to be put back by Restore.
type Member struct {
	m   kv
	pos int
}

// Take removes member key (its first occurrence, the one Get returns)
// from o and returns it, key spelling and place included; ok is false
// when o has no such member.
func (o *Object) Take(key string) (m Member, ok bool) {
	i := o.index(key)
	if i < 0 {
		return Member{}, false
	}
	m = Member{m: o.kvs[i], pos: i}
	o.kvs = append(o.kvs[:i], o.kvs[i+1:]...)
	return m, true
}

// Restore puts back a member Take removed from o, at its place: o must
// hold the members it held then (as undoing later edits, last first,
// leaves it), so that members with the same key, and the key as it was
// written, come back as they were.
func (o *Object) Restore(m Member) {
	pos := min(m.pos, len(o.kvs))
	o.kvs = slices.Insert(o.kvs, pos, m.m)
	o.keys |= keyBit(m.m.k)
}

// Delete removes member key from the object v and reports whether it was
// there (false when v is not an object). An object not split yet stays
// whole: the member is cut out of its text, which is copied into the
// arena without it. That costs one scan and one copy, where splitting
// would make a Value of every member and write each back one by one.
func (v *Value) Delete(key string) bool {
	if v.t != TypeObject {
		return false
	}
	if v.expanded || v.raw == "" {
		o, _ := v.Object()
		i := o.index(key)
		if i < 0 {
			return false
		}
		o.kvs = append(o.kvs[:i], o.kvs[i+1:]...)
		return true
	}
	a, s := v.a, v.raw
	from, to, found, sure := findMember(s, key)
	if !sure {
		from, to, found = walkMember(a, s, key)
	}
	if !found {
		return false
	}
	at := len(a.buf)
	a.buf = append(a.buf, s[:from]...)
	a.buf = append(a.buf, s[to:]...)
	v.raw = a.text(at)
	return true
}

// walkMember finds member key of the object text s member by member,
// decoding keys written with escapes; from and to are as findMember's.
func walkMember(a *Arena, s, key string) (from, to int, found bool) {
	prevEnd := -1 // where the previous member's value ends
	i := skipSpace(s, 1)
	for i < len(s) && s[i] != '}' {
		keyEnd := endOfString(s, i)
		if keyEnd < 0 {
			return 0, 0, false
		}
		start := i
		k := s[i+1 : keyEnd-1]
		// A key with an escape is longer as written than decoded: only
		// such a key can match without being equal as written.
		if len(k) > len(key) && strings.IndexByte(k, '\\') >= 0 {
			k = a.decode(s[i:keyEnd])
		}
		i = skipSpace(s, keyEnd)
		if i >= len(s) || s[i] != ':' {
			return 0, 0, false
		}
		end := endOfValue(s, skipSpace(s, i+1))
		if end < 0 {
			return 0, 0, false
		}
		next := skipSpace(s, end)
		if k == key {
			// Cut the member with one comma: the one after it, or
			// the one before it for the last member.
			cutFrom, cutTo := start, next
			if next < len(s) && s[next] == ',' {
				cutTo = skipSpace(s, next+1)
			} else if prevEnd >= 0 {
				cutFrom = prevEnd
			}
			return cutFrom, cutTo, true
		}
		prevEnd, i = end, next
		if i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
		}
	}
	return 0, 0, false
}

// addMember appends member key to the object o. Filling the slot in
// place, when there is room, is several times cheaper than appending a
// kv literal, which is built on the stack and then copied.
func (o *Object) addMember(key, rawKey string, v *Value) {
	o.keys |= keyBit(key)
	n := len(o.kvs)
	if n == cap(o.kvs) {
		o.kvs = append(o.kvs, kv{k: key, rawKey: rawKey, v: v})
		return
	}
	o.kvs = o.kvs[:n+1]
	m := &o.kvs[n]
	m.k, m.rawKey, m.v = key, rawKey, v
}

// keyBit is the bit of key in an object's key bits: a hash of its
// length and its first and last bytes.
func keyBit(key string) uint64 {
	h := uint(len(key))
	if len(key) > 0 {
		h += uint(key[0]) + uint(key[len(key)-1])<<2
	}
	return 1 << (h & 63)
}

// findMember looks for member key of the object text s by searching for
// the key's text, where walking the members would scan every member
// before it: drop_fields takes out the last members of large objects as
// often as the first. from and to are what to cut to remove the member
// with one comma (the one after it, or before it for the last member).
//
// sure is false when the search cannot tell: key was not found as
// written, and s holds escapes, so it may be there written with some.
// Duplicate keys are not looked for: the first one found is the member.
func findMember(s, key string) (from, to int, found, sure bool) {
	open, _, end, found, sure := locateMember(s, key)
	if !found {
		return 0, 0, false, sure
	}
	next := skipSpace(s, end)
	if next < len(s) && s[next] == ',' {
		return open, skipSpace(s, next+1), true, true
	}
	// The last member: cut the comma before it, and the space around
	// that comma.
	from = open
	j := open - 1
	for j > 0 && isSpace(s[j]) {
		j--
	}
	if s[j] == ',' {
		for j--; j > 0 && isSpace(s[j]); j-- {
		}
		from = j + 1
	}
	return from, next, true, true
}

// locateMember is findMember's search: where member key of the object
// text s starts (its key's opening quote), and where its value starts
// and ends.
func locateMember(s, key string) (open, value, end int, found, sure bool) {
	if !searchable(key) {
		return 0, 0, 0, false, false
	}
	// Only a flat object is sure to hold every key written at its own
	// depth; in another, a candidate is checked to be at depth one.
	flat := strings.IndexByte(s[1:], '{') < 0 && strings.IndexByte(s[1:len(s)-1], '[') < 0
	for off := 1; off < len(s); {
		q := indexShort(s, key, off)
		if q < 0 {
			break
		}
		off = q + 1
		open, closing := q-1, q+len(key)
		if s[open] != '"' || closing >= len(s) || s[closing] != '"' || escaped(s, open) {
			continue
		}
		// An unescaped quote, the key, and a quote are one string in
		// valid JSON (the key holds no quote, backslash, colon or
		// comma); followed by a colon, a key.
		colon := skipSpace(s, closing+1)
		if colon >= len(s) || s[colon] != ':' {
			continue
		}
		value = skipSpace(s, colon+1)
		end := endOfValue(s, value)
		if end < 0 {
			return 0, 0, 0, false, false
		}
		if !flat && closeOf(s, end, 1) != len(s) {
			continue // a member of an object inside this one
		}
		return open, value, end, true, true
	}
	if strings.IndexByte(s, '\\') >= 0 {
		return 0, 0, 0, false, false
	}
	return 0, 0, 0, false, true
}

// Peek returns member key of the object v for reading, or nil (also when
// v is not an object). An object nobody split is searched rather than
// split, and the member returned is then a value of its own: changing it
// changes nothing in v (Get returns the member itself). A condition that
// reads one field of a large object, or of a subtree a processor wrote as
// text, costs a search instead of a split.
func (v *Value) Peek(key string) *Value {
	if v.t != TypeObject {
		return nil
	}
	if v.expanded || v.raw == "" {
		return (*Object)(v).Get(key)
	}
	_, value, end, found, sure := locateMember(v.raw, key)
	switch {
	case !sure:
		o, _ := v.Object()
		return o.Get(key)
	case !found:
		return nil
	}
	return v.a.lazy(v.raw[value:end])
}

// indexShort returns the index of the first key in s at or after off, or
// -1. It searches windows of 64 bytes: strings.Index runs its vectorized
// search on a text that short, where on a longer one it stops at every
// byte equal to the key's first, which for keys of events ('m' of
// "mac" in host's "name", "hostname", ...) costs several times as much.
func indexShort(s, key string, off int) int {
	const window = 64
	if len(key) >= window/2 {
		if i := strings.Index(s[off:], key); i >= 0 {
			return off + i
		}
		return -1
	}
	for off+len(key) <= len(s) {
		end := min(off+window, len(s))
		if i := strings.Index(s[off:end], key); i >= 0 {
			return off + i
		}
		off = end - len(key) + 1 // a key across the window's end
	}
	return -1
}

// searchable reports whether key can be searched for as written. A key
// with a byte JSON must escape is never written as is. And only a key
// without a colon or comma is sure to be a whole string where it is found
// between quotes: '":"' could be a closing quote, a colon, an opening
// quote.
func searchable(key string) bool {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c == '"' || c == '\\' || c == ':' || c == ',' {
			return false
		}
	}
	return key != ""
}

// escaped reports whether s[i] follows an odd run of backslashes.
func escaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Len is the number of members.
func (o *Object) Len() int { return len(o.kvs) }

// Visit calls f on each member in order; key must not be kept or
// changed, and f must not add or remove members.
func (o *Object) Visit(f func(key []byte, v *Value)) {
	for i := range o.kvs {
		k := o.kvs[i].k
		f(unsafe.Slice(unsafe.StringData(k), len(k)), o.kvs[i].v)
	}
}

// Reset empties the object (its members are dropped).
func (o *Object) Reset() { o.kvs, o.keys = o.kvs[:0], 0 }

// expand splits a lazy container into its members: one level, each
// member itself lazy.
func (v *Value) expand() {
	if v.expanded {
		return
	}
	v.expanded = true
	if v.raw == "" {
		return
	}
	a, s := v.a, v.raw
	v.kvs, v.items, v.keys = v.kvs[:0], v.items[:0], 0
	i := skipSpace(s, 1) // past the bracket
	for i < len(s) && s[i] != '}' && s[i] != ']' {
		var key, rawKey string
		if v.t == TypeObject {
			if s[i] != '"' {
				return
			}
			q, escapes := skipString(s, i+1)
			if q < 0 {
				return
			}
			rawKey, key = s[i:q+1], s[i+1:q]
			if escapes {
				key = a.decode(rawKey)
			}
			i = skipSpace(s, q+1)
			if i >= len(s) || s[i] != ':' {
				return
			}
			i = skipSpace(s, i+1)
		}
		end := endOfValue(s, i)
		if end < 0 {
			return
		}
		m := a.lazy(s[i:end])
		if v.t == TypeObject {
			(*Object)(v).addMember(key, rawKey, m)
		} else {
			v.items = append(v.items, m)
		}
		i = skipSpace(s, end)
		if i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
		}
	}
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index after the string that starts at s[i]
// (a quote), or -1.
func endOfString(s string, i int) int {
	if i >= len(s) || s[i] != '"' {
		return -1
	}
	if k, _ := skipString(s, i+1); k >= 0 {
		return k + 1
	}
	return -1
}

// skipString returns the index of the quote that ends the string whose
// text starts at s[i], or -1, and whether the string holds an escape. It
// reads eight bytes at a time, and finds the first quote or backslash of
// a word from its bits: Beats events are mostly short strings, where a
// byte loop to find it, or a call to the runtime's byte search, costs as
// much as the rest of the scan.
func skipString(s string, i int) (end int, escapes bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i+8 <= len(s) {
		w := binary.LittleEndian.Uint64([]byte(s[i : i+8]))
		q, b := w^(ones*'"'), w^(ones*'\\')
		// The lowest flagged byte is a quote or a backslash; flags
		// above it may be false (the subtraction's borrow).
		m := ((q-ones)&^q | (b-ones)&^b) & highs
		if m == 0 {
			i += 8
			continue
		}
		i += bits.TrailingZeros64(m) >> 3
		if s[i] == '"' {
			return i, escapes
		}
		i += 2 // a backslash and the byte it escapes
		escapes = true
	}
	for ; i < len(s); i++ {
		switch s[i] {
		case '"':
			return i, escapes
		case '\\':
			i++
			escapes = true
		}
	}
	return -1, escapes
}

// endOfValue returns the index after the value that starts at s[i], or
// -1 when there is none.
func endOfValue(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '"':
		return endOfString(s, i)
	case '{', '[':
		return endOfContainer(s, i)
	}
	j := i
	for j < len(s) {
		switch s[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	return j
}

// endOfContainer returns the index after the object or array that starts
// at s[i], or -1.
func endOfContainer(s string, i int) int { return closeOf(s, i, 0) }

// structural marks the bytes closeOf stops at.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// closeOf returns the index after the bracket that closes the depth-th
// container around s[i] (i outside any string), or -1: with depth 0 and
// s[i] an opening bracket, the end of that container; with depth 1, the
// end of the container holding s[i]. It is the hot loop of a lazy parse:
// every container a chain does not touch is skipped here. Strings are
// skipped eight bytes at a time; the bytes between them one at a time,
// which measured faster than visiting only the flagged bytes of each
// word, on the short strings of Beats events.
func closeOf(s string, i, depth int) int {
	for j := i; j < len(s); j++ {
		c := s[j]
		if !structural[c] {
			continue
		}
		switch c {
		case '"':
			// endOfString, inlined: most strings here are short keys
			// and values, where the call costs as much as the scan.
			k, _ := skipString(s, j+1)
			if k < 0 {
				return -1
			}
			j = k
		case '{', '[':
			depth++
		default:
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return -1
}

// lazy makes the Value of the JSON text raw, one valid value.
func (a *Arena) lazy(raw string) *Value {
	v := a.alloc()
	v.raw = raw
	switch raw[0] {
	case '"':
		v.t = TypeString
	case '{':
		v.t = TypeObject
	case '[':
		v.t = TypeArray
	case 't':
		v.t = TypeTrue
	case 'f':
		v.t = TypeFalse
	case 'n':
		v.t = TypeNull
	default:
		v.t = TypeNumber
	}
	return v
}

// decode returns the text of the JSON string raw (quotes included): a
// substring of raw when it holds no escape, else decoded into the
// arena's buffer.
func (a *Arena) decode(raw string) string {
	if len(raw) < 2 {
		return ""
	}
	body := raw[1 : len(raw)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body
	}
	start := len(a.buf)
	for len(body) > 0 {
		k := strings.IndexByte(body, '\\')
		if k < 0 || k+1 >= len(body) {
			a.buf = append(a.buf, body...)
			break
		}
		a.buf = append(a.buf, body[:k]...)
		c := body[k+1]
		body = body[k+2:]
		switch c {
		case 'n':
			a.buf = append(a.buf, '\n')
		case 't':
			a.buf = append(a.buf, '\t')
		case 'r':
			a.buf = append(a.buf, '\r')
		case 'b':
			a.buf = append(a.buf, '\b')
		case 'f':
			a.buf = append(a.buf, '\f')
		case 'u':
			r, n := decodeU(body)
			if n == 0 {
				a.buf = append(a.buf, '\\', 'u')
				continue
			}
			a.buf = utf8.AppendRune(a.buf, r)
			body = body[n:]
		default: // '"', '\\', '/'
			a.buf = append(a.buf, c)
		}
	}
	return a.text(start)
}

// decodeU decodes the hex digits after a \u (and a low surrogate's
// escape after a high one); n is how many bytes it used, 0 when none.
func decodeU(s string) (rune, int) {
	r, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if len(s) >= 10 && s[4] == '\\' && s[5] == 'u' {
			if lo, ok := hex4(s[6:]); ok {
				if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
					return d, 10
				}
			}
		}
		return utf8.RuneError, 4
	}
	return r, 4
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// MarshalTo appends v's JSON text to dst.
func (v *Value) MarshalTo(dst []byte) []byte {
	switch v.t {
	case TypeObject:
		if !v.expanded {
			return append(dst, v.raw...)
		}
		dst = append(dst, '{')
		for i := range v.kvs {
			if i > 0 {
				dst = append(dst, ',')
			}
			m := &v.kvs[i]
			if m.rawKey != "" {
				dst = append(dst, m.rawKey...)
			} else {
				dst = AppendString(dst, m.k)
			}
			dst = append(dst, ':')
			dst = m.v.MarshalTo(dst)
		}
		return append(dst, '}')
	case TypeArray:
		if !v.expanded {
			return append(dst, v.raw...)
		}
		dst = append(dst, '[')
		for i, it := range v.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = it.MarshalTo(dst)
		}
		return append(dst, ']')
	case TypeString:
		if v.raw != "" {
			return append(dst, v.raw...)
		}
		return AppendString(dst, v.s)
	case TypeNumber:
		return append(dst, v.numberText()...)
	case TypeTrue:
		return append(dst, "true"...)
	case TypeFalse:
		return append(dst, "false"...)
	}
	return append(dst, "null"...)
}

// String returns v's JSON text (for messages and tests).
func (v *Value) String() string { return string(v.MarshalTo(nil)) }

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, so that
// the result is valid JSON whatever s holds. Other characters, "<", ">"
// and "&" included, are written as they are.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	// Most strings need no escape: skip eight bytes at a time while none
	// of them is a control character, a quote, a backslash or non-ASCII.
	i := 0
	for i+8 <= len(s) && plain8(binary.LittleEndian.Uint64([]byte(s[i:i+8]))) {
		i += 8
	}
	// Fewer than eight bytes left: check them with the word that ends
	// where s ends (it reads again bytes already known plain).
	if i < len(s) && i+8 > len(s) && len(s) >= 8 && plain8(binary.LittleEndian.Uint64([]byte(s[len(s)-8:]))) {
		i = len(s)
	}
	for i < len(s) {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plain8 reports whether none of the eight bytes of w needs attention
// when written in a JSON string: none below 0x20, none 0x80 or above, no
// '"' and no '\\'. (Bit tricks: a byte is below n when subtracting n
// from it borrows; equal to c when w^c has a zero byte.)
func plain8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (w - ones*0x20) &^ w
	quote := w ^ (ones * '"')
	backslash := w ^ (ones * '\\')
	zeroQ := (quote - ones) &^ quote
	zeroB := (backslash - ones) &^ backslash
	return (below|zeroQ|zeroB|w)&highs == 0
}

// valueNull is the null every Arena shares: it is never changed.
var valueNull = &Value{t: TypeNull}

// Arena makes Values and reuses their memory after Reset.
type Arena struct {
	slabs [][]Value
	slab  int // the slab being used
	next  int // the next free Value in it
	buf   []byte
}

const slabSize = 256

func (a *Arena) alloc() *Value {
	if a.slab >= len(a.slabs) {
		a.slabs = append(a.slabs, make([]Value, slabSize))
	}
	s := a.slabs[a.slab]
	v := &s[a.next]
	// Field by field, keeping the members' backing arrays: assigning a
	// whole Value builds it on the stack and copies it, which costs
	// several times as much on this path (tens of Values per event).
	v.t, v.sdone, v.expanded = 0, false, false
	v.raw, v.s = "", ""
	v.kvs, v.items, v.keys = v.kvs[:0], v.items[:0], 0
	v.a = a
	a.next++
	if a.next == slabSize {
		a.slab++
		a.next = 0
	}
	return v
}

// Reset makes every Value of the Arena unusable and their memory free
// for the next ones.
func (a *Arena) Reset() {
	a.slab, a.next = 0, 0
	a.buf = a.buf[:0]
}

// NewObject returns an empty object.
func (a *Arena) NewObject() *Value {
	v := a.alloc()
	v.t, v.expanded = TypeObject, true
	return v
}

// NewArray returns an empty array.
func (a *Arena) NewArray() *Value {
	v := a.alloc()
	v.t, v.expanded = TypeArray, true
	return v
}

// NewString returns the string s; s must not change while the Value is
// in use.
func (a *Arena) NewString(s string) *Value {
	v := a.alloc()
	v.t, v.s, v.sdone = TypeString, s, true
	return v
}

// NewStringBytes returns a string holding a copy of b.
func (a *Arena) NewStringBytes(b []byte) *Value {
	return a.NewString(string(b))
}

// NewNumberString returns a number whose JSON text is s, which must be a
// valid JSON number.
func (a *Arena) NewNumberString(s string) *Value {
	v := a.alloc()
	v.t, v.s = TypeNumber, s
	return v
}

// NewInt64 returns the number n, its text written in the arena.
func (a *Arena) NewInt64(n int64) *Value {
	start := len(a.buf)
	a.buf = strconv.AppendInt(a.buf, n, 10)
	return a.NewNumberString(a.text(start))
}

// NewNumberFloat64 returns the number f; NaN and infinities, which JSON
// cannot hold, become null.
func (a *Arena) NewNumberFloat64(f float64) *Value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return a.NewNull()
	}
	start := len(a.buf)
	a.buf = strconv.AppendFloat(a.buf, f, 'g', -1, 64)
	return a.NewNumberString(a.text(start))
}

// text returns a.buf[start:] as a string; it stays valid until Reset
// (a later append that moves the buffer leaves it where it was).
func (a *Arena) text(start int) string {
	b := a.buf[start:]
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// ParseValid returns the value of s, a text known to be valid JSON,
// lazily, as Parser.ParseValid does, from a's memory. s must not change
// while the value is in use.
func (a *Arena) ParseValid(s string) *Value {
	// Valid JSON is one value between optional spaces: it ends at the
	// last byte that is not a space, with no need to scan it.
	i, end := skipSpace(s, 0), len(s)
	for end > i && (s[end-1] == ' ' || s[end-1] == '\t' || s[end-1] == '\n' || s[end-1] == '\r') {
		end--
	}
	if i == end {
		return valueNull
	}
	return a.lazy(s[i:end])
}

// Text returns the arena's text, for appending the JSON text of one
// value to give to NewText: a caller that builds a whole subtree at once
// writes its text, where a tree of Values would cost a Value per member
// and be written back member by member. Nothing else may use the arena
// between the two calls.
func (a *Arena) Text() []byte { return a.buf }

// NewText returns the value whose JSON text buf holds from start, where
// buf is what Text returned with that text appended. The text must be one
// valid JSON value, which is not checked: it is read lazily, as parsed
// text is, and written back as it is.
func (a *Arena) NewText(buf []byte, start int) *Value {
	a.buf = buf
	return a.lazy(a.text(start))
}

// NewTrue returns true.
func (a *Arena) NewTrue() *Value { v := a.alloc(); v.t = TypeTrue; return v }

// NewFalse returns false.
func (a *Arena) NewFalse() *Value { v := a.alloc(); v.t = TypeFalse; return v }

// NewNull returns null.
func (a *Arena) NewNull() *Value { v := a.alloc(); v.t = TypeNull; return v }

// Parser parses JSON text into Values of its own Arena. Not safe for
// concurrent use.
type Parser struct {
	a Arena
}

// ErrInvalid says a text is not valid JSON.
var ErrInvalid = errors.New("jsontree: invalid JSON")

// Parse checks that s is one valid JSON value and returns it, valid
// until the next Parse. The Values refer to s, which must not change
// while they are in use.
func (p *Parser) Parse(s string) (*Value, error) {
	if !gjson.Valid(s) {
		return nil, ErrInvalid
	}
	return p.ParseValid(s), nil
}

// ParseBytes is Parse on b, which must not change while the Values are
// in use (they refer to it).
func (p *Parser) ParseBytes(b []byte) (*Value, error) {
	if len(b) == 0 {
		return nil, ErrInvalid
	}
	return p.Parse(unsafe.String(&b[0], len(b)))
}

// ParseValid is Parse for a text already known to be valid JSON (the
// events in the ledger, which the input validated one by one before
// acknowledging them): it checks nothing but the first byte, and splits
// containers only when they are used. On text that is not valid JSON it
// never fails or panics, but what it returns is unspecified.
func (p *Parser) ParseValid(s string) *Value {
	p.a.Reset()
	return p.a.ParseValid(s)
}

// Parse parses s with a Parser of its own (for tests and one-off uses).
func Parse(s string) (*Value, error) {
	var p Parser
	return p.Parse(s)
}
