package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tailfeed/internal/testutil/pgtest"
)

// pgConfig feeds one COMMITTED feed into two postgres sinks of one private
// cluster (one with exactlyOnce, one without: both land every line once
// through ON CONFLICT) and a plain file sink, the control that shows the
// re-deliveries the kills cause.
const pgConfig = `instance: e2e-host
dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
processors:
  - name: pgexact
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: exact_lines
    createTable: true
    exactlyOnce: true
    retry: {initialMillis: 50, maxMillis: 400}
  - name: pgplain
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: plain_lines
    createTable: true
    retry: {initialMillis: 50, maxMillis: 400}
  - name: plain
    feed: app
    type: file
    path: ./plain.log
    fsync: never
`

func pgConnect(t *testing.T, c *pgtest.Cluster) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.DSN("sslmode=disable"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// pgCount counts the table's rows (0 while it does not exist).
func pgCount(conn *pgx.Conn, table string) int {
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		return 0
	}
	return n
}

// checkTable reads the table back in position order: every input line
// exactly once, with its position, under the instance and feed.
func checkTable(t *testing.T, conn *pgx.Conn, table string, in *input) {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT instance, feed, position, line, count(*) OVER (PARTITION BY position) FROM "+table+" ORDER BY position")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i, dups, wrong := 0, 0, 0
	for rows.Next() {
		var inst, fd string
		var pos int64
		var line []byte
		var n int
		if err := rows.Scan(&inst, &fd, &pos, &line, &n); err != nil {
			t.Fatal(err)
		}
		if n > 1 {
			dups++
		}
		if i >= len(in.texts) || inst != "e2e-host" || fd != "app" || pos != in.ends[i] || string(line) != in.texts[i] {
			if wrong < 3 {
				t.Errorf("%s row %d: %s %s %d %q, want line %d at %d", table, i, inst, fd, pos, line, i, in.ends[min(i, len(in.ends)-1)])
			}
			wrong++
		}
		i++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(in.texts) || dups != 0 || wrong != 0 {
		t.Errorf("%s: %d rows for %d input lines, %d duplicated, %d wrong", table, i, len(in.texts), dups, wrong)
	}
}

// TestPostgresKill9 (issue 14 acceptance 1): ten kill -9 of the daemon in
// the middle of bursts, restarting into the backlog each time, then a
// clean run to the end. Both tables hold every input line exactly once (read
// back in position order), with exactlyOnce and without, while the plain
// file sink of the same runs shows the re-deliveries the kills caused.
func TestPostgresKill9(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	e := newEnv(t, strings.ReplaceAll(pgConfig, "{{DSN}}", c.DSN("sslmode=disable")))
	conn := pgConnect(t, c)
	in := newInput(t, e.path("in.log"))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 14))
	in.appendLines(10000)
	var log strings.Builder
	for k := range 10 {
		table := []string{"exact_lines", "plain_lines"}[k%2]
		from := pgCount(conn, table)
		d := e.spawn()
		burst := 9000 + rng.IntN(6000) // 100,000+ lines in all
		in.appendLines(burst)
		after := 100 + rng.IntN(burst)
		waitUntil(t, fmt.Sprintf("kill %d: %d more rows in %s", k, after, table), 120*time.Second, func() bool {
			return pgCount(conn, table) >= from+after || d.exited()
		})
		d.kill()
		if d.code != -1 {
			t.Fatalf("kill %d: daemon exited with code %d before the kill\n%s", k, d.code, tail(d.log(), 3000))
		}
		fmt.Fprintf(&log, "kill %d: burst %d, killed after %d rows of %s; rows exact %d plain %d; input %d\n", k, burst, after, table,
			pgCount(conn, "exact_lines"), pgCount(conn, "plain_lines"), len(in.texts))
	}
	d := e.start()
	d.waitSettled(180 * time.Second)
	d.stop()
	checkTable(t, conn, "exact_lines", in)
	checkTable(t, conn, "plain_lines", in)
	pl := parseOutput(t, in, e.path("plain.log"))
	dups := len(pl.idx) - len(pl.set())
	fmt.Fprintf(&log, "%d input lines; file control sink: %d lines, %d duplicates; tables: exact %d rows, plain %d rows",
		len(in.texts), len(pl.idx), dups, pgCount(conn, "exact_lines"), pgCount(conn, "plain_lines"))
	t.Log("\n" + log.String())
	if dups == 0 {
		t.Errorf("the file control sink shows no duplicates: the kills caused no re-delivery, so the test proves nothing")
	}
}

// TestPostgresServerDown (issue 14 acceptance 2): the server shut down
// mid-run: feed.status reports the feed stalled with the reason naming
// the sink and the connection, nothing is dead-lettered; started again,
// the feed resumes by itself; then the cluster restarts during a burst.
// Every line is in the table once.
func TestPostgresServerDown(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	cfg := strings.ReplaceAll(pgConfig, "{{DSN}}", c.DSN("sslmode=disable connect_timeout=2"))
	cfg = strings.Replace(cfg, "    exactlyOnce: true\n", "    exactlyOnce: true\n    onFailure: deadLetter\n", 1)
	e := newEnv(t, cfg)
	conn := pgConnect(t, c)
	in := newInput(t, e.path("in.log"))
	in.appendLines(2000)
	d := e.start()
	d.waitSettled(60 * time.Second)

	c.Stop()
	in.appendLines(3000)
	r := d.waitFor("stalled on the stopped server", 60*time.Second, func(r *report) bool {
		f := r.Feeds[0]
		return f.Stalled != nil && strings.Contains(*f.Stalled, "pgexact") && strings.Contains(*f.Stalled, "postgres connect")
	})
	t.Logf("stalled: %s", *r.Feeds[0].Stalled)
	if r.Settled || r.Feeds[0].DeadLettered != 0 {
		t.Errorf("settled %v, deadLettered %d while the server is down", r.Settled, r.Feeds[0].DeadLettered)
	}
	time.Sleep(time.Second) // attempts run out meanwhile: still held, not dead-lettered
	c.StartServer()
	conn = pgConnect(t, c) // the stop closed the first one
	r = d.waitSettled(60 * time.Second)
	if f := r.Feeds[0]; f.DeadLettered != 0 || !f.Lossless {
		t.Errorf("after the server came back: deadLettered %d, lossless %v", f.DeadLettered, f.Lossless)
	}

	in.appendLines(20000)
	waitUntil(t, "rows during the burst", 60*time.Second, func() bool { return pgCount(conn, "exact_lines") > 2000+3000+100 })
	conn.Close(context.Background())
	c.Restart()
	conn = pgConnect(t, c)
	r = d.waitSettled(120 * time.Second)
	if f := r.Feeds[0]; f.DeadLettered != 0 || !f.Lossless {
		t.Errorf("after the cluster restart: deadLettered %d, lossless %v", f.DeadLettered, f.Lossless)
	}
	d.stop()
	checkTable(t, conn, "exact_lines", in)
	checkTable(t, conn, "plain_lines", in)
}
