package daemon

import (
	"errors"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/internal/datadir"
	"tailfeed/pointer"
	"tailfeed/sink/file"
	"tailfeed/status"
)

// faultyLossFile fails every append and fsync of the losses ledger while
// failing is set.
type faultyLossFile struct {
	LossFile
	failing *atomic.Bool
}

var errLossInjected = errors.New("injected losses ledger fault")

func (f faultyLossFile) Write(p []byte) (int, error) {
	if f.failing.Load() {
		return 0, errLossInjected
	}
	return f.LossFile.Write(p)
}

func (f faultyLossFile) Sync() error {
	if f.failing.Load() {
		return errLossInjected
	}
	return f.LossFile.Sync()
}

func wrapFaultyLoss(failing *atomic.Bool) func(LossFile) LossFile {
	return func(f LossFile) LossFile { return faultyLossFile{f, failing} }
}

// dropConfig: a best-effort tap (DROP_AFTER_SPIN, queueCapacity 1) that
// tests swap for a blocker, next to a discard subscriber that lets the
// pointer run on.
const dropConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame}
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: %DIR%/app.log
    queueCapacity: 1
    pollIntervalMillis: 20
    commitSyncMillis: 1
    overload:
      subscribers: {tap: {policy: DROP_AFTER_SPIN, spinBoundMillis: 1}}
processors:
  - {name: tap, feed: app, type: discard}
  - {name: f, feed: app, type: discard}
`

func ledgerAmount(t *testing.T, dir, counter string) uint64 {
	var n uint64
	for _, e := range readLedger(t, dir) {
		if e.Counter == counter {
			n += e.Amount
		}
	}
	return n
}

// DESIGN §7 "Every counted loss is also appended (fsynced) to
// dataDir/losses.jsonl": a drop is in the ledger before the pointer
// commits past it (a kill -9 in between must not leave the line passed and
// the loss unrecorded). While the ledger cannot be written, the pointer
// passes no dropped line: at most the two lines the tap holds (one in its
// call, one queued; best-effort, they never hold the pointer). Once it can,
// the pointer moves on and the ledger counts every line it passed that the
// tap did not take.
func TestDropIsLedgeredBeforeThePointerPassesIt(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	failing.Store(true)
	tap := newBlocker()
	defer close(tap.open)
	e := startIn(t, dir, dropConfig, Options{
		Processors:   map[string]Build{"tap": tap.build},
		WrapLossFile: wrapFaultyLoss(&failing),
	})
	const n = 2000
	const lineLen = int64(len("d-000000\n"))
	e.appendLines(numbered("d-", 0, n)...)
	e.waitFor("every line read, drops counted", 10*time.Second, func(f status.FeedReport) bool {
		return f.Sequence == n && f.Dropped > 0
	})
	ptr := datadir.Pointer(filepath.Join(dir, "state"), "app")
	deadline := time.Now().Add(300 * time.Millisecond) // many commit cycles (commitSyncMillis 1)
	for time.Now().Before(deadline) {
		rec, err := pointer.Inspect(ptr)
		if err == nil && rec.Offset > 2*lineLen {
			t.Fatalf("the losses ledger fails, yet the pointer passed %d lines (the tap holds at most 2): %d dropped lines passed with no ledger entry",
				rec.Offset/lineLen, rec.Offset/lineLen-2)
		}
		time.Sleep(5 * time.Millisecond)
	}

	failing.Store(false)
	waitFor(t, "the pointer at the end", 10*time.Second, func() bool {
		rec, err := pointer.Inspect(ptr)
		return err == nil && rec.Offset == e.inputSize()
	})
	if got := ledgerAmount(t, dir, "dropped"); got < n-2 {
		t.Fatalf("the pointer passed %d lines, the tap took at most 2; the ledger counts %d dropped", n, got)
	}
}

// A release is in the ledger when POST /admin/release answers, after a
// DELETE /admin/losses too (the answer is the operator's proof that the
// loss is recorded; a kill -9 right after it must not make the next run
// lossless).
func TestReleaseIsLedgeredWhenAnswered(t *testing.T) {
	dir := t.TempDir()
	var sinkFailing atomic.Bool
	opts := Options{Processors: map[string]Build{"archive": faultySink(&sinkFailing, file.FsyncNever)}}
	e := startIn(t, dir, holdConfig, opts)
	for round := range 3 {
		sinkFailing.Store(true)
		e.appendLines(numbered("r", round, 1)...)
		e.waitFor("stalled", 10*time.Second, stalled)
		if code, body := e.release("app", "archive"); code != http.StatusOK {
			t.Fatalf("round %d: release: %d %v", round, code, body)
		}
		if got := ledgerAmount(t, dir, "released"); got != 1 {
			t.Fatalf("round %d: POST /admin/release answered 200; losses.jsonl counts %d released lines, want 1", round, got)
		}
		sinkFailing.Store(false)
		e.waitFor("settled", 10*time.Second, settled)
		if code, body := e.do(http.MethodDelete, "/admin/losses/app", "sesame"); code != http.StatusOK {
			t.Fatalf("round %d: DELETE /admin/losses/app: %d %s", round, code, body)
		}
	}
}

func waitFor(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
