package file_test

// Review 25b (the twenty-fifth session's twin rule, twinRead: a .gz is left
// out of the generations only for a plain twin read instead — a
// rotatedNames generation name, or a glob file), while running.
// go test -count=1 -run 'TestRev25BR' ./source/file
// Every finding failed on the reviewed code (7caa5d4's rule). Fixed in the
// twenty-fifth session: A, A2, A3 (a twin the source holds or whose
// identity its scan skips is read instead: with review 25a A), B, C (the
// seen catalogue's first bytes taken again at a file's close: with review
// 25a D), E (a torn .gz followed when renamed on: with review 25a B), D
// (retryTorn looks for no twin of a .gz it noted torn: a file of its name
// made later is another generation).

import (
	"bytes"
	"compress/gzip"
	"os"
	"testing"
	"time"

	"tailfeed/source/file"
)

// rev25bGz is the gzip stream of data, and the length of a prefix of it
// that decompresses (sync-flushed, not closed) to data's first cut bytes
// only: a .gz its compressor is still writing.
func rev25bGz(t *testing.T, data []byte, cut int) (full []byte, torn int) {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data[:cut]); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	torn = b.Len()
	w.Write(data[cut:])
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), torn
}

// rev25bGzJustBegun: a running rig (rotatedNames "app.log.*.gz") whose
// A (1,000 "a" lines, every one delivered) is renamed to app.log.1, gzip
// beginning app.log.1.gz (created, nothing written yet), then 10 "b"
// lines at a new app.log, delivered.
func rev25bGzJustBegun(t *testing.T) *rig {
	t.Helper()
	o := rigOpts{strategy: file.Committed, rotated: []string{"app.log.*.gz"}, rotateWait: 100 * time.Millisecond}
	r := rev25Running(t, o, numbered("a", 0, 1000))

	mustRename(t, r.path, r.path+".1")
	if err := os.WriteFile(r.path+".1.gz", nil, 0o644); err != nil { // gzip begun
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(1010)
	return r
}

// rev25bGzipWhileHeld: A's scenario (rotatedNames "app.log.*.gz",
// running): A (1,000 "a" lines, delivered) renamed to app.log.1 while gzip
// writes app.log.1.gz — the stream's first cut bytes sync-flushed when
// flushed, else nothing yet — and 10 "b" lines at a new app.log,
// delivered; 500 ms later (A read to its end, switched from, closed) gzip
// finishes and unlinks app.log.1; a second, then settled.
func rev25bGzipWhileHeld(t *testing.T, cut int, flushed bool) *rig {
	t.Helper()
	o := rigOpts{strategy: file.Committed, rotated: []string{"app.log.*.gz"}, rotateWait: 100 * time.Millisecond}
	r := rev25Running(t, o, numbered("a", 0, 1000))

	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	full, torn := rev25bGz(t, data, cut)
	if !flushed {
		torn = 0
	}
	mustRename(t, r.path, r.path+".1")
	gz := rev25CreateGz(t, r.path+".1.gz", full[:torn])
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(1010)
	time.Sleep(500 * time.Millisecond)               // A read to its end, switched from, closed
	if _, err := gz.Write(full[torn:]); err != nil { // gzip finishes
		t.Fatal(err)
	}
	gz.Close()
	if err := os.Remove(r.path + ".1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	r.waitSettled()
	return r
}

// rev25bMakeC makes C (10 "c" lines) at app.log after rev25bGrownThenCompressed's
// next rotation, waits for its 50 lines, a second and the settling; what
// r delivered.
func rev25bMakeC(t *testing.T, r *rig) []got {
	t.Helper()
	appendTo(t, r.path, numbered("c", 0, 10)...)
	r.waitLines(50)
	time.Sleep(time.Second)
	r.waitSettled()
	return r.rec.all()
}

// rev25bTornBeside: a running rig (default rotatedNames) on 10 "a" lines;
// app.log.1.gz created beside the input holding first (a .gz being
// written in: closed at the test's end), then A rotated to app.log.2 and B
// (10 "b" lines) made at app.log and delivered, 200 ms for the scan.
func rev25bTornBeside(t *testing.T, first []byte) (*rig, *os.File) {
	t.Helper()
	r := rev25Running(t, rigOpts{strategy: file.Committed, rotateWait: 100 * time.Millisecond}, numbered("a", 0, 10))

	gz := rev25CreateGz(t, r.path+".1.gz", first)
	mustRename(t, r.path, r.path+".2")
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(20)
	time.Sleep(200 * time.Millisecond)
	return r, gz
}

// rev25bGzEnds writes rest to gz (its writer finishing it), closes it and
// waits a second.
func rev25bGzEnds(t *testing.T, gz *os.File, rest []byte) {
	t.Helper()
	if _, err := gz.Write(rest); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	time.Sleep(time.Second)
}

// rev25bDup lists the lines delivered more than once.
func rev25bDup(gs []got) []string {
	var out []string
	for l, n := range counts(gs) {
		if n > 1 {
			out = append(out, l)
		}
	}
	return out
}

// A (new with this change; running, rotatedNames naming only the .gz
// generations, "app.log.*.gz", review 24d D's configuration): logrotate's
// compress without delaycompress while tailfeed runs. A (1,000 lines, 8 KB:
// the source's fingerprint of it is the whole 4 KiB) is renamed to
// app.log.1 and gzip begins app.log.1.gz (1,000 decompressed bytes
// flushed so far), then the new app.log appears. The source sees the new
// file and scans (queueLater): the .gz's namesake app.log.1 is A itself,
// held by the source, but no generation name, so twinRead says "nobody
// reads the twin" and the .gz is not left out; its head (1,000 bytes) is
// shorter than the held A's fingerprint (4 KiB), so skipGz does not tell
// it for A; it does not end cleanly: noted torn. A is read to its end and
// closed (rotateWait). gzip finishes (same inode) and unlinks app.log.1:
// retryTorn finds the .gz whole, no twin any more, not held: read beside
// the current file — every line of A delivered twice (DESIGN §4: a .gz
// whose plain twin still exists is "never read as well as its twin"). The
// parent rule left the .gz out while app.log.1 existed (never noted torn),
// and the scan after gzip finished matched its full head to A: read once.
func TestRev25BRAGzOnlyNamesRunningCompressTornReadAgainAfterItsTwinClosed(t *testing.T) {
	t.Parallel()
	r := rev25bGzipWhileHeld(t, 1000, true) // gzip running, its first 1,000 bytes flushed
	gs := r.rec.all()
	if d := rev25bDup(gs); len(d) > 0 || len(gs) != 1010 {
		t.Errorf("%d lines delivered (want 1010), %d of them more than once (e.g. %q): app.log.1.gz, A compressed while the source held A, read again once gzip finished",
			len(gs), len(d), d[:min(3, len(d))])
	}
	if n := r.src.LostTails(); n != 0 {
		t.Errorf("lostTails %d, want 0", n)
	}
}

// rev25bGrownThenCompressed: a running rig (default rotatedNames) whose
// file A ("a" lines, 160 bytes: shorter than a fingerprint) is rotated to
// app.log.1 beside a new app.log (B, "b" lines); the application writes 10
// more lines to A after the source saw the rotation (noteSeen took A's
// first bytes then: 160 of them), which the source reads (downgraded or
// not); then A is compressed (app.log.1.gz, 240 decompressed bytes,
// app.log.1 unlinked) and closed by the source (rotateWait).
func rev25bGrownThenCompressed(t *testing.T) *rig {
	t.Helper()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 300 * time.Millisecond})
	appendTo(t, r.path, numbered("a", 0, 20)...)
	r.start()
	r.waitLines(20)
	r.waitSettled()
	mustRename(t, r.path, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)
	r.waitLines(30)                                    // the rotation seen (noteSeen: A's 160 bytes)
	appendTo(t, r.path+".1", numbered("a", 20, 10)...) // the application not reopened yet
	r.waitLines(40)
	gzipFile(t, r.path+".1")
	time.Sleep(800 * time.Millisecond) // A closed: rotateWait past its last growth
	return r
}

