package file_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// A feed restarted by a reload passes its previous source's ResumePoint as
// Config.Resume (every strategy but COMMITTED): the new source reads on in
// the same file, under the same epoch, from where the previous one stopped
// — for LATEST too, so what was appended during the restart is delivered —
// and starts per its strategy when the file at the path is another one.

// settle waits until r settled (a once-read: ended, every line
// acknowledged).
func settle(r *rig, st file.Strategy) {
	r.t.Helper()
	if !st.Bounded() {
		r.waitSettled()
		return
	}
	r.waitFor("end of stream", 20*time.Second, func() bool {
		return r.src.State() == file.EndOfStream && r.pub.Pending() == 0
	})
}

// resumeRig runs a source of strategy st on dir/app.log to its settling
// and returns it stopped, with its ResumePoint.
func resumeRig(t *testing.T, dir string, st file.Strategy, resume *file.Resume, lines int) (*rig, *file.Resume) {
	t.Helper()
	r := newRig(t, dir, rigOpts{strategy: st, resume: resume}).start()
	if lines > 0 {
		r.waitLines(lines)
	}
	settle(r, st)
	r.stop()
	return r, r.src.ResumePoint()
}

func TestReloadResumeLatest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/app.log"
	appendTo(t, path, "before")
	r := newRig(t, dir, rigOpts{strategy: file.Latest}).start()
	r.waitSettled()
	appendTo(t, path, "one")
	first := r.waitLines(1)
	r.stop()
	rp := r.src.ResumePoint()
	if rp == nil {
		t.Fatal("no resume point after a LATEST source read a line")
	}
	appendTo(t, path, "during") // while the feed restarts
	r2 := newRig(t, dir, rigOpts{strategy: file.Latest, resume: rp}).start()
	appendTo(t, path, "after")
	g := r2.waitLines(2)
	r2.waitSettled()
	if l := strings.Join(lines(r2.rec.all()), ","); l != "during,after" {
		t.Fatalf("restarted LATEST source delivered %q, want during,after", l)
	}
	if g[0].Epoch != first[0].Epoch {
		t.Errorf("restarted source's epoch %x, want its previous one's %x (the subscribers skip by place)", g[0].Epoch, first[0].Epoch)
	}
}

func TestReloadResumeLatestReplacedStartsAtEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/app.log"
	appendTo(t, path, "before")
	r := newRig(t, dir, rigOpts{strategy: file.Latest}).start()
	r.waitSettled()
	appendTo(t, path, "one")
	r.waitLines(1)
	r.stop()
	rp := r.src.ResumePoint()
	// Replaced by another file holding the same first bytes and more: not
	// the file read (its key), so LATEST starts at its end.
	replaceWith(t, path, "before", "one", "two", "three")
	r2 := newRig(t, dir, rigOpts{strategy: file.Latest, resume: rp}).start()
	r2.waitSettled()
	appendTo(t, path, "new")
	r2.waitLines(1)
	r2.waitSettled()
	if l := strings.Join(lines(r2.rec.all()), ","); l != "new" {
		t.Fatalf("LATEST over a replaced file delivered %q, want new", l)
	}
}

func TestReloadResumeEarliestAndOnce(t *testing.T) {
	t.Parallel()
	for _, st := range []file.Strategy{file.Earliest, file.OnceEarliest} {
		t.Run(st.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := dir + "/app.log"
			appendTo(t, path, "a1", "a2")
			_, rp := resumeRig(t, dir, st, nil, 2)
			if rp == nil {
				t.Fatal("no resume point")
			}
			appendTo(t, path, "a3")
			r2 := newRig(t, dir, rigOpts{strategy: st, resume: rp}).start()
			want := "a3"
			if st == file.OnceEarliest {
				want = "" // read to its size at the first open: done
				time.Sleep(200 * time.Millisecond)
			} else {
				r2.waitLines(1)
			}
			settle(r2, st)
			if l := strings.Join(lines(r2.rec.all()), ","); l != want {
				t.Fatalf("restarted %v source delivered %q, want %q", st, l, want)
			}
		})
	}
}

