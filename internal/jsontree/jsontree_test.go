package jsontree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// expandAll splits every container of v, so that it is written from its
// members rather than as read.
func expandAll(v *Value) {
	switch v.Type() {
	case TypeObject:
		o, _ := v.Object()
		o.Visit(func(_ []byte, m *Value) { expandAll(m) })
	case TypeArray:
		items, _ := v.Array()
		for _, it := range items {
			expandAll(it)
		}
	case TypeString:
		v.Str()
	}
}

func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	decode := func(b []byte) any {
		// Numbers as their text: 1e999 is valid JSON, not a float64.
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("not JSON: %v: %s", err, b)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// Documents come back as read when untouched, and as the same values
// (whitespace aside) when every container was split.
func TestRoundTrip(t *testing.T) {
	docs := []string{
		`{}`, `[]`, `{"a":1}`, ` { "a" : [ 1 , 2.5e3 , -0 ] , "b" : { "c" : null } , "d":true,"e":false } `,
		`{"s":"q\"uo\\te\/ \u00e9 \ud83d\ude00 \n\t\r\b\f","k\"ey":"v"}`,
		`{"nested":[[],[{}],[[1,[2,{"x":"]}{["}]]]],"n":-12.5E-3}`,
		`"just a string"`, `12`, `null`,
	}
	for _, d := range docs {
		var p Parser
		v, err := p.Parse(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if got := string(v.MarshalTo(nil)); got != strings.TrimSpace(d) {
			t.Errorf("untouched %s came back as %s", d, got)
		}
		expandAll(v)
		if got := v.MarshalTo(nil); !sameJSON(t, got, []byte(d)) {
			t.Errorf("expanded %s came back as %s", d, got)
		}
	}
}

// Decoded strings are JSON's, escapes and surrogate pairs included.
func TestDecode(t *testing.T) {
	var p Parser
	v, err := p.Parse(`{"s":"a\"b\\c\/d\u00e9\ud83d\ude00\n","bad":"\ud800x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Get("s").Str(); got != "a\"b\\c/dé😀\n" {
		t.Errorf("s = %q", got)
	}
	if got := v.Get("bad").Str(); got != "\ufffdx" {
		t.Errorf("lone surrogate = %q", got)
	}
}

// Edits: set, delete, append, nested; built strings are escaped so that
// the output is valid JSON whatever they hold.
func TestEdits(t *testing.T) {
	var p Parser
	v, err := p.Parse(`{"a":{"b":1,"c":[1]},"d":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	var a Arena
	v.Get("a").Set("b", a.NewString("ctl\x01\x7f del, bad utf8 \xff, quote \" back \\ <tag>&"))
	v.Get("a").Set("new", a.NewInt64(7))
	v.Del("d")
	v.Get("a", "c").SetArrayItem(1, a.NewTrue())
	v.Get("a", "c").SetArrayItem(3, a.NewNumberFloat64(1.5))
	v.Set("e", a.NewObject())
	v.Get("e").Set("f", a.NewNull())
	got := v.MarshalTo(nil)
	want := `{"a":{"b":"ctl\u0001\u007f del, bad utf8 \ufffd, quote \" back \\ <tag>&","c":[1,true,null,1.5],"new":7},"e":{"f":null}}`
	if !json.Valid(got) {
		t.Fatalf("invalid JSON: %s", got)
	}
	if !sameJSON(t, got, []byte(want)) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// Invalid text: Parse refuses it; ParseValid neither fails nor panics.
func TestInvalid(t *testing.T) {
	for _, d := range []string{``, `{`, `{"a":}`, `{"a":1,}`, `[1 2]`, `{"a" 1}`, `"open`, `nul`, `{"a":"\"}`} {
		var p Parser
		if _, err := p.Parse(d); err == nil {
			t.Errorf("Parse(%q) did not fail", d)
		}
		v := p.ParseValid(d)
		expandAll(v)
		_ = v.MarshalTo(nil)
	}
}

// FuzzEdit: any valid document, edited by the fuzzer's choices (strings
// of any bytes set at paths, members deleted, items appended), comes out
// as valid JSON; untouched, it comes out byte for byte.
func FuzzEdit(f *testing.F) {
	f.Add(`{"a":{"b":"c"},"d":[1,2]}`, "a.b", "x\x00y", uint8(0))
	f.Add(`{"message":"GET \"/\" 200","host":{"name":"h"}}`, "host.name", "\xff", uint8(1))
	f.Add(`[{"a":1}]`, "a", "", uint8(2))
	f.Add(`{"k\u00e9y":"v\n"}`, "kéy", "\u2028", uint8(3))
	f.Fuzz(func(t *testing.T, doc, path, str string, op uint8) {
		var p Parser
		v, err := p.Parse(doc)
		if err != nil {
			return
		}
		if got := string(v.MarshalTo(nil)); got != strings.TrimSpace(doc) {
			// gjson.Valid accepts surrounding whitespace only.
			t.Fatalf("untouched %q came back as %q", doc, got)
		}
		// Split whole, it holds the same values.
		var p2 Parser
		whole, _ := p2.Parse(doc)
		expandAll(whole)
		if out := whole.MarshalTo(nil); !sameJSON(t, out, []byte(doc)) {
			t.Fatalf("split %q came back as %q", doc, out)
		}
		var a Arena
		keys := strings.Split(path, ".")
		parent := v.Get(keys[:len(keys)-1]...)
		last := keys[len(keys)-1]
		switch op % 4 {
		case 0:
			if parent != nil {
				parent.Set(last, a.NewString(str))
			}
		case 1:
			if parent != nil {
				parent.Delete(last) // cut from the text when not split
			}
		case 2:
			if t := v.Get(keys...); t != nil && t.Type() == TypeArray {
				items, _ := t.Array()
				t.SetArrayItem(len(items), a.NewString(str))
			}
		case 3:
			expandAll(v)
			v.Set(str, a.NewString(str))
		}
		out := v.MarshalTo(nil)
		if !json.Valid(out) {
			t.Fatalf("edited %q (op %d at %q with %q): invalid JSON %q", doc, op%4, path, str, out)
		}
	})
}

// plain8 agrees with a byte-by-byte check on every byte value in every
// position.
func TestPlain8(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }
	for pos := range 8 {
		for c := range 256 {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			w := uint64(0)
			for i := 7; i >= 0; i-- {
				w = w<<8 | uint64(b[i])
			}
			if got := plain8(w); got != plain(byte(c)) {
				t.Fatalf("byte %#x at %d: plain8 says %v", c, pos, got)
			}
		}
	}
}

// Delete cuts a member out of an object's text, first, middle or last,
// with its comma, and leaves the rest as it was; on a split object it
// removes the member.
func TestDelete(t *testing.T) {
	for _, c := range []struct{ doc, key, want string }{
		{`{"a":1,"b":{"x":[1,"}"]},"c":"s"}`, "a", `{"b":{"x":[1,"}"]},"c":"s"}`},
		{`{"a":1,"b":{"x":[1,"}"]},"c":"s"}`, "b", `{"a":1,"c":"s"}`},
		{`{"a":1,"b":{"x":[1,"}"]},"c":"s"}`, "c", `{"a":1,"b":{"x":[1,"}"]}}`},
		{`{ "a" : 1 , "b" : 2 }`, "b", `{ "a" : 1 }`},
		{`{"only":true}`, "only", `{}`},
		{`{"k\u00e9y":1,"z":2}`, "kéy", `{"z":2}`},
		{`{"a":1}`, "nope", `{"a":1}`},
	} {
		for _, split := range []bool{false, true} {
			var p Parser
			v, err := p.Parse(c.doc)
			if err != nil {
				t.Fatal(err)
			}
			if split {
				v.Object()
			}
			found := v.Delete(c.key)
			got := v.MarshalTo(nil)
			if found != (c.want != c.doc) || !json.Valid(got) || !sameJSON(t, got, []byte(c.want)) {
				t.Errorf("Delete(%q) of %s (split %v): %v, %s; want %s", c.key, c.doc, split, found, got, c.want)
			}
		}
	}
}

// endOfContainerRef is endOfContainer one byte at a time: the definition
// the word-at-a-time scan must agree with.
func endOfContainerRef(s string, i int) int {
	depth, inString := 0, false
	for k := i; k < len(s); k++ {
		switch c := s[k]; {
		case inString && c == '\\':
			k++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				return k + 1
			}
		}
	}
	return -1
}

// endOfContainer finds the end of containers whose structure falls on
// every offset of its eight-byte words: escapes split across words,
// brackets in strings, bytes that the word test flags but are not
// structure ('|', and neighbours through the borrow), and text that ends
// before the container does.
func TestEndOfContainer(t *testing.T) {
	cases := []string{
		`{}`, `[]`, `{"a":1}`, `[1,[2,[3]],4]`,
		`{"a":"}]","b":"{["}`,
		`{"a":"x\"}","b":1}`,
		`{"a":"\\","b":"\\\"}"}`,
		`{"pipe":"a|b|c","hash":"#$!#","q":"#\"#"}`,
		`{"host":{"name":"web-7","os":{"family":"debian"},"ip":["10.0.0.1","fe80::1"]},"x":1}`,
		`{"unterminated":"abc`,
		`{"a":[1,2`,
		"{\"utf8\":\"é→\u2028\",\"z\":\"\x7f\"}",
	}
	for _, c := range cases {
		for pad := range 9 {
			// Shift the container across word boundaries, with text
			// after it that must not be read as part of it.
			s := strings.Repeat(" ", pad) + c + `,"after":"}]"`
			if got, want := endOfContainer(s, pad), endOfContainerRef(s, pad); got != want {
				t.Errorf("%q at %d: end %d, want %d", c, pad, got, want)
			}
		}
	}
}

// FuzzEndOfContainer: the word-at-a-time scan agrees with the byte loop on
// any bytes that start with a bracket.
func FuzzEndOfContainer(f *testing.F) {
	f.Add(`{"a":"x\"}","b":[1,{"c":"]"}]}`)
	f.Add(`["\\\\\"]", "|", {}]`)
	f.Fuzz(func(t *testing.T, s string) {
		for i := 0; i < len(s) && i < 16; i++ {
			if s[i] != '{' && s[i] != '[' {
				continue
			}
			if got, want := endOfContainer(s, i), endOfContainerRef(s, i); got != want {
				t.Fatalf("%q at %d: end %d, want %d", s, i, got, want)
			}
		}
	})
}

// findMember, where it is sure, finds what the member-by-member walk
// finds: the same member, cut the same way.
func TestFindMember(t *testing.T) {
	doc := `{"id":1, "mac" : ["m"],"os":{"mac":2,"id":"x"},"list":[{"mac":3}],"s":"\"mac\": 4","idx":"id","ip":"}","mac2":0,"last":{"id":5}}`
	for _, key := range []string{"id", "mac", "os", "list", "s", "idx", "ip", "mac2", "last", "none", "ac", "x"} {
		assertFindAgrees(t, doc, key)
	}
	for _, c := range []struct{ doc, key string }{
		{`{"a":1}`, "a"},
		{`{ "a" : 1 }`, "a"},
		{`{"a":1 , "b":2}`, "b"},
		{`{"b":"a","a":"b"}`, "a"},
		{`{"x":"\\","a":1}`, "a"},
		{`{"x":"\\\"a\":1","a":2}`, "a"},
		{`{"\u0061":1}`, "a"},
		{`{"a\u0022b":1}`, `a"b`},
	} {
		assertFindAgrees(t, c.doc, c.key)
	}
}

func assertFindAgrees(t *testing.T, doc, key string) {
	t.Helper()
	var a Arena
	from, to, found, sure := findMember(doc, key)
	wFrom, wTo, wFound := walkMember(&a, doc, key)
	if !sure {
		if strings.IndexByte(doc, '\\') < 0 && searchable(key) {
			t.Errorf("%s in %s: unsure without escapes", key, doc)
		}
		return
	}
	if found != wFound || found && (from != wFrom || to != wTo) {
		t.Errorf("%s in %s: search %v [%d,%d), walk %v [%d,%d)", key, doc, found, from, to, wFound, wFrom, wTo)
	}
}

// FuzzFindMember: on any valid object, a sure search agrees with the walk.
func FuzzFindMember(f *testing.F) {
	f.Add(`{"a":{"a":1},"b":[{"a":2}],"a":3}`, "a")
	f.Add(`{"k":"\"k\":1", "k" :2}`, "k")
	f.Fuzz(func(t *testing.T, doc, key string) {
		var p Parser
		v, err := p.Parse(doc)
		if err != nil || v.Type() != TypeObject {
			return
		}
		// Duplicate keys are where the two may differ on purpose.
		var seen []string
		dup := false
		o, _ := v.Object()
		o.Visit(func(k []byte, _ *Value) {
			dup = dup || slices.Contains(seen, string(k))
			seen = append(seen, string(k))
		})
		if dup {
			return
		}
		assertFindAgrees(t, strings.TrimSpace(doc), key)
		assertPeekAgrees(t, doc, key)
	})
}

// Peek reads what Get reads, without splitting an object nobody split.
func TestPeekAgreesWithGet(t *testing.T) {
	doc := `{"id":1, "mac" : ["m"],"os":{"mac":2,"id":"x"},"s":"\"mac\": 4","e":"a\u0041","\u0061":5}`
	for _, key := range []string{"id", "mac", "os", "s", "e", "a", "none"} {
		assertPeekAgrees(t, doc, key)
	}
	var p Parser
	v := p.ParseValid(`{"os":{"mac":2}}`)
	os := v.Get("os")
	if got := os.Peek("mac"); got == nil || got.String() != "2" || os.expanded {
		t.Errorf("Peek on an unsplit object: %v, split %v", got, os.expanded)
	}
}

func assertPeekAgrees(t *testing.T, doc, key string) {
	t.Helper()
	var p1, p2 Parser
	v1, err := p1.Parse(doc)
	if err != nil || v1.Type() != TypeObject {
		return
	}
	v2, _ := p2.Parse(doc)
	peeked, got := v1.Peek(key), v2.Get(key)
	if (peeked == nil) != (got == nil) || peeked != nil && peeked.String() != got.String() {
		t.Errorf("%s in %s: Peek %v, Get %v", key, doc, peeked, got)
	}
}

// indexShort finds what strings.Index finds, across its windows' ends.
func TestIndexShort(t *testing.T) {
	s := strings.Repeat("abcdefghij", 30)
	for _, key := range []string{"a", "ja", "hija", "fghijabcde", strings.Repeat("abcdefghij", 4), "x", "jj"} {
		for off := 0; off < len(s); off += 7 {
			want := strings.Index(s[off:], key)
			if want >= 0 {
				want += off
			}
			if got := indexShort(s, key, off); got != want {
				t.Errorf("%q from %d: %d, want %d", key, off, got, want)
			}
		}
	}
}

// AppendString escapes a byte that needs it wherever it falls: in a word
// read whole, in the last bytes, or in bytes read twice.
func TestAppendStringEveryPosition(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for pos := range n {
			for _, c := range []byte{'"', '\\', '\n', 0x01, 0x1f, 0xff} {
				b := []byte(strings.Repeat("a", n))
				b[pos] = c
				out := AppendString(nil, string(b))
				var got string
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("%q: %s is not a JSON string: %v", b, out, err)
				}
				if want := strings.ToValidUTF8(string(b), "\ufffd"); got != want {
					t.Fatalf("%q: %s reads back as %q", b, out, got)
				}
			}
		}
	}
}

// An object's key bits never hide a member: after sets, deletes, a
// reset and an expand, every member is found and no other key is.
func TestKeyBits(t *testing.T) {
	var a Arena
	obj := a.NewObject()
	o, _ := obj.Object()
	has := map[string]bool{}
	check := func(when string) {
		t.Helper()
		for i := range 200 {
			k := fmt.Sprintf("k%d", i)
			if got := o.Get(k) != nil; got != has[k] {
				t.Fatalf("%s: Get(%q) found %v, want %v", when, k, got, has[k])
			}
		}
	}
	for i := range 100 {
		k := fmt.Sprintf("k%d", i*2)
		o.Set(k, a.NewInt64(int64(i)))
		has[k] = true
	}
	check("after Set")
	for i := range 50 {
		k := fmt.Sprintf("k%d", i*4)
		obj.Delete(k)
		delete(has, k)
	}
	check("after Delete")
	o.Reset()
	clear(has)
	check("after Reset")
	var p Parser
	v := p.ParseValid(`{"k1":1,"k7":{"k3":2},"k150":3}`)
	o, _ = v.Object()
	has = map[string]bool{"k1": true, "k7": true, "k150": true}
	check("after expand")
}

// TestTakeRestore: a member taken and restored comes back at its place,
// written as it was, beside a member with the same key.
func TestTakeRestore(t *testing.T) {
	const doc = `{"a":1,"b":2,"\u0061":3,"c":{"d":4}}`
	for _, key := range []string{"a", "b", "c"} {
		t.Run(key, func(t *testing.T) {
			var p Parser
			v, err := p.Parse(doc)
			if err != nil {
				t.Fatal(err)
			}
			o, _ := v.Object()
			m, ok := o.Take(key)
			if !ok || o.Len() != 3 {
				t.Fatalf("Take(%q): ok %v, %d members left", key, ok, o.Len())
			}
			o.Restore(m)
			if got := string(v.MarshalTo(nil)); got != doc {
				t.Fatalf("got  %s\nwant %s", got, doc)
			}
		})
	}
	var p Parser
	v, _ := p.Parse(doc)
	o, _ := v.Object()
	if _, ok := o.Take("x"); ok {
		t.Fatal("Take of an absent key reported a member")
	}
}
