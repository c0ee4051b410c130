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
	s     string
	kvs   []kv
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
// most members without a call to compare memory.
func (o *Object) index(key string) int {
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

// SetNew adds member key, which the caller knows o does not hold (it
// just looked): Set without the search.
func (o *Object) SetNew(key string, val *Value) { o.SetNewQuoted(key, "", val) }

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
	o.kvs = appendKV(o.kvs, key, quoted, val)
}

// SetNewQuoted is SetNew with the key also given as Quote(key) (or ""),
// as SetQuoted.
func (o *Object) SetNewQuoted(key, quoted string, val *Value) {
	if val == nil {
		val = valueNull
	}
	o.kvs = appendKV(o.kvs, key, quoted, val)
}

// Del removes member key.
func (o *Object) Del(key string) {
	if i := o.index(key); i >= 0 {
		o.kvs = append(o.kvs[:i], o.kvs[i+1:]...)
	}
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
	prevEnd := -1 // where the previous member's value ends
	i := skipSpace(s, 1)
	for i < len(s) && s[i] != '}' {
		keyEnd := endOfString(s, i)
		if keyEnd < 0 {
			return false
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
			return false
		}
		end := endOfValue(s, skipSpace(s, i+1))
		if end < 0 {
			return false
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
			at := len(a.buf)
			a.buf = append(a.buf, s[:cutFrom]...)
			a.buf = append(a.buf, s[cutTo:]...)
			v.raw = a.text(at)
			return true
		}
		prevEnd, i = end, next
		if i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
		}
	}
	return false
}

// appendKV appends a member to kvs. Filling the slot in place, when
// there is room, is several times cheaper than appending a kv literal,
// which is built on the stack and then copied.
func appendKV(kvs []kv, key, rawKey string, v *Value) []kv {
	n := len(kvs)
	if n == cap(kvs) {
		return append(kvs, kv{k: key, rawKey: rawKey, v: v})
	}
	kvs = kvs[:n+1]
	m := &kvs[n]
	m.k, m.rawKey, m.v = key, rawKey, v
	return kvs
}

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
func (o *Object) Reset() { o.kvs = o.kvs[:0] }

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
	v.kvs, v.items = v.kvs[:0], v.items[:0]
	i := skipSpace(s, 1) // past the bracket
	for i < len(s) && s[i] != '}' && s[i] != ']' {
		var key, rawKey string
		if v.t == TypeObject {
			end := endOfString(s, i)
			if end < 0 {
				return
			}
			rawKey = s[i:end]
			key = a.decode(rawKey)
			i = skipSpace(s, end)
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
			v.kvs = appendKV(v.kvs, key, rawKey, m)
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
// (a quote), or -1. It skips eight bytes at a time while none is a quote
// or a backslash: Beats events are mostly short strings, where this beats
// a call to the runtime's byte search.
func endOfString(s string, i int) int {
	if i >= len(s) || s[i] != '"' {
		return -1
	}
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	j := i + 1
	for {
		for j+8 <= len(s) {
			w := binary.LittleEndian.Uint64([]byte(s[j : j+8]))
			q, b := w^(ones*'"'), w^(ones*'\\')
			if ((q-ones)&^q|(b-ones)&^b)&highs != 0 {
				break
			}
			j += 8
		}
		end := min(j+8, len(s))
		for ; j < end; j++ {
			switch s[j] {
			case '"':
				return j + 1
			case '\\':
				j++ // the escaped byte
			}
		}
		if j >= len(s) {
			return -1
		}
	}
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
// at s[i], or -1. It is the hot loop of a lazy parse: every container a
// chain does not touch is skipped here, so it reads eight bytes at a time
// and visits only the bytes that can matter, quotes, backslashes and
// brackets, one set bit each. Events are mostly short strings, where a
// byte loop, or a byte search per string, costs several times as much.
//
// The word test may flag a byte that is not one of those (a '|', or a
// neighbour of a true match through the subtraction's borrow); each
// flagged byte is looked at, so such a byte costs a loop turn and
// nothing else.
func endOfContainer(s string, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	depth := 0
	inString := false
	next := i // bytes before next are done (or escaped): not looked at
	visit := func(k int) (end int, done bool) {
		switch s[k] {
		case '"':
			inString = !inString
		case '\\':
			if inString {
				next = k + 2 // the escaped byte is not structure
			}
		case '{', '[':
			if !inString {
				depth++
			}
		case '}', ']':
			if !inString {
				depth--
				if depth == 0 {
					return k + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for ; j+8 <= len(s); j += 8 {
		w := binary.LittleEndian.Uint64([]byte(s[j : j+8]))
		// ORing 0x20 folds '[' into '{', ']' into '}' and '\\' into
		// '|': three comparisons cover five bytes.
		x := w | ones*0x20
		q := w ^ (ones * '"')
		o := x ^ (ones * '{')
		b := x ^ (ones * '|')
		c := x ^ (ones * '}')
		m := ((q - ones) &^ q) | ((o - ones) &^ o) | ((b - ones) &^ b) | ((c - ones) &^ c)
		for m &= highs; m != 0; m &= m - 1 {
			k := j + bits.TrailingZeros64(m)>>3
			if k < next {
				continue
			}
			if end, done := visit(k); done {
				return end
			}
		}
	}
	for k := max(j, next); k < len(s); k++ {
		if k < next {
			continue
		}
		if end, done := visit(k); done {
			return end
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
	v.kvs, v.items = v.kvs[:0], v.items[:0]
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
