package file

import (
	"fmt"
	"maps"
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

// Mechanism 3 of the e2e soak gaps (CI run of 45d50b7, nineteenth
// session: 2,100 lines of one generation never delivered, lossless true):
// the scan lists the directory, then looks at each name; logrotate's
// shift running in between (app.log.4 to app.log.5, …, app.log to
// app.log.1) made each listed name name the next older file, and the
// oldest listed generation (now at a name the listing did not have) was
// in no scan result: never queued, never counted. The scan is made again
// until no name changed its file meanwhile.
func TestGenerationScanTornByARotationMissesNone(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	old := time.Now().Add(-time.Minute)
	want := map[string]bool{}
	for i := 4; i >= 1; i-- { // .4 oldest
		body := fmt.Sprintf("gen-%d\n", i)
		want[body] = true
		p := fmt.Sprintf("%s.%d", in, i)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		at := old.Add(time.Duration(4-i) * time.Second)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(in, []byte("live\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shifted := false
	scanListed = func(string) {
		if shifted {
			return
		}
		shifted = true
		for i := 4; i >= 1; i-- {
			if err := os.Rename(fmt.Sprintf("%s.%d", in, i), fmt.Sprintf("%s.%d", in, i+1)); err != nil {
				t.Error(err)
			}
		}
		if err := os.Rename(in, in+".1"); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(in, nil, 0o644); err != nil {
			t.Error(err)
		}
	}
	defer func() { scanListed = nil }()
	s := New(Config{Feed: "app", Path: in, Strategy: Committed, MaxLine: 1 << 16}, nil)
	gens := s.scanGenerations(time.Time{}, time.Time{}, func(uint64, uint64) bool { return false }, nil)
	want["live\n"] = true // rotated to app.log.1 by the shift: a generation now
	got := map[string]bool{}
	for _, g := range gens {
		b, err := os.ReadFile(g.path)
		if err != nil {
			t.Fatal(err)
		}
		if got[string(b)] {
			t.Errorf("%q scanned twice", b)
		}
		got[string(b)] = true
	}
	if !maps.Equal(got, want) {
		t.Fatalf("a rotation while the generations were scanned: the scan found %v, want every generation once: %v", got, want)
	}
}
