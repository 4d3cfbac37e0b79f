package e2e

// Review 33a: a file listed at once (listAtOnce) at a path whose earlier
// file has a pointer (logrotate's new file, queued behind busier ones),
// killed -9 before its first turn and rotated again while down: the
// restart finds it both beside the list's path and as a later generation
// of the path's pointer. Each line once, nothing counted.

import (
	"os"
	"testing"
	"time"
)

func TestRev33AXListedNewFileOfPointedPathRotatedWhileDown(t *testing.T) {
	e := newEnv(t, rev31BManyTmpl)
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := e.path("logs/a.log")
	appendTo(t, a, "a #0\na #1\na #2\n")
	d := e.start()
	waitUntil(t, "a.log read", 30*time.Second, func() bool { return rev31BCounts(e)["a #2"] > 0 })
	d.waitFor("settled", 30*time.Second, func(r *report) bool { return r.Settled })
	rev31BFiller(t, e, 300)
	time.Sleep(300 * time.Millisecond) // the fillers queued (one slot)
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, "a #3\n")
	k := fileKeyOf(t, a)
	appeared := time.Now()
	for !rev31BListed(t, e, k) && time.Since(appeared) < 800*time.Millisecond {
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("new a.log listed: %v, %v after it appeared", rev31BListed(t, e, k), time.Since(appeared).Round(time.Millisecond))
	d.kill()
	if rev31BCounts(e)["a #3"] > 0 {
		t.Skip("the new a.log read before the kill")
	}
	// While down: logrotate again.
	if err := os.Rename(a+".1", a+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, a+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, "a #4\n")
	rev33ReadOnce(t, e, "f0299 #2", "a.log", "a #0", "a #1", "a #2", "a #3", "a #4")
}
