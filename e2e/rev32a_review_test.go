package e2e

// Review 32a of commit 0f9f4ad (a waiting file renamed out of the glob
// stays on the unread list under the path it left: leftFrom, head;
// countUnreadGone skips this run's own start entries). Its three findings
// (TestRev32AX…) failed on 0f9f4ad and pass since: A and C by ef249de
// (listedOrder; a stop lists a listed file beside its path), B by
// followBeside. These tests run in the first e2e shard (Makefile
// E2E_SHARD: ^TestRev32).

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// rev32AFirstRun: 2,000 filler files and z.log (z #0..#2, sorted last,
// maxOpenFiles 2); a first run that lists z.log (waiting), then z.log is
// renamed z.log.1 (out of the glob) and the list's delay passes. Returns
// the env, the running daemon and z.log's key; skips when z.log was read.
// At 2,000 fillers a quiet machine once read them all and z.log.1 within
// the 2.5 s (about 1.3 ms a file once the harness stopped taking a core of
// its own) and the caller skipped; 4,000 fillers took over 5 minutes in CI
// (the time grows faster than the count), so 2,000 it stays: a rare skip
// on a quiet machine, said as such, over a timeout in CI.
func rev32AFirstRun(t *testing.T, fillers int) (*env, *daemon, uint64) {
	t.Helper()
	e, d, _, k := rev32RenamedOutWhileWaiting(t, fillers)
	time.Sleep(2500 * time.Millisecond)
	if rev31BCounts(e)["z #0"] > 0 {
		t.Skip("z.log.1 read before the case could be set up")
	}
	return e, d, k
}

func rev32AList(e *env) string {
	b, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
	return strings.Join(rev31CGrep(string(b), "z.log"), " | ")
}

