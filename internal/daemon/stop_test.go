package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/processor"
	"tailfeed/status"
)

// slowTap finishes each line after a pause: a best-effort subscriber that is
// a little behind when the daemon stops.
type slowTap struct{ per time.Duration }

func (s slowTap) Process(ctx context.Context, _ *feed.Delivery) error {
	select {
	case <-time.After(s.per):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A clean stop gives a best-effort subscriber the shutdown bound too: what
// it can finish within shutdownTimeoutMillis is not counted as dropped, so a
// run whose tap was merely behind stays lossless (DESIGN §5: lines count as
// dropped only when the bound expires).
func TestStopDrainsBestEffortWithinBound(t *testing.T) {
	cfg := strings.Replace(overloadConfig(4096, "      subscribers: {slow: {policy: DROP_AFTER_SPIN}}"),
		"shutdownTimeoutMillis: 300", "shutdownTimeoutMillis: 20000", 1)
	cfg = strings.Replace(cfg, "queueCapacity: 16", "queueCapacity: 1000", 1)
	tap := slowTap{per: 2 * time.Millisecond}
	e := start(t, cfg, Options{Processors: map[string]Build{"slow": func(*config.Processor, *processor.Group) (any, error) { return tap, nil }}})
	e.appendLines(numbered("line-", 0, 300)...)
	e.waitFor("all published", 20*time.Second, func(f status.FeedReport) bool { return f.Sequence == 300 })
	before := e.d.Report().Feeds[0]
	if sub(t, before, "slow").Dispatched == 300 {
		t.Skip("the tap caught up before the stop; nothing to drain")
	}
	start := time.Now()
	e.Stop()
	after := e.d.Report().Feeds[0]
	if after.Dropped != before.Dropped {
		t.Fatalf("a clean stop dropped %d lines the tap could finish within the bound (dropped %d → %d, tap %d/300 before the stop, stop took %v)",
			after.Dropped-before.Dropped, before.Dropped, after.Dropped, sub(t, before, "slow").Dispatched, time.Since(start))
	}
	if s := sub(t, after, "slow"); s.Dispatched+after.Dropped != 300 {
		t.Fatalf("tap finished %d, dropped %d; want 300 in all", s.Dispatched, after.Dropped)
	}
}
