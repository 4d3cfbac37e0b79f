package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/testutil/pgtest"
)

// reviewGzConfig: the exactlyOnce file sink the test restores, and a
// postgres sink (the inbox: one row per (instance, feed, epoch, position))
// that is never restored and holds every line.
const reviewGzConfig = "instance: e2e-host\n" + cuHeader + cuFeed + cuProcessors + cuExact + `  - name: pg
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    createTable: true
    retry: {initialMillis: 50, maxMillis: 400}
`

// gzipAway replaces the plain file at path by path+".gz" (what logrotate's
// compress does to a rotated generation: a new file, the plain one gone).
func gzipAway(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".gz", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// TestCatchUpThroughGzGenerationInboxOnce (DESIGN §11: "the
// rest of it from the sink's position, every later generation still on
// disk, then the current file up to the pointer (other sinks skip what they
// hold through AlreadyApplied ...)"; §4: a .gz generation is read by its
// decompressed bytes; postgres: "every line lands once, with or without
// exactlyOnce"): three generations, logrotate's `compress` (no
// delaycompress) so both rotated ones are .gz; the exactlyOnce file sink is
// restored into the oldest. The catch-up reads the middle generation
// (in.log.1.gz) again — a file the postgres inbox already holds under the
// middle epoch — but source/file's knownEpoch refuses a .gz reader (and a
// compressed file has a new file key anyway), so it is read under a NEW
// epoch, and the inbox's unique key (instance, feed, epoch, position) no
// longer matches: every line of that generation lands twice.
func TestCatchUpThroughGzGenerationInboxOnce(t *testing.T) {
	c, _, _, in := gzCatchUp(t)
	got, dups := pgDuplicates(t, c, in)
	if dups > 0 || len(got) != len(in.texts) {
		t.Errorf("postgres inbox (never restored) after another sink's catch-up through in.log.1.gz: %d distinct lines of %d, %d lines twice (rows %d)",
			len(got), len(in.texts), dups, pgCount(pgConnect(t, c), "lines"))
	}
}

// gzCatchUp runs the scenario of
// TestCatchUpThroughGzGenerationInboxOnce up to the catch-up's
// end (settled, stopped); the restored exactlyOnce output is checked.
func gzCatchUp(t *testing.T) (*pgtest.Cluster, *env, *daemon, *input) {
	c := pgtest.Start(t, pgtest.Options{})
	conn := pgConnect(t, c)
	e := newEnv(t, strings.ReplaceAll(reviewGzConfig, "{{DSN}}", c.DSN("sslmode=disable")))
	in := newInput(t, e.path("in.log"))
	exact := e.path("exact.log")
	d, _, bak := backedUpThenMore(t, e, in, 1000, 500) // gen 1: lines 0..1499
	inTable := func(want int) bool { return pgCount(conn, "lines") == want }
	rotateInput(t, d, in, exact, 700, 2200, inTable) // gen 2: lines 1500..2199
	rotateInput(t, d, in, exact, 300, 2500, inTable) // gen 3 (current): lines 2200..2499
	d.stop()
	eachRowOnce(t, c)
	bak.restore()
	gen1, gen2, gen3 := readGenerations(in)
	gzipAway(t, in.path+".2")
	time.Sleep(50 * time.Millisecond)
	gzipAway(t, in.path+".1")
	time.Sleep(2100 * time.Millisecond)

	d, _, f := settledRun(t, e)
	t.Logf("after the catch-up: lossless %v lostTails %d sequence %d", f.Lossless, f.LostTails, f.Sequence)
	sameBytes(t, "restored exactlyOnce output caught up through the .gz generations", exact, append(append(bytes.Clone(gen1), gen2...), gen3...))
	return c, e, d, in
}

// TestCatchUpPostgresDumpRestoredAfterGzCatchUp (DESIGN §11:
// "A sink is behind only when its epoch equals the pointer's and its
// position is smaller: the pointer is committed back"; issue 14 acceptance
// 4, a PostgreSQL dump restored): after the catch-up of
// TestCatchUpThroughGzGenerationInboxOnce the table holds rows
// of the new epoch in.log.1.gz was read under; the epochs file first names
// that epoch after the current file's, to which the pointer returned.
// Later the operator takes a pg_dump, 1,000 more lines are delivered, and
// the dump is restored while tailfeed is stopped: the table is behind the
// pointer in the pointer's own epoch. internal/catchup takes the sink's
// mark of that newer-named epoch for "ahead of the pointer" and returns no
// point for the whole sink: nothing is re-read, the 1,000 lines are
// missing from the table, and the feed says lossless.
func TestCatchUpPostgresDumpRestoredAfterGzCatchUp(t *testing.T) {
	c, e, _, in := gzCatchUp(t)
	dump := filepath.Join(t.TempDir(), "lines.pgdump")
	pgTool(t, c, "pg_dump", "-Fc", "-f", dump, "-t", "lines", "-t", "lines_marks", "postgres")
	d := e.start()
	in.appendLines(1000)
	d.waitFor("1000 more lines", 60*time.Second, func(r *report) bool {
		return r.feed(t, "app").Settled && len(pgLines(t, c, "lines")) == len(in.texts)
	})
	d.stop()
	pgTool(t, c, "pg_restore", "--clean", "--if-exists", "-d", "postgres", dump)
	d, _, f := settledRun(t, e)
	got := pgLines(t, c, "lines")
	missing := 0
	for _, s := range in.texts {
		if got[s] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("postgres restored from a dump is not caught up: %d of %d lines missing from the table; catch-up in the log: %v; lossless %v",
			missing, len(in.texts), strings.Contains(d.log(), "committing the pointer back"), f.Lossless)
		ep, _ := os.ReadFile(e.path("state/feeds/app.epochs"))
		t.Logf("pointer epoch %v; epochs file:\n%s", f.Pointer.Epoch, ep)
	}
}

// TestCatchUpDowngradedLinesInboxOnce (DESIGN §4: lines
// appended to an old file after the switch are delivered downgraded, each
// old file's late lines under an epoch of their own, so that
// "<feed>:<epoch>:<position> stays unique for every sink"; §11 other sinks
// skip what they hold): after a rotation, 200 late lines are appended to
// in.log.1 and delivered (downgraded); the postgres inbox stores them. The
// exactlyOnce file sink is then restored into in.log.1's epoch: the
// catch-up reads in.log.1 from the sink's position to its END — the late
// lines included, now under in.log.1's epoch, past that epoch's end — so
// the never-restored inbox, whose unique key holds the late lines' own
// epoch, stores every late line a second time.
func TestCatchUpDowngradedLinesInboxOnce(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	conn := pgConnect(t, c)
	cfg := strings.ReplaceAll(reviewGzConfig, "{{DSN}}", c.DSN("sslmode=disable"))
	cfg = strings.ReplaceAll(cfg, "rotateWaitMillis: 200", "rotateWaitMillis: 5000")
	e := newEnv(t, cfg)
	in := newInput(t, e.path("in.log"))
	exact := e.path("exact.log")
	d, _, bak := backedUpThenMore(t, e, in, 3000, 1000)
	old := e.path("in.log.1")
	rotateOnce(t, in, 2000)
	d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
		return countLines(t, exact, 0) == 6000
	})
	var late strings.Builder
	for i := range 200 {
		fmt.Fprintf(&late, "late-%04d\n", i)
	}
	appendRaw(t, old, late.String())
	r := d.waitFor("the late lines delivered", 60*time.Second, func(r *report) bool {
		return r.feed(t, "app").Settled && pgCount(conn, "lines") == 6200
	})
	t.Logf("late lines delivered: downgraded %d", r.feed(t, "app").Downgraded)
	d.stop()
	bak.restore()
	d, _, _ = settledRun(t, e)
	if !strings.Contains(d.log(), "committing the pointer back") {
		t.Fatalf("no catch-up")
	}
	got := pgLines(t, c, "lines")
	dups := 0
	for l, n := range got {
		if n > 1 {
			dups += n - 1
			if dups == 1 {
				t.Logf("e.g. %q %d times", l, n)
			}
		}
	}
	if dups > 0 || len(got) != 6200 {
		t.Errorf("postgres inbox (never restored) after another sink's catch-up: %d distinct lines of 6200, %d rows are second copies", len(got), dups)
	}
}

