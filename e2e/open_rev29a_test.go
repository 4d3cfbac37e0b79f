//go:build openfindings

package e2e

// Review 29a's finding kept open (run with -tags openfindings): a glob
// stream stopped as inactive while it owes its first commit, copytruncated
// live with no copy, counts a lost tail though every line was read before
// the cut and acknowledged after it (an overcount: lossless false over no
// loss). Parked: the glob's look does not note the cut of a stream still
// stopping (its source's read position is its own), and the fix touches
// the glob's stop path; stated in README.

import (
	"bytes"
	"os"
	"sync"
	"testing"
	"time"
)

// TestRev29AXGlobClosedOwingLiveCutOvercount — a glob file adopted while
// empty, 20 lines (540 bytes) delivered and read to the end, not yet
// acknowledged (no pull client yet); its stream is stopped as inactive
// (closeInactiveMillis 400) owing its first commit; logrotate copytruncate
// with no copy (rotate 0) while it is stopped, 10 new lines; then a pull
// client acknowledges everything. Every one of the 20 lines was read
// before the cut (held in the queues) and is acknowledged: nothing was
// lost.
//
// DESIGN §4 "Nothing green over a loss": "a live truncation with no copy
// found counts `size last seen − read position` in `lostBytes` and one
// lost tail when that is positive" (here 540 − 540 = 0). Expected lossless
// true, lostTails 0. Observed: lostTails 1, lossless false, WARN "input …
// was truncated or rewritten while stopped (pointer offset 540) and no copy
// was found" — an overcount (the lesser kind). Suspected cause: the glob's
// look notes a cut (cutSeen, glob.go:1528) only for a stream stClosed or
// stQueued, not one still stopping while it owes its commit; the owed
// commit then moves the pointer to 540 and the next source of the stream
// (prevSource) takes the cut for one made while tailfeed was stopped
// (open.go:691, `rec.Offset > 0`). Not introduced by aeb6476 (the offset 0
// case it changed is excluded for a later source) but the same branch.
func TestRev29AXGlobClosedOwingLiveCutOvercount(t *testing.T) {
	t.Parallel()
	rev29AClosedOwing(t, false)
}

// As TestRev29AXGlobClosedOwingLiveCutOvercount with the 20 lines in the
// file when the glob adopts it (not aeb6476's empty case: the overcount is
// the glob's, not the first-bytes store's).
func TestRev29AXGlobClosedOwingLiveCutOvercountAdoptedWithContent(t *testing.T) {
	t.Parallel()
	rev29AClosedOwing(t, true)
}

func rev29AClosedOwing(t *testing.T, withContent bool) {
	e := rev29AEnv(t, 400)
	app := e.path("logs/app.log")
	var first []byte
	if withContent {
		first = []byte(rev29AJoin(rev29ALines("a", 20, 20)))
	}
	if err := os.WriteFile(app, first, 0o644); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	d.waitFor("the input opened", 15*time.Second, func(r *report) bool { return r.Feeds[0].State == "CAUGHT_UP" })
	time.Sleep(300 * time.Millisecond)
	once, plain := e.path("out/once.log"), e.path("out/plain.log")
	la := rev29ALines("a", 20, 20)
	if !withContent {
		appendTo(t, app, rev29AJoin(la))
	}
	waitUntil(t, "the a lines applied", 30*time.Second, rev29AHas(once, 20))
	// closeInactiveMillis 400: the caught-up stream is stopped (its
	// lines' acknowledgements owed; files=1 shows it CAUGHT_UP while it
	// owes them, so nothing to poll for).
	time.Sleep(2500 * time.Millisecond)
	rev29ALogrotate(t, e, app, "copytruncate\nrotate 0")
	lc := rev29ALines("c", 10, 20)
	appendTo(t, app, rev29AJoin(lc))
	time.Sleep(500 * time.Millisecond) // let the glob look at the cut file before anything is acknowledged
	p := rev29APuller()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(d.addr, stop) })
	all := append(append([]string(nil), la...), lc...)
	r := d.waitFor("settled with every line acknowledged", 30*time.Second, func(r *report) bool {
		b, _ := os.ReadFile(plain)
		if !r.Settled || !bytes.Contains(b, []byte("c-009")) {
			return false
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range all {
			if p.acked[l] == 0 {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
	f := r.feed(t, "app")
	got := rev29ACount(once)
	for _, l := range all {
		if got[l] != 1 {
			t.Errorf("exactlyOnce sink holds %q %d times, want 1", l, got[l])
			break
		}
	}
	p.mu.Lock()
	if len(p.bad) > 0 {
		t.Errorf("%d pull ids naming two lines", len(p.bad))
	}
	p.mu.Unlock()
	if !f.Lossless || f.LostTails != 0 {
		t.Errorf("nothing was lost: want lossless, got lossless %v lostTails %d detail %v", f.Lossless, f.LostTails, f.Detail)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("log: %s", tail(d.log(), 3000))
	}
}
