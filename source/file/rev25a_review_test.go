package file_test

// Review 25a (the twin rule: a .gz is left out of the generations only for
// a plain twin read instead, twinRead). Findings, each failing on the
// reviewed code, all fixed in the twenty-fifth session: A, A2 (a twin the
// source reads by its key — the pointer's own file — is read instead, the
// .gz left out), B, B2 (retryTorn follows a torn .gz renamed on before it
// looks for a twin), D, D', F (the seen catalogue takes a file's first bytes
// again when it is closed for good); C in rev25a_review_internal_test.go; E parked
// (open_rev25a_test.go). Probes marked as such.

import (
	"bytes"
	"compress/gzip"
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// rev25aGz is data gzip-compressed.
func rev25aGz(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// rev25WriteGz writes data gzip-compressed to dst.
func rev25WriteGz(t *testing.T, dst string, data []byte) {
	t.Helper()
	if err := os.WriteFile(dst, rev25aGz(t, data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rev25Lines is lines joined, each ended by "\n".
func rev25Lines(lines ...string) []byte {
	return []byte(strings.Join(lines, "\n") + "\n")
}

// rev25AppendBytes appends b to the file at path (a compressor writing
// on; its write's error ignored, as the tests always did).
func rev25AppendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Close()
}

// rev25Running is a rig with o on app.log holding lines, started, every
// line delivered and settled.
func rev25Running(t *testing.T, o rigOpts, lines []string) *rig {
	t.Helper()
	r := newRig(t, "", o)
	appendTo(t, r.path, lines...)
	r.start()
	r.waitLines(len(lines))
	r.waitSettled()
	return r
}

// rev25CreateGz creates path (O_EXCL: a compressor's output begun) and
// writes first to it (nothing when empty); it is closed at the test's end
// if the test does not close it.
func rev25CreateGz(t *testing.T, path string, first []byte) *os.File {
	t.Helper()
	gz, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gz.Close() })
	if len(first) > 0 {
		if _, err := gz.Write(first); err != nil {
			t.Fatal(err)
		}
	}
	return gz
}

// rev25ZDelivered is how many of the 3 "z" lines (z-0..2) r delivered,
// counting repeats.
func rev25ZDelivered(r *rig) int {
	c := counts(r.rec.all())
	return c["z-00000"] + c["z-00001"] + c["z-00002"]
}

// rev25WaitZ waits (10 s at most: a loaded CI is slow) until the 3 "z"
// lines were delivered or a lost tail was counted, and returns the z lines
// delivered. A silent loss is neither, so it still fails, 10 s later.
func rev25WaitZ(r *rig) int {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if rev25ZDelivered(r) == 3 || r.src.LostTails() > 0 {
			break
		}
	}
	return rev25ZDelivered(r)
}

// rev25TwoGens: a running rig (rotatedNames "app.log.*.gz") on A (10 "a"
// lines, each after the line hdr when hdr is not empty), A rotated to
// app.log.1 and B (the same with "b" lines) made at app.log, delivered,
// then 300 ms: A read to its end and closed.
func rev25TwoGens(t *testing.T, hdr string) *rig {
	t.Helper()
	var pre []string
	if hdr != "" {
		pre = []string{hdr}
	}
	r := rev25Running(t, rigOpts{strategy: file.Committed, rotateWait: 100 * time.Millisecond, rotated: []string{"app.log.*.gz"}}, append(pre, numbered("a", 0, 10)...))
	mustRename(t, r.path, r.path+".1") // A
	appendTo(t, r.path, append(pre, numbered("b", 0, 10)...)...)
	r.waitLines(2 * (len(pre) + 10))
	r.waitSettled()
	time.Sleep(300 * time.Millisecond) // A read to its end and closed
	return r
}

// rev25ThirdGen rotates rev25TwoGens' B to app.log.3 and makes C (hdr, if
// not empty, and 10 "c" lines) at app.log, delivered, then 300 ms: the
// scan seen.
func rev25ThirdGen(t *testing.T, r *rig, hdr string) {
	t.Helper()
	var pre []string
	if hdr != "" {
		pre = []string{hdr}
	}
	mustRename(t, r.path, r.path+".3") // B
	appendTo(t, r.path, append(pre, numbered("c", 0, 10)...)...)
	r.waitLines(3 * (len(pre) + 10))
	time.Sleep(300 * time.Millisecond)
}

// rev25HeaderRig: a running rig (no inotify, a 1.5 s poll, default
// rotatedNames) on 10 "a" lines; A rotated to app.log-20261201 and B made
// at app.log holding only the line hdr, delivered and settled.
func rev25HeaderRig(t *testing.T, hdr string) *rig {
	t.Helper()
	r := rev25Running(t, rigOpts{strategy: file.Committed, noNotify: true, poll: 1500 * time.Millisecond, rotateWait: 100 * time.Millisecond}, numbered("a", 0, 10))

	mustRename(t, r.path, r.path+"-20261201") // A
	appendTo(t, r.path, hdr)                  // B: its header only (so far)
	r.waitLines(11)
	r.waitSettled()
	return r
}

// rev25TwoRotationsBetweenLooks: logrotate twice between two looks,
// compress without delaycompress: C (at app.log) to app.log-20261203.gz;
// D, the line hdr only, to app.log-20261204.gz; E (the line eHdr and 10
// "e" lines) at app.log.
func rev25TwoRotationsBetweenLooks(t *testing.T, r *rig, hdr, eHdr string) {
	t.Helper()
	c := r.path + "-20261203"
	mustRename(t, r.path, c)
	gzipTo(t, c, c+".gz")
	rev25WriteGz(t, r.path+"-20261204.gz", rev25Lines(hdr)) // D: its header only, rotated and compressed
	if err := os.WriteFile(r.path+".new", rev25Lines(append([]string{eHdr}, numbered("e", 0, 10)...)...), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRename(t, r.path+".new", r.path) // E
}

// rev25aPointerGzAtRestart: a first run on app.log (o, 50 lines
// committed), then, stopped, 20 more "a" lines, app.log rotated to
// app.log.1 and gzip running on it (app.log.1.gz half written, the plain
// app.log.1 beside it), 10 "b" lines at app.log; the restart's rig
// started and its 30 lines waited for. It returns both rigs, the whole
// .gz and firstRun's epoch.
func rev25aPointerGzAtRestart(t *testing.T, o rigOpts) (r, r2 *rig, gz []byte, e1 uint64) {
	t.Helper()
	r = newRig(t, "", o)
	e1 = firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".1")
	data, err := os.ReadFile(r.path + ".1")
	if err != nil {
		t.Fatal(err)
	}
	gz = rev25aGz(t, data)
	if err := os.WriteFile(r.path+".1.gz", gz[:len(gz)/2], 0o644); err != nil { // gzip running
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 = newRig(t, r.dir, o).start()
	r2.waitLines(30)
	return r, r2, gz, e1
}

// rev25aGzipDone finishes rev25aPointerGzAtRestart's gzip: the rest of gz
// written to app.log.1.gz, its input app.log.1 unlinked.
func rev25aGzipDone(t *testing.T, r *rig, gz []byte) {
	t.Helper()
	rev25AppendBytes(t, r.path+".1.gz", gz[len(gz)/2:])
	if err := os.Remove(r.path + ".1"); err != nil { // gzip done: its input unlinked
		t.Fatal(err)
	}
}

// rev25aTornAtRestart: a first run on app.log (o, 50 lines committed),
// then, stopped, 20 more "a" lines, app.log rotated to app.log.2, a torn
// app.log.1.gz (the first half of 100 "m" lines' gzip, no plain file of
// its name), 10 "b" lines at app.log; the restart delivers a-50..69 and
// b-0..9 and notes the torn .gz. It returns both rigs and the whole .gz.
func rev25aTornAtRestart(t *testing.T, o rigOpts) (r, r2 *rig, gz []byte) {
	t.Helper()
	r = newRig(t, "", o)
	e1 := firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".2")
	gz = rev25aGz(t, rev25Lines(numbered("m", 0, 100)...))
	if err := os.WriteFile(r.path+".1.gz", gz[:len(gz)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 = newRig(t, r.dir, o).start()
	r2.waitLines(30)
	time.Sleep(300 * time.Millisecond) // the torn .gz noted, retried at every poll
	expectRuns(t, r2.rec.all(), e1, run{numbered("a", 50, 20), nil}, run{numbered("b", 0, 10), nil})
	return r, r2, gz
}

// rev25aShift is logrotate's shift after rev25aTornAtRestart: app.log.2
// to app.log.3, the torn app.log.1.gz to app.log.2.gz, app.log to a plain
// app.log.1.
func rev25aShift(t *testing.T, r *rig) {
	t.Helper()
	mustRename(t, r.path+".2", r.path+".3")
	mustRename(t, r.path+".1.gz", r.path+".2.gz")
	mustRename(t, r.path, r.path+".1")
}

// rev25GzThenPlainOfItsName: with the source stopped, 20 more "a" lines
// (a-50..69) at p, p rotated to p.1 and compressed (p.1.gz), 30 "m"
// lines at a new p, which 20 ms later is rotated to a plain p.1 beside
// the .gz of its name (delaycompress switched on).
func rev25GzThenPlainOfItsName(t *testing.T, p string) {
	t.Helper()
	appendTo(t, p, numbered("a", 50, 20)...)
	mustRename(t, p, p+".1")
	gzipFile(t, p+".1")
	appendTo(t, p, numbered("m", 0, 30)...)
	time.Sleep(20 * time.Millisecond)
	mustRename(t, p, p+".1") // plain, beside the .gz of its name
}

// rev25Restart starts a rig with o on r's directory (a restart), waits
// for n lines and settles.
func rev25Restart(t *testing.T, r *rig, o rigOpts, n int) *rig {
	t.Helper()
	r2 := newRig(t, r.dir, o).start()
	r2.waitLines(n)
	r2.waitSettled()
	return r2
}

// rev25aNextGen writes 10 "c" lines at app.log after a rotation, waits for
// r2's 40 lines and 600 ms: retryTorn ran several polls.
func rev25aNextGen(t *testing.T, r, r2 *rig) {
	t.Helper()
	appendTo(t, r.path, numbered("c", 0, 10)...)
	r2.waitLines(40)
	time.Sleep(600 * time.Millisecond) // retryTorn ran several polls
}

// rev25SlowLooks waits for r's n lines, two polls and its settling, and
// returns what it delivered (its log shown when verbose).
func rev25SlowLooks(t *testing.T, r *rig, n int) []got {
	t.Helper()
	r.waitLines(n)
	time.Sleep(2 * r.opts.poll)
	r.waitSettled()
	gs := r.rec.all()
	if testing.Verbose() {
		t.Logf("log:\n%s", r.logs.String())
	}
	return gs
}

// rev25RotateBMakeC rotates rev25HeaderRig's B to app.log-20261202 and
// makes C (the line cHdr and 10 "c" lines) at app.log; once n lines are
// delivered, settled, 2 s (B read to its end and closed; just after a
// look), settled again.
func rev25RotateBMakeC(t *testing.T, r *rig, cHdr string, n int) {
	t.Helper()
	mustRename(t, r.path, r.path+"-20261202") // B
	if err := os.WriteFile(r.path, rev25Lines(append([]string{cHdr}, numbered("c", 0, 10)...)...), 0o644); err != nil {
		t.Fatal(err) // C
	}
	r.waitLines(n)
	r.waitSettled()
	time.Sleep(2 * time.Second) // B read to its end and closed; just after a look
	r.waitSettled()
}

// rev25CopyBeforeCut is the first half of logrotate's copytruncate while
// r runs: app.log's bytes copied to app.log.1, then 2 more lines of
// prefix p (p-10, p-11) written before the cut, delivered (n before
// them), settled.
func rev25CopyBeforeCut(t *testing.T, r *rig, p string, n int) {
	t.Helper()
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path+".1", data, 0o644); err != nil { // logrotate's copy
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered(p, 10, 2)...) // written before the cut
	r.waitLines(n + 2)
	r.waitSettled()
}

// rev25aWaitTornRead waits up to 3 s for r2 to deliver m-00099 (the torn
// generation's last line) or to count a lost tail.
func rev25aWaitTornRead(r2 *rig) {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && counts(r2.rec.all())["m-00099"] == 0 && r2.src.LostTails() == 0 {
		time.Sleep(20 * time.Millisecond)
	}
}

// A (NEW with this change: a duplicate where there was none): rotatedNames
// naming only the compressed generations ("app.log.*.gz", review 24d D's
// configuration). The pointer's file is rotated to app.log.1 (logrotate's
// compress without delaycompress) and gzip is running at the restart:
// app.log.1.gz half written, its plain twin app.log.1 beside it. The
// source finds the pointer's file by its key (app.log.1) and reads it from
// the pointer (a-50..69). The parent left the .gz out (a file of its name
// exists) and never looked at it again; now twinRead does not (the twin's
// name is no generation name: "nobody reads it"), so the scan notes the
// torn .gz and retryTorn waits for it. gzip finishes after the pointer's
// file was read and closed (rotateWait): retryTorn's twin check looks only
// at the files the source still holds, finds none with its first bytes,
// and reads the .gz beside the current file — the whole pointer's file
// again from its start (a-0..69, the 50 lines committed before the stop
// included), downgraded. (Also new: awaitTornPointerGen no longer skips
// that .gz either and holds the start in STARTING for tornWait — this
// test takes ~11 s — though the pointer's plain file is there to read.)
func TestRev25ARAGzOnlyNamesPointersFileCompressedAtRestartReadTwice(t *testing.T) {
	t.Parallel()
	o := rigOpts{strategy: file.Committed, rotated: []string{"app.log.*.gz"}}
	r, r2, gz, e1 := rev25aPointerGzAtRestart(t, o)
	time.Sleep(600 * time.Millisecond) // app.log.1 read and closed (rotateWait 300 ms)
	rev25aGzipDone(t, r, gz)
	r2.waitSettled()
	time.Sleep(700 * time.Millisecond)
	gs := r2.rec.all()
	if c := counts(gs); c["a-00000"] != 0 || c["a-00050"] != 1 || len(gs) != 30 {
		t.Fatalf("restart delivered %d lines (a-00000 %d times, a-00050 %d times; downgraded %d), want a-50..69 and b-0..9 once: the pointer's file read from the pointer, then again from its start through its .gz\nlines 30..: %q",
			len(gs), c["a-00000"], c["a-00050"], r2.src.Downgraded(), lines(gs[min(len(gs), 30):min(len(gs), 36)]))
	}
	expectRuns(t, gs, e1, run{numbered("a", 50, 20), nil}, run{numbered("b", 0, 10), nil})
}

// A2 (NEW with this change; A's configuration, gzip -k): the pointer's
// file rotated to app.log.1 and compressed keeping it (gzip -k, or a
// compressor reading it while the application still wrote its last lines
// to its descriptor: the .gz holds a-0..59, the plain file a-0..69). The
// parent left the .gz out (a file of its name); now the scan takes it for
// a later generation: skipGz rejects only a head exactly as long as the
// pointer's generation's fingerprint (here the whole 70-line file, the
// .gz's head 60 lines). a-0..59 are delivered again, 50 of them committed
// before the stop.
func TestRev25ARA2GzOnlyNamesPointersFileGzipKeptShorterReadTwice(t *testing.T) {
	t.Parallel()
	o := rigOpts{strategy: file.Committed, rotated: []string{"app.log.*.gz"}}
	r := newRig(t, "", o)
	e1 := firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 10)...)
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("a", 60, 10)...) // written after the compressor read the file
	mustRename(t, r.path, r.path+".1")
	rev25WriteGz(t, r.path+".1.gz", data) // app.log.1 kept
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := rev25Restart(t, r, o, 30)
	time.Sleep(500 * time.Millisecond)
	gs := r2.rec.all()
	if c := counts(gs); c["a-00000"] != 0 || c["a-00050"] != 1 || len(gs) != 30 {
		t.Fatalf("restart delivered %d lines (a-00000 %d times, a-00050 %d times), want a-50..69 and b-0..9 once: the pointer's file read from the pointer and again from its start through its .gz taken for a later generation\nfirst: %q",
			len(gs), c["a-00000"], c["a-00050"], lines(gs[:min(len(gs), 8)]))
	}
	expectRuns(t, gs, e1, run{numbered("a", 50, 20), nil}, run{numbered("b", 0, 10), nil})
}

