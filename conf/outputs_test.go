package conf

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// outputNames lists Outputs as "name:type:key".
func outputNames(c *Config) []string {
	var out []string
	for _, o := range c.Outputs() {
		out = append(out, o.Name+":"+o.Type+":"+o.Key)
		if (o.Type == TypeElasticsearch) != (o.Elasticsearch != nil) || (o.Type == TypeLumberjack) != (o.Lumberjack != nil) {
			out = append(out, "bad pointers for "+o.Name)
		}
	}
	return out
}

// TestOutputs: which outputs a file defines, legacy and named.
func TestOutputs(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       []string
		legacy     bool // Output.Elasticsearch.Enabled
	}{
		{"no file content", "", []string{"elasticsearch:elasticsearch:output.elasticsearch"}, true},
		{"legacy only", "[output.elasticsearch]\nhosts = [\"http://es:9200\"]\nworkers = 2\n",
			[]string{"elasticsearch:elasticsearch:output.elasticsearch"}, true},
		{"legacy TLS only", "[output.elasticsearch.tls]\nca = \"/ca.pem\"\n[output.lumberjack.edge]\nhosts = [\"ls:5044\"]\n",
			[]string{"edge:lumberjack:output.lumberjack.edge", "elasticsearch:elasticsearch:output.elasticsearch"}, true},
		{"named only", "[output.elasticsearch.siem]\nhosts = [\"https://siem:9200\"]\n[output.elasticsearch.main]\nhosts = [\"https://es:9200\"]\n",
			[]string{"main:elasticsearch:output.elasticsearch.main", "siem:elasticsearch:output.elasticsearch.siem"}, false},
		{"lumberjack only", "[output.lumberjack.edge]\nhosts = [\"ls:5044\"]\n",
			[]string{"edge:lumberjack:output.lumberjack.edge"}, false},
		{"named lumberjack called elasticsearch", "[output.lumberjack.elasticsearch]\nhosts = [\"ls:5044\"]\n",
			[]string{"elasticsearch:lumberjack:output.lumberjack.elasticsearch"}, false},
		{"mixed", "[output.elasticsearch]\nworkers = 2\n[output.elasticsearch.siem]\nhosts = [\"https://siem:9200\"]\n[output.lumberjack.archive]\nhosts = [\"ls:5044\"]\n",
			[]string{"archive:lumberjack:output.lumberjack.archive", "elasticsearch:elasticsearch:output.elasticsearch", "siem:elasticsearch:output.elasticsearch.siem"}, true},
		{"disabled ones left out", "[output.elasticsearch]\nenabled = false\n[output.elasticsearch.siem]\nenabled = false\n[output.lumberjack.archive]\nhosts = [\"ls:5044\"]\n[output.lumberjack.edge]\nenabled = false\nhosts = [\"ls:5044\"]\n",
			[]string{"archive:lumberjack:output.lumberjack.archive"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("x.toml", []byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			if got := outputNames(cfg); !slices.Equal(got, tc.want) {
				t.Errorf("Outputs() = %q, want %q", got, tc.want)
			}
			if cfg.Output.Elasticsearch.Enabled != tc.legacy {
				t.Errorf("legacy output enabled = %v, want %v", cfg.Output.Elasticsearch.Enabled, tc.legacy)
			}
		})
	}
}

