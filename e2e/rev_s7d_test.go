package e2e

// Independent test of today's changes (534671a..HEAD) around crashes and
// restarts: released.json, the write-ahead losses entry of a reload, the
// webhook's early published progress, kafka's offsets read at start.
// Tests named TestRevS7D... are findings: each fails on the code it was
// written against; its comment gives the rule, the expectation and what
// the binary does.

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/testutil/pgtest"
)

// TestRevS7DReleasedFirstLinesOfNewGenerationReReadAtNextStart checks
// DESIGN §11: "At start it reports its done-through mark (epoch,
// position): the last line it applied, filtered, dead-lettered or was
// released from (every built-in record advances over such lines ...)" and
// §2: "the only other re-delivery is a restored sink's catch-up", for the
// lines released.json (c7f5680, d7c0313) is meant to keep.
//
// 1000 lines reach the table. The postgres server goes down; the input is
// rotated (in.log -> in.log.1, which stays on disk) and 100 lines arrive in
// the new generation; pg is FENCED on them and the operator releases them
// (released 100, settled, pointer at the end of the new generation).
// tailfeed is stopped cleanly, the server started again, tailfeed started.
// Nothing was restored. Expected: pg counts as done through the released
// lines; nothing is re-read (sequence 0) and the plain file sink gets no
// duplicate. Observed: Group.noteRelease records nothing when the released
// lines are the first of their epoch the group handled ("the epoch's first
// lines handed over: nothing to compare a mark with"), so released.json
// holds no range; pg's only record is the old generation's end, an older
// epoch still on disk, so the start catches it up "from that generation
// onward": the 100 released lines are read again and delivered a second
// time to every subscriber.
func TestRevS7DReleasedFirstLinesOfNewGenerationReReadAtNextStart(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable connect_timeout=2")
	in.appendLines(1000)
	d, _ := startThenPgDown(t, c, e)
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	in.ends = nil
	in.appendLines(100)
	releaseThrough(t, d, in, 100)
	d, f := restartAfterRelease(t, c, e, d)
	wantNothingReRead(t, d, f, e, in, "start after a release of a new generation's first lines")
}

// TestRevS7DGlobReleasedFirstBatchOfRunReReadAtNextStart checks the same
// rule (DESIGN §11 done-through mark "... or was released from (every
// built-in record advances over such lines)"; §2 "the only other
// re-delivery is a restored sink's catch-up") on a glob feed (§10), where
// d7c0313 ("a run's first lines released are recorded too — the group
// starts from the committed pointer (SetStart)") does not reach: Feed.start
// calls SetStart only for a single-file feed (f.ptr != nil).
//
// Glob feed ./in/*.log, one file: 1000 lines reach the table, a clean run
// over them; tailfeed started again (settled), the postgres server goes
// down, 100 lines arrive, pg is FENCED and the operator releases them
// (released 100, settled). Stopped, server up, started. Nothing was
// restored. Expected: nothing re-read, no duplicate in the plain file sink.
// Observed: the released batch is the first the group handled in this run
// of that stream, noteRelease knows no "after" and records nothing; the
// next start finds pg behind the stream's pointer and re-delivers the 100
// released lines to every subscriber.
func TestRevS7DGlobReleasedFirstBatchOfRunReReadAtNextStart(t *testing.T) {
	c, e := revGlobPgStart(t)
	in := newInput(t, e.path("in/a.log"))
	in.appendLines(1000)
	settledRun(t, e)
	d, _ := startThenPgDown(t, c, e)
	in.appendLines(100)
	releaseHeld(t, d, 100)
	d, _ = restartAfterRelease(t, c, e, d)
	if dups := duplicateLines(t, in, e.path("plain.log")); dups != 0 || strings.Contains(d.log(), "behind") {
		t.Errorf("glob feed, start after a release in the first batch of a run, nothing restored: plain file sink %d duplicates (want 0); %q",
			dups, grepLines(d.log(), "behind"))
	}
}

