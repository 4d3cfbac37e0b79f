package file

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"tailfeed/feed"
)

// Glob feeds: files interleave, so the exactlyOnce record keeps a position
// per epoch; re-deliveries of every epoch are skipped after a restart,
// whatever epoch came last.
func TestExactlyOncePerEpoch(t *testing.T) {
	for _, fsync := range []FsyncMode{FsyncNever, FsyncAlways, FsyncInterval} {
		dir := t.TempDir()
		out, rec := filepath.Join(dir, "out.log"), filepath.Join(dir, "p.rec")
		cfg := Config{Path: out, Record: rec, PerEpoch: true, Fsync: fsync, Checkpoint: &eoCheckpoint{}}
		a1, b1 := eoBatch(1, 0, "a0", "a1"), eoBatch(2, 0, "b0", "b1")
		a2, b2 := eoBatch(1, 6, "a2"), eoBatch(2, 6, "b2")
		s, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []*feed.Batch{a1, b1, a2, b2} {
			if n, err := s.ProcessBatch(context.Background(), b); err != nil || n != b.Len() {
				t.Fatalf("%v: %d %v", fsync, n, err)
			}
		}
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.Close()
		// A restart re-delivers from each file's pointer: every line again,
		// in another interleaving, then new ones.
		s, err = Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []*feed.Batch{b1, a1, eoBatch(2, 6, "b2", "b3"), a2, eoBatch(1, 9, "a3")} {
			if n, err := s.ProcessBatch(context.Background(), b); err != nil || n != b.Len() {
				t.Fatalf("%v: %d %v", fsync, n, err)
			}
		}
		s.Flush(context.Background())
		s.Close()
		data, _ := os.ReadFile(out)
		if want := "a0\na1\nb0\nb1\na2\nb2\nb3\na3\n"; string(data) != want {
			t.Fatalf("%v: output %q, want %q", fsync, data, want)
		}
	}
}

// A layout 1 record (a single-file feed's) is taken over: its epoch's
// re-deliveries are skipped.
func TestExactlyOncePerEpochReadsLayout1(t *testing.T) {
	dir := t.TempDir()
	out, rec := filepath.Join(dir, "out.log"), filepath.Join(dir, "p.rec")
	s, err := Open(Config{Path: out, Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	s.ProcessBatch(context.Background(), eoBatch(7, 0, "x0", "x1"))
	s.Close()
	s, err = Open(Config{Path: out, Record: rec, PerEpoch: true})
	if err != nil {
		t.Fatal(err)
	}
	s.ProcessBatch(context.Background(), eoBatch(7, 0, "x0", "x1", "x2"))
	s.ProcessBatch(context.Background(), eoBatch(8, 0, "y0"))
	s.Close()
	s, err = Open(Config{Path: out, Record: rec, PerEpoch: true})
	if err != nil {
		t.Fatal(err)
	}
	s.ProcessBatch(context.Background(), eoBatch(8, 0, "y0"))
	s.ProcessBatch(context.Background(), eoBatch(7, 9, "x3"))
	s.Close()
	data, _ := os.ReadFile(out)
	if want := "x0\nx1\nx2\ny0\nx3\n"; string(data) != want {
		t.Fatalf("output %q, want %q", data, want)
	}
}

// A record whose newest copy is longer than the output falls back to the
// other copy (and truncates to it).
func TestExactlyOncePerEpochTornOutput(t *testing.T) {
	dir := t.TempDir()
	out, rec := filepath.Join(dir, "out.log"), filepath.Join(dir, "p.rec")
	cfg := Config{Path: out, Record: rec, PerEpoch: true, Fsync: FsyncAlways}
	s, _ := Open(cfg)
	s.ProcessBatch(context.Background(), eoBatch(1, 0, "a0"))
	s.ProcessBatch(context.Background(), eoBatch(2, 0, "b0"))
	s.Close()
	os.Truncate(out, 4) // the output lost "b0\n" and a byte more
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.ProcessBatch(context.Background(), eoBatch(2, 0, "b0"))
	s.ProcessBatch(context.Background(), eoBatch(1, 0, "a0"))
	s.Close()
	data, _ := os.ReadFile(out)
	if want := "a0\nb0\n"; string(data) != want {
		t.Fatalf("output %q, want %q", data, want)
	}
}