// TestNamedOutputsTakeDefaults: a named table starts from the defaults of
// its kind, and the legacy table's keys do not leak into named ones.
func TestNamedOutputsTakeDefaults(t *testing.T) {
	cfg, err := Parse("x.toml", []byte("[output.elasticsearch]\nworkers = 2\n[output.elasticsearch.siem]\nhosts = [\"https://siem:9200\"]\n[output.lumberjack.edge]\nhosts = [\"ls:5044\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultElasticsearch()
	want.Hosts = []string{"https://siem:9200"}
	if got := *cfg.Output.NamedElasticsearch["siem"]; !reflect.DeepEqual(got, want) {
		t.Errorf("siem = %+v, want the defaults with its hosts %+v", got, want)
	}
	lj := DefaultLumberjack()
	lj.Hosts = []string{"ls:5044"}
	if got := *cfg.Output.Lumberjack["edge"]; !reflect.DeepEqual(got, lj) {
		t.Errorf("edge = %+v, want %+v", got, lj)
	}
}

// TestLumberjackSSLEnabledByOtherKeys: as in Filebeat, any ssl key turns
// TLS on unless ssl.enabled is set.
func TestLumberjackSSLEnabledByOtherKeys(t *testing.T) {
	for _, tc := range []struct {
		ssl  string
		want bool
	}{
		{"", false},
		{"[output.lumberjack.edge.ssl]\ncertificate_authorities = [\"/ca.pem\"]\n", true},
		{"[output.lumberjack.edge.ssl]\nverification_mode = \"full\"\n", true},
		{"[output.lumberjack.edge.ssl]\nenabled = false\ncertificate_authorities = [\"/ca.pem\"]\n", false},
		{"[output.lumberjack.edge.ssl]\nenabled = true\n", true},
	} {
		cfg, err := Parse("x.toml", []byte("[output.lumberjack.edge]\nhosts = [\"ls:5044\"]\n"+tc.ssl))
		if err != nil {
			t.Fatalf("%q: %v", tc.ssl, err)
		}
		if got := cfg.Output.Lumberjack["edge"].SSL.Enabled; got != tc.want {
			t.Errorf("%q: ssl.enabled = %v, want %v", tc.ssl, got, tc.want)
		}
	}
}

// TestOutputProblems: each file has one problem about outputs, reported
// with its key, its line and what to change.
func TestOutputProblems(t *testing.T) {
	const lj = "[output.lumberjack.edge]\nhosts = [\"ls:5044\"]\n"
	for _, tc := range []struct {
		name, toml string
		key        string
		line       int
		want       string
	}{
		// Names.
		{"upper-case name", "[output.elasticsearch.Siem]\nhosts = [\"https://siem:9200\"]\n", "output.elasticsearch.Siem", 1, "use 1 to 64 of a-z, 0-9, _ and -"},
		{"name too long", "[output.lumberjack." + strings.Repeat("a", 65) + "]\nhosts = [\"ls:5044\"]\n", "output.lumberjack." + strings.Repeat("a", 65), 1, "cannot name an output"},
		{"name with a space", "[output.lumberjack.\"my edge\"]\nhosts = [\"ls:5044\"]\n", `output.lumberjack."my edge"`, 1, "cannot name an output"},
		{"duplicate across kinds", "[output.elasticsearch.edge]\nhosts = [\"https://es:9200\"]\n" + lj, "output.lumberjack.edge", 3, `the name "edge" is taken by [output.elasticsearch.edge]`},
		{"legacy and named elasticsearch", "[output.elasticsearch]\nworkers = 2\n[output.elasticsearch.elasticsearch]\nhosts = [\"https://es:9200\"]\n", "output.elasticsearch.elasticsearch", 3, "choose another name, or move those settings into this table"},
		{"legacy and lumberjack elasticsearch", "[output.elasticsearch]\nworkers = 2\n[output.lumberjack.elasticsearch]\nhosts = [\"ls:5044\"]\n", "output.lumberjack.elasticsearch", 3, `the name "elasticsearch" is taken`},
		{"ambiguous tls", "[output.elasticsearch.tls]\nhosts = [\"https://es:9200\"]\n", "output.elasticsearch.tls", 1, "choose another name"},
		{"ambiguous setting name", "[output.elasticsearch.hosts]\nhosts = [\"https://es:9200\"]\n", "output.elasticsearch.hosts", 1, "is ambiguous"},
		{"direct key in lumberjack", "[output.lumberjack]\nhosts = [\"ls:5044\"]\n", "output.lumberjack.hosts", 2, "Lumberjack outputs are named: write [output.lumberjack.NAME]"},
		{"output section not a table", "[output]\nlumberjack = 1\n", "output.lumberjack", 2, "is a section"},
		// Unknown keys inside named tables.
		{"typo in legacy tls", "[output.elasticsearch.tls]\nverificaton_mode = \"none\"\n", "output.elasticsearch.tls.verificaton_mode", 2, `did you mean "verification_mode"`},
		{"typo in named elasticsearch", "[output.elasticsearch.siem]\nhostss = [\"https://siem:9200\"]\n", "output.elasticsearch.siem.hostss", 2, `unknown key in [output.elasticsearch.siem] (did you mean "hosts"?)`},
		{"typo in named tls", "[output.elasticsearch.siem.tls]\nca_file = \"/ca.pem\"\n", "output.elasticsearch.siem.tls.ca_file", 2, "unknown key in [output.elasticsearch.siem.tls]"},
		{"typo in lumberjack", lj + "bulk_max_sise = 10\n", "output.lumberjack.edge.bulk_max_sise", 3, `did you mean "bulk_max_size"`},
		{"typo in lumberjack ssl", lj + "[output.lumberjack.edge.ssl]\ncertificate_authority = [\"/ca.pem\"]\n", "output.lumberjack.edge.ssl.certificate_authority", 4, `did you mean "certificate_authorities"`},
		{"typo in lumberjack section", "[output.lumberjak.edge]\nhosts = [\"ls:5044\"]\n", "output.lumberjak.edge", 1, "did you mean [output.lumberjack]"},
		{"environment in named output", "[output.elasticsearch.siem]\npassword = \"${LP_TEST_UNSET_VAR}\"\n", "output.elasticsearch.siem.password", 2, "environment variable LP_TEST_UNSET_VAR is not set"},
		// Checks of named Elasticsearch outputs name their keys.
		{"named elasticsearch workers", "[output.elasticsearch.siem]\nworkers = 100\n", "output.elasticsearch.siem.workers", 2, "outside 1…64"},
		{"named elasticsearch hosts", "[output.elasticsearch.siem]\nhosts = []\n", "output.elasticsearch.siem.hosts", 2, "is empty"},
		{"named elasticsearch credentials", "[output.elasticsearch.siem]\nhosts = [\"https://a:b@es1:9200\", \"https://c:d@es2:9200\"]\n", "output.elasticsearch.siem.hosts", 2, "carries other credentials than entry 1"},
		// Lumberjack keys.
		{"lumberjack without hosts", "[output.lumberjack.edge]\nworkers = 2\n", "output.lumberjack.edge.hosts", 0, "list at least one Lumberjack server"},
		{"lumberjack host without port", "[output.lumberjack.edge]\nhosts = [\"ls:5044\", \"ls2\"]\n", "output.lumberjack.edge.hosts", 2, "entry 2: \"ls2\" is not host:port: the port is required"},
		{"lumberjack port out of range", "[output.lumberjack.edge]\nhosts = [\"ls:0\"]\n", "output.lumberjack.edge.hosts", 2, "not a number from 1 to 65535"},
		{"lumberjack host empty", "[output.lumberjack.edge]\nhosts = [\":5044\"]\n", "output.lumberjack.edge.hosts", 2, "is not a host name"},
		{"lumberjack workers", lj + "workers = 0\n", "output.lumberjack.edge.workers", 3, "outside 1…64"},
		{"lumberjack bulk_max_size", lj + "bulk_max_size = 0\n", "output.lumberjack.edge.bulk_max_size", 3, "outside 1…65536"},
		{"lumberjack compression_level", lj + "compression_level = 10\n", "output.lumberjack.edge.compression_level", 3, "outside 0…9"},
		{"lumberjack timeout", lj + "timeout = \"0s\"\n", "output.lumberjack.edge.timeout", 3, "must be more than 0s"},
		{"lumberjack backoff", lj + "[output.lumberjack.edge.backoff]\ninit = \"10s\"\nmax = \"5s\"\n", "output.lumberjack.edge.backoff.max", 5, "less than backoff.init"},
		{"lumberjack certificate without key", lj + "[output.lumberjack.edge.ssl]\ncertificate = \"/c.pem\"\n", "output.lumberjack.edge.ssl.key", 0, "go together"},
		{"lumberjack verification_mode", lj + "[output.lumberjack.edge.ssl]\nverification_mode = \"strict\"\n", "output.lumberjack.edge.ssl.verification_mode", 4, "use full"},
		{"lumberjack wrong type", lj + "loadbalance = \"yes\"\n", "output.lumberjack.edge.loadbalance", 3, "want true or false"},
		// max_lag and start_at, on every kind.
		{"legacy max_lag", "[ledger]\nmax_bytes = \"16GiB\"\n[output.elasticsearch]\nmax_lag = \"16GiB\"\n", "output.elasticsearch.max_lag", 4, "not less than ledger.max_bytes"},
		{"named max_lag", "[output.elasticsearch.siem]\nmax_lag = \"1TiB\"\n", "output.elasticsearch.siem.max_lag", 2, "not less than ledger.max_bytes"},
		{"lumberjack max_lag", lj + "max_lag = \"17GiB\"\n", "output.lumberjack.edge.max_lag", 3, "set 0 never to skip"},
		{"legacy start_at", "[output.elasticsearch]\nstart_at = \"latest\"\n", "output.elasticsearch.start_at", 2, "use oldest"},
		{"lumberjack start_at", lj + "start_at = \"\"\n", "output.lumberjack.edge.start_at", 3, "or newest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tc.toml))
			if err == nil {
				t.Fatal("loaded without error")
			}
			ke := problemOf(err, tc.key)
			if ke == nil {
				t.Fatalf("no problem with %s in %v", tc.key, err)
			}
			if !strings.Contains(ke.Msg, tc.want) {
				t.Errorf("%s: %q does not say %q", tc.key, ke.Msg, tc.want)
			}
			if tc.line != 0 && ke.Line != tc.line {
				t.Errorf("%s: line %d, want %d", tc.key, ke.Line, tc.line)
			}
		})
	}
}

// problemOf returns the problem of err about key, or nil.
func problemOf(err error, key string) *KeyError {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var ke *KeyError
		if errors.As(e, &ke) && ke.Key == key {
			return ke
		}
	}
	return nil
}

