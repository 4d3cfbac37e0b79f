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
