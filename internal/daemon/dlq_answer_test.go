package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"tailfeed/processor"
	"tailfeed/sink/pull"
	"tailfeed/status"
)

// A replay answer says what happened, never more: a pull subscriber's
// replay says how many entries it queued (202, or 503 when the subscriber
// stopped), never "replayed"; a replay still running when the call gave up
// says neither; a finished one says replayed.
func TestReplayAnswerSaysQueuedForAPullSubscriber(t *testing.T) {
	running := fmt.Errorf("%w: %w: busy", processor.ErrReplayIncomplete, processor.ErrReplayRunning)
	for _, c := range []struct {
		res  processor.ReplayResult
		err  error
		code int
		body string
	}{
		{processor.ReplayResult{Queued: 2, Queuing: true, Remaining: 2}, nil, http.StatusAccepted,
			`{"processor":"p","queued":2,"remaining":2}`},
		{processor.ReplayResult{Queuing: true, Remaining: 2}, pull.ErrClosed, http.StatusServiceUnavailable,
			`{"processor":"p","queued":0,"remaining":2,"error":"processor: pull subscriber closed"}`},
		{processor.ReplayResult{Replayed: 3}, nil, http.StatusOK,
			`{"processor":"p","replayed":3,"remaining":0}`},
		{processor.ReplayResult{Remaining: 4}, running, http.StatusServiceUnavailable,
			`{"processor":"p","remaining":4,"error":"` + running.Error() + `"}`},
		{processor.ReplayResult{Replayed: 1, Remaining: 3}, fmt.Errorf("%w: 503", processor.ErrReplayIncomplete), http.StatusServiceUnavailable,
			`{"processor":"p","replayed":1,"remaining":3,"error":"processor: replay incomplete: 503"}`},
	} {
		code, out := replayAnswer("p", c.res, c.err)
		b, _ := json.Marshal(out)
		if code != c.code || string(b) != c.body {
			t.Errorf("replayAnswer(%+v, %v) = %d %s, want %d %s", c.res, c.err, code, b, c.code, c.body)
		}
	}
}

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
