package file_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// The tests of DESIGN §4 "Restart after rotation: every generation still on
// disk", "While running, too" and "Symlinks" (issue 11 items 1, 2, 3, 15).

// firstRun writes n lines "a-*" to r.path, runs the rig until they are
// committed and stops it; it returns the pointer's epoch.
func firstRun(t *testing.T, r *rig, n int) uint64 {
	t.Helper()
	appendTo(t, r.path, numbered("a", 0, n)...)
	r.start()
	r.waitLines(n)
	r.waitSettled()
	r.stop()
	return r.ptr.Record().Epoch
}

// mustRename renames, failing the test on an error.
func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// gzipFile compresses path into path.gz and removes path (as logrotate's
// compress does).
func gzipFile(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	if err := os.WriteFile(path+".gz", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// expectRuns checks that gs are exactly the runs of lines given, in order;
// each run is one epoch, the runs' epochs differ, and the first run's epoch
// is first (0: any). ends maps each run to its lines' positions (nil: not
// checked).
type run struct {
	lines []string
	ends  map[string]int64
}

func expectRuns(t *testing.T, gs []got, first uint64, runs ...run) {
	t.Helper()
	var want []string
	for _, r := range runs {
		want = append(want, r.lines...)
	}
	if len(gs) != len(want) {
		t.Fatalf("got %d lines, want %d; missing %d\nfirst got: %q", len(gs), len(want), missing(gs, want), lines(gs[:min(len(gs), 5)]))
	}
	i := 0
	seen := map[uint64]bool{}
	for k, r := range runs {
		e := gs[i].Epoch
		if seen[e] {
			t.Fatalf("run %d reuses the epoch %x of an earlier run", k, e)
		}
		seen[e] = true
		if k == 0 && first != 0 && e != first {
			t.Fatalf("run 0 under epoch %x, want the pointer's %x", e, first)
		}
		for _, l := range r.lines {
			g := gs[i]
			if g.Line != l || g.Epoch != e || !g.Positioned {
				t.Fatalf("line %d: %+v, want %q under epoch %x", i, g, l, e)
			}
			if r.ends != nil && g.Pos != r.ends[l] {
				t.Fatalf("line %d %q at %d, want %d", i, l, g.Pos, r.ends[l])
			}
			i++
		}
	}
}

// missing counts the lines of want never delivered.
func missing(gs []got, want []string) int {
	c := counts(gs)
	n := 0
	for _, l := range want {
		if c[l] == 0 {
			n++
		}
	}
	return n
}

// Item 1: logrotate create + rotate 5, two rotations while stopped. The
// pointer's file is now app.log.2; app.log.1 is the generation written in
// between. Both are read, oldest first, before app.log: nothing missing,
// nothing counted lost.
func TestRestartAfterTwoRotationsReadsTheMiddleGeneration(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	e1 := firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("m", 0, 300)...)
	time.Sleep(20 * time.Millisecond) // the middle generation is newer by its mtime
	mustRename(t, r.path+".1", r.path+".2")
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(330)
	r2.waitSettled()
	expectRuns(t, r2.rec.all(), e1,
		run{numbered("a", 50, 20), lineEnds(t, r.path+".2")},
		run{numbered("m", 0, 300), lineEnds(t, r.path+".1")},
		run{numbered("b", 0, 10), lineEnds(t, r.path)})
	if r2.src.LostTails() != 0 || r2.src.Detail() != "" {
		t.Fatalf("lostTails %d, detail %q", r2.src.LostTails(), r2.src.Detail())
	}
	if rec := r2.ptr.Record(); rec.FileKey != keyOf(t, r.path) || rec.Offset != lineEnds(t, r.path)["b-00009"] {
		t.Fatalf("pointer %+v, want the end of %s", rec, r.path)
	}
}

// Item 1 with rotate 1: the pointer's own file is gone (its unread tail is
// counted lost), but app.log.1, written after it, is still read before
// app.log.
func TestRestartRotateOneReadsTheGenerationLeft(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("m", 0, 300)...)
	mustRename(t, r.path, r.path+".1") // replaces the pointer's file
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(310)
	r2.waitSettled()
	expectRuns(t, r2.rec.all(), 0,
		run{numbered("m", 0, 300), lineEnds(t, r.path+".1")},
		run{numbered("b", 0, 10), lineEnds(t, r.path)})
	// The new file may reuse the deleted file's inode: then it looks like
	// a truncation while stopped, and the detail says so.
	if d := r2.src.Detail(); r2.src.LostTails() != 1 || (d != "rotated file gone; its unread tail is lost" && !strings.Contains(d, "truncated or rewritten while stopped")) {
		t.Fatalf("lostTails %d, detail %q; want 1 lost tail", r2.src.LostTails(), r2.src.Detail())
	}
}

