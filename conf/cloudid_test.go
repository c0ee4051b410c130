package conf

import (
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	es "github.com/elastic/go-elasticsearch/v8"
)

// docsCloudID is the Cloud ID of Elastic's Beats and Logstash
// documentation ("Configure the output for Elastic Cloud").
const docsCloudID = "staging:dXMtZWFzdC0xLmF3cy5mb3VuZC5pbyRjZWM2ZjI2MWE3NGJmMjRjZTMzYmI4ODExYjg0Mjk0ZiRjNmMyY2E2ZDA0MjI0OWFmMGNjN2Q3YTllOTYyNTc0Mw=="

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestDecodeCloudID: the documented example and the port variants decode
// to the Elasticsearch URL Beats would use.
func TestDecodeCloudID(t *testing.T) {
	for _, tc := range []struct{ name, id, want string }{
		{"documented example", docsCloudID, "https://cec6f261a74bf24ce33bb8811b84294f.us-east-1.aws.found.io:443"},
		{"without label", strings.TrimPrefix(docsCloudID, "staging:"), "https://cec6f261a74bf24ce33bb8811b84294f.us-east-1.aws.found.io:443"},
		{"label with colons: the last one counts", "my:cluster:" + b64("eu-west-1.aws.found.io$es1$kb1"), "https://es1.eu-west-1.aws.found.io:443"},
		{"port with host", "x:" + b64("us-east-1.aws.found.io:9243$es1$kb1"), "https://es1.us-east-1.aws.found.io:9243"},
		{"port with es id", "x:" + b64("us-east-1.aws.found.io$es1:9200$kb1"), "https://es1.us-east-1.aws.found.io:9200"},
		{"port with both: the es id's wins", "x:" + b64("us-east-1.aws.found.io:9243$es1:9200$kb1:9300"), "https://es1.us-east-1.aws.found.io:9200"},
		{"no kibana id", "x:" + b64("us-east-1.aws.found.io$es1"), "https://es1.us-east-1.aws.found.io:443"},
		{"empty kibana id", "x:" + b64("us-east-1.aws.found.io$es1$"), "https://es1.us-east-1.aws.found.io:443"},
		{"no base64 padding", "x:" + strings.TrimRight(b64("us-east-1.aws.found.io$es1$kb"), "="), "https://es1.us-east-1.aws.found.io:443"},
		{"surrounding spaces", "  x:" + b64("h.io$es1$kb") + "\n", "https://es1.h.io:443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeCloudID(tc.id)
			if err != nil || got != tc.want {
				t.Errorf("DecodeCloudID(%q) = %q, %v; want %q", tc.id, got, err, tc.want)
			}
		})
	}
}

// TestDecodeCloudIDErrors: each malformed Cloud ID is refused with a
// message saying what is wrong.
func TestDecodeCloudIDErrors(t *testing.T) {
	for _, tc := range []struct{ name, id, want string }{
		{"empty", "", "is empty"},
		{"a URL", "https://cec6f261.us-east-1.aws.found.io:9243", "looks like a URL"},
		{"no label, not base64", "not-a-cloud-id!", "has no label"},
		{"label, not base64", "staging:@@@@", "is not base64"},
		{"label only", "staging:", "is not base64"},
		{"host:port, no scheme", "es1.example.com:9243", "decodes to binary"},
		{"no $", "x:" + b64("us-east-1.aws.found.io"), "has no \"$\""},
		{"empty host", "x:" + b64("$es1$kb"), "whose host is empty"},
		{"empty es id", "x:" + b64("h.io$$kb"), "whose Elasticsearch id is empty"},
		{"empty es id with port", "x:" + b64("h.io$:9243$kb"), "whose Elasticsearch id is empty"},
		{"host port not a number", "x:" + b64("h.io:https$es1$kb"), "whose host \"h.io:https\" has the port \"https\""},
		{"host port 0", "x:" + b64("h.io:0$es1$kb"), "has the port \"0\""},
		{"es port too large", "x:" + b64("h.io$es1:70000$kb"), "whose Elasticsearch id \"es1:70000\" has the port \"70000\""},
		{"empty port", "x:" + b64("h.io:$es1$kb"), "has the port \"\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeCloudID(tc.id)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeCloudID(%q) = %q, %v; want an error saying %q", tc.id, got, err, tc.want)
			}
		})
	}
}