// TestAllOutputProblemsAtOnce: problems of names, of named tables and of
// other sections come out of one load together.
func TestAllOutputProblemsAtOnce(t *testing.T) {
	const text = `[journal]
bogus = 1
[output.elasticsearch]
workers = 0
[output.elasticsearch.tls]
hosts = ["https://es:9200"]
[output.elasticsearch.Bad]
hosts = ["https://es:9200"]
[output.elasticsearch.siem]
hostss = ["https://es:9200"]
compression = "zstd"
[output.elasticsearch.elasticsearch]
hosts = ["https://es:9200"]
[output.lumberjack.siem]
hosts = ["ls"]
compression_level = 12
[output.lumberjack.edge.ssl]
key = "/k.pem"
[log]
level = "loud"
`
	_, err := Parse("x.toml", []byte(text))
	if err == nil {
		t.Fatal("loaded without error")
	}
	for _, key := range []string{
		"journal.bogus", "output.elasticsearch.workers", "output.elasticsearch.tls", "output.elasticsearch.Bad",
		"output.elasticsearch.siem.hostss", "output.elasticsearch.siem.compression", "output.elasticsearch.elasticsearch",
		"output.lumberjack.siem", "output.lumberjack.siem.hosts", "output.lumberjack.siem.compression_level",
		"output.lumberjack.edge.hosts", "output.lumberjack.edge.ssl.key", "log.level",
	} {
		if problemOf(err, key) == nil {
			t.Errorf("no problem reported with %s in:\n%v", key, err)
		}
	}
}

