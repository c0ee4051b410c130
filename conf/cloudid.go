package conf

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// DecodeCloudID returns the Elasticsearch URL of an Elastic Cloud ID, as
// Beats (cloud.id) and Logstash (cloud_id) decode it. A Cloud ID is
// "[label:]base64(host[:port]$es_id[:port][$kibana_id[:port]])": the
// label (the deployment's name) may be absent, and the base64 part is the
// text after the last colon. The URL is https://es_id.host:port, with the
// port given with es_id, else the one given with host, else 443. The
// error says what is wrong with id.
//
// go-elasticsearch decodes Cloud IDs too (its Config.CloudID), but its
// decoder is not used here: it needs exactly one colon (a label, and none
// inside it), it puts a port given with the es id inside the host name
// ("https://es_id:9243.host"), and its errors do not say what is wrong.
func DecodeCloudID(id string) (string, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return "", fmt.Errorf("is empty")
	}
	// A URL's port could pass for base64: tell it apart first.
	if strings.Contains(id, "://") {
		return "", fmt.Errorf("%q looks like a URL, not a Cloud ID: copy the Cloud ID from the deployment's page in the Elastic Cloud console (\"name:base64…\"), or list the URL in hosts instead", shorten(id))
	}
	encoded := id
	hasLabel := false
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		encoded, hasLabel = id[i+1:], true
	}
	decoded, err := decodeBase64(encoded)
	if err != nil {
		if !hasLabel {
			return "", fmt.Errorf("%q has no label (\"name:\") and is not base64: copy the Cloud ID from the Elastic Cloud console, \"name:base64…\"", shorten(id))
		}
		return "", fmt.Errorf("the part after the last \":\", %q, is not base64: copy the whole Cloud ID from the Elastic Cloud console", shorten(encoded))
	}
	if !printable(decoded) {
		return "", fmt.Errorf("the part after the last \":\", %q, is base64 but not of host$es_id[$kibana_id] (it decodes to binary): copy the whole Cloud ID from the Elastic Cloud console", shorten(encoded))
	}
	parts := strings.Split(string(decoded), "$")
	if len(parts) < 2 {
		return "", fmt.Errorf("decodes to %q, which is not host$es_id[$kibana_id]: it has no \"$\"; copy the whole Cloud ID from the Elastic Cloud console", shorten(string(decoded)))
	}
	host, hostPort, err := cloudIDPart(string(decoded), "host", parts[0], "443")
	if err != nil {
		return "", err
	}
	esID, esPort, err := cloudIDPart(string(decoded), "Elasticsearch id", parts[1], hostPort)
	if err != nil {
		return "", err
	}
	return "https://" + esID + "." + host + ":" + esPort, nil
}

// printable reports whether b is printable ASCII, as the host names and
// ids a Cloud ID holds are.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// decodeBase64 decodes standard base64, with or without its padding.
func decodeBase64(s string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("empty")
	}
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

// cloudIDPart splits one "$" part of decoded, a decoded Cloud ID, into
// name and port ("name[:port]"); port is def when the part has none. what
// names the part in messages.
func cloudIDPart(decoded, what, part, def string) (name, port string, err error) {
	name, port = part, def
	if i := strings.LastIndexByte(part, ':'); i >= 0 {
		name, port = part[:i], part[i+1:]
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", "", fmt.Errorf("decodes to %q, whose %s %q has the port %q, not a number from 1 to 65535", shorten(decoded), what, shorten(part), port)
		}
	}
	if name == "" {
		return "", "", fmt.Errorf("decodes to %q, whose %s is empty: copy the whole Cloud ID from the Elastic Cloud console", shorten(decoded), what)
	}
	return name, port, nil
}

// applyCloud turns each Elasticsearch output's cloud_id into its hosts and
// its cloud_auth into its username and password, so that everything past
// loading (the output, -check-config's host checks, ledgerctl) sees plain
// hosts and credentials. A file that sets cloud_id sets no hosts, and one
// that sets cloud_auth sets no username, password or api_key: logpond
// could only guess which was meant. defined holds the keys the file sets.
func (c *Config) applyCloud(defined map[string]bool) []*KeyError {
	var ps []*KeyError
	for _, o := range c.elasticsearchOutputs() {
		es, k := o.Elasticsearch, o.Key+"."
		bad := func(key, format string, args ...any) {
			ps = append(ps, &KeyError{Key: k + key, Msg: fmt.Sprintf(format, args...)})
		}
		if es.CloudID != "" {
			switch url, err := DecodeCloudID(es.CloudID); {
			case err != nil:
				bad("cloud_id", "%v", err)
			case defined[k+"hosts"]:
				bad("cloud_id", "and hosts are both set: use one (cloud_id names the deployment's Elasticsearch URL, %s)", url)
			default:
				es.Hosts = []string{url}
			}
		}
		if es.CloudAuth == "" {
			continue
		}
		user, pass, ok := strings.Cut(es.CloudAuth, ":")
		switch {
		case !ok:
			bad("cloud_auth", "has no \":\": write \"username:password\" (for the deployment's Elasticsearch, e.g. \"elastic:PASSWORD\")")
		case user == "" || pass == "":
			bad("cloud_auth", "has an empty username or password: write \"username:password\"")
		case es.Username != "" || es.Password != "" || es.APIKey != "":
			bad("cloud_auth", "is set, and so is username, password or api_key: use one way to give the credentials (cloud_auth, or username and password, or api_key)")
		default:
			es.Username, es.Password = user, pass
		}
	}
	return ps
}
