package redact

import (
	"net/url"
	"strings"
)

// URLList is RawURL over each URL of a comma-separated list (NATS takes
// its servers that way: nats://u:p@a,nats://u:p@b). A password may hold a
// ',' too (unescaped: not a valid list, but a config error quotes it), so
// the list is cut only before a URL that names its scheme (splitList):
// the parts of a cut password are masked as one.
func URLList(s string) string {
	parts := splitList(s)
	for i, p := range parts {
		parts[i] = RawURL(p)
	}
	return strings.Join(parts, ",")
}

// splitList cuts a comma-separated list of URLs at each ',' followed by a
// URL with a scheme ("nats://…"); a piece without "://" stays with the
// one before it (a ',' in a password, or a list without schemes).
func splitList(s string) []string {
	var out []string
	for i, p := range strings.Split(s, ",") {
		if i > 0 && !strings.Contains(p, "://") {
			out[len(out)-1] += "," + p
			continue
		}
		out = append(out, p)
	}
	return out
}

// URLSecrets returns the credentials in the userinfo of each URL of a
// comma-separated list, as written and as decoded: the password, or the
// user name when it is the whole credential (nats://TOKEN@host). Values
// under 4 bytes are left out (masking them everywhere garbles messages).
func URLSecrets(s string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= 4 {
			out = append(out, v)
		}
	}
	for _, p := range splitList(s) {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil || u.User == nil {
			continue
		}
		if pw, ok := u.User.Password(); ok && pw != "" {
			add(pw)
			add(url.QueryEscape(pw))
		} else {
			add(u.User.Username())
		}
	}
	return out
}
