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
// [output.kafka] likewise holds the unnamed Kafka output's settings and
// named ones ([output.kafka.NAME]); [output.lumberjack] holds named
// outputs only.
func (d *decoder) decodeOutput(out *Output, path toml.Key, table map[string]any) {
	var legacyDefined, namedDefined bool
	for _, name := range sortedKeys(table) {
		key := append(slices.Clone(path), name)
		val := table[name]
		switch name {
		case TypeElasticsearch, TypeLumberjack, TypeKafka:
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
		switch name {
		case TypeElasticsearch:
			l, n := d.decodeElasticsearchSection(out, key, sub)
			legacyDefined, namedDefined = legacyDefined || l, namedDefined || n
		case TypeLumberjack:
			namedDefined = d.decodeLumberjackSection(out, key, sub) || namedDefined
		case TypeKafka:
			// The unnamed Kafka output is another output the file asks
			// for: it disables the legacy default as named ones do.
			u, n := d.decodeKafkaSection(out, key, sub)
			namedDefined = namedDefined || u || n
		}
	}
	d.checkOutputNames(out, path, legacyDefined)
	// A file that names its outputs (or sets the unnamed Kafka output)
	// says which outputs it wants: the legacy default (Elasticsearch on
	// localhost) would otherwise run beside them unasked.
	if namedDefined && !legacyDefined {
		out.Elasticsearch.Enabled = false
	}
}

// decodeElasticsearchSection splits [output.elasticsearch] into the legacy
// output's settings and the named outputs, and decodes each. legacy
// reports whether the table sets any key directly (the legacy output is
// then defined), named whether it holds a named output.
func (d *decoder) decodeElasticsearchSection(out *Output, path toml.Key, table map[string]any) (legacy, named bool) {
	settings, named := d.splitMixedSection(path, table, reflect.TypeFor[Elasticsearch](), func(name string, key toml.Key, sub map[string]any) {
		es := DefaultElasticsearch()
		d.defined[key.String()] = true
		d.decodeTable(reflect.ValueOf(&es).Elem(), key, sub)
		if out.NamedElasticsearch == nil {
			out.NamedElasticsearch = map[string]*Elasticsearch{}
		}
		out.NamedElasticsearch[name] = &es
	})
	d.decodeTable(reflect.ValueOf(&out.Elasticsearch).Elem(), path, settings)
	return len(settings) > 0, named
}

// splitMixedSection splits a table that holds both the settings of one
// output written directly in it (keys of typ, and its setting tables,
// such as [output.elasticsearch.tls]) and named outputs ([path.NAME]):
// it returns the settings, and calls each for every named output whose
// name is valid. named reports whether the table holds, or was meant to
// hold, a named output. A setting's table that sets what only an output
// has was meant as an output of that name, which cannot be; a name that
// is another setting is ambiguous.
func (d *decoder) splitMixedSection(path toml.Key, table map[string]any, typ reflect.Type, each func(name string, key toml.Key, sub map[string]any)) (settings map[string]any, named bool) {
	settings = map[string]any{}
	for _, name := range sortedKeys(table) {
		key := append(slices.Clone(path), name)
		val := table[name]
		f, isSetting := fieldByTag(typ, name)
		sub, isTable := val.(map[string]any)
		var st reflect.Type
		isSectionSetting := false
		if isSetting {
			st, isSectionSetting = sectionStruct(f.Type)
		}
		switch {
		case isSetting && isTable && isSectionSetting:
			// A setting table of the output written directly in path. A
			// misspelt key of it is left to the unknown-key message.
			if other := outputOnlyKey(sub, st); other != "" {
				d.problem(key, "sets %s, which is not a key of [%s] (the %s settings of the output written directly in [%s]): an output cannot be named %q, as that name is a setting of [%s]; choose another name", other, key, name, path, name, path)
				named = true
				continue
			}
			settings[name] = val
		case isSetting && isTable:
			d.problem(key, "is ambiguous: %q is a setting of [%s], so it cannot name an output; choose another name", name, path)
			named = true
		case isSetting, !isTable:
			// A setting of the output written directly in path, or an
			// unknown key, whose message that output's decoding gives.
			settings[name] = val
		default:
			named = true
			if !ValidOutputName(name) {
				d.problem(key, "%s", badNameMessage(name))
				continue
			}
			each(name, key, sub)
		}
	}
	return settings, named
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
		d.inferSSL(key, &lj.SSL)
		if out.Lumberjack == nil {
			out.Lumberjack = map[string]*Lumberjack{}
		}
		out.Lumberjack[name] = &lj
	}
	return named
}

