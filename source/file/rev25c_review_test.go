package file_test

// Review 25c, the source side (the seen catalogue, retryTorn, the twin
// rule's held files). Glob-side findings: rev25c_review_internal_test.go.
// Each failed on the reviewed code (a54cbb9); fixed in the twenty-fifth
// session: D (noteSeen's refresh of a held file's fingerprint, which made
// it, taken out again — fp0, tried first, skipped a header-only
// generation: review 25d A), E, E2 (a torn .gz gone, not
// renamed on, is counted — a file of its name then is no twin read
// instead — unless it is the file the source read beside it when it was
// noted too short to tell: heldTwin, gzip failing), F (a held file is
// taken for a twin only when the .gz's bytes tell it; retryTorn skips a
// whole .gz whose first bytes are a seen file's, seenHead).

import (
	"os"
	"testing"
	"time"

	"tailfeed/source/file"
)

// Probe (passes; (4): could a refreshed, longer fingerprint in the seen
// catalogue make a running scan read a copy's .gz again, or skip a real
// generation?): rotatedNames "app.log.*.gz". The source reads app.log (10
// "a" lines). logrotate's copytruncate: the copy app.log.1 (no generation
// name), app.log cut, then 30 "b" lines (longer than before the cut: its
// catalogue entry is refreshed to them at the next noteSeen, and by
// seenAtClose). A rotation (app.log to app.log.2, "c" lines), then the
// copy compressed (app.log.1.gz, the plain copy unlinked) and the next
// rotation ("d" lines): the .gz is in queueLater's window, and app.log's
// entry no longer holds the "a" lines' first bytes — but the source took
// the copy at the cut (readCopy, from offset 80: nothing more) and the
// catalogue noted the copy under its own key with those bytes: the .gz is
// skipped, every line delivered once.
func TestRev25CRProbeCopytruncateOriginalRefreshedSeenCopysGzNotReadAgain(t *testing.T) {
	t.Parallel()
	r := rev25Running(t, rigOpts{strategy: file.Committed, rotateWait: 50 * time.Millisecond, rotated: []string{"app.log.*.gz"}}, numbered("a", 0, 10))
	copyTruncate(t, r.path, r.path+".1")
	time.Sleep(300 * time.Millisecond) // the cut seen
	appendTo(t, r.path, numbered("b", 0, 30)...)
	r.waitLines(40)
	r.waitSettled()
	mustRename(t, r.path, r.path+".2")
	appendTo(t, r.path, numbered("c", 0, 5)...)
	r.waitLines(45)
	r.waitSettled()
	time.Sleep(300 * time.Millisecond) // app.log.2 read to its end and closed
	gzipTo(t, r.path+".1", r.path+".1.gz")
	mustRename(t, r.path, r.path+".3")
	appendTo(t, r.path, numbered("d", 0, 5)...)
	r.waitLines(50)
	r.waitSettled()
	time.Sleep(500 * time.Millisecond)
	gs := r.rec.all()
	if testing.Verbose() {
		t.Logf("log:\n%s", r.logs.String())
	}
	if c := counts(gs); c["a-00000"] != 1 || len(gs) != 50 {
		t.Fatalf("%d lines delivered (a-00000 %d times), want 50 each once: app.log.1.gz, the copytruncate copy of the first 10 lines (read before the cut), read again as a later generation", len(gs), c["a-00000"])
	}
}

// D (new with this diff — noteSeen's refresh of a held file's entry to a
// longer fingerprint, item 4: with that one line reverted the test passes,
// with only seenAtClose reverted it still fails; passes at 7caa5d4; a
// duplicate of a whole copy): the copytruncate window — logrotate copies app.log, the application
// writes on, then logrotate cuts it: the copy holds fewer bytes than the
// source read (findShortCopy: "its copy holds nothing unread", recorded,
// never opened, so never in the seen catalogue under its own key).
// rotatedNames "app.log.*.gz" (the plain copy app.log.1 is no generation
// name: never noted). The source read app.log's 10 "a" lines, then 2 more
// written after the copy; the seen catalogue's entry of app.log grows with
// them (noteSeen's refresh to the longer fingerprint; seenAtClose). The
// copy is compressed (app.log.1.gz: the first 10 lines), the plain copy
// unlinked; at the next rotation queueLater's scan finds the .gz in its
// window, and skipGz wants an entry whose fingerprint covers exactly the
// .gz's head (80 bytes) — app.log's covers 96 now: the .gz is read as a
// later generation, a-0..9 delivered twice. The parent kept the entry's
// first fingerprint (80 bytes, noted at the open): the .gz matched it.
// (Default rotatedNames: the same whenever the plain copy is compressed
// before a noteSeen notes it under its generation name.)
func TestRev25CRDCopytruncateShortCopysGzReadAgainAfterSeenRefresh(t *testing.T) {
	t.Parallel()
	rev25cShortCopyGz(t, []string{"app.log.*.gz"}, false)
}

