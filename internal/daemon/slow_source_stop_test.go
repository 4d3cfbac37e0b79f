package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
)

// A stop waits for a source in a slow step (here: counting a live
// truncation's loss, its ledger fsync taking 1 s, as a loaded disk's does)
// up to half of shutdownTimeoutMillis, and gives it its drain and final
// commit: its pointer is closed (unlocked) when Stop returns. Before, a
// stop waited 500 ms whatever the bound and went on without the source (no
// drain, no final commit: what it read since its last commit read again at
// the next start), its pointer still locked by the run it left — as seen
// under CI's load (internal/daemon TestRev12BAMarksDifferMissesASubscriberThatFinishedNothing:
// "feed's source did not stop", then "app.ptr: locked by pid" at the
// restart).
func TestStopWaitsForASlowSourceStep(t *testing.T) {
	h := rev10TruncHungOn(t, strings.Replace(rev10TruncConfig, "shutdownTimeoutMillis: 300", "shutdownTimeoutMillis: 4000", 1))
	e := h.e
	h.openTap() // the subscriber goes on; the source is in the ledger's fsync
	time.AfterFunc(time.Second, h.release)
	start := time.Now()
	e.Stop()
	took := time.Since(start)
	t.Logf("Stop took %v", took)
	if bound := 4*time.Second + 2*time.Second; took > bound {
		t.Errorf("Stop took %v; DESIGN §12 bound shutdownTimeoutMillis + 2 s = %v", took, bound)
	}
	f, err := os.Open(filepath.Join(e.dir, "state", "feeds", "app.ptr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fileutil.Lock(f); err != nil {
		t.Fatalf("after Stop (%v) the feed's pointer is still locked (%v): the stop went on without the source in a 1 s step — no drain, no final commit", took, err)
	}
	fileutil.Unlock(f)
}
