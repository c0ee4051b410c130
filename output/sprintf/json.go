package sprintf

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a small, allocation-free reader for raw JSON event bytes. It
// reads only what a field reference needs: the members it walks past are
// skipped leniently (string boundaries and bracket pairing only), while the
// value that is finally rendered is validated in full. Anything that cannot
// be read is reported as "not found", never as a panic.

// maxDepth bounds the nesting that is rendered (objects, and arrays joined
// Logstash-style). Deeper values are reported as unreadable.
const maxDepth = 1000

// structural marks the bytes that matter when skipping a container.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// Word-at-a-time (SWAR) scanning: find the first byte of interest among 8.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// zeroBytes has the high bit set in the lowest byte of x that is zero (and
// maybe in higher bytes too; only the lowest one is exact).
func zeroBytes(x uint64) uint64 { return (x - lsb) &^ x & msb }

// skipString returns the index just past the closing quote of the string
// whose opening quote is b[i].
func skipString(b []byte, i int) (int, bool) {
	j := i + 1
	// Keys and most values are short: scan them a word at a time.
	for n := 0; n < 8 && j+8 <= len(b); n++ {
		x := binary.LittleEndian.Uint64(b[j:])
		m := zeroBytes(x^(lsb*'"')) | zeroBytes(x^(lsb*'\\'))
		if m == 0 {
			j += 8
			continue
		}
		j += bits.TrailingZeros64(m) >> 3
		if b[j] == '"' {
			return j + 1, true
		}
		j += 2 // an escape
	}
	// Long strings, and the last bytes of the buffer: find quotes with
	// IndexByte and count the backslashes before each. A maximal run of
	// backslashes never starts inside an escape, so its parity tells
	// whether the quote is escaped.
	for j < len(b) {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, false
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
	return 0, false
}

// nextStructural returns the index of the first '"', '{', '}', '[' or ']'
// in b at or after j, or len(b). '[' and ']' differ from '{' and '}' only in
// bit 0x20, so two comparisons cover the four brackets.
func nextStructural(b []byte, j int) int {
	for ; j+8 <= len(b); j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		y := x | lsb*0x20
		m := zeroBytes(x^(lsb*'"')) | zeroBytes(y^(lsb*'{')) | zeroBytes(y^(lsb*'}'))
		if m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for ; j < len(b); j++ {
		if structural[b[j]] {
			return j
		}
	}
	return j
}

// skipValue returns the index just past the value starting at b[i]. It is
// lenient: containers are matched by their brackets only and scalars by
// their delimiters; validation happens when a value is rendered.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		// Brackets must pair up. kinds keeps a bit per level (1 for '[')
		// for the innermost 64 levels reached; levels whose bit was shifted
		// out are matched by count only.
		depth, deepest := 0, 0
		var kinds uint64
		for j := i; ; j++ {
			if j = nextStructural(b, j); j >= len(b) {
				return 0, false
			}
			switch c := b[j]; c {
			case '"':
				end, ok := skipString(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				kinds <<= 1
				if c == '[' {
					kinds |= 1
				}
				depth++
				deepest = max(deepest, depth)
			case '}', ']':
				if depth > deepest-64 && (kinds&1 == 1) != (c == ']') {
					return 0, false
				}
				kinds >>= 1
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
	case c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n':
		j := i + 1
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j, true
			}
			j++
		}
		return j, true
	}
	return 0, false
}

// walker looks up paths in one event. It remembers where the values along
// the last path start, so that a lookup sharing a prefix with the previous
// one (%{[@metadata][beat]}-%{[@metadata][version]}) resumes there instead
// of walking from the top again.
type walker struct {
	event []byte
	path  []string // the last path looked up
	pos   [8]int   // pos[k]: where the value after k components of path starts
	n     int      // pos[:n] are valid
}

// lookup returns the raw bytes of the value at path inside the JSON object
// event. Object members are matched by their decoded key (the first match
// wins); a component that parses as a Java int selects an array element,
// counting from the end when negative, as Logstash does.
func (w *walker) lookup(path []string) ([]byte, bool) {
	b := w.event
	if w.n == 0 {
		i := skipWS(b, 0)
		if i >= len(b) || b[i] != '{' {
			return nil, false
		}
		w.pos[0], w.n = i, 1
	}
	k := 0
	for k < len(path) && k < len(w.path) && k+1 < w.n && path[k] == w.path[k] {
		k++
	}
	w.path, w.n = path, k+1
	i := w.pos[k]
	var ok bool
	for ; k < len(path); k++ {
		switch b[i] {
		case '{':
			i, ok = objectMember(b, i, path[k])
		case '[':
			i, ok = arrayElement(b, i, path[k])
		default:
			return nil, false
		}
		if !ok {
			return nil, false
		}
		if k+1 < len(w.pos) {
			w.pos[k+1], w.n = i, k+2
		}
	}
	end, ok := skipValue(b, i)
	if !ok {
		return nil, false
	}
	return b[i:end], true
}

