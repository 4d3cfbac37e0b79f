package file_test

import (
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// crash ends a rig the way kill -9 does: no Drain, no final commit, no
// Source.Close; only what is in the pointer's mapping (page cache) stays.
func (r *rig) crash() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	<-r.done
	r.gstop()
	<-r.group.Done()
	r.ptr.Close()
}

// Regression tests of the review of the deleted-file change (R1-R4 in
// rot-review.md).

// R1. DESIGN §4/§7 (and forget.go's own promise): "Until the Reset happened
// the feed is not settled, so a launcher that waits for settled before a
// kill -9 never sees the tail counted." Between the deletion and the end of
// rotateWait the feed reported CAUGHT_UP, settled; a kill -9 then made the
// restart count a lost tail although every line was delivered and committed.
// Now the file is forgotten as soon as it is deleted and all committed.
func TestDeletedFileSettledThenKill9CountsNoLostTail(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: time.Hour})
	appendTo(t, r.path, numbered("a", 0, 30)...)
	r.start()
	r.waitLines(30)
	r.waitSettled()
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the deletion seen", 10*time.Second, r.src.FileEnded)
	r.waitSettled() // what a launcher sees: settled (CommitOK true, CAUGHT_UP)
	if !r.src.CommitOK() || r.src.State() != file.CaughtUp {
		t.Fatalf("not settled: commitOK %v state %s", r.src.CommitOK(), r.src.State())
	}
	r.crash()

	var losses lossLog
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: losses.add}).start()
	r2.waitSettled()
	if n := r2.src.LostTails(); n != 0 {
		t.Fatalf("kill -9 after a settled report (file deleted, every line committed): restart counts lostTails %d, detail %q; want 0",
			n, r2.src.Detail())
	}
}

// R2. A file deleted and recreated at the path while lines of the old file
// are still unacknowledged: the switch waits at the epoch barrier. A SIGTERM
// then drains every old line and commits the old file's end; the stop must
// finish the barrier (Reset to the new file), else the pointer keeps naming
// the deleted file and the restart counts a lost tail (issue 11 item 5:
// "even after a clean SIGTERM").
func TestDeletedRecreatedAtBarrierThenSigtermCountsNoLostTail(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, batchLines: 1,
		hold: map[string]chan struct{}{"a-00029": hold}})
	appendTo(t, r.path, numbered("a", 0, 30)...)
	r.start()
	r.waitFor("a-00028 committed", 10*time.Second, func() bool { return r.ptr.Record().Offset == 29*8 })
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 3)...)
	r.waitFor("the barrier", 10*time.Second, func() bool { return r.pub.Paused() })
	go func() { time.Sleep(300 * time.Millisecond); close(hold) }() // finishes during the drain
	r.stop()
	if got := r.rec.len(); got != 30 {
		t.Fatalf("delivered %d lines before the stop, want 30", got)
	}

	var losses lossLog
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: losses.add}).start()
	gs := r2.waitLines(3)
	r2.waitSettled()
	if n := r2.src.LostTails(); n != 0 {
		t.Fatalf("clean stop after every line of the deleted file was delivered and committed: lostTails %d, detail %q; want 0 (first line %+v)",
			n, r2.src.Detail(), gs[0])
	}
}

// R3. A restart that kept the pointer under a new file key (same content:
// cp + mv onto the path while stopped, DESIGN §3 "KeptNewKey") records the
// new key only at the next Store. If the file is then deleted with nothing
// new committed, it must still be forgotten (matched on epoch and offset,
// not the key), else the pointer keeps naming a file that is gone and the
// next restart counts a lost tail, even after a clean stop.
func TestDeletedFileKeptUnderNewKeyIsForgotten(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 30)...)
	r.start()
	r.waitLines(30)
	r.waitSettled()
	r.stop()
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, r.path); err != nil { // same bytes, new inode
		t.Fatal(err)
	}

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitSettled()
	if err := os.Remove(r2.path); err != nil {
		t.Fatal(err)
	}
	r2.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r2.src.State() == file.WaitingForFile })
	r2.waitSettled()
	r2.stop()
	if rec := r2.ptr.Record(); rec.FileKey != 0 || rec.Offset != 0 {
		t.Errorf("pointer %+v after the deleted (re-keyed) file was closed and the daemon stopped; want an empty record", rec)
	}

	r3 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r3.waitSettled()
	if n := r3.src.LostTails(); n != 0 {
		t.Fatalf("restart: lostTails %d (detail %q), want 0: every line was delivered and committed", n, r3.src.Detail())
	}
}

