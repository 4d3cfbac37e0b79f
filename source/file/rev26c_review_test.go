package file

// Review 26c (independent review of 63968af: tookIt's headStill — the held
// file must still start with the take's first bytes — and birth times
// compared whenever both are known, the retired-key window dropped when
// they told). Every TestRev26CR… test here failed on the reviewed code
// (63968af) for the reason its comment states; C is parked
// (open_rev26c_test.go).

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A (headStill compares only the take's first HeadLen bytes; no birth
// times — overlayfs; not parallel: rev22aNoBirthTimes marks the test
// directory's device): A2 of review 26a with a quiet original. A glob
// "dir/*.log"; w.log holds only its header "# app started\n" (the
// application wrote it at its start and nothing since), read, committed
// and closed. logrotate's copytruncate + compress: the copy w.log.1 (no
// glob file: "*.log" does not match it; its 14 bytes are the header), w.log
// cut, the application goes on writing ("gb-0"); w.log's source, opened
// again, finds it truncated and takes w.log.1 for its copy (a CopyTaken of
// its key: HeadLen 14, the header; Size 14); gzip then writes w.log.1.gz
// and unlinks w.log.1. 2.5 s later a second instance of the application
// starts its own log w2.log — the same header, then 3 "gn" lines — on the
// inode w.log.1 had (ext4 and overlayfs hand a freed inode to the next
// file; kept here by a hard link out of the glob). DESIGN §10: "A new key
// is a new stream, read from its start"; README: a file taken for a copy
// "that grows afterwards … is no snapshot: it is read from its start", and
// a header line's few bytes "are no proof (a new file holding only a header
// line that another file starts with would be lost)". Expected: w2.log's gn
// lines delivered (or, at the very least, counted lost). Observed: admit's
// tookForCopy finds w.log's take of that key; headStill compares only the
// take's 14 first bytes — the header, which every file of that
// application starts with — and says "still the copy"; no birth time, first
// seen within a minute of the take: marked a copy of w.log, never read;
// lostTails 0, lossless true. The take's Size (14) says the copy was a
// 14-byte snapshot; w2.log is 44 bytes (glob.go tookIt/headStill,
// ~1940-1985: neither t.Size nor the file's size is looked at; with a
// "size > t.Size: not the take's file" check this test passes, and so do
// review 26a's). README's no-birth-time limit names only "a file on a
// freed inode with the old file's size and mtime"; w2.log has neither.
// (Delivered late if w2.log grows again — seen's growth rule — never if
// it is a finished log, as here.)
func TestRev26CRAHeaderOnlyCopyNewFileWithThatHeaderLostNoBirthTimes(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	rev22aNoBirthTimes(t, dir)
	w, w1 := filepath.Join(dir, "w.log"), filepath.Join(dir, "w.log.1")
	const hdr = "# app started\n"
	if err := os.WriteFile(w, []byte(hdr), 0o600); err != nil {
		t.Fatal(err)
	}
	got, tails, lbytes, detail := rev25bRunGlobMid(t, filepath.Join(dir, "*.log"), data, nil, nil, 3*time.Second, func() {
		time.Sleep(800 * time.Millisecond) // read, committed, closed (closeInactive 50 ms)
		rev25CopyTruncate(t, w, w1)
		rev24aAppend(t, w, "gb-0\n")
		time.Sleep(600 * time.Millisecond) // w.log's source takes w.log.1 for its copy
		hold := filepath.Join(t.TempDir(), "hold")
		if err := os.Link(w1, hold); err != nil {
			t.Fatal(err)
		}
		gzipLikeGzip(t, w1, w1+".gz", false)
		time.Sleep(2500 * time.Millisecond)
		if err := os.WriteFile(hold, []byte(hdr+numbered("gn", 3)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(hold, filepath.Join(dir, "w2.log")); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if got["gb-0"] != 1 {
		t.Errorf("delivered %v, want the cut w.log's gb-0 once", got)
	}
	if n := rev23bGapLines(got, "gn", 3); n != 3 && tails == 0 {
		t.Errorf("w2.log's gn lines delivered %d times in all (want 3) and lostTails 0: a new 44-byte file on the inode of w.log's 14-byte copy (taken, then gzipped and unlinked), starting with the application's header — the whole of the take's first bytes — was taken for that copy (headStill: the header matches; no birth time: tookIt's minute) and never read — a loss nobody counted", n)
	}
}

// B (tookIt's birthTimePath of a glob path that is a symlink: the link's
// own birth, AT_SYMLINK_NOFOLLOW, never its file's; a regression of this
// change in admit's tookForCopy; birth times known — ext4): a glob
// "dir/*.log"; w.log ("ga" lines) read, committed and closed. A symlink
// prev.lnk -> w.log.1 (no glob file by its name) is there before the
// rotation (a "previous log" link kept by the application or its
// packaging). logrotate's copytruncate of w.log: the copy w.log.1 (no glob
// file), w.log cut, its header written again; w.log's source takes
// w.log.1 for its copy (CopyTaken.Born: w.log.1's birth, from the
// descriptor) and reads its tail (none). 450 ms later the link is renamed
// into the glob as w-prev.log: the glob matches it, followed to the
// regular file w.log.1 (DESIGN §10: "symlinks followed to regular files";
// its key is w.log.1's). README: a copy the original's stream took "is not
// read again — also when a rescan meets it only after the truncation";
// DESIGN §10, a copy "is read from the old offset under the old stream",
// never from its start. Before this change tookIt compared the path's
// birth time with the take's time (the link, born before the take: the
// copy) and the run delivered ga-0..2 once. Observed: tookIt now compares
// CopyTaken.Born (w.log.1's birth) with birthTimePath(s.path) — the
// symlink's birth, never equal — "birth times told" it is another file;
// w-prev.log is read from its start, ga-0..2 delivered twice
// (glob.go:1946 birthTimePath, also admit's heldBorn at glob.go:1647; the
// target's is birthTimeTarget, which the glob uses elsewhere for matched
// links — with it at 1946 this test passes; README "A new file on a freed
// inode": birth time "taken in the same call as the key", which the walk's
// found.born is and birthTimePath(s.path) is not).
func TestRev26CRBSymlinkToTakenCopyMetLateReadAgain(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	w, w1 := filepath.Join(dir, "w.log"), filepath.Join(dir, "w.log.1")
	if err := os.WriteFile(w, []byte(numbered("ga", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	lnk := filepath.Join(dir, "prev.lnk")
	if err := os.Symlink("w.log.1", lnk); err != nil { // dangling until the rotation
		t.Fatal(err)
	}
	got, tails, lbytes, detail := rev25bRunGlobMid(t, filepath.Join(dir, "*.log"), data, nil, nil, 2*time.Second, func() {
		time.Sleep(800 * time.Millisecond) // read, committed, closed (closeInactive 50 ms)
		rev25CopyTruncate(t, w, w1)
		rev24aAppend(t, w, "# app started\n")
		time.Sleep(450 * time.Millisecond) // w.log's source takes w.log.1 for its copy
		if err := os.Rename(lnk, filepath.Join(dir, "w-prev.log")); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if n := rev23bGapLines(got, "ga", 3); n != 3 {
		t.Errorf("w.log's ga lines delivered %d times in all (want 3, once each): the copy w.log.1 its source took, met by the glob through the symlink w-prev.log, was read again from its start (tookIt: the take's birth, the copy's, compared with the symlink's own birth — birthTimePath does not follow the link)", n)
	}
	if got["# app started"] != 1 {
		t.Errorf("delivered %v, want the cut w.log's header once", got)
	}
}

// D probe (passes): the change's byBirth path for a take with no birth of
// its own (findShortCopy records CopyTaken.Born zero). Births known
// (ext4). A glob "dir/*.log", files kept open; w.log (> 4 KiB of "ga"
// lines) and old.log read; old.log deleted (its key retired), its inode
// kept by a hard link out of the glob and given w.log's content then (the
// copy, 4 KiB+); w.log grows by 3 "gb" lines, read; the copy is named
// w.log.1 (no glob file), w.log cut, its header written: w.log's source
// finds the copy shorter than what it consumed (findShortCopy: a take,
// Born zero). 1.5 s later the copy is renamed into the glob as w-1.log:
// tookIt compares its birth (old.log's, before the take) with the take's
// time — birth times told, no retired-key window — and it is not read
// again. Each line once.
func TestRev26CRDProbeShortCopyOnRetiredInodeMetLateNotReadAgain(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	w, old, w1 := filepath.Join(dir, "w.log"), filepath.Join(dir, "old.log"), filepath.Join(dir, "w.log.1")
	if err := os.WriteFile(w, []byte(numbered("ga", 800)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte(numbered("go", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	got, tails, lbytes, detail := rev25RunGlobSet(t, filepath.Join(dir, "*.log"), data, 2*time.Second, func() {
		time.Sleep(800 * time.Millisecond)
		hold := filepath.Join(t.TempDir(), "hold")
		if err := os.Link(old, hold); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(old); err != nil {
			t.Fatal(err)
		}
		time.Sleep(400 * time.Millisecond) // the glob sees old.log gone: its key retired
		data0, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hold, data0, 0o600); err != nil { // the copy, on old.log's inode
			t.Fatal(err)
		}
		rev24aAppend(t, w, numbered("gb", 3))
		time.Sleep(400 * time.Millisecond) // read
		if err := os.Rename(hold, w1); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(w, 0); err != nil {
			t.Fatal(err)
		}
		rev24aAppend(t, w, "# app started\n")
		time.Sleep(400 * time.Millisecond) // w.log's source takes w.log.1 (short)
		time.Sleep(1500 * time.Millisecond)
		if err := os.Rename(w1, filepath.Join(dir, "w-1.log")); err != nil {
			t.Fatal(err)
		}
	}, func(c *GlobConfig) {
		c.Stream.Logger = rev25bLog(t)
	})
	t.Logf("run: lostTails %d lostBytes %d %q", tails, lbytes, detail)
	if n := rev23bGapLines(got, "ga", 800); n != 800 {
		t.Errorf("w.log's ga lines delivered %d times in all (want 800)", n)
	}
	if n := rev23bGapLines(got, "gb", 3); n != 3 || got["# app started"] != 1 {
		t.Errorf("gb lines %d (want 3), header %d (want 1)", n, got["# app started"])
	}
}
