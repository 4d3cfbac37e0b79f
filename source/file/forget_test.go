package file_test

import (
	"os"
	"testing"
	"time"

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
