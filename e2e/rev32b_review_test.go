package e2e

// Review 32b of the thirty-second session (ef249de): a clean stop lists a
// never-read file waiting beside its path (leftFrom, or the previous run's
// listed file: s.listed) under the path it left (besidePath), and the next
// start reads it there (readListedBesideAll); listedOrder chains the files
// listed under one path oldest first by mtime, then the file at the path.
//
// Findings (fail on ef249de):
//   A TestRev32BXEqualMtimeGenerationsOrder — two generations listed under
//     one path with equal mtimes: published newest first about half the time.
//   B TestRev32BXListedShortenedWhileDown — the stop-listed file cut while
//     down (same first 4,096 bytes): its cut lines lost silently (the stop
//     counted the file before ef249de).
//   C TestRev32BXListedRotatedAgainThenStopped (and its leftFrom twin
//     TestRev32BXLeftRenamedAgainThenStopped) — the waiting beside file
//     renamed again beside its path before the stop: counted lost by the
//     stop, never read (a kill -9 there reads it).
//   D TestRev32BXExcludedListedFileRead — a listed file at its own path
//     excluded by a config change is read anyway (not from ef249de).
//   E TestRev32BXListedGrewThenStoppedDeleted — the stop's entry keeps the
//     size seen at the start: lostBytes short by what the file grew.
//   F TestRev32BXGenerationNotListedDeletedSilent — a listed beside file
//     the stop leaves to a genOwn stream's source (readAsGeneration),
//     deleted while down: lost silently (a kill -9 there counts it).
//
// All fixed in the same session: A listedOrder breaks mtime ties by
// rotation rank; B readListedBeside counts the bytes a listed file lost
// to a cut; C followBeside looks for the file again beside the path it
// left; D readListedBeside leaves a file still at its listed path to
// countUnreadGone's rule (not matched: the operator's choice); E the
// stop's entry takes the size seen at its look; F the stop lists such a
// file as the running list does. These tests run in the first e2e shard
// (Makefile E2E_SHARD: ^TestRev32).

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// rev32BStoppedListed: rev31BRotatedWhileDown (z.log.1 = z #0..#2 listed by
// a kill -9, z.log = z #3, z #4 new), a second start stopped cleanly once
// "glob feed started" is logged, z.log.1 still queued behind the fillers
// (skips otherwise): the stop lists z.log.1 under logs/z.log (ef249de).
// Returns z.log.1's key.
func rev32BStoppedListed(t *testing.T, e *env) uint64 {
	t.Helper()
	k := rev31BRotatedWhileDown(t, e)
	rev32BStartStop(t, e)
	if !rev31BListed(t, e, k) {
		lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
		t.Fatalf("the stop did not list z.log.1 (key %d): list %s", k, lb)
	}
	return k
}

