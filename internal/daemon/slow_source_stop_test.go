package daemon

import (
	"os"
	"path/filepath"
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
	tap := newBlocker()
	h := newHungLedger(t, slowSourceConfig, map[string]Build{"tap": tap.build})
	e := h.e
	e.appendLines(numbered("t-", 0, 300000)...)
	for by := time.Now().Add(5 * time.Second); tap.entered.Load() == 0 && time.Now().Before(by); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the window full, the source paused, its look saw the size
	h.hang.Store(true)
	if err := os.Truncate(e.input, 0); err != nil {
		t.Fatal(err)
	}
	h.waitEntered(t, "after the truncation (the source counting its loss)")
	close(tap.open) // the subscriber goes on; the source is in the ledger's fsync
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

const slowSourceConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 4000
feeds:
  - name: app
    path: %DIR%/app.log
    queueCapacity: 4
    maxPendingAcks: 8
    pollIntervalMillis: 20
    commitSyncMillis: 1
processors:
  - {name: tap, feed: app, type: discard}
`
