package file_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"tailfeed/source/file"
)

// errorLines counts the ERROR lines of the rig's log.
func (r *rig) errorLines() int {
	return strings.Count(r.logs.String(), "[ERROR]")
}

// unblockFIFO opens the FIFO at path for writing without blocking, which
// releases a reader blocked opening it (the bug): so a failing test ends
// instead of hanging in the rig's stop.
func unblockFIFO(path string) {
	if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// stopWithin stops the rig and fails the test when that takes longer than d
// (the stop is what SIGTERM does in the daemon).
func (r *rig) stopWithin(d time.Duration) {
	r.t.Helper()
	done := make(chan struct{})
	go func() { r.stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		unblockFIFO(r.path)
		<-done
		r.t.Fatalf("the source did not stop within %v", d)
	}
}

// Issue 11 item 11: a FIFO at the path is never opened for reading (an open
// would block until a writer comes, and the source could not stop): the
// source is FAILED with the reason in its detail, logged once, stops at
// once when told to, and leaves FAILED by itself once a regular file is
// there.
func TestFIFOAtPathFailsWithoutBlocking(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	if err := syscall.Mkfifo(r.path, 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	t.Cleanup(func() { unblockFIFO(r.path) }) // runs before the rig's stop
	r.waitFor("FAILED", 5*time.Second, func() bool { return r.src.State() == file.Failed })
	if d := r.src.Detail(); !strings.Contains(d, "named pipe") || !strings.Contains(d, r.path) {
		t.Fatalf("detail %q: want the path and why", d)
	}
	time.Sleep(10 * r.opts.poll)
	if n := r.errorLines(); n != 1 {
		t.Fatalf("%d ERROR lines over 10 polls, want 1:\n%s", n, tailOf(r.logs.String(), 20))
	}
	if r.src.State() != file.Failed {
		t.Fatalf("state %s", r.src.State())
	}
	// A regular file replaces it: read from its start, the failure gone.
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("a", 0, 3)...)
	r.waitLines(3)
	r.waitSettled()
	if r.src.State() != file.CaughtUp {
		t.Fatalf("state %s after a regular file appeared", r.src.State())
	}
	// And back to a FIFO: FAILED again; the stop is prompt.
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(r.path, 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitFor("FAILED again", 5*time.Second, func() bool { return r.src.State() == file.Failed })
	r.stopWithin(3 * time.Second)
	if gs := r.rec.all(); strings.Join(lines(gs), ",") != strings.Join(numbered("a", 0, 3), ",") {
		t.Fatalf("lines %v", lines(gs))
	}
}

// A directory appearing at the path while running (the file renamed away,
// a directory made in its place): the open file's lines are still all
// delivered, the feed is FAILED with the reason in its detail, logged once
// (no reset retried at every poll), and it recovers by itself when the
// directory gives way to a regular file.
func TestDirectoryAppearingAtPathFailsOnceAndRecovers(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 10)...)
	r.start()
	r.waitLines(10)
	r.waitSettled()
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(r.path, 0o755); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path+".1", numbered("a", 10, 2)...) // the writer finishes the old file
	r.waitLines(12)
	r.waitFor("FAILED", 5*time.Second, func() bool { return r.src.State() == file.Failed })
	if d := r.src.Detail(); !strings.Contains(d, "directory") || !strings.Contains(d, r.path) {
		t.Fatalf("detail %q: want the path and why", d)
	}
	time.Sleep(2*r.opts.rotateWait + 10*r.opts.poll) // the old file closed, many polls
	if n := r.errorLines(); n != 1 || strings.Contains(r.logs.String(), "pointer reset failed") {
		t.Fatalf("%d ERROR lines, want 1:\n%s", n, tailOf(r.logs.String(), 20))
	}
	if r.src.State() != file.Failed {
		t.Fatalf("state %s", r.src.State())
	}
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 3)...)
	gs := r.waitLines(15)
	r.waitSettled()
	want := append(numbered("a", 0, 12), numbered("b", 0, 3)...)
	if strings.Join(lines(gs), ",") != strings.Join(want, ",") {
		t.Fatalf("lines %v, want %v", lines(gs), want)
	}
	if gs[12].Epoch == gs[11].Epoch || r.ptr.Record().Epoch != gs[12].Epoch {
		t.Fatalf("the new file's epoch %x (old %x, pointer %x)", gs[12].Epoch, gs[11].Epoch, r.ptr.Record().Epoch)
	}
	if r.src.State() != file.CaughtUp {
		t.Fatalf("state %s", r.src.State())
	}
	// Nothing wrong any more: the detail is empty (null), as after a plain
	// deletion and a new file. It used to keep "names nothing now; waiting
	// for a file" — false once the new file was read.
	if d := r.src.Detail(); d != "" {
		t.Fatalf("detail %q after the path recovered and its new file was read, want none", d)
	}
	r.stopWithin(3 * time.Second)
}