// rev32BStartStop: a start stopped cleanly at once ("glob feed started");
// skips when z was read before the stop.
func rev32BStartStop(t *testing.T, e *env) {
	t.Helper()
	d := e.start()
	waitUntil(t, "the start over", 20*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	d.stop()
	if n := rev31BCounts(e); n["z #0"] > 0 || n["z #3"] > 0 {
		t.Skip("z read before the stop")
	}
}

// rev32BSettle: a start run until settled (and a second more); its report.
func rev32BSettle(t *testing.T, e *env) (*daemon, *report) {
	t.Helper()
	d := e.start()
	d.waitFor("settled", 90*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	return d, r
}

// TestRev32BXEqualMtimeGenerationsOrder: DESIGN §10 "**Order.** The epoch
// barrier of §4 holds per path: a new file at a path is published after
// every line of the file previously at that path is acknowledged"; §4
// generations are "read oldest first by mtime, ties by rotation rank (a
// higher number first…)". Scenario: rev32BStoppedListed (the second run's
// stop lists z.log.1 = z #0..#2 under logs/z.log, and z.log = z #3, #4
// in the glob); while down logrotate again — z.log.1 → z.log.2, z.log →
// z.log.1, a new z.log (z #5) — and the two rotated files have the same
// mtime (two rotations within one mtime tick: a 1-s or 2-s granular file
// system, or a tool that sets times). The third start finds both beside
// logs/z.log from the list (readListedBesideAll) and chains them by mtime
// alone. Observed: sink order z #3, z #4, z #0, z #1, z #2, z #5 in 5 of
// 8 single rounds (lossless true, every line once; the other 3 in order);
// the test runs up to 4 rounds, failing at the first out of order (about
// 95% of runs). Expected z #0..#5 in
// order (z.log.2 before z.log.1: the rank tie-break, or the order the
// stopping run knew: z.log waited for z.log.1 — its after barrier).
// Suspected cause: source/file/glob.go:5757 — listedOrder sorts by mtime
// only (SortStableFunc over the entries in unread-list order); the list's
// order is map order (waitingAtStop ranges over g.byKey, glob.go:5618), so
// ties fall either way; the rotation rank and the previous run's barrier
// are not used.
func TestRev32BXEqualMtimeGenerationsOrder(t *testing.T) {
	// Up to 4 rounds (each ~2.5 s): the tie falls by map order, so one
	// round shows it about half the time; the test fails at the first
	// round out of order.
	for round := range 4 {
		if !rev32BEqualMtimeRound(t, round) {
			return
		}
	}
}

// rev32BEqualMtimeRound: one round of TestRev32BXEqualMtimeGenerationsOrder;
// false when it failed.
func rev32BEqualMtimeRound(t *testing.T, round int) bool {
	e := newEnv(t, rev31BManyTmpl)
	rev32BStoppedListed(t, e)
	z := e.path("logs/z.log")
	if err := os.Rename(z+".1", z+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "z #5\n")
	tick := time.Now().Add(-10 * time.Second).Truncate(time.Second)
	for _, p := range []string{z + ".2", z + ".1"} {
		if err := os.Chtimes(p, tick, tick); err != nil {
			t.Fatal(err)
		}
	}
	d, r := rev32BSettle(t, e)
	waitUntil(t, "z #5", 20*time.Second, func() bool { return rev31BCounts(e)["z #5"] > 0 })
	d.stop()
	order := rev31CZOrder(e)
	want := []string{"z #0", "z #1", "z #2", "z #3", "z #4", "z #5"}
	t.Logf("round %d: z in the sink: %v lossless %v lostTails %d", round, order, r.Lossless, r.Feeds[0].LostTails)
	if strings.Join(order, ",") != strings.Join(want, ",") || !r.Lossless {
		t.Errorf("round %d: z in the sink %v, want %v (z.log.2, then z.log.1, then z.log); lossless %v lostTails %d", round, order, want, r.Lossless, r.Feeds[0].LostTails)
		return false
	}
	return true
}

// TestRev32BOKStoppedTwice: rev32BStoppedListed, then a third start
// stopped at once as well (z.log.1 listed again by s.listed), then a
// fourth start: z #0..#4 once each, z.log.1's before z.log's, nothing
// counted; stopped and started again: not listed, nothing read again.
func TestRev32BOKStoppedTwice(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	k := rev32BStoppedListed(t, e)
	rev32BStartStop(t, e)
	if !rev31BListed(t, e, k) {
		t.Errorf("the third run's stop did not list z.log.1 again")
	}
	d, r := rev32BSettle(t, e)
	rev32BCheckZ(t, e, r, 0, 0)
	// Read: listed no more, never read again by a further restart.
	d.stop()
	if rev31BListed(t, e, k) {
		t.Errorf("z.log.1 still listed after it was read")
	}
	_, r = rev32BSettle(t, e)
	rev32BCheckZ(t, e, r, 0, 0)
}

// TestRev32BOKListedDeletedWhileDown: rev32BStoppedListed, z.log.1
// deleted while down: the next start counts it (lostTails 1, lostBytes
// 15), z #3, #4 once; two further stop/start rounds count nothing more.
func TestRev32BOKListedDeletedWhileDown(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev32BStoppedListed(t, e)
	if err := os.Remove(e.path("logs/z.log.1")); err != nil {
		t.Fatal(err)
	}
	d, r := rev32BSettle(t, e)
	// Stopped and started again (and the same once more): counted once.
	d.stop()
	d, _ = rev32BSettle(t, e)
	d.stop()
	d, _ = rev32BSettle(t, e)
	if l := rev31ALossesNaming(e, "z.log"); len(l) != 1 {
		t.Errorf("z.log.1's loss counted %d times across three starts: %v", len(l), l)
	}
	n := rev31BCounts(e)
	if n["z #3"] != 1 || n["z #4"] != 1 || n["z #0"] != 0 {
		t.Errorf("z #0, #3, #4 delivered %d/%d/%d times", n["z #0"], n["z #3"], n["z #4"])
	}
	if r.Lossless || r.Feeds[0].LostTails != 1 || r.Feeds[0].LostBytes != 15 {
		t.Errorf("z.log.1 (15 bytes, never read) deleted: lossless %v lostTails %d lostBytes %d, want false 1 15 (ledger %v)",
			r.Lossless, r.Feeds[0].LostTails, r.Feeds[0].LostBytes, rev31BLedger(e, "z.log"))
	}
}

// TestRev32BOKListedGrownWhileDown: rev32BStoppedListed, z.log.1 written
// to while down (its writer's descriptor): the next start reads it whole,
// z #2b too, before z.log's lines.
func TestRev32BOKListedGrownWhileDown(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev32BStoppedListed(t, e)
	appendTo(t, e.path("logs/z.log.1"), "z #2b\n")
	_, r := rev32BSettle(t, e)
	rev32BCheckZ(t, e, r, 0, 0)
	order := rev31CZOrder(e)
	want := "z #0,z #1,z #2,z #2b,z #3,z #4"
	if strings.Join(order, ",") != want {
		t.Errorf("z in the sink %v, want %s", order, want)
	}
}

// rev32BCopyListedStop: the copytruncate case (rev31CCopyWhileDown), then
// a second start stopped once it found the copy and before it read z
// (skips when the start found no copy or read z first).
func rev32BCopyListedStop(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, rev31BManyTmpl)
	rev31CCopyWhileDown(t, e)
	time.Sleep(50 * time.Millisecond)
	d := e.start()
	waitUntil(t, "the start over", 20*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	if !strings.Contains(d.log(), "z.log.1") {
		d.stop()
		t.Skip("the copy was not found by the second start (no birth times?)")
	}
	d.stop()
	if n := rev31BCounts(e); n["z #0"] > 0 || n["z #3"] > 0 {
		t.Skip("z read before the stop")
	}
	return e
}

// TestRev32BOKCopyListedStopped: the copytruncate case
// (rev31CCopyWhileDown: z.log.1 the copy of the listed z.log, z.log cut,
// z #3); the second start finds the copy (listedCopyBeside) and is stopped
// before reading it: the stop lists it by the copy's key; the third start
// reads z #0..#2 once, then z #3 once, nothing counted.
func TestRev32BOKCopyListedStopped(t *testing.T) {
	e := rev32BCopyListedStop(t)
	lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
	t.Logf("list after the second run: z entries: %v", rev31CGrep(string(lb), "z.log"))
	_, r := rev32BSettle(t, e)
	n := rev31BCounts(e)
	if n["z #0"] != 1 || n["z #1"] != 1 || n["z #2"] != 1 || n["z #3"] != 1 {
		t.Errorf("z #0..3 delivered %d/%d/%d/%d times", n["z #0"], n["z #1"], n["z #2"], n["z #3"])
	}
	if !r.Lossless || r.Feeds[0].LostTails != 0 {
		t.Errorf("lossless %v lostTails %d (ledger %v)", r.Lossless, r.Feeds[0].LostTails, rev31BLedger(e, "z.log"))
	}
	if order := strings.Join(rev31CZOrder(e), ","); order != "z #0,z #1,z #2,z #3" {
		t.Errorf("z in the sink %s", order)
	}
}

// rev32BCheckZ: z #0..#4 once each, z #2 before z #3, and the given
// lostTails / lostBytes (lossless when both are 0).
func rev32BCheckZ(t *testing.T, e *env, r *report, tails, bytes uint64) {
	t.Helper()
	n := rev31BCounts(e)
	for i := range 5 {
		if c := n[fmt.Sprintf("z #%d", i)]; c != 1 {
			t.Errorf("z #%d delivered %d times, want once", i, c)
		}
	}
	order := rev31CZOrder(e)
	i2, i3 := -1, -1
	for i, l := range order {
		switch l {
		case "z #2":
			i2 = i
		case "z #3":
			i3 = i
		}
	}
	if i2 < 0 || i3 < 0 || i2 > i3 {
		t.Errorf("z in the sink %v: want z.log.1's lines first", order)
	}
	f := r.Feeds[0]
	if f.LostTails != tails || f.LostBytes != bytes || r.Lossless != (tails == 0 && bytes == 0) {
		t.Errorf("lossless %v lostTails %d lostBytes %d, want %d %d (ledger %v)", r.Lossless, f.LostTails, f.LostBytes, tails, bytes, rev31BLedger(e, "z.log"))
	}
}

// TestRev32BXListedShortenedWhileDown: DESIGN §4 "**Nothing green over a
// loss.** `lossless` is true only while tailfeed can show that no line was
// skipped. Every case where it cannot is counted, in `lostTails` (files)
// and `lostBytes` … a truncation found at restart with no copy … counts
// one lost tail … — this also counts after a clean stop". Scenario: as
// rev32BStoppedListed, but z.log holds 100 lines of 64 bytes (6,400
// bytes, more than the 4,096 fingerprint bytes); the second run's stop
// lists z.log.1 under logs/z.log (size 6,400); while down z.log.1 is cut
// to 4,480 bytes (its first 70 lines: the same first 4,096 bytes). The
// third start finds it by key + first bytes (readListedBeside) and reads
// its 70 lines. Observed (3/3): lines 70..99 never delivered, lossless
// true, lostTails 0, lostBytes 0. Expected: the 1,920 bytes the list saw
// and the file no longer holds counted (lostTails 1, lostBytes 1,920), as
// the stop itself counted the whole file before ef249de (lostTails 1) —
// ef249de turned a counted loss into a silent one for this case.
// Suspected cause: source/file/glob.go:5720-5735 — readListedBeside
// (keyBeside by key + first bytes) never compares the file's size with
// the entry's Size (w.Size, written by waitingAtStop at glob.go:5632);
// countUnreadGone (glob.go:5910) then skips the entry as listedRead. (The
// same holds for a listed file still in the glob — "still in the glob:
// read now", glob.go:5795/5885 — not new in ef249de; the beside case is.)
func TestRev32BXListedShortenedWhileDown(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 200)
	z := e.path("logs/z.log")
	var b strings.Builder
	for i := range 100 {
		l := fmt.Sprintf("z #%02d ", i)
		b.WriteString(l + strings.Repeat("x", 63-len(l)) + "\n")
	}
	appendTo(t, z, b.String())
	rev31BKilledFirstRun(t, e, z)
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "n #0\n")
	k := fileKeyOf(t, z+".1")
	d := e.start()
	waitUntil(t, "the start over", 20*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	d.stop()
	if c := rev32BPrefixed(e, "z #"); c > 0 || rev31BCounts(e)["n #0"] > 0 {
		t.Skip("z read before the stop")
	}
	if !rev31BListed(t, e, k) {
		t.Fatal("the stop did not list z.log.1")
	}
	if err := os.Truncate(z+".1", 70*64); err != nil {
		t.Fatal(err)
	}
	_, r := rev32BSettle(t, e)
	f := r.Feeds[0]
	t.Logf("z lines delivered %d, n #0 %d; lossless %v lostTails %d lostBytes %d; ledger %v", rev32BPrefixed(e, "z #"), rev31BCounts(e)["n #0"], r.Lossless, f.LostTails, f.LostBytes, rev31BLedger(e, "z.log"))
	if got := rev32BPrefixed(e, "z #"); got < 100 && (r.Lossless || f.LostTails == 0 || f.LostBytes < uint64((100-got)*64)) {
		t.Errorf("%d of z.log.1's 100 listed lines delivered (cut while down), yet lossless %v lostTails %d lostBytes %d; want the cut %d bytes counted",
			got, r.Lossless, f.LostTails, f.LostBytes, (100-got)*64)
	}
}

// appendedHolds is a waitUntil condition: true once the bytes appended to
// path since the last call hold sub (a file that grows while it is polled,
// the sink of one running daemon; read again from its start if it
// shrank). Each call reads only what is new, so it can be polled every few
// milliseconds on a sink of a million lines and see the first line it
// waits for at once — re-parsing the whole sink at each poll took seconds
// per poll there, by which time the file it watched was read whole.
func appendedHolds(path, sub string) func() bool {
	var off int64
	return func() bool {
		b, from, ok := appendedFrom(path, off, int64(len(sub))-1)
		if !ok {
			return false
		}
		off = from + int64(len(b))
		return bytes.Contains(b, []byte(sub))
	}
}

// appendedLinesOver is a waitUntil condition: true once path holds more
// than n complete lines, counted over the bytes appended since the last
// call (again from the start if the file shrank), so that a kill "while
// the file is read" comes while it is.
func appendedLinesOver(path string, n int) func() bool {
	var off int64
	lines := 0
	return func() bool {
		b, from, ok := appendedFrom(path, off, 0)
		if !ok {
			return false
		}
		if from < off {
			lines = 0
		}
		off = from
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			lines += bytes.Count(b[:i+1], []byte{'\n'})
			off += int64(i + 1)
		}
		return lines > n
	}
}

