package file_test

// Review 28b (independent review of rev28b.diff: headFirst for a pointer
// adopted while empty, loseTail for a never-committed pointer adopted with
// content, a single-file once-read closing its file at END_OF_STREAM).

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// rev28BOnceAfterEOS drives a once-read to END_OF_STREAM, then appends,
// rotates its path (rename + a new file) and checks that nothing fails.
func rev28BOnceAfterEOS(t *testing.T, strategy file.Strategy) {
	losses := &lossLog{}
	r := newRig(t, "", rigOpts{strategy: strategy, onLoss: losses.add})
	appendTo(t, r.path, numbered("a", 0, 100)...)
	r.start()
	if strategy == file.OnceLatest {
		time.Sleep(300 * time.Millisecond)
	}
	r.waitFor("end of stream", 10*time.Second, func() bool { return r.src.State() == file.EndOfStream })
	if strategy == file.OnceEarliest {
		// END_OF_STREAM is the source's state (read to its size at open,
		// DESIGN §4), not the subscriber's: its last lines may still be on
		// their way to the recorder (CI, thirty-second session: 86 of 100).
		r.waitFor("the 100 lines delivered", 10*time.Second, func() bool { return r.rec.len() >= 100 })
	}
	n := r.rec.len()
	appendTo(t, r.path, numbered("b", 0, 10)...)
	time.Sleep(400 * time.Millisecond)
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("c", 0, 10)...)
	time.Sleep(1200 * time.Millisecond)
	if err := os.Truncate(r.path+".1", 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	select {
	case err := <-r.done:
		t.Fatalf("Run returned %v after END_OF_STREAM", err)
	default:
	}
	if st := r.src.State(); st != file.EndOfStream {
		t.Errorf("state %s after END_OF_STREAM and a rotation, want END_OF_STREAM (detail %q)", st, r.src.Detail())
	}
	if r.src.LostTails() != 0 || r.src.LostBytes() != 0 {
		t.Errorf("lostTails %d lostBytes %d (%+v), want 0", r.src.LostTails(), r.src.LostBytes(), losses.all())
	}
	if got := r.rec.len(); got != n {
		t.Errorf("%d lines after END_OF_STREAM, want %d", got, n)
	}
	for _, l := range strings.Split(r.logs.String(), "\n") {
		if strings.Contains(l, "[ERROR]") || strings.Contains(l, "[WARN]") {
			t.Errorf("log after END_OF_STREAM: %s", l)
		}
	}
}

func TestRev28BProbeOnceEarliestClosedThenRotated(t *testing.T) {
	rev28BOnceAfterEOS(t, file.OnceEarliest)
}

func TestRev28BProbeOnceLatestClosedThenRotated(t *testing.T) {
	rev28BOnceAfterEOS(t, file.OnceLatest)
}