// TestRevS7DGlobTwoFilesReleasedMidRunReReadAtNextStart checks the same
// rule (DESIGN §11 done-through mark "... or was released from"; §2 "the
// only other re-delivery is a restored sink's catch-up") on a glob feed
// of two files in the middle of a run (no restart before the release).
// Group.noteRelease compares the released batch's epoch with the epoch of
// the last batch the group handled (one lastEnd/lastEpoch per group, not
// per stream): on a glob feed the batches of two files alternate, so a
// batch of a.log released after one of b.log has no "after" and nothing
// is recorded in released.json.
//
// Glob feed ./in/*.log, a.log and b.log: 1000 lines each reach the table
// (one run, settled). The postgres server goes down; 100 lines go to
// b.log, then 100 to a.log; pg is FENCED and the operator releases the
// backlog (released 200, settled). Stopped, server up, started; nothing
// restored. Expected: nothing re-read, no duplicate in the plain file
// sink. Observed: pg found behind a stream's pointer, released lines
// delivered again to every subscriber.
func TestRevS7DGlobTwoFilesReleasedMidRunReReadAtNextStart(t *testing.T) {
	c, e := revGlobPgStart(t)
	a, b := newInput(t, e.path("in/a.log")), newInput(t, e.path("in/b.log"))
	a.appendLines(1000)
	b.texts = make([]string, 0)
	// b's lines are told from a's by an offset in their numbering.
	for range 5000 {
		b.texts = append(b.texts, "")
	}
	b.appendLines(1000)
	d, _ := startThenPgDown(t, c, e)
	b.appendLines(100)
	time.Sleep(500 * time.Millisecond)
	a.appendLines(100)
	releaseHeld(t, d, 200)
	d, _ = restartAfterRelease(t, c, e, d)
	dups := duplicateLines(t, a, e.path("plain.log")) + duplicateLines(t, b, e.path("plain.log"))
	if dups != 0 || strings.Contains(d.log(), "behind") {
		t.Errorf("glob feed of two files, start after a release mid-run, nothing restored: plain file sink %d duplicates (want 0); %q",
			dups, grepLines(d.log(), "behind"))
	}
}

// revGlobPgStart starts a private PostgreSQL and an env on audPgTmpl with the glob feed ./in/*.log (the directory made).
func revGlobPgStart(t *testing.T) (*pgtest.Cluster, *env) {
	t.Helper()
	c := pgtest.Start(t, pgtest.Options{})
	cfg := strings.NewReplacer("{{INSTANCE}}", "instance: e2e-host\n", "{{DSN}}", c.DSN("sslmode=disable connect_timeout=2"),
		"    path: ./in.log\n    readStrategy: COMMITTED\n    rotateWaitMillis: 200\n    pollIntervalMillis: 50\n",
		"    path: ./in/*.log\n    readStrategy: COMMITTED\n    scanIntervalMillis: 200\n    pollIntervalMillis: 50\n").Replace(audPgTmpl)
	e := newEnv(t, cfg)
	if err := os.MkdirAll(e.path("in"), 0o755); err != nil {
		t.Fatal(err)
	}
	return c, e
}

// releaseHeld waits for feed app to stall on processor pg (its server
// down), then gives pg's backlog up (POST /admin/release/app/pg) until the
// feed is settled with want lines released — the set-up of the release
// tests — and returns the feed's report.
func releaseHeld(t *testing.T, d *daemon, want uint64) feedReport {
	t.Helper()
	d.waitFor("the stall", 60*time.Second, func(r *report) bool { return r.feed(t, "app").Stalled != nil })
	var r *report
	var f feedReport
	for k := 0; k < 100; k++ {
		request(t, d, http.MethodPost, "/admin/release/app/pg", "tok", nil)
		r, _ = statusRaw(t, d)
		f = r.feed(t, "app")
		if r.Settled && f.Released == want {
			return f
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("precondition: after the release settled %v released %d (want %d)", r.Settled, f.Released, want)
	return f
}
