package pgtest

import (
	"strings"
	"testing"
)

// TestClusterRestart starts a TLS cluster with a password, restarts it and
// reads from it again: the helper the sink and e2e tests stand on.
func TestClusterRestart(t *testing.T) {
	c := Start(t, Options{TLS: true, Password: "s3cret-pw"})
	if got := c.Psql("SHOW ssl"); got != "on" {
		t.Fatalf("ssl = %q", got)
	}
	c.Psql("CREATE TABLE x (a int)")
	c.Restart()
	if got := c.Psql("SELECT count(*) FROM x"); got != "0" {
		t.Fatalf("count = %q", got)
	}
	if !strings.Contains(c.DSN("sslmode=disable"), "127.0.0.1") {
		t.Fatal(c.DSN(""))
	}
}
