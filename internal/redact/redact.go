// Package redact hides secrets before text is shown: in status, health,
// metrics, logs, dead letters and error messages (DESIGN §11, §12).
package redact

import "strings"

// Mask stands for a hidden secret, as Go's HTTP client shows a URL's
// password in its own errors.
const Mask = "***"

// URL returns s with the password of every URL's userinfo in it replaced
// by Mask (scheme://user:***@host/…), like url.URL.Redacted but also in a
// longer text and in a string that does not parse as a URL (a config error
// quoting a bad URL). Text without a userinfo password comes back unchanged.
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
			if colon := strings.IndexByte(auth[:at], ':'); colon >= 0 {
				auth = auth[:colon+1] + Mask + auth[at:]
			}
		}
		b.WriteString(auth)
		s = s[end:]
	}
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