// TestRev32AOKLeftThenDeletedCountedOnce: z.log waits (listed), is
// renamed z.log.1 (kept listed under z.log), then z.log.1 is deleted. At
// its turn the first run counts it (neverRead, one ledger entry) and the
// running list drops it (probed because leftBeside has no existence
// check: the entry does not linger); a kill -9 3 s later; the second start
// does not count it again (one ledger entry, lostTails 0). ~15 s.
func TestRev32AOKLeftThenDeletedCountedOnce(t *testing.T) {
	e, d, k := rev32AFirstRun(t, 2000)
	if err := os.Remove(e.path("logs/z.log.1")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the fillers read", 300*time.Second, func() bool { return rev31BCounts(e)["f1999 #2"] > 0 })
	// (Or read: on a loaded machine z.log.1 can get its turn between the
	// check above and the deletion — read to its end and committed,
	// nothing lost, the case not set up; the thirty-eighth session's CI5.
	// Neither read nor counted is the silent loss: a timeout.)
	waitUntil(t, "z.log counted by the first run", 30*time.Second, func() bool {
		return len(rev31ALossesNaming(e, "z.log")) > 0 || rev31BCounts(e)["z #0"] > 0
	})
	if len(rev31ALossesNaming(e, "z.log")) == 0 {
		d.kill()
		t.Skip("z.log.1 read before its deletion: the case needs it unread")
	}
	time.Sleep(3 * time.Second) // housekeeping passes: a list that drops it is written
	t.Logf("list after the count, 3 s later: %s (key listed %v)", rev32AList(e), rev31BListed(t, e, k))
	d.kill()
	d = e.start()
	d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	led := rev31ALossesNaming(e, "z.log")
	t.Logf("ledger on z.log: %v", led)
	if len(led) != 1 || r.Feeds[0].LostTails != 0 {
		t.Errorf("one file lost once (counted by the first run); ledger has %d entries on z.log, second run lostTails %d: counted again after the kill", len(led), r.Feeds[0].LostTails)
	}
}

// TestRev32AXTwoLeftOneKillOrder: DESIGN §10 "Order. The epoch barrier of
// §4 holds per path: a new file at a path is published after every line
// of the file previously at that path is acknowledged".
// Scenario: first run, z.log (z #0..#2) waits, listed; logrotate while it
// waits: z.log → z.log.1, new z.log (y #0, y #1), listed too; logrotate
// again: z.log.1 → z.log.2, z.log → z.log.1, new z.log (w #0). Both left
// files are on the running list under logs/z.log (new in 0f9f4ad). One
// kill -9; a second start reads both beside the path.
// Expected: z #0..#2, y #0, y #1, w #0 in this order, each once.
// Observed (4/4 runs failed; logged: twice [z #0 z #1 z #2 w #0 y #0
// y #1], once [y #0 y #1 w #0 z #0 z #1 z #2]): every line once, lossless
// true, but the two left generations come in list (map) order and the new
// z.log (w #0) is published before the one not chosen as its barrier —
// even before z.log's oldest file.
// Suspected cause: source/file/glob.go:5728 — readListedBeside gives the
// path's stream a barrier only against the first listed entry of the path,
// and none between two listed entries of one path (their order in the list
// is map order: unreadlive.go:62 ranges over g.byKey). README states a
// like limitation only for entries "listed across two kills".
// Fixed in ef249de: listedOrder chains the files listed under one path
// oldest first by mtime, then the file at the path.
func TestRev32AXTwoLeftOneKillOrder(t *testing.T) {
	e, d, k := rev32AFirstRun(t, 6000)
	z := e.path("logs/z.log")
	appendTo(t, z, "y #0\ny #1\n")
	ky := fileKeyOf(t, z)
	waitUntil(t, "the new z.log listed", 30*time.Second, func() bool { return rev31BListed(t, e, ky) })
	if err := os.Rename(z+".1", z+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "w #0\n")
	time.Sleep(2500 * time.Millisecond)
	if n := rev31BCounts(e); n["z #0"] > 0 || n["y #0"] > 0 {
		t.Skip("read before the kill")
	}
	t.Logf("list at the kill: %s (z %v y %v)", rev32AList(e), rev31BListed(t, e, k), rev31BListed(t, e, ky))
	d.kill()
	d = e.start()
	// 6,000 fillers, each a pointer made durable: 9 s on a quiet machine,
	// over 2 minutes in CI beside two other e2e shards (a wait of 120 s
	// ran out there with the second start still making pointers at a few
	// milliseconds each).
	waitUntil(t, "w #0, y #1 and z #2", 300*time.Second, func() bool {
		n := rev31BCounts(e)
		return n["w #0"] > 0 && n["y #1"] > 0 && n["z #2"] > 0
	})
	r := d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	var order []string
	for _, l := range rev31Lines(e.path("out/once.jsonl")) {
		if l[0] == 'z' || l[0] == 'y' || l[0] == 'w' {
			order = append(order, l)
		}
	}
	want := "z #0,z #1,z #2,y #0,y #1,w #0"
	t.Logf("order %v lossless %v lostTails %d", order, r.Lossless, r.Feeds[0].LostTails)
	if strings.Join(order, ",") != want || !r.Lossless {
		t.Errorf("z.log's generations in the sink %v, want %s (lossless %v)", order, want, r.Lossless)
	}
}

// rev32ACopytruncate: z.log (z #0..#2) waits, listed; logrotate
// copytruncate while it waits: z.log copied to z.log.1, z.log truncated,
// then z #3 written to it. kill: a kill -9 and a second start. Observed
// (OK): z #0..#2 not read but counted ("truncated before any of it was
// read", lostTails 1, lostBytes 15, lossless false), z #3 once.
func rev32ACopytruncate(t *testing.T, kill bool) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 2000)
	z := e.path("logs/z.log")
	appendTo(t, z, "z #0\nz #1\nz #2\n")
	k := fileKeyOf(t, z)
	d := e.start()
	waitUntil(t, "z.log listed", 30*time.Second, func() bool { return rev31BListed(t, e, k) })
	b, err := os.ReadFile(z)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(z+".1", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(z, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	appendTo(t, z, "z #3\n")
	time.Sleep(1500 * time.Millisecond)
	if rev31BCounts(e)["z #0"] > 0 {
		t.Skip("z.log read before the copytruncate")
	}
	if kill {
		d.kill()
		d = e.start()
	}
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["f1999 #2"] > 0 })
	waitUntil(t, "z #3", 30*time.Second, func() bool { return rev31BCounts(e)["z #3"] > 0 })
	r := d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, _ = d.status()
	n := rev31BCounts(e)
	t.Logf("z #0..3 ×%d/%d/%d/%d lostTails %d lostBytes %d lossless %v ledger %v", n["z #0"], n["z #1"], n["z #2"], n["z #3"], r.Feeds[0].LostTails, r.Feeds[0].LostBytes, r.Lossless, rev31BLedger(e, "z.log"))
	if (n["z #0"] == 0 || n["z #1"] == 0 || n["z #2"] == 0) && r.Lossless {
		t.Errorf("z #0..#2 (in the copy z.log.1) delivered %d/%d/%d times and lossless true", n["z #0"], n["z #1"], n["z #2"])
	}
	if n["z #3"] != 1 {
		t.Errorf("z #3 ×%d", n["z #3"])
	}
}

