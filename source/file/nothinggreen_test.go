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

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// gzipTo writes the content of src compressed to dst (as logrotate's
// compress does) and removes src.
func gzipTo(t *testing.T, src, dst string) {
	t.Helper()
	gzipKeep(t, src, dst)
	if err := os.Remove(src); err != nil {
		t.Fatal(err)
	}
}

// gzipKeep writes the content of src compressed to dst, src kept (gzip -k,
// or gzip before its unlink).
func gzipKeep(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Guarantee (DESIGN §2, §4): a file forgotten after every line of it was
// committed is not read again after a clean stop, even once compressed.
// Regression (review of issue 11, D1). logrotate create+compress (no
// delaycompress): app.log -> app.log.1, a new
// empty app.log, app.log.1 -> app.log.1.gz, app.log.1 removed. Every line of
// the old file was delivered and committed; the daemon forgets the deleted
// file (empty record) while it waits for the new file's first bytes. A clean
// stop, then a restart: the scan with the empty record's reference (the
// pointer file's mtime) reads app.log.1.gz again from its start. DESIGN §2:
// duplicates only after a crash.
func TestForgottenFileGzNotReadAgainAfterCleanStop(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: time.Hour})
	appendTo(t, r.path, numbered("a", 0, 50)...)
	r.start()
	r.waitLines(50)
	r.waitSettled()
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path) // create: a new empty file
	gzipTo(t, r.path+".1", r.path+".1.gz")
	r.waitFor("the deleted file forgotten", 10*time.Second, func() bool {
		return strings.Contains(r.logs.String(), "nothing of it is pending")
	})
	r.waitSettled()
	r.stop()

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	appendTo(t, r.path, "b-00000")
	r2.waitLines(1)
	r2.waitSettled()
	time.Sleep(300 * time.Millisecond)
	if got := lines(r2.rec.all()); len(got) != 1 {
		t.Fatalf("after a clean stop the restart delivered %d lines, want only b-00000 (the forgotten file's .gz re-read from its start: duplicates): first %q", len(got), got[:min(3, len(got))])
	}
}

// Guarantee (DESIGN §7 "Losses outlive the run"): one lost tail is counted
// once, not again at every restart. Regression (review of issue 11, D2).
// The input is removed (with
// lines after the last commit, or simply unseen) while tailfeed is stopped
// and nothing is at the path: the first restart counts the pointer's unread
// tail lost (right), but the pointer keeps naming the vanished file, so the
// second restart (systemd, a crash loop, an operator who acknowledged the
// loss with DELETE /admin/losses) counts the same tail again: a second
// ledger entry for one loss, and a feed turned lossy again after its loss
// was acknowledged.
func TestLostTailCountedOnceAcrossRestarts(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 20)...)
	r.start()
	r.waitLines(20)
	r.waitSettled()
	r.stop()
	appendTo(t, r.path, numbered("a", 20, 5)...) // written after the stop
	if err := os.Remove(r.path); err != nil {    // then the file is gone
		t.Fatal(err)
	}

	var l1 lossLog
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: l1.add}).start()
	r2.waitSettled()
	r2.stop()
	if n := len(l1.all()); n != 1 {
		t.Fatalf("first restart: %d losses, want 1", n)
	}

	var l2 lossLog
	r3 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: l2.add}).start()
	r3.waitSettled()
	r3.stop()
	if got := l2.all(); len(got) != 0 {
		t.Fatalf("second restart (nothing changed on disk) counted the same lost tail again: %+v", got)
	}
}

// Guarantee (DESIGN §4): a live copytruncate's unread lines are read from
// its copy even when the copy is already compressed. Regression (review of
// issue 11, D3). Live copytruncate + compress (no delaycompress): logrotate copies app.log
// to app.log.1, truncates app.log, compresses app.log.1 to app.log.1.gz and
// removes app.log.1. Lines appended before the copy that tailfeed had not
// read yet are all in app.log.1.gz (nothing was written between the copy and
// the truncate), but the live check looks for a plain copy only (readCopy ->
// findCopy): none is found, the lines are never read, and since tailfeed
// last saw the file at its read position nothing is counted: lossless with
// 30 lines missing that are on disk.
func TestLiveCopytruncateCompressReadsGzCopy(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, poll: 1500 * time.Millisecond})
	appendTo(t, r.path, numbered("a", 0, 20)...)
	var losses lossLog
	r.opts.onLoss = losses.add
	r.start()
	r.waitLines(20)
	r.waitSettled()
	time.Sleep(100 * time.Millisecond) // just after a poll: the next is ~1.4 s away
	appendTo(t, r.path, numbered("a", 20, 30)...)
	// logrotate copytruncate + compress
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path+".1", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	gzipTo(t, r.path+".1", r.path+".1.gz")
	appendTo(t, r.path, numbered("b", 0, 5)...)
	r.waitFor("b lines", 10*time.Second, func() bool { return counts(r.rec.all())["b-00004"] > 0 })
	r.waitSettled()
	c := counts(r.rec.all())
	missing := 0
	for _, l := range numbered("a", 20, 30) {
		if c[l] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of the 30 lines in app.log.1.gz were never delivered; losses counted: %+v (lostTails %d, lostBytes %d)",
			missing, losses.all(), r.src.LostTails(), r.src.LostBytes())
	}
}

