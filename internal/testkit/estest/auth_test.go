package estest

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/logpond/logpond/internal/testkit/pki"
)

// TestAuthAndTLS: with Users and APIKeys, a request without accepted
// credentials is answered 401 security_exception, naming the user it
// could not authenticate; accepted basic credentials or an API key get
// through; with TLS the server speaks https with its certificate.
func TestAuthAndTLS(t *testing.T) {
	ca := pki.NewCA(t)
	cert := ca.Issue(t, pki.Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	srv, err := Start(Options{Users: map[string]string{"logpond": "s3cret"}, APIKeys: []string{"a2V5OnZhbHVl"},
		TLS: &tls.Config{Certificates: []tls.Certificate{cert.TLS()}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.HasPrefix(srv.URL(), "https://") {
		t.Fatalf("URL %s, want https", srv.URL())
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	for _, tc := range []struct {
		name, header string
		basic        [2]string
		status       int
		body         string
	}{
		{name: "none", status: 401, body: "missing authentication credentials for REST request [/]"},
		{name: "wrong password", basic: [2]string{"logpond", "nope"}, status: 401, body: "unable to authenticate user [logpond]"},
		{name: "unknown API key", header: "ApiKey bm9wZQ==", status: 401, body: "security_exception"},
		{name: "basic", basic: [2]string{"logpond", "s3cret"}, status: 200, body: "cluster_uuid"},
		{name: "API key", header: "ApiKey a2V5OnZhbHVl", status: 200, body: "cluster_uuid"},
		{name: "API key as the Go client spells it", header: "APIKey a2V5OnZhbHVl", status: 200, body: "cluster_uuid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", srv.URL()+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.basic[0] != "" {
				req.SetBasicAuth(tc.basic[0], tc.basic[1])
			}
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.body) {
				t.Errorf("%d %s, want %d with %q", resp.StatusCode, b, tc.status, tc.body)
			}
		})
	}
}
