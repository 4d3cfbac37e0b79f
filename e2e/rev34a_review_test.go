package e2e

// Review 34a: listedGapsLocked (source/file/glob.go), the generations born
// at a listed path while tailfeed was down, read from their start at the
// next start (commit bc782b9, fixes in the next).

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// rev34AFill is the number of filler files: enough for z.log to wait for
// its first turn (maxOpenFiles 2), fewer than rev34BornWhileDown's 300 so
// that each test stays under ~30 s.
const rev34AFill = 150

// rev34AEarly, when set, runs in rev34ADown's first run before z.log is
// written (with 300 fillers then).
var rev34AEarly func(e *env)

// rev34AWantLost, when set, is the lostTails the restart must report
// (a loss counted elsewhere, documented); 0: none, lossless true.
var rev34AWantLost int

// rev34AAfterStart, when set, runs once the restart's first scan is over.
var rev34AAfterStart func(e *env)

// rev34ATmpl, when set, is the config instead of rev31BManyTmpl.
var rev34ATmpl string

// rev34ADown: rev34AFill fillers and z.log (z #0..#2) waiting for its first
// turn, listed; before (may be nil) runs while the first run is up, after
// z.log is listed; kill -9 (stop when stop); rotate while down; a restart
// checks that each of lines is delivered once and nothing counted; order,
// when given, is the per-path order that must hold in the sink.
func rev34ADown(t *testing.T, zInit string, stop bool, before func(e *env, z string), rotate func(e *env, z string), lines []string, order []string) *env {
	t.Helper()
	tmpl := rev31BManyTmpl
	if rev34ATmpl != "" {
		tmpl = rev34ATmpl
	}
	e := newEnv(t, tmpl)
	fill := rev34AFill
	if rev34AEarly != nil {
		fill = 300
	}
	rev31BFiller(t, e, fill)
	d := e.start()
	waitUntil(t, "the start over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	if rev34AEarly != nil {
		rev34AEarly(e)
	}
	z := e.path("logs/z.log")
	appendTo(t, z, zInit+"z #0\nz #1\nz #2\n")
	k := fileKeyOf(t, z)
	waitUntil(t, "z.log listed", 10*time.Second, func() bool { return rev31BListed(t, e, k) })
	if before != nil {
		before(e, z)
	}
	if stop {
		d.stop()
	} else {
		d.kill()
	}
	if rev31BCounts(e)["z #0"] > 0 {
		t.Skip("z.log read before the kill: the case needs it still waiting")
	}
	rotate(e, z)
	rev34AReadOnce(t, e, fmt.Sprintf("f%04d #2", fill-1), "z.log", lines...)
	rev34AOrder(t, e, t.Errorf, order...)
	return e
}

// rev34AOrder reports through report each pair of order not delivered in
// that order (the first delivery of each line in the exactlyOnce sink).
func rev34AOrder(t *testing.T, e *env, report func(string, ...any), order ...string) {
	t.Helper()
	got := rev31Lines(e.path("out/once.jsonl"))
	for i := 1; i < len(order); i++ {
		a, b := slices.Index(got, order[i-1]), slices.Index(got, order[i])
		if a < 0 || b < 0 || a > b {
			report("%s at %d, %s at %d: want the path's generations oldest first", order[i-1], a, order[i], b)
		}
	}
}

func rev34ACreate(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRev34AXALateWriteToRotated: DESIGN §4 "every generation still on
// disk", "Nothing green over a loss". logrotate's `create` scheme while
// down: z.log (listed) → z.log.1, the application writes b #0 to a new
// z.log; the next rotation moves z.log.1 → z.log.2, z.log → z.log.1 and
// creates an empty z.log; the application, not told to reopen yet, writes
// b #1 to its open descriptor (now z.log.1) — the usual window between
// logrotate's rename and the postrotate signal. The restart finds the
// file at the path empty and older (mtime) than z.log.1's last write.
// Expected: b #0, b #1 read once (or counted). Observed (5/5 runs): b #0
// and b #1 delivered 0 times, lostTails 0, lossless true; listedGapsLocked
// queues nothing. Suspected cause: its bound "last written before" the
// file at the path (`!st.ModTime().Before(upMod)`, glob.go in
// listedGapsLocked; readGap has the same rule) skips z.log.1, last written
// after the empty z.log was made. TestRev34AOKLateWriteThenPathWritten:
// the same with c #0 written to z.log afterwards passes.
func TestRev34AXALateWriteToRotated(t *testing.T) {
	rev34ADown(t, "", false, nil, func(e *env, z string) {
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "b #0\n")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		rev34ACreate(t, z, "") // logrotate create: an empty new z.log
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z+".1", "b #1\n") // the application's late write before reopening
	}, []string{"z #0", "z #1", "z #2", "b #0", "b #1"}, []string{"z #2", "b #0"})
}

