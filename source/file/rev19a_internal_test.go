package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// Review 19a (the "held" epochs line, nineteenth session): six findings,
// each observed at b89956e as its "Observed" line says; all fixed in the
// same session (A: the mark names nothing once its file is found at the
// start; B: heldMark.Counted; C: the mark read by epoch and key; D: held
// and gone, the generations beside the path are read; E: readNext; F:
// remarkHeld). They stay as regression tests.

// Review 19a (the "held" epochs line), finding A.
//
// A live rotation keeps A's pointer for the empty B (held; the held line
// written). tailfeed stops; while it is stopped the application writes one
// more line into A through its old descriptor (w.log.1). The restart finds
// A beside its path — the README's own case: "lines appended to the kept
// file after it was closed are read only if it is still beside its path
// at the next start" — and voids the mark on disk at once ("a later loss of
// it counts"). Another file holds the only slot (maxOpenFiles), so the
// stream that is to read A (the file at w.log, given A's pointer) waits
// queued; meanwhile A is deleted (logrotate's next run, rotate 1). When
// that stream starts, its source does not find A: the mark kept in memory
// (Config.held) makes loseTail count nothing. The late line was never read
// by anyone and lostTails stays 0: a silent loss. Before the change the
// same run counted lostTails 1.
// Observed: the late line not delivered, lostTails 0; 3 of 3 runs (with
// the held check in loseTail disabled: lostTails 1).
func TestRev19AAHeldFileFoundAtStartThenDeletedBeforeReadIsSilent(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	w, _ := heldRun(t, dir, data, false)
	appendTo(t, w+".1", "late-line-in-A\n") // written while tailfeed is stopped
	// A busy file that takes the only slot first ("a" sorts before "w").
	if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte(numbered("hog", 20000)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _, _ := runGlobKill(t, filepath.Join(dir, "*.log"), data, 2*time.Second, func(c *GlobConfig) {
		c.MaxOpenFiles = 3 // one stream slot
	}, nil)
	var b *gstream
	deadline := time.Now().Add(3 * time.Second)
	for {
		ig.g.mu.Lock()
		b = ig.g.byPath[w]
		queued := b != nil && b.st == stQueued && b.ptrPath != ""
		ig.g.mu.Unlock()
		if queued {
			break
		}
		if time.Now().After(deadline) {
			t.Skip("w.log's stream was not seen queued with A's pointer; the scenario did not arise")
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.Remove(w + ".1"); err != nil { // A deleted while the stream that is to read it waits
		t.Fatal(err)
	}
	lines, _ := ig.popEpochs(4*time.Second, true)
	late := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "late-line") {
			late++
		}
	}
	ig.waitFor(t, "w.log's stream started", func() bool { return b.st != stQueued })
	time.Sleep(500 * time.Millisecond)
	tails, bytes, detail := ig.lost()
	if late == 0 && tails == 0 {
		t.Errorf("A (held) found beside w.log at the start with a line past its pointer, deleted before its stream read it: "+
			"the line was never delivered, yet lostTails %d lostBytes %d (%q); want lostTails 1 (DESIGN §10: a file that disappears with an unread tail counts in lostTails)",
			tails, bytes, detail)
	}
}

// mustInspectPtrs is every stream pointer's record under data (runGlobOn's
// layout), by file name.
func mustInspectPtrs(t *testing.T, data string) map[string]pointer.Record {
	t.Helper()
	dir := filepath.Join(data, "feeds", "f")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]pointer.Record{}
	for _, e := range ents {
		if rec, err := pointer.Inspect(filepath.Join(dir, e.Name())); err == nil {
			out[e.Name()] = rec
		}
	}
	return out
}