// R4. A file renamed away (no new file at the path) keeps the pointer; once
// rotateWait closed it as current, its later lines must stay positioned
// under the pointer's epoch (they move the pointer). Given a fresh epoch and
// no position instead, a restart (after a clean stop) read those same lines
// again, positioned under the pointer's epoch: a second delivery §2 does not
// allow, under another (feed, epoch, position) id that no sink (postgres'
// inbox, nats' Msg-Id, webhook's Idempotency-Key) can recognise.
func TestRenamedAwayFileLateLinesDeliveredOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 2 * time.Second})
	appendTo(t, r.path, numbered("a", 0, 30)...)
	r.start()
	r.waitLines(30)
	r.waitSettled()
	moved := r.path + ".old"
	if err := os.Rename(r.path, moved); err != nil {
		t.Fatal(err)
	}
	r.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	appendTo(t, moved, "late-1", "late-2")
	first := r.waitLines(32)
	r.waitSettled()
	r.stop()

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	time.Sleep(500 * time.Millisecond)
	r2.waitSettled()
	for _, g := range r2.rec.all() {
		for _, f := range first {
			if f.Line == g.Line {
				t.Errorf("after a clean stop %q was delivered again: first %+v, then %+v", g.Line, f, g)
			}
		}
	}
}

// The R1 window with a successor: the file deleted and an empty file
// created at the path (touch). The switch waits for the new file's first
// bytes (or rotateWait); meanwhile the deleted file is forgotten, so a
// settled feed killed -9 restarts with no lost tail, and the new file is
// read from its start.
func TestDeletedFileWithEmptySuccessorSettledThenKill9CountsNoLostTail(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: time.Hour})
	appendTo(t, r.path, numbered("a", 0, 30)...)
	r.start()
	r.waitLines(30)
	r.waitSettled()
	e1 := r.ptr.Record().Epoch
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the deleted file forgotten", 10*time.Second, func() bool {
		rec := r.ptr.Record()
		return rec.Epoch != e1 && rec.FileKey == 0
	})
	r.waitSettled()
	r.crash()

	var losses lossLog
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: losses.add}).start()
	appendTo(t, r2.path, numbered("b", 0, 3)...)
	gs := r2.waitLines(3)
	r2.waitSettled()
	if n := r2.src.LostTails(); n != 0 || len(losses.all()) != 0 || gs[0].Line != "b-00000" {
		t.Fatalf("restart: lostTails %d, losses %+v, first line %+v; want no loss and b-00000 first", n, losses.all(), gs[0])
	}
}

// A file renamed away and kept under the pointer's epoch (R4) stops moving
// the pointer once another file takes it: lines appended to it after the
// new file's barrier are downgraded, under an epoch of their own, and the
// pointer stays on the new file.
func TestRenamedAwayFileDowngradedOnceNewFileTakesPointer(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 300 * time.Millisecond})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	r.waitLines(5)
	e1 := r.ptr.Record().Epoch
	moved := r.path + ".old"
	if err := os.Rename(r.path, moved); err != nil {
		t.Fatal(err)
	}
	r.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	appendTo(t, moved, "kept-1")
	kept := r.waitLine("kept-1")
	if !kept.Positioned || kept.Epoch != e1 {
		t.Fatalf("a line appended to the renamed-away file while it holds the pointer: %+v, want positioned under %016x", kept, e1)
	}
	appendTo(t, r.path, numbered("b", 0, 2)...)
	b := r.waitLine("b-00001")
	r.waitSettled()
	appendTo(t, moved, "late-1")
	late := r.waitLine("late-1")
	r.waitSettled()
	if late.Positioned || late.Epoch == e1 || late.Epoch == b.Epoch {
		t.Fatalf("a line appended to the renamed-away file after the new file took the pointer: %+v", late)
	}
	st, _ := os.Stat(r.path)
	if rec := r.ptr.Record(); rec.Epoch != b.Epoch || rec.Offset != st.Size() {
		t.Fatalf("pointer %+v, want (%016x, %d)", rec, b.Epoch, st.Size())
	}
	r.stop()
	if c := counts(r.rec.all()); len(c) != len(r.rec.all()) {
		t.Fatalf("a line delivered twice: %v", lines(r.rec.all()))
	}
}

