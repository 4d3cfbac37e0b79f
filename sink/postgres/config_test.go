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
	// The start WARN about a literal password names the key by index, as
	// config errors and the nats sink's warnings do (was processors[pg].dsn).
	if at := p.Settings.(*Settings).DSNAt; at != "processors[0].dsn" {
		t.Errorf("DSNAt %q, want processors[0].dsn", at)
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

// A DSN password written in the file (even inside a DSN with a ${VAR}
// reference, encoded, quoted, or as a reference's default) is a literal
// secret (DESIGN §11 Secrets: a WARN at start); one the environment
// supplies (a reference, PGPASSWORD) is not.
func TestPostgresDSNPasswordLiteral(t *testing.T) {
	t.Setenv("TF_PGDSN", "host=db user=t password=hunter22 dbname=logs")
	head := testutil.Lines("feeds:", "  - {name: app, path: /a}", "processors:")
	t.Setenv("TF_PGPW", "hunter22")
	t.Setenv("TF_PGHOST", "db")
	t.Setenv("PGPASSWORD", "fromenv")
	for dsn, want := range map[string]bool{
		"'${TF_PGDSN}'":                             false,
		"'host=db password=hunter22'":               true,
		"'host=db password=${TF_PGPW}'":             false,
		"'host=db password=${TF_UNSET:-hunter22}'":  true,
		"'postgres://u:hunter22@${TF_PGHOST}/logs'": true,
		"'postgres://u:p%40ss@${TF_PGHOST}/logs'":   true,
		"\"host=${TF_PGHOST} password='p\\\\'s'\"":  true,
		"'host=db user=t dbname=logs'":              false, // PGPASSWORD supplies it
		"'postgres://u@db/logs?password=hunter22'":  true,
		"'${TF_PGDSN} password=hunter22'":           true,
		"'${TF_PGDSN} sslpassword=x'":               false,
	} {
		cfg, err := config.Parse([]byte(head+testutil.Lines("  - {name: pg, feed: app, type: postgres, table: t, dsn: "+dsn+"}")), "c.yaml")
		if err != nil {
			t.Fatalf("dsn %s: %v", dsn, err)
		}
		if got := cfg.Processors[0].Settings.(*Settings).PasswordLiteral; got != want {
			t.Errorf("dsn %s: literal %v, want %v", dsn, got, want)
		}
	}
}

// The marks table's name is <table>_marks while that fits PostgreSQL's 63
// bytes; past it, a shortened name with a hash of the table's: at most 63
// bytes, never the table's own name, distinct per table.
func TestMarksIdent(t *testing.T) {
	if got := MarksIdent([]string{"logs", "lines"}); strings.Join(got, ".") != "logs.lines_marks" {
		t.Errorf("short: %v", got)
	}
	if got := MarksIdent([]string{strings.Repeat("a", 57)})[0]; got != strings.Repeat("a", 57)+"_marks" {
		t.Errorf("57 bytes: %q", got)
	}
	// 58–62 bytes: cut to 63 as PostgreSQL cut it before (existing
	// marks tables keep their name).
	if got := MarksIdent([]string{strings.Repeat("a", 60)})[0]; got != strings.Repeat("a", 60)+"_ma" {
		t.Errorf("60 bytes: %q", got)
	}
	seen := map[string]bool{}
	for _, tbl := range []string{strings.Repeat("t", 63), strings.Repeat("t", 62) + "u"} {
		m := MarksIdent([]string{"s", tbl})
		if len(m) != 2 || m[0] != "s" || len(m[1]) > 63 || m[1] == tbl || !strings.HasSuffix(m[1], "_marks") || seen[m[1]] {
			t.Errorf("%d-byte table: marks %v", len(tbl), m)
		}
		seen[m[1]] = true
	}
}

// Two postgres processors of one feed writing one table are a config error
// at the second's table line (DESIGN §11: the table's rows are the record,
// max(position) per (instance, feed, epoch); a filtered processor's rows
// made an unfiltered one skip every line before its last). "lines" and
// "public.lines" are one table; another feed, or another table, is fine.
func TestTwoProcessorsOfOneFeedOnOneTable(t *testing.T) {
	lines := testutil.Lines
	head := lines("feeds:", "  - {name: app, path: /a}", "  - {name: web, path: /b}", "processors:", "  - {name: w, feed: web, type: postgres, dsn: host=db, table: weblines}")
	pg := func(name, feed, table string) string {
		return lines("  - name: "+name, "    feed: "+feed, "    type: postgres", "    dsn: host=db dbname=logs", "    table: "+table)
	}
	cfg := head + pg("errs", "app", "lines") + pg("all", "app", "public.lines")
	_, err := config.Parse([]byte(cfg), "c.yaml")
	if err == nil || !strings.Contains(err.Error(), `c.yaml:15: processors[2].table: postgres processor "errs" (line 10) also writes feed "app" into table public.lines`) {
		t.Fatalf("err %v", err)
	}
	for _, ok := range []string{head + pg("a", "app", "lines") + pg("b", "web", "lines"), head + pg("a", "app", "lines") + pg("b", "app", "other")} {
		if _, err := config.Parse([]byte(ok), "c.yaml"); err != nil {
			t.Errorf("refused: %v", err)
		}
	}
}