// Item 2: copytruncate + compress (no delaycompress), one rotation while
// stopped. The unread tail is in app.log.1.gz: found by its decompressed
// fingerprint and read from the pointer's offset under the pointer's epoch,
// positions those of the decompressed bytes.
func TestRestartCopyTruncateCompressedReadsTheGz(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	e1 := firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 200)...)
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path+".1", data, 0o644); err != nil {
		t.Fatal(err)
	}
	ends := lineEnds(t, r.path+".1")
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	gzipFile(t, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(210)
	r2.waitSettled()
	expectRuns(t, r2.rec.all(), e1,
		run{numbered("a", 50, 200), ends},
		run{numbered("b", 0, 10), lineEnds(t, r.path)})
	if r2.src.LostTails() != 0 {
		t.Fatalf("lostTails %d, want 0", r2.src.LostTails())
	}
}

// Item 2, rename rotation + compress: the pointer's file is app.log.1.gz
// now (no file with its key): found by the decompressed fingerprint alone.
func TestRestartRenamedAndCompressedReadsTheGz(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	e1 := firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 200)...)
	mustRename(t, r.path, r.path+".1")
	ends := lineEnds(t, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...) // create, then compress
	gzipFile(t, r.path+".1")

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(210)
	r2.waitSettled()
	expectRuns(t, r2.rec.all(), e1,
		run{numbered("a", 50, 200), ends},
		run{numbered("b", 0, 10), lineEnds(t, r.path)})
	if r2.src.LostTails() != 0 {
		t.Fatalf("lostTails %d, want 0", r2.src.LostTails())
	}
}

// Item 2, no copy anywhere: a truncation found at restart while the pointer
// was past 0 counts one lost tail.
func TestRestartTruncatedWithoutCopyCountsALostTail(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	firstRun(t, r, 50)
	appendTo(t, r.path, numbered("a", 50, 200)...)
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(10)
	r2.waitSettled()
	expectRuns(t, r2.rec.all(), 0, run{numbered("b", 0, 10), lineEnds(t, r.path)})
	if r2.src.LostTails() != 1 {
		t.Fatalf("lostTails %d, want 1", r2.src.LostTails())
	}
}

// A .gz whose plain twin still exists is not read (the twin is), and one
// that does not end cleanly is skipped: a later generation compressed while
// stopped and another being compressed at the restart.
func TestRestartSkipsGzWithTwinOrTorn(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	e1 := firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("m", 0, 100)...)
	time.Sleep(20 * time.Millisecond)
	mustRename(t, r.path+".1", r.path+".2")
	mustRename(t, r.path, r.path+".1")
	// gzip of app.log.1 in progress: the .gz exists, the twin too.
	data, _ := os.ReadFile(r.path + ".1")
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	if err := os.WriteFile(r.path+".1.gz", b.Bytes()[:b.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(130)
	r2.waitSettled()
	time.Sleep(200 * time.Millisecond)
	expectRuns(t, r2.rec.all(), e1,
		run{numbered("a", 50, 20), nil},
		run{numbered("m", 0, 100), lineEnds(t, r.path+".1")},
		run{numbered("b", 0, 10), nil})
}

// symlinkRig makes dir/app.log a symlink to dir/real/current.log.
func symlinkRig(t *testing.T, o rigOpts) (*rig, string) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "real", "current.log")
	appendTo(t, target)
	if err := os.Symlink(filepath.Join("real", "current.log"), filepath.Join(dir, "app.log")); err != nil {
		t.Fatal(err)
	}
	return newRig(t, dir, o), target
}