// B (new with this change; running, default rotatedNames): A, rotated and
// grown after the source saw it, compressed to app.log.1.gz and closed
// (rev25bGrownThenCompressed); then, delaycompress switched on (review 24d
// B's configuration, while running), the next rotation renames B to a
// plain app.log.1 beside A's .gz, and C appears at app.log. The source
// sees C and scans (queueLater): app.log.1 is B (held: skipped);
// app.log.1.gz's namesake is no twin (its first bytes are B's), so the
// .gz is no longer left out; its identity is not in genSeen (made after
// the last noteSeen) and skipGz does not tell it for A: genSeen holds A's
// first 160 bytes (taken when the rotation was seen, never refreshed) and
// the .gz's head is 240 bytes; nothing held has them. Its mtime is past
// B's last write: queued as a later generation — A's 30 lines delivered
// twice. The parent rule left it out (a plain file of its name). (The
// same stale catalogue reads it twice without a namesake: C, older.)
func TestRev25BRBRunningGzOfAGrownGenerationBesideANonTwinNamesakeReadTwice(t *testing.T) {
	t.Parallel()
	r := rev25bGrownThenCompressed(t)
	mustRename(t, r.path, r.path+".1") // B, plain, beside A's .gz (delaycompress)
	gs := rev25bMakeC(t, r)
	if d := rev25bDup(gs); len(d) > 0 || len(gs) != 50 {
		t.Errorf("%d lines delivered (want 50), %d of them more than once (e.g. %q): app.log.1.gz (A, read while running) read again as a later generation beside the non-twin app.log.1",
			len(gs), len(d), d[:min(3, len(d))])
	}
}