// B (OLDER — the parent's rule, Lstat of the plain name, did the same —
// left by this change; a silent loss): a torn .gz generation (its
// compressor stalled: app.log.1.gz, no plain file of its name) is noted
// at the restart and waited for (retryTorn: counted lost after tornWait
// if it stays torn, read downgraded once it ends cleanly). logrotate then
// rotates with compress switched off (or delaycompress): app.log.1.gz to
// app.log.2.gz, app.log to a plain app.log.1. retryTorn asks twinRead
// about the .gz's OLD path: gzTwin finds no .gz there (gzHead fails: "too
// short to tell") and takes ANY file of its plain name for the twin — the
// new plain app.log.1, a generation name — so plain is true: the torn .gz
// is neither followed to app.log.2.gz (genMoved) nor counted lost; it is
// dropped. Its compressor then finishes it: its 100 lines are never read,
// lostTails 0, lossless.
func TestRev25ARBTornGzMovedOnBesideANewPlainOfItsOldNameDropped(t *testing.T) {
	t.Parallel()
	o := rigOpts{strategy: file.Committed}
	r, r2, gz := rev25aTornAtRestart(t, o)

	// logrotate (compress off): shift, then the live file to a plain .1.
	rev25aShift(t, r)
	rev25aNextGen(t, r, r2)
	rev25AppendBytes(t, r.path+".2.gz", gz[len(gz)/2:]) // the compressor finishes it
	rev25aWaitTornRead(r2)
	c := counts(r2.rec.all())
	if c["m-00000"] == 0 && r2.src.LostTails() == 0 {
		t.Fatalf("the torn generation (100 lines), moved on to app.log.2.gz beside a new plain app.log.1 and then finished: not read (m-0 %d times) and not counted (lostTails %d, detail %q)",
			c["m-00000"], r2.src.LostTails(), r2.src.Detail())
	}
}

