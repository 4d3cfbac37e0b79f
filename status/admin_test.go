package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"tailfeed/processor"
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
		{processor.ReplayResult{Queuing: true, Remaining: 2}, errors.New("processor: pull subscriber closed"), http.StatusServiceUnavailable,
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
