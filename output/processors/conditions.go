package processors

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/logpond/logpond/internal/jsontree"
)

// Conditions are Filebeat's (libbeat/conditions): the `when` of a
// processor and the `if` of an if/then/else element. A condition is a
// table naming one of equals, contains, regexp, range, has_fields,
// network, and, or, not. Fields are dotted paths into the event; a field
// that is missing, or holds a value of a type the condition does not
// compare, makes the condition false, never an error, as in Filebeat.
//
// JSON numbers are typed as Filebeat types the numbers of a JSON event it
// decodes (encoding/json with UseNumber, then Int64 else Float64): a
// number written as an integer that fits an int64 is an integer; any
// other number (200.0, 2e2, 1e30) is a float.

// condKnown lists the condition names, sorted, for messages.
var condKnown = []string{"and", "contains", "equals", "has_fields", "network", "not", "or", "range", "regexp"}

// condPrecedence is the order in which Filebeat's NewCondition looks for
// a condition name in a table: it uses the first it finds and ignores the
// others. Here a table naming several is refused; the order only says,
// in the message, which one Filebeat would have used.
var condPrecedence = []string{"equals", "contains", "regexp", "range", "has_fields", "network", "or", "and", "not"}

// compileCondition compiles v, the decoded TOML value of a `when` (or of
// the `if` of an if/then/else) found at the key at. v must be a table
// naming exactly one condition:
//
//   - equals: a table of field = value, where value is a string, an
//     integer or a boolean; every field must hold exactly that value, of
//     that JSON type (an integer matches only a JSON integer: 200 matches
//     200, not 200.0 nor "200").
//   - contains: a table of field = substring; the field must be a string
//     holding the substring, or an array with a string element holding
//     it. As in Filebeat, an empty substring matches only an empty string.
//   - regexp: a table of field = Go regexp (RE2, compiled here once),
//     matched unanchored against a string field or, for an array, any of
//     its string elements.
//   - range: a table of "<field>.<op>" = number, with op one of lt, lte,
//     gt, gte; the number may be a numeric string, as Filebeat's
//     ExtractFloat allows. The field must be a JSON number (a numeric
//     string does not match, as in Filebeat); several bounds on one field
//     and several fields must all hold.
//   - has_fields: a list of fields (or one field) that must all be
//     present; a null counts as present.
//   - network: a table of field = network, or field = list of networks
//     (any may match); a network is a CIDR or one of Filebeat's names
//     (loopback, global_unicast, unicast, link_local_unicast,
//     interface_local_multicast, link_local_multicast, multicast,
//     unspecified, private, public). The field must be a string holding
//     an IP address, or an array of them, any of which may match; a
//     string that is not an IP address matches nothing.
//   - and, or: a list of conditions (a list of tables); not: a condition.
//
// In equals, contains, regexp, range and network a table nests field
// names (TOML's dotted keys): http.response.code = 200 and
// "http.response.code" = 200 name the same field. Several fields in one
// condition must all hold.
//
// An error is a *ConfigError whose At is the full key of what is wrong,
// e.g. at+".equals.http.code" or at+`.range."http.code.gte"`. The
// condition returned is immutable and safe for concurrent use; its match
// does not allocate for equals, contains, has_fields and range (nor, in
// the usual cases, for regexp and network).
func compileCondition(at string, v any) (condition, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &ConfigError{At: at, Err: fmt.Errorf("want a table naming one condition (%s), got %s", strings.Join(condKnown, ", "), condDescribe(v))}
	}
	if len(m) == 0 {
		return nil, &ConfigError{At: at, Err: fmt.Errorf("empty: name one condition; known: %s", strings.Join(condKnown, ", "))}
	}
	keys := sortedKeys(m)
	for _, k := range keys {
		if !slices.Contains(condKnown, k) {
			return nil, &ConfigError{At: condKey(at, k), Err: fmt.Errorf("unknown condition; known: %s", strings.Join(condKnown, ", "))}
		}
	}
	if len(keys) > 1 {
		var first string
		for _, k := range condPrecedence {
			if _, ok := m[k]; ok {
				first = k
				break
			}
		}
		return nil, &ConfigError{At: at, Err: fmt.Errorf("names %d conditions (%s) but holds one (Filebeat would use only %s and ignore the rest): combine them with and = [...]", len(keys), strings.Join(keys, ", "), first)}
	}
	name := keys[0]
	key := condKey(at, name)
	val := m[name]
	switch name {
	case "equals":
		return condCompileEquals(key, val)
	case "contains", "regexp":
		return condCompileMatch(key, name == "regexp", val)
	case "range":
		return condCompileRange(key, val)
	case "has_fields":
		return condCompileHasFields(key, val)
	case "network":
		return condCompileNetwork(key, val)
	case "and", "or":
		list, err := condCompileList(key, val)
		if err != nil {
			return nil, err
		}
		if name == "and" {
			return condAnd(list), nil
		}
		return condOr(list), nil
	default: // "not"
		inner, err := compileCondition(key, val)
		if err != nil {
			return nil, err
		}
		return condNot{inner}, nil
	}
}