// Probe (passes): review 24d B's case beside a symlinked path's final
// target (genDirs' second directory): the pointer's file (the target)
// rotated and compressed (current.log.1.gz), then a later generation
// rotated to a plain current.log.1 beside it (delaycompress added): not
// its twin. The .gz is read from the pointer, then the plain one, then the
// new target; nothing lost.
func TestRev25ARProbeSymlinkTargetGzBesideANonTwinPlainRead(t *testing.T) {
	t.Parallel()
	r, target := symlinkRig(t, rigOpts{strategy: file.Committed})
	e1 := firstRun(t, r, 50)

	rev25GzThenPlainOfItsName(t, target)
	appendTo(t, target, numbered("b", 0, 10)...)

	r2 := rev25Restart(t, r, rigOpts{strategy: file.Committed}, 60)
	time.Sleep(300 * time.Millisecond)
	expectRuns(t, r2.rec.all(), e1,
		run{numbered("a", 50, 20), nil},
		run{numbered("m", 0, 30), nil},
		run{numbered("b", 0, 10), nil})
	if n := r2.src.LostTails(); n != 0 {
		t.Fatalf("lostTails %d, want 0", n)
	}
}

// Probe (passes): the same while running. The source reads app.log; it is
// rotated to app.log.1 and compressed (the source read it to its end), then
// the next generation rotated to a plain app.log.1 beside the .gz
// (compress switched off): the scan at that rotation (queueLater) now
// looks at the .gz (not a twin of the plain file) and rejects it by the
// first bytes the seen catalogue holds for the file it read: each line
// once.
func TestRev25ARProbeRunningGzBesideANonTwinPlainNotReadAgain(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 50 * time.Millisecond})
	appendTo(t, r.path, numbered("a", 0, 50)...)
	r.start()
	r.waitLines(50)
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(60)
	r.waitSettled()
	time.Sleep(200 * time.Millisecond) // app.log.1 closed
	gzipFile(t, r.path+".1")
	mustRename(t, r.path, r.path+".1") // b's file, plain beside a's .gz
	appendTo(t, r.path, numbered("c", 0, 10)...)
	r.waitLines(70)
	r.waitSettled()
	time.Sleep(300 * time.Millisecond)
	expectRuns(t, r.rec.all(), 0, run{numbered("a", 0, 50), nil}, run{numbered("b", 0, 10), nil}, run{numbered("c", 0, 10), nil})
}

