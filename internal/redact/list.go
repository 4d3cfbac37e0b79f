package redact

import (
	"net/url"
	"strings"
)

// URLList is RawURL over each URL of a comma-separated list (NATS takes
// its servers that way: nats://u:p@a,nats://u:p@b).
func URLList(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = RawURL(p)
	}
	return strings.Join(parts, ",")
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
	for _, p := range strings.Split(s, ",") {
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
