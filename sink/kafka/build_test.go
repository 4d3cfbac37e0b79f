package kafka

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// TestKafkaBuildRecords: the records build makes from batch after batch —
// of the same epoch (scratch reused, smaller and larger than before), then
// of another epoch and path (the cached constant headers and key
// replaced) — carry exactly their own line, key and five headers; and a
// batch of the same epoch as the last costs no allocation (issue 14,
// acceptance 5: nothing per record or per batch on the hot path).
func TestKafkaBuildRecords(t *testing.T) {
	r := grouptest.New(t, processor.GroupConfig{Name: "k", Retry: grouptest.FastRetry(3)})
	s, err := Open(Config{Group: r.G, Name: "k", Instance: "host1", Topic: "logs", Key: "{feed}:{epoch}:{path}"})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(fd, path string, epoch uint64, n int, start int64) *feed.Batch {
		b := feed.NewBatch()
		b.Feed, b.Path, b.Epoch = fd, path, epoch
		pos := start
		for i := range n {
			l := fmt.Sprintf("%s-%d", path, i)
			pos += int64(len(l)) + 1
			b.AppendLine([]byte(l), pos)
		}
		return b
	}
	check := func(b *feed.Batch, from int) {
		t.Helper()
		recs := s.build(b, from)
		if len(recs) != len(b.Lines)-from {
			t.Fatalf("%d records for %d lines from %d", len(recs), len(b.Lines), from)
		}
		eh := fmt.Sprintf("%016x", b.Epoch)
		for i, rec := range recs {
			j := from + i
			if string(rec.Value) != string(b.Lines[j]) || rec.Topic != "logs" || rec.Timestamp.IsZero() {
				t.Fatalf("record %d: value %q topic %q ts %v", j, rec.Value, rec.Topic, rec.Timestamp)
			}
			if want := b.Feed + ":" + eh + ":" + b.Path; string(rec.Key) != want {
				t.Fatalf("record %d key %q, want %q", j, rec.Key, want)
			}
			if len(rec.Headers) != 5 {
				t.Fatalf("record %d: %d headers", j, len(rec.Headers))
			}
			for k, v := range map[string]string{HeaderInstance: "host1", HeaderFeed: b.Feed, HeaderEpoch: eh,
				HeaderPosition: fmt.Sprint(b.Ends[j]), HeaderPath: b.Path} {
				if h := header(rec, k); h != v {
					t.Fatalf("record %d header %s = %q, want %q", j, k, h, v)
				}
			}
		}
	}
	check(mk("app", "/a.log", 1, 300, 0), 0)
	check(mk("app", "/a.log", 1, 100, 1e12), 0) // fewer, longer positions
	check(mk("app", "/a.log", 1, 400, 5), 7)    // more than last time, from 7
	check(mk("app", "/b.log", 2, 200, 0), 0)    // another epoch and path
	check(mk("web", "/b.log", 2, 700, 0), 0)    // another feed; scratch grows
	check(mk("web", "/b.log", 2, 0, 0), 0)      // nothing
	check(mk("web", "/b.log", 2, 3, 1<<62), 0)  // 19 digits
	same := mk("web", "/b.log", 2, 500, 99)
	if a := testing.AllocsPerRun(20, func() { s.build(same, 0) }); a != 0 {
		t.Fatalf("build of a 500-line batch of the same epoch: %.1f allocations, want 0", a)
	}
	check(same, 0)
}

// produceCounter counts the produce requests a client writes.
type produceCounter struct{ n atomic.Int64 }

func (c *produceCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 0 && err == nil { // 0: Produce
		c.n.Add(1)
	}
}

// TestKafkaOneRequestPerBatch: a batch goes to the brokers whole, in one
// produce request per partition (not a first request holding the first
// records and more behind it: every request is a round trip the batch
// waits for).
func TestKafkaOneRequestPerBatch(t *testing.T) {
	c := cluster(t, 0, kfake.SeedTopics(1, "logs"))
	pc := &produceCounter{}
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)},
		Config{Topic: "logs", Key: "{feed}", Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.WithHooks(pc)}})
	r.Run()
	for k := range 5 {
		r.Publish(grouptest.Lines("x", k*500, 500)...)
		r.WaitAck(uint64(500*(k+1)), 10*time.Second)
	}
	// One request per batch; under -race the client's first request after
	// it loads the topic's metadata is sometimes split in two (6 in 3 runs of
	// 10 here), and on a loaded CI machine once more (7, once in a run
	// beside other builds). Before manual flushing it was 7 to 8; two
	// requests per batch would be 10.
	if n := pc.n.Load(); n > 7 {
		t.Fatalf("%d produce requests for 5 batches of 500 lines to one partition, want 5 (7 at most)", n)
	}
	if got := readAll(t, c.ListenAddrs(), "logs", 2500); len(got) != 2500 {
		t.Fatalf("%d records, want 2500", len(got))
	}
}
