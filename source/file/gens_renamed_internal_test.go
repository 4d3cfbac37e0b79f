package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Mechanism 2 of the e2e soak gaps (TestAud2XKill9…SoakGap): a restart's
// scan lists the generations by name, then opens them one by one; a
// rotation running meanwhile (logrotate's shift: app.log.1 to app.log.2,
// app.log.2 to app.log.3) leaves each scanned name naming another file or
// none. Each such generation was skipped with a WARN ("could not be
// opened"), its lines never read, lossless true — and the run's noteSeen
// made it "seen", so no later scan read it either. A generation is opened
// by its identity, under whatever name it has now; one that is gone is
// counted lost.
func TestGenerationRenamedBetweenScanAndOpenIsRead(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	old := time.Now().Add(-time.Minute)
	for i, g := range [][2]string{{".2", "one\n"}, {".1", "two\n"}} { // oldest first
		if err := os.WriteFile(in+g[0], []byte(g[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		at := old.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(in+g[0], at, at); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Config{Feed: "app", Path: in, Strategy: Committed, MaxLine: 1 << 16}, nil)
	gens := s.scanGenerations(time.Time{}, time.Time{}, func(uint64, uint64) bool { return false }, nil)
	if len(gens) != 2 {
		t.Fatalf("scan found %d generations, want 2", len(gens))
	}
	// The shift, between the scan and the opens.
	for _, mv := range [][2]string{{".2", ".3"}, {".1", ".2"}} {
		if err := os.Rename(in+mv[0], in+mv[1]); err != nil {
			t.Fatal(err)
		}
	}
	s.queueGens(gens)
	defer func() {
		for _, r := range s.next {
			r.close()
		}
	}()
	if len(s.next) != 2 {
		t.Fatalf("%d generations queued, want 2 (renamed since the scan, still on disk); lostTails %d", len(s.next), s.LostTails())
	}
	for i, want := range []string{"one\n", "two\n"} {
		b := make([]byte, 16)
		n, _ := s.next[i].f.ReadAt(b, 0)
		if string(b[:n]) != want {
			t.Fatalf("queued #%d holds %q, want %q", i, b[:n], want)
		}
	}
	if s.LostTails() != 0 {
		t.Fatalf("lostTails %d, want 0", s.LostTails())
	}
}

// A generation found by the scan and deleted before it is opened was never
// read: counted lost (DESIGN §4 "Nothing green over a loss"), not skipped
// with a WARN alone.
func TestGenerationGoneBetweenScanAndOpenIsCounted(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	if err := os.WriteFile(in+".1", []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Feed: "app", Path: in, Strategy: Committed, MaxLine: 1 << 16}, nil)
	gens := s.scanGenerations(time.Time{}, time.Time{}, func(uint64, uint64) bool { return false }, nil)
	if len(gens) != 1 {
		t.Fatalf("scan found %d generations, want 1", len(gens))
	}
	if err := os.Remove(in + ".1"); err != nil {
		t.Fatal(err)
	}
	s.queueGens(gens)
	if len(s.next) != 0 || s.LostTails() != 1 {
		t.Fatalf("%d queued, lostTails %d; want 0 queued, lostTails 1", len(s.next), s.LostTails())
	}
}
