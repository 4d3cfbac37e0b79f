package kafka

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// openTxn begins a transaction of transactional id txID on offs and
// produces one record in it, left open.
func openTxn(t *testing.T, addrs []string, txID, key, value string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID(txID),
		kgo.TransactionTimeout(5*time.Minute), kgo.DefaultProduceTopic("offs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestKafkaOffsetsPastOpenTransaction (DESIGN §11: at start the sink reads
// offsetsTopic to its end, read-committed; many sidecars share it): another
// instance's transaction open on the offsets topic — for up to its
// transaction timeout after a kill -9 — does not hide this processor's
// newer committed offsets records behind it. Before, the read stopped at
// the last stable offset (the open transaction's first record): the sink
// reported the older position, was taken for behind the pointer and
// produced the lines again. Its own previous run's open transaction is
// aborted by the producer id the restarted sink takes before the read (its
// record never counts, nor is waited for); a record of its keys in another
// producer's open transaction is waited for (an error: the caller holds the
// feed with the reason), and counts once committed.
func TestKafkaOffsetsPastOpenTransaction(t *testing.T) {
	c := cluster(t, 0, kfake.SeedTopics(1, "logs", "offs"))
	addrs := c.ListenAddrs()
	cfg := Config{Topic: "logs", ExactlyOnce: true, OffsetsTopic: "offs", Feed: "app", Client: []kgo.Opt{kgo.SeedBrokers(addrs...)}}
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2)}, cfg)
	r.Run()
	r.Publish("a-1", "a-2") // 4, 8
	r.WaitAck(2, 10*time.Second)

	openTxn(t, addrs, "tailfeed-host2-k", "host2:k:app:00000000000000e1", `{"feed":"app","fileKey":"","epoch":"00000000000000e1","position":1}`)
	r.Publish("a-3") // 12, committed after host2's open transaction began
	r.WaitAck(3, 10*time.Second)

	fresh := func() ([]processor.Mark, error) { // a restarted sink's view
		t.Helper()
		r2 := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2)}, cfg)
		defer r2.s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return r2.s.DoneThrough(ctx)
	}
	want := []processor.Mark{{Epoch: 0xe1, Position: 12}}
	if got, err := fresh(); err != nil || !slices.Equal(got, want) {
		t.Fatalf("another instance's open transaction: %v %v, want %v (the record past it)", got, err, want)
	}

	// This processor's previous run, killed with its transaction open.
	openTxn(t, addrs, "tailfeed-host1-k", "host1:k:app:00000000000000e1", `{"feed":"app","fileKey":"","epoch":"00000000000000e1","position":99}`)
	if got, err := fresh(); err != nil || !slices.Equal(got, want) {
		t.Fatalf("its own previous run's open transaction: %v %v, want %v (aborted at the start)", got, err, want)
	}

	// Another producer writing this processor's keys: waited for.
	other := openTxn(t, addrs, "stranger", "host1:k:app:00000000000000e1", `{"feed":"app","fileKey":"","epoch":"00000000000000e1","position":20}`)
	if got, err := fresh(); err == nil || !strings.Contains(err.Error(), "waiting for open transactions") {
		t.Fatalf("a record of its keys in an open transaction: %v %v, want an error (waited for)", got, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := other.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got, err := fresh(); err != nil || !slices.Equal(got, []processor.Mark{{Epoch: 0xe1, Position: 20}}) {
		t.Fatalf("once committed: %v %v, want position 20", got, err)
	}
}