// Guarantee: a FIFO at the path at restart, the pointer naming the rotated file: the
// rotated file's tail is read, the feed is FAILED, the stop works, and a
// regular file replacing the FIFO is read from its start.
func TestFifoAtRestartReadsRotatedTailAndRecovers(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 10)...)
	r.start()
	r.waitLines(10)
	r.waitSettled()
	r.stop()
	appendTo(t, r.path, numbered("a", 10, 10)...)
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscallMkfifo(r.path); err != nil {
		t.Fatal(err)
	}
	var l lossLog
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: l.add}).start()
	r2.waitLines(10)
	r2.waitFor("FAILED", 5*time.Second, func() bool { return r2.src.State() == file.Failed })
	os.Remove(r.path)
	appendTo(t, r.path, numbered("b", 0, 3)...)
	r2.waitLines(13)
	r2.waitSettled()
	done := make(chan struct{})
	go func() { r2.stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stop hangs")
	}
	c := counts(r2.rec.all())
	for k, v := range c {
		if v != 1 {
			t.Errorf("%s delivered %d times", k, v)
		}
	}
	if len(l.all()) != 0 || len(c) != 13 {
		t.Fatalf("losses %+v, lines %d", l.all(), len(c))
	}
}

// Guarantee (DESIGN §7 state): the feed is not CAUGHT_UP (nor settled) while
// a compressed generation is unread because it is still being written.
// Regression (review of issue 11, D4). A compressed generation still being written at restart (logrotate's
// compress running, the plain file already unlinked or written by a
// pipeline) is skipped "until the next look" (noteTorn/retryTorn), but
// nothing in the state knows it: the feed reports CAUGHT_UP with nothing
// pending (settled) while a generation's lines are unread.
func TestTornGzKeepsFeedBehind(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 10)...)
	r.start()
	r.waitLines(10)
	r.waitSettled()
	r.stop()
	if err := os.Rename(r.path, r.path+".2"); err != nil {
		t.Fatal(err)
	}
	// B, compressed; its .gz is only half written so far.
	appendTo(t, r.path+".1", numbered("b", 0, 200)...)
	data, _ := os.ReadFile(r.path + ".1")
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(data)
	zw.Close()
	full := zb.Bytes()
	if err := os.WriteFile(r.path+".1.gz", full[:len(full)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(r.path + ".1")
	appendTo(t, r.path, numbered("c", 0, 3)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitLines(3)
	time.Sleep(500 * time.Millisecond)
	st, pend := r2.src.State(), r2.pub.Pending()
	caughtUp := st == file.CaughtUp && pend == 0 && r2.src.CommitOK()
	// The compression finishes: its lines are read then.
	if err := os.WriteFile(r.path+".1.gz", full, 0o644); err != nil {
		t.Fatal(err)
	}
	r2.waitFor("b lines", 10*time.Second, func() bool { return counts(r2.rec.all())["b-00199"] > 0 })
	if caughtUp {
		t.Fatalf("reported CAUGHT_UP, nothing pending and committed (settled) while app.log.1.gz (200 lines) was unread")
	}
}

// Guarantee (DESIGN §4): every generation of two copytruncates while stopped
// is read once, none lost. copytruncate + compress + delaycompress, two runs while stopped: the first
// copy ends up as app.log.2.gz, the second copy is app.log.1.
func TestCopytruncateTwiceWhileStoppedGzLosesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 10)...)
	r.start()
	r.waitLines(10)
	r.waitSettled()
	r.stop()
	copytrunc := func() {
		data, _ := os.ReadFile(r.path)
		os.WriteFile(r.path+".1", data, 0o644)
		os.Truncate(r.path, 0)
	}
	appendTo(t, r.path, numbered("a", 10, 10)...)
	copytrunc()
	appendTo(t, r.path, numbered("b", 0, 10)...)
	time.Sleep(1100 * time.Millisecond)
	gzipTo(t, r.path+".1", r.path+".2.gz")
	copytrunc()
	appendTo(t, r.path, numbered("c", 0, 10)...)
	var l lossLog
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: l.add}).start()
	r2.waitFor("c-00009", 10*time.Second, func() bool { return counts(r2.rec.all())["c-00009"] > 0 })
	r2.waitSettled()
	c := counts(r2.rec.all())
	want := append(append(numbered("a", 10, 10), numbered("b", 0, 10)...), numbered("c", 0, 10)...)
	for _, w := range want {
		if c[w] != 1 {
			t.Errorf("%s delivered %d times", w, c[w])
		}
	}
	if len(c) != len(want) || len(l.all()) != 0 {
		t.Fatalf("delivered %d distinct (want %d): %v; losses %+v", len(c), len(want), lines(r2.rec.all()), l.all())
	}
}

