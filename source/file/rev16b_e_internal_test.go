// Review 16b, finding E: found and fixed in the sixteenth session.

// Review 16b, finding E (9b68b88: forget() forgets a watched stream — its
// pointer deleted, dropped from tracking — and lookWatched starts it again).

package file

import (
	"os"
	"testing"
	"time"
)

// Scenario: a stream watched out of the glob (watchedOut with
// rotateWaitMillis 4 s, forgetAfterMillis 1.5 s: w.log renamed to w.log.1,
// read there, closed within rotateWait of its last growth to give a.log
// the only slot). The file went from the glob more than forgetAfter ago
// (in production: an application never told to reopen its log writes on
// into the renamed file for a day, read beside its path the whole time,
// and gives its slot up under maxOpenFiles), so forget() — which looks at
// gone, closed streams by goneAt and does not know watchOut — deletes its
// pointer and drops it from byKey while it is watched. The writer appends
// w-5: lookWatched, still holding it, queues it; its new source, with no
// pointer, reads w.log.1 from its start under a new epoch: w-0..w-4 (read,
// acknowledged and committed before) are delivered again. And the running
// stream is in no status: not in byKey, so filesTracked/filesOpen leave it
// out and the feed reports CAUGHT_UP while it reads.
// DESIGN §2: at-least-once, the only re-deliveries are a crash's
// uncommitted lines and a restored sink's catch-up; §10 "A file renamed
// out of the glob is read to its end (rotateWaitMillis after its last
// growth), then closed", "Forgetting: the pointer of a stream whose file
// is gone, was read to its end ... is deleted after forgetAfterMillis"
// (this one is not done with its file); §10 Status: filesOpen.
// Expected: w-5 delivered once, nothing else again. Observed: w-0, w-1,
// w-2, w-4 delivered again with w-5; filesOpen 0, CAUGHT_UP while the
// forgotten stream is open: 4 of 4. Cause: forget (glob.go:2948) does
// not skip s.watching; lookWatched (glob.go:2925-2929) does not check
// that s is still tracked (g.byKey[s.key] == s) before enqueue.
func TestRev16BEWatchedStreamForgottenThenGrownReadAgainFromStart(t *testing.T) {
	t.Parallel()
	ig, s, _, moved, stop := watchedOutCfg(t, 4*time.Second, func(c *GlobConfig) { c.ForgetAfter = 1500 * time.Millisecond })
	defer stop()
	ig.g.mu.Lock()
	key, ptr := s.key, s.ptrPath
	ig.g.mu.Unlock()
	ig.waitFor(t, "w.log.1's stream forgotten by forget() while watched", func() bool { return ig.g.byKey[key] != s })
	_, perr := os.Stat(ptr)
	ig.g.mu.Lock()
	watching := s.watching && s.st == stClosed
	ig.g.mu.Unlock()
	if !watching {
		t.Skip("not watched any more when it was forgotten")
	}
	appendTo(t, moved, "w-5\n")
	got := map[string]int{}
	var open bool
	var st State
	var c GlobCounts
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		for k, v := range ig.popLines(10 * time.Millisecond) {
			got[k] += v
		}
		ig.g.mu.Lock()
		o := s.st == stOpen
		ig.g.mu.Unlock()
		if o && !open {
			open = true
			st, c = ig.g.StateCounts()
		}
	}
	tails, _, _ := ig.lost()
	t.Logf("forgotten while watched (pointer stat: %v); after w-5: delivered %v; the forgotten stream opened again: %v (feed then %v, %+v); lostTails %d",
		perr, got, open, st, c, tails)
	again := 0
	for k, v := range got {
		if k != "w-5" {
			again += v
		}
	}
	if got["w-5"] != 1 || again > 0 {
		t.Errorf("w-5 appended to w.log.1 (renamed out of the glob, watched, its pointer forgotten meanwhile by forget()): delivered %v — %d lines read, acknowledged and committed before delivered again; want w-5 once and nothing else",
			got, again)
	}
}