// condKey appends the TOML key k to at, quoting it unless it is a bare
// key, so that a field name with dots reads as the one key it is.
func condKey(at, k string) string {
	bare := k != ""
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			bare = false
			break
		}
	}
	if bare {
		return at + "." + k
	}
	return at + "." + strconv.Quote(k)
}

// condEntry is one field = value of a condition's table, nested tables
// flattened to a dotted field name.
type condEntry struct {
	field string
	at    string // the full key, for messages
	v     any
}

// condFlatten reads the table of fields of a condition at at, in sorted
// order, flattening nested tables into dotted field names as Filebeat's
// conditions do. It refuses an empty table, and a field named twice.
func condFlatten(at string, v any) ([]condEntry, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &ConfigError{At: at, Err: fmt.Errorf("want a table of field = value, got %s", condDescribe(v))}
	}
	if len(m) == 0 {
		return nil, &ConfigError{At: at, Err: errors.New("empty: name at least one field")}
	}
	var out []condEntry
	seen := map[string]string{}
	var walk func(prefix, at string, m map[string]any) error
	walk = func(prefix, at string, m map[string]any) error {
		for _, k := range sortedKeys(m) {
			field := k
			if prefix != "" {
				field = prefix + "." + k
			}
			kat := condKey(at, k)
			if sub, ok := m[k].(map[string]any); ok {
				if len(sub) == 0 {
					return &ConfigError{At: kat, Err: errors.New("an empty table names no field")}
				}
				if err := walk(field, kat, sub); err != nil {
					return err
				}
				continue
			}
			if prev, dup := seen[field]; dup {
				return &ConfigError{At: kat, Err: fmt.Errorf("names the field %q again (also at %s)", field, prev)}
			}
			seen[field] = kat
			out = append(out, condEntry{field: field, at: kat, v: m[k]})
		}
		return nil
	}
	if err := walk("", at, m); err != nil {
		return nil, err
	}
	return out, nil
}

// condPath compiles a field name, naming at in the error.
func condPath(at, field string) (path, error) {
	p, err := newPath(field)
	if err != nil {
		return path{}, &ConfigError{At: at, Err: err}
	}
	return p, nil
}

// condConfigInt reports whether v is a configured integer, as Filebeat's
// ExtractInt takes one (any Go integer type; an unsigned one keeps its
// bits, as Filebeat compares integers as uint64).
func condConfigInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint64:
		return int64(x), true
	case uint:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint8:
		return int64(x), true
	}
	return 0, false
}

// condDescribe is describe, naming the TOML types describe does not know.
func condDescribe(v any) string {
	if _, ok := v.(time.Time); ok {
		return "a date or time"
	}
	return describe(v)
}

// --- equals ---

const (
	condKindString = iota
	condKindInt
	condKindBool
)

// condEquals holds when every term holds.
type condEquals []condEqualsTerm