// decodeKafkaSection splits [output.kafka] into the unnamed output's
// settings and the named outputs, and decodes each, as
// decodeElasticsearchSection does for [output.elasticsearch]. unnamed
// reports whether the table sets any key directly (or a table setting
// such as [output.kafka.ssl]): the unnamed output is then defined, and
// out.Kafka set. named reports whether it holds a named output.
func (d *decoder) decodeKafkaSection(out *Output, path toml.Key, table map[string]any) (unnamed, named bool) {
	settings, named := d.splitMixedSection(path, table, reflect.TypeFor[Kafka](), func(name string, key toml.Key, sub map[string]any) {
		kc := DefaultKafka()
		d.defined[key.String()] = true
		d.decodeTable(reflect.ValueOf(&kc).Elem(), key, sub)
		d.inferSSL(key, &kc.SSL)
		if out.NamedKafka == nil {
			out.NamedKafka = map[string]*Kafka{}
		}
		out.NamedKafka[name] = &kc
	})
	if len(settings) == 0 {
		return false, named
	}
	kc := DefaultKafka()
	d.decodeTable(reflect.ValueOf(&kc).Elem(), path, settings)
	d.inferSSL(path, &kc.SSL)
	out.Kafka = &kc
	return true, named
}

// inferSSL applies Filebeat's rule to the ssl table of the output at key:
// setting any ssl key turns TLS on unless ssl.enabled says otherwise.
func (d *decoder) inferSSL(key toml.Key, ssl *LumberjackSSL) {
	prefix := key.String() + ".ssl."
	if d.defined[prefix+"enabled"] {
		return
	}
	for k := range d.defined {
		if strings.HasPrefix(k, prefix) {
			ssl.Enabled = true
			return
		}
	}
}

// checkOutputNames reports names used twice: across kinds, and
// LegacyOutputName while the legacy table is defined, UnnamedKafkaName
// while the unnamed Kafka output is. Each output names a cursor in the
// ledger, so two outputs with one name would share it. The later output,
// in the order Elasticsearch, Lumberjack, Kafka, is the one reported.
func (d *decoder) checkOutputNames(out *Output, path toml.Key, legacyDefined bool) {
	kinds := []struct {
		kind  string
		names []string
	}{
		{TypeElasticsearch, sortedNames(out.NamedElasticsearch)},
		{TypeLumberjack, sortedNames(out.Lumberjack)},
		{TypeKafka, sortedNames(out.NamedKafka)},
	}
	// The outputs whose settings are written directly in their kind's
	// table, by name.
	unnamed := map[string]string{}
	if legacyDefined {
		unnamed[LegacyOutputName] = TypeElasticsearch
	}
	if out.Kafka != nil {
		unnamed[UnnamedKafkaName] = TypeKafka
	}
	first := map[string]string{} // name → the kind that took it
	for _, k := range kinds {
		for _, name := range k.names {
			key := append(slices.Clone(path), k.kind, name)
			if kind, ok := unnamed[name]; ok {
				d.problem(key, "the name %q is taken by the output whose settings are directly in [%s.%s]: choose another name, or move those settings into this table", name, path, kind)
				continue
			}
			if kind, ok := first[name]; ok {
				d.problem(key, "the name %q is taken by [%s.%s.%s]: output names are unique across kinds (each names the output's cursor in the ledger); choose another name", name, path, kind, name)
				continue
			}
			first[name] = k.kind
		}
	}
}

// outputTypes are the types of the tables of each kind of output.
var outputTypes = []reflect.Type{reflect.TypeFor[Elasticsearch](), reflect.TypeFor[Lumberjack](), reflect.TypeFor[Kafka]()}

// outputOnlyKey returns a key of table that is not a key of the section
// type t but is a key of an output, or "".
func outputOnlyKey(table map[string]any, t reflect.Type) string {
	for _, k := range sortedKeys(table) {
		if _, ok := fieldByTag(t, k); ok {
			continue
		}
		for _, ot := range outputTypes {
			if _, ok := fieldByTag(ot, k); ok {
				return k
			}
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

// isSection reports whether t is decoded from a TOML table: a struct, or
// a pointer to one (see sectionStruct).
func isSection(t reflect.Type) bool {
	_, ok := sectionStruct(t)
	return ok
}