// Guarantee (DESIGN §4 "Nothing green over a loss"): a torn .gz that
// disappears without its plain twin is never read: it counts one lost tail,
// and the feed, BEHIND while it waited, is CAUGHT_UP again (lossy).
// Regression (review of issue 11, D4).
func TestTornGzGoneCountsLostTail(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 10)...)
	r.start()
	r.waitLines(10)
	r.waitSettled()
	r.stop()
	if err := os.Rename(r.path, r.path+".2"); err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(strings.Join(numbered("b", 0, 200), "\n") + "\n"))
	zw.Close()
	full := zb.Bytes()
	if err := os.WriteFile(r.path+".1.gz", full[:len(full)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("c", 0, 3)...)
	var l lossLog
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: l.add}).start()
	r2.waitLines(3)
	time.Sleep(300 * time.Millisecond)
	if st := r2.src.State(); st != file.Behind || !r2.src.TornPending() {
		t.Fatalf("state %v, torn pending %v while a torn .gz is unread; want BEHIND and true", st, r2.src.TornPending())
	}
	if len(l.all()) != 0 {
		t.Fatalf("counted before the torn .gz was gone: %+v", l.all())
	}
	os.Remove(r.path + ".1.gz")
	r2.waitFor("the lost tail", 5*time.Second, func() bool { return r2.src.LostTails() == 1 })
	r2.waitSettled()
	if got := l.all(); len(got) != 1 || got[0].Counter != "lostTails" || r2.src.State() != file.CaughtUp || r2.src.TornPending() {
		t.Fatalf("losses %+v, state %v, torn pending %v; want one lost tail and CAUGHT_UP", got, r2.src.State(), r2.src.TornPending())
	}
}

// Guarantee (DESIGN §4): a queued file copytruncated before it was read
// has its copy read first even when the copy is already compressed
// (copytruncate + compress). Regression (review of issue 11, D3 extended to
// rewrittenUnread).
func TestQueuedFileCopytruncateCompressReadsGzCopy(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, block: block})
	appendTo(t, r.path, numbered("a", 0, 3000)...)
	var l lossLog
	r.opts.onLoss = l.add
	r.start()
	r.waitFor("the feed paused", 10*time.Second, r.pub.Paused)
	copyTruncate(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 500)...)
	r.waitFor("the file queued behind its copy", 10*time.Second, func() bool {
		return strings.Contains(r.logs.String(), "queued behind the open one")
	})
	time.Sleep(200 * time.Millisecond) // a few polls: the queued file's fingerprint covers b
	// copytruncate + compress: the copy of the queued file is a .gz at once.
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(r.path+".2.gz", zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("c", 0, 5)...)
	r.waitFor("the compressed copy found", 10*time.Second, func() bool { return r.warned("reading its copy first") })
	close(block)
	r.waitLines(3505)
	r.waitSettled()
	want := append(append(numbered("a", 0, 3000), numbered("b", 0, 500)...), numbered("c", 0, 5)...)
	if got := lines(r.rec.all()); strings.Join(got, ",") != strings.Join(want, ",") || len(l.all()) != 0 {
		t.Fatalf("got %d lines, want %d; losses %+v", len(got), len(want), l.all())
	}
}