// objectMember finds key in the object starting at b[i] ('{') and returns
// the index where its value starts.
func objectMember(b []byte, i int, key string) (int, bool) {
	at := -1
	eachMember(b, i, func(ks, ke, vs, _ int) bool {
		if keyEqual(b[ks+1:ke-1], key) {
			at = vs
			return false
		}
		return true
	})
	return at, at >= 0
}

// eachMember calls fn with the span of each member's key (quotes
// included) and value in the object starting at b[i] ('{'), in order,
// until fn returns false, the object ends, or the input is malformed
// (then it stops silently). Every reader of object members goes through
// it, so the scanning rules live in one place.
func eachMember(b []byte, i int, fn func(keyStart, keyEnd, valStart, valEnd int) bool) {
	if i >= len(b) || b[i] != '{' {
		return
	}
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return // end of object, or malformed
		}
		ks := i
		ke, ok := skipString(b, i)
		if !ok {
			return
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return
		}
		vs := skipWS(b, i+1)
		if i, ok = skipValue(b, vs); !ok {
			return
		}
		if !fn(ks, ke, vs, i) {
			return
		}
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i++
	}
}

// arrayElement selects element comp (a decimal index) of the array starting
// at b[i] ('[') and returns the index where it starts.
func arrayElement(b []byte, i int, comp string) (int, bool) {
	idx, ok := parseIndex(comp)
	if !ok {
		return 0, false
	}
	if idx < 0 {
		n, ok := arrayLen(b, i)
		if !ok || idx+n < 0 {
			return 0, false
		}
		idx += n
	}
	i++
	for k := 0; ; k++ {
		i = skipWS(b, i)
		if i >= len(b) || b[i] == ']' {
			return 0, false
		}
		if k == idx {
			return i, true
		}
		if i, ok = skipValue(b, i); !ok {
			return 0, false
		}
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ',' {
			return 0, false
		}
		i++
	}
}

func arrayLen(b []byte, i int) (int, bool) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return 0, true
	}
	for n := 1; ; n++ {
		var ok bool
		if i, ok = skipValue(b, i); !ok {
			return 0, false
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ']':
			return n, true
		case ',':
			i = skipWS(b, i+1)
		default:
			return 0, false
		}
	}
}

// parseIndex parses s the way Java's Integer.parseInt does: an optional sign
// followed by decimal digits, within the int32 range.
func parseIndex(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	switch s[0] {
	case '-':
		neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	n := int64(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n > 1<<31 {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	if n > 1<<31-1 || n < -(1<<31) {
		return 0, false
	}
	return int(n), true
}

// keyEqual reports whether the raw (still escaped) JSON key equals want.
func keyEqual(raw []byte, want string) bool {
	if string(raw) == want {
		return true
	}
	// Escapes only make the raw form longer than the decoded key.
	if len(raw) <= len(want) || bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	var buf [utf8.UTFMax]byte
	j := 0
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			if j >= len(want) || want[j] != c {
				return false
			}
			i++
			j++
			continue
		}
		r, next, ok := decodeEscape(raw, i)
		if !ok {
			return false
		}
		i = next
		n := utf8.EncodeRune(buf[:], r)
		if len(want)-j < n || want[j:j+n] != string(buf[:n]) {
			return false
		}
		j += n
	}
	return j == len(want)
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// decodeEscape decodes the escape sequence starting at b[i] ('\\') and
// returns the rune and the index after the sequence. Surrogate pairs are
// combined; a lone surrogate decodes to U+FFFD, as in encoding/json.
func decodeEscape(b []byte, i int) (rune, int, bool) {
	if i+1 >= len(b) {
		return 0, 0, false
	}
	switch b[i+1] {
	case '"':
		return '"', i + 2, true
	case '\\':
		return '\\', i + 2, true
	case '/':
		return '/', i + 2, true
	case 'b':
		return '\b', i + 2, true
	case 'f':
		return '\f', i + 2, true
	case 'n':
		return '\n', i + 2, true
	case 'r':
		return '\r', i + 2, true
	case 't':
		return '\t', i + 2, true
	case 'u':
		r, ok := hex4(b, i+2)
		if !ok {
			return 0, 0, false
		}
		i += 6
		if utf16.IsSurrogate(r) {
			if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
				if r2, ok := hex4(b, i+2); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						return d, i + 6, true
					}
				}
			}
			return utf8.RuneError, i, true
		}
		return r, i, true
	}
	return 0, 0, false
}