// rev34ABanner: a header of more than pointer.MaxFingerprint (4096) bytes
// every generation of the application starts with (a long start-up banner
// or configuration dump).
func rev34ABanner() string {
	var b strings.Builder
	for i := 0; b.Len() <= 4200; i++ {
		fmt.Fprintf(&b, "banner %03d: %s\n", i, strings.Repeat("=", 60))
	}
	return b.String()
}

// TestRev34AXBBannerTakenForCopy: DESIGN §10 "A new key is a new stream,
// read from its start … At a start, a new key whose first bytes match a
// stream whose file is now shorter than its offset is that stream's copy
// at once; any other new key is a new stream"; §4 "Reading a file twice
// is a duplicate, never a gap". Every generation starts with the same
// 4.2 KB banner; z.log (banner, z #0..#2) listed, kill -9; while down
// rename rotation twice (b written to the generation in between, c to the
// new z.log). The listed file is found by its key (z.log.2), untouched and
// as long as listed: the generation in between (z.log.1: banner, b #0) is
// no copy of it. Observed (5/5 runs): b #0 delivered 0 times, lostTails 0,
// lossless true. Suspected cause: listedGapsLocked's "a copy of a listed
// file" test (its first MaxFingerprint bytes equal a listed record's) skips
// z.log.1, although the listed file itself was found by its key (§4 takes
// a fingerprint-alone match for a copy only "when none").
func TestRev34AXBBannerTakenForCopy(t *testing.T) {
	banner := rev34ABanner()
	rev34ADown(t, banner, false, nil, func(e *env, z string) {
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, banner+"b #0\n")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, banner+"c #0\n")
	}, []string{"b #0", "c #0"}, []string{"b #0", "c #0"})
}

// rev34AReadOnce is rev33ReadOnce, logging the restart's lines naming
// z.log when it fails.
func rev34AReadOnce(t *testing.T, e *env, lastFiller, name string, lines ...string) {
	t.Helper()
	d := e.start()
	defer func() {
		t.Logf("restart: %d generation(s) queued by listedGapsLocked", strings.Count(d.log(), "a generation born beside a glob path while tailfeed was down"))
		if t.Failed() {
			for _, l := range strings.Split(d.log(), "\n") {
				if strings.Contains(l, name) && !strings.Contains(l, "pointer created") {
					t.Logf("restart log: %.400s", l)
				}
			}
			b, _ := os.ReadFile(e.path("state/losses.jsonl"))
			t.Logf("losses ledger: %.1500s", b)
		}
	}()
	if rev34AAfterStart != nil {
		waitUntil(t, "the restart over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
		rev34AAfterStart(e)
	}
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)[lastFiller] > 0 })
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	n := rev31BCounts(e)
	for _, l := range lines {
		if n[l] != 1 {
			t.Errorf("%s delivered %d times, want once (lostTails %d lossless %v; ledger %v)", l, n[l], r.Feeds[0].LostTails, r.Lossless, rev31BLedger(e, name))
		}
	}
	if rev34AWantLost > 0 {
		if r.Feeds[0].LostTails != uint64(rev34AWantLost) {
			t.Errorf("lostTails %d, want %d", r.Feeds[0].LostTails, rev34AWantLost)
		}
	} else if !r.Lossless || r.Feeds[0].LostTails != 0 {
		t.Errorf("nothing was lost, yet lossless %v lostTails %d (ledger %v)", r.Lossless, r.Feeds[0].LostTails, rev31BLedger(e, name))
	}
}

// TestRev34AOKLateWriteThenPathWritten: TestRev34AXALateWriteToRotated
// with the file at the path written (c #0) after the late write to
// z.log.1: the generation is read, in order.
func TestRev34AOKLateWriteThenPathWritten(t *testing.T) {
	rev34ADown(t, "", false, nil, func(e *env, z string) {
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "b #0\n")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		rev34ACreate(t, z, "")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z+".1", "b #1\n")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "c #0\n")
	}, []string{"z #0", "z #1", "z #2", "b #0", "b #1", "c #0"}, []string{"z #2", "b #0", "b #1", "c #0"})
}

