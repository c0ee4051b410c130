package conf

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/logpond/logpond/internal/testkit/conftest"
)

// leafKeys lists the dotted path of every non-table key of Config. A map
// of named tables ([output.lumberjack.NAME]) gives its table's keys under
// the name NAME; a field the TOML encoder skips (the named Elasticsearch
// outputs, whose keys are those of [output.elasticsearch], and the
// unnamed Kafka output, whose keys are those of [output.kafka.NAME])
// gives none. A table that a pointer leaves unset ([...partition.hash])
// gives its keys.
func leafKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		path := prefix + f.Tag.Get("toml")
		switch {
		case f.Tag.Get("toml") == "-":
		case f.Type.Kind() == reflect.Struct:
			out = append(out, leafKeys(f.Type, path+".")...)
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			out = append(out, leafKeys(f.Type.Elem(), path+".")...)
		case f.Type.Kind() == reflect.Map:
			out = append(out, leafKeys(f.Type.Elem().Elem(), path+".NAME.")...)
		default:
			out = append(out, path)
		}
	}
	return out
}

// field returns the value of the leaf at a dotted path. NAME in a map of
// named tables stands for its first table by name, or, when there is none,
// for the defaults of one; a table a pointer leaves unset stands for the
// defaults of one.
func field(v reflect.Value, path string) reflect.Value {
	parts := strings.Split(path, ".")
	for i := 0; i < len(parts); i++ {
		f, _ := fieldByTag(v.Type(), parts[i])
		v = v.FieldByIndex(f.Index)
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v = newSection(v.Type().Elem())
			}
			v = v.Elem()
			continue
		}
		if v.Kind() != reflect.Map {
			continue
		}
		i++ // NAME
		if keys := v.MapKeys(); len(keys) > 0 {
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			v = v.MapIndex(keys[0]).Elem()
		} else {
			v = reflect.ValueOf(namedDefaults[v.Type().Elem().Elem()])
		}
	}
	return v
}

// namedDefaults holds the defaults of each kind of named table.
var namedDefaults = map[reflect.Type]any{
	reflect.TypeFor[Lumberjack]():    DefaultLumberjack(),
	reflect.TypeFor[Elasticsearch](): DefaultElasticsearch(),
	reflect.TypeFor[Kafka]():         DefaultKafka(),
}

func TestDefaultsAreValid(t *testing.T) {
	cfg, err := Parse("empty.toml", nil)
	if err != nil {
		t.Fatalf("an empty file must load with defaults: %v", err)
	}
	if !reflect.DeepEqual(*cfg, Default()) {
		t.Fatalf("empty file gave %+v, want the defaults %+v", *cfg, Default())
	}
}

