//go:build openfindings

package e2e

// Review 31b's probe kept open (run with -tags openfindings): a README
// limitation of the running unread list, seen silent in CI.

import (
	"os"
	"testing"
	"time"
)

// TestRev31BXRenamedOutWhileQueuedKilled: a glob feed over 2,000
// filler files and z.log (sorted last, maxOpenFiles 2): while the first
// run reads the fillers, z.log (listed, queued, never opened) is renamed
// z.log.1 (out of the glob); killed -9 once the unread list no longer
// names z.log's key; a second start. Not silent: z.log counted lost
// ("tracked and never read when tailfeed stopped, is gone", lossless
// false) — though z.log.1 is beside its path (judgement: counted, not
// read; a list entry written while the file was gone has no first bytes).
// Parked (thirty-first session): CI on 4fcef6f saw z.log.1's 3 lines
// neither read nor counted (lossless true) — the README limitation of the
// running list: "a waiting file renamed out of the glob (found beside its
// path, still unread) when the kill comes" is not seen; the reviewer's
// runs counted it by timing. Older than the session.
func TestRev31BXRenamedOutWhileQueuedKilled(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BFiller(t, e, 2000)
	z := e.path("logs/z.log")
	appendTo(t, z, "z #0\nz #1\nz #2\n")
	k := fileKeyOf(t, z)
	d := e.start()
	waitUntil(t, "z.log listed", 30*time.Second, func() bool { return rev31BListed(t, e, k) })
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "z.log off the list", 30*time.Second, func() bool { return !rev31BListed(t, e, k) })
	d.kill()
	if rev31BCounts(e)["z #0"] > 0 {
		t.Skip("z.log.1 read before the kill")
	}
	d = e.start()
	waitUntil(t, "the fillers read", 120*time.Second, func() bool { return rev31BCounts(e)["f1999 #2"] > 0 })
	r := d.waitFor("settled", 120*time.Second, func(r *report) bool { return r.Settled })
	time.Sleep(time.Second)
	r, _ = d.status()
	n := rev31BCounts(e)
	t.Logf("z #0 ×%d lostTails %d lossless %v; ledger: %v", n["z #0"], r.Feeds[0].LostTails, r.Lossless, rev31BLedger(e, "z.log"))
	if (n["z #0"] == 0 || n["z #1"] == 0 || n["z #2"] == 0) && r.Lossless {
		t.Errorf("z.log.1 (z #0..#2) delivered %d/%d/%d times, lostTails %d lossless %v", n["z #0"], n["z #1"], n["z #2"], r.Feeds[0].LostTails, r.Lossless)
	}
}
