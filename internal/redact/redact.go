// Package redact hides secrets before text is shown: in status, health,
// metrics, logs, dead letters and error messages (DESIGN §11, §12).
package redact

import (
	"net/url"
	"strings"
)

// Mask stands for a hidden secret, as Go's HTTP client shows a URL's
// password in its own errors.
const Mask = "***"

// URL returns s with the userinfo of every URL in it (user name and
// password: a user name alone is often the credential, as in
// https://APIKEY@host/) replaced by Mask (scheme://***@host/…), like
// url.URL.Redacted but for the whole userinfo, also in a longer text and
// in a string that does not parse as a URL. The authority of a URL in a
// text ends at the first of / ? # " ' or white space; for one URL whose
// password may hold those, use RawURL. Text without a userinfo comes back
// unchanged.
func URL(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i + 3
		end := len(s)
		if j := strings.IndexAny(s[start:], "/?#\"' \t\n"); j >= 0 {
			end = start + j
		}
		b.WriteString(s[:start])
		auth := s[start:end]
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			auth = Mask + auth[at:]
		}
		b.WriteString(auth)
		s = s[end:]
	}
}

// RawURL returns s, the text of one URL as a user wrote it (maybe not a
// valid one: a config error quotes it), with its userinfo masked. When s
// parses as a URL the userinfo is what url.Parse finds; when it does not,
// everything between "://" (or the start) and the last '@' is masked,
// whatever characters a password holds (an unescaped # / ' or space).
func RawURL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		if u.User == nil {
			return s
		}
		end := len(s)
		if j := strings.IndexAny(s[start:], "/?#"); j >= 0 {
			end = start + j
		}
		if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
			return s[:start] + Mask + s[start+at:]
		}
		return s
	}
	at := strings.LastIndexByte(s, '@')
	if at < start {
		return s
	}
	return s[:start] + Mask + s[at:]
}

// Error is an error whose text had its secrets masked; Unwrap still gives
// the cause to errors.Is and errors.As (never print the cause).
type Error struct {
	Msg string
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// SensitiveHeader reports whether a header's value is a credential, whose
// every word must be hidden (not only the whole value).
func SensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	for _, w := range []string{"token", "key", "secret", "auth", "session", "password", "signature"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// SensitiveParam reports whether a URL query parameter's value is a
// credential (?token=…, ?api_key=…, ?sig=…): the header words, and a few
// names of their own.
func SensitiveParam(name string) bool {
	switch strings.ToLower(name) {
	case "sig", "pwd", "pass", "passwd", "pw":
		return true
	}
	return SensitiveHeader(name)
}

// Query returns s, one URL as written, with the value of each sensitive
// query parameter (SensitiveParam) replaced by Mask; the rest as it was.
func Query(s string) string {
	q := strings.IndexByte(s, '?')
	if q < 0 {
		return s
	}
	end := len(s)
	if h := strings.IndexByte(s[q:], '#'); h >= 0 {
		end = q + h
	}
	params := strings.Split(s[q+1:end], "&")
	for i, p := range params {
		k, _, ok := strings.Cut(p, "=")
		if name, err := url.QueryUnescape(k); ok && err == nil && SensitiveParam(name) {
			params[i] = k + "=" + Mask
		}
	}
	return s[:q+1] + strings.Join(params, "&") + s[end:]
}

// QuerySecrets returns the values of the sensitive query parameters of s,
// one URL, as written and as decoded (values under 4 bytes left out:
// masking them everywhere garbles messages).
func QuerySecrets(s string) []string {
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range strings.Split(u.RawQuery, "&") {
		k, v, ok := strings.Cut(p, "=")
		if name, err := url.QueryUnescape(k); !ok || err != nil || !SensitiveParam(name) {
			continue
		}
		if len(v) >= 4 {
			out = append(out, v)
		}
		if d, err := url.QueryUnescape(v); err == nil && d != v && len(d) >= 4 {
			out = append(out, d)
		}
	}
	return out
}