// TestEveryKeyRoundTrips sets every key to a non-default value, encodes the
// config as TOML, loads it back and expects the same config. The check that
// each value differs from its default makes a key that silently fails to
// decode (a wrong tag, a missing field) fail this test.
func TestEveryKeyRoundTrips(t *testing.T) {
	want := Config{
		Journal: Journal{Dir: "/j", SegmentBytes: 8 << 20, MaxBytes: 100 << 20, MaxGroupWait: Duration(2 * time.Millisecond), MaxGroupBytes: 1 << 20},
		Ledger: Ledger{Dir: "/l", SegmentBytes: 32 << 20, MaxBytes: 1 << 40, FlushInterval: Duration(time.Second), Retention: Duration(24 * time.Hour), DirectIO: false,
			Compression: CompressionNone, CompressionLevel: "best"},
		Input: Input{Beats: Beats{Listen: "127.0.0.1:0", MaxConnections: 5, MaxWindow: 100, MaxEventBytes: 1 << 20, MaxBatchBytes: 8 << 20,
			MaxInflightBytes: 32 << 20, IdleTimeout: Duration(time.Second), BatchTimeout: Duration(2 * time.Second), Keepalive: Duration(time.Millisecond * 500),
			TLS: BeatsTLS{Cert: "/c.pem", Key: "/k.pem", ClientCA: "/ca.pem", ClientAuth: "required"}}},
		Output: Output{Elasticsearch: Elasticsearch{Enabled: false, Hosts: []string{"https://es1:9200", "es2:9200"},
			Username: "u", Password: "p", APIKey: "a2V5", Index: "logs-%{+yyyy.MM.dd}", FallbackIndex: "lost", Pipeline: "p1",
			DocumentID: "none", Workers: 8, Concurrency: "fixed", FlushBytes: 2 << 20, FlushInterval: Duration(time.Second / 2), MaxRequestBytes: 10 << 20,
			Compression: "gzip", Timeout: Duration(5 * time.Second), RetryInitialInterval: Duration(time.Second),
			RetryMaxInterval: Duration(time.Minute), DeadLetterMaxBytes: 64 << 20, DeadLetterMaxAge: Duration(72 * time.Hour),
			TLS: ElasticsearchTLS{CA: "/es-ca.pem", VerificationMode: "none", Cert: "/es-c.pem", Key: "/es-k.pem"}, MaxLag: 1 << 30, StartAt: "newest",
			DataStream: DataStreamOff, DataStreamType: "metrics", DataStreamDataset: "nginx.access", DataStreamNamespace: "prod", DataStreamSyncFields: false},
			Lumberjack: map[string]*Lumberjack{"edge": {Enabled: false, MaxLag: 2 << 30, StartAt: "newest", Hosts: []string{"ls1:5044", "[::1]:5045"},
				LoadBalance: true, Workers: 3, BulkMaxSize: 100, CompressionLevel: 0, Timeout: Duration(5 * time.Second), TTL: Duration(time.Minute),
				Backoff:            LumberjackBackoff{Init: Duration(2 * time.Second), Max: Duration(10 * time.Second)},
				SSL:                LumberjackSSL{Enabled: true, CertificateAuthorities: []string{"/a.pem", "/b.pem"}, Certificate: "/lc.pem", Key: "/lk.pem", VerificationMode: "none"},
				DeadLetterMaxBytes: 128 << 20, DeadLetterMaxAge: Duration(24 * time.Hour),
				Processors: Processors{{"rename": map[string]any{"fields": []any{map[string]any{"from": "a", "to": "b"}}}}}}},
		},
		Admin: Admin{Listen: "", Pprof: true},
		Log:   Log{Level: "debug", Format: "json"},
		Processors: Processors{
			{"dissect": map[string]any{"tokenizer": "%{a} \"%{b}\"\t%{c|integer}", "target_prefix": "", "ignore_failure": true}},
			{"drop_event": map[string]any{"when": map[string]any{"range": map[string]any{"x.gte": int64(3), "y.lt": 2.5}}}},
			{"if": map[string]any{"equals": map[string]any{"é key": "v"}}, "then": []any{map[string]any{"add_fields": map[string]any{"fields": map[string]any{"n": int64(1)}}}}},
		},
	}
	// The keys that exclude others (cloud_id excludes hosts; cloud_auth
	// username, password and api_key) are set in the named output, whose
	// hosts and credentials are what Load decodes from them.
	siem := want.Output.Elasticsearch
	siem.Enabled, siem.Index = true, "siem-%{+yyyy}"
	siem.CloudID = "siem:" + base64.StdEncoding.EncodeToString([]byte("siem.example.com:9243$abc$kb"))
	siem.Hosts = []string{"https://abc.siem.example.com:9243"}
	siem.CloudAuth, siem.Username, siem.Password, siem.APIKey = "elastic:pw:with:colons", "elastic", "pw:with:colons", ""
	siem.TLS.CA = "/siem-ca.pem"
	siem.Processors = Processors{{"add_tags": map[string]any{"tags": []any{"siem"}}}}
	want.Output.NamedElasticsearch = map[string]*Elasticsearch{"siem": &siem}
	// The partition tables exclude each other: each named Kafka output
	// sets one; the unnamed one is printed apart and must come back too.
	events := Kafka{Enabled: false, MaxLag: 2 << 30, StartAt: "newest", Hosts: []string{"k1:9092", "[::1]:9093"},
		Topic: "logs-%{[@metadata][beat]}", FallbackTopic: "logs-unrouted", Key: "%{[host][name]}",
		Partition:    KafkaPartition{Hash: &KafkaHashPartition{Hash: []string{"host.name", "message"}, ReachableOnly: true}},
		RequiredAcks: 1, Compression: "lz4", CompressionLevel: 6, MaxMessageBytes: 2 << 20, ClientID: "lp-test",
		Headers:     []KafkaHeader{{Key: "env", Value: "prod"}, {Key: "dc", Value: "eu-1"}},
		BulkMaxSize: 100, BulkFlushFrequency: Duration(100 * time.Millisecond), Timeout: Duration(20 * time.Second), BrokerTimeout: Duration(5 * time.Second),
		Backoff:     LumberjackBackoff{Init: Duration(2 * time.Second), Max: Duration(30 * time.Second)},
		ExactlyOnce: false, TransactionalID: "tx-events", Username: "u", Password: "p", SASL: KafkaSASL{Mechanism: SASLScramSHA512},
		SSL:                LumberjackSSL{Enabled: true, CertificateAuthorities: []string{"/ka.pem"}, Certificate: "/kc.pem", Key: "/kk.pem", VerificationMode: "none"},
		DeadLetterMaxBytes: 128 << 20, DeadLetterMaxAge: Duration(24 * time.Hour),
		Processors: Processors{{"drop_fields": map[string]any{"fields": []any{"agent"}, "ignore_missing": true}}}}
	spread := DefaultKafka()
	spread.Hosts, spread.Topic = []string{"k1:9092"}, "spread"
	spread.Partition.Random = &KafkaRandomPartition{ReachableOnly: true, GroupEvents: 10}
	turns := DefaultKafka()
	turns.Hosts, turns.Topic = []string{"k1:9092"}, "turns"
	turns.Partition.RoundRobin = &KafkaRoundRobinPartition{ReachableOnly: true, GroupEvents: 3}
	unnamed := DefaultKafka()
	unnamed.Hosts, unnamed.Topic, unnamed.TransactionalID = []string{"k2:9092"}, "unnamed", "tx-unnamed"
	unnamed.Headers = []KafkaHeader{{Key: "via", Value: "logpond"}}
	unnamed.SSL.Enabled = true
	want.Output.NamedKafka = map[string]*Kafka{"events": &events, "spread": &spread, "turns": &turns}
	want.Output.Kafka = &unnamed
	def := reflect.ValueOf(Default())
	named := reflect.ValueOf(siem)
	for _, k := range leafKeys(reflect.TypeFor[Config](), "") {
		if reflect.DeepEqual(field(reflect.ValueOf(want), k).Interface(), field(def, k).Interface()) {
			if rel, ok := strings.CutPrefix(k, "output.elasticsearch."); ok && !reflect.DeepEqual(field(named, rel).Interface(), field(def, k).Interface()) {
				continue
			}
			if anyNamedDiffers(reflect.ValueOf(want), field(def, k), k) {
				continue
			}
			t.Fatalf("test config leaves %s at its default: give it another value", k)
		}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(want); err != nil {
		t.Fatal(err)
	}
	got, err := Parse("roundtrip.toml", buf.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("round trip changed the config:\n got %+v\nwant %+v\n%s", *got, want, buf.String())
	}
	if es := got.Output.NamedElasticsearch["siem"]; es == nil || es.TLS.CA != "/siem-ca.pem" || es.Index != siem.Index {
		t.Fatalf("the named Elasticsearch output did not round-trip: %+v\n%s", es, buf.String())
	}
}

// anyNamedDiffers reports whether k is a key of a named table
// ("output.kafka.NAME.partition.random.group_events") that some table of
// that kind in cfg sets to another value than def.
func anyNamedDiffers(cfg, def reflect.Value, k string) bool {
	section, rel, ok := strings.Cut(k, ".NAME.")
	if !ok {
		return false
	}
	v := cfg
	for _, part := range strings.Split(section, ".") {
		f, _ := fieldByTag(v.Type(), part)
		v = v.FieldByIndex(f.Index)
	}
	for _, name := range v.MapKeys() {
		if !reflect.DeepEqual(field(v.MapIndex(name).Elem(), rel).Interface(), def.Interface()) {
			return true
		}
	}
	return false
}

func TestExampleDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile("logpond.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("logpond.example.toml", data); err != nil {
		t.Fatalf("the example must load: %v", err)
	}
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		t.Fatal(err)
	}
	// The example's named outputs, by kind.
	names := map[string]string{"output.lumberjack": "archive", "output.kafka": "stream"}
	for _, k := range leafKeys(reflect.TypeFor[Config](), "") {
		section, rel, ok := strings.Cut(k, ".NAME.")
		key := k
		if ok {
			key = section + "." + names[section] + "." + rel
		}
		if md.IsDefined(strings.Split(key, ".")...) {
			continue
		}
		// The partition tables exclude each other: the example sets
		// one and shows the others commented out, each key under its
		// table's header.
		table, leaf := key[:strings.LastIndexByte(key, '.')], key[strings.LastIndexByte(key, '.')+1:]
		if strings.Contains(table, ".partition.") {
			if i := strings.Index(string(data), "# ["+table+"]\n"); i >= 0 && strings.Contains(string(data[i:]), "# "+leaf+" = ") {
				continue
			}
		}
		t.Errorf("logpond.example.toml does not set %s: every key must be documented there", k)
		if !strings.Contains(string(data), "Default:") {
			t.Fatal("the example must state defaults")
		}
	}
}