// C (older: fails with the parent rule too; the stale catalogue B rides
// on): the same A, compressed and closed (rev25bGrownThenCompressed); the
// next rotation is logrotate's ordinary shift — app.log.1.gz to
// app.log.2.gz, then B to app.log.1 — and C appears at app.log. No file
// of the .gz's name is beside it, so both rules look at it: its head (240
// bytes) is not the 160 bytes genSeen took of A, and A is closed: read
// again as a later generation. noteSeen keeps a plain generation's first
// bytes as they were when first seen (note: an entry already there only
// gets its look), and genNames' refresh stops once the plain file is
// unlinked by its compressor; a file the application wrote on after the
// rotation has a .gz no fingerprint in the catalogue matches.
func TestRev25BRCRunningGzOfAGrownGenerationShiftedReadTwice(t *testing.T) {
	t.Parallel()
	r := rev25bGrownThenCompressed(t)
	mustRename(t, r.path+".1.gz", r.path+".2.gz")
	mustRename(t, r.path, r.path+".1")
	gs := rev25bMakeC(t, r)
	if d := rev25bDup(gs); len(d) > 0 || len(gs) != 50 {
		t.Errorf("%d lines delivered (want 50), %d of them more than once (e.g. %q): app.log.2.gz (A, read while running) read again as a later generation",
			len(gs), len(d), d[:min(3, len(d))])
	}
}

// A2 (new with this change; A at the moment gzip has just created its
// output): as A, but the scan finds app.log.1.gz empty (gzip opened it and
// has written nothing yet: GNU gzip's first write is a 16 KiB buffer of
// compressed bytes, so an empty or a large .gz is what a running
// compressor shows). gzTwin takes any file of its name for the twin
// (too short to tell), but twinRead wants the twin read instead: app.log.1
// is no generation name ("app.log.*.gz"), so the .gz is not left out;
// gzHead fails: noted torn. gzip takes longer than rotateWait (a large
// log), A is closed; once the .gz ends cleanly retryTorn reads it beside
// the current file: A's lines twice.
func TestRev25BRA2GzOnlyNamesRunningCompressJustBegunReadAgain(t *testing.T) {
	t.Parallel()
	r := rev25bGzipWhileHeld(t, 0, false) // gzip begun, nothing written
	gs := r.rec.all()
	if d := rev25bDup(gs); len(d) > 0 || len(gs) != 1010 {
		t.Errorf("%d lines delivered (want 1010), %d of them more than once (e.g. %q): app.log.1.gz, A compressed while the source held A, read again once gzip finished",
			len(gs), len(d), d[:min(3, len(d))])
	}
	if n := r.src.LostTails(); n != 0 {
		t.Errorf("lostTails %d, want 0", n)
	}
}