func TestRev32AOKCopytruncateWaitingLive(t *testing.T)   { rev32ACopytruncate(t, false) }
func TestRev32AOKCopytruncateWaitingKilled(t *testing.T) { rev32ACopytruncate(t, true) }

// rev32AThenRestart: after rev32AFirstRun, then(e, d) acts on the first
// run and returns the daemon to end (stop: stopped cleanly, else killed
// -9); a last start then reads everything. Want z #0..#2 once each,
// lossless true (z.log's bytes are on disk beside logs/z.log the whole
// time: nothing is lost).
func rev32AThenRestart(t *testing.T, stop bool, then func(e *env, d *daemon) *daemon) {
	rev32AThenRestartN(t, stop, 6000, then)
}

func rev32AThenRestartN(t *testing.T, stop bool, fillers int, then func(e *env, d *daemon) *daemon) *report {
	e, d, k := rev32AFirstRun(t, fillers)
	d = then(e, d)
	t.Logf("list before the end: %s (listed %v)", rev32AList(e), rev31BListed(t, e, k))
	if stop {
		d.stop()
	} else {
		d.kill()
	}
	if rev31BCounts(e)["z #0"] > 0 {
		t.Skip("z read before the end of the run")
	}
	t.Logf("list after the end: %s (listed %v)", rev32AList(e), rev31BListed(t, e, k))
	d = e.start()
	waitUntil(t, "the fillers read", 300*time.Second, func() bool { return rev31BCounts(e)[fmt.Sprintf("f%04d #2", fillers-1)] > 0 })
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(1500 * time.Millisecond)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	n := rev31BCounts(e)
	t.Logf("z #0..2 ×%d/%d/%d lostTails %d lossless %v; ledger: %v", n["z #0"], n["z #1"], n["z #2"], r.Feeds[0].LostTails, r.Lossless, rev31BLedger(e, "z.log"))
	if n["z #0"] != 1 || n["z #1"] != 1 || n["z #2"] != 1 || !r.Lossless {
		t.Errorf("z.log's lines (on disk beside logs/z.log throughout) delivered %d/%d/%d times, want once each; lossless %v lostTails %d",
			n["z #0"], n["z #1"], n["z #2"], r.Lossless, r.Feeds[0].LostTails)
	}
	return r
}

