package file_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// Issue 11 item 4: a file truncated and written back to exactly its old
// size while the source is caught up is a replacement (DESIGN §4 "Same-size
// rewrites"): the mtime moved, so the fingerprint is read again, and the
// new content is read from its start under a new epoch, without waiting for
// a later append. Nothing is lost: everything before was read. Polls
// only (no fsnotify), so that no look falls between the truncate and the
// write, which would see a plain truncation.
func TestSameSizeTruncateRewriteIsReplacement(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, poll: 300 * time.Millisecond})
	appendTo(t, r.path, numbered("old", 0, 20)...)
	r.start()
	r.waitLines(20)
	r.waitSettled()
	e1 := r.src.Epoch()
	before, _ := os.Stat(r.path)
	time.Sleep(50 * time.Millisecond) // past one mtime tick
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("NEW", 0, 20)...)
	if after, _ := os.Stat(r.path); after.Size() != before.Size() || after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("size %d → %d, mtime %v → %v: not a same-size rewrite", before.Size(), after.Size(), before.ModTime(), after.ModTime())
	}
	r.waitFor("the rewritten lines", 5*time.Second, func() bool { return r.rec.len() >= 40 })
	r.waitSettled()
	gs := r.rec.all()
	if len(gs) != 40 {
		t.Fatalf("got %d lines, want 40", len(gs))
	}
	ends := lineEnds(t, r.path)
	for i, g := range gs[20:] {
		if want := fmt.Sprintf("NEW-%05d", i); g.Line != want || g.Epoch == e1 || g.Pos != ends[want] {
			t.Fatalf("line %d: %+v, want %q at %d under a new epoch (old %x)", i, g, want, ends[want], e1)
		}
	}
	if !strings.Contains(r.src.Detail(), "replaced in place") || !r.warned("replaced in place") {
		t.Fatalf("detail %q", r.src.Detail())
	}
	if r.src.LostTails() != 0 || r.src.LostBytes() != 0 {
		t.Fatalf("lostTails %d lostBytes %d: every old byte was read, nothing is lost", r.src.LostTails(), r.src.LostBytes())
	}
	if rec := r.ptr.Record(); rec.Epoch != r.src.Epoch() || rec.Epoch == e1 || rec.Offset != before.Size() {
		t.Fatalf("pointer (%x, %d), want (%x, %d)", rec.Epoch, rec.Offset, r.src.Epoch(), before.Size())
	}
}

// The same with dd conv=notrunc: other bytes written over the start of the
// file in place, its size unchanged. The first bytes changed, so the file
// is read again from its start under a new epoch (the unchanged rest is
// delivered again: a duplicate, never a gap).
func TestInPlaceOverwriteSameSizeIsReplacement(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Earliest})
	appendTo(t, r.path, numbered("aaa", 0, 20)...)
	r.start()
	r.waitLines(20)
	r.waitSettled()
	e1 := r.src.Epoch()
	time.Sleep(50 * time.Millisecond)
	f, err := os.OpenFile(r.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Join(numbered("bbb", 0, 5), "\n")+"\n"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r.waitFor("the file read again", 5*time.Second, func() bool { return r.rec.len() >= 40 })
	r.waitSettled()
	gs := r.rec.all()
	want := append(numbered("bbb", 0, 5), numbered("aaa", 5, 15)...)
	if len(gs) != 40 || strings.Join(lines(gs[20:]), ",") != strings.Join(want, ",") {
		t.Fatalf("got %d lines, then %v; want %v", len(gs), lines(gs[20:]), want)
	}
	if gs[20].Epoch == e1 || gs[39].Epoch != gs[20].Epoch {
		t.Fatalf("epochs %x then %x..%x: want one new epoch", e1, gs[20].Epoch, gs[39].Epoch)
	}
}
