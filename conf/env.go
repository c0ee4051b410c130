package conf

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// substitution is one ${VAR} reference resolved while loading a file.
type substitution struct {
	Key   string // dotted key whose value held the reference
	Var   string // the variable's name
	Value string // what it was replaced by (the variable's value, or the default)
	Ref   string // the reference as written, "${NAME}" or "${NAME:default}"
}

// substitute replaces the environment references in s, a string value of
// key:
//
//	${NAME}          the value of the environment variable NAME; an error when it is unset
//	${NAME:default}  the value of NAME, or default when NAME is unset
//	$${              a literal "${"
//
// NAME is letters, digits and underscores, not starting with a digit; a
// default runs to the first "}". A "$" not followed by "{" is kept as it is.
// Values are inserted as they are: they are not searched for references.
func (d *decoder) substitute(key string, s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			// "$${": an escaped "${".
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q has a \"${\" without its \"}\": write ${NAME} or ${NAME:default} for an environment variable, or $${ for a literal \"${\"", shorten(s[i:]))
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":")
		if !validVarName(name) {
			return "", fmt.Errorf("\"${%s}\": %q is not an environment variable name (letters, digits and _, not starting with a digit); write $${ for a literal \"${\"", shorten(ref), shorten(name))
		}
		v, ok := d.env(name)
		if !ok {
			if !hasDef {
				return "", fmt.Errorf("environment variable %s is not set (referenced as ${%s}): set it in logpond's environment (systemd: Environment= or EnvironmentFile= in a drop-in), or give a default, ${%s:default}", name, name, name)
			}
			v = def
		}
		d.subst = append(d.subst, substitution{Key: key, Var: name, Value: v, Ref: s[i : i+end+1]})
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func validVarName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// shorten keeps quoted input short in messages.
func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Redacted stands for a secret in printed configurations.
const Redacted = "<redacted>"

// Printable returns a copy of the configuration for printing (as
// -check-config does) that shows no value taken from the environment: in
// every string value of a key that took an environment variable, the
// variable's value is shown as the reference it came from (${NAME} or
// ${NAME:default}), and a literal "${" as "$${", so that the output loads
// back, in the same environment, to the same configuration. When a host
// URL or a cloud_auth that took a variable carried an output's
// credentials, that output's username and password are shown as Redacted. Other keys are shown as
// loaded; password and api_key are left to the caller (RedactSecrets
// hides them). The copy shares nothing with the loaded configuration.
func (l *Loaded) Printable() Config {
	out := l.Config.Clone()
	keys := map[string]bool{}
	var subst []substitution
	for _, s := range l.subst {
		if s.Value == "" {
			continue
		}
		keys[s.Key] = true
		subst = append(subst, s)
	}
	for _, o := range out.elasticsearchOutputs() {
		if keys[o.Key+".hosts"] && l.liftedCreds[o.Key] || keys[o.Key+".cloud_auth"] {
			// Credentials in a host URL or in cloud_auth were moved into
			// these two; they may hold any part of a variable's value.
			o.Elasticsearch.Username, o.Elasticsearch.Password = Redacted, Redacted
		}
	}
	// Longest values first, so that a value containing another is shown
	// as its own reference.
	slices.SortStableFunc(subst, func(a, b substitution) int { return len(b.Value) - len(a.Value) })
	eachValue(reflect.ValueOf(&out).Elem(), nil, func(key toml.Key, v reflect.Value) {
		var ss []substitution // none: only escape "${"
		if keys[key.String()] {
			ss = subst
		}
		switch v.Kind() {
		case reflect.String:
			v.SetString(references(v.String(), ss))
		case reflect.Slice:
			for i := range v.Len() {
				switch e := v.Index(i); e.Kind() {
				case reflect.String:
					e.SetString(references(e.String(), ss))
				case reflect.Struct:
					// An entry of a list of tables (a Kafka output's
					// headers): its references were recorded under the
					// list's key.
					for j := range e.NumField() {
						if f := e.Field(j); f.Kind() == reflect.String {
							f.SetString(references(f.String(), ss))
						}
					}
				}
			}
		}
	})
	return out
}

// RedactSecrets replaces every secret of c that is set (each
// Elasticsearch output's password and api_key, each Kafka output's
// password) with Redacted, and the password in its cloud_auth
// ("user:<redacted>", so that the printed file still loads), for
// printing, and reports whether c shows any value as Redacted (these, or
// credentials Printable hid).
func (c *Config) RedactSecrets() bool {
	hidden := false
	for _, o := range c.kafkaOutputs() {
		if o.Kafka.Password != "" {
			o.Kafka.Password = Redacted
			hidden = true
		}
	}
	for _, o := range c.elasticsearchOutputs() {
		es := o.Elasticsearch
		for _, secret := range []*string{&es.Password, &es.APIKey} {
			if *secret != "" {
				*secret = Redacted
			}
		}
		// A cloud_auth without ":" is Printable's ${NAME} reference to
		// it, which shows nothing secret.
		if user, _, ok := strings.Cut(es.CloudAuth, ":"); ok {
			es.CloudAuth = user + ":" + Redacted
		}
		hidden = hidden || es.Username == Redacted || es.Password == Redacted || es.APIKey == Redacted || strings.HasSuffix(es.CloudAuth, ":"+Redacted)
	}
	return hidden
}