// TestRev32AXLeftRenamedAgainStopped: DESIGN §10 "A file renamed out of
// the glob is read to its end"; the commit's promise (README: "a kill -9
// or a stop before that leaves it to the next start, which reads it
// there"). Scenario: z.log waits (listed), logrotate renames it z.log.1,
// then again z.log.1 → z.log.2 (the next rotation) before its turn; a
// clean stop; a second start.
// Expected: z #0..#2 read once each by the second start, lossless true.
// Observed (3/3 runs): the stop counts it ("glob file …/z.log.1, out of
// the glob, was not read before the stop", lostTails 1, lostBytes 15),
// lists nothing; z #0..#2 never delivered although z.log.2 is on disk
// beside logs/z.log. TestRev32AOKLeftRenamedAgainKilled (kill -9
// instead) reads it. Not a regression (the parent counted every such
// file at a stop) but the fix's promise is not kept for the common
// next-rotation case.
// Suspected cause: source/file/glob.go:5515 and :5619 — Close and
// waitingAtStop keep the entry only while exists(s.path, s.key), s.path
// being the name leftUnread found at the first rename (z.log.1); nothing
// looks for the file again (findBeside) before the stop, so the stop
// counts it ("out of the glob, was not read before the stop", glob.go:5521)
// and lists nothing; the kill -9 variant (the running list's entry under
// z.log, found by key) reads it.
// Fixed: followBeside looks for it again beside the path it left (Close,
// waitingAtStop, and each running list pass).
func TestRev32AXLeftRenamedAgainStopped(t *testing.T) {
	rev32AThenRestart(t, true, func(e *env, d *daemon) *daemon {
		if err := os.Rename(e.path("logs/z.log.1"), e.path("logs/z.log.2")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		return d
	})
}

// TestRev32AOKLeftRenamedAgainKilled: TestRev32AXLeftRenamedAgainStopped
// with a kill -9: the second start finds z.log.2 by key beside z.log.
func TestRev32AOKLeftRenamedAgainKilled(t *testing.T) {
	rev32AThenRestart(t, false, func(e *env, d *daemon) *daemon {
		if err := os.Rename(e.path("logs/z.log.1"), e.path("logs/z.log.2")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		return d
	})
}

// TestRev32AXKilledThenStopped: DESIGN §10 "A file renamed out of the glob
// is read to its end"; README (this commit): "a kill -9 or a stop before
// that leaves it to the next start, which reads it there".
// Scenario: z.log waits (listed), renamed z.log.1 (kept listed under
// z.log); kill -9; the second start finds it beside z.log (readListedBeside)
// and queues it behind the fillers; a clean stop before its turn; a third
// start.
// Expected: z #0..#2 once each, lossless true.
// Observed (3/3 runs): the second run's stop counts z.log.1 ("out of the
// glob, was not read before the stop"), the third start neither reads it
// nor lists it: z #0..#2 never delivered (counted, so not silent). The
// same on the parent for a file rotated while stopped (review 31c's
// note), but now inconsistent with this commit's README sentence: a kill
// -9 of the second run instead keeps it listed and the third start reads it.
// Suspected cause: source/file/glob.go:4842 — queueBesideLocked makes a
// gone stream with no leftFrom, so leftBeside (glob.go:2940) is false for
// it: Close counts it (glob.go:5518-5522) and waitingAtStop does not list
// it (glob.go:5608); the third start neither reads nor knows it.
// Fixed in ef249de: leftBeside covers a listed stream (s.listed) too.
func TestRev32AXKilledThenStopped(t *testing.T) {
	rev32AThenRestart(t, true, func(e *env, d *daemon) *daemon {
		d.kill()
		d = e.start()
		waitUntil(t, "the second start over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
		time.Sleep(500 * time.Millisecond)
		return d
	})
}

// rev32ASymlinkTarget: logs/z.log is a symlink to data/z.real (z #0..#2),
// waiting behind 2,000 fillers (listed); its target is rotated:
// data/z.real → data/z.real.1, a new data/z.real (y #0). Ended by a stop
// or a kill -9 while z.real.1 waits; a second start. Want z #0..#2 then
// y #0, once each, lossless true.
func rev32ASymlinkTarget(t *testing.T, stop bool) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 2000)
	if err := os.MkdirAll(e.path("data"), 0o755); err != nil {
		t.Fatal(err)
	}
	real := e.path("data/z.real")
	appendTo(t, real, "z #0\nz #1\nz #2\n")
	if err := os.Symlink(real, e.path("logs/z.log")); err != nil {
		t.Fatal(err)
	}
	k := fileKeyOf(t, real)
	d := e.start()
	waitUntil(t, "z.log listed", 30*time.Second, func() bool { return rev31BListed(t, e, k) })
	if err := os.Rename(real, real+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, real, "y #0\n")
	time.Sleep(2500 * time.Millisecond)
	if n := rev31BCounts(e); n["z #0"] > 0 || n["y #0"] > 0 {
		t.Skip("read before the end of the first run")
	}
	t.Logf("list: %s (listed %v)", rev32AList(e), rev31BListed(t, e, k))
	if stop {
		d.stop()
	} else {
		d.kill()
	}
	if n := rev31BCounts(e); n["z #0"] > 0 || n["y #0"] > 0 {
		t.Skip("read before the end of the first run")
	}
	d = e.start()
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["f1999 #2"] > 0 })
	waitUntil(t, "y #0", 30*time.Second, func() bool { return rev31BCounts(e)["y #0"] > 0 })
	r := d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	var order []string
	for _, l := range rev31Lines(e.path("out/once.jsonl")) {
		if l[0] == 'z' || l[0] == 'y' {
			order = append(order, l)
		}
	}
	t.Logf("order %v lossless %v lostTails %d ledger %v", order, r.Lossless, r.Feeds[0].LostTails, rev31BLedger(e, "z."))
	if strings.Join(order, ",") != "z #0,z #1,z #2,y #0" || !r.Lossless {
		t.Errorf("z.log's generations in the sink %v, want z #0..#2, y #0; lossless %v", order, r.Lossless)
	}
}

