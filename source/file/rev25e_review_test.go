package file_test

// Review 25e (the twenty-fifth session's latest round, 79154bc..5ffd3a3,
// and its interactions across the session d78bdda..5ffd3a3).
// go test -count=1 -run 'TestRev25ER' ./source/file
// B (new with that round) and B2 (older) failed on the reviewed code;
// fixed in the twenty-fifth session: a .gz's first bytes tell its twin only
// when they cover the twin's (all of them, or 4 KiB) or the .gz is whole
// (gzTwinTold) — a header prefix of a .gz still being written no longer
// does. A, A2 (older: a header-only generation's .gz taken for a seen
// header-only file) parked: open_rev25e_test.go.

import (
	"os"
	"testing"
	"time"
)

// B (new with the latest round — passes with retryTorn's told-twin
// "continue" disabled: retryTorn's heldTwin told by bytes — passes
// at 79154bc, where heldTwin was looked at only once the .gz was gone;
// fails at d78bdda too, where any file of its name was the twin; a silent
// loss): rotatedNames "app.log.*.gz" (review 25d C's configuration),
// running. Every file the application writes starts with the header line
// "# app started". A (header + "a" lines) is renamed to app.log.1 and read
// to its end, B to app.log.3; meanwhile another writer (the C2 scenario's
// writer, a streaming compressor such as pigz or an application writing
// its own .gz, flushing at each line) begins app.log.1.gz for a different
// generation: header bytes only at the scan (too short to tell: heldTwin =
// A), then its first line flushed — the header, which A starts with too.
// retryTorn's gzTwinTold compares only the bytes the torn .gz decompresses
// to so far: "# app started\n" is A's first 14 bytes, "told" A's twin —
// the .gz is dropped from the torn list for good, though it is still being
// written. It then completes with its "z" lines (no twin of A: A holds "a"
// lines) and is never looked at again: its lines neither read nor counted,
// lostTails 0 (lossless). A prefix of a still-torn .gz tells a twin only
// when it covers as much as A has (or the whole fingerprint) — the rule
// seenHead keeps; here one shared line was enough.
func TestRev25ERBTornGzToldTwinByAHeaderPrefixDropped(t *testing.T) {
	t.Parallel()
	rev25eTornHeaderPrefix(t, false)
}

// B2 (B at the scan: older — fails at 79154bc and at d78bdda too, where
// any file of its name was the twin; the same root as B, a prefix
// "telling" a torn .gz's twin): as B, but the .gz's first line (the
// shared header) is already flushed when the rotation's scan meets it.
// twinRead's gzTwinTold tells it A's twin by that prefix; the scan leaves
// it out of the generations ("read instead") and never tracks it as torn:
// it completes with its "z" lines, neither read nor counted.
func TestRev25ERB2TornGzAtTheScanToldTwinByAHeaderPrefix(t *testing.T) {
	t.Parallel()
	rev25eTornHeaderPrefix(t, true)
}

// rev25eTornHeaderPrefix: B's scenario; atScan: the header already
// flushed when the scan meets the .gz.
func rev25eTornHeaderPrefix(t *testing.T, atScan bool) {
	const hdr = "# app started"
	r := rev25TwoGens(t, hdr)
	z := rev25Lines(append([]string{hdr}, numbered("z", 0, 3)...)...)
	full, torn := rev25bGz(t, z, len(hdr)+1)
	first := full[:10] // the gzip header only
	if atScan {
		first = full[:torn]
	}
	if err := os.WriteFile(r.path+".1.gz", first, 0o644); err != nil {
		t.Fatal(err)
	}
	rev25ThirdGen(t, r, hdr)                                                 // B rotated, C; the scan noted the .gz torn
	if err := os.WriteFile(r.path+".1.gz", full[:torn], 0o644); err != nil { // its first line (the header) flushed (same inode)
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := os.WriteFile(r.path+".1.gz", full, 0o644); err != nil { // completed
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	r.waitSettled()
	if testing.Verbose() {
		t.Logf("log:\n%s", r.logs.String())
	}
	if n := rev25WaitZ(r); n != 3 && r.src.LostTails() == 0 {
		t.Errorf("app.log.1.gz (header + 3 z lines, written beside the read app.log.1, completed): %d of its z lines delivered, lostTails 0 (lossless)", n)
	}
}

// Probe (passes; the flip side of B, for a fix to keep): the .gz IS A's
// compressor's output, written by a streaming compressor flushing as it
// goes — header bytes at the scan (heldTwin = A), its first line flushed,
// then complete, then A unlinked (gzip's order). Every line once, nothing
// counted.
func TestRev25ERProbeStreamingCompressorOfTheReadFile(t *testing.T) {
	t.Parallel()
	const hdr = "# app started"
	a := append([]string{hdr}, numbered("a", 0, 10)...)
	r := rev25TwoGens(t, hdr)
	full, torn := rev25bGz(t, rev25Lines(a...), len(hdr)+1)
	if err := os.WriteFile(r.path+".1.gz", full[:10], 0o644); err != nil {
		t.Fatal(err)
	}
	rev25ThirdGen(t, r, hdr)
	if err := os.WriteFile(r.path+".1.gz", full[:torn], 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := os.WriteFile(r.path+".1.gz", full, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(r.path + ".1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	r.waitSettled()
	gs := r.rec.all()
	c := counts(gs)
	dup := 0
	for l, n := range c {
		if n > 1 && l != hdr {
			dup++
		}
	}
	if dup > 0 || c[hdr] != 3 || len(gs) != 33 || r.src.LostTails() != 0 {
		t.Errorf("%d lines delivered (want 33: the header 3 times), %d more than once, lostTails %d (want 0)", len(gs), dup, r.src.LostTails())
	}
}