// appendedFrom reads path from off-back on (from its start when the file is
// now shorter than off) and says where what it returns begins.
func appendedFrom(path string, off, back int64) ([]byte, int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, false
	}
	from := max(0, off-back)
	if fi.Size() < off {
		from = 0
	}
	b := make([]byte, fi.Size()-from)
	n, _ := f.ReadAt(b, from)
	return b[:n], from, true
}

// rev32BPrefixed: how many sink lines begin with p.
func rev32BPrefixed(e *env, p string) int {
	c := 0
	for _, l := range rev31Lines(e.path("out/once.jsonl")) {
		if strings.HasPrefix(l, p) {
			c++
		}
	}
	return c
}

// rev32BRotatedWhileDownN is rev31BRotatedWhileDown over n fillers.
func rev32BRotatedWhileDownN(t *testing.T, e *env, n int) uint64 {
	t.Helper()
	rev31BFiller(t, e, n)
	z := e.path("logs/z.log")
	appendTo(t, z, "z #0\nz #1\nz #2\n")
	rev31BKilledFirstRun(t, e, z)
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "z #3\nz #4\n")
	return fileKeyOf(t, z+".1")
}

// rev32BRotatedAgainWhileQueued: rev32BRotatedWhileDownN over 2,000
// fillers; the second start queues z.log.1 beside logs/z.log
// (readListedBeside) and, while it is still queued, logrotate runs again:
// z.log.1 → z.log.2, z.log → z.log.1, a new z.log (z #5). Then the second
// run goes on until settled (end ""), or is stopped / killed -9 after the
// housekeeping saw the rename and a third start runs until settled.
func rev32BRotatedAgainWhileQueued(t *testing.T, end string) {
	e := newEnv(t, rev31BManyTmpl)
	rev32BRotatedWhileDownN(t, e, 2000)
	d := e.start()
	waitUntil(t, "the start over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	z := e.path("logs/z.log")
	if err := os.Rename(z+".1", z+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "z #5\n")
	time.Sleep(800 * time.Millisecond)
	if n := rev31BCounts(e); n["z #0"] > 0 || n["z #3"] > 0 {
		d.kill()
		t.Skip("z read before the second rotation was seen")
	}
	switch end {
	case "stop":
		d.stop()
	case "kill":
		d.kill()
	}
	if end != "" {
		lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
		t.Logf("list after the second run: z entries %v; ledger %v", rev31CGrep(string(lb), "z.log"), rev31BLedger(e, "z.log"))
		d = e.start()
	}
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["f1999 #2"] > 0 })
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	order := rev31CZOrder(e)
	want := []string{"z #0", "z #1", "z #2", "z #3", "z #4", "z #5"}
	t.Logf("z in the sink: %v lossless %v lostTails %d ledger %v", order, r.Lossless, r.Feeds[0].LostTails, rev31BLedger(e, "z.log"))
	if strings.Join(order, ",") != strings.Join(want, ",") || !r.Lossless {
		t.Errorf("z in the sink %v, want %v; lossless %v lostTails %d lostBytes %d", order, want, r.Lossless, r.Feeds[0].LostTails, r.Feeds[0].LostBytes)
	}
}

