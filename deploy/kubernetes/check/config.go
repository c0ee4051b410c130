package check

import (
	"fmt"
	"os"
	"regexp"
	"sync"

	"github.com/logpond/logpond/conf"
	corev1 "k8s.io/api/core/v1"
)

// ConfigKey is the key of the configuration file in logpond's ConfigMap,
// and ConfigDir where the image reads it (shared with the image: the
// entrypoint's default is -config /etc/logpond/logpond.toml).
const (
	ConfigKey = "logpond.toml"
	ConfigDir = "/etc/logpond"
)

// envRef finds the environment variables a TOML document refers to, as
// conf substitutes them: ${NAME} or ${NAME:default}. An escaped "$${" is
// matched too and only makes a name be set needlessly.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:[^}]*)?\}`)

// envMu serializes parseConfig: conf reads the process environment.
var envMu sync.Mutex

// parseConfig loads a ConfigMap's logpond.toml with conf, in the
// environment the container gives it: every variable the file refers to
// is set (to a stand-in value) when env defines it, and unset otherwise,
// so a reference the pod does not provide fails the load as it would in
// the pod. The process environment is restored before it returns.
func parseConfig(data string, env []corev1.EnvVar) (*conf.Loaded, error) {
	envMu.Lock()
	defer envMu.Unlock()
	defined := map[string]bool{}
	for _, e := range env {
		defined[e.Name] = true
	}
	restore := map[string]*string{}
	for _, m := range envRef.FindAllStringSubmatch(data, -1) {
		name := m[1]
		if _, seen := restore[name]; seen {
			continue
		}
		if old, ok := os.LookupEnv(name); ok {
			restore[name] = &old
		} else {
			restore[name] = nil
		}
		if defined[name] {
			os.Setenv(name, "stand-in-for-"+name)
		} else {
			os.Unsetenv(name)
		}
	}
	defer func() {
		for name, old := range restore {
			if old == nil {
				os.Unsetenv(name)
			} else {
				os.Setenv(name, *old)
			}
		}
	}()
	l, err := conf.ParseFile(ConfigKey, []byte(data))
	if err != nil {
		return nil, fmt.Errorf("check: the ConfigMap's %s does not load in the container's environment: %w", ConfigKey, err)
	}
	return l, nil
}

// secretRef is a whole-value environment reference with no default: the
// only form a credential may take in the ConfigMap.
var secretRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// credentials checks that every credential of the configuration comes
// from a Secret: each Elasticsearch output's password, api_key and
// cloud_auth is empty or one ${VAR}, and VAR comes from a secretKeyRef of
// the container. A literal value would sit in a ConfigMap, readable by
// whoever reads the namespace.
func credentials(l *conf.Loaded, env []corev1.EnvVar) []error {
	fromSecret := map[string]bool{}
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.Value == "" {
			fromSecret[e.Name] = true
		}
	}
	p := l.Printable()
	outs := map[string]*conf.Elasticsearch{"output.elasticsearch": &p.Output.Elasticsearch}
	for name, es := range p.Output.NamedElasticsearch {
		outs["output.elasticsearch."+name] = es
	}
	var errs []error
	for key, es := range outs {
		for field, v := range map[string]string{"password": es.Password, "api_key": es.APIKey, "cloud_auth": es.CloudAuth} {
			if v == "" || v == conf.Redacted {
				// Empty, or taken from a host URL or cloud_auth that
				// came from a variable (those are checked as the
				// variables they are).
				continue
			}
			m := secretRef.FindStringSubmatch(v)
			switch {
			case m == nil:
				errs = append(errs, fmt.Errorf("%s.%s is written in the ConfigMap (%d characters): write ${VAR} and set VAR from a Secret (secretKeyRef)", key, field, len(v)))
			case !fromSecret[m[1]]:
				errs = append(errs, fmt.Errorf("%s.%s is %s, but the container's %s does not come from a Secret (secretKeyRef)", key, field, v, m[1]))
			}
		}
		for i, h := range es.Hosts {
			if hostHasPassword.MatchString(h) {
				errs = append(errs, fmt.Errorf("%s.hosts[%d] carries a password in its URL: use username and password from a Secret", key, i))
			}
		}
	}
	return errs
}

// hostHasPassword matches a URL with a literal user:password@.
var hostHasPassword = regexp.MustCompile(`^[a-z]+://[^/@:]*:[^/@$]+@`)

// configFiles lists the files the configuration reads (TLS certificates,
// keys and CAs), by key.
func configFiles(c *conf.Config) map[string]string {
	files := map[string]string{}
	add := func(key, path string) {
		if path != "" {
			files[key] = path
		}
	}
	t := c.Input.Beats.TLS
	add("input.beats.tls.cert", t.Cert)
	add("input.beats.tls.key", t.Key)
	add("input.beats.tls.client_ca", t.ClientCA)
	es := map[string]*conf.Elasticsearch{"output.elasticsearch": &c.Output.Elasticsearch}
	for name, o := range c.Output.NamedElasticsearch {
		es["output.elasticsearch."+name] = o
	}
	for key, o := range es {
		add(key+".tls.ca", o.TLS.CA)
		add(key+".tls.cert", o.TLS.Cert)
		add(key+".tls.key", o.TLS.Key)
	}
	ssl := map[string]conf.LumberjackSSL{}
	for name, o := range c.Output.Lumberjack {
		ssl["output.lumberjack."+name+".ssl"] = o.SSL
	}
	if c.Output.Kafka != nil {
		ssl["output.kafka.ssl"] = c.Output.Kafka.SSL
	}
	for name, o := range c.Output.NamedKafka {
		ssl["output.kafka."+name+".ssl"] = o.SSL
	}
	for key, s := range ssl {
		for i, ca := range s.CertificateAuthorities {
			add(fmt.Sprintf("%s.certificate_authorities[%d]", key, i), ca)
		}
		add(key+".certificate", s.Certificate)
		add(key+".key", s.Key)
	}
	return files
}
