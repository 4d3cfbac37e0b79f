package file_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// A glob file read to its end goes inactive and is closed while its lines
// wait for a slow subscriber longer than the close waits for them (DESIGN
// §10 "Bounded", "Forgetting", "Status"). Their acknowledgements arrive
// after the close: the stream's pointer must still record them, the feed
// must not be settled (CommitOK) before it does, and a deleted file whose
// lines were unacknowledged at its close is kept until they are
// acknowledged and is forgotten afterwards.
func TestGlobClosedStreamCommitsLateAcks(t *testing.T) {
	defer file.SetStopDrainBound(200 * time.Millisecond)()
	dir, data := t.TempDir(), t.TempDir()
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	defer r.stop()
	r.hold.Store(true) // taken, not acknowledged
	for _, tag := range []string{"a", "b", "c"} {
		writeLines(t, filepath.Join(dir, tag+".log"), tag, 5) // 20 bytes
	}
	r.waitLines(15, 10*time.Second)
	waitFor(t, "every file closed (inactive) with its lines unacknowledged", 10*time.Second, func() bool {
		c := r.g.Counts()
		return c.Tracked == 3 && c.Open == 0
	})
	if r.g.CommitOK() {
		t.Errorf("CommitOK true while closed files' lines wait for their acknowledgement")
	}
	ptrs := func() map[string]pointer.Record {
		out := map[string]pointer.Record{}
		l, _ := filepath.Glob(filepath.Join(data, "feeds", "f", "*.ptr"))
		for _, p := range l {
			if rec, err := pointer.Inspect(p); err == nil {
				out[p] = rec
			}
		}
		return out
	}
	if n := len(ptrs()); n != 3 {
		t.Fatalf("%d stream pointers, want 3", n)
	}
	// c.log is deleted while its lines are unacknowledged: not forgotten.
	if err := os.Remove(filepath.Join(dir, "c.log")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // rescans, forgetAfter (300 ms) passed several times
	if n := len(ptrs()); n != 3 {
		t.Fatalf("%d stream pointers while a deleted file's lines are unacknowledged, want 3 (forgotten too early)", n)
	}
	r.hold.Store(false)
	settled := func() bool {
		return r.pub.Pending() == 0 && r.pub.Acknowledged() >= 15 && r.g.CommitOK() && r.g.SyncedSeq() >= r.pub.Acknowledged()
	}
	for end := time.Now().Add(10 * time.Second); !settled(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("not settled 10 s after every line was acknowledged (pending %d, acknowledged %d)", r.pub.Pending(), r.pub.Acknowledged())
			break
		}
	}
	// Settled: a's and b's pointers cover their 5 lines (c's may be
	// reset to the empty record already: its file is gone).
	covered, got := 0, map[string]int64{}
	for p, rec := range ptrs() {
		got[filepath.Base(p)] = rec.Offset
		if rec.Offset == 20 {
			covered++
		}
	}
	if covered < 2 {
		t.Errorf("settled, yet %d stream pointers cover their file's 20 acknowledged bytes, want 2 (a.log, b.log): %v", covered, got)
	}
	waitFor(t, "the deleted file's pointer forgotten once its lines are acknowledged", 10*time.Second, func() bool {
		return len(ptrs()) == 2
	})
	if err := os.Remove(filepath.Join(dir, "a.log")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a file closed with late acknowledgements, then deleted, forgotten", 10*time.Second, func() bool {
		return len(ptrs()) == 1
	})
}

// A file closed owing the commit of its unacknowledged lines that grows
// before they are acknowledged is reopened from its pointer: its lines
// come again (duplicates, never a gap), and once everything is
// acknowledged its pointer covers the whole file and the feed is settled.
func TestGlobOwedStreamReopenedOnGrowth(t *testing.T) {
	defer file.SetStopDrainBound(200 * time.Millisecond)()
	dir, data := t.TempDir(), t.TempDir()
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	defer r.stop()
	r.hold.Store(true)
	in := filepath.Join(dir, "a.log")
	writeLines(t, in, "a", 5)
	r.waitLines(5, 10*time.Second)
	waitFor(t, "the file closed (inactive) with its lines unacknowledged", 10*time.Second, func() bool {
		c := r.g.Counts()
		return c.Tracked == 1 && c.Open == 0
	})
	writeLines(t, in, "b", 5) // grows while its first lines are unacknowledged
	// The reopen waits for the owed commit: a source started from the
	// pointer would publish the 5 unacknowledged lines again (DESIGN §2:
	// no duplicates without a crash).
	time.Sleep(1500 * time.Millisecond)
	if n := r.count(); n != 5 {
		t.Errorf("%d lines taken while the first 5 were unacknowledged, want 5 (no re-read)", n)
	}
	r.hold.Store(false)
	r.waitLines(10, 10*time.Second)
	waitFor(t, "the feed settled", 10*time.Second, func() bool {
		return r.pub.Pending() == 0 && r.g.CommitOK() && r.g.SyncedSeq() >= r.pub.Acknowledged()
	})
	st, err := os.Stat(in)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := filepath.Glob(filepath.Join(data, "feeds", "f", "*.ptr"))
	if len(l) != 1 {
		t.Fatalf("%d stream pointers, want 1", len(l))
	}
	rec, err := pointer.Inspect(l[0])
	if err != nil {
		t.Fatal(err)
	}
	if rec.Offset != st.Size() {
		t.Fatalf("settled with the pointer at %d, want the file's size %d", rec.Offset, st.Size())
	}
	r.mu.Lock()
	got := r.lines[in]
	r.mu.Unlock()
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	for _, tag := range []string{"a", "b"} {
		for i := 0; i < 5; i++ {
			if l := tag + " " + string(rune('0'+i)); seen[l] != 1 {
				t.Errorf("line %q delivered %d times, want once: %q", l, seen[l], got)
			}
		}
	}
}