// TestDecodeCloudIDAgreesWithGoElasticsearch: for the forms both accept
// (a label without colons, no port with the es id), DecodeCloudID gives
// the URL go-elasticsearch's client connects to.
func TestDecodeCloudIDAgreesWithGoElasticsearch(t *testing.T) {
	for _, id := range []string{
		docsCloudID,
		"x:" + b64("us-east-1.aws.found.io:9243$es1$kb1"),
		"prod-eu:" + b64("europe-west1.gcp.cloud.es.io$0123abcd$4567ef"),
		"x:" + b64("h.example.com$es1"),
	} {
		ours, err := DecodeCloudID(id)
		if err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		client, err := es.NewClient(es.Config{CloudID: id})
		if err != nil {
			t.Fatalf("%q: go-elasticsearch: %v", id, err)
		}
		tp, ok := client.Transport.(interface{ URLs() []*url.URL })
		if !ok {
			t.Fatalf("go-elasticsearch's transport %T has no URLs()", client.Transport)
		}
		urls := tp.URLs()
		if len(urls) != 1 {
			t.Fatalf("%q: go-elasticsearch has %d URLs, want 1", id, len(urls))
		}
		theirs := *urls[0]
		if theirs.Port() == "" { // https's default
			theirs.Host += ":443"
		}
		if ours != theirs.String() {
			t.Errorf("%q: DecodeCloudID gives %s, go-elasticsearch %s", id, ours, theirs.String())
		}
	}
}

// TestCloudIDAndAuthAtLoad: cloud_id becomes the output's one host and
// cloud_auth its username and password, in legacy and named outputs.
func TestCloudIDAndAuthAtLoad(t *testing.T) {
	text := "[output.elasticsearch]\ncloud_id = '" + docsCloudID + "'\ncloud_auth = 'elastic:pa:ss'\n" +
		"[output.elasticsearch.siem]\ncloud_id = 'x:" + b64("h.io:9243$siem$kb") + "'\n"
	cfg, err := Parse("x.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	es := cfg.Output.Elasticsearch
	if want := []string{"https://cec6f261a74bf24ce33bb8811b84294f.us-east-1.aws.found.io:443"}; !reflect.DeepEqual(es.Hosts, want) {
		t.Errorf("hosts %q, want %q", es.Hosts, want)
	}
	if es.Username != "elastic" || es.Password != "pa:ss" {
		t.Errorf("username %q, password %q; want elastic, pa:ss (split at the first colon)", es.Username, es.Password)
	}
	if siem := cfg.Output.NamedElasticsearch["siem"]; siem.Hosts[0] != "https://siem.h.io:9243" || siem.Username != "" {
		t.Errorf("named output: hosts %q, username %q", siem.Hosts, siem.Username)
	}
	// Printed and loaded back, it is the same configuration: the
	// printed file sets cloud_id and cloud_auth, not what they became.
	var b strings.Builder
	if err := encodeTOML(&b, *cfg); err != nil {
		t.Fatal(err)
	}
	back, err := Parse("printed", []byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("printed configuration loads back otherwise:\n got %+v\nwant %+v", back, cfg)
	}
}

// TestCloudProblems: cloud_id and cloud_auth are refused beside what they
// replace, and when malformed, under their own keys.
func TestCloudProblems(t *testing.T) {
	id := "cloud_id = '" + docsCloudID + "'\n"
	for _, tc := range []struct{ name, text, key, want string }{
		{"cloud_id with hosts", "[output.elasticsearch]\n" + id + "hosts = ['https://es1:9200']\n", "output.elasticsearch.cloud_id", "and hosts are both set: use one"},
		{"cloud_id with hosts, named", "[output.elasticsearch.siem]\n" + id + "hosts = ['https://es1:9200']\n", "output.elasticsearch.siem.cloud_id", "and hosts are both set"},
		{"cloud_id not base64", "[output.elasticsearch]\ncloud_id = 'staging:***'\n", "output.elasticsearch.cloud_id", "is not base64"},
		{"cloud_id a URL", "[output.elasticsearch]\ncloud_id = 'https://es.found.io:9243'\n", "output.elasticsearch.cloud_id", "looks like a URL"},
		{"cloud_auth without colon", "[output.elasticsearch]\n" + id + "cloud_auth = 'elastic'\n", "output.elasticsearch.cloud_auth", `has no ":"`},
		{"cloud_auth empty password", "[output.elasticsearch]\ncloud_auth = 'elastic:'\n", "output.elasticsearch.cloud_auth", "empty username or password"},
		{"cloud_auth with username", "[output.elasticsearch]\ncloud_auth = 'elastic:pw'\nusername = 'u'\n", "output.elasticsearch.cloud_auth", "and so is username, password or api_key"},
		{"cloud_auth with password", "[output.elasticsearch]\ncloud_auth = 'elastic:pw'\npassword = 'p'\n", "output.elasticsearch.cloud_auth", "and so is username, password or api_key"},
		{"cloud_auth with api_key", "[output.elasticsearch.siem]\ncloud_auth = 'elastic:pw'\napi_key = 'a2V5'\n", "output.elasticsearch.siem.cloud_auth", "and so is username, password or api_key"},
		{"cloud_auth with credentials in a host", "[output.elasticsearch]\ncloud_auth = 'elastic:pw'\nhosts = ['https://u:p@es1:9200']\n", "output.elasticsearch.cloud_auth", "and so is username"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.toml", []byte(tc.text))
			p := problemOf(err, tc.key)
			if p == nil || !strings.Contains(p.Msg, tc.want) {
				t.Errorf("got %v, want a problem with %s saying %q", err, tc.key, tc.want)
			}
		})
	}
}