// Lines a writer appends to a deleted file after it was forgotten are
// delivered downgraded, under an epoch of their own; the pointer keeps the
// empty record (README: a kill -9 before they are acknowledged loses them
// uncounted).
func TestDeletedFileLinesAfterForgetAreDowngraded(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: time.Hour})
	appendTo(t, r.path, numbered("a", 0, 10)...)
	w, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r.start()
	r.waitLines(10)
	e1 := r.ptr.Record().Epoch
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the deleted file forgotten", 10*time.Second, func() bool { return r.ptr.Record().Epoch != e1 })
	empty := r.ptr.Record()
	if _, err := w.WriteString("late-1\nlate-2\n"); err != nil {
		t.Fatal(err)
	}
	gs := r.waitLines(12)
	r.waitSettled()
	for _, g := range gs[10:] {
		if g.Positioned || g.Epoch == e1 || g.Epoch == empty.Epoch || g.Epoch != gs[10].Epoch {
			t.Fatalf("late line %+v: want downgraded under an epoch of its own", g)
		}
	}
	if rec := r.ptr.Record(); rec.Epoch != empty.Epoch || rec.FileKey != 0 || rec.Offset != 0 {
		t.Fatalf("pointer %+v after the late lines, want the empty record %+v", rec, empty)
	}
	if d := r.src.Downgraded(); d != 2 {
		t.Fatalf("downgraded %d, want 2", d)
	}
}

// budgetMapping is a pointer mapping whose writes reach the disk only
// through a successful Flush; once limited, only `left` more flushes
// succeed, the rest fail with EIO (a kill -9 then keeps only what was
// flushed: the model of a crash at a given msync).
type budgetMapping struct {
	f       *os.File
	buf     []byte
	limited atomic.Bool
	left    atomic.Int64
}

func (m *budgetMapping) Bytes() []byte { return m.buf }

func (m *budgetMapping) Flush() error {
	if m.limited.Load() && m.left.Add(-1) < 0 {
		return &fs.PathError{Op: "msync", Path: m.f.Name(), Err: syscall.EIO}
	}
	if _, err := m.f.WriteAt(m.buf, 0); err != nil {
		return err
	}
	return m.f.Sync()
}

func (m *budgetMapping) Close() error { return nil }

// Crash windows of the Reset that forgets a deleted file: the epochs line,
// then the older slot (msync), then the other (msync). While the Reset is
// not on disk the feed is not settled. A crash after the first slot reached
// the disk restarts from the empty record (no lost tail); a crash before it
// restarts from the record naming the deleted file and counts its tail
// (conservative: the feed never said settled). A failed msync heals: the
// Reset is finished by the next Sync.
func TestDeletedFileForgetResetCrashWindows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		flushes  int64 // flushes of the Reset that reach the disk
		heal     bool  // the disk recovers before the crash
		lostTail uint64
	}{
		{"crash before the first slot", 0, false, 1},
		{"crash between the two slots", 1, false, 0},
		{"msync fails, then heals", 0, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m *budgetMapping
			r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: time.Hour,
				ptrMap: func(f *os.File) (pointer.Mapping, error) {
					buf := make([]byte, pointer.Size)
					if _, err := f.ReadAt(buf, 0); err != nil {
						return nil, err
					}
					m = &budgetMapping{f: f, buf: buf}
					return m, nil
				}})
			appendTo(t, r.path, numbered("a", 0, 30)...)
			r.start()
			r.waitLines(30)
			r.waitSettled()
			m.left.Store(tc.flushes)
			m.limited.Store(true)
			if err := os.Remove(r.path); err != nil {
				t.Fatal(err)
			}
			r.waitFor("the Reset's failed msync", 10*time.Second, func() bool { return r.src.CommitFailures() > 0 })
			for i := 0; i < 10; i++ {
				if r.src.CommitOK() {
					t.Fatal("CommitOK while the Reset to the empty record is not on disk")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if tc.heal {
				m.limited.Store(false)
				r.waitSettled()
				if rec := r.ptr.Record(); rec.FileKey != 0 || rec.Offset != 0 || !r.ptr.Synced() {
					t.Fatalf("pointer %+v (synced %v) after the disk healed, want the empty record", rec, r.ptr.Synced())
				}
			}
			r.crash()

			r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
			r2.waitSettled()
			if n := r2.src.LostTails(); n != tc.lostTail {
				t.Fatalf("restart: lostTails %d, want %d (detail %q)", n, tc.lostTail, r2.src.Detail())
			}
		})
	}
}

