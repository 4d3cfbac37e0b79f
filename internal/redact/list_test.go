package redact

import (
	"strings"
	"testing"
)

// A list of NATS URLs shows no password, whichever URL holds it.
func TestURLList(t *testing.T) {
	s := "nats://u:pa55word@h1:4222,nats://v:pa55word2@h2:4222,tls://T0KEN123@h3"
	got := URLList(s)
	if strings.Contains(got, "pa55word") || strings.Contains(got, "T0KEN123") || !strings.Contains(got, "h2:4222") {
		t.Errorf("URLList(%q) = %q", s, got)
	}
	sec := strings.Join(URLSecrets(s), " ")
	for _, w := range []string{"pa55word", "pa55word2", "T0KEN123"} {
		if !strings.Contains(sec, w) {
			t.Errorf("URLSecrets misses %q: %v", w, sec)
		}
	}
}

// A password holding an unescaped ',' (a config error quotes the url) is
// masked whole: the list is not cut inside it.
func TestURLListCommaInPassword(t *testing.T) {
	for _, s := range []string{"nats://aud:PWONE,PWTWO@127.0.0.1:4222", "nats://h0:1,nats://aud:PWONE,PWTWO@h1:4222,nats://h2:1"} {
		got := URLList(s)
		if strings.Contains(got, "PWONE") || strings.Contains(got, "PWTWO") || !strings.Contains(got, "@127.0.0.1:4222") && !strings.Contains(got, "@h1:4222,nats://h2:1") {
			t.Errorf("URLList(%q) = %q", s, got)
		}
	}
	if got := URLList("nats://a:1, nats://b:2"); got != "nats://a:1, nats://b:2" {
		t.Errorf("a list without userinfo changed: %q", got)
	}
}
