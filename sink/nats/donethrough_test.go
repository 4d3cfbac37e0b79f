package nats

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"tailfeed/internal/grouptest"
	"tailfeed/internal/natstest"
	"tailfeed/processor"
)

func doneThrough(t *testing.T, s *Sink) []processor.Mark {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := s.DoneThrough(ctx)
	if err != nil {
		t.Fatalf("DoneThrough: %v", err)
	}
	return m
}

// TestNatsDoneThrough (DESIGN §11 catch-up; every built-in record advances
// over the lines the sink filtered, dead-lettered or was released from):
// with exactlyOnce DoneThrough is the subject's last message's position;
// a batch ending in filtered lines, a batch the filters empty and a
// dead-lettered last line move it over them through the side record, so a
// run ending in them is not behind at the next start (before: the last
// message's position). The side record is void once the subject's last
// message is another one: a stream restored to an earlier point (its tail
// deleted) is behind whatever the side record says.
func TestNatsDoneThrough(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LOGS", Subjects: []string{"logs.>"}, MaxMsgSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	marks := filepath.Join(t.TempDir(), "state", "n.rec")
	cfg := Config{URL: srv.URL(), ExactlyOnce: true, Feed: "app", MarksFile: marks}
	r := newRig(t, processor.GroupConfig{OnFailure: processor.DeadLetter, Retry: grouptest.FastRetry(2),
		Exclude: regexp.MustCompile("^skip")}, cfg)
	fresh := func() []processor.Mark { // a restarted sink's view
		t.Helper()
		r2 := newRig(t, processor.GroupConfig{}, cfg)
		defer r2.s.Close()
		return doneThrough(t, r2.s)
	}
	if got := fresh(); len(got) != 0 {
		t.Fatalf("an empty stream: %v, want no record", got)
	}
	r.Publish("a-1", "a-2", "skip-3", "skip-4") // 4, 8, 15, 22
	r.WaitAck(4, 10*time.Second)
	if got, want := fresh(), []processor.Mark{{Epoch: 0xe1, Position: 22}}; !slices.Equal(got, want) {
		t.Fatalf("after a filtered tail: %v, want %v (the last message is at 8)", got, want)
	}
	r.Publish("skip-5", "skip-6") // 29, 36
	r.WaitAck(6, 10*time.Second)
	if got, want := fresh(), []processor.Mark{{Epoch: 0xe1, Position: 36}}; !slices.Equal(got, want) {
		t.Fatalf("after a batch filtered whole: %v, want %v", got, want)
	}
	big := strings.Repeat("x", 2000)
	r.Publish("a-7", big) // 40, 2041: dead-lettered
	r.WaitAck(8, 10*time.Second)
	if r.ledger.Len() != 1 {
		t.Fatalf("%d dead letters, want 1", r.ledger.Len())
	}
	if got, want := fresh(), []processor.Mark{{Epoch: 0xe1, Position: 2041}}; !slices.Equal(got, want) {
		t.Fatalf("after a dead-lettered tail: %v, want %v", got, want)
	}
	r.Publish("a-8") // 2045: a message again
	r.WaitAck(9, 10*time.Second)
	if got, want := fresh(), []processor.Mark{{Epoch: 0xe1, Position: 2045}}; !slices.Equal(got, want) {
		t.Fatalf("after a message: %v, want %v", got, want)
	}
	r.Publish("skip-9") // 2052
	r.WaitAck(10, 10*time.Second)
	wantLines(t, bodies(natstest.Messages(t, js, "LOGS")), []string{"a-1", "a-2", "a-7", "a-8"})

	// Restored to an earlier point: a-7 and a-8 deleted (sequences 3, 4).
	for _, seq := range []uint64{4, 3} {
		if err := st.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fresh(), []processor.Mark{{Epoch: 0xe1, Position: 8}}; !slices.Equal(got, want) {
		t.Fatalf("restored stream: %v, want %v (the side record is void)", got, want)
	}

	plain := cfg
	plain.ExactlyOnce = false
	rp := newRig(t, processor.GroupConfig{}, plain)
	if m := doneThrough(t, rp.s); len(m) != 0 {
		t.Fatalf("without exactlyOnce: %v, want no record", m)
	}
}

// TestNatsDoneThroughPerEpoch: with {epoch} in the subject (a glob feed's
// streams, or a single file's generations) each epoch has its subject, and
// DoneThrough lists them all — this feed's only.
func TestNatsDoneThroughPerEpoch(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "LOGS", Subjects: []string{"logs.>"}}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{URL: srv.URL(), ExactlyOnce: true, Feed: "app", Subject: "logs.{instance}.{feed}.{epoch}.{path}",
		MarksFile: filepath.Join(t.TempDir(), "n.rec")}
	r := newRig(t, processor.GroupConfig{}, cfg)
	r.Publish("a-1", "a-2")
	r.Epoch, r.Pos = 0xe2, 0
	r.Publish("b-1")
	r.WaitAck(3, 10*time.Second)
	if got, want := doneThrough(t, r.s), []processor.Mark{{Epoch: 0xe1, Position: 8}, {Epoch: 0xe2, Position: 4}}; !slices.Equal(got, want) {
		t.Fatalf("DoneThrough %v, want %v", got, want)
	}
	other := cfg
	other.Feed = "other"
	ro := newRig(t, processor.GroupConfig{}, other)
	if m := doneThrough(t, ro.s); len(m) != 0 {
		t.Fatalf("another feed: %v, want no record", m)
	}
}

// TestNatsDoneThroughServerDown: a server that is down is an error (the
// caller retries, holding the feed), never "no record".
func TestNatsDoneThroughServerDown(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	r := newRig(t, processor.GroupConfig{}, Config{URL: srv.URL(), ExactlyOnce: true, Feed: "app", CreateStream: true, Timeout: 500 * time.Millisecond})
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if m, err := r.s.DoneThrough(ctx); err == nil {
		t.Fatalf("server down: %v, want an error", m)
	}
}