func TestRev32AOKSymlinkTargetRotatedKilled(t *testing.T)  { rev32ASymlinkTarget(t, false) }
func TestRev32AOKSymlinkTargetRotatedStopped(t *testing.T) { rev32ASymlinkTarget(t, true) }

// rev32AAfterFirstScan: z.log (listed) waits behind 3,000 fillers; kill -9;
// a second start (z.log still at its path: its own first scan lists it
// again, identical to the previous run's entry); at once after /readyz,
// z.log is renamed z.log.1 (del: deleted). Returns the second run's report.
func rev32AAfterFirstScan(t *testing.T, del bool) (*env, *report) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 3000)
	z := e.path("logs/z.log")
	appendTo(t, z, "z #0\nz #1\nz #2\n")
	k := fileKeyOf(t, z)
	d := e.start()
	waitUntil(t, "z.log listed", 30*time.Second, func() bool { return rev31BListed(t, e, k) })
	d.kill()
	d = e.start()
	var err error
	if del {
		err = os.Remove(z)
	} else {
		err = os.Rename(z, z+".1")
	}
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["f2999 #2"] > 0 })
	d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(1500 * time.Millisecond)
	r, _ := d.status()
	n := rev31BCounts(e)
	t.Logf("z #0..2 ×%d/%d/%d lostTails %d lossless %v ledger %v", n["z #0"], n["z #1"], n["z #2"], r.Feeds[0].LostTails, r.Lossless, rev31ALossesNaming(e, "z.log"))
	return e, r
}

// TestRev32AOKRenamedAfterFirstScan: read beside once, nothing counted.
func TestRev32AOKRenamedAfterFirstScan(t *testing.T) {
	e, r := rev32AAfterFirstScan(t, false)
	n := rev31BCounts(e)
	if n["z #0"] != 1 || n["z #1"] != 1 || n["z #2"] != 1 || !r.Lossless {
		t.Errorf("z #0..2 ×%d/%d/%d lossless %v", n["z #0"], n["z #1"], n["z #2"], r.Lossless)
	}
}

// TestRev32AOKDeletedAfterFirstScan: counted once (lostTails 1, one ledger
// entry), not twice.
func TestRev32AOKDeletedAfterFirstScan(t *testing.T) {
	e, r := rev32AAfterFirstScan(t, true)
	if led := rev31ALossesNaming(e, "z.log"); len(led) != 1 || r.Feeds[0].LostTails != 1 {
		t.Errorf("z.log deleted unread: ledger entries %d, lostTails %d; want 1, 1", len(led), r.Feeds[0].LostTails)
	}
}

// TestRev32AOKLeftReadForgottenKilled: z.log waits (listed), is renamed
// z.log.1 (listed under z.log), is read there to its end and its pointer
// forgotten (forgetAfterMillis 500); kill -9 a few seconds later; a second
// start: the list no longer names it, z #0..#2 stay once each (exactlyOnce).
func TestRev32AOKLeftReadForgottenKilled(t *testing.T) {
	e, d, k := rev32AFirstRun(t, 2000)
	waitUntil(t, "z.log.1 read", 300*time.Second, func() bool { return rev31BCounts(e)["z #2"] > 0 })
	time.Sleep(4 * time.Second)
	t.Logf("list before the kill: %s (listed %v)", rev32AList(e), rev31BListed(t, e, k))
	d.kill()
	d = e.start()
	d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(1500 * time.Millisecond)
	r, _ := d.status()
	n := rev31BCounts(e)
	t.Logf("z #0..2 ×%d/%d/%d lostTails %d lossless %v", n["z #0"], n["z #1"], n["z #2"], r.Feeds[0].LostTails, r.Lossless)
	if n["z #0"] != 1 || n["z #1"] != 1 || n["z #2"] != 1 || !r.Lossless {
		t.Errorf("z #0..2 ×%d/%d/%d lossless %v, want once each, lossless", n["z #0"], n["z #1"], n["z #2"], r.Lossless)
	}
}