// TestNamedOutputsRoundTrip: a configuration with named outputs encodes
// (as -check-config prints it) to TOML that loads back the same, and the
// legacy table is left out when the file did not define it.
func TestNamedOutputsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		legacy     bool // the printed file has an [output.elasticsearch] table
	}{
		{"named only", "[output.elasticsearch.siem]\nhosts = [\"https://siem:9200\"]\n[output.elasticsearch.siem.tls]\nca = \"/ca.pem\"\n[output.lumberjack.elasticsearch]\nhosts = [\"ls:5044\"]\n", false},
		{"mixed", "[output.elasticsearch]\nworkers = 2\n[output.elasticsearch.siem]\nhosts = [\"https://siem:9200\"]\n", true},
		{"legacy disabled", "[output.elasticsearch]\nenabled = false\nworkers = 2\n[output.lumberjack.edge]\nhosts = [\"ls:5044\"]\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := Parse("x.toml", []byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := toml.NewEncoder(&b).Encode(want); err != nil {
				t.Fatal(err)
			}
			got, err := Parse("printed", []byte(b.String()))
			if err != nil {
				t.Fatalf("%v\n%s", err, b.String())
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("printed configuration loads back otherwise:\n got %+v\nwant %+v\n%s", got, want, b.String())
			}
			if has := strings.Contains(b.String(), "\n[output.elasticsearch]\n"); has != tc.legacy {
				t.Errorf("printed [output.elasticsearch]: %v, want %v\n%s", has, tc.legacy, b.String())
			}
		})
	}
}

