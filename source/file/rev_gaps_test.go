package file

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Review of s6 (openGen by identity, genUnread).
//
// Rule: DESIGN §4 "Nothing green over a loss" — a generation found by the
// restart's scan and deleted before it is opened was never read: it counts
// one lost tail (README: "one deleted before it could be opened counts one
// lost tail"). And a feed reads its own input's generations only (§4
// "rotatedNames"), never another file of the directory.
//
// Expectation: the generation deleted between the scan and the open is
// counted lost (lostTails 1) and nothing else is queued in its place.
//
// What happens: openGenFile, not finding the generation at its scanned name,
// lists the whole directory and opens ANY regular file whose device+inode
// equal the scanned ones, under any name, with no check that it is the same
// file (birth time, first bytes, a generation's name). ext4 (and most Linux
// file systems) reuse a freed inode number at once: the next file created in
// the directory — another program's log, or the new file logrotate creates
// at the path right after deleting its oldest generation — gets it. That
// file is queued as the lost generation and read from 0 into this feed
// (foreign lines, or the file at the path read twice), and the real loss is
// not counted: lossless stays true.
func TestRevGapsGenerationGoneInodeReusedOpensAnotherFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	s, gens := revGapsScan(t, in, "cur\n", ".1", []byte("one\n"))
	if len(gens) != 1 {
		t.Fatalf("scan found %d generations, want 1", len(gens))
	}
	// Deleted between the scan and the open (logrotate's oldest, past its
	// count); another file is then created in the same directory.
	if err := os.Remove(in + ".1"); err != nil {
		t.Fatal(err)
	}
	reused := ""
	for i := 0; i < 8 && reused == ""; i++ {
		p := filepath.Join(dir, fmt.Sprintf("other-%d.log", i))
		if err := os.WriteFile(p, []byte("foreign\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if inoOf(t, p) == gens[0].ino {
			reused = p
		}
	}
	if reused == "" {
		t.Skip("the file system did not reuse the deleted generation's inode number")
	}
	s.queueGens(gens)
	defer closeQueued(s)
	for _, r := range s.next {
		b := make([]byte, 16)
		n, _ := r.f.ReadAt(b, 0)
		if strings.Contains(string(b[:n]), "foreign") {
			t.Errorf("%s (another program's file, the deleted generation's inode reused) was queued as the generation %s: its lines go into this feed", r.f.Name(), gens[0].path)
		}
	}
	if s.LostTails() != 1 {
		t.Errorf("lostTails %d, want 1: the generation was deleted unread, lossless must be false", s.LostTails())
	}
}

// Rule: as above (§4 "Nothing green over a loss"; the README's "one
// deleted before it could be opened counts one lost tail"), in logrotate's
// own order: `rotate 1` + `create` deletes the oldest generation, renames
// app.log to app.log.1 and creates a new app.log — which gets the deleted
// generation's inode number.
//
// Expectation: the deleted generation counts one lost tail; the new file at
// the path is read once, as the file at the path.
//
// What happens: openGenFile finds the new app.log by the reused inode and
// queues it as the generation (read from 0 under a generation's epoch, the
// file at the path), and no loss is counted.
func TestRevGapsLogrotateCreateReusesDeletedGenerationsInode(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "app.log")
	s, gens := revGapsScan(t, in, "cur-0\n", ".1", []byte("gen-1\n"))
	if len(gens) != 1 {
		t.Fatalf("scan found %d generations, want 1", len(gens))
	}
	// logrotate, rotate 1, create: remove app.log.1, app.log -> app.log.1,
	// create app.log.
	if err := os.Remove(in + ".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(in, in+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte("new-0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if inoOf(t, in) != gens[0].ino {
		t.Skip("the file system did not reuse the deleted generation's inode number")
	}
	s.queueGens(gens)
	defer closeQueued(s)
	for _, r := range s.next {
		if r.f.Name() == in {
			t.Errorf("the new file at the path (%s) was queued as the deleted generation %s", in, gens[0].path)
		}
	}
	if s.LostTails() != 1 {
		t.Errorf("lostTails %d, want 1: %s was deleted unread", s.LostTails(), gens[0].path)
	}
}

// revGapsScan writes cur at in and gen at in+suffix, and returns a source
// for in with the generations its restart scan finds (the file at in skipped).
func revGapsScan(t *testing.T, in, cur, suffix string, gen []byte) (*Source, []genFile) {
	t.Helper()
	if err := os.WriteFile(in, []byte(cur), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in+suffix, gen, 0o644); err != nil {
		t.Fatal(err)
	}
	curIno := inoOf(t, in)
	s := New(Config{Feed: "app", Path: in, Strategy: Committed, MaxLine: 1 << 16}, nil)
	return s, s.scanGenerations(time.Time{}, time.Time{}, func(_, i uint64) bool { return i == curIno }, nil)
}

// closeQueued closes the generations queued on s.
func closeQueued(s *Source) {
	for _, r := range s.next {
		r.close()
	}
}

func inoOf(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// Rule: DESIGN §4 "Nothing green over a loss" counts lines that were
// skipped; genUnread's own rule: "One that was empty when found loses
// nothing" — lossless false only when a line may be lost.
//
// Expectation: a compressed generation whose decompressed content is empty
// (logrotate's default `ifempty` with `compress` rotates an idle app's empty
// log into a 20-byte app.log.N.gz), deleted between the scan and the open
// (rotated past `rotate N`), loses nothing: lostTails 0, lossless true.
//
// What happens: genUnread exempts only a plain generation of size 0 (its
// size when found); a .gz's found size is its compressed size (never 0), so
// the empty .gz counts one lost tail and the feed shows lossless false over
// no loss — the scan had its decompressed size (dsize 0) at hand.
func TestRevGapsEmptyGzGoneBetweenScanAndOpenIsNoLoss(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := zw.Close(); err != nil { // an empty log, compressed
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "app.log")
	s, gens := revGapsScan(t, in, "cur\n", ".2.gz", buf.Bytes())
	if len(gens) != 1 || !gens[0].gz || gens[0].dsize != 0 {
		t.Fatalf("scan found %+v, want the one empty .gz", gens)
	}
	if err := os.Remove(in + ".2.gz"); err != nil { // rotated past its count
		t.Fatal(err)
	}
	s.queueGens(gens)
	if s.LostTails() != 0 {
		t.Fatalf("lostTails %d, want 0: the .gz held no line (decompressed size 0)", s.LostTails())
	}
}