// TestRev34AOKStopped: TestRev34GenerationBornWhileDownAtListedPath with a
// clean stop instead of kill -9: every line once, in order.
func TestRev34AOKStopped(t *testing.T) {
	rev34ADown(t, "", true, nil, func(e *env, z string) {
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "b #0\nb #1\n")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "c #0\n")
	}, []string{"z #0", "z #1", "z #2", "b #0", "b #1", "c #0"}, []string{"z #2", "b #0", "c #0"})
}

// TestRev34AOKTwoListedAndGap: two listed files of one path — z.log (z)
// renamed out of the glob while running (z.log.1, still listed under
// z.log) and the new z.log (y) waiting too — then, while down, two
// rotations with b written in between and c at the new z.log: z, y, b, c
// once each in that order (the listed y is not read again as a gap).
func TestRev34AOKTwoListedAndGap(t *testing.T) {
	rev34ADown(t, "", false, func(e *env, z string) {
		mustRename(t, z, z+".1")
		appendTo(t, z, "y #0\n")
		k := fileKeyOf(t, z)
		waitUntil(t, "the second z.log listed", 10*time.Second, func() bool { return rev31BListed(t, e, k) })
	}, func(e *env, z string) {
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "b #0\n")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".2", z+".3")
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "c #0\n")
	}, []string{"z #0", "z #2", "y #0", "b #0", "c #0"}, []string{"z #2", "y #0", "b #0", "c #0"})
}

// TestRev34AOKPointerFileDeletedNoReuse: TestRev34AXDInodeOfPointerReused
// with f0000.log's inode held by another file, b on a new one: b #0 and
// c #0 read once, in order; lostTails 1 (f0000.log, deleted while
// stopped: its pointer cannot tell it was read to its end).
func TestRev34AOKPointerFileDeletedNoReuse(t *testing.T) {
	rev34APointerFileDeleted(t, false)
}

func rev34APointerFileDeleted(t *testing.T, reuse bool) {
	rev34AEarly = func(e *env) {
		waitUntil(t, "f0000.log read", 20*time.Second, func() bool { return rev31BCounts(e)["f0000 #2"] > 0 })
	}
	rev34AWantLost = 1
	defer func() { rev34AEarly, rev34AWantLost = nil, 0 }()
	rev34ADown(t, "", false, nil, func(e *env, z string) {
		f0 := e.path("logs/f0000.log")
		k0, ino := fileKeyOf(t, f0), rev30AIno(t, f0)
		mustRename(t, z, z+".1")
		if err := os.Remove(f0); err != nil {
			t.Fatal(err)
		}
		if reuse {
			rev30CFileOnInode(t, z, ino) // (skips when not given again)
		} else {
			rev30CFileOnInode(t, e.path("hold.tmp"), ino)
		}
		appendTo(t, z, "b #0\n")
		if (fileKeyOf(t, z) == k0) != reuse {
			t.Skipf("the new z.log on f0000.log's inode: %v, want %v", fileKeyOf(t, z) == k0, reuse)
		}
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "c #0\n")
	}, []string{"z #0", "z #2", "b #0", "c #0"}, []string{"z #2", "b #0", "c #0"})
}

// TestRev34AXEExcludedGenerationSkipped: DESIGN §10 ("exclude … removes
// matches"; "A file renamed out of the glob is read to its end"), §4
// "every generation still on disk". The glob is ./logs/* with the rotated
// names excluded (exclude: ./logs/*.log.*), a usual way to keep logrotate's
// files out of it. z.log (listed) killed -9, then the two rotations of
// TestRev34GenerationBornWhileDownAtListedPath while down: the listed file
// is read at z.log.2 (excluded: not matched), but the generation in
// between, z.log.1, is skipped by listedGapsLocked's g.pat.Match (the
// include pattern alone, excludes not applied): b #0, b #1 read by nobody,
// lossless true. Observed 4/4 runs (readListedBeside, by g.matched, does
// read the excluded z.log.2; readGap has the same g.pat.Match test).
func TestRev34AXEExcludedGenerationSkipped(t *testing.T) {
	rev34ATmpl = strings.Replace(rev31BManyTmpl, "    path: ./logs/*.log\n", "    path: ./logs/*\n    exclude: [./logs/*.log.*]\n", 1)
	defer func() { rev34ATmpl = "" }()
	if rev34ATmpl == rev31BManyTmpl {
		t.Fatal("template not changed")
	}
	rev34ADown(t, "", false, nil, func(e *env, z string) {
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "b #0\nb #1\n")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "c #0\n")
	}, []string{"z #0", "z #1", "z #2", "b #0", "b #1", "c #0"}, []string{"z #2", "b #0", "c #0"})
}

