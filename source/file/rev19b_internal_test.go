package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Review 19b (second review of the held line, nineteenth session): six
// findings, each failing 3 of 3 at 7813267; all fixed in the same session
// (A: the mark's end is the line's, not the rewound record's; B: a file
// found on the marked file's inode born after the line is not it; C:
// remarkHeld reads the birth time through a symlinked path; D: readNext
// also where the kept file is counted; E: heldDone takes the size the file
// was found with; F: forget keeps a held pointer). They stay as regression
// tests.

// Review 19b (the "held" epochs line after review 19a's fixes, 7813267).
// Each test says what it observed; none is fixed here.

// fileKey19b is the file key of the file path names (0: none).
func fileKey19b(p string) uint64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	s := st.Sys().(*syscall.Stat_t)
	return pointer.FileKey(uint64(s.Dev), s.Ino)
}

// Review 19b, finding A.
//
// A live rotation keeps A's pointer for the empty B (held; A's 2 lines read
// and committed, the held line at A's end). tailfeed stops. While it is
// down a sink is restored from a backup to just after A's first line, and
// logrotate runs once more with "rotate 1" (A deleted, B → w.log.1, a new
// empty w.log; "nocreate": no new w.log). At the start the catch-up
// commits A's pointer back to the sink's position (internal/daemon
// catchUpStreams: pointer.Rewind, simulated here as review 19a C does).
// A's second line is now pending for that sink and A is gone: DESIGN §11
// "a generation that is gone is counted (lostTails + 1 …)". loadPointers
// takes the held line with End set to the record's (rewound) offset, not
// the line's end, so the mark still "names" the rewound record: the
// source (loseTail) and countGone (heldDone) say "nothing of it was
// pending" and count nothing. (loadPointers' own comment: after a rewind
// "the mark then says nothing of the file".) Before the held line the same
// start counted lostTails 1.
// Observed: lostTails 0, nothing delivered, both modes; 3 of 3 runs.
func TestRev19BACatchUpRewindOfGoneHeldFileIsSilent(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"rotate1", "nocreate"} {
		t.Run(mode, func(t *testing.T) {
			dir, data := t.TempDir(), t.TempDir()
			w, rec := heldRun(t, dir, data, false)
			if m, ok := pointer.HeldMarks(readEpochLines(t, data))[rec.Epoch]; !ok || m.End != rec.Offset {
				t.Fatalf("no held line at A's end after the first run: %+v", m)
			}
			if err := os.Remove(w + ".1"); err != nil { // rotate 1: A deleted
				t.Fatal(err)
			}
			if err := os.Rename(w, w+".1"); err != nil { // B (empty) rotated
				t.Fatal(err)
			}
			if mode == "rotate1" {
				if err := os.WriteFile(w, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var ptrPath string
			for name, r := range mustInspectPtrs(t, data) {
				if r.Epoch == rec.Epoch {
					ptrPath = filepath.Join(data, "feeds", "f", name)
				}
			}
			if ptrPath == "" {
				t.Fatalf("A's pointer not found")
			}
			p, err := pointer.Open(ptrPath, pointer.Options{EpochsPath: filepath.Join(data, "feeds", "f.epochs")})
			if err != nil {
				t.Fatal(err)
			}
			back := rec
			back.Offset = int64(len(numbered("first", 1))) // the restored sink's position
			if err := p.Rewind(back); err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			ig2, _, _ := runGlobOn(t, filepath.Join(dir, "*.log"), data)
			lines, _ := ig2.popEpochs(3*time.Second, true)
			tails, bytes, detail := ig2.lost()
			if tails == 0 {
				t.Errorf("%s: A's pointer committed back to %d by a sink's catch-up, A (read to %d) deleted while down: delivered %q, lostTails %d lostBytes %d (%q); "+
					"want lostTails 1: the sink's gap (A's second line) cannot be re-read (DESIGN §11)", mode, back.Offset, rec.Offset, lines, tails, bytes, detail)
			}
		})
	}
}

// Review 19b, finding B.
//
// Review 19a D's scenario (an empty w.log A given a pointer bound while
// empty; a live rotation renames it, still empty, to w.log.1 with an
// empty w.log B after it: A held, its held line naming B; tailfeed stops;
// while it is down the application writes 3 lines to B, then logrotate
// runs with "rotate 1": A deleted, B → w.log.1, a new empty w.log C), when
// C gets A's freed inode — what ext4 does when logrotate deletes the
// oldest generation and then creates the new file. voidLoadedHeld looks for
// A beside its path by its key and its (empty) first bytes, finds C — born
// after the held line, another file — and sets Found: the mark names
// nothing any more. C's source then counts A lost ("rotated file gone; its
// unread tail is lost", pointer offset 0: A was empty and read to its end)
// and, the pointer having no first bytes, moves it off without reading the
// generations beside the path: B's 3 lines at w.log.1 are never read. With
// C on a new inode the same start reads B's 3 lines and counts nothing.
// Other key lookups (countNextGone, findBeside, remarkHeld) reject a file
// born after the mark; Found does not.
// Observed (C on A's inode): nothing delivered, lostTails 1; 3 of 3 runs.
func TestRev19BBEmptyHeldFileInodeReusedSuccessorUnread(t *testing.T) {
	t.Parallel()
	for i := range 6 {
		var reused bool
		var lines []string
		var tails, bytes uint64
		var detail string
		t.Run(fmt.Sprint("try", i), func(t *testing.T) {
			dir, data := t.TempDir(), t.TempDir()
			pattern := filepath.Join(dir, "*.log")
			w := filepath.Join(dir, "w.log")
			if err := os.WriteFile(w, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			ig, _, stop := runGlobKill(t, pattern, data, 2*time.Second, func(c *GlobConfig) { c.CloseInactive = 50 * time.Millisecond }, nil)
			ig.rotateToEmpty(t, w, "the empty w.log given a pointer, closed", func(s *gstream) bool { return s.ptrPath != "" && s.st == stClosed })
			time.Sleep(600 * time.Millisecond)
			stop()
			if len(pointer.HeldMarks(readEpochLines(t, data))) == 0 {
				t.Fatalf("no live held line after the first run")
			}
			aKey := fileKey19b(w + ".1")
			appendTo(t, w, numbered("second", 3)) // B written to while down
			if err := os.Remove(w + ".1"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(w, w+".1"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(w, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if reused = fileKey19b(w) == aKey; !reused {
				return
			}
			ig2, _, _ := runGlobOn(t, pattern, data)
			lines, _ = ig2.popEpochs(3*time.Second, true)
			tails, bytes, detail = ig2.lost()
		})
		if !reused {
			continue
		}
		if len(lines) != 3 || tails != 0 {
			t.Errorf("B's 3 lines (written while down, rotated to w.log.1 by rotate 1; A, empty and read, deleted; the new w.log on A's inode): "+
				"delivered %q, lostTails %d lostBytes %d (%q); want B's 3 lines and nothing counted, as with the new w.log on a new inode", lines, tails, bytes, detail)
		}
		return
	}
	t.Skip("the new w.log never got A's freed inode: the scenario did not arise")
}

// Review 19b, finding C.
//
// Review 19a F's scenario on a symlinked glob path (dir/w.log → a target
// file elsewhere, the Kubernetes /var/log/containers layout): A (the
// target, 2 lines, read and committed) is rotated live (target →
// target.1, an empty target B): A held, its line naming B. While tailfeed
// runs, B — empty — is deleted and the target created again (C; ext4 gives
// it B's freed inode). No line was ever written to B. remarkHeld sees the
// path's file on B's key and asks birthTimePath(s.first) whether it was
// born after the line — with AT_SYMLINK_NOFOLLOW, the birth of the
// symlink, made before the line — so it takes C for B and keeps the line
// naming B. After a clean stop and restart countNextGone finds B's key on C
// (by the descriptor's birth time, born after the line: another file) and
// counts B gone: lostTails 1, lossless false, for a loss that did not
// happen (DESIGN §4: a file read to its end is not a lost tail; §7 lossless
// only over a real loss). The same on a plain path passes (19a F).
// Observed (C on B's inode): lostTails 1; 3 of 3 runs.
func TestRev19BCSymlinkedPathSuccessorRecreatedFalseLoss(t *testing.T) {
	t.Parallel()
	for i := range 6 {
		var reused bool
		var got int
		var tails, bytes uint64
		var detail string
		t.Run(fmt.Sprint("try", i), func(t *testing.T) {
			dir, tdir, data := t.TempDir(), t.TempDir(), t.TempDir()
			pattern := filepath.Join(dir, "*.log")
			w := filepath.Join(dir, "w.log")
			target := filepath.Join(tdir, "app.log")
			if err := os.WriteFile(target, []byte(numbered("first", 2)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, w); err != nil {
				t.Fatal(err)
			}
			ig, _, stop := runGlobOn(t, pattern, data)
			if n := ig.popAll(time.Second); n != 2 {
				t.Fatalf("first run delivered %d lines, want 2", n)
			}
			var a *gstream
			ig.waitFor(t, "w.log's stream read, committed, closed", func() bool {
				a = ig.g.byPath[w]
				return a != nil && a.st == stClosed && a.owe == nil
			})
			if err := os.Rename(target, target+".1"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(target, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			ig.waitFor(t, "A kept for the empty B", func() bool { return a.gone && a.st == stClosed && a.held && a.heldLive })
			bKey := fileKey19b(target)
			time.Sleep(300 * time.Millisecond)
			if err := os.Remove(target); err != nil { // B, empty, deleted while tailfeed runs
				t.Fatal(err)
			}
			if err := os.WriteFile(target, nil, 0o600); err != nil { // C
				t.Fatal(err)
			}
			if reused = fileKey19b(target) == bKey; !reused {
				return
			}
			time.Sleep(1500 * time.Millisecond)
			if n, _, _ := ig.lost(); n != 0 {
				t.Fatalf("run 1 counted lostTails %d", n)
			}
			stop() // clean stop
			ig2, _, _ := runGlobOn(t, pattern, data)
			got = ig2.popAll(2 * time.Second)
			tails, bytes, detail = ig2.lost()
		})
		if !reused {
			continue
		}
		if got != 0 || tails != 0 || bytes != 0 {
			t.Errorf("symlinked w.log: empty B deleted (and the target made again, on B's inode) while tailfeed ran, then a clean restart: "+
				"%d lines delivered, lostTails %d lostBytes %d (%q); want nothing: no line was ever written to B", got, tails, bytes, detail)
		}
		return
	}
	t.Skip("the target made again never got B's freed inode: the scenario did not arise")
}

// Review 19b, finding D.
//
// A live rotation keeps A's pointer for the empty B (A at w.log.1, read to
// its end, held). tailfeed stops. While it is down the application writes
// one more line to A through its old descriptor (the README's own case:
// lines appended to the kept file after it was closed) and 3 lines to B;
// then logrotate runs with "rotate 2" and "nocreate" (A → w.log.2, B →
// w.log.1, no new w.log). Nothing is at the path, so A's pointer goes to
// countGone: A is Found (beside, by key and first bytes), longer than the
// mark's end, so heldDone is false and A's tail is counted (lostTails 1:
// fair, its late line is not read) — and readNext, which review 19a E's fix
// calls only in heldDone's branch, is skipped: B's 3 lines at w.log.1 are
// never read and never counted. One file's loss is reported (its detail
// names A's pointer), two files lost lines; without A's late line the same
// start reads B's 3 lines (19a E). DESIGN §4 "Restart after rotation:
// every generation still on disk", "Nothing green over a loss" (lostTails
// counts files).
// Observed: nothing delivered, lostTails 1; 3 of 3 runs.
func TestRev19BDLateLineInHeldFileSkipsSuccessor(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	w, _ := heldRun(t, dir, data, false)
	appendTo(t, w+".1", "late-in-A\n")    // A written to while down
	appendTo(t, w, numbered("second", 3)) // B written to while down
	if err := os.Rename(w+".1", w+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w, w+".1"); err != nil { // nocreate
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	lines, _ := ig2.popEpochs(3*time.Second, true)
	tails, bytes, detail := ig2.lost()
	second := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "second-") {
			second++
		}
	}
	if second != 3 && tails < 2 {
		t.Errorf("B's 3 lines (written while down, rotated to w.log.1, nocreate) with a late line in A (w.log.2): delivered %q, lostTails %d lostBytes %d (%q); "+
			"want B's 3 lines read (or lostTails 2: A's late line and B's lines)", lines, tails, bytes, detail)
	}
}

// Review 19b, finding E.
//
// Two held paths: w.log's A (w.log.1) and x.log's A' (x.log.1), each read
// to its end and kept for an empty new file. tailfeed stops. While it is
// down A gets a late line (its writer's old descriptor), w.log's empty B
// is moved beside the path (w.log.0; nothing at w.log), and x.log's empty
// B' is deleted and x.log made again. At the start voidLoadedHeld finds A
// beside w.log (Found: the mark names nothing, review 19a A's fix); then
// countNextGone counts B' gone — and logrotate, running as tailfeed
// starts, deletes A (simulated in the loss callback, which runs between
// the Found look and countGone). countGone's heldDone takes A's absence,
// with Found set, for "gone since the mark was read" and says nothing of
// it was pending: A's late line, found unread at this start, is lost and
// not counted (the same hole 19a A closed for a queued stream, left open
// on countGone's path). DESIGN §4 "Nothing green over a loss".
// Observed: lostTails 1 (B' only), the late line not delivered; 3 of 3 runs.
func TestRev19BEFoundHeldFileDeletedBeforeCountGoneIsSilent(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	w, x := filepath.Join(dir, "w.log"), filepath.Join(dir, "x.log")
	for _, p := range []string{w, x} {
		if err := os.WriteFile(p, []byte(numbered(filepath.Base(p), 2)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig, _, stop := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	if got := ig.popAll(time.Second); got != 4 {
		t.Fatalf("first run delivered %d lines, want 4", got)
	}
	var a, b *gstream
	ig.waitFor(t, "both read, committed, closed", func() bool {
		a, b = ig.g.byPath[w], ig.g.byPath[x]
		return a != nil && b != nil && a.st == stClosed && a.owe == nil && b.st == stClosed && b.owe == nil
	})
	for _, p := range []string{w, x} {
		if err := os.Rename(p, p+".1"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ig.waitFor(t, "both held", func() bool { return a.gone && a.held && b.gone && b.held })
	time.Sleep(300 * time.Millisecond)
	stop()
	if n := len(pointer.HeldMarks(readEpochLines(t, data))); n != 2 {
		t.Fatalf("%d live held lines after the first run, want 2", n)
	}
	appendTo(t, w+".1", "late-in-A\n")
	if err := os.Rename(w, w+".0"); err != nil { // w.log's B moved beside; nothing at w.log
		t.Fatal(err)
	}
	if err := os.Remove(x); err != nil { // x.log's B' deleted
		t.Fatal(err)
	}
	if err := os.WriteFile(x, []byte(numbered("x2", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobKill(t, filepath.Join(dir, "*.log"), data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
		c.Stream.OnLoss = func(Loss) { os.Remove(w + ".1") } // logrotate deletes A as tailfeed starts
	}, func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	lines, _ := ig2.popEpochs(3*time.Second, true)
	tails, bytes, detail := ig2.lost()
	late := false
	for _, l := range lines {
		late = late || l == "late-in-A"
	}
	if !late && tails < 2 {
		t.Errorf("A found at the start with a late line, deleted before countGone: delivered %q, lostTails %d lostBytes %d (%q); "+
			"want lostTails 2 (x.log's B' and A's late line) — the late line is lost uncounted", lines, tails, bytes, detail)
	}
}

// Review 19b, finding F.
//
// Review 14a G's scenario (fixed by the held line's nextFileKey), with the
// empty new file B left empty longer than forgetAfter while tailfeed runs
// (a quiet log after its daily rotation; forgetAfter 24 h by default, 2 s
// here). A (w.log.1, read to its end) is held for the empty B, its held
// line naming B. forget — which does not look at s.held — deletes A's
// pointer file forgetAfter after A went, though A stays held in memory:
// the held line on disk now belongs to no pointer. tailfeed stops. While
// it is down the application writes 3 lines to B, B is deleted and a new
// w.log (2 lines) put at the path. loadPointers finds no pointer for the
// held line's epoch, so countNextGone never looks for B: B's 3 lines are
// lost and lostTails stays 0, lossless true (DESIGN §4 "Nothing green over
// a loss"; the README's "A restart that finds no file of the empty new
// file's key beside the path … counts lostTails 1 for it" holds only for
// forgetAfter after the rotation).
// Observed: the new w.log's 2 lines, lostTails 0; 3 of 3 runs.
func TestRev19BFHeldPointerForgottenSuccessorLossSilent(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _, stop := runGlobKill(t, pattern, data, 5*time.Second, func(c *GlobConfig) {
		c.CloseInactive = 50 * time.Millisecond
		c.ForgetAfter = 2 * time.Second
	}, func(g *Glob) { g.drainBound = 300 * time.Millisecond })
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	var a *gstream
	ig.waitFor(t, "w.log's stream read, committed, closed", func() bool {
		a = ig.g.byPath[w]
		return a != nil && a.st == stClosed && a.owe == nil
	})
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "A kept for the empty B", func() bool { return a.gone && a.st == stClosed && a.held && a.heldMark.Next != 0 })
	ptr := a.ptrPath
	time.Sleep(4 * time.Second) // B still empty, longer than forgetAfter
	stop()
	_, perr := os.Stat(ptr)
	t.Logf("A's pointer file after forgetAfter: exists %v; live held lines %d", perr == nil, len(pointer.HeldMarks(readEpochLines(t, data))))
	appendTo(t, w, numbered("second", 3)) // B written to while down
	if err := os.WriteFile(w+".new", []byte(numbered("third", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(w); err != nil { // B deleted
		t.Fatal(err)
	}
	if err := os.Rename(w+".new", w); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	lines, _ := ig2.popEpochs(3*time.Second, true)
	tails, nb, detail := ig2.lost()
	if tails != 1 {
		t.Errorf("B (empty for longer than forgetAfter, then written to while down and deleted): delivered %q, lostTails %d lostBytes %d (%q); "+
			"want lostTails 1 for B, as review 14a G's test gets when B is deleted within forgetAfter", lines, tails, nb, detail)
	}
}
