package file_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/internal/testutil"
	"tailfeed/source/file"
)

// Acceptance 7: the pointer is on A at offset X; while the daemon is
// stopped A gets more lines, is renamed to A.1 and a new A is created. On
// start A.1 is read from X to its end first (same epoch, positions going
// on), then A from its start under a new epoch.
func TestRestartAfterRotation(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 50)...)
	r.start()
	r.waitLines(50)
	r.waitSettled()
	r.stop()
	e1, x := r.ptr.Record().Epoch, r.ptr.Record().Offset

	appendTo(t, r.path, numbered("a", 50, 20)...)
	rotated := r.path + ".1"
	if err := os.Rename(r.path, rotated); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	gs := r2.waitLines(30)
	r2.waitSettled()
	gs = r2.rec.all()
	if len(gs) != 30 {
		t.Fatalf("got %d lines, want 30: %q", len(gs), lines(gs))
	}
	oldEnds, newEnds := lineEnds(t, rotated), lineEnds(t, r.path)
	for i, g := range gs[:20] {
		want := fmt.Sprintf("a-%05d", 50+i)
		if g.Line != want || g.Epoch != e1 || g.Pos != oldEnds[want] || g.Pos <= x {
			t.Fatalf("line %d: %+v, want %q at %d under the pointer's epoch %x", i, g, want, oldEnds[want], e1)
		}
	}
	for i, g := range gs[20:] {
		want := fmt.Sprintf("b-%05d", i)
		if g.Line != want || g.Epoch == e1 || g.Pos != newEnds[want] {
			t.Fatalf("line %d: %+v, want %q at %d under a new epoch", 20+i, g, want, newEnds[want])
		}
	}
	rec := r2.ptr.Record()
	if rec.Epoch != gs[29].Epoch || rec.Offset != newEnds["b-00009"] || rec.FileKey != keyOf(t, r.path) {
		t.Fatalf("pointer %+v, want epoch %x at %d", rec, gs[29].Epoch, newEnds["b-00009"])
	}
	if r2.src.LostTails() != 0 || r2.src.Detail() != "" {
		t.Fatalf("lostTails %d, detail %q", r2.src.LostTails(), r2.src.Detail())
	}
}

// Acceptance 7, second half: the rotated file is gone at start: WARN, the
// detail says the tail is lost, lostTails is 1; the file at the path is read
// from its start under a new epoch; the detail stays until the next
// restart.
func TestRestartAfterRotationFileGone(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 50)...)
	r.start()
	r.waitLines(50)
	r.waitSettled()
	r.stop()
	e1 := r.ptr.Record().Epoch

	// Rotated, a new file created, then the rotated one deleted (in this
	// order the new file cannot reuse the old inode).
	appendTo(t, r.path, numbered("a", 50, 20)...)
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 10)...)
	if err := os.Remove(r.path + ".1"); err != nil {
		t.Fatal(err)
	}

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	gs := r2.waitLines(10)
	r2.waitSettled()
	gs = r2.rec.all()
	for i, g := range gs {
		if g.Line != fmt.Sprintf("b-%05d", i) || g.Epoch == e1 {
			t.Fatalf("line %d: %+v", i, g)
		}
	}
	const lost = "rotated file gone; its unread tail is lost"
	if r2.src.Detail() != lost || r2.src.LostTails() != 1 || !r2.warned(lost) {
		t.Fatalf("detail %q, lostTails %d, WARN %v", r2.src.Detail(), r2.src.LostTails(), r2.warned(lost))
	}
	// A later truncation is logged but the lost tail stays the detail.
	if err := os.Truncate(r2.path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r2.path, "c-00000")
	r2.waitLines(11)
	if r2.src.Detail() != lost || !r2.warned("truncated") {
		t.Fatalf("detail %q after a truncation", r2.src.Detail())
	}
}

// Acceptance 6: copytruncate under load. The writer appends continuously
// (O_APPEND, as copytruncate requires); three times the file is copied to
// A.k and truncated in place. The lines written between a copy and its
// truncate that the daemon had not read yet are lost: the test counts them.
// Nothing is delivered twice, every truncation is detected, and the daemon
// keeps tailing the file: every line after the last truncation arrives.
func TestCopyTruncateUnderLoad(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r.start()
	var written atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			fmt.Fprintf(f, "line %07d\n", i)
			written.Add(1)
			if i%10 == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	for k, last := 1, int64(0); k <= 3; k++ {
		time.Sleep(80 * time.Millisecond)
		// A starved writer (CI's load) may have written nothing since the
		// last truncation: truncating an empty file is no truncation at
		// all (stop 48's CI: the third found app.log empty, nothing to
		// detect). Each truncation cuts at least 50 lines.
		r.waitFor("the writer's next lines", 20*time.Second, func() bool { return written.Load() >= last+50 })
		last = written.Load()
		copyTruncate(t, r.path, fmt.Sprintf("%s.%d", r.path, k))
	}
	time.Sleep(80 * time.Millisecond)
	close(stop)
	<-done
	total := int(written.Load())
	last := fmt.Sprintf("line %07d", total-1)
	r.waitFor("the last line", 20*time.Second, func() bool {
		gs := r.rec.all()
		return len(gs) > 0 && gs[len(gs)-1].Line == last
	})
	r.waitSettled()
	gs := r.rec.all()
	c := counts(gs)
	for l, n := range c {
		if n != 1 {
			t.Fatalf("%q delivered %d times", l, n)
		}
	}
	lost := total - len(gs)
	t.Logf("copytruncate x3 under load: %d lines written, %d delivered, %d lost (%.3f%%)",
		total, len(gs), lost, 100*float64(lost)/float64(total))
	// Every line the file holds now (written after the last truncation)
	// arrived.
	for l := range lineEnds(t, r.path) {
		if c[l] != 1 {
			t.Fatalf("%q, written after the last truncation, not delivered", l)
		}
	}
	if n := warnCount(r.logs.String(), "truncated (") + warnCount(r.logs.String(), "replaced in place"); n < 3 {
		t.Fatalf("%d truncations detected, want 3:\n%s", n, r.logs.String())
	}
	if !strings.Contains(r.src.Detail(), "truncated") && !strings.Contains(r.src.Detail(), "replaced in place") {
		t.Fatalf("detail %q", r.src.Detail())
	}
}

