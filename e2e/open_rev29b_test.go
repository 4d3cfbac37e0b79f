//go:build openfindings

package e2e

// Review 29b's judgement call kept open (run with -tags openfindings): a
// file replaced by a copy of itself (cp + mv, same bytes, a new key) after
// a kill -9 before any commit counts a lost tail though every byte is read
// again under a new epoch (conservative: a writer could have appended to
// the old inode after the copy). Stated in README.

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestRev29BXKillSameBytesNewKeyCounted — DESIGN §4 "A pointer's unread tail
// that cannot be found (deleted, or compressed in a format not read) is
// WARNed ... and counted in lostTails"; §4 the pointer's generation is "the
// file with the pointer's file key and fingerprint, or, when none, a file
// matching the fingerprint alone (a copy ...)"; §7 lostTails counts where
// tailfeed cannot show no line was skipped. app.log (adopted while empty,
// or with its lines: both variants) gets 20 lines, delivered (the change
// stores the first bytes at offset 0 for the empty one), kill -9 before the
// first commit; while stopped the file is replaced by a copy of itself
// (cp + mv: the same bytes under a new key) and 10 lines appended. The
// restart reads the new key from its start under a new epoch (§10 "any
// other new key is a new stream"): every byte is read again, nothing is
// skipped. Observed: lostTails 1, lossless false ("rotated file gone; its
// unread tail is lost" — resumeRotated, open.go:704-739: the file at the path
// is excluded from the copy search for a glob stream given a gone file's
// pointer at a start), and the exactlyOnce sink writes the 20 lines twice
// (new epoch: allowed, never committed). Expected lostTails 0 (overcount).
// Judgement call: §10 makes the new key a new stream; the same happens to
// the pointer adopted with content (so not caused by the change, only
// reached by it for files adopted while empty — before it, such a record
// named no first bytes and was counted the same way, gone0).
func TestRev29BXKillSameBytesNewKeyCounted(t *testing.T) {
	for _, empty := range []bool{true, false} {
		t.Run(fmt.Sprintf("empty=%v", empty), func(t *testing.T) {
			t.Parallel()
			rev29BSameBytes(t, empty)
		})
	}
}

func rev29BSameBytes(t *testing.T, empty bool) {
	r := rev29BNew(t)
	r.create("app.log")
	var as []string
	if !empty {
		as = r.write("app.log", "a", 20)
	}
	d0 := r.e.start()
	d0.waitFor("caught up", 10*time.Second, func(rep *report) bool { return rep.Feeds[0].State == "CAUGHT_UP" })
	if empty {
		time.Sleep(300 * time.Millisecond)
		as = r.write("app.log", "a", 20)
	}
	r.waitOut("once.log", as)
	d0.kill()
	left := r.pointers()
	b, err := os.ReadFile(r.e.path("logs/app.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.e.path("logs/app.tmp"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(r.e.path("logs/app.tmp"), r.e.path("logs/app.log")); err != nil {
		t.Fatal(err)
	}
	cs := r.write("app.log", "c", 10)
	d := r.e.start()
	p, stop := rev29BPull(d)
	f := r.settle(d, cs)
	stop()
	want := append(append([]string(nil), as...), cs...)
	miss, twice := r.missing("once.log", want)
	if len(miss) > 0 {
		t.Errorf("exactlyOnce sink: %d of %d missing (first %q)", len(miss), len(want), rev29BFirst(miss))
	}
	p.mu.Lock()
	if len(p.bad) > 0 {
		t.Errorf("ids naming two lines: %v", p.bad)
	}
	for _, s := range want {
		if p.acked[s] == 0 {
			t.Errorf("pull: %q never acknowledged in the restart", s)
			break
		}
	}
	p.mu.Unlock()
	if !f.Lossless || f.LostTails != 0 {
		t.Errorf("every byte of the replaced file is in its same-content copy at the path, read again from its start: want lossless true, lostTails 0; got lossless %v lostTails %d detail %v (exactlyOnce: %d lines twice)",
			f.Lossless, f.LostTails, f.Detail, len(twice))
	}
	t.Logf("pointers left %+v; exactlyOnce lines twice %d", left, len(twice))
}
