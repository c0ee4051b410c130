package conf

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// manyMistakes holds mistakes of every kind (wrong types, bad units,
// unknown keys, values out of range), each on its own line.
const manyMistakes = `[journal]
dir = 5
segment_bytes = "1XB"
max_group_wait = "5s"
spare_segments = "two"
bogus = 1
[ledger]
max_bytes = "10GB"
flush_interval = 100
direct_io = "yes"
[input.beats]
listen = "5044"
max_connections = 1.5
keepalive = "0s"
[output.elasticsearch]
hosts = "http://es:9200"
workers = 100
compression = "zstd"
[log]
level = "loud"
`

// TestEveryProblemInOneRun: one load reports every mistake of the file,
// ordered by line, and the same way every time.
func TestEveryProblemInOneRun(t *testing.T) {
	want := []struct {
		line int
		key  string
	}{
		{2, "journal.dir"}, {3, "journal.segment_bytes"}, {4, "journal.max_group_wait"},
		{5, "journal.spare_segments"}, {6, "journal.bogus"}, {8, "ledger.max_bytes"},
		{9, "ledger.flush_interval"}, {10, "ledger.direct_io"}, {12, "input.beats.listen"},
		{13, "input.beats.max_connections"}, {14, "input.beats.keepalive"},
		{16, "output.elasticsearch.hosts"}, {17, "output.elasticsearch.workers"},
		{18, "output.elasticsearch.compression"}, {20, "log.level"},
	}
	var first string
	for run := range 20 {
		_, err := Parse("x.toml", []byte(manyMistakes))
		if err == nil {
			t.Fatal("loaded without error")
		}
		if run == 0 {
			first = err.Error()
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok {
				t.Fatalf("one problem reported: %v", err)
			}
			var got []string
			for _, e := range joined.Unwrap() {
				var ke *KeyError
				if !errors.As(e, &ke) {
					t.Fatalf("%v is not a *KeyError", e)
				}
				got = append(got, ke.Key)
				if len(got) <= len(want) {
					if w := want[len(got)-1]; ke.Key != w.key || ke.Line != w.line {
						t.Errorf("problem %d: %s at line %d, want %s at line %d", len(got), ke.Key, ke.Line, w.key, w.line)
					}
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d problems reported, want %d:\n%v", len(got), len(want), err)
			}
			continue
		}
		if err.Error() != first {
			t.Fatalf("run %d reported otherwise:\n%v\nfirst run:\n%s", run+1, err, first)
		}
	}
}

// TestProblemsOfDefaultsInStableOrder: problems with keys the file does not
// set (line 0) come after the others, ordered by key, on every run.
func TestProblemsOfDefaultsInStableOrder(t *testing.T) {
	// Both zero timeouts come from one map in validate.
	text := "[input.beats]\nidle_timeout = \"0s\"\nbatch_timeout = \"0s\"\nkeepalive = \"0s\"\n[output.elasticsearch]\ntimeout = \"0s\"\nflush_interval = \"0s\"\nretry_initial_interval = \"0s\"\n"
	_, err := Parse("x.toml", []byte(text))
	if err == nil {
		t.Fatal("loaded")
	}
	first := err.Error()
	for range 20 {
		if _, err := Parse("x.toml", []byte(text)); err.Error() != first {
			t.Fatalf("order changed:\n%v\nfirst:\n%s", err, first)
		}
	}
}

// TestChecksOfFailedKeysWait: a key that did not decode is not checked at
// its default, nor compared with others.
func TestChecksOfFailedKeysWait(t *testing.T) {
	_, err := Parse("x.toml", []byte("[journal]\nsegment_bytes = \"1XB\"\nmax_bytes = \"100MiB\"\n"))
	if err == nil || strings.Contains(err.Error(), "journal.max_bytes") {
		t.Fatalf("got %v, want only the segment_bytes problem", err)
	}
}

// TestChecksOfParsedKeysRunBesideFailedOnes: a key that does not decode
// holds back only the checks that involve it; every other problem of the
// file, across keys too, is reported in the same run. A key of one section
// named by its last part in a problem of another section ("raise
// max_bytes" about ledger.max_bytes) is not the failed key of that name.
func TestChecksOfParsedKeysRunBesideFailedOnes(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       []string // keys reported, in this order
	}{
		{"journal segment unit, ledger max below two segments",
			"[journal]\nsegment_bytes = \"64MB\"\n[ledger]\nmax_bytes = \"300MiB\"\n",
			[]string{"journal.segment_bytes", "ledger.max_bytes"}},
		{"ledger segment unit, journal max below two segments",
			"[journal]\nmax_bytes = \"100MiB\"\n[ledger]\nsegment_bytes = \"1XB\"\n",
			[]string{"journal.max_bytes", "ledger.segment_bytes"}},
		{"journal max unit, ledger max below two segments",
			"[journal]\nmax_bytes = \"10GB\"\n[ledger]\nmax_bytes = \"300MiB\"\n",
			[]string{"journal.max_bytes", "ledger.max_bytes"}},
		{"negative ledger max, journal max below two segments",
			"[journal]\nmax_bytes = \"100MiB\"\n[ledger]\nmax_bytes = -1\n",
			[]string{"journal.max_bytes", "ledger.max_bytes"}},
		{"ledger flush interval without unit, retry bounds",
			"[ledger]\nflush_interval = 100\n[output.elasticsearch]\nretry_max_interval = \"1s\"\n",
			[]string{"ledger.flush_interval", "output.elasticsearch.retry_max_interval"}},
		{"admin listen type, batch below event",
			"[input.beats]\nmax_batch_bytes = \"1MiB\"\n[admin]\nlisten = 9600\n",
			[]string{"input.beats.max_batch_bytes", "admin.listen"}},
		{"event size unit, retry bounds",
			"[input.beats]\nmax_event_bytes = \"1XB\"\n[output.elasticsearch]\nretry_max_interval = \"1s\"\n",
			[]string{"input.beats.max_event_bytes", "output.elasticsearch.retry_max_interval"}},
		// The checks that compare with the failed key wait.
		{"journal segment unit, journal max waits",
			"[journal]\nsegment_bytes = \"1XB\"\nmax_bytes = \"100MiB\"\n",
			[]string{"journal.segment_bytes"}},
		{"request limit unit, flush bytes wait",
			"[output.elasticsearch]\nmax_request_bytes = \"1XB\"\nflush_bytes = \"200MiB\"\n",
			[]string{"output.elasticsearch.max_request_bytes"}},
		{"event size unit, dead-letter size waits",
			"[input.beats]\nmax_event_bytes = \"1XB\"\n[output.elasticsearch]\ndead_letter_max_bytes = \"16MiB\"\n",
			[]string{"input.beats.max_event_bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tc.toml))
			if err == nil {
				t.Fatal("loaded without error")
			}
			var got []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				got = append(got, e.(*KeyError).Key)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems of %v, want %v:\n%v", got, tc.want, err)
			}
		})
	}
}