// rev25aStaleSeen runs a source on app.log (50 "a" lines) and rotates it
// while running: app.log to app.log.1, a new app.log ("b"), the
// application writing 10 more "a" lines to its descriptor (app.log.1)
// after the rotation was seen; once app.log.1 is read and closed
// (rotateWait), it is compressed (app.log.1.gz; shifted to app.log.2.gz
// if shift) and the next rotation made (app.log to a plain app.log.1, a
// new app.log with "c" lines). It returns what was delivered.
func rev25aStaleSeen(t *testing.T, shift bool) []got {
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 50 * time.Millisecond})
	appendTo(t, r.path, numbered("a", 0, 50)...)
	r.start()
	r.waitLines(50)
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(60)
	appendTo(t, r.path+".1", numbered("a", 50, 10)...) // written on to its descriptor
	r.waitLines(70)
	r.waitSettled()
	time.Sleep(300 * time.Millisecond) // app.log.1 read to its end and closed
	gzipFile(t, r.path+".1")
	if shift {
		mustRename(t, r.path+".1.gz", r.path+".2.gz")
	}
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("c", 0, 10)...)
	r.waitLines(80)
	r.waitSettled()
	time.Sleep(300 * time.Millisecond)
	return r.rec.all()
}

// D (NEW in this layout — the parent delivered each line once here — but
// its cause is older, see D'; a duplicate): while running, compress
// switched off between two rotations (review 24d B's layout): the first
// generation (app.log.1, 60 "a" lines, 10 of them written to its
// descriptor after the rotation was seen) compressed to app.log.1.gz, the
// next one rotated to a plain app.log.1 beside it. The parent left the
// .gz out (a file of its name); now it is no twin and the scan at the
// rotation (queueLater) looks at it: skipGz compares its head with the
// seen catalogue's fingerprint of the file, which noteSeen took when the
// rotation was seen (50 lines: it keeps an entry's first fingerprint, and
// refreshes a plain generation's only at the next noteSeen) and with the
// files still held (app.log.1 closed after rotateWait). Neither covers
// the .gz's 60 lines: the whole file is read again (a-0..59, in the scan's
// window: the rotations came within mtimeSlack). Only for generations
// shorter than 4 KiB (a full 4096-byte fingerprint matches).
func TestRev25ARDRunningGzBesideANonTwinPlainGrownAfterSeenReadTwice(t *testing.T) {
	t.Parallel()
	gs := rev25aStaleSeen(t, false)
	if c := counts(gs); c["a-00000"] != 1 || len(gs) != 80 {
		t.Fatalf("%d lines delivered (a-00000 %d times), want 80 each once: app.log.1.gz (beside a plain app.log.1 that is not its twin) read again as a later generation", len(gs), c["a-00000"])
	}
}

