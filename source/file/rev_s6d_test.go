//go:build linux

package file

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRevS6dGenerationCreatedDuringTheScanIsRejectedUnderItsOwnName
//
// Rule (a78aa1c; DESIGN §4 "Restart after rotation", "Nothing green over a
// loss"): every generation the restart's scan found is read; openGenFile
// rejects only a file that is not the one found (an inode reused after the
// generation was deleted).
//
// Expectation: a generation the scan listed, opened under the very name the
// scan found it at, same device and inode, not changed since, is opened.
//
// What happens: sameGen rejects a file "born after the scan" by comparing
// its birth time with the time the WHOLE scan began (one time.Now() before
// the first directory is listed), not with the moment its directory was
// listed. A scan lists the input's directory, then (input a symlink) the
// target's; inspecting each .gz of the first decompresses it whole, so the
// second directory is listed long after the scan began. A generation
// created in that time — a copytruncate's copy, a compressed .gz written
// by a rotation running during the restart — is found by the scan and then
// rejected at its own name: its lines are never read and it is counted a
// lost tail (feed not lossless) although it is right there.
//
// The test's only timing is to make the file's creation fall inside the
// scan (checked: it retries with a slower scan until the scan did list
// the file and its birth time is after the scan's start); the assertion
// itself is deterministic.
func TestRevS6dGenerationCreatedDuringTheScanIsRejectedUnderItsOwnName(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a := filepath.Join(root, "a") // where the configured path (a symlink) is
	b := filepath.Join(root, "b") // where it points
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(b, "app.log")
	if err := os.WriteFile(target, []byte("cur\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(a, "app.log")
	if err := os.Symlink(target, in); err != nil {
		t.Fatal(err)
	}
	if birthTimePath(target).IsZero() {
		t.Skip("no birth times on this file system")
	}
	curIno := inoOf(t, target)
	fresh := filepath.Join(b, "app.log.1")
	for mb := 64; mb <= 2048; mb *= 2 {
		// An old compressed generation next to the symlink: the scan
		// decompresses it whole (inspectGz) before it lists b.
		writeZeroGz(t, filepath.Join(a, "app.log.2.gz"), mb<<20)
		os.Remove(fresh)
		s := New(Config{Feed: "app", Path: in, Strategy: Committed, MaxLine: 1 << 16}, nil)
		created := make(chan time.Time, 1)
		go func() {
			time.Sleep(30 * time.Millisecond)
			// A rotation running during the restart: copytruncate's copy.
			if err := os.WriteFile(fresh, []byte("copied-1\ncopied-2\n"), 0o644); err != nil {
				t.Error(err)
			}
			created <- time.Now()
		}()
		start := time.Now()
		gens := s.scanGenerations(time.Time{}, time.Time{}, func(_, i uint64) bool { return i == curIno }, nil)
		<-created
		var g *genFile
		for i := range gens {
			if gens[i].path == fresh {
				g = &gens[i]
			}
		}
		if g == nil || !birthTimePath(fresh).After(start) {
			continue // the scan listed b before the copy existed: slower scan
		}
		t.Logf("scan (%d MiB gz first) listed %s, created during the scan", mb, fresh)
		f := s.openGenFile(*g)
		if f == nil {
			t.Fatalf("the generation %s the scan found, unchanged at the same name and inode, was rejected by openGenFile (sameGen: born after the scan began): its lines are never read and it counts as a lost tail", fresh)
		}
		f.Close()
		return
	}
	t.Skip("could not make a generation appear during the scan")
}

func writeZeroGz(t *testing.T, p string, n int) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = '\n'
	}
	for w := 0; w < n; w += len(buf) {
		if _, err := zw.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}