type condEqualsTerm struct {
	p    path
	kind int
	s    string
	n    int64
	b    bool
}

func condCompileEquals(at string, v any) (condition, error) {
	entries, err := condFlatten(at, v)
	if err != nil {
		return nil, err
	}
	c := make(condEquals, 0, len(entries))
	for _, en := range entries {
		p, err := condPath(en.at, en.field)
		if err != nil {
			return nil, err
		}
		t := condEqualsTerm{p: p}
		if n, ok := condConfigInt(en.v); ok {
			t.kind, t.n = condKindInt, n
		} else {
			switch x := en.v.(type) {
			case string:
				t.kind, t.s = condKindString, x
			case bool:
				t.kind, t.b = condKindBool, x
			default:
				return nil, &ConfigError{At: en.at, Err: fmt.Errorf("want a string, an integer or a boolean, got %s", condDescribe(en.v))}
			}
		}
		c = append(c, t)
	}
	return c, nil
}

func (c condEquals) match(e *event) bool {
	for i := range c {
		if !c[i].holds(e) {
			return false
		}
	}
	return true
}

func (t *condEqualsTerm) holds(e *event) bool {
	v := e.peek(&t.p)
	if v == nil {
		return false
	}
	switch t.kind {
	case condKindString:
		if v.Type() != jsontree.TypeString {
			return false
		}
		b, _ := v.StringBytes()
		return string(b) == t.s
	case condKindInt:
		return v.Type() == jsontree.TypeNumber && condJSONIntIs(v, t.n)
	default:
		switch v.Type() {
		case jsontree.TypeTrue:
			return t.b
		case jsontree.TypeFalse:
			return !t.b
		}
		return false
	}
}

// condJSONIntIs reports whether v is a JSON number written as an
// integer that fits an int64 (as Go's json.Number.Int64 reads it) and
// equal to n. It allocates only for a number of n's value not written as
// an integer (200.0 for 200), which Int64 refuses with an error.
func condJSONIntIs(v *jsontree.Value, n int64) bool {
	f, err := v.Float64()
	if err != nil || f != float64(n) {
		return false
	}
	m, err := v.Int64()
	return err == nil && m == n
}

// --- contains, regexp ---

// condMatch is contains or regexp: every term must hold.
type condMatch []condMatchTerm

type condMatchTerm struct {
	p   path
	sub string         // contains
	re  *regexp.Regexp // regexp; nil for contains
}

func condCompileMatch(at string, isRegexp bool, v any) (condition, error) {
	entries, err := condFlatten(at, v)
	if err != nil {
		return nil, err
	}
	c := make(condMatch, 0, len(entries))
	for _, en := range entries {
		p, err := condPath(en.at, en.field)
		if err != nil {
			return nil, err
		}
		s, ok := en.v.(string)
		if !ok {
			what := "a string"
			if isRegexp {
				what = "a string (a regexp)"
			}
			return nil, &ConfigError{At: en.at, Err: fmt.Errorf("want %s, got %s", what, condDescribe(en.v))}
		}
		t := condMatchTerm{p: p, sub: s}
		if isRegexp {
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, &ConfigError{At: en.at, Err: fmt.Errorf("bad regexp %q: %v", s, err)}
			}
			t.re = re
		}
		c = append(c, t)
	}
	return c, nil
}

func (c condMatch) match(e *event) bool {
	for i := range c {
		if !c[i].holds(e) {
			return false
		}
	}
	return true
}

func (t *condMatchTerm) holds(e *event) bool {
	v := e.peek(&t.p)
	if v == nil {
		return false
	}
	switch v.Type() {
	case jsontree.TypeString:
		b, _ := v.StringBytes()
		return t.str(unsafeString(b))
	case jsontree.TypeArray:
		items, _ := v.Array()
		for _, it := range items {
			if it.Type() != jsontree.TypeString {
				continue
			}
			b, _ := it.StringBytes()
			if t.str(unsafeString(b)) {
				return true
			}
		}
	}
	return false
}

