package file_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// truncateWhilePaused runs a live truncation the source sees only at its
// polls: the subscriber holds the first line, so the source stops reading
// (its read position stays at the 600 lines it read) while its checks go on
// (DESIGN §4: at every poll, even while paused). If copy is set, a copy of
// the 600 lines is made first (logrotate's copytruncate). Then 20 lines are
// appended, seen by the source at a poll but never read, and the file is
// truncated and written again. It returns the rig once everything readable
// was delivered.
func truncateWhilePaused(t *testing.T, copy bool) *rig {
	t.Helper()
	hold := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, hold: map[string]chan struct{}{"a-00000": hold}})
	appendTo(t, r.path, numbered("a", 0, 600)...)
	r.start()
	st, _ := os.Stat(r.path)
	r.waitFor("the feed paused with the file read", 10*time.Second, func() bool {
		return r.pub.Paused() && r.src.ReadPos() == st.Size()
	})
	if copy {
		data, err := os.ReadFile(r.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r.path+".1", data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Written after logrotate's copy and before its truncate: in no copy.
	appendTo(t, r.path, numbered("a", 600, 20)...)
	time.Sleep(6 * r.opts.poll) // the source's polls see the file at its new size
	if r.src.ReadPos() != st.Size() {
		t.Fatalf("the source read on to %d while paused; the test needs it at %d", r.src.ReadPos(), st.Size())
	}
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 5)...)
	close(hold)
	r.waitLines(605)
	r.waitSettled()
	time.Sleep(2 * r.opts.rotateWait)
	r.waitSettled()
	c := counts(r.rec.all())
	for _, l := range append(numbered("a", 0, 600), numbered("b", 0, 5)...) {
		if c[l] != 1 {
			t.Fatalf("%s delivered %d times", l, c[l])
		}
	}
	if n := len(r.rec.all()); n != 605 {
		t.Fatalf("%d deliveries, want 605", n)
	}
	return r
}

// Issue 11 item 6: logrotate's copytruncate while the application writes:
// the lines written between the copy and the truncate are in neither file.
// The source saw the original at 20 lines (160 bytes) more than the copy
// turned out to hold: one lost tail, 160 lost bytes (DESIGN §4 "Nothing
// green over a loss").
func TestLiveCopyTruncateCountsBytesMissingFromCopy(t *testing.T) {
	t.Parallel()
	r := truncateWhilePaused(t, true)
	if !r.warned("reading its copy") {
		t.Fatalf("the copy was not read:\n%s", tailOf(r.logs.String(), 20))
	}
	if r.src.LostTails() != 1 || r.src.LostBytes() != 160 {
		t.Fatalf("lostTails %d lostBytes %d, want 1 and 160 (20 lines of 8 bytes written after the copy)",
			r.src.LostTails(), r.src.LostBytes())
	}
	if !r.warned("lost") || !strings.Contains(r.src.Detail(), "lost") {
		t.Fatalf("no WARN or detail about the loss: detail %q", r.src.Detail())
	}
}

// A live truncation with no copy: the bytes the source saw past its read
// position are gone: one lost tail, size last seen − read position in
// lostBytes.
func TestLiveTruncationWithoutCopyCountsUnreadBytes(t *testing.T) {
	t.Parallel()
	r := truncateWhilePaused(t, false)
	if r.src.LostTails() != 1 || r.src.LostBytes() != 160 {
		t.Fatalf("lostTails %d lostBytes %d, want 1 and 160", r.src.LostTails(), r.src.LostBytes())
	}
	if !r.warned("lost") || !strings.Contains(r.src.Detail(), "lost") {
		t.Fatalf("no WARN or detail about the loss: detail %q", r.src.Detail())
	}
}
