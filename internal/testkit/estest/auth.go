package estest

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// authorized reports whether r carries credentials the server accepts:
// any request when it has neither Users nor APIKeys.
func (s *Server) authorized(r *http.Request) bool {
	if len(s.users) == 0 && len(s.apiKeys) == 0 {
		return true
	}
	if user, pw, ok := r.BasicAuth(); ok {
		want, known := s.users[user]
		return known && subtle.ConstantTimeCompare([]byte(pw), []byte(want)) == 1
	}
	scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "ApiKey") {
		return false
	}
	for _, k := range s.apiKeys {
		if subtle.ConstantTimeCompare([]byte(key), []byte(k)) == 1 {
			return true
		}
	}
	return false
}

// unauthorized answers 401 as Elasticsearch does with security on: a
// security_exception naming what was wrong, and the schemes it takes.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	reason := fmt.Sprintf("missing authentication credentials for REST request [%s]", r.URL.RequestURI())
	if r.Header.Get("Authorization") != "" {
		reason = "unable to authenticate"
		if user, _, ok := r.BasicAuth(); ok {
			reason = fmt.Sprintf("unable to authenticate user [%s] for REST request [%s]", user, r.URL.RequestURI())
		} else {
			reason = fmt.Sprintf("unable to authenticate with provided credentials and anonymous access is not allowed for this request [%s]", r.URL.RequestURI())
		}
	}
	w.Header().Add("WWW-Authenticate", `Basic realm="security", charset="UTF-8"`)
	w.Header().Add("WWW-Authenticate", "ApiKey")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprintf(w, `{"error":{"root_cause":[{"type":"security_exception","reason":%q}],"type":"security_exception","reason":%q},"status":401}`, reason, reason)
}