// Item 3a: the link's target was rotated while stopped (renamed to
// current.log.1 beside it, a new current.log created): the rotated file is
// found beside the target, its unread tail is read.
func TestRestartSymlinkTargetRotated(t *testing.T) {
	t.Parallel()
	r, target := symlinkRig(t, rigOpts{strategy: file.Committed})
	e1 := firstRun(t, r, 50)

	appendTo(t, target, numbered("a", 50, 20)...)
	mustRename(t, target, target+".1")
	appendTo(t, target, numbered("b", 0, 10)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(30)
	r2.waitSettled()
	expectRuns(t, r2.rec.all(), e1,
		run{numbered("a", 50, 20), lineEnds(t, target+".1")},
		run{numbered("b", 0, 10), lineEnds(t, target)})
	if r2.src.LostTails() != 0 {
		t.Fatalf("lostTails %d, want 0", r2.src.LostTails())
	}
}

// Item 3b: copytruncate of a symlink's target while the daemon is behind:
// the copy beside the target is read from what was consumed; nothing is
// lost.
func TestSymlinkCopyTruncateWhileBehind(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	r, target := symlinkRig(t, rigOpts{strategy: file.Committed, block: block})
	pad := strings.Repeat("x", 90)
	var day1 []string
	for i := 0; i < 25000; i++ { // 2.4 MB: more than the source reads ahead
		day1 = append(day1, fmt.Sprintf("a-%05d %s", i, pad))
	}
	appendTo(t, target, day1...)
	r.start()
	r.waitFor("the source paused behind the blocked subscriber", 10*time.Second, func() bool { return r.pub.Paused() })
	data, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target+".1", data, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := os.Truncate(target, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, target, numbered("b", 0, 10)...)
	r.waitFor("the truncation noticed", 10*time.Second, func() bool { return r.warned("truncated") })
	close(block)
	r.waitLines(25010)
	r.waitSettled()
	gs := r.rec.all()
	expectRuns(t, gs, 0, run{day1, nil}, run{numbered("b", 0, 10), nil})
	if r.src.LostTails() != 0 || r.src.LostBytes() != 0 {
		t.Fatalf("lostTails %d, lostBytes %d", r.src.LostTails(), r.src.LostBytes())
	}
}

// Item 15: several rotations between two looks (no fsnotify, a slow poll):
// the path names a file that is not the one expected next; the
// generation written in between is found by the scan and queued before it.
func TestSeveralRotationsBetweenTwoLooks(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, poll: 1500 * time.Millisecond})
	appendTo(t, r.path, numbered("a", 0, 50)...)
	r.start()
	r.waitLines(50)
	r.waitSettled()
	time.Sleep(100 * time.Millisecond) // just after a look: the next is 1.4 s away

	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("m", 0, 300)...)
	mustRename(t, r.path+".1", r.path+".2")
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r.waitLines(380)
	r.waitSettled()
	time.Sleep(3 * r.opts.poll)
	r.waitSettled()
	expectRuns(t, r.rec.all(), 0,
		run{numbered("a", 0, 70), lineEnds(t, r.path+".2")},
		run{numbered("m", 0, 300), lineEnds(t, r.path+".1")},
		run{numbered("b", 0, 10), lineEnds(t, r.path)})
	if r.src.LostTails() != 0 {
		t.Fatalf("lostTails %d", r.src.LostTails())
	}
}

