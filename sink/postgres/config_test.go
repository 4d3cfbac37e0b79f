package postgres

import (
	"strings"
	"testing"

	"tailfeed/config"
	"tailfeed/internal/testutil"
)

// TestPostgresKeys: a postgres processor needs dsn and table (FILE:LINE
// errors), a table is a plain lower-case [schema.]name, and no error shows
// the DSN (a secret).
func TestPostgresKeys(t *testing.T) {
	lines := testutil.Lines
	head := lines("feeds:", "  - {name: app, path: /a}", "processors:")
	ok := head + lines("  - name: pg", "    feed: app", "    type: postgres",
		"    dsn: host=db user=t password=hunter22 dbname=logs sslmode=verify-full",
		"    table: logs.lines", "    createTable: true")
	cfg, err := config.Parse([]byte(ok), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Processors[0]
	if st := p.Settings.(*Settings); p.Type != Type || st.Table != "logs.lines" || !st.CreateTable || !strings.Contains(st.DSN, "dbname=logs") {
		t.Fatalf("decoded %+v %+v", p, st)
	}
	for _, c := range []struct{ yaml, want string }{
		{head + lines("  - {name: pg, feed: app, type: postgres, table: t}"), "c.yaml:4: processors[0]: a postgres processor needs dsn"},
		{head + lines("  - {name: pg, feed: app, type: postgres, dsn: \"password=hunter22\"}"), "c.yaml:4: processors[0]: a postgres processor needs table"},
		{head + lines("  - name: pg", "    feed: app", "    type: postgres", "    dsn: password=hunter22", "    table: \"Logs; drop\""),
			"c.yaml:8: processors[0].table: \"Logs; drop\" is not a table name"},
		{head + lines("  - {name: pg, feed: app, type: postgres, dsn: \"password=hunter22\", table: t, createTable: 3}"), "c.yaml:4: processors[0].createTable:"},
		{head + lines("  - name: pg", "    feed: app", "    type: postgres", "    table: t", "    dsn: host=db port=notaport password=hunter22"),
			"c.yaml:8: processors[0].dsn: cannot parse the connection string: invalid port"},
		{head + lines("  - name: pg", "    feed: app", "    type: postgres", "    table: t", "    dsn: postgres://u:hunter22@db:notaport/x"),
			"c.yaml:8: processors[0].dsn: cannot parse the connection string:"},
	} {
		_, err := config.Parse([]byte(c.yaml), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err %v, want %q", err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter22") {
			t.Errorf("error shows the DSN's password: %v", err)
		}
	}
}