// TestCloudAuthIsASecret: cloud_auth's password is redacted wherever
// password is; taken from the environment, it is printed as its reference
// and the credentials it became are hidden; the printed file loads.
func TestCloudAuthIsASecret(t *testing.T) {
	l, err := ParseFile("x.toml", []byte("[output.elasticsearch]\ncloud_auth = 'elastic:s3cr3t-pw'\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := l.Printable()
	if !p.RedactSecrets() {
		t.Error("RedactSecrets reports nothing hidden")
	}
	var b strings.Builder
	if err := encodeTOML(&b, p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "s3cr3t-pw") {
		t.Errorf("printed configuration shows the password:\n%s", b.String())
	}
	if !strings.Contains(b.String(), `cloud_auth = "elastic:<redacted>"`) {
		t.Errorf("printed configuration lacks cloud_auth = \"elastic:<redacted>\":\n%s", b.String())
	}
	if _, err := Parse("printed", []byte(b.String())); err != nil {
		t.Errorf("printed configuration does not load: %v\n%s", err, b.String())
	}

	t.Setenv("LP_CLOUD_AUTH", "writer-x1:env-pw-x2")
	l, err = ParseFile("x.toml", []byte("[output.elasticsearch]\ncloud_auth = '${LP_CLOUD_AUTH}'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if es := l.Config.Output.Elasticsearch; es.Username != "writer-x1" || es.Password != "env-pw-x2" {
		t.Fatalf("${VAR} in cloud_auth: username %q, password %q", es.Username, es.Password)
	}
	p = l.Printable()
	p.RedactSecrets()
	b.Reset()
	if err := encodeTOML(&b, p); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"writer-x1", "env-pw-x2"} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("printed configuration shows %q:\n%s", secret, b.String())
		}
	}
	if es := p.Output.Elasticsearch; es.CloudAuth != "${LP_CLOUD_AUTH}" || es.Username != Redacted || es.Password != Redacted {
		t.Errorf("printed cloud_auth %q, username %q, password %q", es.CloudAuth, es.Username, es.Password)
	}
	back, err := Parse("printed", []byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if !reflect.DeepEqual(back, l.Config) {
		t.Errorf("printed configuration loads back otherwise:\n got %+v\nwant %+v", back, l.Config)
	}
}

// TestElasticsearchClientCert: tls.cert and tls.key go together, and the
// host check loads them as a pair, naming the file that is missing.
func TestElasticsearchClientCert(t *testing.T) {
	for _, text := range []string{"[output.elasticsearch.tls]\ncert = '/c.pem'\n", "[output.elasticsearch.tls]\nkey = '/k.pem'\n"} {
		_, err := Parse("x.toml", []byte(text))
		if p := problemOf(err, "output.elasticsearch.tls.key"); p == nil || !strings.Contains(p.Msg, "go together") {
			t.Errorf("%q: got %v, want tls.key saying cert and key go together", text, err)
		}
	}

	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct{ cert, key, problemKey, want string }{
		{notPEM, notPEM, "output.elasticsearch.siem.tls.cert", "certificate " + notPEM + " with key " + notPEM},
		{notPEM, missing, "output.elasticsearch.siem.tls.key", "no such file"},
		{missing, notPEM, "output.elasticsearch.siem.tls.cert", "no such file"},
	} {
		text := "[journal]\ndir = '" + filepath.Join(dir, "j") + "'\n[ledger]\ndir = '" + filepath.Join(dir, "l") + "'\n" +
			"[input.beats]\nlisten = '127.0.0.1:0'\n[admin]\nlisten = ''\n" +
			"[output.elasticsearch.siem.tls]\ncert = '" + tc.cert + "'\nkey = '" + tc.key + "'\n"
		l, err := ParseFile("x.toml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		err = l.CheckHost()
		if p := problemOf(err, tc.problemKey); p == nil || !strings.Contains(p.Msg, tc.want) {
			t.Errorf("cert %s, key %s: got %v, want a problem with %s saying %q", tc.cert, tc.key, err, tc.problemKey, tc.want)
		}
	}
}