// TestRev32BXListedRotatedAgainThenStopped: the commit's own promise (a
// stop lists a never-read file waiting beside its path, as a kill -9 leaves
// it listed, and the next start reads it), DESIGN §10 "A file renamed out
// of the glob is read to its end" and §4 "Nothing green over a loss" (no
// loss where nothing had to be lost). Scenario: rev32BRotatedAgainWhileQueued
// with a clean stop: the listed z.log.1 (z #0..#2, queued beside
// logs/z.log by the second start) is renamed z.log.2 by a second logrotate
// while it waits, then tailfeed is stopped. Observed (3/3): the stop counts
// it lost — "glob file …/z.log.1, out of the glob, was not read before the
// stop: its 15 bytes from offset 0" (lostTails 1, lostBytes 15, lossless
// false), the list names only z.log's two newer files, and z #0..#2 are
// never delivered though z.log.2 is on disk throughout. The same run ended
// by a kill -9 instead (the running list keeps the previous run's entry,
// key + first bytes under logs/z.log) or left running reads z #0..#5 in
// order, lossless (checked: rev32BRotatedAgainWhileQueued "kill", "", each
// 1/1, not kept: 15-28 s). Expected: listed (under logs/z.log, its first
// bytes read where it is now, z.log.2) and read by the next start.
// Suspected cause: source/file/glob.go:5527 (Close: `exists(s.path,
// s.key)`) and glob.go:5631 (waitingAtStop: the same) — s.path is the name
// readListedBeside found the file under (z.log.1); a queued stream already
// gone from the glob is not followed when its beside name changes, so the
// stop finds nothing there and falls to Close's count
// (glob.go:5529-5535) instead of looking for it by key (findBeside) as the
// queued stream's source (at its turn) and the next start after a kill -9
// (keyBeside) would. leftUnread (the only place s.path follows a gone
// queued stream, glob.go:1136) runs once, when the stream is seen gone.
func TestRev32BXListedRotatedAgainThenStopped(t *testing.T) {
	rev32BRotatedAgainWhileQueued(t, "stop")
}

