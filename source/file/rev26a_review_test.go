package file

// Review 26a (independent review of the twin rule, retryTorn's heldTwin and
// the glob's held-back copies: tookAsCopy over gstream.copies and
// CopiesTaken, copyTakeSlack, gstream.onRetired, heldBorn vs
// CopyTaken.Born). Every test here failed on the reviewed code (905a2b5)
// for the reason its comment states.

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// rev26aNewFileOnCopysInode: a glob pattern over dir (exclude: exclude),
// w.log ("ga" lines) read, committed and closed; logrotate's copytruncate
// to w.log.1 with compress (w.log.1 copied, w.log cut, its header written
// again, w.log.1 gzipped to w.log.1.gz and unlinked); gap after the gzip,
// a new file w2.log (newHdr, then 3 "gn" lines) appears on the inode
// w.log.1 had (ext4 and overlayfs reuse a freed inode at once; kept here
// by a hard link out of the glob, then rewritten and renamed in: to
// tailfeed the same key, no birth time). The file system of dir reports
// no birth times (overlayfs, as rev22aNoBirthTimes makes it). What the
// glob delivered and counted.
func rev26aNewFileOnCopysInode(t *testing.T, pattern func(dir string) string, exclude []string, afterCut, gap time.Duration, newHdr string) (map[string]int, uint64, uint64, string) {
	t.Helper()
	dir, data := t.TempDir(), t.TempDir()
	rev22aNoBirthTimes(t, dir)
	for i := range exclude {
		exclude[i] = filepath.Join(dir, exclude[i])
	}
	w, w1 := filepath.Join(dir, "w.log"), filepath.Join(dir, "w.log.1")
	if err := os.WriteFile(w, []byte(numbered("ga", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	const hdr = "# app started\n"
	return rev25bRunGlobMid(t, pattern(dir), data, exclude, nil, 3*time.Second, func() {
		time.Sleep(800 * time.Millisecond) // read, committed, closed (closeInactive 50 ms)
		rev25CopyTruncate(t, w, w1)
		rev24aAppend(t, w, hdr)
		time.Sleep(afterCut) // w.log's source takes w.log.1 for its copy
		hold := filepath.Join(t.TempDir(), "hold")
		if err := os.Link(w1, hold); err != nil {
			t.Fatal(err)
		}
		gzipLikeGzip(t, w1, w1+".gz", false)
		time.Sleep(gap)
		if err := os.WriteFile(hold, []byte(newHdr+numbered("gn", 3)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(hold, filepath.Join(dir, "w2.log")); err != nil {
			t.Fatal(err)
		}
	})
}

// A (new with a3e3a48: copyTakeSlack on the retired side; not parallel:
// no birth times for the test directory's device): TestRev25CRBNew…'s
// scenario, faster. A glob "dir/*" excluding "dir/*.gz" and "dir/*.tmp";
// w.log read, committed, closed; logrotate copytruncate + compress: w.log.1
// (held back, then taken by w.log's source: a CopyTaken of its key), w.log
// cut, its header written again, w.log.1 gzipped and unlinked; the glob
// sees w.log.1 gone (its key retired). 300 ms later another instance of
// the application starts its log w2.log (the header, "gn" lines) on the
// inode w.log.1 had. DESIGN §10: "a key whose file was seen deleted (or
// renamed out and closed) is retired, so a file that later appears with it
// is a new stream whatever its first bytes" — read from its start. Instead:
// w2.log is seen within a second of the take (onRetired, but the take is
// not before seenAt − copyTakeSlack), tookIt has no birth time on either
// side (CopyTaken.Born and heldBorn zero; birthTimePath zero) and falls to
// "first seen within a minute of the take": admit's tookForCopy marks it a
// copy, never read — its gn lines delivered by no stream, lostTails 0.
func TestRev26ARANewFileOnRetiredCopyInodeWithinTheSlackNoBirthTimes(t *testing.T) {
	got, tails, lbytes, detail := rev26aNewFileOnCopysInode(t, func(dir string) string { return filepath.Join(dir, "*") },
		[]string{"*.gz", "*.tmp"}, 450*time.Millisecond, 250*time.Millisecond, "# app started\n")
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if got["ga-0"] != 1 || got["ga-2"] != 1 {
		t.Errorf("delivered %v, want ga-0..2 once", got)
	}
	if n := rev23bGapLines(got, "gn", 3); n != 3 && tails == 0 {
		t.Errorf("w2.log's gn lines delivered %d times in all (want 3) and lostTails 0: a new file on the retired key of w.log.1 (seen deleted), met within copyTakeSlack of w.log's source's take of that key, was taken for that copy (no birth time: tookIt's minute) and never read — a loss nobody counted", n)
	}
}

// A2 (tookForCopy over a closed stream's copies, gstream.copies, no time
// window for a key never retired; not parallel: no birth times): a glob
// "dir/*.log" (the copy w.log.1 is no glob file, so its key is never
// tracked nor retired). w.log read, committed, closed; copytruncate +
// compress as in A (w.log's source, opened again for the cut, takes w.log.1,
// then closes as inactive: its take kept in gstream.copies). 2.5 s later
// a new log w2.log ("gn" lines only: not w.log's first bytes, then or
// ever) appears on w.log.1's freed inode. DESIGN §10: "A new key is a new stream, read from its start";
// only "a new key whose first bytes match a tracked file's fingerprint is
// held back" as a possible copy. Instead: admit's tookForCopy, before any
// look at first bytes, finds the closed w.log stream's old take of that
// key; no birth time, w2.log first seen within a minute of it (tookIt), so
// it is marked a copy of w.log — a file holding not one of w.log's bytes —
// and never read: lostTails 0 over 3 lines. (README states the freed-inode
// limit without birth times only for a file at the same path with the old
// one's size and mtime.)
func TestRev26ARA2NewFileOnClosedStreamsCopyInodeNoBirthTimes(t *testing.T) {
	got, tails, lbytes, detail := rev26aNewFileOnCopysInode(t, func(dir string) string { return filepath.Join(dir, "*.log") },
		nil, 600*time.Millisecond, 2500*time.Millisecond, "")
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if got["ga-0"] != 1 || got["ga-2"] != 1 {
		t.Errorf("delivered %v, want ga-0..2 once", got)
	}
	if n := rev23bGapLines(got, "gn", 3); n != 3 && tails == 0 {
		t.Errorf("w2.log's gn lines delivered %d times in all (want 3) and lostTails 0: the new file on w.log.1's freed inode was taken, at admit, for the copy w.log's closed stream took of that inode (tookForCopy over gstream.copies; no birth time: tookIt's minute) — first bytes never compared, never read, a loss nobody counted", n)
	}
}

// rev26aLateCopy: a glob "dir/*.log"; w.log (3 "ga" lines) and, when
// retire is set, old.log (3 "go" lines), read, committed and closed.
// With retire, old.log is deleted and the glob sees it gone (its key
// retired), its inode kept by a hard link out of the glob (as ext4 would
// give it to the next file made: here to the copy). logrotate's
// copytruncate of w.log: the copy w.log.1 (on old.log's inode with
// retire, a fresh file otherwise; no glob file: "*.log" does not match
// it), w.log cut, its header written again; w.log's source takes w.log.1
// for its copy. late after the take the copy is renamed into the glob
// (w-1.log). What the glob delivered.
func rev26aLateCopy(t *testing.T, retire bool, late time.Duration) (map[string]int, uint64, uint64, string) {
	t.Helper()
	dir, data := t.TempDir(), t.TempDir()
	w, old := filepath.Join(dir, "w.log"), filepath.Join(dir, "old.log")
	if err := os.WriteFile(w, []byte(numbered("ga", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	if retire {
		if err := os.WriteFile(old, []byte(numbered("go", 3)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return rev25bRunGlobMid(t, filepath.Join(dir, "*.log"), data, nil, nil, 2*time.Second, func() {
		time.Sleep(800 * time.Millisecond) // read, committed, closed (closeInactive 50 ms)
		hold := filepath.Join(t.TempDir(), "hold")
		if retire {
			if err := os.Link(old, hold); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(old); err != nil {
				t.Fatal(err)
			}
			time.Sleep(400 * time.Millisecond) // the glob sees old.log gone: its key retired
		}
		data0, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hold, data0, 0o600); err != nil { // the copy, on old.log's inode
			t.Fatal(err)
		}
		w1 := filepath.Join(dir, "w.log.1")
		if err := os.Rename(hold, w1); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(w, 0); err != nil {
			t.Fatal(err)
		}
		rev24aAppend(t, w, "# app started\n")
		time.Sleep(400 * time.Millisecond) // w.log's source takes w.log.1 for its copy
		time.Sleep(late)
		if err := os.Rename(w1, filepath.Join(dir, "w-1.log")); err != nil {
			t.Fatal(err)
		}
	})
}

// B (new with this change: tookAsCopy's onRetired window, widened to
// copyTakeSlack by a3e3a48; birth times known — ext4): a glob "dir/*.log".
// w.log ("ga" lines) and old.log are read, committed, closed; old.log is
// deleted (its key retired) and logrotate's copytruncate of w.log makes
// the copy w.log.1 on the inode old.log had (ext4 hands a freed inode to
// the next file made; kept here by a hard link), w.log is cut; w.log's
// source takes w.log.1 for its copy and reads its tail (none). 1.5 s later
// the copy is renamed into the glob (w-1.log: a dateext-style rename, or
// any look that meets the copy late — a polled file system, an fsnotify
// overflow, a scan every scanIntervalMillis). README: a copy the
// original's stream took "is not read again — also when a rescan meets it
// only after the truncation (a file born after the copy was taken, reusing
// its inode, is a new file)"; DESIGN §10, a copy "is read from the old
// offset under the old stream", never from its start. The same run with
// the copy on a fresh inode is not read again (rev26aLateCopy(t, false,
// …): passes). Instead: w-1.log's key was retired, the take is more than
// copyTakeSlack before it was seen, so tookAsCopy skips it although its
// birth time (CopyTaken.Born: born before the take) proves it is the file
// taken; it is read from its start as a new stream — ga-0..2 delivered
// twice. With birth times the time window is not needed to tell a later
// file on the inode (tookIt compares births); it only drops real copies.
func TestRev26ARBCopyOnRetiredInodeMetLateReadAgain(t *testing.T) {
	t.Parallel()
	got, tails, lbytes, detail := rev26aLateCopy(t, true, 1500*time.Millisecond)
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if n := rev23bGapLines(got, "ga", 3); n != 3 {
		t.Errorf("w.log's ga lines delivered %d times in all (want 3, once each): the copy w.log.1 its source took, met by the glob as w-1.log more than copyTakeSlack after the take, on a retired key (old.log's, seen deleted), was read again from its start (tookAsCopy's onRetired window skips the take although its birth time says it is that very file)", n)
	}
	if got["# app started"] != 1 {
		t.Errorf("delivered %v, want the cut w.log's header once", got)
	}
}

// B probe (passes): B's run with the copy on a fresh inode (no retired
// key): admit's tookForCopy takes w-1.log for the copy w.log's source took
// (born before the take), not read again.
func TestRev26ARBProbeCopyOnFreshInodeMetLateNotReadAgain(t *testing.T) {
	t.Parallel()
	got, tails, lbytes, detail := rev26aLateCopy(t, false, 1500*time.Millisecond)
	t.Logf("run: lostTails %d lostBytes %d %q (delivered %v)", tails, lbytes, detail, got)
	if n := rev23bGapLines(got, "ga", 3); n != 3 {
		t.Errorf("w.log's ga lines delivered %d times in all (want 3)", n)
	}
}
