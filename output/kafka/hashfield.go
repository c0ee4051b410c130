package kafka

import (
	"encoding/binary"
	"hash"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// hashPartition is the partition of n that partition.hash gives a record
// of the event value with the key: Filebeat's, to the partition, so that
// Filebeat and logpond shipping one topic put a key's records in one
// partition. The FNV-1a hash of the fields' values (fields set), or of
// the key, made non-negative as a 32-bit signed number, modulo n. A
// record with neither, or one of whose fields cannot be hashed (missing,
// null, an object or an array), goes to a random partition, as Filebeat's
// do with its default random = true.
func hashPartition(fields []hashField, key, value []byte, n int) int {
	h := fnv.New32a()
	switch {
	case len(fields) > 0:
		for _, f := range fields {
			if !hashValue(h, f.lookup(value)) {
				return rand.IntN(n)
			}
		}
	case key != nil:
		h.Write(key)
	default:
		return rand.IntN(n)
	}
	return int((int32(h.Sum32()) & 0x7FFFFFFF) % int32(n))
}

// hashValue adds v to h as Filebeat hashes the value its JSON decoding
// makes of it: a string's bytes; an integer that fits an int64 as its 8
// bytes, little-endian; another number as its shortest text at 32-bit
// precision; a boolean as one byte. It reports false for a value Filebeat
// cannot hash.
func hashValue(h hash.Hash32, v gjson.Result) bool {
	switch v.Type {
	case gjson.String:
		h.Write([]byte(v.Str))
	case gjson.Number:
		if i, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(i))
			h.Write(b[:])
		} else {
			h.Write([]byte(strconv.FormatFloat(v.Num, 'g', -1, 32)))
		}
	case gjson.True:
		h.Write([]byte{1})
	case gjson.False:
		h.Write([]byte{0})
	default:
		return false
	}
	return true
}

// hashField is a field partition.hash hashes, compiled once: its name is
// looked up in each record as Filebeat's GetValue finds a name. At each
// object on the way, the rest of the name is first looked up as one key
// ("log.level" written flat), and only when no member has it is the
// name split at its first dot to go one object down.
type hashField struct {
	// whole[i] is the name from part i on, and parts[i] part i, each
	// escaped for gjson, where '.', '*', '?' and the rest are special.
	whole, parts []string
}

func compileHashField(name string) hashField {
	var f hashField
	rest := name
	for {
		f.whole = append(f.whole, gjson.Escape(rest))
		dot := strings.IndexByte(rest, '.')
		if dot < 0 {
			f.parts = append(f.parts, gjson.Escape(rest))
			return f
		}
		f.parts = append(f.parts, gjson.Escape(rest[:dot]))
		rest = rest[dot+1:]
	}
}

// lookup returns the field's value in the JSON event doc; it does not
// exist when a part on the way is missing or not an object (arrays are
// not indexed, as in Filebeat).
func (f hashField) lookup(doc []byte) gjson.Result {
	last := len(f.parts) - 1
	if last == 0 {
		return gjson.GetBytes(doc, f.parts[0])
	}
	if v := gjson.GetBytes(doc, f.whole[0]); v.Exists() {
		return v
	}
	obj := gjson.GetBytes(doc, f.parts[0])
	for i := 1; ; i++ {
		if !obj.IsObject() {
			return gjson.Result{}
		}
		if i == last {
			return obj.Get(f.parts[i])
		}
		if v := obj.Get(f.whole[i]); v.Exists() {
			return v
		}
		obj = obj.Get(f.parts[i])
	}
}