func (t *condMatchTerm) str(s string) bool {
	if t.re != nil {
		return t.re.MatchString(s)
	}
	if t.sub == "" {
		// Filebeat's match.CompileString("") matches the empty string only.
		return s == ""
	}
	return strings.Contains(s, t.sub)
}

// --- range ---

// condRange holds when every field is within its bounds.
type condRange []condRangeTerm

type condRangeTerm struct {
	p                path
	hasGte, hasGt    bool
	hasLte, hasLt    bool
	gte, gt, lte, lt float64
}

const condRangeOps = "gt, gte, lt, lte"

func condCompileRange(at string, v any) (condition, error) {
	entries, err := condFlatten(at, v)
	if err != nil {
		return nil, err
	}
	byField := map[string]int{} // index in c
	var c condRange
	for _, en := range entries {
		dot := strings.LastIndexByte(en.field, '.')
		if dot < 0 {
			return nil, &ConfigError{At: en.at, Err: fmt.Errorf("want <field>.<op> with op one of %s, e.g. \"http.response.code.gte\"", condRangeOps)}
		}
		field, op := en.field[:dot], en.field[dot+1:]
		bound, err := condRangeBound(en.v)
		if err != nil {
			return nil, &ConfigError{At: en.at, Err: err}
		}
		i, ok := byField[field]
		if !ok {
			p, err := condPath(en.at, field)
			if err != nil {
				return nil, err
			}
			i = len(c)
			byField[field] = i
			c = append(c, condRangeTerm{p: p})
		}
		t := &c[i]
		switch op {
		case "gte":
			t.hasGte, t.gte = true, bound
		case "gt":
			t.hasGt, t.gt = true, bound
		case "lte":
			t.hasLte, t.lte = true, bound
		case "lt":
			t.hasLt, t.lt = true, bound
		default:
			return nil, &ConfigError{At: en.at, Err: fmt.Errorf("unknown range operator %q; known: %s", op, condRangeOps)}
		}
	}
	return c, nil
}

// condRangeBound reads a bound as Filebeat's ExtractFloat does: a number,
// or a string holding one. NaN, which no value is within, is refused.
func condRangeBound(v any) (float64, error) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case uint64:
		f = float64(x)
	case uint:
		f = float64(x)
	case string:
		var err error
		f, err = strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, fmt.Errorf("want a number, got %s", describe(v))
		}
	default:
		n, ok := condConfigInt(v)
		if !ok {
			return 0, fmt.Errorf("want a number, got %s", condDescribe(v))
		}
		f = float64(n)
	}
	if math.IsNaN(f) {
		return 0, errors.New("want a number, got NaN")
	}
	return f, nil
}

func (c condRange) match(e *event) bool {
	for i := range c {
		if !c[i].holds(e) {
			return false
		}
	}
	return true
}

func (t *condRangeTerm) holds(e *event) bool {
	v := e.peek(&t.p)
	if v == nil {
		return false
	}
	var f float64
	var err error
	switch v.Type() {
	case jsontree.TypeNumber:
		f, err = v.Float64()
	case jsontree.TypeString:
		// Filebeat's ExtractFloat reads a string as a number: a status
		// code that dissect cut without |integer is compared as one.
		f, err = strconv.ParseFloat(v.Str(), 64)
	default:
		return false
	}
	if err != nil || math.IsNaN(f) {
		return false
	}
	switch {
	case t.hasGte && f < t.gte,
		t.hasGt && f <= t.gt,
		t.hasLte && f > t.lte,
		t.hasLt && f >= t.lt:
		return false
	}
	return true
}

// --- has_fields ---

// condHasFields holds when every field is present (null included).
type condHasFields []path

