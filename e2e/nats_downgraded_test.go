package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"tailfeed/internal/natstest"
)

// A downgraded line carries its own tailfeed-position and Nats-Msg-Id
// (audit 9E) — so an exactlyOnce subject whose last message is such a line
// must not take that position, under an epoch never in a pointer, for the
// sink's record: a restart re-reads nothing, counts nothing, publishes
// nothing again, and the next line goes on the subject once.
func TestNatsDowngradedLastMessageIsNotTheRecord(t *testing.T) {
	srv, js := startNats(t, jetstream.StreamConfig{Name: "EXACT", Subjects: []string{"exact.>"},
		Storage: jetstream.FileStorage, Duplicates: 100 * time.Millisecond, AllowBatchPublish: true})
	e := newEnv(t, strings.ReplaceAll(aud9ENatsDowngradeConfig, "{{NATS}}", srv.URL()))
	appendTo(t, e.path("in.log"), "a1\na2\n")
	d := e.start()
	aud9ERotateWithLateLine(t, e, d)
	d.stop()
	before := map[string]int{}
	for _, s := range []string{"PLAIN", "EXACT"} {
		before[s] = len(natstest.Messages(t, js, s))
	}
	if before["EXACT"] != 4 {
		t.Fatalf("EXACT holds %d messages before the restart, want 4 (a1, a2, b1, late)", before["EXACT"])
	}
	d = e.start()
	r := d.waitSettled(60 * time.Second)
	if f := r.feed(t, "app"); !f.Lossless || f.Sequence != 0 || f.LostTails != 0 {
		t.Fatalf("restart: lossless %v, sequence %d, lostTails %d, detail %v; want true, 0, 0", f.Lossless, f.Sequence, f.LostTails, f.Detail)
	}
	if strings.Contains(d.log(), "behind the pointer") {
		t.Fatalf("restart took a sink for behind the pointer:\n%s", d.log())
	}
	appendTo(t, e.path("in.log"), "b2\n")
	d.waitFor("b2 acknowledged", 60*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").Acknowledged == 1 })
	d.stop()
	for _, s := range []string{"PLAIN", "EXACT"} {
		if got := len(natstest.Messages(t, js, s)); got != before[s]+1 {
			t.Errorf("%s: %d messages after the restart and b2, want %d", s, got, before[s]+1)
		}
	}
}
