package file_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// lossLog collects the losses a source reports through OnLoss.
type lossLog struct {
	mu sync.Mutex
	l  []file.Loss
}

func (l *lossLog) add(x file.Loss) { l.mu.Lock(); l.l = append(l.l, x); l.mu.Unlock() }

func (l *lossLog) all() []file.Loss {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]file.Loss(nil), l.l...)
}

// Issue 11 item 5, DESIGN §4: a file read to its end, committed and then
// deleted is not a lost tail. Once it is closed (rotateWait after the path
// went missing) with every line acknowledged, the pointer records that
// nothing of it is pending (an empty record under a new epoch, written to
// the epochs file too), and a restart that cannot find it loses nothing.
func TestDeletedFullyReadFileIsNotALostTail(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 30)...)
	r.start()
	r.waitLines(30)
	r.waitSettled()
	e1 := r.ptr.Record().Epoch
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	r.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	r.waitSettled()
	rec := r.ptr.Record()
	if rec.Epoch == e1 || rec.FileKey != 0 || rec.FPLen != 0 || rec.Offset != 0 || !r.ptr.Synced() {
		t.Fatalf("pointer after the deleted file was closed: %+v (synced %v), want an empty record under a new epoch",
			rec, r.ptr.Synced())
	}
	r.stop()
	ep, err := pointer.ReadEpochs(filepath.Join(r.dir, "app.epochs"))
	if err != nil || len(ep) == 0 || ep[len(ep)-1].Epoch != rec.Epoch || ep[len(ep)-1].Reason != "forgotten" {
		t.Fatalf("epochs file %+v (%v): the empty record's epoch is not its last line", ep, err)
	}
	if l := ep[len(ep)-1]; l.PrevEpoch != e1 || l.PrevOffset != 240 {
		t.Fatalf("forgotten line %+v: want the forgotten epoch %016x and its end 240", l, e1)
	}

	var losses lossLog
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: losses.add}).start()
	r2.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r2.src.State() == file.WaitingForFile })
	r2.waitSettled()
	if n := r2.src.LostTails(); n != 0 || r2.src.Detail() != "" || len(losses.all()) != 0 {
		t.Fatalf("restart after a fully read file was deleted: lostTails %d, detail %q, losses %+v; want none",
			n, r2.src.Detail(), losses.all())
	}
	// A file created later is read from its start.
	appendTo(t, r2.path, numbered("b", 0, 3)...)
	gs := r2.waitLines(3)
	if gs[0].Line != "b-00000" || gs[0].Epoch == e1 {
		t.Fatalf("first line after the restart %+v", gs[0])
	}
	r2.waitSettled()
	if rec := r2.ptr.Record(); rec.FileKey != keyOf(t, r2.path) || rec.Offset != 24 {
		t.Fatalf("pointer %+v after the new file, want its key at 24", rec)
	}
}

// The same when the daemon stops before rotateWait closed the deleted file:
// the stop closes it, with every line acknowledged, and the pointer then
// records that nothing of it is pending.
func TestDeletedFullyReadFileStoppedBeforeClose(t *testing.T) {
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
	r.stop()
	if rec := r.ptr.Record(); rec.FileKey != 0 || rec.FPLen != 0 || rec.Offset != 0 {
		t.Fatalf("pointer after a stop with the deleted file read: %+v, want an empty record", rec)
	}
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	r2.waitSettled()
	if n := r2.src.LostTails(); n != 0 {
		t.Fatalf("lostTails %d after a restart, want 0 (detail %q)", n, r2.src.Detail())
	}
}

// A file renamed away (not deleted) with no new file at the path keeps the
// pointer when it is closed: a restart finds it by its key and reads the
// lines appended to it meanwhile, positioned.
func TestRenamedAwayFileIsNotForgotten(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 30)...)
	r.start()
	r.waitLines(30)
	r.waitSettled()
	e1, key := r.ptr.Record().Epoch, r.ptr.Record().FileKey
	moved := r.path + ".old"
	if err := os.Rename(r.path, moved); err != nil {
		t.Fatal(err)
	}
	r.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	r.waitSettled()
	r.stop()
	if rec := r.ptr.Record(); rec.Epoch != e1 || rec.FileKey != key || rec.Offset != 240 {
		t.Fatalf("pointer %+v after a rename away, want the file kept at 240", rec)
	}
	appendTo(t, moved, numbered("a", 30, 2)...)
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed}).start()
	gs := r2.waitLines(2)
	if gs[0].Line != "a-00030" || !gs[0].Positioned || gs[0].Epoch != e1 || r2.src.LostTails() != 0 {
		t.Fatalf("after the restart: %+v, lostTails %d", gs[0], r2.src.LostTails())
	}
}

