package conf

import (
	"strings"
	"testing"
)

// TestWarnings: each insecure setting gives its warning, naming its key;
// safe settings give none.
func TestWarnings(t *testing.T) {
	const safe = "[input.beats]\nlisten = \"127.0.0.1:5044\"\n"
	for _, tc := range []struct {
		name, toml string
		want       map[string]string // key → a phrase of its message; nil: no warning
	}{
		{"safe defaults on loopback", safe, nil},
		{"https with credentials", safe + "[output.elasticsearch]\nhosts = [\"https://es1:9200\"]\nusername = \"u\"\npassword = \"p\"\napi_key = \"a2V5\"\n", nil},
		{"http without credentials", safe + "[output.elasticsearch]\nhosts = [\"http://es1:9200\", \"es2:9200\"]\n", nil},
		{"http with a username only", safe + "[output.elasticsearch]\nhosts = [\"http://es1:9200\"]\nusername = \"u\"\n", nil},
		{"TLS listener on every interface", "[input.beats]\nlisten = \"0.0.0.0:5044\"\n[input.beats.tls]\ncert = \"/c.pem\"\nkey = \"/k.pem\"\n", nil},
		{"plaintext on localhost", "[input.beats]\nlisten = \"localhost:5044\"\n", nil},
		{"plaintext on ::1", "[input.beats]\nlisten = \"[::1]:5044\"\n", nil},

		{"verification none", safe + "[output.elasticsearch.tls]\nverification_mode = \"none\"\n",
			map[string]string{"output.elasticsearch.tls.verification_mode": "checks no certificate"}},
		{"basic auth over http", safe + "[output.elasticsearch]\nhosts = [\"https://es1:9200\", \"http://es2:9200\", \"es3:9200\"]\nusername = \"u\"\npassword = \"p\"\n",
			map[string]string{"output.elasticsearch.hosts": `the username and password go in clear text to "http://es2:9200", "es3:9200"`}},
		{"credentials of a host URL over http", safe + "[output.elasticsearch]\nhosts = [\"http://u:p@es1:9200\"]\n",
			map[string]string{"output.elasticsearch.hosts": `the username and password go in clear text to "http://es1:9200"`}},
		{"api key over http", safe + "[output.elasticsearch]\nhosts = [\"HTTP://es1:9200\"]\napi_key = \"a2V5\"\n",
			map[string]string{"output.elasticsearch.hosts": "the API key (api_key) goes in clear text"}},
		{"plaintext on every interface", "[input.beats]\nlisten = \"0.0.0.0:5044\"\n",
			map[string]string{"input.beats.listen": "picks its index, its ingest pipeline and its document id"}},
		{"plaintext on an empty host", "[input.beats]\nlisten = \":5044\"\n", map[string]string{"input.beats.listen": "plaintext"}},
		{"plaintext on ::", "[input.beats]\nlisten = \"[::]:5044\"\n", map[string]string{"input.beats.listen": "plaintext"}},
		{"plaintext on a LAN address", "[input.beats]\nlisten = \"10.1.2.3:5044\"\n", map[string]string{"input.beats.listen": "plaintext"}},
		{"plaintext on a host name", "[input.beats]\nlisten = \"ingest.example.com:5044\"\n", map[string]string{"input.beats.listen": "plaintext"}},
		{"data_stream false with the data_stream keys at their defaults", safe + "[output.elasticsearch]\ndata_stream = false\ndata_stream_type = \"logs\"\n", nil},
		{"data_stream auto with data_stream keys", safe + "[output.elasticsearch]\ndata_stream_namespace = \"prod\"\n", nil},
		{"data_stream false with data_stream keys", safe + "[output.elasticsearch]\ndata_stream = \"false\"\ndata_stream_namespace = \"prod\"\ndata_stream_sync_fields = false\n",
			map[string]string{"output.elasticsearch.data_stream": "data_stream_namespace, data_stream_sync_fields are ignored"}},
		{"data_stream false with data_stream keys, named output", safe + "[output.elasticsearch.siem]\ndata_stream = false\ndata_stream_dataset = \"fw\"\n",
			map[string]string{"output.elasticsearch.siem.data_stream": "data_stream_dataset is ignored"}},
		{"compression none with the default level", safe + "[ledger]\ncompression = \"none\"\ncompression_level = \"fastest\"\n", nil},
		{"zstd with a level", safe + "[ledger]\ncompression_level = \"best\"\n", nil},
		{"compression none with a level", safe + "[ledger]\ncompression = \"none\"\ncompression_level = \"Better\"\n",
			map[string]string{"ledger.compression_level": `"better" is ignored: ledger.compression is "none"`}},
		{"all three", "[output.elasticsearch]\nhosts = [\"http://es1:9200\"]\napi_key = \"a2V5\"\n[output.elasticsearch.tls]\nverification_mode = \"none\"\n",
			map[string]string{"output.elasticsearch.tls.verification_mode": "", "output.elasticsearch.hosts": "", "input.beats.listen": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("x.toml", []byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			ws := cfg.Warnings()
			got := map[string]string{}
			for _, w := range ws {
				got[w.Key] = w.Msg
			}
			if len(got) != len(ws) || len(ws) != len(tc.want) {
				t.Fatalf("warnings %q, want one for each of %v", ws, tc.want)
			}
			for key, phrase := range tc.want {
				if msg, ok := got[key]; !ok || !strings.Contains(msg, phrase) {
					t.Errorf("warning for %s: %q, want one saying %q", key, msg, phrase)
				}
			}
		})
	}
}

// TestDefaultWarnings: the built-in defaults listen for Beats on every
// interface without TLS, which is worth a warning; the example
// configuration, which listens on 127.0.0.1, has none.
func TestDefaultWarnings(t *testing.T) {
	d := Default()
	if ws := d.Warnings(); len(ws) != 1 || ws[0].Key != "input.beats.listen" {
		t.Errorf("defaults: %q", ws)
	}
	cfg, err := Load("logpond.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	if ws := cfg.Warnings(); ws != nil {
		t.Errorf("example: %q", ws)
	}
}
