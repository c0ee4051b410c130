// Package hosturl handles Elasticsearch host URLs as users write them in
// output.elasticsearch.hosts or on a command line: "https://es1:9200", or a
// bare "es1:9200" meaning http, possibly with credentials in the user info
// ("https://user:password@es1:9200"). It keeps those credentials out of
// what is printed and tells whether two spellings name the same host.
package hosturl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Parse parses h, a URL or a bare host[:port] (meaning http). It refuses an
// "@" outside the user info, which is what an unencoded "/", "?" or "#" in
// a password leads to: the rest of the password would then be read as the
// host, path, query or fragment, and printed as such. Its errors never
// quote the user info.
func Parse(h string) (*url.URL, error) {
	s := h
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		// The parser's detail ("invalid port ...") quotes parts of the
		// URL: show the detail of the redacted URL, when that fails too.
		shown := Redact(h)
		var ue *url.Error
		if _, rerr := url.Parse(Redact(s)); errors.As(rerr, &ue) {
			return nil, fmt.Errorf("%q is not a URL: %v", shown, ue.Err)
		}
		return nil, fmt.Errorf("%q is not a URL%s", shown, encodeHint(h))
	}
	if strings.Contains(u.Opaque+u.Path+u.RawPath+u.RawQuery+u.Fragment, "@") {
		return nil, fmt.Errorf("%q is not a URL%s", Redact(h), encodeHint(h))
	}
	return u, nil
}

func encodeHint(h string) string {
	if !strings.Contains(h, "@") {
		return ""
	}
	return " (percent-encode the characters : / ? # @ % of a user name or password in a URL, e.g. %2F for /)"
}

// Split returns h without its user info, spelled as written otherwise
// ("user:pw@es1:9200" gives "es1:9200"), and the user info, nil when h has
// none. Its errors never quote the user info.
func Split(h string) (string, *url.Userinfo, error) {
	u, err := Parse(h)
	if err != nil {
		return "", nil, err
	}
	if u.User == nil {
		return h, nil, nil
	}
	// Parse made sure the last "@" ends the user info.
	start := 0
	if i := strings.Index(h, "://"); i >= 0 {
		start = i + len("://")
	}
	at := strings.LastIndex(h, "@")
	return h[:start] + h[at+1:], u.User, nil
}

// Redact returns h with the password of its user info replaced by "xxxxx"
// (as url.URL.Redacted does), for logs and messages; user info without a
// password (which may be a token written where the user goes) is replaced
// whole. It works on text that does not parse as a URL too: everything
// between the scheme and the last "@" counts as user info, so a password
// with unencoded special characters is hidden whole.
func Redact(h string) string {
	at := strings.LastIndex(h, "@")
	if at < 0 {
		return h
	}
	start := 0
	if i := strings.Index(h, "://"); i >= 0 && i < at {
		start = i + len("://")
	}
	user, _, hasPassword := strings.Cut(h[start:at], ":")
	if !hasPassword {
		return h[:start] + "xxxxx" + h[at:]
	}
	return h[:start] + user + ":xxxxx" + h[at:]
}

// Same reports whether a and b name the same endpoint: scheme, host and
// port (the scheme's default when none is written) and path compare equal,
// host and scheme case-insensitively; user info does not count. A URL that
// does not parse is the same as nothing.
func Same(a, b string) bool {
	ua, err := Parse(a)
	if err != nil {
		return false
	}
	ub, err := Parse(b)
	if err != nil {
		return false
	}
	return endpoint(ua) == endpoint(ub)
}

func endpoint(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port + strings.TrimRight(u.EscapedPath(), "/")
}