// TestDefaultsFollowOtherKeys: the documented minimum segment_bytes loads
// without other changes; an unset max_group_bytes follows it down, a set
// one is checked against it.
func TestDefaultsFollowOtherKeys(t *testing.T) {
	cfg, err := Parse("x.toml", []byte("[journal]\nsegment_bytes = \"1MiB\"\n[ledger]\nsegment_bytes = \"1MiB\"\n"))
	if err != nil {
		t.Fatalf("the minimum segment sizes must load: %v", err)
	}
	if got := cfg.Journal.MaxGroupBytes; got != 1<<20 {
		t.Errorf("max_group_bytes = %s, want 1MiB (segment_bytes)", got)
	}
	cfg, err = Parse("x.toml", []byte("[journal]\nsegment_bytes = \"8MiB\"\n"))
	if err != nil || cfg.Journal.MaxGroupBytes != Default().Journal.MaxGroupBytes {
		t.Errorf("segment_bytes 8MiB: max_group_bytes %v (%v), want the default", cfg, err)
	}
	if _, err := Parse("x.toml", []byte("[journal]\nsegment_bytes = \"1MiB\"\nmax_group_bytes = \"2MiB\"\n")); err == nil {
		t.Error("a max_group_bytes set above segment_bytes loaded")
	}
}