// TestRev32BXLeftRenamedAgainThenStopped: finding C's leftFrom twin (the
// case 0f9f4ad listed while running, ef249de's besidePath at the stop):
// 3,000 fillers and z.log (z #0..#2) waiting (listed); z.log renamed
// z.log.1 (out of the glob, seen: leftUnread, leftFrom logs/z.log), then
// z.log.1 renamed z.log.2 while still waiting; a clean stop; a second
// start. Expected: z #0..#2 read once, nothing counted (a kill -9 there
// leaves the running list's entry, key + first bytes under logs/z.log,
// which the next start finds beside the path). Observed (1/1, 72 s): the
// stop counts "glob file …/z.log.1, out of the glob, was not read before
// the stop: its 15 bytes" (lostTails 1, lostBytes 15), the list names
// nothing of z, z #0..#2 never delivered. Same cause as
// TestRev32BXListedRotatedAgainThenStopped (glob.go:5527, 5631).
func TestRev32BXLeftRenamedAgainThenStopped(t *testing.T) {
	e, d, z, _ := rev32RenamedOutWhileWaiting(t, 3000)
	time.Sleep(500 * time.Millisecond)
	if err := os.Rename(z+".1", z+".2"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if rev31BCounts(e)["z #0"] > 0 {
		d.kill()
		t.Skip("z read while running")
	}
	d.stop()
	if rev31BCounts(e)["z #0"] > 0 {
		t.Skip("z read before the stop")
	}
	lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
	t.Logf("list after the stop: z entries %v; ledger %v", rev31CGrep(string(lb), "z.log"), rev31BLedger(e, "z.log"))
	d = e.start()
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["f2999 #2"] > 0 })
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	n := rev31BCounts(e)
	if n["z #0"] != 1 || n["z #1"] != 1 || n["z #2"] != 1 || !r.Lossless || r.Feeds[0].LostTails != 0 {
		t.Errorf("z #0..#2 delivered %d/%d/%d times (z.log.2 on disk throughout), lossless %v lostTails %d lostBytes %d; ledger %v",
			n["z #0"], n["z #1"], n["z #2"], r.Lossless, r.Feeds[0].LostTails, r.Feeds[0].LostBytes, rev31BLedger(e, "z.log"))
	}
}

// rev32BBigListed: 200 fillers and z.log of n lines "z #%06d"; a first run
// killed -9 (z.log listed), while down z.log → z.log.1 and a new z.log
// (n #0); a second start stopped at once (the stop lists z.log.1 under
// logs/z.log). Skips when z was read before.
func rev32BBigListed(t *testing.T, e *env, n int) {
	t.Helper()
	rev31BFiller(t, e, 200)
	z := e.path("logs/z.log")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "z #%06d\n", i)
	}
	appendTo(t, z, b.String())
	rev31BKilledFirstRun(t, e, z)
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "n #0\n")
	k := fileKeyOf(t, z+".1")
	d := e.start()
	waitUntil(t, "the start over", 20*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	d.stop()
	if rev32BPrefixed(e, "z #") > 0 {
		t.Skip("z read before the stop")
	}
	if !rev31BListed(t, e, k) {
		t.Fatal("the stop did not list z.log.1")
	}
}

// TestRev32BOKListedPartlyReadThenKilled: DESIGN §2/§4 (every line once
// in the exactlyOnce sink, nothing lost, "Nothing green over a loss": no
// loss counted when none happened). rev32BBigListed (z.log.1 = 1,000,000
// lines listed by the second run's stop); a third start reads z.log.1 —
// killed -9 once some of its lines are in the sink, before all; a fourth
// start. Expected: z #000000..#999999 once each, n #0 once, after them,
// nothing counted: passed 3/3 (10-13 s). (A stop there instead skipped
// 2 of 3 runs — the stop's drain read z.log.1 to its end — and was left
// out: CI shows no skips.)
func TestRev32BOKListedPartlyReadThenKilled(t *testing.T) { rev32BListedPartlyRead(t, true) }

func rev32BListedPartlyRead(t *testing.T, kill bool) {
	const n = 1000000
	e := newEnv(t, rev31BManyTmpl)
	rev32BBigListed(t, e, n)
	d := e.start()
	waitUntil(t, "z.log.1 read in part", 60*time.Second, appendedHolds(e.path("out/once.jsonl"), `"line":"z #`))
	if kill {
		d.kill()
	} else {
		d.stop()
	}
	got := rev32BPrefixed(e, "z #")
	if got >= n {
		t.Skip("z.log.1 read whole before the stop")
	}
	t.Logf("third run stopped with %d of %d z lines in the sink; list %v", got, n, rev31CGrep(func() string { b, _ := os.ReadFile(e.path("state/feeds/app/unread.list")); return string(b) }(), "z.log"))
	_, r := rev32BSettle(t, e)
	c := rev31BCounts(e)
	missing, twice := 0, 0
	for i := range n {
		switch c[fmt.Sprintf("z #%06d", i)] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	f := r.Feeds[0]
	t.Logf("z lines missing %d, delivered more than once %d, n #0 ×%d; lossless %v lostTails %d lostBytes %d; ledger %v", missing, twice, c["n #0"], r.Lossless, f.LostTails, f.LostBytes, rev31BLedger(e, "z.log"))
	if missing > 0 || twice > 0 || c["n #0"] != 1 || !r.Lossless || f.LostTails != 0 {
		t.Errorf("z.log.1 (on disk throughout): %d lines missing, %d twice; n #0 ×%d; lossless %v lostTails %d lostBytes %d",
			missing, twice, c["n #0"], r.Lossless, f.LostTails, f.LostBytes)
	}
}

// TestRev32BOKListedThenNewFileAtPathLater: DESIGN §10 "**Order.** The
// epoch barrier of §4 holds per path: a new file at a path is published
// after every line of the file previously at that path is acknowledged".
// Scenario: 200 fillers and z.log (1,000,000 lines "z #…"); a first run
// killed -9 (z.log listed); while down z.log renamed z.log.1 with no new
// file at the path (logrotate nocreate: the application has not written
// since); a second start stopped at once lists z.log.1 under logs/z.log
// (ef249de); a third start queues it beside logs/z.log
// (readListedBesideAll), and once it is started the application creates
// z.log again and writes n #0. Expected and observed (1/1, 11 s): n #0
// after every z line, each once.
func TestRev32BOKListedThenNewFileAtPathLater(t *testing.T) {
	const n = 1000000
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 200)
	z := e.path("logs/z.log")
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "z #%06d\n", i)
	}
	appendTo(t, z, b.String())
	rev31BKilledFirstRun(t, e, z)
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	k := fileKeyOf(t, z+".1")
	rev32BStartStop(t, e)
	if rev32BPrefixed(e, "z #") > 0 {
		t.Skip("z read before the stop")
	}
	if !rev31BListed(t, e, k) {
		t.Fatal("the stop did not list z.log.1")
	}
	d := e.start()
	waitUntil(t, "the start over", 20*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	appendTo(t, z, "n #0\n")
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, _ := d.status()
	lines := rev31Lines(e.path("out/once.jsonl"))
	iN, lastZ, zs := -1, -1, 0
	for i, l := range lines {
		if l == "n #0" {
			iN = i
		}
		if strings.HasPrefix(l, "z #") {
			lastZ = i
			zs++
		}
	}
	t.Logf("z lines %d (last at %d), n #0 at %d; lossless %v lostTails %d", zs, lastZ, iN, r.Lossless, r.Feeds[0].LostTails)
	if iN < 0 || iN < lastZ || zs != n || !r.Lossless {
		t.Errorf("n #0 (the new z.log) at sink line %d, z.log.1's last line at %d (%d z lines, want %d): want the new file after every line of the old; lossless %v",
			iN, lastZ, zs, n, r.Lossless)
	}
}