// Guarantee (DESIGN §4 "While running, too"): a generation the source saw
// is never read again while running, even in a directory of more than 4096
// generations (the bound on what it remembers drops files no longer on
// disk first, never one still there). Regression (review of issue 11, S4).
func TestSeenGenerationsNotReadAgainInALargeDirectory(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	for i := 1; i <= 4200; i++ {
		if err := os.WriteFile(fmt.Sprintf("%s.%d", r.path, i), []byte(fmt.Sprintf("old-%05d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(t, r.path, "a-00000")
	r.start()
	r.waitLines(1)
	r.waitSettled()
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	r.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	appendTo(t, r.path, "b-00000")
	// 60 s, not 10: in CI (three e2e shards making pointers durable beside
	// it) b-00000 was still unread 10 s after the file appeared, state
	// BEHIND; alone it takes about a second, under three spinning
	// processes two to four. What is checked is that nothing is read
	// again, not how soon.
	r.waitFor("b-00000", 60*time.Second, func() bool { return counts(r.rec.all())["b-00000"] > 0 })
	r.waitSettled()
	if got := lines(r.rec.all()); len(got) != 2 {
		t.Fatalf("delivered %d lines, want 2 (a-00000, b-00000): generations seen at start read again, first %q", len(got), got[:min(4, len(got))])
	}
}

// Guarantee (DESIGN §4 "Nothing green over a loss", no false alarm): at a
// restart whose pointer's file is a .gz still being written (its plain file
// already unlinked), the source waits for it instead of counting the
// unread tail lost at once, then reads it from the pointer, positioned.
// Regression (review of issue 11, S1).
func TestTornPointerGzAtRestartIsAwaitedNotCounted(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 10)...)
	r.start()
	r.waitLines(10)
	r.waitSettled()
	r.stop()
	appendTo(t, r.path, numbered("a", 10, 10)...) // the unread tail
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(r.path + ".1")
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(data)
	zw.Close()
	full := zb.Bytes()
	if err := os.WriteFile(r.path+".1.gz", full[:len(full)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(r.path + ".1")
	appendTo(t, r.path, numbered("c", 0, 3)...)

	var l lossLog
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: l.add}).start()
	time.Sleep(700 * time.Millisecond)
	if st := r2.src.State(); st == file.CaughtUp || st == file.WaitingForFile {
		t.Fatalf("state %v while the pointer's .gz is being written", st)
	}
	if err := os.WriteFile(r.path+".1.gz", full, 0o644); err != nil {
		t.Fatal(err)
	}
	r2.waitFor("c-00002", 15*time.Second, func() bool { return counts(r2.rec.all())["c-00002"] > 0 })
	r2.waitSettled()
	want := append(numbered("a", 10, 10), numbered("c", 0, 3)...)
	if got := lines(r2.rec.all()); strings.Join(got, ",") != strings.Join(want, ",") || len(l.all()) != 0 || r2.src.Downgraded() != 0 {
		t.Log(r2.logs.String())
		t.Fatalf("got %q (downgraded %d), losses %+v; want %q, none", got, r2.src.Downgraded(), l.all(), want)
	}
}

// Guarantee (crash window, S3 and D2): a loss counted at start is in the
// ledger (OnLoss returned) before the pointer moves off the lost file: at
// the moment OnLoss runs, the pointer file on disk still holds the lost
// epoch, so a kill -9 between the two counts the loss again at the next
// start (two entries), never not at all.
func TestLossAtStartRecordedBeforeThePointerMoves(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cut  func(t *testing.T, path string)
	}{
		{"truncated while stopped", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			appendTo(t, path, "x")
		}},
		{"deleted while stopped, nothing at the path", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, "", rigOpts{strategy: file.Committed})
			appendTo(t, r.path, numbered("a", 0, 20)...)
			r.start()
			r.waitLines(20)
			r.waitSettled()
			r.stop()
			before, err := pointer.Inspect(filepath.Join(r.dir, "app.ptr"))
			if err != nil {
				t.Fatal(err)
			}
			tc.cut(t, r.path)
			var onDisk []uint64
			var l lossLog
			onLoss := func(x file.Loss) {
				rec, err := pointer.Inspect(filepath.Join(r.dir, "app.ptr"))
				if err != nil {
					t.Error(err)
				}
				onDisk = append(onDisk, rec.Epoch)
				l.add(x)
			}
			r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: onLoss}).start()
			r2.waitSettled()
			r2.stop()
			if len(l.all()) != 1 || len(onDisk) != 1 || onDisk[0] != before.Epoch || l.all()[0].Epoch != before.Epoch {
				t.Fatalf("losses %+v, pointer epochs on disk while counting %x; want one loss under %x, counted while the pointer still held it", l.all(), onDisk, before.Epoch)
			}
			after, err := pointer.Inspect(filepath.Join(r.dir, "app.ptr"))
			if err != nil || after.Epoch == before.Epoch {
				t.Fatalf("the pointer still holds the lost epoch after the start (%v): the next start counts it again", err)
			}
		})
	}
}