// TestRev34AOKSymlinkedPath: logs/z.log is a symlink to data/app.log (the
// listed file); while down data/app.log rotates twice (logrotate renames
// beside the target: app.log.1, app.log.2), b written in between, c at the
// new data/app.log: every line once, in order (the generation found beside
// the link's final target).
func TestRev34AOKSymlinkedPath(t *testing.T) {
	rev34AEarly = func(e *env) {
		if err := os.MkdirAll(e.path("data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../data/app.log", e.path("logs/z.log")); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { rev34AEarly = nil }()
	rev34ADown(t, "", false, nil, func(e *env, _ string) {
		a := e.path("data/app.log")
		mustRename(t, a, a+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, a, "b #0\nb #1\n")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, a+".1", a+".2")
		mustRename(t, a, a+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, a, "c #0\n")
	}, []string{"z #0", "z #1", "z #2", "b #0", "b #1", "c #0"}, []string{"z #2", "b #0", "c #0"})
}

// TestRev34AOKPathPointerAndListed: a path with both a previous run's
// pointer and a listed file. a.log (A, a #0) read in the first run, then
// renamed out of the glob (a.log.1, still tracked: rotateWaitMillis), a
// new a.log (L, l #0) waiting for its first turn, listed; kill -9. While
// down two rotations (b written to the a.log in between, c to the new
// one). The restart has A's pointer (its file read to its end, at
// a.log.3), the listed L (a.log.2) and the gap b (a.log.1): a #0 not again,
// l #0, b #0, c #0 once each. listedGapsLocked queues nothing (the path's
// new file takes A's pointer, whose source reads b as a later generation);
// b comes before l then — the order README states for a path whose new
// file takes a previous run's pointer ("then it may come first, every line
// still once", review 31c), logged, not checked.
func TestRev34AOKPathPointerAndListed(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 300)
	a := e.path("logs/a.log")
	appendTo(t, a, "a #0\n")
	d := e.start()
	waitUntil(t, "a #0 read", 20*time.Second, func() bool { return rev31BCounts(e)["a #0"] > 0 })
	mustRename(t, a, a+".1")
	appendTo(t, a, "l #0\n")
	k := fileKeyOf(t, a)
	waitUntil(t, "the new a.log listed", 10*time.Second, func() bool { return rev31BListed(t, e, k) })
	d.kill()
	if rev31BCounts(e)["l #0"] > 0 {
		t.Skip("the new a.log read before the kill")
	}
	ptrs, _ := os.ReadDir(e.path("state/feeds/app"))
	t.Logf("%d entries in the pointer dir at the kill", len(ptrs))
	mustRename(t, a+".1", a+".2")
	mustRename(t, a, a+".1")
	time.Sleep(20 * time.Millisecond)
	appendTo(t, a, "b #0\n")
	time.Sleep(20 * time.Millisecond)
	mustRename(t, a+".2", a+".3")
	mustRename(t, a+".1", a+".2")
	mustRename(t, a, a+".1")
	time.Sleep(20 * time.Millisecond)
	appendTo(t, a, "c #0\n")
	rev34AReadOnce(t, e, "f0299 #2", "a.log", "a #0", "l #0", "b #0", "c #0")
	rev34AOrder(t, e, t.Logf, "l #0", "b #0", "c #0") // (the stated order limit: logged)
}

// TestRev34AXFEmptyGenerationWrittenAfterStart: DESIGN §4 "every
// generation still on disk" (the later generations are read, and an old
// file is watched rotateWaitMillis after the switch: its late lines are
// delivered, downgraded), §10 "A file renamed out of the glob is read to
// its end (rotateWaitMillis after its last growth)". While down: z.log
// (listed) → z.log.1, logrotate creates an empty z.log (b), the
// application reopens it and writes nothing yet; the next rotation moves
// it to z.log.1 (z.log.1 → z.log.2) and creates an empty z.log (c). Right
// after the restart's first scan the application writes b #0 to its open
// descriptor (z.log.1), then reopens and writes c #0 to z.log.
// Suspected: listedGapsLocked skips a generation empty at the scan (size
// 0) and nothing looks at it again: b #0 read by nobody, lossless true.
// Observed 4/4 runs (queued gaps 0).
func TestRev34AXFEmptyGenerationWrittenAfterStart(t *testing.T) {
	var zp string
	rev34AAfterStart = func(e *env) {
		appendTo(t, zp+".1", "b #0\n")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, zp, "c #0\n")
	}
	defer func() { rev34AAfterStart = nil }()
	rev34ADown(t, "", false, nil, func(e *env, z string) {
		zp = z
		mustRename(t, z, z+".1")
		rev34ACreate(t, z, "")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		rev34ACreate(t, z, "")
	}, []string{"z #0", "z #1", "z #2", "b #0", "c #0"}, []string{"z #2", "b #0", "c #0"})
}