// D' (OLDER: fails at the parent too): D's cause with the .gz alone
// (logrotate's shift to app.log.2.gz, compress on): the same stale
// fingerprint in the seen catalogue, the whole first generation read
// again.
func TestRev25ARD2RunningGzOfAGenerationGrownAfterSeenReadTwice(t *testing.T) {
	t.Parallel()
	gs := rev25aStaleSeen(t, true)
	if c := counts(gs); c["a-00000"] != 1 || len(gs) != 80 {
		t.Fatalf("%d lines delivered (a-00000 %d times), want 80 each once: app.log.2.gz read again as a later generation", len(gs), c["a-00000"])
	}
}

// F (OLDER — not the twin rule: the seen catalogue; fails at the parent
// too; a duplicate of a whole generation): logrotate's nocreate +
// compress (no delaycompress), the application making its log again only
// at its next line. The source opened app.log while it was short (10
// lines: noteSeen keeps that first fingerprint for the file — an entry is
// never refreshed for a file held, and a plain generation's only while
// at a generation name at the next noteSeen); it grew past 4 KiB (600
// lines) and was rotated to app.log.1 with no file made at the path
// (missing: no noteSeen), read to its end and closed (rotateWait); then
// compressed (app.log.1.gz, the plain file unlinked). When the application
// makes app.log again, generationsBefore scans with no window for
// generations never seen: the .gz's key is new and its 4096-byte head
// matches no fingerprint in the catalogue (10 lines' worth). The whole
// generation — 600 lines, every one delivered and committed — is read
// again before the new file. (The same with a file that appeared while
// running: noted empty, fingerprint length 0.)
func TestRev25ARFNocreateCompressedGenerationReadAgainWhenThePathReappears(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 50 * time.Millisecond})
	appendTo(t, r.path, numbered("a", 0, 10)...)
	r.start()
	r.waitLines(10)
	appendTo(t, r.path, numbered("a", 10, 590)...) // past 4 KiB
	r.waitLines(600)
	r.waitSettled()
	mustRename(t, r.path, r.path+".1") // nocreate: no file at the path
	time.Sleep(400 * time.Millisecond) // read to its end and closed (rotateWait)
	gzipFile(t, r.path+".1")
	appendTo(t, r.path, numbered("c", 0, 10)...) // the application makes its log again
	r.waitLines(610)
	r.waitSettled()
	time.Sleep(400 * time.Millisecond)
	gs := r.rec.all()
	if c := counts(gs); len(gs) != 610 || c["a-00000"] != 1 {
		t.Fatalf("%d lines delivered (a-00000 %d times), want a-0..599 and c-0..9 once: app.log.1.gz, the generation read to its end before, read again when the path reappeared", len(gs), c["a-00000"])
	}
	expectRuns(t, gs, 0, run{numbered("a", 0, 600), nil}, run{numbered("c", 0, 10), nil})
}