// Probe: a single-file ONCE_EARLIEST read to END_OF_STREAM (its file now
// closed) and then restarted by a reload (ResumePoint taken from the closed
// reader) delivers nothing again and counts nothing, the file having grown
// meanwhile; its unterminated count stays.
func TestRev28BProbeOnceEarliestClosedThenReloaded(t *testing.T) {
	losses := &lossLog{}
	dir := t.TempDir()
	r := newRig(t, dir, rigOpts{strategy: file.OnceEarliest, onLoss: losses.add})
	appendTo(t, r.path, numbered("a", 0, 100)...)
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("unterminated")
	f.Close()
	r.start()
	r.waitFor("end of stream", 10*time.Second, func() bool { return r.src.State() == file.EndOfStream })
	// (END_OF_STREAM is the source's state: the last lines may still be on
	// their way to the recorder — CI, thirty-second session: 0 of 100.)
	r.waitFor("the 100 lines delivered", 10*time.Second, func() bool { return r.rec.len() >= 100 })
	if r.rec.len() != 100 || r.src.Unterminated() != 12 {
		t.Fatalf("%d lines, unterminated %d", r.rec.len(), r.src.Unterminated())
	}
	appendTo(t, r.path, numbered("b", 0, 10)...)
	time.Sleep(200 * time.Millisecond)
	r.stop()
	rp := r.src.ResumePoint()
	if rp == nil {
		t.Fatal("no resume point")
	}
	r2 := newRig(t, dir, rigOpts{strategy: file.OnceEarliest, onLoss: losses.add, resume: rp})
	r2.start()
	r2.waitFor("end of stream", 10*time.Second, func() bool { return r2.src.State() == file.EndOfStream })
	time.Sleep(300 * time.Millisecond)
	if n := r2.rec.len(); n != 0 {
		t.Errorf("reloaded once-read delivered %d lines again (%v), want 0", n, lines(r2.rec.all())[:min(n, 3)])
	}
	if r2.src.LostTails() != 0 || r2.src.LostBytes() != 0 || len(losses.all()) != 0 {
		t.Errorf("lostTails %d lostBytes %d (%+v), want 0", r2.src.LostTails(), r2.src.LostBytes(), losses.all())
	}
	if u := r2.src.Unterminated(); u != 12 {
		t.Errorf("unterminated %d after the reload, want 12", u)
	}
}

// rev28BCopyTruncate copies path to path.1 and cuts path to 0.
func rev28BCopyTruncate(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".1", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}

// Probe: adopted while empty, the first line published (the head stored),
// kill -9 before any commit, copytruncate while stopped, new lines at the
// path: the restart reads the copy under the old epoch at the old
// positions and the new lines under a new epoch; nothing counted lost.
func TestRev28BProbeAdoptedEmptyKill9CopytruncateWhileStopped(t *testing.T) {
	dir := t.TempDir()
	hold := make(chan struct{})
	notify := make(chan time.Time, 64)
	r := newRig(t, dir, rigOpts{strategy: file.Committed, hold: map[string]chan struct{}{"a-00000": hold}, notify: notify})
	appendTo(t, r.path)
	r.start()
	r.waitFor("waiting", 5*time.Second, func() bool { return r.src.State() == file.CaughtUp })
	appendTo(t, r.path, numbered("a", 0, 5)...)
	select {
	case <-notify:
	case <-time.After(5 * time.Second):
		t.Fatal("a-0 not delivered")
	}
	rec := r.ptr.Record()
	if rec.FPLen == 0 || rec.Offset != 0 || !r.ptr.Synced() {
		t.Fatalf("record %+v synced %v: want the first bytes stored and synced", rec, r.ptr.Synced())
	}
	r.crash() // a-00000 still held: nothing acknowledged
	// the pointer may have committed meanwhile: force the case of no commit by
	// checking what is on disk
	rec2 := func() pointer.Record {
		p, err := pointer.Open(dir+"/app.ptr", pointer.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		return p.Record()
	}()
	t.Logf("record on disk after the kill: %+v", rec2)
	rev28BCopyTruncate(t, r.path)
	appendTo(t, r.path, numbered("c", 0, 5)...)
	r2 := newRig(t, dir, rigOpts{strategy: file.Committed})
	r2.start()
	r2.waitFor("c lines", 10*time.Second, func() bool { return counts(r2.rec.all())["c-00004"] > 0 })
	r2.waitSettled()
	if c := counts(r2.rec.all()); c["a-00004"] != 1 || c["c-00000"] != 1 {
		t.Errorf("restart delivered %v, want a-0..4 and c-0..4 once", lines(r2.rec.all()))
	}
	for _, g := range r2.rec.all() {
		if strings.HasPrefix(g.Line, "c-") && g.Epoch == rec.Epoch {
			t.Errorf("new line %s delivered under the old epoch %x at %d", g.Line, g.Epoch, g.Pos)
		}
		if strings.HasPrefix(g.Line, "a-") && g.Epoch != rec.Epoch {
			t.Errorf("old line %s again under %x:%d, want the old epoch %x", g.Line, g.Epoch, g.Pos, rec.Epoch)
		}
	}
	if r2.src.LostTails() != 0 {
		t.Errorf("lostTails %d, want 0 (the copy holds every uncommitted byte)", r2.src.LostTails())
	}
}

// Review 28b A (a file holding only a partial line at adoption, never
// committed, cut while stopped: counted in lostTails) is kept by decision:
// the README's "Truncation while stopped" counts a never-committed pointer
// whose file held bytes when adopted (its lines may have gone out
// unacknowledged; an overcount when they were a fragment).

// Probe: a file with content at start (adopted with its first bytes) gets
// no msync before its first line goes out (the start cost stays).
func TestRev28BProbeAdoptedWithContentNoExtraMsync(t *testing.T) {
	cm := &countingMap{}
	hold := make(chan struct{})
	notify := make(chan time.Time, 64)
	r := newRig(t, "", rigOpts{strategy: file.Committed, hold: map[string]chan struct{}{"a-00000": hold}, notify: notify,
		ptrMap: func(f *os.File) (pointer.Mapping, error) {
			cm.f, cm.mem = f, make([]byte, pointer.Size)
			_, err := f.ReadAt(cm.mem, 0)
			return cm, err
		}})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	select {
	case <-notify:
	case <-time.After(5 * time.Second):
		t.Fatal("a-0 not delivered")
	}
	if n := cm.flushes.Load(); n > 1 {
		t.Errorf("%d msyncs before the first line of a file adopted with content, want at most 1 (the new pointer's)", n)
	}
	r.crash() // a-00000 held: never committed
	cm2 := &countingMap{}
	hold2 := make(chan struct{})
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, hold: map[string]chan struct{}{"a-00000": hold2}, notify: notify,
		ptrMap: func(f *os.File) (pointer.Mapping, error) {
			cm2.f, cm2.mem = f, make([]byte, pointer.Size)
			_, err := f.ReadAt(cm2.mem, 0)
			return cm2, err
		}})
	for len(notify) > 0 {
		<-notify
	}
	r2.start()
	select {
	case <-notify:
	case <-time.After(5 * time.Second):
		t.Fatal("a-0 not delivered after the restart")
	}
	if n := cm2.flushes.Load(); n > 1 {
		t.Errorf("%d msyncs before the first line after a restart of a never-committed pointer adopted with content, want at most 1 (as before the change)", n)
	}
	close(hold2)
	close(hold)
	r2.waitLines(5)
}

