package file

// Review 25c, the glob side (decideHeld's tookAsCopy). Both failed on the
// reviewed code (a54cbb9); fixed in the twenty-fifth session: A (the
// "compressed twin" guess dropped; a take tells its copy's birth time,
// CopyTaken.Born, and a held file its own, gstream.heldBorn: a file on
// the held one's inode is another), B (a take before the hold began, by
// more than copyTakeSlack, or before a retired key's new file was seen,
// is not of it).

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A (new with this diff: tookAsCopy's "gone" branch; the parent's decideHeld
// enqueued the held file — a copy taken meanwhile was "another one" — and
// its stream, finding it gone, counted its bytes lost): a glob "dir/*"
// excluding "dir/*.gz". w.log ("ga" lines) is read, committed, its stream
// closed. A new file w.log.x appears holding w.log's bytes and one line of
// its own ("gx-0": not a copy — more than its original ever held); with
// w.log's first bytes it is held back as a possible copy. Within
// rotateWait it is deleted (never read), and w.log gets a line "gy-0", is
// copytruncated to w.log.3 (as many bytes as w.log.x: 5 + 15), cut, "gb"
// lines written. w.log's source takes w.log.3 for its copy (reads gy-0).
// At w.log.x's decision its file is gone and a take of the same size
// (w.log.3's, another key, a plain copy — no .gz at all) is within a
// minute: tookAsCopy says "its compressed twin", w.log.x is marked a
// copy, and its line gx-0 — read by no stream — is counted nowhere:
// lostTails 0 over a loss. The take's first bytes (CopyTaken.Head) and
// whether any .gz exists are not looked at. (DESIGN §10: a held-back file
// whose original is truncated meanwhile is its copy, "read from the old
// offset" — w.log.x holds gx-0 past it; gone, that tail is a loss to
// count, §4 "Nothing green over a loss". At 7caa5d4 this run counts
// lostTails 1, 20 bytes.)
func TestRev25CRAHeldNewFileGoneTakenForTheCompressedTwinOfAnotherCopy(t *testing.T) {
	t.Parallel()
	dir, data, pattern, exclude, w := rev25GlobGa(t)
	x := filepath.Join(dir, "w.log.x")
	got, tails, lbytes, detail := rev25bRunGlobMid(t, pattern, data, exclude, nil, 3*time.Second, func() {
		time.Sleep(800 * time.Millisecond) // read, committed, closed (closeInactive 50 ms)
		if err := os.WriteFile(x, []byte(numbered("ga", 3)+"gx-0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond) // seen by a scan (100 ms): held back for rotateWait (200 ms)
		if err := os.Remove(x); err != nil {
			t.Fatal(err)
		}
		rev24aAppend(t, w, "gy-0\n")
		rev25CopyTruncate(t, w, w+".3")
		rev24aAppend(t, w, numbered("gb", 2))
	})
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if got["gy-0"] != 1 || got["gb-0"] != 1 || got["gb-1"] != 1 {
		t.Errorf("delivered %v, want gy-0 and gb-0..1 once each", got)
	}
	if got["gx-0"] == 0 && tails == 0 {
		t.Errorf("w.log.x's line gx-0 was read by no stream and lostTails is 0: the held-back new file, deleted before its decision, was taken for the compressed twin of w.log.3 (a plain copy of the same size) — a loss nobody counted")
	}
}

// B (new with this diff: tookAsCopy looks at every copy its original's
// sources ever took, gstream.copies and CopiesTaken — the parent's
// decideHeld only at a take since the hold began, tookSince; not parallel:
// it makes the test directory's file system report no birth times, as
// overlayfs does, for the whole package): a glob "dir/*" excluding
// "dir/*.gz" and "dir/*.tmp". w.log ("ga" lines) is read and committed;
// logrotate's copytruncate: the copy w.log.1 (held back, then taken by
// w.log's source: a CopyTaken of its key), w.log cut, the application's
// header line written again ("# app started"), then w.log.1 compressed
// (w.log.1.gz, w.log.1 unlinked). Within the minute another instance of
// the application starts its own log w2.log — its header line, then "gn"
// lines — on the inode w.log.1 had (ext4 and overlayfs reuse a freed inode
// at once; the test keeps the inode by a hard link out of the glob while
// the glob sees w.log.1 gone, then rewrites it and renames it in: to
// tailfeed the same key, no birth time). With w.log's first bytes (the header, all w.log holds) it is held
// back as a possible copy of w.log; at its decision tookIt finds the old
// take of its key and, no birth time known, w2.log first seen within a
// minute of that take: "its original's stream read its tail from it" —
// marked a copy, never read. Its gn lines are read by no stream and
// counted nowhere: lostTails 0 over a loss. The take's size and first
// bytes (CopyTaken.Size, Head) are not compared with the file's. DESIGN
// §10: "a key whose file was seen deleted ... is retired, so a file that
// later appears with it is a new stream whatever its first bytes", and a
// held-back file whose original is neither truncated nor gone meanwhile
// "is a new stream from its start". (At 7caa5d4 w2.log is read, gn-0..2
// once; with birth times — ext4 — tookIt tells it born after the take.)
func TestRev25CRBNewFileOnAFormerCopysInodeTakenForThatCopyNoBirthTimes(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	rev22aNoBirthTimes(t, dir)
	pattern := filepath.Join(dir, "*")
	exclude := []string{filepath.Join(dir, "*.gz"), filepath.Join(dir, "*.tmp")}
	w, w1 := filepath.Join(dir, "w.log"), filepath.Join(dir, "w.log.1")
	if err := os.WriteFile(w, []byte(numbered("ga", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	const hdr = "# app started\n"
	got, tails, lbytes, detail := rev25bRunGlobMid(t, pattern, data, exclude, nil, 3*time.Second, func() {
		time.Sleep(800 * time.Millisecond) // read, committed, closed (closeInactive 50 ms)
		rev25CopyTruncate(t, w, w1)
		rev24aAppend(t, w, hdr)
		time.Sleep(700 * time.Millisecond) // w.log.1 held back, taken by w.log's source, decided a copy
		// The inode w.log.1 had, reused by a new file (as ext4 and
		// overlayfs do): kept here under a name out of the glob (a hard
		// link), so that nothing else takes it meanwhile, then given new
		// content — to tailfeed the same as a new file on a freed inode
		// (the same key, no birth time).
		hold := filepath.Join(t.TempDir(), "hold")
		if err := os.Link(w1, hold); err != nil {
			t.Fatal(err)
		}
		gzipLikeGzip(t, w1, w1+".gz", false)
		time.Sleep(500 * time.Millisecond) // the glob sees w.log.1 gone (scans every 100 ms)
		if err := os.WriteFile(hold, []byte(hdr+numbered("gn", 3)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(hold, filepath.Join(dir, "w2.log")); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if got["ga-0"] != 1 || got["ga-2"] != 1 {
		t.Errorf("delivered %v, want ga-0..2 once", got)
	}
	if n := rev23bGapLines(got, "gn", 3); n != 3 && tails == 0 {
		t.Errorf("w2.log's gn lines delivered %d times in all (want 3) and lostTails 0: the new file on w.log.1's freed inode was taken for the copy w.log's source took of that inode (no birth time: first seen within a minute of the take) and never read — a loss nobody counted", n)
	}
}
