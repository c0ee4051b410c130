package kafka

import (
	"strings"

	"github.com/tidwall/gjson"
)

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
