package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"tailfeed/internal/natstest"
)

const reviewNatsReplayConfig = "instance: host1\n" + cuHeader + cuPlainFeed + cuProcessors + "  - name: exact\n" + cuNatsBody + `    exactlyOnce: true
    onFailure: deadLetter
    timeoutMillis: 2000
    retry: {initialMillis: 20, maxMillis: 50, attempts: 2}
`

// TestNatsReplayedDeadLetterNotReReadAtNextStart (DESIGN §11: the
// done-through mark covers dead-lettered lines and "a replayed dead letter
// never moves it"; "delivered twice to an exactlyOnce sink"): the last line
// of the input is over the stream's max_msg_size, so the exactlyOnce nats
// sink dead-letters it; its end goes to the side record, tied to the
// subject's last message. The operator raises the limit and replays the
// dead letter: the replay is published (no position; it carries the record
// in tailfeed-applied-*). That publish becomes the subject's last message,
// so the side record's entry is void, and at the next start the sink's
// mark is the last line before the dead letter: "behind", the pointer is
// committed back and the line is read and published AGAIN — the stream
// holds it twice, and a start after a replay re-reads although nothing was
// restored.
func TestNatsReplayedDeadLetterNotReReadAtNextStart(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	ctx := context.Background()
	cfgStream := jetstream.StreamConfig{Name: "EXACT", Subjects: []string{"exact.>"},
		Storage: jetstream.FileStorage, Duplicates: 100 * time.Millisecond, MaxMsgSize: 2000}
	if _, err := js.CreateStream(ctx, cfgStream); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, strings.ReplaceAll(reviewNatsReplayConfig, "{{NATS}}", srv.URL()))
	in := e.path("in.log")
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "ok-%04d\n", i)
	}
	big := "BIG-" + strings.Repeat("x", 4000)
	b.WriteString(big + "\n")
	appendRaw(t, in, b.String())

	d := e.start()
	waitUntil(t, "the big line dead-lettered", 30*time.Second, func() bool {
		l, _ := ledgerEntries(t, e.path("state/dlq/exact.jsonl"))
		return len(l) == 1
	})
	d.waitSettled(30 * time.Second)
	d.stop()

	// A restart with nothing replayed: not behind (the side record).
	d = e.start()
	d.waitSettled(30 * time.Second)
	d.stop()
	if strings.Contains(d.log(), "committing the pointer back") {
		t.Fatalf("precondition: a catch-up over the dead-lettered tail before any replay:\n%s", tail(d.log(), 2000))
	}

	// The operator fixes the limit and replays the dead letter.
	cfgStream.MaxMsgSize = 0
	if _, err := js.UpdateStream(ctx, cfgStream); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	d.waitSettled(30 * time.Second)
	code, a, _ := d.replay("exact", "")
	if code != http.StatusOK || a.Replayed == nil || *a.Replayed != 1 {
		t.Fatalf("replay: %d replayed %v remaining %v %s", code, *a.Replayed, *a.Remaining, a.Error)
	}
	d.waitSettled(30 * time.Second)
	d.stop()

	d = e.start()
	r := d.waitSettled(30 * time.Second)
	d.stop()
	n := 0
	for _, m := range natstest.Messages(t, js, "EXACT") {
		if string(m.Data) == big {
			n++
		}
	}
	if strings.Contains(d.log(), "committing the pointer back") {
		t.Errorf("the start after a dead-letter replay took the nats sink for behind (nothing was restored); sequence %d:\n%s",
			r.feed(t, "app").Sequence, grepLines(d.log(), "behind"))
	}
	if n != 1 {
		t.Errorf("the exactlyOnce stream holds the replayed line %d times, want 1", n)
	}
}

// grepLines returns the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

const reviewNatsOlderEpochConfig = "instance: host1\n" + catchUpConfig + "  - name: nats\n" + cuNatsBody + `    exactlyOnce: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
`

// TestCatchUpOlderEpochNatsExactlyOnceStreamOnce (issue 14
// acceptance 1/4: "with exactlyOnce the engine holds every line exactly
// once"; DESIGN §2): the exactlyOnce file sink is restored into an epoch
// the pointer left (as in TestCatchUpOlderGeneration); the nats
// exactlyOnce sink is never restored. Its record is its subject's last
// message — one epoch, the current file's — so when the catch-up re-reads
// the rest of the rotated file and the current file, nothing is
// AlreadyApplied for it and it publishes every one of those lines again
// (past the stream's duplicate window, as after any real restore, the
// Nats-Msg-Id does not save it): the stream holds them twice.
func TestCatchUpOlderEpochNatsExactlyOnceStreamOnce(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "EXACT", Subjects: []string{"exact.>"},
		Storage: jetstream.FileStorage, Duplicates: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, strings.ReplaceAll(reviewNatsOlderEpochConfig, "{{NATS}}", srv.URL()))
	in := newInput(t, e.path("in.log"))
	exact := e.path("exact.log")
	d, _, bak := backedUpThenMore(t, e, in, 3000, 1000)
	if err := os.Rename(in.path, e.path("in.log.1")); err != nil {
		t.Fatal(err)
	}
	in.ends = nil
	in.appendLines(2000)
	d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
		return r.feed(t, "app").Settled && countLines(t, exact, 0) == 6000
	})
	d.stop()
	bak.restore()
	count := func() (map[string]int, int) {
		n := map[string]int{}
		dups := 0
		for _, m := range natstest.Messages(t, js, "EXACT") {
			n[string(m.Data)]++
			if n[string(m.Data)] > 1 {
				dups++
			}
		}
		return n, dups
	}
	if n, dups := count(); len(n) != 6000 || dups != 0 {
		t.Fatalf("precondition: the stream holds %d distinct lines, %d twice", len(n), dups)
	}
	time.Sleep(300 * time.Millisecond) // past the stream's duplicate window
	d, _, _ = settledRun(t, e)
	if !strings.Contains(d.log(), "committing the pointer back") {
		t.Fatalf("no catch-up")
	}
	if n, dups := count(); len(n) != 6000 || dups != 0 {
		t.Errorf("the exactlyOnce nats stream (never restored) after another sink's catch-up: %d distinct lines of 6000, %d messages are duplicates", len(n), dups)
	}
}
