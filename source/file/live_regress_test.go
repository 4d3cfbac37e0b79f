package file_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tailfeed/source/file"
)

// Review of h/live (issue 11 item 4). A file found at the path after a
// rotation is rewritten (same size, other bytes) while the epoch barrier
// waits for the old file's last line; the barrier is crossed before the
// next poll (poll-only file system: no fsnotify). crossBarrier re-reads the
// fingerprint, ignores that it no longer matches, and records the new
// size and mtime as verified: the rewrite is never treated as one, the
// reader keeps the stale in-memory fingerprint, and the first append
// afterwards is taken for "replaced in place": every line of the new file
// is delivered a second time under yet another epoch.
func TestRewriteOfTheNextFileBeforeTheBarrierIsNotDeliveredTwice(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, poll: time.Second,
		hold: map[string]chan struct{}{"a-00004": hold}})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	r.waitLines(4)
	// Rename rotation; the new file has 5 lines.
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("x", 0, 5)...)
	r.waitFor("the switch to the new file (barrier waiting)", 10*time.Second, func() bool {
		return r.pub.Paused() && strings.Contains(r.pub.PauseReason(), "epoch switch")
	})
	time.Sleep(30 * time.Millisecond) // past one mtime tick
	// Same-size rewrite of the new file before a line of it was read.
	if err := os.WriteFile(r.path, []byte(strings.Join(numbered("y", 0, 5), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	close(hold) // the old file's last line is acknowledged: the barrier is crossed at once
	r.waitLines(10)
	r.waitSettled()
	time.Sleep(50 * time.Millisecond)
	appendTo(t, r.path, "y-00005")
	r.waitLines(11)
	time.Sleep(3 * time.Second) // several polls
	r.waitSettled()
	gs := r.rec.all()
	c := counts(gs)
	var dup []string
	for l, n := range c {
		if n > 1 {
			dup = append(dup, fmt.Sprintf("%s×%d", l, n))
		}
	}
	if len(dup) > 0 || len(gs) != 11 {
		t.Fatalf("%d deliveries, duplicates %v; detail %q\n%s", len(gs), dup, r.src.Detail(), tailOf(r.logs.String(), 12))
	}
	// The x lines were seen (40 bytes) and never read: counted lost.
	if r.src.LostTails() != 1 || r.src.LostBytes() != 40 {
		t.Fatalf("lostTails %d lostBytes %d, want 1 and 40", r.src.LostTails(), r.src.LostBytes())
	}
}

// Pre-existing, found in the same review: after a wake-up that is neither a
// poll nor an fsnotify event (an acknowledgement, an msync's end), the source
// reads past what it last verified without checking the file first. A file
// truncated and written again longer than the read position is then read
// on from the old read position under the old epoch (a fragment of a new
// line and the new lines after it, positioned, committed), and only then
// seen as "replaced in place" and read again from 0: those lines are
// delivered twice, the first of them cut.
func TestRegrowthAfterTruncationIsCheckedBeforeItIsRead(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, poll: 2 * time.Second,
		hold: map[string]chan struct{}{"a-00004": hold}})
	appendTo(t, r.path, numbered("a", 0, 5)...) // 40 bytes
	r.start()
	r.waitLines(4)
	st, _ := os.Stat(r.path)
	r.waitFor("all read", 5*time.Second, func() bool { return r.src.ReadPos() == st.Size() })
	time.Sleep(300 * time.Millisecond) // let the first poll pass, so the next is ~1.7 s away
	// Truncate and write 12 lines of 7 bytes (84 bytes): offset 40 is inside "bb-0005".
	var nl []string
	for i := 0; i < 12; i++ {
		nl = append(nl, fmt.Sprintf("bb-%04d", i)[:7])
	}
	if err := os.WriteFile(r.path, []byte(strings.Join(nl, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	close(hold)
	r.waitLines(5 + 12)
	time.Sleep(3 * time.Second)
	r.waitSettled()
	gs := r.rec.all()
	if len(gs) != 17 {
		var extra []string
		for _, g := range gs[5:] {
			extra = append(extra, fmt.Sprintf("%q@%d/%x", g.Line, g.Pos, g.Epoch))
		}
		t.Fatalf("%d deliveries, want 17 (5 old + 12 new, each once): after the old lines: %v", len(gs), extra)
	}
}

// Review of h/live (issue 11 item 11: "never opened for reading"). The
// path itself is stat'ed and opened non-blocking, but findCopy (and
// findByKey at a restart) still open every regular-looking entry of the
// directory with a plain, blocking os.Open after ReadDir/lstat said it was
// regular. An entry replaced by a FIFO in between (here: another.log and a
// FIFO swapped atomically with renameat2(RENAME_EXCHANGE)) blocks the
// source's goroutine in open(2) for good: it reads nothing more, and its
// stop (SIGTERM) never returns.
func TestFindCopyNeverBlocksOnAFIFOSwappedIn(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Earliest})
	reg, fifo := r.dir+"/another.log", r.dir+"/another.tmp"
	if err := os.WriteFile(reg, []byte(strings.Repeat("z", 64<<10)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, reg, unix.AT_FDCWD, fifo, unix.RENAME_EXCHANGE)
		}
	}()
	stopFlip := func() {
		select {
		case <-stop:
		default:
			close(stop)
			<-flipped
		}
	}
	t.Cleanup(func() {
		stopFlip()
		for _, p := range []string{reg, fifo} { // release a blocked reader so the rig can stop
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
	})
	appendTo(t, r.path, numbered("t0", 0, 3)...)
	r.start()
	want := 3
	r.waitLines(want)
	blocked := false
	for i := 1; i < 300 && !blocked; i++ {
		if err := os.Truncate(r.path, 0); err != nil {
			t.Fatal(err)
		}
		appendTo(t, r.path, numbered(fmt.Sprintf("t%d", i), 0, 3)...)
		want += 3
		deadline := time.Now().Add(3 * time.Second)
		for r.rec.len() < want && !blocked {
			if time.Now().After(deadline) {
				blocked = true
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	stopFlip()
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if i := strings.Index(stacks, "file.(*Source).findCopy"); i >= 0 {
		t.Logf("source goroutine:\n%s", stacks[max(0, i-600):min(len(stacks), i+400)])
	}
	if !blocked {
		return // never blocked (the fix: fileutil.OpenRegular)
	}
	for _, p := range []string{reg, fifo} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close() // it had a reader: the source, blocked in open(2); this releases it
				t.Fatalf("the source stopped reading after %d lines: it was blocked opening the FIFO %s (findCopy's os.Open)", r.rec.len(), p)
			}
		}
	}
	t.Fatalf("the source stopped reading after %d lines (want %d)\n%s", r.rec.len(), want, tailOf(r.logs.String(), 10))
}

// S7: a queued file rewritten before a line of it was read, with no copy,
// counts what was seen of it as lost under the epoch its new content is then
// read under (never epoch 0, which names nothing).
func TestQueuedFileRewrittenBeforeReadCountsItsLossUnderItsEpoch(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	losses := &lossLog{}
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, onLoss: losses.add,
		hold: map[string]chan struct{}{"a-00010": hold}})
	appendTo(t, r.path, numbered("a", 0, 3000)...) // more than the queue holds: the source cannot reach its end
	r.start()
	r.waitLines(10)
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("x", 0, 5)...)
	r.waitFor("the new file queued", 5*time.Second, func() bool { return strings.Contains(r.logs.String(), "queued behind the open one") })
	time.Sleep(30 * time.Millisecond) // past one mtime tick
	if err := os.WriteFile(r.path, []byte(strings.Join(numbered("y", 0, 6), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the loss counted", 5*time.Second, func() bool { return len(losses.all()) > 0 })
	close(hold)
	r.waitLines(3006)
	r.waitSettled()
	var yEpoch uint64
	for _, g := range r.rec.all() {
		if strings.HasPrefix(g.Line, "y-") {
			yEpoch = g.Epoch
		}
	}
	ls := losses.all()
	if len(ls) != 2 || ls[0].Epoch == 0 || ls[0].Epoch != yEpoch || r.src.LostBytes() != 40 {
		t.Fatalf("losses %+v (lostBytes %d), want lostTails and lostBytes 40 under the y lines' epoch %x", ls, r.src.LostBytes(), yEpoch)
	}
}

// The same, with a copy of the next file's content left beside it before
// the rewrite (cp, then truncate and write, as copytruncate does): the copy
// is read first, under the new epoch, then the rewritten file from 0: every
// line once, nothing lost.
func TestRewriteOfTheNextFileBeforeTheBarrierReadsItsCopyFirst(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, poll: time.Second,
		hold: map[string]chan struct{}{"a-00004": hold}})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	r.waitLines(4)
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("x", 0, 5)...)
	r.waitFor("the switch to the new file (barrier waiting)", 10*time.Second, func() bool {
		return r.pub.Paused() && strings.Contains(r.pub.PauseReason(), "epoch switch")
	})
	copyFile(t, r.path, r.dir+"/app.log.copy")
	time.Sleep(30 * time.Millisecond) // past one mtime tick
	if err := os.WriteFile(r.path, []byte(strings.Join(numbered("y", 0, 5), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	close(hold)
	r.waitLines(15)
	time.Sleep(2500 * time.Millisecond) // several polls
	r.waitSettled()
	gs := r.rec.all()
	var dup []string
	for l, n := range counts(gs) {
		if n > 1 {
			dup = append(dup, fmt.Sprintf("%s×%d", l, n))
		}
	}
	if len(dup) > 0 || len(gs) != 15 || r.src.LostTails() != 0 {
		t.Fatalf("%d deliveries, duplicates %v, lostTails %d\n%s", len(gs), dup, r.src.LostTails(), tailOf(r.logs.String(), 12))
	}
	if got := lines(gs[5:10]); strings.Join(got, ",") != strings.Join(numbered("x", 0, 5), ",") {
		t.Fatalf("after the old file: %v, want the x lines from the copy", got)
	}
}

// A file that appeared at the path while none was open is fingerprinted
// when its epoch starts: the same content renamed over it under a new key
// (plus a line) goes on at the same position, its first line not delivered
// again (e2e TestContractRotation "same content under a new file key").
func TestFileAppearedAtThePathKeepsItsPositionOverASameContentCopy(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 3)...)
	r.start()
	r.waitLines(3)
	r.waitSettled()
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	r.waitFor("WAITING_FOR_FILE", 5*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	appendTo(t, r.path, "d1")
	r.waitLines(4)
	r.waitSettled()
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, []byte("d1\nd2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		t.Fatal(err)
	}
	r.waitLines(5)
	time.Sleep(10 * r.opts.poll)
	r.waitSettled()
	if got := strings.Join(lines(r.rec.all()), ","); got != "a-00000,a-00001,a-00002,d1,d2" {
		t.Fatalf("lines %s", got)
	}
}
