package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:secret@127.0.0.1:80/x?a=b":  "http://user:***@127.0.0.1:80/x?a=b",
		"https://user@host/p":                    "https://user@host/p",
		"http://host:80/a@b":                     "http://host:80/a@b",
		"http://u:p%40ss@h/":                     "http://u:***@h/",
		"http://u:p@ss@h/":                       "http://u:***@h/",
		"not a url":                              "not a url",
		"http://u:bad\x7fpw@h/ with a bad byte":  "http://u:***@h/ with a bad byte",
		"postgres://app:pw@db:5432/x?sslmode=no": "postgres://app:***@db:5432/x?sslmode=no",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestURLInText(t *testing.T) {
	in := `webhook POST http://u:pw@h:1/x (k): Post "http://u:pw@h:1/x": refused; see https://a:b@c`
	want := `webhook POST http://u:***@h:1/x (k): Post "http://u:***@h:1/x": refused; see https://a:***@c`
	if got := URL(in); got != want {
		t.Errorf("URL(%q) =\n%q, want\n%q", in, got, want)
	}
}
