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
// the same Config: every key, named outputs as [output.elasticsearch.NAME]
// and [output.lumberjack.NAME] tables. The legacy [output.elasticsearch]
// table is left out when it only holds the disabled defaults beside named
// outputs, as a file that names its outputs and sets no key there loads to
// that. It lets toml.Encoder encode a Config (as -check-config prints it):
// the encoder alone cannot, as the legacy table and the named
// Elasticsearch outputs share one key.
func (c Config) MarshalTOML() ([]byte, error) {
	type output struct {
		Elasticsearch *Elasticsearch         `toml:"elasticsearch"` // nil: left out
		Lumberjack    map[string]*Lumberjack `toml:"lumberjack"`
	}
	type config struct {
		Journal Journal `toml:"journal"`
		Ledger  Ledger  `toml:"ledger"`
		Input   Input   `toml:"input"`
		Output  output  `toml:"output"`
		Admin   Admin   `toml:"admin"`
		Log     Log     `toml:"log"`
	}
	plain := config{Journal: c.Journal, Ledger: c.Ledger, Input: c.Input, Admin: c.Admin, Log: c.Log,
		Output: output{Elasticsearch: asWritten(c.Output.Elasticsearch), Lumberjack: c.Output.Lumberjack}}
	if len(c.Output.Lumberjack) == 0 {
		plain.Output.Lumberjack = nil // an empty map would print an empty table
	}
	hasNamed := len(c.Output.NamedElasticsearch) > 0 || len(c.Output.Lumberjack) > 0
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
	// The named Elasticsearch outputs go with the other outputs, before
	// [admin] (which the encoder always writes, after [output]).
	var named bytes.Buffer
	for _, o := range c.namedElasticsearch() {
		// Encoded alone, an output's sub-tables come out as [tls]: they
		// are put under the output's key. The encoder writes every value
		// on one line, so a line starting with "[" is a table header.
		var t bytes.Buffer
		enc := toml.NewEncoder(&t)
		enc.Indent = ""
		if err := enc.Encode(asWritten(*o.Elasticsearch)); err != nil {
			return nil, fmt.Errorf("conf: encoding [%s]: %w", o.Key, err)
		}
		fmt.Fprintf(&named, "[%s]\n", o.Key)
		sc := bufio.NewScanner(&t)
		sc.Buffer(nil, t.Len()+1)
		for sc.Scan() {
			line := sc.Text()
			if h, ok := strings.CutPrefix(line, "["); ok && !strings.HasPrefix(h, "[") {
				line = "[" + o.Key + "." + h
			}
			named.WriteString(line)
			named.WriteByte('\n')
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("conf: encoding [%s]: %w", o.Key, err)
		}
	}
	doc := b.Bytes()
	at := bytes.Index(doc, []byte("\n[admin]\n"))
	if at < 0 {
		return nil, fmt.Errorf("conf: encoding the configuration: no [admin] table to put the named outputs before")
	}
	return slices.Concat(doc[:at+1], named.Bytes(), doc[at+1:]), nil
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
	return &es
}
