package kafka

import (
	"bytes"
	"crypto/tls"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logpond/logpond/internal/testkit/pki"
	"github.com/logpond/logpond/output/internal/drain/draintest"
)

// TestSCRAMOverTLS: the output authenticates with SASL SCRAM-SHA-512 over
// TLS verified against a private CA, and delivers; with a wrong password
// it delivers nothing and says why it waits.
func TestSCRAMOverTLS(t *testing.T) {
	ca := pki.NewCA(t)
	srv := ca.Issue(t, pki.Options{CommonName: "kafka", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}).TLS()
	r := newRig(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{srv}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "logpond", "s3cret"))
	r.storeMany(300, 30)
	opts := func(pass string) Options {
		return r.options(func(o *Options) {
			o.TLS = &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
			o.SASLMechanism, o.Username, o.Password = "SCRAM-SHA-512", "logpond", pass
		})
	}
	bad := r.start(opts("wrong"))
	// (kfake closes the connection on a failed authentication, where
	// Kafka answers SASL_AUTHENTICATION_FAILED first.)
	draintest.WaitFor(t, "the output to say why it waits", func() bool { return strings.Contains(bad.Out.Waiting(), "initialising the transactional producer") })
	if d := bad.Out.Stats().Delivered; d != 0 {
		t.Errorf("with a wrong password %d events were delivered", d)
	}
	bad.Stop(t)
	good := r.start(opts("s3cret"))
	draintest.WaitFor(t, "every event produced", func() bool { return good.Out.Stats().Delivered == 300 })
	good.Stop(t)
}

// TestKcatReadsWhatLogpondWrote: kcat (librdkafka, the most common
// consumer library outside Java) reads the records logpond wrote in
// transactions, with read_committed: every event once, as its JSON, with
// the id header. CI installs kcat (.ci/run); elsewhere the test skips
// without it.
func TestKcatReadsWhatLogpondWrote(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (Debian package kcat; .ci/run installs it)")
	}
	r := newRig(t, kfake.SeedTopics(3, "logs"))
	r.storeMany(500, 50)
	run := r.start(r.options(func(o *Options) { o.Compression = "lz4" }))
	draintest.WaitFor(t, "every event produced", func() bool { return run.Out.Stats().Delivered == 500 })
	run.Stop(t)
	cmd := exec.Command(kcat, "-C", "-b", strings.Join(r.kafka.ListenAddrs(), ","), "-t", "logs", "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_committed", "-f", "%h\t%s\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat: %v: %s", err, stderr.String())
	}
	var got []consumed
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		h, v, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("kcat printed %q", line)
		}
		id, _ := strings.CutPrefix(h, IDHeader+"=")
		got = append(got, consumed{topic: "logs", value: []byte(v), id: id})
	}
	r.checkExactlyOnce(got)
}