// B2 (OLDER, as B; logrotate's compress without delaycompress — the
// common configuration): B's torn app.log.1.gz (a compressor's output cut
// short: a crash after gzip's unlink reached the disk but not all of its
// data) is waited for; logrotate runs (at boot, anacron) and shifts it to
// app.log.2.gz, rotates app.log to app.log.1 and compresses that to a new
// app.log.1.gz, its plain file still beside it while gzip runs. retryTorn
// finds another file at the torn .gz's old path and asks twinRead about
// that path: the new .gz and its plain twin — "plain" — so the torn one is
// neither followed to app.log.2.gz nor counted: dropped. Here it is then
// finished (its 100 lines on disk) and never read; had it stayed torn, it
// would never have been counted either.
func TestRev25ARB2TornGzShiftedWhileTheNextIsCompressedDropped(t *testing.T) {
	t.Parallel()
	o := rigOpts{strategy: file.Committed}
	r, r2, gz := rev25aTornAtRestart(t, o)

	// logrotate (compress): shift, rotate, gzip running on app.log.1.
	rev25aShift(t, r)
	data, err := os.ReadFile(r.path + ".1")
	if err != nil {
		t.Fatal(err)
	}
	rev25WriteGz(t, r.path+".1.gz", data)
	rev25aNextGen(t, r, r2)
	if err := os.Remove(r.path + ".1"); err != nil { // gzip done
		t.Fatal(err)
	}
	rev25AppendBytes(t, r.path+".2.gz", gz[len(gz)/2:]) // the torn one's rest (it could as well stay torn)
	rev25aWaitTornRead(r2)
	c := counts(r2.rec.all())
	if c["m-00000"] == 0 && r2.src.LostTails() == 0 {
		t.Fatalf("the torn generation (100 lines), shifted to app.log.2.gz while the next one was compressed to app.log.1.gz: not read (m-0 %d times) and not counted (lostTails %d, detail %q)",
			c["m-00000"], r2.src.LostTails(), r2.src.Detail())
	}
}

// Probe (passes): A with the default rotatedNames: the pointer's file
// rotated to app.log.1 and being compressed at the restart (app.log.1.gz
// half written), finished and its plain file unlinked after the pointer's
// file was read and closed. The twin is a generation name: the .gz is left
// out (never noted torn), the pointer's file read once from the pointer.
func TestRev25ARProbeDefaultNamesPointersFileCompressedAtRestartReadOnce(t *testing.T) {
	t.Parallel()
	o := rigOpts{strategy: file.Committed}
	r, r2, gz, e1 := rev25aPointerGzAtRestart(t, o)
	time.Sleep(600 * time.Millisecond)
	rev25aGzipDone(t, r, gz)
	r2.waitSettled()
	time.Sleep(700 * time.Millisecond)
	expectRuns(t, r2.rec.all(), e1, run{numbered("a", 50, 20), nil}, run{numbered("b", 0, 10), nil})
	if n := r2.src.LostTails(); n != 0 {
		t.Fatalf("lostTails %d, want 0", n)
	}
}
