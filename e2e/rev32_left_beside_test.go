package e2e

// A file waiting for its first turn renamed out of the glob while tailfeed
// runs (DESIGN §10 "a rename out of the glob is read to its end"): found
// beside its path by its key, its stream reads it there. Until that
// stream's pointer names it, the unread list names it under the path it
// left, so that a restart — after a kill -9 or a stop — finds it beside
// that path and reads it (review 31b's parked probe: silent loss after a
// kill -9; a stop counted it lost).

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// rev32LeftBeside: 3,000 filler files and z.log (z #0..#2, sorted last,
// maxOpenFiles 2); the first run lists z.log (waiting), then z.log is
// renamed z.log.1 (out of the glob); with newAtPath a new z.log (y #0)
// follows. The first run is killed -9 (stop: stopped) while z.log.1 still
// waits, with the list still naming z.log's key after the rename; a second
// start. Returns the second run's status report.
func rev32LeftBeside(t *testing.T, stop, newAtPath bool) (*env, *report) {
	t.Helper()
	e, d, z, k := rev32RenamedOutWhileWaiting(t, 3000)
	if newAtPath {
		appendTo(t, z, "y #0\n")
	}
	// Housekeeping passes (every pollIntervalMillis, 50): the rename is
	// seen, and a list written since would have dropped the key (it did
	// before).
	time.Sleep(1200 * time.Millisecond)
	if rev31BCounts(e)["z #0"] > 0 {
		t.Skip("z.log.1 read before the kill: the case needs it still waiting (a slow start over 2,000 files?)")
	}
	if !rev31BListed(t, e, k) {
		b, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
		t.Fatalf("z.log.1 (renamed out of the glob while waiting, its stream not started) is no longer on the unread list: a kill -9 now loses it silently; list: %s", rev31CGrep(string(b), "z.log"))
	}
	if stop {
		d.stop()
	} else {
		d.kill()
	}
	if rev31BCounts(e)["z #0"] > 0 {
		t.Skip("z.log.1 read before the kill")
	}
	d = e.start()
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["f2999 #2"] > 0 })
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	n := rev31BCounts(e)
	t.Logf("z #0..2 ×%d/%d/%d y #0 ×%d lostTails %d lossless %v; ledger: %v", n["z #0"], n["z #1"], n["z #2"], n["y #0"],
		r.Feeds[0].LostTails, r.Lossless, rev31BLedger(e, "z.log"))
	if n["z #0"] != 1 || n["z #1"] != 1 || n["z #2"] != 1 {
		t.Errorf("z.log.1 (z #0..#2) delivered %d/%d/%d times, want once each (lostTails %d lossless %v)", n["z #0"], n["z #1"], n["z #2"], r.Feeds[0].LostTails, r.Lossless)
	}
	for i, dd := range e.runs {
		t.Logf("run %d's log on z.log: %v", i, rev31CGrep(dd.log(), "z.log"))
	}
	if !r.Lossless || r.Feeds[0].LostTails != 0 {
		t.Errorf("nothing was lost, yet lossless %v lostTails %d (ledger %v)", r.Lossless, r.Feeds[0].LostTails, rev31BLedger(e, "z.log"))
	}
	return e, r
}

// TestRev32LeftBesideKilled: killed -9 while z.log.1 waits: the second
// start reads it, every line once, nothing counted (was: z.log.1 dropped
// from the list at the rename, read by nobody, lossless true).
func TestRev32LeftBesideKilled(t *testing.T) { rev32LeftBeside(t, false, false) }

// TestRev32LeftBesideStopped: stopped while z.log.1 waits: the second
// start reads it (was: the stop counted it lost, lostTails 1).
func TestRev32LeftBesideStopped(t *testing.T) { rev32LeftBeside(t, true, false) }

// TestRev32LeftBesideKilledNewAtPath: a new z.log (y #0) after the rename,
// killed -9: the second start publishes z.log.1's lines before the new
// file's (DESIGN §10 Order: per path), each once.
func TestRev32LeftBesideKilledNewAtPath(t *testing.T) {
	e, _ := rev32LeftBeside(t, false, true)
	lines := rev31Lines(e.path("out/once.jsonl"))
	y := slices.Index(lines, "y #0")
	z := slices.Index(lines, "z #2")
	if y < 0 || z < 0 || y < z {
		t.Errorf("y #0 (the new z.log) at %d, z #2 (z.log.1, the file before it at that path) at %d: want z.log.1's lines first", y, z)
	}
	if c := rev31BCounts(e)["y #0"]; c != 1 {
		t.Errorf("y #0 delivered %d times", c)
	}
}

// TestRev32ListedBesideStopped: the previous run's listed file found
// beside its path by a start (readListedBeside: rev31BRotatedWhileDown,
// z.log.1 = z #0..#2 queued behind the fillers) and that start stopped
// cleanly before reading it: the stop lists it again (under logs/z.log)
// and the third start reads it, nothing counted (was: the stop counted it
// lost, "out of the glob, was not read before the stop", and nobody read
// it — whereas a kill -9 there left it listed and read).
func TestRev32ListedBesideStopped(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BRotatedWhileDown(t, e)
	d := e.start()
	waitUntil(t, "the start over", 20*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	d.stop()
	if n := rev31BCounts(e); n["z #0"] > 0 {
		t.Skip("z.log.1 read before the stop")
	}
	if l := rev31BLedger(e, "z.log"); len(l) > 0 {
		t.Errorf("the stop counted z.log.1 (beside its path, to be read by the next start) lost: %v", l)
	}
	d = e.start()
	d.waitFor("settled", 90*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	n := rev31BCounts(e)
	if n["z #0"] != 1 || n["z #1"] != 1 || n["z #2"] != 1 || n["z #3"] != 1 || n["z #4"] != 1 {
		t.Errorf("z #0..#4 delivered %d/%d/%d/%d/%d times, want once each", n["z #0"], n["z #1"], n["z #2"], n["z #3"], n["z #4"])
	}
	if !r.Lossless || r.Feeds[0].LostTails != 0 {
		t.Errorf("nothing was lost, yet lossless %v lostTails %d (ledger %v)", r.Lossless, r.Feeds[0].LostTails, rev31BLedger(e, "z.log"))
	}
	lines := rev31Lines(e.path("out/once.jsonl"))
	if i, j := slices.Index(lines, "z #2"), slices.Index(lines, "z #3"); i < 0 || j < 0 || i > j {
		t.Errorf("z #2 (z.log.1) at %d, z #3 (the new z.log) at %d: want z.log.1 first", i, j)
	}
}

// rev32RenamedOutWhileWaiting: fillers filler files and logs/z.log (z
// #0..#2, sorted last, maxOpenFiles 2); a first run that lists z.log
// (waiting), then z.log renamed z.log.1 (out of the glob). Returns the
// env, the running daemon, z.log's path and key.
func rev32RenamedOutWhileWaiting(t *testing.T, fillers int) (*env, *daemon, string, uint64) {
	t.Helper()
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, fillers)
	z := e.path("logs/z.log")
	appendTo(t, z, "z #0\nz #1\nz #2\n")
	k := fileKeyOf(t, z)
	d := e.start()
	waitUntil(t, "z.log listed", 30*time.Second, func() bool { return rev31BListed(t, e, k) })
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	return e, d, z, k
}
