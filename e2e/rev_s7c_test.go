package e2e

// Review S7 (rev-c) of r3.diff. Tests named TestRevS7c... are findings:
// each fails on the commit under review; its comment gives the rule, the
// expectation and what the product does.

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/testutil/pgtest"
)

// TestRevS7cPostgresDSNLiteralPasswordBesideBareReference checks DESIGN
// §11 Secrets "a literal secret is accepted with a WARN at start naming
// the key" as f8732b4 claims it: "a literal secret is what the file itself
// supplies ... postgres' dsn password (parsed from the file's text)". A
// DSN written as `${TF_REV_PGBASE} password=hunter22` (the base from the
// environment, the password literal in the file) holds the file's own
// password. Expected: Settings.PasswordLiteral true (the start WARN).
// Observed: literalPassword reads FileText "\x00 password=hunter22" and
// takes "\x00 password" as the first keyword (the environment's mark is
// not skipped as a token of its own), so the password is never seen:
// PasswordLiteral false, no WARN. Same for a URL whose scheme and host
// come from the environment and whose query holds the password
// (`${TF_REV_PGURL}?password=hunter22`). At 3b0e33c, the parent, both
// DSNs were WARNed (the password as written in the file): a regression.
func TestRevS7cPostgresDSNLiteralPasswordBesideBareReference(t *testing.T) {
	t.Setenv("TF_REV_PGBASE", "host=db user=t dbname=logs")
	t.Setenv("TF_REV_PGURL", "postgres://u@db/logs")
	wantPasswordLiteral(t, "'${TF_REV_PGBASE} password=hunter22'", "'${TF_REV_PGURL}?password=hunter22'")
}

// TestRevS7cTwoFileSinksThroughDanglingDirLink checks DESIGN §6 file sink
// "Two file sinks on one path are a config error" as 41ab502 claims to
// apply it through directories not made yet ("follow the symlinks of an
// output path's longest existing ancestor, so two file sinks writing one
// file through a symlinked directory whose subdirectory the sink will make
// are refused too"). Sink a writes ./real/sub/out.log, sink b
// ./link/out.log, where link -> real/sub and sub does not exist yet: sink
// a's open makes it (os.MkdirAll), and from then on ./link/out.log is
// ./real/sub/out.log. Expected: run exits 2 naming processors[1].path.
// Observed: evalExisting cannot resolve ./link (a dangling link: its
// target is a directory not made yet), climbs to its parent and keeps
// ./link as written; the two paths differ and run starts — both sinks
// append to one file (every line twice). (Not fixed by the change: the
// longest existing ancestor stops at the dangling link itself.)
func TestRevS7cTwoFileSinksThroughDanglingDirLink(t *testing.T) {
	e := twoFileSinksEnv(t, "./real/sub/out.log", "./link/out.log")
	if err := os.Mkdir(e.path("real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real/sub", e.path("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.path("in.log"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := e.spawn()
	if !exitsWithin(d, 15*time.Second) {
		out := writtenTwice(e.path("real/sub/out.log"))
		d.kill()
		t.Fatalf("run of two file sinks on ./real/sub/out.log and ./link/out.log (link -> real/sub, sub not made yet) started; want exit 2 naming processors[1].path; real/sub/out.log holds %q", out)
	}
	wantExit2NamingSecondPath(t, d)
}

// TestRevS7cGlobReleasedFirstBatchAfterRestartReReadAtNextStart checks
// DESIGN §11 "the last line it applied, filtered, dead-lettered or was
// released from (every built-in record advances over such lines)" and §2
// (no re-delivery but a crash's uncommitted lines and a restored sink's
// catch-up), as d7c0313 claims to apply it: "a run's first lines released
// are recorded too — the group starts from the committed pointer
// (SetStart)". The same outage as TestRevS7ReleasedFirstBatchAfterRestart
// (1000 lines in the table; a clean restart; the server down; 100 lines;
// pg FENCED and released; stopped; server up; started) on a glob feed
// (path ./in/*.log, one file in/a.log). Expected: nothing re-read
// (sequence 0), no duplicate in the plain file sink. Observed: Feed.start
// calls SetStart only when f.ptr != nil (a single-file feed); a glob
// feed's groups start with no "after", the release of the run's first
// batch is not recorded, and the next start re-delivers the 100 released
// lines to every subscriber.
func TestRevS7cGlobReleasedFirstBatchAfterRestartReReadAtNextStart(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	tmpl := strings.Replace(strings.ReplaceAll(audPgTmpl, "{{INSTANCE}}", "instance: e2e-host\n"), "path: ./in.log", "path: ./in/*.log", 1)
	e := newEnv(t, strings.ReplaceAll(tmpl, "{{DSN}}", c.DSN("sslmode=disable connect_timeout=2")))
	if err := os.Mkdir(e.path("in"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := newInput(t, e.path("in/a.log"))
	in.appendLines(1000)
	settledRun(t, e)
	d, _ := startThenPgDown(t, c, e)
	in.appendLines(100)
	releaseHeld(t, d, 100)
	d, f := restartAfterRelease(t, c, e, d)
	wantNothingReRead(t, d, f, e, in, "glob feed, start after a release in the first batch of a run")
}

// TestRevS7cPostgresMarksNameIsAnotherSinksTable checks DESIGN §11
// Failures (only a record the engine rejects follows onFailure; a table
// the config accepts works) and the postgres sink's "every line lands
// once", as 9b16d5e names the marks table: "<table>_marks cut to 63 bytes;
// hash only where the cut is the table itself". For a 58-byte table A the
// cut is A+"_mark" — a valid 63-byte table name that another postgres
// sink of the config may use (its own marks hashed, as 63 bytes long).
// At 3b0e33c A's marks were hashed (over 57 bytes) and the two never met.
// Expected (as decided in the fix): a config error naming both, since the
// two would write each other's rows; before, both sinks started.
// Observed: A's marks and B's lines are one table: one sink's writes fail
// at every retry (a marks row has no path/line, or a lines table has no
// updated_at) and the feed never settles.
func TestRevS7cPostgresMarksNameIsAnotherSinksTable(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	a := strings.Repeat("t", 58)
	b := a + "_mark"
	cfg := strings.NewReplacer("{{INSTANCE}}", "instance: rev-host\n", "{{DSN}}", c.DSN("sslmode=disable"), "table: lines", "table: "+a,
		"  - name: plain\n", "  - name: pgb\n    feed: app\n    type: postgres\n    dsn: \""+c.DSN("sslmode=disable")+"\"\n    table: "+b+
			"\n    createTable: true\n    retry: {initialMillis: 50, maxMillis: 400}\n  - name: plain\n").Replace(audPgTmpl)
	e := newEnv(t, cfg)
	audWrite(t, e.path("in.log"), "one\ntwo\nthree\n")
	// Decided: a config error naming both (the two DSNs may be one
	// database; a rename of one table settles it) — never two sinks
	// writing each other's rows.
	d := e.spawn()
	deadline := time.Now().Add(15 * time.Second)
	for !d.exited() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !d.exited() {
		d.kill()
		t.Fatalf("two postgres sinks on tables %s and %s (A's marks, cut to 63 bytes, is B): started; want a config error", a, b)
	}
	if d.code != 2 || !strings.Contains(d.log(), "is the marks table of postgres processor") {
		t.Fatalf("run exited %d, want 2 naming the marks table:\n%s", d.code, tail(d.log(), 2000))
	}
}