// TestPrintableNamedOutputs: values from the environment are printed as
// references in named outputs too, and Printable's copy shares nothing
// with the loaded configuration.
func TestPrintableNamedOutputs(t *testing.T) {
	t.Setenv("LP_SIEM_HOST", "siem.example.com")
	t.Setenv("LP_SIEM_CRED", "svc:pa55")
	t.Setenv("LP_LS_HOST", "ls.example.com")
	text := "[output.elasticsearch.siem]\nhosts = [\"https://${LP_SIEM_CRED}@${LP_SIEM_HOST}:9200\"]\n[output.lumberjack.edge]\nhosts = [\"${LP_LS_HOST}:5044\"]\n"
	l, err := ParseFile("x.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if es := l.Config.Output.NamedElasticsearch["siem"]; es.Hosts[0] != "https://siem.example.com:9200" || es.Username != "svc" || es.Password != "pa55" {
		t.Fatalf("loaded %+v: want the variables' values, credentials lifted", es)
	}
	p := l.Printable()
	es, lj := p.Output.NamedElasticsearch["siem"], p.Output.Lumberjack["edge"]
	if es.Hosts[0] != "https://${LP_SIEM_HOST}:9200" || es.Username != Redacted || es.Password != Redacted {
		t.Errorf("siem printed as hosts %q, username %q, password %q", es.Hosts, es.Username, es.Password)
	}
	if lj.Hosts[0] != "${LP_LS_HOST}:5044" {
		t.Errorf("edge's hosts printed as %q", lj.Hosts)
	}
	if l.Config.Output.NamedElasticsearch["siem"].Hosts[0] != "https://siem.example.com:9200" || l.Config.Output.Lumberjack["edge"].Hosts[0] != "ls.example.com:5044" {
		t.Errorf("Printable changed the loaded configuration")
	}
	p.Output.Elasticsearch.APIKey = "a2V5"
	es.APIKey = "c2llbQ=="
	if !p.RedactSecrets() {
		t.Error("RedactSecrets says nothing is hidden")
	}
	if es.Password != Redacted || es.APIKey != Redacted || p.Output.Elasticsearch.APIKey != Redacted || p.Output.Elasticsearch.Password != "" {
		t.Errorf("RedactSecrets: legacy %+v, siem %+v", p.Output.Elasticsearch, es)
	}
	if c := Default(); c.RedactSecrets() {
		t.Error("RedactSecrets hid something of the defaults, which have no secret")
	}
}

// TestNamedOutputWarnings: insecure settings of named outputs are warned
// about under their own keys.
func TestNamedOutputWarnings(t *testing.T) {
	cfg, err := Parse("x.toml", []byte(`[input.beats]
listen = "127.0.0.1:5044"
[output.elasticsearch.siem]
hosts = ["http://siem:9200"]
api_key = "a2V5"
[output.elasticsearch.siem.tls]
verification_mode = "none"
[output.lumberjack.edge]
hosts = ["ls:5044"]
[output.lumberjack.edge.ssl]
verification_mode = "none"
[output.lumberjack.plain]
hosts = ["ls:5044"]
[output.lumberjack.plain.ssl]
enabled = false
verification_mode = "none"
`))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, w := range cfg.Warnings() {
		keys = append(keys, w.Key)
	}
	want := []string{"output.elasticsearch.siem.tls.verification_mode", "output.elasticsearch.siem.hosts", "output.lumberjack.edge.ssl.verification_mode"}
	if !slices.Equal(keys, want) {
		t.Errorf("warnings about %q, want %q", keys, want)
	}
}