// A .gz generation that does not end cleanly at the restart (no plain twin:
// being copied in) is skipped, then read once it ends cleanly, beside the
// current file (downgraded).
func TestTornGzIsReadOnceComplete(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	e1 := firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".2")
	var plain bytes.Buffer
	for _, l := range numbered("m", 0, 100) {
		plain.WriteString(l + "\n")
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write(plain.Bytes())
	w.Close()
	if err := os.WriteFile(r.path+".1.gz", gz.Bytes()[:gz.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(30)
	time.Sleep(200 * time.Millisecond) // not settled: the torn .gz is unread (BEHIND)
	expectRuns(t, r2.rec.all(), e1, run{numbered("a", 50, 20), nil}, run{numbered("b", 0, 10), nil})

	f, err := os.OpenFile(r.path+".1.gz", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(gz.Bytes()[gz.Len()/2:])
	f.Close()
	r2.waitLines(130)
	r2.waitSettled()
	time.Sleep(200 * time.Millisecond)
	ends := map[string]int64{}
	var off int64
	for _, l := range numbered("m", 0, 100) {
		off += int64(len(l)) + 1
		ends[l] = off
	}
	// Its place in the order is past: read beside the current file, its
	// lines under an epoch of their own, downgraded.
	gs := r2.rec.all()
	expectRuns(t, gs[:30], e1, run{numbered("a", 50, 20), nil}, run{numbered("b", 0, 10), nil})
	if len(gs) != 130 || r2.src.Downgraded() != 100 {
		t.Fatalf("%d lines, downgraded %d; want 130 and 100", len(gs), r2.src.Downgraded())
	}
	for i, l := range numbered("m", 0, 100) {
		g := gs[30+i]
		if g.Line != l || g.Positioned || g.Pos != ends[l] || g.Epoch == gs[0].Epoch || g.Epoch == gs[29].Epoch || g.Epoch != gs[30].Epoch {
			t.Fatalf("line %d: %+v, want %q at %d downgraded under an epoch of its own", 30+i, g, l, ends[l])
		}
	}
}

// While running, a generation the source read and that logrotate then
// compressed (app.log.1 -> app.log.1.gz) is not read again at the next
// rotation: the .gz is its twin by its first bytes.
func TestCompressedGenerationNotReadTwiceWhileRunning(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 50 * time.Millisecond})
	appendTo(t, r.path, numbered("a", 0, 50)...)
	r.start()
	r.waitLines(50)
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(60)
	r.waitSettled()
	gzipFile(t, r.path+".1")
	time.Sleep(200 * time.Millisecond) // app.log.1 closed: only its twin is left
	mustRename(t, r.path+".1.gz", r.path+".2.gz")
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("c", 0, 10)...)
	r.waitLines(70)
	r.waitSettled()
	time.Sleep(300 * time.Millisecond)
	expectRuns(t, r.rec.all(), 0, run{numbered("a", 0, 50), nil}, run{numbered("b", 0, 10), nil}, run{numbered("c", 0, 10), nil})
}

// logrotate dateext names (app.log-YYYYMMDD) are later generations by
// default; other names are found through rotatedNames.
func TestRestartGenerationNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		rotated []string
		g, m    string // the pointer's generation and the one after it
	}{
		{"dateext", nil, "app.log-20261201", "app.log-20261202"},
		{"dateext with a number", nil, "app.log-2026-12-01.1", "app.log-2026-12-01.2"},
		{"rotatedNames", []string{"app.log.old*"}, "app.log.old1", "app.log.old2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, "", rigOpts{strategy: file.Committed, rotated: tc.rotated})
			e1 := firstRun(t, r, 50)
			g, m := filepath.Join(r.dir, tc.g), filepath.Join(r.dir, tc.m)
			appendTo(t, r.path, numbered("a", 50, 20)...)
			mustRename(t, r.path, g)
			appendTo(t, r.path, numbered("m", 0, 30)...)
			time.Sleep(20 * time.Millisecond)
			mustRename(t, r.path, m)
			appendTo(t, r.path, numbered("b", 0, 10)...)

			r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, rotated: tc.rotated}).start()
			r2.waitLines(60)
			r2.waitSettled()
			expectRuns(t, r2.rec.all(), e1,
				run{numbered("a", 50, 20), lineEnds(t, g)},
				run{numbered("m", 0, 30), lineEnds(t, m)},
				run{numbered("b", 0, 10), lineEnds(t, r.path)})
		})
	}
}

