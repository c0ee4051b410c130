package conf

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// leafKeys lists the dotted path of every non-table key of Config.
func leafKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		path := prefix + f.Tag.Get("toml")
		if f.Type.Kind() == reflect.Struct {
			out = append(out, leafKeys(f.Type, path+".")...)
		} else {
			out = append(out, path)
		}
	}
	return out
}

// field returns the value of the leaf at a dotted path.
func field(v reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".") {
		f, _ := fieldByTag(v.Type(), name)
		v = v.FieldByIndex(f.Index)
	}
	return v
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
		Ledger:  Ledger{Dir: "/l", SegmentBytes: 32 << 20, MaxBytes: 1 << 40, FlushInterval: Duration(time.Second), Retention: Duration(24 * time.Hour), DirectIO: false},
		Input: Input{Beats: Beats{Listen: "127.0.0.1:0", MaxConnections: 5, MaxWindow: 100, MaxEventBytes: 1 << 20, MaxBatchBytes: 8 << 20,
			MaxInflightBytes: 32 << 20, IdleTimeout: Duration(time.Second), BatchTimeout: Duration(2 * time.Second), Keepalive: Duration(time.Millisecond * 500),
			TLS: BeatsTLS{Cert: "/c.pem", Key: "/k.pem", ClientCA: "/ca.pem", ClientAuth: "required"}}},
		Output: Output{Elasticsearch: Elasticsearch{Enabled: false, Hosts: []string{"https://es1:9200", "es2:9200"},
			Username: "u", Password: "p", APIKey: "a2V5", Index: "logs-%{+yyyy.MM.dd}", FallbackIndex: "lost", Pipeline: "p1",
			DocumentID: "none", Workers: 4, FlushBytes: 1 << 20, FlushInterval: Duration(time.Second / 2), MaxRequestBytes: 10 << 20,
			Compression: "gzip", Timeout: Duration(5 * time.Second), RetryInitialInterval: Duration(time.Second),
			RetryMaxInterval: Duration(time.Minute), DeadLetterMaxBytes: 64 << 20,
			TLS: ElasticsearchTLS{CA: "/es-ca.pem", VerificationMode: "none"}}},
		Admin: Admin{Listen: ""},
		Log:   Log{Level: "debug", Format: "json"},
	}
	def := reflect.ValueOf(Default())
	for _, k := range leafKeys(reflect.TypeFor[Config](), "") {
		if reflect.DeepEqual(field(reflect.ValueOf(want), k).Interface(), field(def, k).Interface()) {
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
	for _, k := range leafKeys(reflect.TypeFor[Config](), "") {
		if !md.IsDefined(strings.Split(k, ".")...) {
			t.Errorf("logpond.example.toml does not set %s: every key must be documented there", k)
		}
		if !strings.Contains(string(data), "Default:") {
			t.Fatal("the example must state defaults")
		}
	}
}

func TestMistakes(t *testing.T) {
	cases := []struct {
		name string
		toml string
		key  string // the key the error must name
		line int    // the line it must point at (0: not checked)
		want string // a phrase the message must contain
	}{
		{"unknown key", "[journal]\ndir = \"/j\"\nsegment_size = \"1MiB\"\n", "journal.segment_size", 3, `unknown key in [journal] (did you mean "segment_bytes"?)`},
		{"unknown key without a near miss", "[admin]\nzzz = 1\n", "admin.zzz", 2, "known keys there: listen"},
		{"unknown section", "[inputs.beats]\nlisten = \":5044\"\n", "inputs.beats", 1, "[inputs] is not a section of logpond's configuration (did you mean [input]?)"},
		{"unknown top-level key", "journal_dir = \"/j\"\n", "journal_dir", 1, "unknown key at the top level"},
		{"bad size", "[journal]\nmax_bytes = \"12XB\"\n", "journal.max_bytes", 2, `unknown unit "XB"`},
		{"ambiguous size unit", "[ledger]\nmax_bytes = \"10GB\"\n", "ledger.max_bytes", 2, "write 10GiB"},
		{"size without number", "[ledger]\nmax_bytes = \"GiB\"\n", "ledger.max_bytes", 2, "want a whole number and a unit"},
		{"negative size", "[ledger]\nmax_bytes = -1\n", "ledger.max_bytes", 2, "must not be negative"},
		{"bad duration", "[journal]\nmax_group_wait = \"2 fortnights\"\n", "journal.max_group_wait", 2, "invalid duration"},
		{"duration without unit", "[ledger]\nflush_interval = 100\n", "ledger.flush_interval", 2, "want a string with a unit"},
		{"negative duration", "[ledger]\nretention = \"-1h\"\n", "ledger.retention", 2, "must not be negative"},
		{"wrong type", "[ledger]\ndirect_io = \"yes\"\n", "", 0, "direct_io"},
		{"syntax error", "[journal\n", "", 2, "to end table name"},
		{"journal max below two segments", "[journal]\nsegment_bytes = \"64MiB\"\nmax_bytes = \"100MiB\"\n", "journal.max_bytes", 3, "less than 2 × journal.segment_bytes (64MiB): raise max_bytes to at least 128MiB"},
		{"ledger max below two segments", "[ledger]\nmax_bytes = \"256MiB\"\n", "ledger.max_bytes", 2, "raise max_bytes to at least 512MiB"},
		{"group bytes above segment", "[journal]\nsegment_bytes = \"1MiB\"\nmax_bytes = \"2MiB\"\nmax_group_bytes = \"2MiB\"\n", "journal.max_group_bytes", 4, "more than journal.segment_bytes"},
		{"group bytes too small", "[journal]\nmax_group_bytes = 10\n", "journal.max_group_bytes", 2, "below 4KiB"},
		{"index template unclosed", "[output.elasticsearch]\nindex = \"logs-%{[host][name]\"\n", "output.elasticsearch.index", 2, "sprintf:"},
		{"fallback index uppercase", "[output.elasticsearch]\nfallback_index = \"Lost\"\n", "output.elasticsearch.fallback_index", 2, "index names are lowercase"},
		{"document id mode", "[output.elasticsearch]\ndocument_id = \"random\"\n", "output.elasticsearch.document_id", 2, "use auto"},
		{"flush above request limit", "[output.elasticsearch]\nflush_bytes = \"200MiB\"\n", "output.elasticsearch.flush_bytes", 2, "outside 4KiB…max_request_bytes"},
		{"compression", "[output.elasticsearch]\ncompression = \"zstd\"\n", "output.elasticsearch.compression", 2, "use none or gzip"},
		{"retry bounds", "[output.elasticsearch]\nretry_max_interval = \"1s\"\n", "output.elasticsearch.retry_max_interval", 2, "less than retry_initial_interval"},
		{"dead letters smaller than events", "[output.elasticsearch]\ndead_letter_max_bytes = \"16MiB\"\n", "output.elasticsearch.dead_letter_max_bytes", 2, "raise it to at least 68MiB"},
		{"tls verification mode", "[output.elasticsearch.tls]\nverification_mode = \"strict\"\n", "output.elasticsearch.tls.verification_mode", 2, "use full"},
		{"group wait too long", "[journal]\nmax_group_wait = \"5s\"\n", "journal.max_group_wait", 2, "use a few milliseconds"},
		{"tiny segment", "[journal]\nsegment_bytes = \"4KiB\"\n", "journal.segment_bytes", 2, "outside 1MiB…1GiB"},
		{"unaligned ledger segment", "[ledger]\nsegment_bytes = 1048577\n", "ledger.segment_bytes", 2, "not a multiple of 4KiB"},
		{"zero flush interval", "[ledger]\nflush_interval = \"0s\"\n", "ledger.flush_interval", 2, "outside (0, 1m0s]"},
		{"missing journal dir", "[journal]\ndir = \"\"\n", "journal.dir", 2, "is empty: set it to the directory"},
		{"missing ledger dir", "[ledger]\ndir = \" \"\n", "ledger.dir", 2, "is empty"},
		{"same dirs", "[journal]\ndir = \"/d\"\n[ledger]\ndir = \"/d/\"\n", "ledger.dir", 4, "overlaps journal.dir"},
		{"ledger inside journal", "[journal]\ndir = \"/d\"\n[ledger]\ndir = \"/d/ledger\"\n", "ledger.dir", 4, "overlaps"},
		{"bad listen", "[input.beats]\nlisten = \"5044\"\n", "input.beats.listen", 2, "is not host:port"},
		{"bad port", "[admin]\nlisten = \"127.0.0.1:http\"\n", "admin.listen", 2, "not a number"},
		{"bad host", "[output.elasticsearch]\nhosts = [\"ftp://es:9200\"]\n", "output.elasticsearch.hosts", 2, `scheme "ftp"`},
		{"no hosts", "[output.elasticsearch]\nhosts = []\n", "output.elasticsearch.hosts", 2, "list at least one"},
		{"event larger than the batch", "[input.beats]\nmax_event_bytes = \"1GiB\"\n", "input.beats.max_batch_bytes", 0, "less than input.beats.max_event_bytes"},
		{"tls key without cert", "[input.beats.tls]\nkey = \"/k.pem\"\n", "input.beats.tls.key", 0, "set both"},
		{"client auth without CA", "[input.beats.tls]\ncert = \"/c\"\nkey = \"/k\"\nclient_auth = \"required\"\n", "input.beats.tls.client_ca", 0, "needs client_ca"},
		{"bad client auth", "[input.beats.tls]\nclient_auth = \"maybe\"\n", "input.beats.tls.client_auth", 2, "use none, optional or required"},
		{"zero keepalive", "[input.beats]\nkeepalive = \"0s\"\n", "input.beats.keepalive", 2, "must be more than 0s"},
		{"bad log level", "[log]\nlevel = \"loud\"\n", "log.level", 2, "use debug, info, warn or error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tc.toml))
			if err == nil {
				t.Fatal("loaded without error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "conf: x.toml") {
				t.Errorf("message %q does not start with the file name", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("message %q does not say %q", msg, tc.want)
			}
			var ke *KeyError
			if tc.key != "" || tc.line != 0 {
				if !errors.As(err, &ke) {
					t.Fatalf("%v is not a *KeyError", err)
				}
			}
			if tc.key != "" && ke.Key != tc.key {
				t.Errorf("error names key %q, want %q (%v)", ke.Key, tc.key, err)
			}
			if tc.line != 0 && ke.Line != tc.line {
				t.Errorf("error points at line %d, want %d (%v)", ke.Line, tc.line, err)
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
