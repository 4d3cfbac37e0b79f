package daemon

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"tailfeed/status"
)

// A purge (DELETE /admin/dlq) during a pull replay drops the purged entries
// from the subscriber: the client's ACK of one it holds is unknown (404)
// and the others are not handed out, so each purged line counts released
// once and never also as replayed.
func TestPurgeDuringPullReplayOverHTTP(t *testing.T) {
	cfg := strings.Replace(pullConfig,
		"{name: consumer, feed: app, type: pull, ackTimeoutMillis: 30000, maxInFlight: 1000}",
		"{name: consumer, feed: app, type: pull, ackTimeoutMillis: 30000, maxInFlight: 1000, onFailure: deadLetter, retry: {initialMillis: 1, maxMillis: 2, attempts: 1}}", 1)
	e := start(t, cfg, Options{})
	c := newPullClient(e)
	e.appendLines("d1", "d2")
	for _, ev := range c.pull(2, 10, 10*time.Second) {
		if code, body := c.settleOne("nack", ev.DeliveryID); code != http.StatusOK {
			t.Fatalf("NACK: %d %s", code, body)
		}
	}
	e.waitFor("two dead letters", 10*time.Second, func(f status.FeedReport) bool { return f.DeadLettered == 2 })
	code, body := c.do(http.MethodPost, "/admin/dlq/consumer/replay", nil)
	if code != http.StatusAccepted || !strings.Contains(string(body), `"queued":2`) {
		t.Fatalf("replay: %d %s", code, body)
	}
	out := c.pull(1, 1, 10*time.Second)[0]
	code, body = c.do(http.MethodDelete, "/admin/dlq/consumer", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"purged":2`) {
		t.Fatalf("purge: %d %s", code, body)
	}
	if code, body := c.settleOne("ack", out.DeliveryID); code != http.StatusNotFound {
		t.Fatalf("ACK of a purged replayed entry: %d %s, want 404", code, body)
	}
	if more := c.pullOnce(10, 200*time.Millisecond); len(more) != 0 {
		t.Fatalf("purged entries handed out: %+v", more)
	}
	f := e.waitFor("released 2", 10*time.Second, func(f status.FeedReport) bool { return f.DeadLettered == 0 && f.Released == 2 })
	if f.Lossless {
		t.Fatalf("lossless after a purge: %+v", f)
	}
}