// A pointer that holds no file (a first run that committed nothing) still
// reads the generations rotated since it was written before the file at
// the path: the lines written and rotated while stopped are not skipped.
func TestRestartEmptyRecordReadsGenerations(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path)
	r.start()
	r.waitSettled()
	r.stop()
	if rec := r.ptr.Record(); rec.FileKey != 0 || rec.FPLen != 0 {
		t.Fatalf("record %+v after a run that read nothing, want an empty one", rec)
	}
	appendTo(t, r.path, numbered("a", 0, 20)...)
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(30)
	r2.waitSettled()
	expectRuns(t, r2.rec.all(), 0,
		run{numbered("a", 0, 20), lineEnds(t, r.path+".1")},
		run{numbered("b", 0, 10), lineEnds(t, r.path)})
	if r2.src.LostTails() != 0 {
		t.Fatalf("lostTails %d", r2.src.LostTails())
	}
}

// A restart while a compressed later generation was being read finds it by
// its decompressed fingerprint (its file key holds other, compressed bytes)
// and goes on from the pointer under its epoch.
func TestRestartInsideCompressedGeneration(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	firstRun(t, r, 50)
	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("m", 0, 100)...)
	time.Sleep(20 * time.Millisecond)
	mustRename(t, r.path+".1", r.path+".2")
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)
	gzipFile(t, r.path+".1")

	hold := make(chan struct{})
	defer close(hold)
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, batchLines: 1,
		hold: map[string]chan struct{}{"m-00060": hold}}).start()
	var mEpoch uint64
	r2.waitFor("m-00059 committed", 10*time.Second, func() bool {
		gs := r2.rec.all()
		if len(gs) < 80 {
			return false
		}
		mEpoch = gs[79].Epoch
		rec := r2.ptr.Record()
		return rec.Epoch == mEpoch && rec.Offset == 60*8 && r2.src.CommitOK()
	})
	r2.stop()
	// app.log.2, read before, is older than the .gz's mtime minus 2 s, as it
	// would be outside a fast test (a .gz has no birth time to go by).
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(r.path+".2", old, old); err != nil {
		t.Fatal(err)
	}

	r3 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r3.waitLines(50)
	r3.waitSettled()
	gs := r3.rec.all()
	if len(gs) < 40 || gs[0].Epoch != mEpoch {
		t.Fatalf("first line %+v, want the compressed generation's epoch %x", gs[0], mEpoch)
	}
	// m-00060 may have been processed at the stop (held, then cancelled):
	// from the pointer on, nothing is missing.
	first := 0
	for first < len(gs) && gs[first].Line != "m-00060" {
		first++
	}
	if first != 0 {
		t.Fatalf("the restart began with %q, want m-00060", gs[0].Line)
	}
	expectRuns(t, gs, mEpoch, run{numbered("m", 60, 40), nil}, run{numbered("b", 0, 10), lineEnds(t, r.path)})
	if r3.src.LostTails() != 0 {
		t.Fatalf("lostTails %d", r3.src.LostTails())
	}
}

