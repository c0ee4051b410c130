package conf

import (
	"reflect"
	"slices"
	"strings"
)

// Changed lists the keys whose values differ between a and b, as dotted
// paths written as in the file ("output.lumberjack.relay.workers"); an
// output present in only one of them is listed by its table
// ("output.elasticsearch.siem", "output.kafka" for the unnamed Kafka
// output), as is a table set in only one of them
// ("output.kafka.events.partition.random"). The values themselves are not returned,
// so the list can be logged whatever the keys hold (passwords included).
func Changed(a, b *Config) []string {
	var keys []string
	changed(reflect.ValueOf(*a), reflect.ValueOf(*b), "", &keys)
	slices.Sort(keys)
	return keys
}

// changed appends to keys the paths under prefix where a and b differ.
func changed(a, b reflect.Value, prefix string, keys *[]string) {
	switch {
	case a.Kind() == reflect.Struct && a.Type() != reflect.TypeFor[Size]() && a.Type() != reflect.TypeFor[Duration]():
		t := a.Type()
		for i := range t.NumField() {
			name := keyName(t.Field(i))
			if name == "" {
				continue
			}
			changed(a.Field(i), b.Field(i), join(prefix, name), keys)
		}
	case a.Kind() == reflect.Pointer:
		switch {
		case a.IsNil() && b.IsNil():
		case a.IsNil() || b.IsNil():
			*keys = append(*keys, prefix)
		default:
			changed(a.Elem(), b.Elem(), prefix, keys)
		}
	case a.Kind() == reflect.Map && a.Type().Elem().Kind() == reflect.Pointer:
		names := map[string]bool{}
		for _, k := range a.MapKeys() {
			names[k.String()] = true
		}
		for _, k := range b.MapKeys() {
			names[k.String()] = true
		}
		for name := range names {
			va, vb := a.MapIndex(reflect.ValueOf(name)), b.MapIndex(reflect.ValueOf(name))
			switch {
			case !va.IsValid() || !vb.IsValid() || va.IsNil() || vb.IsNil():
				if va.IsValid() != vb.IsValid() || (va.IsValid() && va.IsNil() != vb.IsNil()) {
					*keys = append(*keys, join(prefix, name))
				}
			default:
				changed(va.Elem(), vb.Elem(), join(prefix, name), keys)
			}
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*keys = append(*keys, prefix)
		}
	}
}

// keyName is a field's key in the file: its toml tag, or, for a field the
// TOML decoder leaves to Load, its conf tag; "" for a field of no key.
func keyName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if name == "-" || name == "" {
		name = f.Tag.Get("conf")
	}
	return name
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
