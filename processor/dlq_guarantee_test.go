package processor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/feed"
)

// letterRequest writes one ledger entry of a webhook request (key, lines).
func letterRequest(t *testing.T, l *Ledger, line string, pos int64, key string, lines int) {
	t.Helper()
	var d feed.Delivery
	d.Reset(&feed.Batch{Feed: "app", Path: "/in.log", Epoch: 0xe1, Positioned: true,
		Lines: [][]byte{[]byte(line)}, Ends: []int64{pos}}, 0)
	if err := l.DeadLetterRequest(&d, 6, fmt.Errorf("x"), key, lines); err != nil {
		t.Fatal(err)
	}
}

// A purge never leaves part of a webhook request in the ledger (where a
// replay would send the part under the request's key): max is rounded up
// to whole requests, as for a replay.
func TestPurgeRemovesWholeRequests(t *testing.T) {
	l, err := OpenLedger(filepath.Join(t.TempDir(), "hook.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	letterRequest(t, l, "a1", 3, "app:00000000000000e1:3-9", 2)
	letterRequest(t, l, "b", 5, "", 0)
	letterRequest(t, l, "a2", 9, "app:00000000000000e1:3-9", 2)
	n, err := l.Purge(1)
	if err != nil || n != 2 {
		t.Fatalf("Purge(1) = %d, %v; want 2 (a1 and a2, one request)", n, err)
	}
	if got := ledgerTexts(t, l); fmt.Sprint(got) != "[b]" {
		t.Fatalf("ledger after the purge %v, want [b]", got)
	}
}

// blockingProc blocks on every line until release is closed.
type blockingProc struct {
	started chan struct{}
	release chan struct{}
}

func (b *blockingProc) Process(ctx context.Context, _ *feed.Delivery) error {
	select {
	case b.started <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A replay answers when its ctx ends, also while the processor is busy
// with a replayed line (the admin call never hangs).
func TestReplayAnswersWhenItsContextEnds(t *testing.T) {
	l, err := OpenLedger(filepath.Join(t.TempDir(), "sink.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var d feed.Delivery
	d.Reset(&feed.Batch{Feed: "app", Path: "/in.log", Epoch: 0xe1, Positioned: true,
		Lines: [][]byte{[]byte("x")}, Ends: []int64{2}}, 0)
	if err := l.DeadLetter(&d, 6, fmt.Errorf("x")); err != nil {
		t.Fatal(err)
	}
	bp := &blockingProc{started: make(chan struct{}, 1), release: make(chan struct{})}
	r := newGRig(t, GroupConfig{Name: "sink", Processor: bp, Retry: fastRetry(1), OnFailure: DeadLetter, Ledger: l})
	r.run()
	defer close(bp.release)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	type out struct {
		res ReplayResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := r.g.Replay(ctx, 10)
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		if !errors.Is(o.err, ErrReplayRunning) || !errors.Is(o.err, ErrReplayIncomplete) || o.res.Remaining != 1 {
			t.Fatalf("replay = %+v, %v; want still running, remaining 1", o.res, o.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the replay did not answer when its context ended")
	}
}
