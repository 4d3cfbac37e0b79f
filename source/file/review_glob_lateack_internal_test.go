package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/pointer"
)

// Review (closefix: "a glob stream closed with unacknowledged lines keeps a
// commit obligation"). closed() decides the obligation from sp.Pending()
// and the source's CommitOK. A stream's drain gives up after drainBound
// with lines unacknowledged, its Close syncs what it had, and the stopped
// stream waits in g.stopped for the manager. If the acknowledgements of the
// remaining lines reach the mux in between (the pump hands them to the
// streamPub: pending 0, sp.ack set), closed() sees pending 0 and CommitOK
// true: no obligation is kept, the streamPub leaves the mux with its
// acknowledgement unpolled, and the pointer stays behind lines every
// subscriber acknowledged, for good, while the feed reports CommitOK and
// SyncedSeq == acknowledged (settled). A kill -9 re-delivers them.
//
// The manager being busy (holding g.mu) is simulated by the test holding
// g.mu between the close and the acknowledgement.
func TestReviewGlobLateAckBeforeClosedIsNeverCommitted(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	var sb strings.Builder
	for i := range 5 {
		fmt.Fprintf(&sb, "line-%d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	size := int64(sb.Len())
	q := feed.NewQueue("rec", 4096, 8<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("f", []*feed.Queue{q}, 65536, 512)
	ptrDir := filepath.Join(data, "feeds", "f")
	g, err := NewGlob(GlobConfig{
		Stream: Config{Feed: "f", Path: filepath.Join(dir, "*.log"), Strategy: Committed, Poll: 50 * time.Millisecond,
			RotateWait: 200 * time.Millisecond, CommitSync: 5 * time.Millisecond, BatchLines: 512, Outputs: []string{data}},
		PointerDir:    ptrDir,
		EpochsPath:    filepath.Join(data, "feeds", "f.epochs"),
		ScanInterval:  100 * time.Millisecond,
		MaxOpenFiles:  16,
		CloseInactive: 300 * time.Millisecond,
		ForgetAfter:   time.Minute,
	}, pub)
	if err != nil {
		t.Fatal(err)
	}
	g.drainBound = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
		dctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		g.Drain(dctx)
		c()
		g.Close()
	}()

	taken := uint64(0)
	for end := time.Now().Add(10 * time.Second); taken < 5; {
		if time.Now().After(end) {
			t.Fatalf("%d lines taken in 10 s, want 5", taken)
		}
		b := q.TryPop()
		if b == nil {
			time.Sleep(time.Millisecond)
			continue
		}
		taken += uint64(b.Len())
		b.Release()
	}
	// Wait for the inactive close to begin, then keep the manager busy.
	stopping := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, s := range g.byKey {
			if s.st == stStopping {
				return true
			}
		}
		return false
	}
	for end := time.Now().Add(10 * time.Second); !stopping(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the stream was not closed for inactivity in 10 s")
		}
	}
	g.mu.Lock()
	time.Sleep(600 * time.Millisecond) // the drain gives up (200 ms), Close syncs, the stream waits in g.stopped
	q.AddDispatched(taken)             // the subscriber finishes the lines
	pub.Poke()
	for end := time.Now().Add(5 * time.Second); pub.Pending() != 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			g.mu.Unlock()
			t.Fatalf("acknowledgement not polled in 5 s (pending %d)", pub.Pending())
		}
	}
	g.mu.Unlock()

	time.Sleep(1500 * time.Millisecond) // several housekeeping ticks: an owed commit would be made by now
	ptrs, _ := filepath.Glob(filepath.Join(ptrDir, "*.ptr"))
	if len(ptrs) != 1 {
		t.Fatalf("stream pointers %v, want one", ptrs)
	}
	rec, err := pointer.Inspect(ptrs[0])
	if err != nil {
		t.Fatal(err)
	}
	ok, synced, acked := g.CommitOK(), g.SyncedSeq(), pub.Acknowledged()
	if rec.Offset < size {
		t.Errorf("every line acknowledged (acknowledged %d, pending %d) 1.5 s ago, the stream closed: its pointer records offset %d of %d bytes; status CommitOK %v, SyncedSeq %d (settled: %v)",
			acked, pub.Pending(), rec.Offset, size, ok, synced, ok && synced >= acked)
	}
}
