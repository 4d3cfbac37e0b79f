package e2e

// Review S7 (rev-a) of r1.diff. Tests named TestRevS7... are findings: each
// fails on the commit under review; its comment gives the rule, the
// expectation and what the binary does.

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/testutil/pgtest"
)

// TestRevS7TwoFileSinksSymlinkedDirNotYetMade checks DESIGN §6 file sink
// "Two file sinks on one path are a config error" as CheckOutputOutputs
// (54cec6e) claims to apply it: "the same path once the symlinks of both
// are followed as far as they lead (a symlinked directory, a link to an
// output not created yet)". Sink a writes ./real/sub/out.log, sink b
// ./link/sub/out.log, where link -> real and the directory sub does not
// exist yet (the file sink makes it: os.MkdirAll at open). Both name one
// file as soon as the sinks open. Expected: `validate` exits 2 naming
// processors[1].path. Observed: resolveAsFar cannot EvalSymlinks a
// directory with a missing component, keeps ./link/sub as written, the
// two paths differ and `validate` says ok (and `run` starts; both sinks
// append to the one file).
func TestRevS7TwoFileSinksSymlinkedDirNotYetMade(t *testing.T) {
	e := twoFileSinksEnv(t, "./real/sub/out.log", "./link/sub/out.log")
	if err := os.Mkdir(e.path("real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", e.path("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.path("in.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// run (validate checks the file only, DESIGN §9).
	d := e.spawn()
	if !exitsWithin(d, 15*time.Second) {
		d.kill()
		t.Fatalf("run of two file sinks on ./real/sub/out.log and ./link/sub/out.log (link -> real, sub not made yet) started; want exit 2 naming processors[1].path")
	}
	wantExit2NamingSecondPath(t, d)
}

// TestRevS7CatchUpKnownEpochRewrittenFileLost checks DESIGN §4/§3: a file
// truncated or rewritten while stopped is read "from its start under a new
// epoch" (re-read, never skip), and §2/§11 (every line reaches every
// subscriber; postgres ON CONFLICT (instance, feed, epoch, position) makes
// only a RE-delivery a no-op). c832f93 reads the file at the path under
// the epoch the epochs file names for it when a catch-up's older
// generation is gone (knownEpoch): that epoch is matched by file key and
// the first bytes recorded when the epoch began — none when the file was
// empty at the switch (logrotate's create) — not by the content read
// under it.
//
// in.log (E1, 1000 lines) is rotated to in.log.1 and an empty in.log is
// made; the pointer moves to it (E2) and 300 lines are read. While
// stopped: table lines (sink pg) loses its rows past line 499 of E1 and
// every E2 row (restored), in.log.1 is deleted, and in.log is truncated in
// place (same inode) and 400 NEW lines are written to it. Expected: the
// new lines are read under a new epoch and land in lines2 (sink pg2, never
// restored) and the exactlyOnce file sink other.log, each once. Observed:
// the catch-up resets the pointer to (E2, 0) on the rewritten file; the new
// lines get the (E2, position) identities of the old ones, so pg2's inbox
// drops them (ON CONFLICT DO NOTHING) and the exactlyOnce file sink skips
// them (AlreadyApplied): lines lost for never-restored subscribers.
func TestRevS7CatchUpKnownEpochRewrittenFileLost(t *testing.T) {
	c, e, in := audPgTwoStart(t)
	in.appendLines(1000)
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	epoch1 := r.feed(t, "app").Pointer.Epoch
	ends1 := append([]int64(nil), in.ends...)
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in.path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in.ends = nil
	d.waitFor("the pointer on the new, empty in.log", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.Pointer != nil && f.Pointer.Epoch != epoch1
	})
	in.appendLines(300)
	d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Epoch != epoch1 && f.Pointer.Offset == in.size()
	})
	d.stop()
	c.Psql(fmt.Sprintf(`DELETE FROM lines WHERE (epoch = '%s' AND position > %d) OR epoch <> '%s'`, epoch1, ends1[499], epoch1))
	if err := os.Remove(in.path + ".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(in.path, 0); err != nil {
		t.Fatal(err)
	}
	in.ends = nil
	first := len(in.texts)
	in.appendLines(400)
	fresh := in.texts[first:]
	d = e.start()
	d.waitFor("settled at the end of the rewritten in.log", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == in.size()
	})
	d.stop()
	got := pgLines(t, c, "lines2")
	missing := 0
	for _, s := range fresh {
		if got[s] == 0 {
			missing++
		}
	}
	other, _ := os.ReadFile(e.path("other.log"))
	missingOther := 0
	for _, s := range fresh {
		if !strings.Contains(string(other), s+"\n") {
			missingOther++
		}
	}
	if missing != 0 || missingOther != 0 {
		t.Errorf("%d of the 400 lines written to the rewritten in.log missing from lines2 (pg2, never restored), %d from the exactlyOnce file sink; want 0, 0; %q",
			missing, missingOther, grepLines(d.log(), "catch-up"))
	}
}