// The pointer's file copied away (cp + rm, another file system) and a new
// file created while stopped: the copy, found by its fingerprint alone, is
// read from the pointer first.
func TestRestartPointerFileCopiedAway(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	e1 := firstRun(t, r, 50)
	appendTo(t, r.path, numbered("a", 50, 20)...)
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path+".1", data, 0o644); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path+".new", numbered("b", 0, 10)...)
	mustRename(t, r.path+".new", r.path)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(30)
	r2.waitSettled()
	expectRuns(t, r2.rec.all(), e1,
		run{numbered("a", 50, 20), lineEnds(t, r.path+".1")},
		run{numbered("b", 0, 10), lineEnds(t, r.path)})
	if r2.src.LostTails() != 0 {
		t.Fatalf("lostTails %d", r2.src.LostTails())
	}
}

// A .gz that ended cleanly when found and is cut before it is read: what it
// can no longer give is counted (lostTails, lostBytes), never green.
func TestGzCutBeforeReadIsCounted(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	firstRun(t, r, 50)
	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".1")
	// A generation that compresses badly, so that its .gz is far larger than
	// what the reader buffers when it opens it.
	var m []string
	for i := 0; i < 40000; i++ {
		m = append(m, fmt.Sprintf("m-%05d %x", i, uint64(i)*0x9E3779B97F4A7C15^uint64(i*i)<<17))
	}
	appendTo(t, r.path, m...)
	time.Sleep(20 * time.Millisecond)
	mustRename(t, r.path+".1", r.path+".2")
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)
	gzipFile(t, r.path+".1")
	st, err := os.Stat(r.path + ".1.gz")
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 256<<10 {
		t.Fatalf("the .gz is only %d bytes", st.Size())
	}

	hold := make(chan struct{})
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, hold: map[string]chan struct{}{"a-00055": hold}}).start()
	r2.waitFor("the .gz queued", 10*time.Second, func() bool { return strings.Contains(r2.logs.String(), "queued a later generation") })
	if err := os.Truncate(r.path+".1.gz", st.Size()/2); err != nil {
		t.Fatal(err)
	}
	close(hold)
	r2.waitLine("b-00009")
	r2.waitSettled()
	if r2.src.LostTails() != 1 || r2.src.LostBytes() == 0 {
		t.Fatalf("lostTails %d lostBytes %d after a .gz cut before it was read; want 1 and > 0", r2.src.LostTails(), r2.src.LostBytes())
	}
	c := map[string]int{}
	for _, g := range r2.rec.all() {
		c[strings.Fields(g.Line)[0]]++
	}
	if c["m-00000"] != 1 || c["m-39999"] != 0 || c["b-00009"] != 1 {
		t.Fatalf("m-00000 %d, m-39999 %d, b-00009 %d, lostBytes %d\n%s", c["m-00000"], c["m-39999"], c["b-00009"], r2.src.LostBytes(), tailOf(r2.logs.String(), 30))
	}
}

// Item 15 through a symlink: the link's target rotated twice between two
// looks; the generation in between is found beside the target.
func TestSymlinkSeveralRotationsBetweenTwoLooks(t *testing.T) {
	t.Parallel()
	r, target := symlinkRig(t, rigOpts{strategy: file.Committed, noNotify: true, poll: 1500 * time.Millisecond})
	appendTo(t, target, numbered("a", 0, 50)...)
	r.start()
	r.waitLines(50)
	r.waitSettled()
	time.Sleep(100 * time.Millisecond)

	appendTo(t, target, numbered("a", 50, 20)...)
	mustRename(t, target, target+".1")
	appendTo(t, target, numbered("m", 0, 300)...)
	mustRename(t, target+".1", target+".2")
	mustRename(t, target, target+".1")
	appendTo(t, target, numbered("b", 0, 10)...)

	r.waitLines(380)
	r.waitSettled()
	time.Sleep(3 * r.opts.poll)
	r.waitSettled()
	expectRuns(t, r.rec.all(), 0,
		run{numbered("a", 0, 70), lineEnds(t, target+".2")},
		run{numbered("m", 0, 300), lineEnds(t, target+".1")},
		run{numbered("b", 0, 10), lineEnds(t, target)})
}