// TestReloadResumeRotatedReadsPreviousFileFirst: the file an EARLIEST or
// LATEST source without a pointer stopped in was rotated (renamed beside
// the path, a new file at the path) before the restarted source opened:
// its unread lines are read first from the renamed file (found by its key
// and first bytes), then the new file from its start.
func TestReloadResumeRotatedReadsPreviousFileFirst(t *testing.T) {
	t.Parallel()
	for _, st := range []file.Strategy{file.Earliest, file.Latest} {
		t.Run(st.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := dir + "/app.log"
			appendTo(t, path, "a1", "a2")
			r := newRig(t, dir, rigOpts{strategy: st}).start()
			if st == file.Latest {
				r.waitSettled()
				appendTo(t, path, "a3")
			}
			r.waitLines(map[file.Strategy]int{file.Earliest: 2, file.Latest: 1}[st])
			r.waitSettled()
			r.stop()
			rp := r.src.ResumePoint()
			if rp == nil {
				t.Fatal("no resume point")
			}
			appendTo(t, path, "u1", "u2") // unread when the file rotates
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			appendTo(t, path, "b1")
			r2 := newRig(t, dir, rigOpts{strategy: st, resume: rp}).start()
			r2.waitLines(3)
			r2.waitSettled()
			if l := strings.Join(lines(r2.rec.all()), ","); l != "u1,u2,b1" {
				t.Fatalf("restarted %v source after a rotation delivered %q, want u1,u2,b1", st, l)
			}
			if n := r2.src.LostTails(); n != 0 {
				t.Errorf("lostTails %d, want 0 (the rotated file was read)", n)
			}
		})
	}
}

// TestReloadResumeRotatedGoneCountsLoss: as above, but the renamed file is
// gone (deleted) before the restarted source opens, with bytes its
// previous source saw past the resume point (published, not acknowledged:
// the reload moved the resume point back): counted lost, not a silent gap.
func TestReloadResumeRotatedGoneCountsLoss(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/app.log"
	appendTo(t, path, "a1", "a2")
	_, rp := resumeRig(t, dir, file.Earliest, nil, 2)
	if rp == nil {
		t.Fatal("no resume point")
	}
	back := *rp
	back.Offset = back.From // as a reload does for lines not every subscriber finished
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "b1")
	r2 := newRig(t, dir, rigOpts{strategy: file.Earliest, resume: &back}).start()
	r2.waitLines(1)
	r2.waitSettled()
	if l := strings.Join(lines(r2.rec.all()), ","); l != "b1" {
		t.Fatalf("delivered %q, want b1", l)
	}
	if n, b := r2.src.LostTails(), r2.src.LostBytes(); n != 1 || b != uint64(rp.End-back.Offset) {
		t.Errorf("lostTails %d, lostBytes %d; want 1, %d (the gone file's unread bytes)", n, b, rp.End-back.Offset)
	}
}

// TestReloadResumeLatestWaitingReadsAppearedFileFromStart: a LATEST source
// closed while it waited for its file (none at the path); the file appears
// before the restarted source opens: it is read from its start, as the
// waiting source would have.
func TestReloadResumeLatestWaitingReadsAppearedFileFromStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/app.log"
	r := newRig(t, dir, rigOpts{strategy: file.Latest}).start()
	r.waitFor("waiting for the file", 20*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	r.stop()
	rp := r.src.ResumePoint()
	if rp == nil || !rp.Waiting {
		t.Fatalf("resume point %+v, want one that says the source waited", rp)
	}
	appendTo(t, path, "x1", "x2")
	r2 := newRig(t, dir, rigOpts{strategy: file.Latest, resume: rp}).start()
	r2.waitLines(2)
	r2.waitSettled()
	if l := strings.Join(lines(r2.rec.all()), ","); l != "x1,x2" {
		t.Fatalf("delivered %q, want x1,x2", l)
	}
}

// TestReloadResumeOnceEarliestEmptyStaysFinished: an ONCE_EARLIEST source
// finished on an empty file; bytes appended later are not read by the
// restarted source (its once-read ended at 0).
func TestReloadResumeOnceEarliestEmptyStaysFinished(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/app.log"
	appendTo(t, path)
	_, rp := resumeRig(t, dir, file.OnceEarliest, nil, 0)
	if rp == nil {
		t.Fatal("no resume point")
	}
	appendTo(t, path, "x1")
	r2 := newRig(t, dir, rigOpts{strategy: file.OnceEarliest, resume: rp}).start()
	time.Sleep(200 * time.Millisecond)
	settle(r2, file.OnceEarliest)
	if l := strings.Join(lines(r2.rec.all()), ","); l != "" {
		t.Fatalf("restarted ONCE_EARLIEST over a file empty at its first open delivered %q, want nothing", l)
	}
}