// leafImports are the only logpond packages conf imports: leaves
// themselves. record, the codec, names the ledger's compression levels
// and states its compressors' memory; it imports no logpond package
// (TestConfIsALeaf checks), so conf stays a leaf.
var leafImports = []string{"github.com/logpond/logpond/internal/hosturl", "github.com/logpond/logpond/record"}

// TestConfIsALeaf: conf holds the schema, defaults and per-key checks and
// imports none of logpond's components (checks that need them are
// server.ConfigChecks), so every component can depend on it.
func TestConfIsALeaf(t *testing.T) {
	for _, pkg := range []string{"../record", "../internal/hosturl"} {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				if path := strings.Trim(imp.Path.Value, `"`); strings.HasPrefix(path, "github.com/logpond/logpond/") {
					t.Errorf("%s imports %s: conf imports it as a leaf, so it must import no logpond package", name, path)
				}
			}
		}
	}
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(path, "github.com/logpond/logpond/") && !slices.Contains(leafImports, path) {
				t.Errorf("%s imports %s: conf must not depend on logpond's components", name, path)
			}
		}
	}
}

func TestMistakes(t *testing.T) {
	for _, tc := range conftest.Mistakes {
		if tc.Whole() {
			continue // server.ConfigChecks finds it (server's TestConfigChecks)
		}
		t.Run(tc.Name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tc.TOML))
			if err == nil {
				t.Fatal("loaded without error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "conf: x.toml") {
				t.Errorf("message %q does not start with the file name", msg)
			}
			if !strings.Contains(msg, tc.Want) {
				t.Errorf("message %q does not say %q", msg, tc.Want)
			}
			// The problem the test is about: the first one, or the first
			// about tc.Key (problems are ordered by line and key).
			var ke *KeyError
			if tc.Key != "" || tc.Line != 0 {
				if !errors.As(err, &ke) {
					t.Fatalf("%v is not a *KeyError", err)
				}
			}
			if joined, ok := err.(interface{ Unwrap() []error }); ok && tc.Key != "" {
				for _, e := range joined.Unwrap() {
					if k, ok := e.(*KeyError); ok && k.Key == tc.Key {
						ke = k
						break
					}
				}
			}
			if tc.Key != "" && ke.Key != tc.Key {
				t.Errorf("error names key %q, want %q (%v)", ke.Key, tc.Key, err)
			}
			if tc.Line != 0 && ke.Line != tc.Line {
				t.Errorf("error points at line %d, want %d (%v)", ke.Line, tc.Line, err)
			}
		})
	}
}

