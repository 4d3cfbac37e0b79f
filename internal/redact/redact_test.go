package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:secret@127.0.0.1:80/x?a=b":  "http://***@127.0.0.1:80/x?a=b",
		"https://user@host/p":                    "https://***@host/p",
		"http://host:80/a@b":                     "http://host:80/a@b",
		"http://u:p%40ss@h/":                     "http://***@h/",
		"http://u:p@ss@h/":                       "http://***@h/",
		"not a url":                              "not a url",
		"http://u:bad\x7fpw@h/ with a bad byte":  "http://***@h/ with a bad byte",
		"postgres://app:pw@db:5432/x?sslmode=no": "postgres://***@db:5432/x?sslmode=no",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestURLInText(t *testing.T) {
	in := `webhook POST http://u:pw@h:1/x (k): Post "http://u:pw@h:1/x": refused; see https://a:b@c`
	want := `webhook POST http://***@h:1/x (k): Post "http://***@h:1/x": refused; see https://***@c`
	if got := URL(in); got != want {
		t.Errorf("URL(%q) =\n%q, want\n%q", in, got, want)
	}
}

// One URL as written, whatever its password holds (review D4): what
// url.Parse finds when it parses, else everything up to the last '@'.
func TestRawURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://svc:s3cr#tpass@hooks.example.com/in": "https://***@hooks.example.com/in",
		"https://svc:s3cr/tpass@hooks.example.com/in": "https://***@hooks.example.com/in",
		"ftp://svc:s3cr'tpass@hooks.example.com/in":   "ftp://***@hooks.example.com/in",
		"https://svc:s3cr tpass@h/in":                 "https://***@h/in",
		"https://KEY@h/in":                            "https://***@h/in",
		"https://h/in?mail=a@b":                       "https://h/in?mail=a@b",
		"https://h/in":                                "https://h/in",
		"svc:pw@h":                                    "***@h",
	} {
		if got := RawURL(in); got != want {
			t.Errorf("RawURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// A credential in a URL's query (?token=…) is a secret too: masked by
// Query, its values listed by QuerySecrets, the other parameters kept.
func TestQuery(t *testing.T) {
	for in, want := range map[string]string{
		"http://h/in?token=QSECRET&a=b":         "http://h/in?token=***&a=b",
		"http://h/in?a=b&api_key=k3y#frag":      "http://h/in?a=b&api_key=***#frag",
		"http://h/in?sig=abcd&Signature=xyz1":   "http://h/in?sig=***&Signature=***",
		"http://h/in?mail=a@b":                  "http://h/in?mail=a@b",
		"http://h/in":                           "http://h/in",
		"http://h/in?dd-api-key=k%2Fy&x":        "http://h/in?dd-api-key=***&x",
		"https://***@h/in?access_token=tok3nXX": "https://***@h/in?access_token=***",
	} {
		if got := Query(in); got != want {
			t.Errorf("Query(%q) = %q, want %q", in, got, want)
		}
	}
	got := QuerySecrets("http://h/in?token=QSECRET&a=bbbbbb&dd-api-key=k%2Fyyy&sig=ab")
	want := []string{"QSECRET", "k%2Fyyy", "k/yyy"}
	if len(got) != len(want) {
		t.Fatalf("QuerySecrets = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("QuerySecrets = %q, want %q", got, want)
		}
	}
}