// A FIFO, a symlink loop, a device or a socket appearing at the path while
// running: FAILED with the reason, logged once, the stop prompt.
func TestPathBecomingNotRegularFails(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, why string
		make      func(path string) error
	}{
		{"fifo", "named pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"symlink loop", "symbolic links", func(p string) error { return os.Symlink(p, p) }},
		{"device", "character device", func(p string) error { return os.Symlink("/dev/null", p) }},
		{"socket", "socket", func(p string) error {
			ln, err := net.Listen("unix", p)
			if err == nil {
				t.Cleanup(func() { ln.Close() })
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, "", rigOpts{strategy: file.Earliest})
			appendTo(t, r.path, numbered("a", 0, 3)...)
			r.start()
			t.Cleanup(func() { unblockFIFO(r.path) })
			r.waitLines(3)
			r.waitSettled()
			if err := os.Remove(r.path); err != nil {
				t.Fatal(err)
			}
			if err := c.make(r.path); err != nil {
				t.Fatal(err)
			}
			r.waitFor("FAILED", 5*time.Second, func() bool { return r.src.State() == file.Failed })
			if d := r.src.Detail(); !strings.Contains(d, c.why) {
				t.Fatalf("detail %q, want %q in it", d, c.why)
			}
			time.Sleep(2*r.opts.rotateWait + 5*r.opts.poll)
			if n := r.errorLines(); n != 1 {
				t.Fatalf("%d ERROR lines, want 1:\n%s", n, tailOf(r.logs.String(), 20))
			}
			r.stopWithin(3 * time.Second)
		})
	}
}

// The failure's reason is the detail while it lasts, even over a lost
// tail found at the same start; once a regular file is there, the lost
// tail's detail (which stays until the next restart) is back.
func TestFIFOAtPathDetailOverLostTail(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	r.waitLines(5)
	r.waitSettled()
	r.stop()
	appendTo(t, r.path, numbered("a", 5, 5)...) // unread, then gone
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(r.path, 0o644); err != nil {
		t.Fatal(err)
	}
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	t.Cleanup(func() { unblockFIFO(r2.path) })
	// The open sets FAILED (the FIFO) before it looks for the pointer's
	// gone file and counts its tail: wait for both.
	r2.waitFor("FAILED with the lost tail", 5*time.Second, func() bool {
		return r2.src.State() == file.Failed && r2.src.LostTails() >= 1
	})
	if d := r2.src.Detail(); !strings.Contains(d, "named pipe") || r2.src.LostTails() != 1 {
		t.Fatalf("detail %q lostTails %d: want the FIFO as the reason, one lost tail", d, r2.src.LostTails())
	}
	if err := os.Remove(r2.path); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r2.path, "b")
	r2.waitLines(1)
	r2.waitSettled()
	if d := r2.src.Detail(); d != "rotated file gone; its unread tail is lost" {
		t.Fatalf("detail %q after the failure ended, want the lost tail's", d)
	}
}

