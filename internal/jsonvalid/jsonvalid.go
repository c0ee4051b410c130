// Package jsonvalid checks that bytes are one JSON value, as
// encoding/json.Valid does, at the speed of the runtime's vectorized byte
// search on long strings: the input validates every event it
// acknowledges with it, and the Elasticsearch output every bulk answer.
package jsonvalid

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Valid reports whether b is one JSON value (RFC 8259) with optional
// surrounding whitespace: exactly what encoding/json.Valid accepts (a
// differential fuzz test holds it to that), including its nesting limit.
// Like json.Valid it does not check UTF-8.
//
// Why not json.Valid or gjson.ValidBytes: validation runs on every event
// of every batch on the ack path, and Beats events are mostly one long
// string (the log line). Both go through strings a byte at a time; this
// one hands long strings to the runtime's vectorized byte search
// (scanString). The input's BenchmarkValidJSON compares the three; the
// figures are in docs/design.md ("Measured choices on the ack path").
func Valid(b []byte) bool {
	var small [64]byte
	stack := small[:0] // open containers: '{' or '['
	i := skipSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false
		}
		var ok bool
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) == maxNesting {
				return false
			}
			j := skipSpace(b, i+1)
			if j < len(b) && b[j] == c+2 { // '{'+2 == '}', '['+2 == ']'
				i, ok = j+1, true
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i, ok = objectKey(b, j); !ok {
					return false
				}
			} else {
				i = j
			}
			continue
		case c == '"':
			i, ok = scanString(b, i)
		case c == 't':
			i, ok = literal(b, i, "true")
		case c == 'f':
			i, ok = literal(b, i, "false")
		case c == 'n':
			i, ok = literal(b, i, "null")
		default:
			i, ok = scanNumber(b, i)
		}
		if !ok {
			return false
		}
		// After a value: close containers, or find the next value.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i, ok = objectKey(b, i); !ok {
					return false
				}
			}
			break
		}
	}
}

// maxNesting is encoding/json's limit on nested containers.
const maxNesting = 10000

// objectKey checks `"key" :` at b[i] and returns where the value starts.
func objectKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	i, ok := scanString(b, i)
	if !ok {
		return 0, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return skipSpace(b, i+1), true
}

// skipSpace returns the index of the first byte at or after b[i] that is
// not JSON whitespace. Events rarely hold any, so one comparison answers
// most calls: every whitespace byte is at most ' '.
func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// scanString checks the string starting at b[i] ('"') and returns the
// index after its closing quote.
//
// Most strings are short (keys, most values): they are checked eight
// bytes per step (plainRun), which finds their end in a step or two. A run
// still going after shortRun bytes is handed to bytes.IndexByte, which the
// runtime vectorizes: the next quote, then a backslash before it; only the
// control character test stays here, eight bytes per step. Every search
// starts where the last one ended or beyond (the next quote's position is
// kept until passed), so the work stays linear in the string's length
// however many escapes it holds.
func scanString(b []byte, i int) (int, bool) {
	i++
	q := -1 // the next quote at or after i, once searched for
	for {
		i = plainRun(b, i, shortRun)
		if i < len(b) && !stringStop[b[i]] {
			// A long run.
			if q < i {
				n := bytes.IndexByte(b[i:], '"')
				if n < 0 {
					return 0, false
				}
				q = i + n
			}
			run := b[i:q]
			if esc := bytes.IndexByte(run, '\\'); esc >= 0 {
				run = run[:esc]
			}
			if hasControl(run) {
				return 0, false
			}
			i += len(run)
		}
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			if i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, false
				}
				i += 6
			default:
				return 0, false
			}
		default: // a control character
			return 0, false
		}
	}
}

// plainRun returns the index of the first stop byte (stringStop) at or
// after b[i], or len(b), looking eight bytes per step; it gives up at the
// first step that ends limit or more bytes past i, and returns where it
// stopped (a plain byte, or a stop byte it has not looked at yet).
func plainRun(b []byte, i, limit int) int {
	end := i + limit
	for i+8 <= len(b) {
		if m := stopBytes(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		if i += 8; i >= end {
			return i
		}
	}
	for i < len(b) && !stringStop[b[i]] {
		i++
	}
	return i
}

// stopBytes flags, in the high bit of each byte of x (eight string bytes,
// little endian, the first in the low byte), the quotes, backslashes and
// control characters. A byte equal to c is a byte of x^(c…) below 0x01,
// so belowBytes finds those too. The lowest flagged byte is always a stop
// byte (see belowBytes).
func stopBytes(x uint64) uint64 {
	return (belowBytes(x^(ones*'"'), 0x01) | belowBytes(x^(ones*'\\'), 0x01) | belowBytes(x, 0x20)) & highs
}

// shortRun is how many plain bytes scanString checks eight at a time
// before it switches to bytes.IndexByte (measured with BenchmarkValidJSON).
const shortRun = 32

// stringStop marks the bytes that end a run of plain string bytes: the
// quote, the backslash and the control characters JSON requires escaped.
var stringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// Word-at-a-time byte tests (Hacker's Delight, "bit twiddling hacks") on
// eight bytes read as one little-endian word.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// belowBytes sets the high bit of each byte of (x - n…) &^ x, masked with
// highs, whose byte of x is below n (n at most 0x80). A borrow may also
// flag a byte above a true hit, never one below the first hit nor one in
// a word without a hit: a flagged word holds such a byte, and its lowest
// flagged byte is one.
func belowBytes(x uint64, n byte) uint64 {
	return (x - ones*uint64(n)) &^ x
}

// hasControl reports whether b holds a byte below 0x20, which JSON strings
// must escape.
func hasControl(b []byte) bool {
	for len(b) >= 16 {
		x := binary.LittleEndian.Uint64(b)
		y := binary.LittleEndian.Uint64(b[8:])
		if (belowBytes(x, 0x20)|belowBytes(y, 0x20))&highs != 0 {
			return true
		}
		b = b[16:]
	}
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i].
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return 0, false
	case b[i] == '0':
		i++
	case isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}
