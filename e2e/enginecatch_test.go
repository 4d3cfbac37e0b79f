package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"tailfeed/internal/natstest"
	"tailfeed/internal/testutil/pgtest"
)

// The engine sinks' skewed restore (issue 14 acceptance 4, DESIGN §11 "A
// restored sink is caught up from the input"), driven the same way for
// kafka, nats and postgres: the engine is put back to an earlier point
// while tailfeed is stopped; at the next start the sink's done-through mark
// is behind the pointer and the feed re-reads from it.

// restoreRun drives one skewed restore: 3000 lines, the daemon settled;
// then
//
//   - gone false (same epoch): 4000 more lines; the backup is taken at
//     3000 lines settled (early) or while the 4000 are being delivered
//     (!early: a consistent snapshot of the engine, e.g. pg_dump);
//   - gone true: the backup at 3000 lines, 1000 more, the input rotated
//     (in.log → in.log.1) and 2000 lines in the new in.log; in.log.1 is
//     deleted before the next start, so the gap is no longer on disk;
//
// then the daemon stops, restore puts the engine back to the backup, and a
// new start runs to settled. It returns that run's report and log.
func restoreRun(t *testing.T, e *env, in *input, gone, early bool, backup, restore func()) (*report, string) {
	t.Helper()
	in.appendLines(3000)
	d := e.start()
	r := d.waitSettled(120 * time.Second)
	epoch0 := r.feed(t, "app").Epoch
	if gone || early {
		backup()
	}
	if !gone && early {
		in.appendLines(4000)
		d.waitSettled(120 * time.Second)
	} else if !gone {
		// The backup is taken while the daemon runs, between two bursts:
		// it holds the first 5,000 lines and never the last 2,000 (a
		// backup racing one burst could land after its last row).
		in.appendLines(2000)
		d.waitSettled(120 * time.Second)
		backup()
		in.appendLines(2000)
		d.waitSettled(120 * time.Second)
	} else {
		in.appendLines(1000)
		d.waitSettled(120 * time.Second)
		if err := os.Rename(in.path, e.path("in.log.1")); err != nil {
			t.Fatal(err)
		}
		in.ends = nil // positions restart in the new file; texts go on
		in.appendLines(2000)
		d.waitFor("the new in.log read", 120*time.Second, func(r *report) bool {
			f := r.feed(t, "app")
			return f.Settled && f.Epoch != epoch0 && f.Pointer != nil && f.Pointer.Offset == in.size()
		})
	}
	d.stop()
	restore()
	if gone {
		if err := os.Remove(e.path("in.log.1")); err != nil {
			t.Fatal(err)
		}
	}
	d = e.start()
	r = d.waitSettled(180 * time.Second)
	d.stop()
	if !strings.Contains(d.log(), "committing the pointer back") {
		t.Errorf("no catch-up at the start after the restore:\n%s", tail(d.log(), 3000))
	}
	return r, d.log()
}

// checkRestored checks an engine's read-back (line text → count) after
// restoreRun and the feed's report: every line once and lossless; or, with
// gone, the lines of the deleted generation past the backup (3000..3999)
// missing — counted: lostTails 1, lossless false — and every other once.
func checkRestored(t *testing.T, what string, got map[string]int, in *input, gone bool, r *report) {
	t.Helper()
	missing, dups := 0, 0
	for i, s := range in.texts {
		n := got[s]
		if gone && i >= 3000 && i < 4000 {
			if n != 0 {
				dups++ // restored away: it cannot be there again
			}
			if n == 0 {
				missing++
			}
			continue
		}
		switch {
		case n == 0:
			missing++
			if missing < 4 {
				t.Errorf("%s lacks line %d", what, i)
			}
		case n > 1:
			dups++
			if dups < 4 {
				t.Errorf("%s holds line %d %d times", what, i, n)
			}
		}
	}
	total := 0
	for _, n := range got {
		total += n
	}
	f := r.feed(t, "app")
	detail := ""
	if f.Detail != nil {
		detail = *f.Detail
	}
	if gone {
		if missing != 1000 || dups != 0 {
			t.Errorf("%s: %d lines of the deleted generation missing (want 1000), %d duplicated", what, missing, dups)
		}
		if f.Lossless || r.Lossless || f.LostTails != 1 || f.LostBytes == 0 {
			t.Errorf("%s: generation gone: lossless %v/%v lostTails %d lostBytes %d, want false, 1 and the bytes", what, f.Lossless, r.Lossless, f.LostTails, f.LostBytes)
		}
		if !strings.Contains(detail, "catch-up of sink") {
			t.Errorf("%s: detail %q does not name the catch-up", what, detail)
		}
	} else {
		if missing != 0 || dups != 0 || total != len(in.texts) {
			t.Errorf("%s: %d records for %d lines, %d missing, %d duplicated", what, total, len(in.texts), missing, dups)
		}
		if !f.Lossless || f.LostTails != 0 {
			t.Errorf("%s: lossless %v lostTails %d detail %q", what, f.Lossless, f.LostTails, detail)
		}
	}
	t.Logf("%s: %d input lines, %d records read back, %d missing (gone=%v), lostTails %d, lostBytes %d, lossless %v",
		what, len(in.texts), total, missing, gone, f.LostTails, f.LostBytes, f.Lossless)
}

