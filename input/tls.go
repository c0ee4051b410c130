package input

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// TLSConfig builds the Beats listener's TLS configuration from PEM files.
// clientAuth is none, optional or required; with optional or required,
// client certificates are verified against clientCA. Errors name the file
// and what is wrong with it.
func TLSConfig(certFile, keyFile, clientCA, clientAuth string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("input: TLS certificate %s / key %s: %w", certFile, keyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	switch clientAuth {
	case "", "none":
		return cfg, nil
	case "optional":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("input: TLS client_auth %q: use none, optional or required", clientAuth)
	}
	pem, err := os.ReadFile(clientCA)
	if err != nil {
		return nil, fmt.Errorf("input: TLS client_ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("input: TLS client_ca %s holds no PEM certificate", clientCA)
	}
	cfg.ClientCAs = pool
	return cfg, nil
}
