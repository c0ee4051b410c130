package elasticsearch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
)

// Credentials are an output's credentials, which Set replaces while the
// output runs (a reload, after a rotated password or API key): every
// request from then on carries the new ones. Safe for concurrent use.
type Credentials struct {
	v atomic.Pointer[credentials]
}

type credentials struct {
	user             string
	password, apiKey Secret
}

// NewCredentials holds user and password (HTTP basic), or apiKey, which
// goes instead of them when set, as the Elasticsearch client does.
func NewCredentials(user string, password, apiKey Secret) *Credentials {
	c := &Credentials{}
	c.Set(user, password, apiKey)
	return c
}

// Set replaces the credentials.
func (c *Credentials) Set(user string, password, apiKey Secret) {
	c.v.Store(&credentials{user: user, password: password, apiKey: apiKey})
}

// apply sets req's Authorization header from the credentials in place
// (none when they are empty), as the client spells it.
func (c *Credentials) apply(req *http.Request) {
	v := c.v.Load()
	switch {
	case v.apiKey.Reveal() != "":
		req.Header.Set("Authorization", "APIKey "+v.apiKey.Reveal())
	case v.user != "" && v.password.Reveal() != "":
		req.SetBasicAuth(v.user, v.password.Reveal())
	}
}

// settings names the settings the credentials in place come from, in the
// output's table key: api_key when one is set (it goes instead of the
// user and password), else username and password.
func (c *Credentials) settings(key string) string {
	v := c.v.Load()
	switch {
	case v.apiKey.Reveal() != "":
		return key + ".api_key"
	case v.user != "":
		return key + ".username and " + key + ".password (or cloud_auth)"
	}
	return key + ".username and .password, or .api_key: none is set, and the cluster asks for credentials"
}

// authTransport sends each request with the credentials in place.
type authTransport struct {
	creds *Credentials
	next  http.RoundTripper
}

// RoundTrip sets the header on a shallow copy, as a RoundTripper must not
// change the request it is given.
func (t authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	t.creds.apply(r)
	return t.next.RoundTrip(r)
}

// TLSConfig is the client side of TLS to an output's hosts: verified
// against caPEM (nil: the system roots), or not at all with insecure
// (tls.verification_mode = none), presenting clientCert (nil: none) to
// hosts that ask for one. key names the output's table, for errors.
func TLSConfig(key string, caPEM []byte, clientCert *tls.Certificate, insecure bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // only when the user sets verification_mode = none
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("elasticsearch: %s.tls.ca holds no PEM certificate", key)
		}
		cfg.RootCAs = pool
	}
	if clientCert != nil {
		// Sent only to a host that asks for one, as crypto/tls does with
		// Certificates: the same options serve hosts with and without PKI.
		cfg.Certificates = []tls.Certificate{*clientCert}
	}
	return cfg, nil
}

// tlsDialer opens a TLS connection with the configuration in place
// (current), verifying the host's name unless the configuration names one.
func tlsDialer(d *net.Dialer, current func() *tls.Config) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cfg := current()
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		return (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, network, addr)
	}
}