// Clone returns a deep copy of c: changing one changes nothing in the
// other.
func (c *Config) Clone() Config {
	out := *c
	out.Output.Elasticsearch = cloneElasticsearch(c.Output.Elasticsearch)
	if c.Output.NamedElasticsearch != nil {
		out.Output.NamedElasticsearch = make(map[string]*Elasticsearch, len(c.Output.NamedElasticsearch))
		for name, es := range c.Output.NamedElasticsearch {
			cp := cloneElasticsearch(*es)
			out.Output.NamedElasticsearch[name] = &cp
		}
	}
	if c.Output.Lumberjack != nil {
		out.Output.Lumberjack = make(map[string]*Lumberjack, len(c.Output.Lumberjack))
		for name, lj := range c.Output.Lumberjack {
			cp := *lj
			cp.Hosts = slices.Clone(lj.Hosts)
			cp.SSL.CertificateAuthorities = slices.Clone(lj.SSL.CertificateAuthorities)
			out.Output.Lumberjack[name] = &cp
		}
	}
	if c.Output.Kafka != nil {
		out.Output.Kafka = cloneKafka(c.Output.Kafka)
	}
	if c.Output.NamedKafka != nil {
		out.Output.NamedKafka = make(map[string]*Kafka, len(c.Output.NamedKafka))
		for name, kc := range c.Output.NamedKafka {
			out.Output.NamedKafka[name] = cloneKafka(kc)
		}
	}
	return out
}

func cloneKafka(kc *Kafka) *Kafka {
	cp := *kc
	cp.Hosts = slices.Clone(kc.Hosts)
	cp.Headers = slices.Clone(kc.Headers)
	cp.SSL.CertificateAuthorities = slices.Clone(kc.SSL.CertificateAuthorities)
	if p := kc.Partition.Hash; p != nil {
		h := *p
		h.Hash = slices.Clone(p.Hash)
		cp.Partition.Hash = &h
	}
	if p := kc.Partition.Random; p != nil {
		r := *p
		cp.Partition.Random = &r
	}
	if p := kc.Partition.RoundRobin; p != nil {
		r := *p
		cp.Partition.RoundRobin = &r
	}
	return &cp
}

func cloneElasticsearch(es Elasticsearch) Elasticsearch {
	es.Hosts = slices.Clone(es.Hosts)
	return es
}

// eachValue calls fn with every value (not section) of the struct v and
// its key, in field order, named outputs by name, and sections a pointer
// leaves unset skipped. The values are settable when v is.
func eachValue(v reflect.Value, prefix toml.Key, fn func(toml.Key, reflect.Value)) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		key := append(slices.Clone(prefix), tomlKey(f))
		fv := v.Field(i)
		switch {
		case f.Type.Kind() == reflect.Map:
			for _, name := range fv.MapKeys() {
				eachValue(fv.MapIndex(name).Elem(), append(slices.Clone(key), name.String()), fn)
			}
		case isSection(f.Type) && f.Type.Kind() == reflect.Pointer:
			if !fv.IsNil() {
				eachValue(fv.Elem(), key, fn)
			}
		case isSection(f.Type):
			eachValue(fv, key, fn)
		default:
			fn(key, fv)
		}
	}
}

// tomlKey is the key of a field in a configuration file: its toml tag, or,
// for a field the TOML encoder skips (toml:"-"), its conf tag.
func tomlKey(f reflect.StructField) string {
	if k := f.Tag.Get("conf"); k != "" {
		return k
	}
	return f.Tag.Get("toml")
}

// FromEnvironment reports whether any value took an environment variable.
func (l *Loaded) FromEnvironment() bool { return len(l.subst) > 0 }

// references writes s with every substituted value in it replaced by its
// ${NAME} reference and every other "${" escaped.
func references(s string, subst []substitution) string {
	var b strings.Builder
outer:
	for i := 0; i < len(s); {
		for _, r := range subst {
			if strings.HasPrefix(s[i:], r.Value) {
				b.WriteString(r.Ref)
				i += len(r.Value)
				continue outer
			}
		}
		if strings.HasPrefix(s[i:], "${") {
			b.WriteString("$${")
			i += 2
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}