// A stop at the barrier while a file renamed away still holds the pointer
// (watched under its epoch, not deleted): the stop does not move the
// pointer to the new file, so the restart reads the renamed file from the
// pointer (what was appended to it after the stop, positioned under its
// epoch, once), then the new file from its start.
func TestRenamedAwayFileHoldingPointerAtBarrierStopKeepsIt(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, batchLines: 1, rotateWait: 2 * time.Second,
		hold: map[string]chan struct{}{"kept-1": hold}})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	r.waitLines(5)
	r.waitSettled()
	e1 := r.ptr.Record().Epoch
	moved := r.path + ".old"
	if err := os.Rename(r.path, moved); err != nil {
		t.Fatal(err)
	}
	r.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	w, err := os.OpenFile(moved, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString("kept-1\n")
	r.waitFor("kept-1 read", 10*time.Second, func() bool { return r.src.LinesRead() == 6 })
	appendTo(t, r.path, numbered("b", 0, 2)...)
	r.waitFor("the barrier", 10*time.Second, func() bool { return r.pub.Paused() })
	go func() { time.Sleep(100 * time.Millisecond); close(hold) }()
	r.stop()
	if rec := r.ptr.Record(); rec.Epoch != e1 || rec.Offset != 47 {
		t.Fatalf("pointer %+v after the stop, want the renamed file's (%016x, 47)", rec, e1)
	}
	w.WriteString("after-stop\n")

	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	gs := r2.waitLines(3)
	r2.waitSettled()
	if gs[0].Line != "after-stop" || !gs[0].Positioned || gs[0].Epoch != e1 || gs[1].Line != "b-00000" ||
		r2.src.LostTails() != 0 {
		t.Fatalf("after the restart: %q (first %+v), lostTails %d", lines(gs), gs[0], r2.src.LostTails())
	}
	if len(r2.rec.all()) != 3 {
		t.Fatalf("after the restart: %q, want after-stop b-00000 b-00001", lines(r2.rec.all()))
	}
}

// The file holding the pointer renamed away (left after rotateWait, kept
// under the pointer's epoch) and renamed back to the path: it goes on at
// its position under its epoch, never read again from its start.
func TestRenamedAwayFileRenamedBackGoesOn(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 200 * time.Millisecond})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	r.waitLines(5)
	r.waitSettled()
	e1 := r.ptr.Record().Epoch
	moved := r.path + ".tmp"
	if err := os.Rename(r.path, moved); err != nil {
		t.Fatal(err)
	}
	r.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	if err := os.Rename(moved, r.path); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, "a-00005")
	g := r.waitLine("a-00005")
	r.waitSettled()
	time.Sleep(200 * time.Millisecond)
	if c := counts(r.rec.all()); len(c) != 6 || len(r.rec.all()) != 6 {
		t.Fatalf("delivered %q, want a-00000..a-00005 once each", lines(r.rec.all()))
	}
	if !g.Positioned || g.Epoch != e1 || g.Pos != 48 {
		t.Fatalf("a-00005 %+v, want positioned at 48 under %016x", g, e1)
	}
	if rec := r.ptr.Record(); rec.Epoch != e1 || rec.Offset != 48 {
		t.Fatalf("pointer %+v, want (%016x, 48)", rec, e1)
	}
}