func TestEnvSubstitution(t *testing.T) {
	t.Setenv("LP_USER", "writer")
	t.Setenv("LP_PASS", "s3cr3t")
	t.Setenv("LP_HOST", "es1.example.com")
	t.Setenv("LP_DATA", "/srv/lp")
	t.Setenv("LP_EMPTY", "")
	text := `[journal]
dir = "${LP_DATA}/journal"
segment_bytes = "${LP_SEG:32MiB}"
[ledger]
dir = "${LP_DATA}/ledger"
[output.elasticsearch]
hosts = ["https://${LP_HOST}:9200", "https://${LP_HOST2:es2.example.com}:9200"]
username = "${LP_USER}"
password = "${LP_PASS}"
index = "logs-$${literal}-%{+yyyy}"
pipeline = "${LP_EMPTY:unused}"
`
	l, err := ParseFile("x.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	es := c.Output.Elasticsearch
	for _, tc := range []struct{ got, want any }{
		{c.Journal.Dir, "/srv/lp/journal"},
		{c.Ledger.Dir, "/srv/lp/ledger"},
		{c.Journal.SegmentBytes, Size(32 << 20)},
		{es.Hosts, []string{"https://es1.example.com:9200", "https://es2.example.com:9200"}},
		{es.Username, "writer"},
		{es.Password, "s3cr3t"},
		{es.Index, "logs-${literal}-%{+yyyy}"},
		{es.Pipeline, ""}, // set, though empty: the default is for unset variables
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("got %v, want %v", tc.got, tc.want)
		}
	}
}

func TestEnvSubstitutionErrors(t *testing.T) {
	for _, tc := range []struct{ text, key, want string }{
		{"[output.elasticsearch]\npassword = \"${LP_UNSET_PASSWORD}\"\n", "output.elasticsearch.password", "environment variable LP_UNSET_PASSWORD is not set"},
		{"[output.elasticsearch]\nhosts = [\"http://a:9200\", \"${LP_UNSET_HOST}\"]\n", "output.elasticsearch.hosts", "entry 2: environment variable LP_UNSET_HOST is not set"},
		{"[journal]\ndir = \"${LP_DATA\"\n", "journal.dir", "without its \"}\""},
		{"[journal]\ndir = \"${1X}\"\n", "journal.dir", "is not an environment variable name"},
	} {
		_, err := Parse("x.toml", []byte(tc.text))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != tc.key || ke.Line != 2 || !strings.Contains(ke.Msg, tc.want) {
			t.Errorf("%q: got %v, want %s at line 2 saying %q", tc.text, err, tc.key, tc.want)
		}
	}
}

// TestPrintableShowsReferences: values from the environment are printed as
// their references, in username and hosts too, and the printed values load
// back to the same configuration in the same environment.
func TestPrintableShowsReferences(t *testing.T) {
	t.Setenv("LP_USER", "writer-7c1f")
	t.Setenv("LP_CRED", "svc:pa55")
	t.Setenv("LP_HOST", "es1.example.com")
	text := "[output.elasticsearch]\nhosts = [\"https://${LP_CRED}@${LP_HOST}:9200\", \"https://${LP_HOST}:9201\"]\nindex = \"a-$${b}\"\n[journal]\ndir = \"/j/${LP_USER}\"\n"
	l, err := ParseFile("x.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p := l.Printable()
	es := p.Output.Elasticsearch
	for _, s := range append([]string{es.Username, es.Password, p.Journal.Dir, es.Index}, es.Hosts...) {
		for _, secret := range []string{"writer-7c1f", "svc", "pa55", "es1.example.com"} {
			if strings.Contains(s, secret) {
				t.Errorf("printed %q shows %q", s, secret)
			}
		}
	}
	if want := []string{"https://${LP_HOST}:9200", "https://${LP_HOST}:9201"}; !reflect.DeepEqual(es.Hosts, want) {
		t.Errorf("hosts printed as %q, want %q", es.Hosts, want)
	}
	if l.Config.Output.Elasticsearch.Hosts[0] != "https://es1.example.com:9200" {
		t.Errorf("Printable changed the loaded configuration: %q", l.Config.Output.Elasticsearch.Hosts)
	}
	var b strings.Builder
	if err := encodeTOML(&b, p); err != nil {
		t.Fatal(err)
	}
	if es.Username != Redacted || es.Password != Redacted {
		t.Errorf("credentials from a host that took a variable printed as %q, %q", es.Username, es.Password)
	}
	back, err := Parse("printed", []byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	back.Output.Elasticsearch.Username, back.Output.Elasticsearch.Password = "svc", "pa55"
	if !reflect.DeepEqual(back, l.Config) {
		t.Errorf("printed configuration loads back otherwise:\n got %+v\nwant %+v", back, l.Config)
	}
}

func encodeTOML(w *strings.Builder, c Config) error {
	return toml.NewEncoder(w).Encode(c)
}
