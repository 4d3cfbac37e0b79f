package pull

import (
	"testing"
	"time"

	"tailfeed/internal/grouptest"
	"tailfeed/overload"
	"tailfeed/processor"
)

// TestPullBestEffortCloseCountsUnacked: a best-effort (DROP_AFTER_SPIN)
// pull subscriber does not hold the pointer, so the lines no client
// acknowledged when it stops (handed out or never pulled) reach no one:
// they count as dropped (DESIGN §5), exactly once. A pointer-holding one
// counts nothing (its lines come again after the restart).
func TestPullBestEffortCloseCountsUnacked(t *testing.T) {
	for _, tc := range []struct {
		kind overload.Kind
		want uint64
	}{{overload.DropAfterSpin, 4}, {overload.Pause, 0}} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			r := grouptest.New(t, processor.GroupConfig{Name: "tap", Retry: slowRetry(6)})
			r.Q.Gate.Policy = overload.Policy{Kind: tc.kind}
			p, err := New(Config{Group: r.G, AckTimeout: time.Minute, MaxInFlight: 100})
			if err != nil {
				t.Fatal(err)
			}
			r.G.SetBatchProcessor(p)
			r.Run()
			r.Publish(grouptest.Lines("l", 0, 5)...)
			rig := &pullRig{Rig: r, p: p}
			evs := rig.pull(2, false)
			rig.ack(evs[0])
			r.Cancel()
			<-r.G.Done()
			p.Close()
			p.Close()
			if got := r.Q.Dropped(); got != tc.want {
				t.Fatalf("dropped %d after the stop with 4 of 5 lines unacknowledged (1 out, 3 never pulled), want %d", got, tc.want)
			}
			if p.Ack(evs[1].DeliveryID) {
				t.Fatal("an ACK after Close was accepted")
			}
		})
	}
}