// rev32BConfigChanged: rev32BStoppedListed, then the config changed while
// down so that logs/z.log (the path z.log.1 is listed under, and z.log's
// own path) is no longer matched; a third start. No loss may be counted
// (nothing was lost: the operator's choice, as countUnreadGone says for
// z.log), nothing delivered twice.
func rev32BConfigChanged(t *testing.T, from, to string) {
	e := newEnv(t, rev31BManyTmpl)
	rev32BStoppedListed(t, e)
	e.tmpl = strings.Replace(e.tmpl, from, to, 1)
	if e.tmpl == rev31BManyTmpl {
		t.Fatal("config not changed")
	}
	_, r := rev32BSettle(t, e)
	n := rev31BCounts(e)
	t.Logf("z #0..#4 ×%d/%d/%d/%d/%d lossless %v lostTails %d; ledger %v", n["z #0"], n["z #1"], n["z #2"], n["z #3"], n["z #4"], r.Lossless, r.Feeds[0].LostTails, rev31BLedger(e, "z.log"))
	for i := range 5 {
		if c := n[fmt.Sprintf("z #%d", i)]; c > 1 {
			t.Errorf("z #%d delivered %d times", i, c)
		}
	}
	if !r.Lossless || r.Feeds[0].LostTails != 0 {
		t.Errorf("nothing lost (z.log excluded by the operator, z.log.1 on disk), yet lossless %v lostTails %d", r.Lossless, r.Feeds[0].LostTails)
	}
}

// TestRev32BOKConfigExcludeAdded: rev32BConfigChanged with an exclude of
// ./logs/z.log added. Observed: z.log.1 read (z #0..#2 once), nothing
// counted — and z.log read too (z #3, #4 once: finding D).
func TestRev32BOKConfigExcludeAdded(t *testing.T) {
	rev32BConfigChanged(t, "    path: ./logs/*.log\n", "    path: ./logs/*.log\n    exclude: [./logs/z.log]\n")
}

// TestRev32BOKConfigPathNarrowed: the same with path ./logs/f*.log.
func TestRev32BOKConfigPathNarrowed(t *testing.T) {
	rev32BConfigChanged(t, "    path: ./logs/*.log\n", "    path: ./logs/f*.log\n")
}

// TestRev32BXExcludedListedFileRead: DESIGN §10 "`exclude: [globs]` …
// removes matches"; countUnreadGone's own rule (glob.go:5913-5920, README):
// a listed file "still at its path, which the config no longer matches (an
// exclude, a changed or narrowed path): the operator's choice not to read
// it … not read any more (not counted lost)". Scenario: 200 fillers and
// z.log (z #0..#2); a first run stopped at once (z.log, waiting, on the
// unread list under its own path); the operator adds `exclude:
// [./logs/z.log]` (or narrows the path to ./logs/f*.log) while down; a
// second start. Observed (this test 1/1, and 1/1 at 0f9f4ad; the same in
// both rev32BConfigChanged runs for z.log's z #3, #4): z #0..#2 delivered, logged "glob file tracked and never read when tailfeed
// stopped was renamed out of the glob, or copied, while it was down: read
// from its start where it is: path=…/logs/z.log first=…/logs/z.log".
// Expected: not read (the exclude), not counted. Not from ef249de (the
// same at 0f9f4ad, checked; readListedBeside is review 31's) — but
// ef249de's stop now lists more files under paths (besidePath) that a
// config change can exclude: their beside files are read as well.
// Suspected cause: source/file/glob.go:5720-5733 — readListedBeside's
// keyBeside(w.Path, …) searches the entry path's directory and finds the
// file at w.Path itself; it checks only that the found name is not
// matched (g.matched(f.Name()), false for an excluded path) — not that
// the file is at w.Path, a path it no longer matches by the operator's
// choice (countUnreadGone's unmatchedAt runs after, and skips the entry
// as listedRead).
func TestRev32BXExcludedListedFileRead(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 200)
	z := e.path("logs/z.log")
	appendTo(t, z, "z #0\nz #1\nz #2\n")
	k := fileKeyOf(t, z)
	rev32BStartStop(t, e)
	if !rev31BListed(t, e, k) {
		t.Skip("z.log not listed by the stop")
	}
	e.tmpl = strings.Replace(e.tmpl, "    path: ./logs/*.log\n", "    path: ./logs/*.log\n    exclude: [./logs/z.log]\n", 1)
	d, r := rev32BSettle(t, e)
	n := rev31BCounts(e)
	t.Logf("z #0..#2 ×%d/%d/%d lossless %v lostTails %d; log on z.log: %v", n["z #0"], n["z #1"], n["z #2"], r.Lossless, r.Feeds[0].LostTails, rev31CGrep(d.log(), "z.log"))
	if n["z #0"] > 0 || !r.Lossless {
		t.Errorf("z.log, excluded by the config since the stop, read: z #0 ×%d (lossless %v)", n["z #0"], r.Lossless)
	}
}