func condCompileHasFields(at string, v any) (condition, error) {
	var names []string
	switch x := v.(type) {
	case string:
		names = []string{x}
	case []string:
		names = x
	case []any:
		for i, it := range x {
			s, ok := it.(string)
			if !ok {
				return nil, &ConfigError{At: fmt.Sprintf("%s[%d]", at, i), Err: fmt.Errorf("want a field name, got %s", condDescribe(it))}
			}
			names = append(names, s)
		}
	default:
		return nil, &ConfigError{At: at, Err: fmt.Errorf("want a list of field names, got %s", condDescribe(v))}
	}
	if len(names) == 0 {
		return nil, &ConfigError{At: at, Err: errors.New("empty: list at least one field")}
	}
	c := make(condHasFields, 0, len(names))
	for i, n := range names {
		p, err := newPath(n)
		if err != nil {
			k := at
			if _, one := v.(string); !one {
				k = fmt.Sprintf("%s[%d]", at, i)
			}
			return nil, &ConfigError{At: k, Err: err}
		}
		c = append(c, p)
	}
	return c, nil
}

func (c condHasFields) match(e *event) bool {
	for _, p := range c {
		if e.peek(&p) == nil {
			return false
		}
	}
	return true
}

// --- network ---

// condNetwork holds when every field holds an address in one of its
// networks.
type condNetwork []condNetworkTerm

type condNetworkTerm struct {
	p    path
	nets []condNet // any
}

// condNet is a CIDR or a named network.
type condNet struct {
	prefix netip.Prefix          // when named is nil
	named  func(netip.Addr) bool // takes an unmapped address
}

func (n *condNet) contains(a netip.Addr) bool {
	if n.named != nil {
		return n.named(a)
	}
	return n.prefix.Contains(a)
}

// condNamedNetworks are Filebeat's named networks. They take addresses
// with IPv4-mapped IPv6 ones unmapped, as net.IP's methods see them.
var condNamedNetworks = map[string]func(netip.Addr) bool{
	"loopback":                  netip.Addr.IsLoopback,
	"global_unicast":            netip.Addr.IsGlobalUnicast,
	"unicast":                   netip.Addr.IsGlobalUnicast,
	"link_local_unicast":        netip.Addr.IsLinkLocalUnicast,
	"interface_local_multicast": netip.Addr.IsInterfaceLocalMulticast,
	"link_local_multicast":      netip.Addr.IsLinkLocalMulticast,
	"multicast":                 netip.Addr.IsMulticast,
	"unspecified":               netip.Addr.IsUnspecified,
	"private":                   condIsPrivate,
	"public":                    condIsPublic,
}

var condNetworkNames = sortedKeys(condNamedNetworks)

// condIsPrivate is Filebeat's private: RFC 1918 for IPv4 and fd00::/8
// (not all of RFC 4193's fc00::/7) for IPv6.
func condIsPrivate(a netip.Addr) bool {
	if a.Is4() {
		b := a.As4()
		return b[0] == 10 || b[0] == 172 && b[1]&0xf0 == 16 || b[0] == 192 && b[1] == 168
	}
	return a.Is6() && a.As16()[0] == 0xfd
}

// condIsPublic is Filebeat's public: not private, loopback, unspecified,
// the IPv4 broadcast address, nor link- or interface-local.
func condIsPublic(a netip.Addr) bool {
	return !(condIsPrivate(a) || a.IsLoopback() || a.IsUnspecified() ||
		a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast())
}

func condCompileNetwork(at string, v any) (condition, error) {
	entries, err := condFlatten(at, v)
	if err != nil {
		return nil, err
	}
	c := make(condNetwork, 0, len(entries))
	for _, en := range entries {
		p, err := condPath(en.at, en.field)
		if err != nil {
			return nil, err
		}
		t := condNetworkTerm{p: p}
		switch x := en.v.(type) {
		case string:
			n, err := condParseNet(x)
			if err != nil {
				return nil, &ConfigError{At: en.at, Err: err}
			}
			t.nets = append(t.nets, n)
		case []string, []any:
			var list []any
			if ss, ok := x.([]string); ok {
				for _, s := range ss {
					list = append(list, s)
				}
			} else {
				list = x.([]any)
			}
			if len(list) == 0 {
				return nil, &ConfigError{At: en.at, Err: errors.New("empty: list at least one network")}
			}
			for i, it := range list {
				s, ok := it.(string)
				if !ok {
					return nil, &ConfigError{At: fmt.Sprintf("%s[%d]", en.at, i), Err: fmt.Errorf("want a network (a CIDR or a name), got %s", condDescribe(it))}
				}
				n, err := condParseNet(s)
				if err != nil {
					return nil, &ConfigError{At: fmt.Sprintf("%s[%d]", en.at, i), Err: err}
				}
				t.nets = append(t.nets, n)
			}
		default:
			return nil, &ConfigError{At: en.at, Err: fmt.Errorf("want a network or a list of networks, got %s", condDescribe(en.v))}
		}
		c = append(c, t)
	}
	return c, nil
}