// Review 19a, finding B.
//
// A live rotation keeps A's pointer for the empty B (the held line names
// B's key as nextFileKey). The application then writes 3 lines to B; B's
// stream gets a pointer of its own and publishes them, not acknowledged
// yet (a slow sink: B's pointer holds no commit, so A stays held and its
// line stays live). kill -9. While tailfeed is down B is deleted: its 3
// lines, delivered but never acknowledged, are lost — one file's tail.
// The restart counts it twice: B's own pointer (gone while stopped,
// countGone) and the held line's nextFileKey (countNextGone, whose detail
// says B was "empty when tailfeed last saw it", which it was not):
// lostTails 2 for one lost file. lostTails counts files (DESIGN §4, §7).
// Observed: lostTails 2; 3 of 3 runs (without countNextGone: 1).
func TestRev19ABSuccessorWithOwnPointerDeletedCountedTwice(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, kill := runGlobKillable(t, pattern, data, func(*GlobConfig) {})
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	a := ig.rotateToEmpty(t, w, "w.log's stream read, committed, closed", func(s *gstream) bool { return s.st == stClosed && s.owe == nil })
	appendTo(t, w, numbered("second", 3))
	var b *gstream
	taken := 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end) && taken < 3; {
		if bt := ig.q.TryPop(); bt != nil {
			taken += bt.Len() // delivered, never acknowledged
			bt.Release()
		} else {
			time.Sleep(2 * time.Millisecond)
		}
	}
	if taken != 3 {
		t.Fatalf("B's 3 lines: %d delivered", taken)
	}
	ig.waitFor(t, "B's stream with a pointer of its own", func() bool {
		b = ig.g.byPath[w]
		return b != nil && b != a && b.ptrPath != ""
	})
	time.Sleep(1500 * time.Millisecond) // housekeeping ran: A still held (B's pointer holds no commit)
	ig.g.mu.Lock()
	stillHeld := a.held
	ig.g.mu.Unlock()
	kill()
	if !stillHeld {
		t.Fatalf("A was not held any more when killed")
	}
	if len(pointer.HeldMarks(readEpochLines(t, data))) != 1 {
		t.Fatalf("no live held line after the first run")
	}
	if err := os.Remove(w); err != nil { // B deleted while tailfeed is down
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	got := ig2.popAll(2 * time.Second)
	tails, bytes, detail := ig2.lost()
	if tails != 1 {
		t.Errorf("B (3 lines delivered, not acknowledged) deleted while down: %d lines delivered, lostTails %d lostBytes %d (last detail %q); want lostTails 1 — one file's tail lost",
			got, tails, bytes, detail)
	}
}

// Review 19a, finding C.
//
// Review 14a G's case (A held for the empty B; B written to while
// tailfeed is down, then deleted, a new w.log put at the path: B's lines
// are lost), with one more thing done while tailfeed is down: a sink is
// restored from a backup to an earlier point of A's epoch, so the start's
// catch-up commits A's pointer back to that point (internal/daemon
// catchUpStreams, simulated here with pointer.Rewind exactly as it does).
// loadPointers then takes the held line only when the record is at the
// line's end: at the rewound offset it is ignored, countNextGone never
// looks for B, and B's loss goes uncounted: lostTails 0, lossless true,
// 3 lines lost (DESIGN §4 "Nothing green over a loss"). The held line is
// not voided either (it stays its epoch's last line, live for a later
// start once the catch-up's re-read brings the record back to its end).
// Not a regression against the parent (14a G was silent there), a case
// the fix misses. Observed: lostTails 0, 3 of 3 runs (without the rewind
// the same test counts lostTails 1).
func TestRev19ACCatchUpRewindHidesSuccessorLoss(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	w, rec := heldRun(t, dir, data, true)
	pattern := filepath.Join(dir, "*.log")
	if m, ok := pointer.HeldMarks(readEpochLines(t, data))[rec.Epoch]; !ok || m.NextKey == 0 {
		t.Fatalf("no held line naming B after the first run: %+v", m)
	}
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
	// The catch-up of a sink restored to just after A's first line.
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
	back.Offset = int64(len(numbered("first", 1)))
	if err := p.Rewind(back); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	lines, _ := ig2.popEpochs(3*time.Second, true)
	tails, bytes, detail := ig2.lost()
	if tails == 0 {
		t.Errorf("B (3 lines written while down) deleted, a sink caught up in A's epoch: delivered %q; lostTails %d lostBytes %d (%q): B's lines are lost and lossless stays true; want lostTails 1 as without the catch-up",
			lines, tails, bytes, detail)
	}
}

// Review 19a, finding D.
//
// An empty w.log (A) gets a pointer (bound while empty: offset 0). A live
// rotation renames it, still empty, to w.log.1 with an empty w.log (B)
// after it: A's pointer is held for B, its held line at end 0 naming B.
// tailfeed stops. While it is down the application writes 3 lines to B,
// then logrotate runs with "rotate 1": A (empty) deleted, B → w.log.1, a
// new empty w.log (C). B's 3 lines are on disk beside the path, a later
// generation (DESIGN §4 "Restart after rotation: every generation still
// on disk"). The restart gives A's pointer to C; C's source does not find
// A, and — the held line naming A at 0 — counts nothing (heldGone), then
// moves the pointer off as forgotten without reading the generations
// beside the path (forgetLost's path for a pointer without first bytes).
// B's 3 lines are neither delivered nor counted: lostTails 0, lossless
// true. Before the change the same start counted lostTails 1.
// Observed: nothing delivered, lostTails 0 (clean stop and kill); 3 of 3
// runs (with the held check in loseTail disabled: lostTails 1).
func TestRev19ADEmptyHeldFileGoneSuccessorRotatedUnread(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"clean", "kill"} {
		t.Run(mode, func(t *testing.T) { emptyHeldRotated(t, mode == "kill") })
	}
}