// TestRev32BXListedGrewThenStoppedDeleted: DESIGN §4 "Every case where it
// cannot is counted, in `lostTails` (files) and `lostBytes` (the bytes
// known to be gone, where known)"; unreadlive.go: "The stop's list (Close)
// is exact". Scenario: rev32BRotatedWhileDownN over 2,000 fillers; the
// second start queues z.log.1 (15 bytes) beside logs/z.log; while it waits
// its writer appends "z #2b\n" (21 bytes now); the run is stopped cleanly
// (z.log.1 listed under logs/z.log), z.log.1 deleted while down; a third
// start. Expected lostTails 1, lostBytes 21. Observed (2/2): lostTails 1,
// lostBytes 15 ("…/z.log, tracked and never read when tailfeed stopped,
// is gone: its 15 bytes were never read"); the stop's entry itself reads
// {"fpLen":21,…,"size":15}: its first bytes were read at the stop (21 of
// them) but its size is the one queueBesideLocked saw at the start. Not a
// regression (before ef249de the stop counted the same 15 bytes itself),
// but the listing ef249de added carries the stale size: lostBytes short by
// what the file grew while it waited. Suspected cause:
// source/file/glob.go:5626-5632 — waitingAtStop lists Size: seenEnd(s),
// s.size of a gone queued stream, which nothing refreshes while it waits
// (the scan stats matched files only); writeUnreadList (glob.go:5666)
// reads the head then and could take the size from the same look.
func TestRev32BXListedGrewThenStoppedDeleted(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	k := rev32BRotatedWhileDownN(t, e, 2000)
	d := e.start()
	waitUntil(t, "the start over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	appendTo(t, e.path("logs/z.log.1"), "z #2b\n")
	time.Sleep(800 * time.Millisecond)
	d.stop()
	if n := rev31BCounts(e); n["z #0"] > 0 {
		t.Skip("z.log.1 read before the stop")
	}
	lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
	t.Logf("list after the stop: z entries %v", rev31CGrep(string(lb), "z.log"))
	if !rev31BListed(t, e, k) {
		t.Fatal("z.log.1 not listed by the stop")
	}
	if err := os.Remove(e.path("logs/z.log.1")); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["f1999 #2"] > 0 })
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	f := r.Feeds[0]
	t.Logf("lossless %v lostTails %d lostBytes %d; ledger %v", r.Lossless, f.LostTails, f.LostBytes, rev31BLedger(e, "z.log"))
	if r.Lossless || f.LostTails != 1 || f.LostBytes != 21 {
		t.Errorf("z.log.1 (21 bytes at the stop, never read) deleted while down: lossless %v lostTails %d lostBytes %d, want false 1 21",
			r.Lossless, f.LostTails, f.LostBytes)
	}
}

// TestRev32BOKCopyListedStoppedCopiedAgain: TestRev32BOKCopyListedStopped's
// stop (the copy z.log.1 listed by its own key under logs/z.log, z.log =
// z #3 listed in the glob), then a second copytruncate while down: z.log.1
// → z.log.2, z.log copied to z.log.1, cut, z #4 written. The third start:
// z #0..#4 once each, in order, nothing counted.
func TestRev32BOKCopyListedStoppedCopiedAgain(t *testing.T) {
	e := rev32BCopyListedStop(t)
	time.Sleep(50 * time.Millisecond)
	z := e.path("logs/z.log")
	if err := os.Rename(z+".1", z+".2"); err != nil {
		t.Fatal(err)
	}
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
	appendTo(t, z, "z #4\n")
	_, r := rev32BSettle(t, e)
	n := rev31BCounts(e)
	order := strings.Join(rev31CZOrder(e), ",")
	t.Logf("z in the sink %s lossless %v lostTails %d ledger %v", order, r.Lossless, r.Feeds[0].LostTails, rev31BLedger(e, "z.log"))
	if order != "z #0,z #1,z #2,z #3,z #4" || !r.Lossless || r.Feeds[0].LostTails != 0 {
		t.Errorf("z in the sink %s (counts %d/%d/%d/%d/%d), want z #0..#4 once in order; lossless %v lostTails %d",
			order, n["z #0"], n["z #1"], n["z #2"], n["z #3"], n["z #4"], r.Lossless, r.Feeds[0].LostTails)
	}
}

// rev32BGenOwn: 1,000 fillers and a.log = X (x #0..#2, sorted first, read
// at once: its pointer); while running a.log → a.log.1 (X) and a new a.log
// = A (a #0, a #1), waiting behind the fillers; a clean stop within
// rotateWaitMillis (X's pointer kept, A listed in the glob); while down
// logrotate again: a.log.1 → a.log.2, a.log → a.log.1, a new a.log = C
// (c #0). The second start gives X's pointer to C (adoptByPath: genOwn)
// and finds A beside a.log from the list (readListedBeside). end: "" runs
// it until settled; "stop" stops it at once and a third start settles.
func rev32BGenOwn(t *testing.T, end string) {
	e, a := rev32BGenOwnFirstRun(t)
	ptrs, _ := os.ReadDir(e.path("state/feeds/app"))
	t.Logf("pointer dir after the first run: %d entries", len(ptrs))
	if err := os.Rename(a+".1", a+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, "c #0\n")
	d := e.start()
	waitUntil(t, "the start over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	t.Logf("second run's log on a.log: %v", rev31CGrep(d.log(), "a.log"))
	if end == "stop" {
		d.stop()
		lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
		t.Logf("list after the second run: %v; ledger %v", rev31CGrep(string(lb), "a.log"), rev31BLedger(e, "a.log"))
		d = e.start()
	}
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["f0999 #2"] > 0 })
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	n := rev31BCounts(e)
	var order []string
	for _, l := range rev31Lines(e.path("out/once.jsonl")) {
		if strings.HasPrefix(l, "a #") || strings.HasPrefix(l, "c #") || strings.HasPrefix(l, "x #") {
			order = append(order, l)
		}
	}
	t.Logf("a/c/x in the sink %v lossless %v lostTails %d ledger %v", order, r.Lossless, r.Feeds[0].LostTails, rev31BLedger(e, "a.log"))
	if n["a #0"] != 1 || n["a #1"] != 1 || n["c #0"] != 1 || n["x #0"] != 1 || !r.Lossless {
		t.Errorf("a #0, a #1, c #0, x #0 delivered %d/%d/%d/%d times, want once; lossless %v lostTails %d",
			n["a #0"], n["a #1"], n["c #0"], n["x #0"], r.Lossless, r.Feeds[0].LostTails)
	}
}