// TestRev34AOKListedStartedKilledThenGap: the listed z.log is large (3 MB:
// z #0, 250,000 padding lines, z end); while down the two rotations of
// TestRev34GenerationBornWhileDownAtListedPath (b between, c at the new
// z.log); the second start reads the listed file at z.log.2 (its stream's
// pointer names it now) and queues b, and is killed -9 while z.log.2 is
// half read, before b's first turn. A third start: z end, b #0, b #1, c #0
// once each (z #0 once: the exactlyOnce sink skips what it holds), in the
// path's order, nothing counted.
func TestRev34AOKListedStartedKilledThenGap(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 300)
	d := e.start()
	waitUntil(t, "the start over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	z := e.path("logs/z.log")
	var big strings.Builder
	big.WriteString("z #0\n")
	for i := range 250000 {
		fmt.Fprintf(&big, "z pad %06d\n", i)
	}
	big.WriteString("z end\n")
	rev34ACreate(t, z+".tmp", big.String())
	mustRename(t, z+".tmp", z)
	k := fileKeyOf(t, z)
	waitUntil(t, "z.log listed", 10*time.Second, func() bool { return rev31BListed(t, e, k) })
	d.kill()
	if rev31BCounts(e)["z #0"] > 0 {
		t.Skip("z.log read before the kill: the case needs it still waiting")
	}
	mustRename(t, z, z+".1")
	time.Sleep(20 * time.Millisecond)
	appendTo(t, z, "b #0\nb #1\n")
	time.Sleep(20 * time.Millisecond)
	mustRename(t, z+".1", z+".2")
	mustRename(t, z, z+".1")
	time.Sleep(20 * time.Millisecond)
	appendTo(t, z, "c #0\n")
	d = e.start()
	out := e.path("out/once.jsonl")
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := os.Stat(out); err == nil && st.Size() > 1<<20 { // z.log.2's first batch (the fillers write ~150 KB)
			break
		}
		time.Sleep(time.Millisecond)
	}
	d.kill()
	n := rev31BCounts(e)
	t.Logf("second start: queued gap generations %d; killed with z #0 ×%d, z end ×%d, b #0 ×%d",
		strings.Count(d.log(), "a generation born beside a glob path while tailfeed was down"), n["z #0"], n["z end"], n["b #0"])
	if n["z end"] > 0 || n["b #0"] > 0 {
		t.Skip("not killed while z.log.2 was half read")
	}
	rev34AReadOnce(t, e, "f0299 #2", "z.log", "z #0", "z pad 123456", "z end", "b #0", "b #1", "c #0")
	rev34AOrder(t, e, t.Errorf, "z end", "b #0", "c #0")
}

// TestRev34AOKOwnOutputNotAGeneration: a second file sink writes
// ./logs/z.log.9 (a logrotate name of z.log, tailfeed's own output). z.log
// (listed) killed -9; while down z.log → z.log.1, b written to a new z.log,
// z.log.1 → z.log.2, z.log → z.log.1, nothing at z.log after; the sink's
// output deleted (the restart makes it again, born after the listed file,
// with nothing at the path to bound it): the restart reads z, then b,
// once each, and not its own output (no "side" line read back: each filler
// line once).
func TestRev34AOKOwnOutputNotAGeneration(t *testing.T) {
	rev34ATmpl = rev31BManyTmpl + "  - {name: side, feed: app, type: file, path: ./logs/z.log.9, format: json}\n"
	defer func() { rev34ATmpl = "" }()
	e := rev34ADown(t, "", false, nil, func(e *env, z string) {
		mustRename(t, z, z+".1")
		time.Sleep(20 * time.Millisecond)
		appendTo(t, z, "b #0\nb #1\n")
		time.Sleep(20 * time.Millisecond)
		mustRename(t, z+".1", z+".2")
		mustRename(t, z, z+".1")
		if err := os.Remove(z + ".9"); err != nil {
			t.Fatal(err)
		}
	}, []string{"z #0", "z #2", "b #0", "b #1", "f0000 #0", "f0149 #2"}, []string{"z #2", "b #0"})
	for _, l := range rev31Lines(e.path("out/once.jsonl")) {
		if strings.HasPrefix(l, "{") {
			t.Fatalf("a line of tailfeed's own output read back: %.200s", l)
		}
	}
}