// A deleted file with a line not acknowledged when it is closed is not
// forgotten: that line may never reach a subscriber, and a restart that
// cannot find the file counts the tail.
func TestDeletedFileWithUnacknowledgedLineStaysInPointer(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, batchLines: 1, rotateWait: 100 * time.Millisecond,
		hold: map[string]chan struct{}{"a-00029": hold}})
	appendTo(t, r.path, numbered("a", 0, 30)...)
	r.start()
	r.waitFor("a-00028 committed", 10*time.Second, func() bool { return r.ptr.Record().Offset == 29*8 })
	key := r.ptr.Record().FileKey
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	r.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	time.Sleep(200 * time.Millisecond)
	if rec := r.ptr.Record(); rec.FileKey != key || rec.Offset != 29*8 {
		t.Fatalf("pointer %+v with a line unacknowledged, want the file's key at %d", rec, 29*8)
	}
	close(hold)
	r.waitSettled()
	if rec := r.ptr.Record(); rec.FileKey != 0 || rec.Offset != 0 {
		t.Fatalf("pointer %+v once every line was acknowledged, want an empty record", rec)
	}
}

// DESIGN §4 "Nothing green over a loss": a truncation found at restart with
// no copy while the pointer was past 0 counts one lost tail, even after a
// clean stop: lines written after the stop may have been in the part that
// was cut. The file is read from its start under a new epoch.
func TestTruncatedWhileStoppedCountsLostTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		rewrite func(t *testing.T, path string)
	}{
		{"shorter", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			appendTo(t, path, numbered("b", 0, 5)...)
		}},
		{"rewritten longer", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			appendTo(t, path, numbered("b", 0, 100)...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, "", rigOpts{strategy: file.Committed})
			appendTo(t, r.path, numbered("a", 0, 50)...)
			r.start()
			r.waitLines(50)
			r.waitSettled()
			r.stop()
			e1 := r.ptr.Record().Epoch
			key := keyOf(t, r.path)
			tc.rewrite(t, r.path)
			if keyOf(t, r.path) != key {
				t.Fatal("the file changed its key")
			}

			var losses lossLog
			r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: losses.add}).start()
			gs := r2.waitLines(5)
			r2.waitSettled()
			if gs[0].Line != "b-00000" || gs[0].Epoch == e1 {
				t.Fatalf("first line %+v, want b-00000 under a new epoch", gs[0])
			}
			l := losses.all()
			if n := r2.src.LostTails(); n != 1 || len(l) != 1 || l[0].Counter != "lostTails" || l[0].Amount != 1 ||
				l[0].Epoch != e1 {
				t.Fatalf("lostTails %d, losses %+v; want one lost tail of epoch %016x", n, l, e1)
			}
			if d := r2.src.Detail(); !strings.Contains(d, "truncated") || !strings.Contains(d, "lost") {
				t.Fatalf("detail %q does not say the tail may be lost", d)
			}
		})
	}
}

// A truncation at restart with the copy in the directory loses nothing.
func TestTruncatedWhileStoppedWithCopyCountsNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 50)...)
	r.start()
	r.waitLines(50)
	r.waitSettled()
	r.stop()
	appendTo(t, r.path, numbered("a", 50, 5)...)
	copyTruncate(t, r.path, r.path+".1")
	var losses lossLog
	r2 := newRig(t, r.dir, rigOpts{strategy: file.Committed, onLoss: losses.add}).start()
	r2.waitLines(5)
	r2.waitSettled()
	if n := r2.src.LostTails(); n != 0 || len(losses.all()) != 0 {
		t.Fatalf("lostTails %d, losses %+v with the copy present", n, losses.all())
	}
}

// DESIGN §4 "Epoch barrier", issue 11 item 15: lines appended to an old
// file after the switch carry an epoch of their own (fresh: neither the
// old file's nor the new one's, never in a pointer) and their real byte
// position in the old file, so <feed>:<epoch>:<position> stays unique.
func TestDowngradedLinesHaveAnEpochOfTheirOwn(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 3 * time.Second})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	r.waitLines(5)
	e1 := r.src.Epoch()
	old := r.path + ".1"
	if err := os.Rename(r.path, old); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 3)...)
	r.waitLines(8)
	r.waitSettled()
	e2 := r.src.Epoch()
	appendTo(t, old, "late-1", "late-2")
	gs := r.waitLines(10)
	r.waitSettled()
	ends := lineEnds(t, old)
	late := gs[8:]
	for _, g := range late {
		if g.Positioned || g.Epoch == e1 || g.Epoch == e2 || g.Epoch == 0 || g.Pos != ends[g.Line] {
			t.Fatalf("late line %+v; want downgraded under an epoch of its own (not %016x or %016x) at its offset %d",
				g, e1, e2, ends[g.Line])
		}
	}
	if late[0].Epoch != late[1].Epoch {
		t.Fatalf("the old file's late lines carry two epochs: %016x, %016x", late[0].Epoch, late[1].Epoch)
	}
	r.stop()
	ep, err := pointer.ReadEpochs(filepath.Join(r.dir, "app.epochs"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, l := range ep {
		seen[l.Epoch] = true
	}
	if !seen[e1] || !seen[e2] || seen[late[0].Epoch] {
		t.Fatalf("epochs file %+v: want %016x and %016x, never the downgraded epoch %016x", ep, e1, e2, late[0].Epoch)
	}
	for _, l := range ep {
		if l.Epoch == e2 && (l.FileKey != keyOf(t, r.path) || l.Path != r.path) {
			t.Fatalf("epochs line %+v does not name %s", l, r.path)
		}
	}
}