// TestRev32BOKGenOwnStopped: rev32BGenOwn with the second run stopped at
// once: x, a, c lines once each, nothing counted (1/1; the run variant
// too). The order — c #0 before a #0, a #1 — is README's stated limit
// ("when the path's new file takes a previous run's pointer: then it may
// come first"; listedOrder skips a path stream with a pointer), not
// asserted.
func TestRev32BOKGenOwnStopped(t *testing.T) { rev32BGenOwn(t, "stop") }

// TestRev32BXGenerationNotListedDeletedSilent: DESIGN §4 "**Nothing green
// over a loss.** `lossless` is true only while tailfeed can show that no
// line was skipped. Every case where it cannot is counted". Scenario:
// 1,000 "f" fillers and a.log = X (read at once: its pointer); while
// running a.log → a.log.1 (X), a new a.log = A (a #0, a #1) waits behind
// the fillers; a clean stop (X's pointer kept, A listed in the glob). While
// down: 2,000 more fillers named "0…" (sorted before a.log), logrotate
// again (a.log.1 → a.log.2, a.log → a.log.1 = A, a new a.log = C, c #0).
// The second start gives X's pointer to C (genOwn, queued behind the "0"
// fillers) and queues A beside a.log from the list (readListedBeside); it
// is stopped at once: C's source has not reached its own file, so A is a
// later generation of C's pointer's file (readAsGeneration) — neither
// listed nor counted by the stop (left to C's source at the next start).
// While down A (a.log.1) is deleted. A third start. Observed (3/3; the
// same at 0f9f4ad, checked — not a regression, but the stop/kill parity
// ef249de set out to give): a #0, a #1 never delivered, lossless true,
// lostTails 0, the stop's list names nothing of a.log. Expected: A's 10
// never-read bytes counted (lostTails 1), as the kill -9 variant
// (TestRev32BOKGenerationListedKilledDeleted: the running list keeps the
// previous run's entry) has the next start count them: "…/a.log, tracked
// and never read when tailfeed stopped, is gone: its 10 bytes".
// Suspected cause: source/file/glob.go:2943 — leftBeside excludes
// readAsGeneration, so waitingAtStop (glob.go:5620) does not list A and
// Close (glob.go:5530) does not count it: nothing on disk names A, and the
// next start reads it only if it is still there as a later generation;
// whereas unreadlive.go:62-69 (waitingNow) lists s.listed whatever. A
// generation-aware entry (as the Out entries: First, Ptr, and
// countUnreadGone's laterGeneration test) would let the next start count
// it when gone and skip it when its source reads it.
func TestRev32BXGenerationNotListedDeletedSilent(t *testing.T) { rev32BGenerationDeleted(t, false) }

// TestRev32BOKGenerationListedKilledDeleted: the same second run killed -9
// instead of stopped: its running list names A, the third start counts it.
func TestRev32BOKGenerationListedKilledDeleted(t *testing.T) { rev32BGenerationDeleted(t, true) }

func rev32BGenerationDeleted(t *testing.T, kill bool) {
	e, a := rev32BGenOwnFirstRun(t)
	for i := range 2000 {
		appendTo(t, e.path(fmt.Sprintf("logs/0%04d.log", i)), fmt.Sprintf("0%04d #0\n", i))
	}
	if err := os.Rename(a+".1", a+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, "c #0\n")
	d := e.start()
	waitUntil(t, "the start over", 30*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	if kill {
		time.Sleep(300 * time.Millisecond) // countUnreadGone's rewrite
		d.kill()
	} else {
		d.stop()
	}
	if n := rev31BCounts(e); n["a #0"] > 0 || n["c #0"] > 0 {
		t.Skip("A or C read before the stop")
	}
	lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
	t.Logf("list after the second run: a entries %v; ledger %v", rev31CGrep(string(lb), "a.log"), rev31BLedger(e, "a.log"))
	if err := os.Remove(a + ".1"); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["01999 #0"] > 0 && rev31BCounts(e)["f0999 #2"] > 0 })
	d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, err := d.status()
	if err != nil {
		t.Fatal(err)
	}
	n := rev31BCounts(e)
	f := r.Feeds[0]
	t.Logf("a #0 ×%d c #0 ×%d; lossless %v lostTails %d lostBytes %d; ledger %v", n["a #0"], n["c #0"], r.Lossless, f.LostTails, f.LostBytes, rev31BLedger(e, "a.log"))
	if n["a #0"] == 0 && (r.Lossless || f.LostTails == 0) {
		t.Errorf("A (a.log.1, 10 bytes, never read, seen by the stop) deleted while down: not delivered, yet lossless %v lostTails %d", r.Lossless, f.LostTails)
	}
}

// rev32BGenOwnFirstRun: rev32BGenOwn's first run (X read, rotated, A
// waiting and listed, a clean stop); returns the env and a.log's path.
func rev32BGenOwnFirstRun(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 1000)
	a := e.path("logs/a.log")
	appendTo(t, a, "x #0\nx #1\nx #2\n")
	d := e.start()
	waitUntil(t, "x #2", 30*time.Second, func() bool { return rev31BCounts(e)["x #2"] > 0 })
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, "a #0\na #1\n")
	kA := fileKeyOf(t, a)
	waitUntil(t, "a.log listed", 10*time.Second, func() bool { return rev31BListed(t, e, kA) })
	d.stop()
	if n := rev31BCounts(e); n["a #0"] > 0 {
		t.Skip("A read in the first run")
	}
	return e, a
}