// appendString appends the decoded content of the JSON string raw (with its
// quotes) to dst. Invalid UTF-8 becomes U+FFFD, as in encoding/json; a raw
// control character or a bad escape makes the string unreadable.
func appendString(dst, raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return dst, false
	}
	s := raw[1 : len(raw)-1]
	start := 0 // start of the pending run of bytes copied verbatim
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= 0x20 && c < utf8.RuneSelf && c != '\\' && c != '"':
			i++
		case c == '\\':
			dst = append(dst, s[start:i]...)
			r, next, ok := decodeEscape(s, i)
			if !ok {
				return dst, false
			}
			dst = utf8.AppendRune(dst, r)
			i = next
			start = i
		case c < 0x20 || c == '"':
			return dst, false
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, s[start:i]...)
				dst = utf8.AppendRune(dst, utf8.RuneError)
				i++
				start = i
				continue
			}
			i += n
		}
	}
	return append(dst, s[start:]...), true
}

// validString returns the end of the string starting at b[i] after checking
// its escapes and the absence of raw control characters.
func validString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\':
			_, next, ok := decodeEscape(b, j)
			if !ok {
				return 0, false
			}
			j = next - 1
		case c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

// numberEnd returns the end of the JSON number starting at b[i].
func numberEnd(b []byte, i int) (int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	default:
		return 0, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return 0, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			return 0, false
		}
	}
	return j, true
}

func hasPrefixAt(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// appendCompact validates the JSON value starting at b[i] and appends it to
// dst without insignificant whitespace. Strings keep their original escaping.
// It returns the index after the value.
func appendCompact(dst, b []byte, i, depth int) ([]byte, int, bool) {
	if i >= len(b) {
		return dst, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		end, ok := validString(b, i)
		if !ok {
			return dst, 0, false
		}
		return append(dst, b[i:end]...), end, true
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return dst, 0, false
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		dst = append(dst, c)
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == closer {
			return append(dst, closer), i + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return dst, 0, false
				}
				end, ok := validString(b, i)
				if !ok {
					return dst, 0, false
				}
				dst = append(dst, b[i:end]...)
				i = skipWS(b, end)
				if i >= len(b) || b[i] != ':' {
					return dst, 0, false
				}
				dst = append(dst, ':')
				i = skipWS(b, i+1)
			}
			if dst, i, ok = appendCompact(dst, b, i, depth+1); !ok {
				return dst, 0, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return dst, 0, false
			}
			switch b[i] {
			case ',':
				dst = append(dst, ',')
				i = skipWS(b, i+1)
			case closer:
				return append(dst, closer), i + 1, true
			default:
				return dst, 0, false
			}
		}
	case c == 't':
		if hasPrefixAt(b, i, "true") {
			return append(dst, "true"...), i + 4, true
		}
	case c == 'f':
		if hasPrefixAt(b, i, "false") {
			return append(dst, "false"...), i + 5, true
		}
	case c == 'n':
		if hasPrefixAt(b, i, "null") {
			return append(dst, "null"...), i + 4, true
		}
	default:
		if end, ok := numberEnd(b, i); ok {
			return append(dst, b[i:end]...), end, true
		}
	}
	return dst, 0, false
}

// appendJoined renders the array starting at b[i] the way Logstash renders a
// list: elements joined by ",", nested lists flattened, null elements empty,
// strings decoded, objects as compact JSON. It returns the index after the
// array.
func appendJoined(dst, b []byte, i, depth int) ([]byte, int, bool) {
	if depth >= maxDepth {
		return dst, 0, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return dst, i + 1, true
	}
	for {
		if i >= len(b) {
			return dst, 0, false
		}
		var ok bool
		switch c := b[i]; {
		case c == '"':
			end, ok := validString(b, i)
			if !ok {
				return dst, 0, false
			}
			if dst, ok = appendString(dst, b[i:end]); !ok {
				return dst, 0, false
			}
			i = end
		case c == '[':
			if dst, i, ok = appendJoined(dst, b, i, depth+1); !ok {
				return dst, 0, false
			}
		case c == 'n':
			if !hasPrefixAt(b, i, "null") {
				return dst, 0, false
			}
			i += 4
		default: // objects, numbers, true, false
			if dst, i, ok = appendCompact(dst, b, i, depth+1); !ok {
				return dst, 0, false
			}
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return dst, 0, false
		}
		switch b[i] {
		case ',':
			dst = append(dst, ',')
			i = skipWS(b, i+1)
		case ']':
			return dst, i + 1, true
		default:
			return dst, 0, false
		}
	}
}

// appendValue renders the raw JSON value v (as returned by lookup) onto dst.
// It fails for null and for anything malformed.
func appendValue(dst, v []byte) ([]byte, bool) {
	if len(v) == 0 {
		return dst, false
	}
	var end int
	var ok bool
	switch v[0] {
	case '"':
		return appendString(dst, v)
	case 'n':
		return dst, false
	case '[':
		dst, end, ok = appendJoined(dst, v, 0, 0)
	default:
		dst, end, ok = appendCompact(dst, v, 0, 0)
	}
	return dst, ok && end == len(v)
}
