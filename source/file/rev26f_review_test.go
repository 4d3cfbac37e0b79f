package file_test

// Review 26f (independent review of a24eb4b and 7a83eb5: a file cut short
// above the read position counts lastSize − size; a once-read ending
// before its limit counts the rest, a resumed one's clamped bytes too
// (onceCut); a queued file cut short gets its epoch before the loss is
// counted). Each TestRev26FR<letter>… test here failed on the reviewed
// code for the reason its comment states; B is parked
// (open_rev26f_test.go).

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// A (a false loss: lossless red over bytes no once-read ever delivers). A
// single-file ONCE_EARLIEST feed restarted by a reload (Config.Resume as
// noteHead makes it: Offset after the 100th line, Limit = limit + past =
// the file's size at its first open, Past = past — the field the fix
// added —, 8,000 bytes of 1,000 lines and a
// 40-byte unterminated last line). While the feed restarted the writer's
// unterminated bytes were cut (the file now ends at 8,000, just after its
// last terminator); every line the once-read would deliver is still there.
// DESIGN §4: "A once-read's bytes after the last terminator are not
// delivered; `unterminated` is their count" and "`lossless` is true only
// while tailfeed can show that no line was skipped". The same cut during a
// first (not resumed) read counts nothing (onceEnd put limit at the last
// terminator, 8,000, and readPos reaches it). Expected: lines 100–999
// delivered, lostTails 0, lostBytes 0. Observed: lostTails 1, lostBytes 40
// (the 40 unterminated bytes counted as a lost tail). Cause:
// source/file/reader.go onceEnd ~185 adds limit − size to onceCut where
// limit is c.Limit (= r.limit + r.past, source.go ~820: the unterminated
// bytes included), and rotate.go atEnd ~25-35 counts any onceCut > 0 as a
// lost tail; the clamped part past the last terminator is no line.
func TestRev26FRAResumedOnceReadCountsCutUnterminatedBytesLost(t *testing.T) {
	losses := &lossLog{}
	r := newRig(t, "", rigOpts{strategy: file.OnceEarliest, onLoss: losses.add})
	appendTo(t, r.path, numbered("a", 0, 1000)...) // 8,000 bytes
	tail := strings.Repeat("u", 40)                // unterminated: never delivered by a once-read
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(tail); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	id := identity(t, r.path)
	r.opts.resume = &file.Resume{Epoch: 0x5eed, Offset: 800, HeadLen: 4096, Head: pointer.Fingerprint(data[:4096]),
		Size: 800, Limit: 8040, Past: 40, Key: pointer.FileKey(id[0], id[1]), From: 0, End: 8040}
	if err := os.Truncate(r.path, 8000); err != nil { // the unterminated bytes cut while the feed restarted
		t.Fatal(err)
	}
	r.start()
	// (Every published line received too: the state can say end of
	// stream before the recorder has the last batch — CI under load.)
	r.waitFor("end of stream", 10*time.Second, func() bool { return r.src.State() == file.EndOfStream && r.pub.Pending() == 0 })
	got := r.rec.all()
	if len(got) != 900 || got[0].Line != "a-00100" || got[0].Epoch != 0x5eed {
		t.Fatalf("delivered %d lines, want a-00100..a-00999 under the resumed epoch", len(got))
	}
	if r.src.LostTails() != 0 || r.src.LostBytes() != 0 {
		t.Errorf("lostTails %d lostBytes %d (losses %+v), want 0 and 0: only the once-read's unterminated bytes (never delivered, §4) were cut; every line is delivered",
			r.src.LostTails(), r.src.LostBytes(), losses.all())
	}
}

// Probe (passes): the queued file cut short gets its epoch from the new
// branch; switched to (a rename rotation, new content), its lines are
// published under that epoch behind the barrier, the pointer is Reset to
// it and the epochs file names it with the file's key, so the loss's
// epoch maps back to its file (DESIGN §4 Epoch barrier, §11).
func TestRev26FRProbeQueuedCutEpochReachesPointerAndEpochsFile(t *testing.T) {
	hold := make(chan struct{})
	losses := &lossLog{}
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, onLoss: losses.add,
		hold: map[string]chan struct{}{"a-00010": hold}})
	appendTo(t, r.path, numbered("a", 0, 3000)...)
	r.start()
	r.waitLines(10)
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("x", 0, 1000)...)
	id := identity(t, r.path)
	r.waitFor("the new file queued", 5*time.Second, func() bool { return strings.Contains(r.logs.String(), "queued behind the open one") })
	time.Sleep(300 * time.Millisecond)
	if err := os.Truncate(r.path, 6000); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the loss counted", 5*time.Second, func() bool { return len(losses.all()) > 0 })
	close(hold)
	r.waitLines(3750)
	r.waitSettled()
	le := losses.all()[0].Epoch
	if rec := r.ptr.Record(); rec.Epoch != le || rec.FileKey != pointer.FileKey(id[0], id[1]) || rec.Offset != 6000 {
		t.Errorf("pointer %+v, want epoch %016x (the loss's), the x file's key, offset 6000", rec, le)
	}
	r.stop()
	ep, err := pointer.ReadEpochs(r.dir + "/app.epochs")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range ep {
		if l.Epoch == le && l.FileKey == pointer.FileKey(id[0], id[1]) {
			found = true
		}
	}
	if !found {
		t.Errorf("epochs file %+v does not name the loss's epoch %016x with the x file's key", ep, le)
	}
	if r.src.LostBytes() != 2000 || r.src.LostTails() != 1 {
		t.Errorf("lostTails %d lostBytes %d, want 1 and 2000", r.src.LostTails(), r.src.LostBytes())
	}
}