// TestCatchUpThroughCopytruncateGenerationInboxOnce: as
// TestCatchUpThroughGzGenerationInboxOnce with logrotate's
// copytruncate instead of compress: each rotated generation is a copy (a
// new file key) of the file at the path, which is truncated in place and
// keeps its key. The catch-up into the oldest generation reads the middle
// one (in.log.1, a copy whose key no epochs line names) under a new epoch:
// the never-restored postgres inbox stores its 700 lines twice.
func TestCatchUpThroughCopytruncateGenerationInboxOnce(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	conn := pgConnect(t, c)
	e := newEnv(t, strings.ReplaceAll(reviewGzConfig, "{{DSN}}", c.DSN("sslmode=disable")))
	in := newInput(t, e.path("in.log"))
	exact := e.path("exact.log")
	d, _, bak := backedUpThenMore(t, e, in, 1000, 500)
	copytruncate := func(n, want int) {
		t.Helper()
		if _, err := os.Stat(in.path + ".1"); err == nil {
			if err := os.Rename(in.path+".1", in.path+".2"); err != nil {
				t.Fatal(err)
			}
		}
		copyFile(t, in.path, in.path+".1")
		if err := os.Truncate(in.path, 0); err != nil {
			t.Fatal(err)
		}
		in.ends = nil
		in.appendLines(n)
		d.waitFor(fmt.Sprintf("%d lines written", want), 60*time.Second, func(r *report) bool {
			return r.feed(t, "app").Settled && countLines(t, exact, 0) == want && pgCount(conn, "lines") == want
		})
	}
	copytruncate(700, 2200)
	copytruncate(300, 2500)
	d.stop()
	eachRowOnce(t, c)
	bak.restore()
	gen1, gen2, gen3 := readGenerations(in)
	time.Sleep(2100 * time.Millisecond)
	_, _, f := settledRun(t, e)
	t.Logf("after the catch-up: lossless %v lostTails %d sequence %d", f.Lossless, f.LostTails, f.Sequence)
	sameBytes(t, "restored exactlyOnce output", exact, append(append(bytes.Clone(gen1), gen2...), gen3...))
	got, dups := pgDuplicates(t, c, in)
	if dups > 0 || len(got) != len(in.texts) {
		t.Errorf("postgres inbox (never restored) after another sink's catch-up through the copytruncate generation in.log.1: %d distinct lines of %d, %d lines twice",
			len(got), len(in.texts), dups)
	}
}

// eachRowOnce fails t unless every line is in the inbox table "lines"
// once (the precondition before a restore).
func eachRowOnce(t *testing.T, c *pgtest.Cluster) {
	t.Helper()
	for s, n := range pgLines(t, c, "lines") {
		if n != 1 {
			t.Fatalf("precondition: %q %d times in the table before the restore", s, n)
		}
	}
}

// pgDuplicates reads the inbox table "lines" and counts the second (and
// later) rows of the input's lines.
func pgDuplicates(t *testing.T, c *pgtest.Cluster, in *input) (map[string]int, int) {
	got := pgLines(t, c, "lines")
	dups := 0
	for _, s := range in.texts {
		if got[s] > 1 {
			dups += got[s] - 1
		}
	}
	return got, dups
}