func TestAllProblemsAreReported(t *testing.T) {
	_, err := Parse("x.toml", []byte("[journal]\nbogus = 1\ndir = \"\"\n[log]\nlevel = \"x\"\n"))
	for _, want := range []string{"journal.bogus", "journal.dir", "log.level"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func TestHostsReplaceDefault(t *testing.T) {
	cfg, err := Parse("x.toml", []byte("[output.elasticsearch]\nhosts = [\"http://a:9200\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Output.Elasticsearch.Hosts; len(got) != 1 || got[0] != "http://a:9200" {
		t.Fatalf("hosts = %v, want only the file's host", got)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("/nonexistent/logpond.toml")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/logpond.toml") {
		t.Fatalf("got %v, want an error naming the file", err)
	}
}

// TestHostCredentialsMoveToUsernamePassword: credentials in host URLs end
// up in username and password, and the hosts keep their spelling without
// them, so nothing that logs or prints the hosts can show a password.
func TestHostCredentialsMoveToUsernamePassword(t *testing.T) {
	for _, tc := range []struct{ name, toml string }{
		{"one host", `hosts = ["https://elastic:hunter%2F2@es1:9200", "es2:9200"]`},
		{"same on every host", `hosts = ["https://elastic:hunter%2F2@es1:9200", "elastic:hunter%2F2@es2:9200"]`},
		{"same as username and password", "hosts = [\"https://elastic:hunter%2F2@es1:9200\", \"es2:9200\"]\nusername = \"elastic\"\npassword = \"hunter/2\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("x.toml", []byte("[output.elasticsearch]\n"+tc.toml+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			es := cfg.Output.Elasticsearch
			if es.Username != "elastic" || es.Password != "hunter/2" {
				t.Errorf("username %q, password %q; want elastic, hunter/2", es.Username, es.Password)
			}
			if want := []string{"https://es1:9200", "es2:9200"}; !reflect.DeepEqual(es.Hosts, want) {
				t.Errorf("hosts %q, want %q", es.Hosts, want)
			}
		})
	}
}

// TestHostErrorsHidePasswords: whatever is wrong with a host that carries
// credentials, the error shows no part of the password.
func TestHostErrorsHidePasswords(t *testing.T) {
	for _, h := range []string{
		"ftp://elastic:s3cr3t@es1:9200",
		"https://elastic:s3cr3t@es1:99999",
		"https://elastic:s3cr3t@es1:port",
		"https://elastic:s3/cr3t@es1:9200",
		"https://elastic:s3 cr3t@es1:9200",
	} {
		_, err := Parse("x.toml", []byte(fmt.Sprintf("[output.elasticsearch]\nhosts = [%q]\n", h)))
		if err == nil {
			t.Errorf("%s: loaded", h)
			continue
		}
		if strings.Contains(err.Error(), "s3") || strings.Contains(err.Error(), "cr3t") {
			t.Errorf("%s: the error shows the password: %v", h, err)
		}
	}
	_, err := Parse("x.toml", []byte("[output.elasticsearch]\nhosts = [\"https://a:s3cr3t@es1\", \"https://b:0th3r@es2\"]\napi_key = \"a2V5\"\n"))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "0th3r") || strings.Contains(err.Error(), "a2V5") {
		t.Errorf("conflicting credentials: %v", err)
	}
}
