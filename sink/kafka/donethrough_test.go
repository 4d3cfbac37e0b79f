package kafka

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"tailfeed/internal/grouptest"
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

// TestKafkaDoneThrough (DESIGN §11 catch-up; §11: every built-in record
// advances over the lines the sink filtered, dead-lettered or was released
// from): with exactlyOnce, DoneThrough is the offsets record of this
// processor's feed per epoch, read from the offsets topic by a sink that
// has not produced yet (a restart). A batch ending in filtered lines, a
// batch the filters empty and a dead-lettered last line each move the
// offsets record over them (in the batch's transaction, or in one holding
// only the offsets record), so a run ending in them is not behind. Before,
// the offsets record stopped at the last produced line. Without
// exactlyOnce the sink has no record.
func TestKafkaDoneThrough(t *testing.T) {
	raw := make([]byte, 3000)
	rand.Read(raw)
	big := base64.StdEncoding.EncodeToString(raw) // over message.max.bytes
	c := cluster(t, 0, kfake.SeedTopics(1, "logs", "offs"), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "2000"}))
	l, err := processor.OpenLedger(filepath.Join(t.TempDir(), "k.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Topic: "logs", ExactlyOnce: true, OffsetsTopic: "offs", Feed: "app", Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}}
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter, Ledger: l,
		Exclude: regexp.MustCompile("^skip")}, cfg)
	if m := doneThrough(t, r.s); len(m) != 0 {
		t.Fatalf("empty offsets topic: %v, want no record", m)
	}
	r.Run()
	fresh := func() []processor.Mark { // a restarted sink's view
		t.Helper()
		r2 := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2)}, cfg)
		defer r2.s.Close()
		return doneThrough(t, r2.s)
	}
	// A restart reads the offsets topic read_committed: the record of a
	// transaction that just ended may show a moment later (its commit
	// markers follow EndTransaction; seen once under CI load: the previous
	// record; again in the thirty-eighth session's CI for over 5 s, each
	// restarted sink taking long under -race on a loaded machine). Asked
	// again for up to 20 s; last is the final answer, logged with the
	// running sink's failed attempts when it is not the one wanted.
	var last []processor.Mark
	freshWant := func(want []processor.Mark) []processor.Mark {
		t.Helper()
		last = fresh()
		asks := 1
		for deadline := time.Now().Add(20 * time.Second); !slices.Equal(last, want) && time.Now().Before(deadline); asks++ {
			time.Sleep(50 * time.Millisecond)
			last = fresh()
		}
		if !slices.Equal(last, want) {
			t.Logf("%d restarted sinks asked; the running sink's failed attempts %d, its stored positions %v", asks, r.G.Failures(), r.s.stored)
		}
		return last
	}
	r.Publish("a-1", "a-2", "skip-3", "skip-4") // 4, 8, 15, 22
	r.WaitAck(4, 10*time.Second)
	if want := []processor.Mark{{Epoch: 0xe1, Position: 22}}; !slices.Equal(freshWant(want), want) {
		t.Fatalf("after a filtered tail: %v, want %v (the last record is at 8)", last, want)
	}
	r.Publish("skip-5", "skip-6") // 29, 36
	r.WaitAck(6, 10*time.Second)
	if want := []processor.Mark{{Epoch: 0xe1, Position: 36}}; !slices.Equal(freshWant(want), want) {
		t.Fatalf("after a batch filtered whole: %v, want %v", last, want)
	}
	r.Publish("a-7", big) // 40, 40+len+1: dead-lettered
	end := int64(40 + len(big) + 1)
	r.WaitAck(8, 10*time.Second)
	if l.Len() != 1 {
		t.Fatalf("ledger %d, want the big line", l.Len())
	}
	if want := []processor.Mark{{Epoch: 0xe1, Position: end}}; !slices.Equal(freshWant(want), want) {
		t.Fatalf("after a dead-lettered tail: %v, want %v", last, want)
	}
	r.Epoch = 0xe2
	r.Pos = 0
	r.Publish("b-1") // 4 in a new epoch
	r.WaitAck(9, 10*time.Second)
	if want := []processor.Mark{{Epoch: 0xe1, Position: end}, {Epoch: 0xe2, Position: 4}}; !slices.Equal(freshWant(want), want) {
		t.Fatalf("two epochs: %v, want %v", last, want)
	}
	var vals []string
	for _, rec := range readAll(t, c.ListenAddrs(), "logs", 4) {
		vals = append(vals, string(rec.Value))
	}
	if !slices.Equal(vals, []string{"a-1", "a-2", "a-7", "b-1"}) {
		t.Fatalf("records %v", vals)
	}
	other := cfg
	other.Feed = "other"
	ro := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2)}, other)
	if m := doneThrough(t, ro.s); len(m) != 0 {
		t.Fatalf("another feed: %v, want no record", m)
	}
	plain := cfg
	plain.ExactlyOnce = false
	rp := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2)}, plain)
	if m := doneThrough(t, rp.s); len(m) != 0 {
		t.Fatalf("without exactlyOnce: %v, want no record", m)
	}
}

// TestKafkaDoneThroughBrokerDown: an unreachable cluster is an error (the
// caller retries, holding the feed), never "no record".
func TestKafkaDoneThroughBrokerDown(t *testing.T) {
	port := freePort(t)
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2)},
		Config{Topic: "logs", ExactlyOnce: true, OffsetsTopic: "offs", Feed: "app", Timeout: 500 * time.Millisecond,
			Client: []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", port))}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if m, err := r.s.DoneThrough(ctx); err == nil {
		t.Fatalf("no broker: %v, want an error", m)
	}
}