// rev25cShortCopyGz: D's scenario with rotatedNames names; gzFirst: the
// copy compressed before the cut (logrotate's compress run before the
// truncation is seen).
func rev25cShortCopyGz(t *testing.T, names []string, gzFirst bool) {
	r := rev25Running(t, rigOpts{strategy: file.Committed, rotateWait: 50 * time.Millisecond, rotated: names}, numbered("a", 0, 10))
	rev25CopyBeforeCut(t, r, "a", 10)
	if gzFirst {
		gzipTo(t, r.path+".1", r.path+".1.gz")
	}
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the cut seen
	appendTo(t, r.path, numbered("b", 0, 5)...)
	r.waitLines(17)
	r.waitSettled()
	if !gzFirst {
		gzipTo(t, r.path+".1", r.path+".1.gz")
	}
	mustRename(t, r.path, r.path+".2") // the next rotation (create)
	appendTo(t, r.path, numbered("c", 0, 5)...)
	r.waitLines(22)
	r.waitSettled()
	time.Sleep(500 * time.Millisecond)
	gs := r.rec.all()
	if testing.Verbose() {
		t.Logf("log:\n%s", r.logs.String())
	}
	if c := counts(gs); c["a-00000"] != 1 || len(gs) != 22 {
		t.Fatalf("%d lines delivered (a-00000 %d times), want 22 each once: app.log.1.gz, the copytruncate copy of the first 10 lines (read before the cut), read again as a later generation", len(gs), c["a-00000"])
	}
}

// Probe (passes): D with default rotatedNames, logrotate's copytruncate +
// compress without delaycompress, the copy compressed before the cut is
// seen: the noteSeen at the cut notes app.log.1.gz by its key (a
// generation name), and the next rotation's scan skips it. (Compressed
// after the cut, the plain app.log.1 is noted with its first bytes at the
// cut: skipped too.) D needs rotatedNames naming only the .gz files.
func TestRev25CRProbeDefaultNamesShortCopysGzNotReadAgain(t *testing.T) {
	t.Parallel()
	rev25cShortCopyGz(t, nil, true)
}

// rev25cTornGzGone: a .gz being written in beside the input
// (app.log.1.gz: its first "z" line flushed, 3 in all — a pipeline, or a
// compressor whose input is elsewhere) while A is rotated to app.log.2
// and B made at app.log: the scan notes the .gz torn (no file of its
// name). Then, between two polls, the torn .gz is deleted (its writer
// failed and removed it, or a cleanup) and B rotated to a plain app.log.1,
// C made at app.log. retryTorn finds the .gz gone (not moved): its lines
// were never read — one lost tail to count, DESIGN §4 "Nothing green over
// a loss". It returns the lost tails counted and the z lines delivered.
func rev25cTornGzGone(t *testing.T, names []string) (uint64, int) {
	r := rev25Running(t, rigOpts{strategy: file.Committed, rotateWait: 100 * time.Millisecond, rotated: names}, numbered("a", 0, 10))
	full, head := rev25bGz(t, rev25Lines(numbered("z", 0, 3)...), len("z-00000\n"))
	if err := os.WriteFile(r.path+".1.gz", full[:head], 0o644); err != nil { // its first line flushed
		t.Fatal(err)
	}
	mustRename(t, r.path, r.path+".2")
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(20)
	time.Sleep(200 * time.Millisecond)
	if err := os.Remove(r.path + ".1.gz"); err != nil {
		t.Fatal(err)
	}
	mustRename(t, r.path, r.path+".1") // B, of the torn .gz's twin name
	appendTo(t, r.path, numbered("c", 0, 10)...)
	r.waitLines(30)
	time.Sleep(time.Second)
	if testing.Verbose() {
		t.Logf("log:\n%s", r.logs.String())
	}
	return r.src.LostTails(), rev25ZDelivered(r)
}