// Probe: as above but the copy is gone too (copytruncate, rotate 0): the
// unacknowledged lines are counted lost once and the new lines come under
// a new epoch (not skipped as applied).
func TestRev28BProbeAdoptedEmptyKill9TruncatedNoCopy(t *testing.T) {
	dir := t.TempDir()
	hold := make(chan struct{})
	notify := make(chan time.Time, 64)
	r := newRig(t, dir, rigOpts{strategy: file.Committed, hold: map[string]chan struct{}{"a-00000": hold}, notify: notify})
	appendTo(t, r.path)
	r.start()
	r.waitFor("caught up", 5*time.Second, func() bool { return r.src.State() == file.CaughtUp })
	appendTo(t, r.path, numbered("a", 0, 5)...)
	select {
	case <-notify:
	case <-time.After(5 * time.Second):
		t.Fatal("a-0 not delivered")
	}
	epoch := r.ptr.Record().Epoch
	r.crash()
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("c", 0, 5)...)
	r2 := newRig(t, dir, rigOpts{strategy: file.Committed})
	r2.start()
	r2.waitLines(5)
	r2.waitSettled()
	for _, g := range r2.rec.all() {
		if g.Epoch == epoch {
			t.Errorf("%s under the old epoch %x at %d", g.Line, g.Epoch, g.Pos)
		}
	}
	if r2.src.LostTails() != 1 {
		t.Errorf("lostTails %d, want 1 (a-0..4 never acknowledged, cut with no copy)", r2.src.LostTails())
	}
}
