package processor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// releaseSink fails on a line starting "bad" (the group retries it and,
// at a release, gives it up: abandon) and retries a line starting "down"
// itself, fenced, until a release, which it gives up with GiveUpTail
// together with the rest of its batch (as postgres and kafka do while
// their engine is down).
type releaseSink struct{ h processor.Host }

func (s *releaseSink) ProcessBatch(ctx context.Context, b *feed.Batch) (int, error) {
	for i, l := range b.Lines {
		switch {
		case strings.HasPrefix(string(l), "bad"):
			return i, errors.New("bad line")
		case strings.HasPrefix(string(l), "down"):
			s.h.Fence(errors.New("engine down"))
			for {
				rel, ok := s.h.Wait(ctx, 5*time.Millisecond)
				if !ok {
					return i, ctx.Err()
				}
				if rel != nil {
					s.h.GiveUpTail(rel, uint64(len(b.Lines)-i))
					return len(b.Lines), nil
				}
			}
		}
	}
	return len(b.Lines), nil
}

// OnRelease gets the released lines' range: the epoch, the end of the
// last line handed over before them (in the same batch, or the previous
// one), and the end of the last released line — for a line the group
// gives up and for a sink's GiveUpTail alike.
func TestOnReleaseRecordsTheReleasedRange(t *testing.T) {
	type rng struct {
		epoch          uint64
		after, through int64
	}
	var mu sync.Mutex
	var got []rng
	sink := &releaseSink{}
	r := grouptest.New(t, processor.GroupConfig{Batch: sink, Retry: grouptest.FastRetry(2), OnFailure: processor.Hold,
		OnRelease: func(e uint64, after, through int64) {
			mu.Lock()
			got = append(got, rng{e, after, through})
			mu.Unlock()
		}})
	sink.h = r.G
	r.Run()
	release := func(want uint64) {
		t.Helper()
		grouptest.WaitFor(t, "fenced", func() bool { st, _ := r.Q.State(); return st == feed.Fenced })
		n, err := r.G.Release(context.Background())
		if err != nil || n != want {
			t.Fatalf("release = %d, %v; want %d", n, err, want)
		}
	}
	r.Publish("a-1", "a-2")               // ends 4, 8
	r.Publish("a-3", "bad-4", "a-5")      // ends 12, 18, 22
	release(1)                            // bad-4: after a-3 (12), through 18
	r.WaitAck(5, 5*time.Second)           //
	r.Publish("down-6", "c-7")            // ends 29, 33: the first line of its batch
	release(2)                            // after a-5 (22), through 33
	r.WaitAck(7, 5*time.Second)           //
	r.Publish("c-8", "down-9", "down-10") // ends 37, 44, 52
	release(2)                            // after c-8 (37), through 52
	r.WaitAck(10, 5*time.Second)
	mu.Lock()
	defer mu.Unlock()
	want := []rng{{0xe1, 12, 18}, {0xe1, 22, 33}, {0xe1, 37, 52}}
	if len(got) != len(want) {
		t.Fatalf("OnRelease calls %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("OnRelease calls %v, want %v", got, want)
		}
	}
}
