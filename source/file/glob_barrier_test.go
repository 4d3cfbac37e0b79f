package file_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A glob stream at its epoch barrier (its file truncated while lines of
// the old epoch are unacknowledged) tells the feed's publisher that the
// old epoch ended (a webhook rebuilding a request of it stops waiting for
// its rest) and the feed's detail names the file, since the feed itself
// shows no pause for one stream's barrier; once it is crossed the detail
// clears and the old epoch stays ended.
func TestGlobStreamBarrierEndsItsEpochAndShows(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	z := filepath.Join(dir, "z.log")
	writeLines(t, z, "a", 5)
	r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
	defer r.stop()
	r.hold.Store(true)
	r.waitLines(5, 10*time.Second)
	ep := epochOf(t, r)
	if st := r.pub.EpochState(ep); st.Ended || !st.Open {
		t.Fatalf("before the truncation: %+v, want open, not ended", st)
	}
	if err := os.Truncate(z, 0); err != nil {
		t.Fatal(err)
	}
	writeLines(t, z, "c", 3)
	waitFor(t, "the barrier", 10*time.Second, func() bool { return r.pub.EpochState(ep).Ended })
	if d := r.g.Detail(); !strings.Contains(d, z) || !strings.Contains(d, "epoch switch waits") {
		t.Fatalf("detail %q while the stream waits at its barrier", d)
	}
	r.hold.Store(false)
	r.waitLines(8, 10*time.Second)
	waitFor(t, "the barrier crossed", 10*time.Second, func() bool { return r.g.Detail() == "" })
	if !r.pub.EpochState(ep).Ended {
		t.Fatal("the old epoch no longer ended once the stream went on to the new one")
	}
}

// epochOf is the epoch of the rig's only tracked file.
func epochOf(t *testing.T, r *globRig) uint64 {
	t.Helper()
	fs := r.g.Files()
	if len(fs) != 1 {
		t.Fatalf("files %+v", fs)
	}
	ep, err := strconv.ParseUint(*fs[0].Epoch, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