// copytruncate does what logrotate's copytruncate does: copy, then truncate
// in place.
func copyTruncate(t testing.TB, path, to string) {
	t.Helper()
	src, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	src.Close()
	dst.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}

// warnCount counts the WARN lines of log containing s.
func warnCount(log, s string) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "[WARN]") && strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// copytruncate while the feed is far behind (its subscriber blocked): the
// unread backlog is not lost with the truncation; it is read from the copy,
// under the old epoch and at the old positions, then the truncated file
// from its start under a new epoch.
func TestCopyTruncateWhileBehindReadsTheCopy(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, block: block})
	appendTo(t, r.path, numbered("a", 0, 3000)...)
	ends := lineEnds(t, r.path)
	r.start()
	r.waitFor("the feed paused", 10*time.Second, r.pub.Paused)
	e1 := r.src.Epoch()
	copyTruncate(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitFor("the truncation seen", 10*time.Second, func() bool { return r.warned("truncated") })
	close(block)
	gs := r.waitLines(3010)
	r.waitSettled()
	gs = r.rec.all()
	if len(gs) != 3010 {
		t.Fatalf("got %d lines, want 3010", len(gs))
	}
	newEnds := lineEnds(t, r.path)
	for i, g := range gs {
		want, epochOK, end := fmt.Sprintf("a-%05d", i), g.Epoch == e1, ends[fmt.Sprintf("a-%05d", i)]
		if i >= 3000 {
			want = fmt.Sprintf("b-%05d", i-3000)
			epochOK, end = g.Epoch != e1, newEnds[want]
		}
		if g.Line != want || !epochOK || g.Pos != end {
			t.Fatalf("line %d: %+v, want %q at %d (old epoch %x)", i, g, want, end, e1)
		}
	}
	if !strings.Contains(r.src.Detail(), "copy app.log.1") {
		t.Fatalf("detail %q", r.src.Detail())
	}
	if rec := r.ptr.Record(); rec.Epoch != gs[3009].Epoch || rec.Offset != newEnds["b-00009"] {
		t.Fatalf("pointer %+v", rec)
	}
}

// copytruncate while the daemon is stopped: at start the pointer's file is
// shorter than the offset, but its copy holds the unread tail: read from the
// pointer to the copy's end first, then the file from its start.
func TestCopyTruncateWhileStopped(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 50)...)
	r.start()
	r.waitLines(50)
	r.waitSettled()
	r.stop()
	e1 := r.ptr.Record().Epoch
	appendTo(t, r.path, numbered("a", 50, 20)...)
	copyTruncate(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 5)...)

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	gs := r2.waitLines(25)
	r2.waitSettled()
	gs = r2.rec.all()
	if len(gs) != 25 {
		t.Fatalf("got %d lines, want 25: %q", len(gs), lines(gs))
	}
	for i, g := range gs {
		want, epochOK := fmt.Sprintf("a-%05d", 50+i), g.Epoch == e1
		if i >= 20 {
			want, epochOK = fmt.Sprintf("b-%05d", i-20), g.Epoch != e1
		}
		if g.Line != want || !epochOK {
			t.Fatalf("line %d: %+v, want %q (old epoch %x)", i, g, want, e1)
		}
	}
	if r2.src.LostTails() != 0 {
		t.Fatalf("lostTails %d", r2.src.LostTails())
	}
}

// Two copytruncates while the feed is behind: the second one hits the file
// queued behind the first copy before it was read. Its copy is queued before
// it, so the three contents arrive whole, in order, each once.
func TestCopyTruncateTwiceWhileBehind(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, block: block})
	appendTo(t, r.path, numbered("a", 0, 3000)...)
	r.start()
	r.waitFor("the feed paused", 10*time.Second, r.pub.Paused)
	copyTruncate(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 500)...)
	r.waitFor("the file queued behind its copy", 10*time.Second, func() bool {
		return strings.Contains(r.logs.String(), "queued behind the open one")
	})
	time.Sleep(200 * time.Millisecond) // a few polls: the queued file's fingerprint covers b
	copyTruncate(t, r.path, r.path+".2")
	appendTo(t, r.path, numbered("c", 0, 5)...)
	r.waitFor("the second copy found", 10*time.Second, func() bool { return r.warned("reading its copy first") })
	close(block)
	gs := r.waitLines(3505)
	r.waitSettled()
	want := append(append(numbered("a", 0, 3000), numbered("b", 0, 500)...), numbered("c", 0, 5)...)
	if got := lines(r.rec.all()); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %d lines, want %d; first difference at %d", len(got), len(want), testutil.FirstDiff(got, want))
	}
	if gs[0].Epoch == gs[3000].Epoch || gs[3000].Epoch == gs[3504].Epoch {
		t.Fatal("the three contents do not have three epochs")
	}
}
