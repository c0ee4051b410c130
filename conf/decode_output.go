package conf

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// decodeOutput overlays the [output] table on out. [output.elasticsearch]
// holds both the legacy output's settings (keys directly inside, and its
// tls table) and named outputs ([output.elasticsearch.NAME]);
// [output.lumberjack] holds named outputs only.
func (d *decoder) decodeOutput(out *Output, path toml.Key, table map[string]any) {
	var legacyDefined, namedDefined bool
	for _, name := range sortedKeys(table) {
		key := append(slices.Clone(path), name)
		val := table[name]
		switch name {
		case TypeElasticsearch, TypeLumberjack:
		default:
			d.unknown(key)
			continue
		}
		sub, ok := val.(map[string]any)
		if !ok {
			d.bad(key, "is a section: write it as a table, [%s], not as %s", key, aTOMLType(val))
			continue
		}
		d.defined[key.String()] = true
		if name == TypeElasticsearch {
			l, n := d.decodeElasticsearchSection(out, key, sub)
			legacyDefined, namedDefined = legacyDefined || l, namedDefined || n
		} else {
			namedDefined = d.decodeLumberjackSection(out, key, sub) || namedDefined
		}
	}
	d.checkOutputNames(out, path, legacyDefined)
	// A file that names its outputs says which outputs it wants: the
	// legacy default (Elasticsearch on localhost) would otherwise run
	// beside them unasked.
	if namedDefined && !legacyDefined {
		out.Elasticsearch.Enabled = false
	}
}

// decodeElasticsearchSection splits [output.elasticsearch] into the legacy
// output's settings and the named outputs, and decodes each. legacy
// reports whether the table sets any key directly (the legacy output is
// then defined), named whether it holds a named output.
func (d *decoder) decodeElasticsearchSection(out *Output, path toml.Key, table map[string]any) (legacy, named bool) {
	esType := reflect.TypeFor[Elasticsearch]()
	settings := map[string]any{}
	for _, name := range sortedKeys(table) {
		key := append(slices.Clone(path), name)
		val := table[name]
		f, isSetting := fieldByTag(esType, name)
		sub, isTable := val.(map[string]any)
		switch {
		case isSetting && isTable && f.Type == reflect.TypeFor[ElasticsearchTLS]():
			// [output.elasticsearch.tls] is the legacy output's TLS
			// table, unless it sets what only an output has: then it
			// cannot be, and was meant as an output called "tls". A
			// misspelt TLS key is left to the unknown-key message.
			if other := outputOnlyKey(sub, f.Type); other != "" {
				d.problem(key, "sets %s, which is not a key of the TLS table [%s] (the legacy output's TLS settings): an output cannot be named %q, as that name is a setting of [output.elasticsearch]; choose another name", other, key, name)
				named = true
				continue
			}
			settings[name] = val
		case isSetting && isTable && !isSection(f.Type):
			d.problem(key, "is ambiguous: %q is a setting of [output.elasticsearch], so it cannot name an output; choose another name", name)
			named = true
		case isSetting, !isTable:
			// A setting of the legacy output, or an unknown key, whose
			// message the legacy table's decoding gives.
			settings[name] = val
		default:
			named = true
			if !ValidOutputName(name) {
				d.problem(key, "%s", badNameMessage(name))
				continue
			}
			es := DefaultElasticsearch()
			d.defined[key.String()] = true
			d.decodeTable(reflect.ValueOf(&es).Elem(), key, sub)
			if out.NamedElasticsearch == nil {
				out.NamedElasticsearch = map[string]*Elasticsearch{}
			}
			out.NamedElasticsearch[name] = &es
		}
	}
	d.decodeTable(reflect.ValueOf(&out.Elasticsearch).Elem(), path, settings)
	return len(settings) > 0, named
}

// decodeLumberjackSection decodes the [output.lumberjack.NAME] tables and
// reports whether there was any.
func (d *decoder) decodeLumberjackSection(out *Output, path toml.Key, table map[string]any) bool {
	named := false
	for _, name := range sortedKeys(table) {
		key := append(slices.Clone(path), name)
		sub, ok := table[name].(map[string]any)
		if !ok {
			if _, isSetting := fieldByTag(reflect.TypeFor[Lumberjack](), name); isSetting {
				d.problem(key, "Lumberjack outputs are named: write [%s.NAME] and set %s there", path, name)
			} else {
				d.problem(key, "is %s: a Lumberjack output is a table, [%s]", aTOMLType(table[name]), key)
			}
			continue
		}
		named = true
		if !ValidOutputName(name) {
			d.problem(key, "%s", badNameMessage(name))
			continue
		}
		lj := DefaultLumberjack()
		d.defined[key.String()] = true
		d.decodeTable(reflect.ValueOf(&lj).Elem(), key, sub)
		// As in Filebeat, setting any ssl key turns TLS on unless
		// ssl.enabled says otherwise.
		ssl := key.String() + ".ssl."
		if !d.defined[ssl+"enabled"] {
			for k := range d.defined {
				if strings.HasPrefix(k, ssl) {
					lj.SSL.Enabled = true
					break
				}
			}
		}
		if out.Lumberjack == nil {
			out.Lumberjack = map[string]*Lumberjack{}
		}
		out.Lumberjack[name] = &lj
	}
	return named
}

// checkOutputNames reports names used twice: across kinds, and
// LegacyOutputName while the legacy table is defined. Each output names
// a cursor in the ledger, so two outputs with one name would share it.
func (d *decoder) checkOutputNames(out *Output, path toml.Key, legacyDefined bool) {
	for _, name := range sortedNames(out.Lumberjack) {
		if _, ok := out.NamedElasticsearch[name]; ok {
			d.problem(append(slices.Clone(path), TypeLumberjack, name), "the name %q is taken by [%s.elasticsearch.%s]: output names are unique across kinds (each names the output's cursor in the ledger); choose another name", name, path, name)
		}
	}
	if !legacyDefined {
		return
	}
	_, es := out.NamedElasticsearch[LegacyOutputName]
	_, lj := out.Lumberjack[LegacyOutputName]
	for kind, taken := range map[string]bool{TypeElasticsearch: es, TypeLumberjack: lj} {
		if taken {
			d.problem(append(slices.Clone(path), kind, LegacyOutputName), "the name %q is taken by the output whose settings are directly in [%s.elasticsearch]: choose another name, or move those settings into this table", LegacyOutputName, path)
		}
	}
}

// outputOnlyKey returns a key of table that is not a key of the section
// type t but is a key of an output, or "".
func outputOnlyKey(table map[string]any, t reflect.Type) string {
	for _, k := range sortedKeys(table) {
		if _, ok := fieldByTag(t, k); ok {
			continue
		}
		_, es := fieldByTag(reflect.TypeFor[Elasticsearch](), k)
		_, lj := fieldByTag(reflect.TypeFor[Lumberjack](), k)
		if es || lj {
			return k
		}
	}
	return ""
}

func badNameMessage(name string) string {
	return fmt.Sprintf("%q cannot name an output: use 1 to 64 of a-z, 0-9, _ and - (the name names the output's cursor, dead-letter directory and metrics)", shorten(name))
}

// problem reports a problem with key that is not a value that failed to
// decode.
func (d *decoder) problem(key toml.Key, format string, args ...any) {
	d.problems = append(d.problems, &KeyError{Key: key.String(), Msg: fmt.Sprintf(format, args...)})
}

// isSection reports whether t is decoded from a TOML table.
func isSection(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !isLeaf(t)
}
