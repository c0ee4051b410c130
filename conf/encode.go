package conf

import (
	"bufio"
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// MarshalTOML writes c as a configuration file that Parse loads back to
// the same Config: every key, named outputs as [output.elasticsearch.NAME],
// [output.lumberjack.NAME] and [output.kafka.NAME] tables, the unnamed
// Kafka output (when set) as keys directly in [output.kafka]. The legacy
// [output.elasticsearch] table is left out when it only holds the disabled
// defaults beside other outputs, as a file that names its outputs and sets
// no key there loads to that. It lets toml.Encoder encode a Config (as
// -check-config prints it): the encoder alone cannot, as the legacy table
// and the named Elasticsearch outputs share one key, and so do the
// unnamed and the named Kafka outputs.
func (c Config) MarshalTOML() ([]byte, error) {
	type output struct {
		Elasticsearch *Elasticsearch         `toml:"elasticsearch"` // nil: left out
		Lumberjack    map[string]*Lumberjack `toml:"lumberjack"`
	}
	type config struct {
		Processors Processors `toml:"processors"` // before any table
		Journal    Journal    `toml:"journal"`
		Ledger     Ledger     `toml:"ledger"`
		Input      Input      `toml:"input"`
		Output     output     `toml:"output"`
		Admin      Admin      `toml:"admin"`
		Log        Log        `toml:"log"`
	}
	plain := config{Processors: c.Processors.printed(), Journal: c.Journal, Ledger: c.Ledger, Input: c.Input, Admin: c.Admin, Log: c.Log,
		Output: output{Elasticsearch: asWritten(c.Output.Elasticsearch), Lumberjack: c.Output.Lumberjack}}
	if len(c.Output.Lumberjack) == 0 {
		plain.Output.Lumberjack = nil // an empty map would print an empty table
	} else {
		plain.Output.Lumberjack = map[string]*Lumberjack{}
		for name, lj := range c.Output.Lumberjack {
			cp := *lj
			cp.Processors = cp.Processors.printed()
			plain.Output.Lumberjack[name] = &cp
		}
	}
	hasNamed := len(c.Output.NamedElasticsearch) > 0 || len(c.Output.Lumberjack) > 0 || c.Output.Kafka != nil || len(c.Output.NamedKafka) > 0
	if off := DefaultElasticsearch(); hasNamed {
		off.Enabled = false
		if reflect.DeepEqual(c.Output.Elasticsearch, off) {
			plain.Output.Elasticsearch = nil
		}
	}
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(plain); err != nil {
		return nil, fmt.Errorf("conf: encoding the configuration: %w", err)
	}
	// The named Elasticsearch outputs and the Kafka outputs go with the
	// other outputs, before [admin] (which the encoder always writes,
	// after [output]).
	var named bytes.Buffer
	for _, o := range c.namedElasticsearch() {
		if err := writeTable(&named, o.Key, asWritten(*o.Elasticsearch)); err != nil {
			return nil, err
		}
	}
	for _, o := range c.kafkaOutputs() {
		k := *o.Kafka
		k.Processors = k.Processors.printed()
		if err := writeTable(&named, o.Key, &k); err != nil {
			return nil, err
		}
	}
	doc := b.Bytes()
	at := bytes.Index(doc, []byte("\n[admin]\n"))
	if at < 0 {
		return nil, fmt.Errorf("conf: encoding the configuration: no [admin] table to put the named outputs before")
	}
	return slices.Concat(doc[:at+1], named.Bytes(), doc[at+1:]), nil
}

// writeTable appends v, encoded as the table [key], to b. Encoded alone,
// v's sub-tables come out as [tls] or [[headers]]: they are put under key.
// The encoder writes every value on one line, so a line starting with "["
// is a table header.
func writeTable(b *bytes.Buffer, key string, v any) error {
	var t bytes.Buffer
	enc := toml.NewEncoder(&t)
	enc.Indent = ""
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("conf: encoding [%s]: %w", key, err)
	}
	fmt.Fprintf(b, "[%s]\n", key)
	sc := bufio.NewScanner(&t)
	sc.Buffer(nil, t.Len()+1)
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "[["); ok {
			line = "[[" + key + "." + h
		} else if h, ok := strings.CutPrefix(line, "["); ok {
			line = "[" + key + "." + h
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("conf: encoding [%s]: %w", key, err)
	}
	return nil
}

// asWritten is an Elasticsearch output as a file sets it: without the
// hosts that Load decodes from cloud_id, nor the username and password it
// takes from cloud_auth, as a file that sets those sets none of these.
// (The TOML encoder leaves nil values out.)
func asWritten(es Elasticsearch) *Elasticsearch {
	if es.CloudID != "" {
		es.Hosts = nil
	}
	if es.CloudAuth != "" {
		es.Username, es.Password = "", ""
	}
	es.Processors = es.Processors.printed()
	return &es
}

// printed is the list as printed: an empty list is written "[]" (the
// encoder leaves a nil one out, and every key is printed).
func (p Processors) printed() Processors {
	if p == nil {
		return Processors{}
	}
	return p
}