// S2: a path that names another file at every try of the open at start (it
// keeps being replaced while it is opened) is retried at every look, like a
// missing or a bad path; the source never stops for good.
func TestPathChangingWhileOpenedAtStartIsRetried(t *testing.T) {
	t.Parallel()
	var calls int
	var r *rig
	r = newRig(t, "", rigOpts{strategy: file.Committed, openHook: func() {
		calls++
		if calls > 12 {
			return
		}
		tmp := r.path + ".tmp"
		if err := os.WriteFile(tmp, []byte("a-00000\na-00001\na-00002\n"), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.Rename(tmp, r.path); err != nil {
			t.Error(err)
		}
	}})
	appendTo(t, r.path, numbered("a", 0, 3)...)
	r.start()
	r.waitLines(3)
	r.waitSettled()
	if n := r.rec.len(); n != 3 {
		t.Fatalf("%d lines, want 3", n)
	}
}

// S8: the path's failure ends with nothing at the path while the file open
// from before is still read (a rotation left it): the detail does not say
// "waiting for a file" (the log says it is read on; the detail is empty).
func TestPathGoneAfterFailureWhileFileOpenSaysItIsRead(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Earliest, rotateWait: 10 * time.Second})
	appendTo(t, r.path, numbered("a", 0, 3)...)
	r.start()
	t.Cleanup(func() { unblockFIFO(r.path) })
	r.waitLines(3)
	r.waitSettled()
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(r.path, 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitFor("FAILED", 5*time.Second, func() bool { return r.src.State() == file.Failed })
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	r.waitFor("not FAILED", 5*time.Second, func() bool { return r.src.State() != file.Failed })
	if _, _, open := r.src.FileIdentity(); !open {
		t.Fatal("the renamed file is no longer open")
	}
	if d := r.src.Detail(); strings.Contains(d, "waiting for a file") {
		t.Fatalf("detail %q while the file open from before is read", d)
	}
	appendTo(t, r.path+".1", "a-00003")
	r.waitLines(4)
}

// S3: a regular file at the path that cannot be opened (here a write-only
// procfs file, which even root cannot open for reading: EACCES) makes the
// feed FAILED with the open error in its detail, logged once, never
// stopping it: once a readable file is there it is read. After a FIFO, the
// detail moves from the FIFO to the open error.
func TestRegularFileThatCannotBeOpenedFailsAndRecovers(t *testing.T) {
	t.Parallel()
	const unreadable = "/proc/sys/vm/drop_caches"
	if f, err := os.Open(unreadable); err == nil || !errors.Is(err, fs.ErrPermission) {
		if f != nil {
			f.Close()
		}
		t.Skipf("%s can be opened for reading here (%v): no regular file that cannot be", unreadable, err)
	}
	for _, fifoFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifoFirst=%v", fifoFirst), func(t *testing.T) {
			r := newRig(t, "", rigOpts{strategy: file.Committed})
			if fifoFirst {
				if err := syscall.Mkfifo(r.path, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Symlink(unreadable, r.path); err != nil {
				t.Fatal(err)
			}
			r.start()
			t.Cleanup(func() { unblockFIFO(r.path) })
			r.waitFor("FAILED", 5*time.Second, func() bool { return r.src.State() == file.Failed })
			if fifoFirst {
				if err := os.Remove(r.path); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(unreadable, r.path); err != nil {
					t.Fatal(err)
				}
			}
			r.waitFor("the open error in the detail", 5*time.Second, func() bool {
				return r.src.State() == file.Failed && strings.Contains(r.src.Detail(), "permission denied")
			})
			time.Sleep(5 * r.opts.poll)
			if n := r.errorLines(); n != map[bool]int{false: 1, true: 2}[fifoFirst] {
				t.Fatalf("%d ERROR lines:\n%s", n, tailOf(r.logs.String(), 20))
			}
			if err := os.Remove(r.path); err != nil {
				t.Fatal(err)
			}
			appendTo(t, r.path, numbered("a", 0, 3)...)
			r.waitLines(3)
			r.waitSettled()
			if st := r.src.State(); st == file.Failed {
				t.Fatalf("still FAILED: %q", r.src.Detail())
			}
		})
	}
}