const pgRestoreConfig = "instance: e2e-host\n" + cuHeader + cuFeed + cuProcessors + `  - name: pgexact
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
`

// pgTool runs a PostgreSQL client program (pg_dump, pg_restore) against
// the cluster's socket as the postgres role.
func pgTool(t *testing.T, c *pgtest.Cluster, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(c.Bin(name), append([]string{"-h", c.Socket, "-p", strconv.Itoa(c.Port), "-U", "postgres"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

// pgLines reads a table back: line text → rows.
func pgLines(t *testing.T, c *pgtest.Cluster, table string) map[string]int {
	t.Helper()
	conn := pgConnect(t, c)
	rows, err := conn.Query(context.Background(), "SELECT line FROM "+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var l []byte
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		out[string(l)]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPostgresSkewedRestore (issue 14 acceptance 4): a real pg_dump of
// both sinks' tables (and their marks tables) taken while the daemon
// runs (between two bursts), restored with pg_restore --clean while tailfeed is
// stopped. Next start: both sinks (exactlyOnce and not: the record is
// max(position) either way) are behind the pointer, the feed re-reads
// from the earliest, and both tables end with every line exactly once;
// lossless. "gone": the dump from before a rotation, the rotated
// generation deleted: its lines past the dump are counted (lostTails 1,
// lossless false), every other line once.
func TestPostgresSkewedRestore(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(map[bool]string{false: "sameEpoch", true: "generationGone"}[gone], func(t *testing.T) {
			c := pgtest.Start(t, pgtest.Options{})
			e := newEnv(t, strings.ReplaceAll(pgRestoreConfig, "{{DSN}}", c.DSN("sslmode=disable")))
			in := newInput(t, e.path("in.log"))
			dump := filepath.Join(t.TempDir(), "tables.pgdump")
			var dumped int
			backup := func() {
				conn := pgConnect(t, c)
				if !gone {
					waitUntil(t, "rows of the burst", 60*time.Second, func() bool { return pgCount(conn, "exact_lines") > 3500 })
				}
				pgTool(t, c, "pg_dump", "-Fc", "-f", dump, "-t", "exact_lines", "-t", "exact_lines_marks",
					"-t", "plain_lines", "-t", "plain_lines_marks", "postgres")
			}
			restore := func() {
				pgTool(t, c, "pg_restore", "--clean", "--if-exists", "-d", "postgres", dump)
				dumped = pgCount(pgConnect(t, c), "exact_lines")
				if want := len(in.texts); dumped >= want {
					t.Fatalf("the dump holds %d rows of %d lines: no gap to catch up", dumped, want)
				}
			}
			r, _ := restoreRun(t, e, in, gone, false, backup, restore)
			checkRestored(t, "exact_lines", pgLines(t, c, "exact_lines"), in, gone, r)
			checkRestored(t, "plain_lines", pgLines(t, c, "plain_lines"), in, gone, r)
			t.Logf("restored exact_lines from the pg_dump: %d rows (input %d lines)", dumped, len(in.texts))
		})
	}
}

const filteredTailConfig = "instance: e2e-host\n" + cuHeader + cuPlainFeed + cuProcessors + `  - name: pg
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    createTable: true
    exclude: "^line-000029"
    retry: {initialMillis: 50, maxMillis: 400}
  - name: kafka
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: logs
    offsetsTopic: offs
    exactlyOnce: true
    exclude: "^line-000029"
    retry: {initialMillis: 50, maxMillis: 500}
  - name: nats
` + cuNatsBody + `    createStream: true
    exactlyOnce: true
    exclude: "^line-000029"
    retry: {initialMillis: 50, maxMillis: 400}
`

// TestEngineFilteredTailNotBehind (DESIGN §11: every built-in record
// advances over the lines a sink filtered, dead-lettered or was released
// from): a run whose last 100 lines every engine sink filters out
// (exclude) leaves each sink's done-through at the end of the input, not
// at its last row, record or message, so the next start is not "behind":
// no backward commit, nothing re-read, and each engine holds the 2900
// other lines once. Before, each was behind by the filtered tail at every
// start.
func TestEngineFilteredTailNotBehind(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "logs", "offs"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	broker := kc.ListenAddrs()[0]
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	cfg := strings.NewReplacer("{{DSN}}", c.DSN("sslmode=disable"), "{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(filteredTailConfig)
	e := newEnv(t, cfg)
	in := newInput(t, e.path("in.log"))
	in.appendLines(3000)
	for run := range 2 {
		d := e.start()
		r := d.waitSettled(120 * time.Second)
		d.stop()
		if strings.Contains(d.log(), "committing the pointer back") {
			t.Errorf("run %d: a catch-up over the filtered tail:\n%s", run, tail(d.log(), 3000))
		}
		if f := r.feed(t, "app"); run == 1 && f.Sequence != 0 {
			t.Errorf("run %d: %d lines read again at the start", run, f.Sequence)
		}
	}
	want := map[string]int{}
	for _, s := range in.texts[:2900] {
		want[s] = 1
	}
	nmsgs := map[string]int{}
	for _, m := range natstest.Messages(t, js, "EXACT") {
		nmsgs[string(m.Data)]++
	}
	for what, got := range map[string]map[string]int{"postgres": pgLines(t, c, "lines"),
		"kafka": kafkaCount(t, broker, "logs", 2900), "nats": nmsgs} {
		if !maps.Equal(got, want) {
			t.Errorf("%s holds %d distinct lines, want the 2900 unfiltered ones once", what, len(got))
		}
	}
}

// TestPostgresCatchUpKill9 (DESIGN §3 "the one backward commit", §11):
// after a restore from a pg_dump, kill -9 the daemon right after the
// catch-up's backward commit and at points while it re-reads the gap, and
// restart each time: both tables end with every line exactly once, the
// feed lossless.
func TestPostgresCatchUpKill9(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	e := newEnv(t, strings.ReplaceAll(pgRestoreConfig, "{{DSN}}", c.DSN("sslmode=disable")))
	in := newInput(t, e.path("in.log"))
	conn := pgConnect(t, c)
	dump := filepath.Join(t.TempDir(), "tables.pgdump")
	in.appendLines(2000)
	d := e.start()
	d.waitSettled(60 * time.Second)
	pgTool(t, c, "pg_dump", "-Fc", "-f", dump, "-t", "exact_lines", "-t", "exact_lines_marks",
		"-t", "plain_lines", "-t", "plain_lines_marks", "postgres")
	in.appendLines(40000)
	d.waitSettled(120 * time.Second)
	d.stop()

	var log strings.Builder
	for k, point := range []int{0, 5000, 20000} {
		pgTool(t, c, "pg_restore", "--clean", "--if-exists", "-d", "postgres", dump)
		killedDuringCatchUp(t, e, k, point, "the catch-up's log line", "committing the pointer back",
			func() int { return pgCount(conn, "exact_lines") })
		fmt.Fprintf(&log, "round %d: killed after %d rows re-read (exact_lines %d rows, plain_lines %d)\n",
			k, point, pgCount(conn, "exact_lines"), pgCount(conn, "plain_lines"))
		d = e.start()
		r := d.waitSettled(120 * time.Second)
		d.stop()
		if f := r.feed(t, "app"); !f.Lossless || f.LostTails != 0 {
			t.Fatalf("round %d: lossless %v lostTails %d after the restart", k, f.Lossless, f.LostTails)
		}
		checkTable(t, conn, "exact_lines", in)
		checkTable(t, conn, "plain_lines", in)
	}
	t.Log("\n" + log.String())
}