// TestNamedOutputHostChecks: the TLS files of named outputs are checked
// on the host, under their own keys.
func TestNamedOutputHostChecks(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := `[journal]
dir = "` + filepath.Join(dir, "j") + `"
[ledger]
dir = "` + filepath.Join(dir, "l") + `"
[input.beats]
listen = "127.0.0.1:0"
[admin]
listen = ""
[output.elasticsearch.siem.tls]
ca = "` + missing + `"
[output.lumberjack.edge]
hosts = ["ls:5044"]
[output.lumberjack.edge.ssl]
certificate_authorities = ["` + notPEM + `"]
certificate = "` + missing + `"
key = "` + missing + `"
`
	l, err := ParseFile("x.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	err = l.CheckHost()
	for _, key := range []string{"output.elasticsearch.siem.tls.ca", "output.lumberjack.edge.ssl.certificate_authorities", "output.lumberjack.edge.ssl.certificate"} {
		if problemOf(err, key) == nil {
			t.Errorf("no host problem with %s in %v", key, err)
		}
	}
}

// TestMemorySumsOutputs: the formula's output part is the sum over the
// enabled outputs.
func TestMemorySumsOutputs(t *testing.T) {
	c := Default()
	// (workers 4 + 2) chunks of the largest record (4MiB) + 9/2 ×
	// workers 4 × flush_bytes 1MiB
	legacy := int64(6*4<<20 + 4*1<<20*9/2)
	if got := c.Memory().Output; got != legacy {
		t.Fatalf("legacy output: %d, want %d", got, legacy)
	}
	siem := DefaultElasticsearch()
	siem.Workers, siem.FlushBytes = 2, 2<<20
	off := DefaultElasticsearch()
	off.Enabled = false
	edge := DefaultLumberjack()
	edge.Hosts, edge.Workers = []string{"a:1", "b:2"}, 3
	small := DefaultLumberjack()
	small.Hosts, small.BulkMaxSize = []string{"a:1"}, 10
	c.Output.NamedElasticsearch = map[string]*Elasticsearch{"siem": &siem, "off": &off}
	c.Output.Lumberjack = map[string]*Lumberjack{"edge": &edge, "small": &small}
	m := c.Memory()
	want := legacy +
		(2+2)*4<<20 + 2*2<<20*9/2 + // siem: 4 chunks of max(flush_bytes, 4MiB record) + 9/2 × workers × flush_bytes
		3*2*2*2048*LumberjackEventBytes + // edge: workers × hosts × 2 × bulk_max_size × 2KiB
		1*1*2*2*int64(c.Journal.MaxGroupBytes) // small: a batch is at least one largest record
	if m.Output != want {
		t.Errorf("outputs: %d, want %d", m.Output, want)
	}
	if m.Total() != m.Input+m.Connections+m.InputCompression+m.JournalTail+m.JournalWrite+m.JournalRead+m.Ledger+m.Output+m.Overhead {
		t.Errorf("Total does not sum the parts: %+v", m)
	}
	c.Output.Elasticsearch.Enabled = false
	if got := c.Memory().Output; got != want-legacy {
		t.Errorf("without the legacy output: %d, want %d", got, want-legacy)
	}
}

// TestKeysOfNamedTables: Keys (what unknown-key messages and the doc
// tests walk) knows named tables.
func TestKeysOfNamedTables(t *testing.T) {
	for _, tc := range []struct {
		section string
		want    string // one key it must list; "" for none at all
	}{
		{"output", "lumberjack"},
		{"output.elasticsearch", "hosts"},
		{"output.elasticsearch.siem", "max_lag"},
		{"output.elasticsearch.siem.tls", "ca"},
		{"output.elasticsearch.tls", "verification_mode"},
		{"output.lumberjack", ""},
		{"output.lumberjack.edge", "bulk_max_size"},
		{"output.lumberjack.edge.ssl", "certificate_authorities"},
		{"output.lumberjack.edge.backoff", "init"},
		{"output.elasticsearch.siem.x", ""},
	} {
		got := Keys(tc.section)
		if tc.want == "" && got != nil || tc.want != "" && !slices.Contains(got, tc.want) {
			t.Errorf("Keys(%q) = %q, want it to list %q", tc.section, got, tc.want)
		}
		if slices.Contains(got, "-") {
			t.Errorf("Keys(%q) lists the encoder's skip tag: %q", tc.section, got)
		}
	}
}