func emptyHeldRotated(t *testing.T, kill bool) {
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ig, killRun, stop := runGlobKill(t, pattern, data, 2*time.Second, func(c *GlobConfig) { c.CloseInactive = 50 * time.Millisecond }, nil)
	ig.rotateToEmpty(t, w, "the empty w.log given a pointer, closed", func(s *gstream) bool { return s.ptrPath != "" && s.st == stClosed })
	time.Sleep(600 * time.Millisecond)
	if kill {
		killRun()
	} else {
		stop()
	}
	if len(pointer.HeldMarks(readEpochLines(t, data))) == 0 {
		t.Fatalf("no live held line after the first run")
	}
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
	ig2, _, _ := runGlobOn(t, pattern, data)
	lines, _ := ig2.popEpochs(3*time.Second, true)
	tails, bytes, detail := ig2.lost()
	if len(lines) != 3 && tails == 0 {
		t.Errorf("B's 3 lines (written while down, B rotated to w.log.1 by rotate 1, A empty and deleted): delivered %q, lostTails %d lostBytes %d (%q); want B's 3 lines read (or, at least, lostTails 1)",
			lines, tails, bytes, detail)
	}
}

// Review 19a, finding E.
//
// As review 13b B's "nocreate" mode (A, read to its end, held for the
// empty B; while tailfeed is down logrotate runs with "rotate 1" and
// "nocreate": A deleted, B → w.log.1, no new w.log), except that the
// application wrote 3 lines to B while tailfeed was down, before the
// rotation. Nothing is at the path at the restart, so A's pointer goes to
// countGone, which — the held line naming A at its end — counts nothing
// and forgets the pointer; countNextGone finds B beside the path by its
// key and counts nothing either; and nobody reads B (no pointer names it,
// w.log.1 is not matched). B's 3 lines are neither delivered nor counted:
// lostTails 0, lossless true. Before the change countGone counted
// lostTails 1 for the pointer.
// Observed: nothing delivered, lostTails 0; 3 of 3 runs (without
// countGone's held case: lostTails 1).
func TestRev19AENocreateRotationSuccessorLinesUnread(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	w, _ := heldRun(t, dir, data, false)
	appendTo(t, w, numbered("second", 3))       // B written to while down
	if err := os.Remove(w + ".1"); err != nil { // rotate 1: A deleted
		t.Fatal(err)
	}
	if err := os.Rename(w, w+".1"); err != nil { // B rotated; nocreate
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, filepath.Join(dir, "*.log"), data)
	lines, _ := ig2.popEpochs(3*time.Second, true)
	tails, bytes, detail := ig2.lost()
	if len(lines) != 3 && tails == 0 {
		t.Errorf("B's 3 lines (written while down, B rotated to w.log.1 with nocreate, A deleted): delivered %q, lostTails %d lostBytes %d (%q); want B's 3 lines read (or, at least, lostTails 1)",
			lines, tails, bytes, detail)
	}
}

// Review 19a, finding F.
//
// A live rotation keeps A's pointer for the empty B; the held line names
// B's key. While tailfeed runs, B — still empty, watched by the glob — is
// deleted and an empty w.log (C) created in its place (an operator's
// clean-up, an application that recreates its log, logrotate's "rotate
// 0"). Nothing is lost: B never held a byte. A stays held (C has no
// commit), and its held line still names B. tailfeed is stopped cleanly
// and started again with nothing else done: countNextGone finds no file of
// B's key beside w.log (or C on B's freed inode, born after the line) and
// counts lostTails 1 ("empty when tailfeed last saw it … gone while
// stopped"): a loss that did not happen, of a file deleted while tailfeed
// ran and saw it empty, not while it was stopped.
// Observed: lostTails 1; 3 of 3 runs (without countNextGone: 0).
func TestRev19AFSuccessorDeletedWhileRunningFalseLoss(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, _, stop := runGlobOn(t, pattern, data)
	if got := ig.popAll(time.Second); got != 2 {
		t.Fatalf("first run delivered %d lines, want 2", got)
	}
	ig.rotateToEmpty(t, w, "w.log's stream read, committed, closed", func(s *gstream) bool { return s.st == stClosed && s.owe == nil })
	time.Sleep(300 * time.Millisecond)
	if err := os.Remove(w); err != nil { // B, empty, deleted while tailfeed runs
		t.Fatal(err)
	}
	if err := os.WriteFile(w, nil, 0o600); err != nil { // C
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if tails, _, _ := ig.lost(); tails != 0 {
		t.Fatalf("run 1 counted lostTails %d", tails)
	}
	stop() // clean stop
	ig2, _, _ := runGlobOn(t, pattern, data)
	got := ig2.popAll(2 * time.Second)
	tails, bytes, detail := ig2.lost()
	if got != 0 || tails != 0 || bytes != 0 {
		t.Errorf("empty B deleted (and an empty w.log made) while tailfeed ran, then a clean restart: %d lines delivered, lostTails %d lostBytes %d (%q); want nothing: no line was ever written to B",
			got, tails, bytes, detail)
	}
}