// condParseNet reads a named network or a CIDR, as Filebeat does (names
// first, then net.ParseCIDR, whose IPv4-mapped IPv6 networks contain
// IPv4 addresses).
func condParseNet(s string) (condNet, error) {
	if f, ok := condNamedNetworks[s]; ok {
		return condNet{named: f}, nil
	}
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		return condNet{}, fmt.Errorf("%q is neither a named network (%s) nor a CIDR like \"192.0.2.0/24\" or \"2001:db8::/32\"", s, strings.Join(condNetworkNames, ", "))
	}
	ones, _ := n.Mask.Size()
	if ip4 := n.IP.To4(); ip4 != nil {
		if len(n.Mask) == net.IPv6len {
			ones -= 96
		}
		return condNet{prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte(ip4)), max(ones, 0))}, nil
	}
	return condNet{prefix: netip.PrefixFrom(netip.AddrFrom16([16]byte(n.IP.To16())), ones)}, nil
}

func (c condNetwork) match(e *event) bool {
	for i := range c {
		if !c[i].holds(e) {
			return false
		}
	}
	return true
}

func (t *condNetworkTerm) holds(e *event) bool {
	v := e.peek(&t.p)
	if v == nil {
		return false
	}
	switch v.Type() {
	case jsontree.TypeString:
		return t.ip(v)
	case jsontree.TypeArray:
		items, _ := v.Array()
		for _, it := range items {
			if it.Type() == jsontree.TypeString && t.ip(it) {
				return true
			}
		}
	}
	return false
}

// ip reports whether the string v is an IP address (as net.ParseIP reads
// one: no zone) in one of t's networks.
func (t *condNetworkTerm) ip(v *jsontree.Value) bool {
	b, _ := v.StringBytes()
	a, err := netip.ParseAddr(unsafeString(b))
	if err != nil || a.Zone() != "" {
		return false
	}
	a = a.Unmap()
	for i := range t.nets {
		if t.nets[i].contains(a) {
			return true
		}
	}
	return false
}

// --- and, or, not ---

// condAnd holds when every condition holds.
type condAnd []condition

// condOr holds when any condition holds.
type condOr []condition

// condNot holds when its condition does not.
type condNot struct{ c condition }

func (c condAnd) match(e *event) bool {
	for _, x := range c {
		if !x.match(e) {
			return false
		}
	}
	return true
}

func (c condOr) match(e *event) bool {
	for _, x := range c {
		if x.match(e) {
			return true
		}
	}
	return false
}

func (c condNot) match(e *event) bool { return !c.c.match(e) }

// condCompileList compiles the list of conditions of an and or an or.
func condCompileList(at string, v any) ([]condition, error) {
	var tables []any
	switch x := v.(type) {
	case []map[string]any:
		for _, t := range x {
			tables = append(tables, t)
		}
	case []any:
		tables = x
	default:
		return nil, &ConfigError{At: at, Err: fmt.Errorf("want a list of conditions (a list of tables), got %s", condDescribe(v))}
	}
	if len(tables) == 0 {
		return nil, &ConfigError{At: at, Err: errors.New("empty: list at least one condition")}
	}
	out := make([]condition, 0, len(tables))
	for i, t := range tables {
		c, err := compileCondition(fmt.Sprintf("%s[%d]", at, i), t)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