// E (new with this diff: twinReadInstead's held — retryTorn passes
// s.known for a gone torn .gz): rev25cTornGzGone with rotatedNames
// "app.log.*.gz" (the compressed generations only: app.log.1 is no
// generation name). retryTorn asks twinReadInstead(app.log.1.gz, s.known):
// gzTwin, the .gz gone, takes any file of its name for its twin ("too
// short to tell"), and app.log.1 is B, which the source holds (switched
// away from, read to its end for rotateWait): "read instead" — the torn
// entry is dropped, nothing counted: lostTails 0 over 3 lines never read.
// At 7caa5d4 (no held) B was no twin read instead: counted lost.
func TestRev25CRETornGzGoneBesideAHeldNamesakeDroppedUncounted(t *testing.T) {
	t.Parallel()
	tails, n := rev25cTornGzGone(t, []string{"app.log.*.gz"})
	if n != 3 && tails == 0 {
		t.Errorf("app.log.1.gz (3 lines, torn when scanned, deleted as B was rotated to app.log.1): %d of its lines delivered, lostTails 0 (lossless)", n)
	}
}

// E2 (older: 7caa5d4 drops it too; the case the diff's genMoved fix, item
// 2, leaves): E with default rotatedNames — B at app.log.1 is a
// generation name, "read instead" by name: dropped, uncounted. (25b E's
// torn .gz shifted on is followed now; one deleted — or shifted and
// deleted between two polls, logrotate's rotate count — is not.)
func TestRev25CRE2TornGzGoneBesideANamesakeGenerationDroppedUncounted(t *testing.T) {
	t.Parallel()
	tails, n := rev25cTornGzGone(t, nil)
	if n != 3 && tails == 0 {
		t.Errorf("app.log.1.gz (3 lines, torn when scanned, deleted as B was rotated to app.log.1): %d of its lines delivered, lostTails 0 (lossless)", n)
	}
}

// F (new with this diff: twinReadInstead's held — queueLater's scan passes
// its skip, which takes every file in the seen catalogue; a silent loss):
// rotatedNames "app.log.*.gz" (app.log.1 is no generation name). Running:
// A (10 "a" lines) rotated to app.log.1, B made at app.log and read (A
// held, read to its end, closed: in the seen catalogue). Then a .gz is
// being written in as app.log.1.gz — its gzip header so far, 3 "z" lines
// to come (25b D's pipeline) — and B is rotated to app.log.3, C made.
// queueLater's scan asks twinReadInstead(app.log.1.gz, skip): gzTwin takes
// any file of its name for the twin while the .gz is too short to tell,
// and app.log.1 is A, whose identity the seen catalogue holds: "read
// instead" — the .gz is left out, not noted torn, and noteSeen then notes
// its identity: no later scan looks at it. It ends cleanly; its 3 lines
// are read by nobody and counted nowhere: lostTails 0. At 7caa5d4 (no
// held: app.log.1 no generation name, "nobody reads it") the .gz was
// noted torn and read once it ended cleanly.
func TestRev25CRFTornGzBesideASeenNamesakeLeftOutUncounted(t *testing.T) {
	t.Parallel()
	r := rev25TwoGens(t, "")
	full, _ := rev25bGz(t, rev25Lines(numbered("z", 0, 3)...), 1)
	gz := rev25CreateGz(t, r.path+".1.gz", full[:10]) // the gzip header only
	rev25ThirdGen(t, r, "")
	if _, err := gz.Write(full[10:]); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	mustRename(t, r.path, r.path+".4") // C: one more rotation, one more scan
	appendTo(t, r.path, numbered("d", 0, 10)...)
	r.waitLines(40)
	time.Sleep(time.Second)
	if testing.Verbose() {
		t.Logf("log:\n%s", r.logs.String())
	}
	if n := rev25WaitZ(r); n != 3 && r.src.LostTails() == 0 {
		t.Errorf("app.log.1.gz (3 lines, being written in when the rotation's scan found it beside a plain app.log.1 the source had read): %d of its lines delivered, lostTails 0 (lossless)", n)
	}
}
