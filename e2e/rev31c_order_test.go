package e2e

// Review 31c's finding A fixed: the order per path of the files the
// unread list names across two restarts.

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestRev31COKRotatedTwiceAcrossKills: DESIGN §10 "**Order.** The epoch
// barrier of §4 holds per path: a new file at a path is published after
// every line of the file previously at that path is acknowledged".
// rev31BRotatedWhileDown (z.log.1 = z #0..#2 listed, z.log = z #3, z #4
// never read); the second start queues z.log.1 beside and is killed -9
// once "glob feed started" is logged: the list holds TWO entries of path
// logs/z.log (the listed z.log.1, kept, and the new z.log). While down
// logrotate again: z.log.1 → z.log.2, z.log → z.log.1, a new z.log (z #5).
// Observed before the fix (3/3): every line once, lossless true, but sink order z #0, #1,
// #2, z #5, z #3, z #4: the new z.log published before z.log.1, the file
// previously at the path. Expected z #0..#5 in order.
// Cause: readListedBeside set the path stream's barrier (after) only when
// it had none: the first listed entry of logs/z.log took it, the second
// got no barrier against the new z.log. Fixed (thirty-second session):
// listedOrder chains the files listed under one path oldest first by
// mtime, then the file at the path.
func TestRev31COKRotatedTwiceAcrossKills(t *testing.T) { rev31CRotatedTwice(t, false) }

// TestRev31COKRotatedTwiceAcrossStop: the same with a clean stop of the
// second start (which lists z.log.1 again since the thirty-second session:
// TestRev32ListedBesideStopped).
func TestRev31COKRotatedTwiceAcrossStop(t *testing.T) { rev31CRotatedTwice(t, true) }

// rev31CRotatedTwice: stop — a clean stop of the second start instead
// (the stop lists z.log.1 again under logs/z.log since the thirty-second
// session, as a kill leaves it listed).
func rev31CRotatedTwice(t *testing.T, stop bool) {
	e := newEnv(t, rev31BManyTmpl)
	rev31BRotatedWhileDown(t, e) // z.log.1: z #0..2, z.log: z #3, z #4
	d := e.start()
	waitUntil(t, "the start over", 20*time.Second, func() bool { return strings.Contains(d.log(), "glob feed started") })
	if stop {
		d.stop()
	} else {
		d.kill()
	}
	if n := rev31BCounts(e); n["z #0"] > 0 || n["z #3"] > 0 {
		t.Skip("z read before the kill")
	}
	lb, _ := os.ReadFile(e.path("state/feeds/app/unread.list"))
	t.Logf("list after the second run: z entries: %v", rev31CGrep(string(lb), "z.log"))
	z := e.path("logs/z.log")
	if err := os.Rename(z+".1", z+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(z, z+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, z, "z #5\n")
	d = e.start()
	d.waitFor("settled", 90*time.Second, func(r *report) bool { return r.Settled })
	waitUntil(t, "z #5", 20*time.Second, func() bool { return rev31BCounts(e)["z #5"] > 0 })
	time.Sleep(time.Second)
	r, _ := d.status()
	order := rev31CZOrder(e)
	t.Logf("z in the sink: %v lossless %v lostTails %d; ledger naming z.log: %v", order, r.Lossless, r.Feeds[0].LostTails, rev31ALossesNaming(e, "z.log"))
	want := []string{"z #0", "z #1", "z #2", "z #3", "z #4", "z #5"}
	if strings.Join(order, ",") != strings.Join(want, ",") || !r.Lossless {
		t.Errorf("z in the sink %v, want %v; lossless %v lostTails %d", order, want, r.Lossless, r.Feeds[0].LostTails)
	}
}