// A3 (new with this change; A's configuration, the compression failing):
// rotatedNames "app.log.*.gz"; A (read by the source) is renamed to
// app.log.1 and gzip begins app.log.1.gz; the new app.log appears and the
// source's scan notes the .gz torn (its namesake app.log.1 is no
// generation name: not "read instead"). gzip then fails (ENOSPC: GNU gzip
// unlinks its partial output and keeps its input): app.log.1.gz is gone,
// app.log.1 — every line of it delivered — stays. retryTorn finds the torn
// .gz gone with no twin read instead (twinRead: still no generation name)
// and counts a lost tail, "its lines were never read": lossless false over
// no loss (every line of A was delivered). The parent rule saw app.log.1
// beside it (never noted torn; and a torn one with a file of its name was
// dropped uncounted).
func TestRev25BRA3GzOnlyNamesRunningCompressFailsCountedLostOverNoLoss(t *testing.T) {
	t.Parallel()
	r := rev25bGzJustBegun(t)
	time.Sleep(300 * time.Millisecond)
	if err := os.Remove(r.path + ".1.gz"); err != nil { // gzip failed: its output removed, app.log.1 kept
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	r.waitSettled()
	gs := r.rec.all()
	if d := rev25bDup(gs); len(d) > 0 || len(gs) != 1010 {
		t.Errorf("%d lines delivered (want 1010), %d more than once", len(gs), len(d))
	}
	if n := r.src.LostTails(); n != 0 {
		t.Errorf("lostTails %d (detail %q), want 0: every line of app.log.1 was delivered; only its failed compression's output went away",
			n, r.src.Detail())
	}
}

// D (older: the parent rule drops it too; retryTorn, a namesake appearing
// between polls): running, default rotatedNames. A .gz is being written
// in beside the input (app.log.1.gz: its gzip header so far, 3 "z" lines
// to come — a pipeline, or a compressor whose input is elsewhere) while A
// is rotated to app.log.2 and B made at app.log: the scan notes the .gz
// torn (no file of its name). Then B is rotated to a plain app.log.1
// (delaycompress naming) and C made. At the next poll retryTorn asks
// twinRead: gzTwin takes any file of its name for the twin while the .gz
// is too short to tell, app.log.1 is a generation name: "its twin is the
// generation" — the torn entry is dropped. The .gz then ends cleanly:
// nobody reads its 3 lines (the next scan skips it: genSeen has its
// identity), nothing is counted, lossless.
func TestRev25BRDTornGzNamesakeAppearsDroppedSilentlyLost(t *testing.T) {
	t.Parallel()
	full := rev25aGz(t, rev25Lines(numbered("z", 0, 3)...))
	r, gz := rev25bTornBeside(t, full[:10]) // the gzip header only
	mustRename(t, r.path, r.path+".1")      // B beside the torn .gz
	appendTo(t, r.path, numbered("c", 0, 10)...)
	r.waitLines(30)
	time.Sleep(300 * time.Millisecond)
	rev25bGzEnds(t, gz, full[10:])
	if n := rev25WaitZ(r); n != 3 && r.src.LostTails() == 0 {
		t.Errorf("app.log.1.gz (3 lines, torn when scanned, a plain app.log.1 made beside it before it ended): %d of its lines delivered, lostTails 0 (lossless)", n)
	}
}

// D probe (passes; fixed by this change): D with the torn .gz's first line
// already flushed (its head is "z-00000\n"): app.log.1 (B) made beside it
// is no twin by its first bytes, so retryTorn keeps waiting for it and
// reads it once it ends cleanly. The parent rule dropped it (any file of
// its name): lost silently.
func TestRev25BRDProbeTornGzNonTwinNamesakeAppearsRead(t *testing.T) {
	t.Parallel()
	full, head := rev25bGz(t, rev25Lines(numbered("z", 0, 3)...), len("z-00000\n"))
	r, gz := rev25bTornBeside(t, full[:head]) // its first line flushed
	mustRename(t, r.path, r.path+".1")        // B beside the torn .gz
	appendTo(t, r.path, numbered("c", 0, 10)...)
	r.waitLines(30)
	time.Sleep(300 * time.Millisecond)
	rev25bGzEnds(t, gz, full[head:])
	if n := rev25WaitZ(r); n != 3 && r.src.LostTails() == 0 {
		t.Errorf("app.log.1.gz (3 lines, torn when scanned, a plain app.log.1 made beside it before it ended): %d of its lines delivered, lostTails 0 (lossless)", n)
	}
}

// E (older: the parent rule drops it too; retryTorn, a torn .gz rotated
// on): running, default rotatedNames. A .gz is being written in beside
// the input (app.log.1.gz: its first line flushed, 3 "z" lines in all)
// while A is rotated to app.log.2 and B made at app.log: the scan notes
// the .gz torn (no file of its name). Then a rotation shifts it —
// app.log.1.gz to app.log.3.gz — and B to app.log.1, C made. retryTorn
// asks twinRead about the torn entry's old path first: gzTwin opens
// app.log.1 (B) and cannot read the .gz there (gone) — "too short to
// tell", so B is its twin, a generation name: plain. genMoved finds the
// .gz at app.log.3.gz, but a moved one is kept only when !plain: the
// entry is dropped. The .gz ends cleanly: nobody reads its 3 lines
// (genSeen has its identity), nothing counted. (D probe: at its own path
// the same .gz beside a non-twin B is kept and read.)
func TestRev25BRETornGzRotatedOnBesideANewNamesakeDroppedSilentlyLost(t *testing.T) {
	t.Parallel()
	full, head := rev25bGz(t, rev25Lines(numbered("z", 0, 3)...), len("z-00000\n"))
	r, gz := rev25bTornBeside(t, full[:head])     // its first line flushed
	mustRename(t, r.path+".1.gz", r.path+".3.gz") // shifted on, still being written
	mustRename(t, r.path, r.path+".1")            // B
	appendTo(t, r.path, numbered("c", 0, 10)...)
	r.waitLines(30)
	time.Sleep(300 * time.Millisecond)
	rev25bGzEnds(t, gz, full[head:])
	if n := rev25WaitZ(r); n != 3 && r.src.LostTails() == 0 {
		t.Errorf("app.log.1.gz (3 lines, torn when scanned, shifted to app.log.3.gz and a plain app.log.1 made before it ended): %d of its lines delivered, lostTails 0 (lossless)", n)
	}
}