// TestRevS7ReleasedFirstBatchAfterRestartReReadAtNextStart checks the same
// rule as TestRevS7ReleasedFirstLinesOfEpochReReadAtNextStart (DESIGN §11
// "the last line it applied, filtered, dead-lettered or was released from
// (every built-in record advances over such lines)"; §2 no re-delivery
// but a crash's uncommitted lines and a restored sink's catch-up) in the
// commonest shape of an outage: it spans a restart of tailfeed. 1000
// lines reach the table; tailfeed is stopped cleanly and started again
// (settled, nothing new); then the postgres server goes down, 100 lines
// arrive (same file, same epoch), pg is FENCED and the operator releases
// them. Stopped, server up,
// started. Expected: nothing re-read (sequence 0), no duplicate in the
// plain file sink. Observed: the released batch is the first the group
// handled in this run, so Group.noteRelease knows no "after" (lastOK is
// per run, -1) and records nothing; the next start finds pg behind the
// pointer and re-delivers the 100 released lines to every subscriber.
func TestRevS7ReleasedFirstBatchAfterRestartReReadAtNextStart(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable connect_timeout=2")
	in.appendLines(1000)
	settledRun(t, e)
	d, _ := startThenPgDown(t, c, e)
	in.appendLines(100)
	releaseThrough(t, d, in, 100)
	d, f := restartAfterRelease(t, c, e, d)
	wantNothingReRead(t, d, f, e, in, "start after a release in the first batch of a run")
}

// TestRevS7PostgresEncodedLiteralPasswordNotWarned checks DESIGN §11
// Secrets: "a literal secret is accepted with a WARN at start naming the
// key", as 84ddfb8 claims to keep it: "a dsn with a ${VAR} reference that
// still holds its password as written (postgres://u:pw@${HOST}/db) keeps
// the literal-password WARN". The file writes the password literally, but
// percent-encoded as a URL requires for '@' (postgres://postgres:
// pw%40x7q@${TF_PGHOSTPORT}/postgres). Expected: the WARN naming
// processors[0].dsn (the password is in the file), and the password
// nowhere in the log. Observed: decode compares the written text with the
// parsed (decoded) password "pw@x7q", does not find it, calls the DSN
// DSNReferenced and the WARN is never given: a literal secret of the file
// accepted silently.
func TestRevS7PostgresEncodedLiteralPasswordNotWarned(t *testing.T) {
	const pw = "pw@x7q"
	c := pgtest.Start(t, pgtest.Options{Password: pw})
	e := audPgEnv(t, c, "e2e-host", "postgres://postgres:pw%40x7q@${TF_PGHOSTPORT}/postgres?sslmode=disable")
	in := newInput(t, e.path("in.log"))
	in.appendLines(10)
	d := e.startIn(e.dir, fmt.Sprintf("TF_PGHOSTPORT=127.0.0.1:%d", c.Port))
	d.waitSettled(60 * time.Second)
	d.stop()
	if n := c.Psql(`SELECT count(*) FROM lines`); n != "10" {
		t.Fatalf("precondition: %s rows, want 10", n)
	}
	log := d.log()
	if !strings.Contains(log, "literal password") || !strings.Contains(grepLines(log, "literal password"), "processors[0].dsn") || strings.Contains(log, pw) {
		t.Errorf("a DSN whose file text holds the password (percent-encoded) beside a ${VAR} host: want the literal-password WARN naming processors[0].dsn; got %q",
			grepLines(log, "password"))
	}
}

// TestRevS7ReleasedFirstLinesOfEpochReReadAtNextStart checks DESIGN §11:
// "At start it reports its done-through mark (epoch, position): the last
// line it applied, filtered, dead-lettered or was released from (every
// built-in record advances over such lines)" and §2 (the only re-delivery
// besides a crash's uncommitted lines is a restored sink's catch-up), for
// the case c7f5680 claims to fix ("lines a sink is released from while it
// cannot record them count as done at the next start").
//
// The postgres server goes down after every line of in.log (epoch E1) is
// in the table; in.log is rotated to in.log.1 and the new in.log (epoch
// E2) gets 100 lines; pg is FENCED and the operator releases them (POST
// /admin/release/app/pg): released 100, settled, the pointer at the end of
// E2. tailfeed is stopped cleanly, the server started, tailfeed started.
// Nothing was restored. Expected: no backward commit, nothing re-read
// (sequence 0), the plain file sink gets no duplicate. Observed: the
// released lines are the first of their epoch, so Group.noteRelease has no
// "after" (-1) and records nothing in released.json; at the start pg's
// mark is still the end of E1, the catch-up re-reads E2 from its start and
// every subscriber receives the 100 released lines again.
func TestRevS7ReleasedFirstLinesOfEpochReReadAtNextStart(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable connect_timeout=2")
	in.appendLines(1000)
	d, r := startThenPgDown(t, c, e)
	epoch1 := r.feed(t, "app").Pointer.Epoch
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	in.ends = nil
	in.appendLines(100)
	f := releaseThrough(t, d, in, 100)
	if f.Pointer.Epoch == epoch1 {
		t.Fatalf("precondition: after the release the pointer is %+v (input size %d)", f.Pointer, in.size())
	}
	d, f = restartAfterRelease(t, c, e, d)
	wantNothingReRead(t, d, f, e, in, "start after a release of an epoch's first lines")
}
