package conf

import (
	"reflect"
	"testing"
	"time"
)

// TestChanged: the keys that differ, by their names in the file, named
// outputs included; none for equal configurations.
func TestChanged(t *testing.T) {
	a := Default()
	siem := DefaultElasticsearch()
	relay := DefaultLumberjack()
	relay.Hosts = []string{"central:5044"}
	a.Output.NamedElasticsearch = map[string]*Elasticsearch{"siem": &siem}
	a.Output.Lumberjack = map[string]*Lumberjack{"relay": &relay}
	if got := Changed(&a, &a); len(got) != 0 {
		t.Fatalf("Changed(a, a) = %v", got)
	}
	b := Default()
	siem2, relay2 := siem, relay
	siem2.Password = "new"
	relay2.Workers = 2
	relay2.SSL.CertificateAuthorities = []string{"/ca.pem"}
	archive := DefaultLumberjack()
	b.Output.NamedElasticsearch = map[string]*Elasticsearch{"siem": &siem2}
	b.Output.Lumberjack = map[string]*Lumberjack{"relay": &relay2, "archive": &archive}
	b.Journal.MaxGroupWait = Duration(time.Millisecond)
	b.Input.Beats.TLS.Cert = "/new.pem"
	b.Ledger.MaxBytes = 2 * a.Ledger.MaxBytes
	want := []string{
		"input.beats.tls.cert",
		"journal.max_group_wait",
		"ledger.max_bytes",
		"output.elasticsearch.siem.password",
		"output.lumberjack.archive",
		"output.lumberjack.relay.ssl.certificate_authorities",
		"output.lumberjack.relay.workers",
	}
	if got := Changed(&a, &b); !reflect.DeepEqual(got, want) {
		t.Errorf("Changed = %v\nwant      %v", got, want)
	}
}
