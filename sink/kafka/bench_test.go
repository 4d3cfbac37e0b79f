package kafka

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// BenchmarkKafkaThroughput (issue 14, acceptance 5; run by `make bench`):
// lines/s of 100-byte lines into a kfake broker over TCP in this process,
// through the sink (a real group and queue, batches of 500 lines: the test publisher's largest), with
// and without exactlyOnce, next to the ceiling: a plain kgo producer of the
// same library publishing the same records — the same key, the five
// tailfeed headers and the line — (idempotent, all-ISR acks,
// asynchronously, one Flush at the end). kfake shares the CPU with the
// producer: these are relative numbers, not a Kafka cluster's.
func BenchmarkKafkaThroughput(b *testing.B) {
	line := []byte(fmt.Sprintf("%099d", 7))
	for _, mode := range []string{"plain-kgo", "sink", "sink-exactlyOnce"} {
		b.Run(mode, func(b *testing.B) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "logs", "offs"))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			n := max(b.N, 1000)
			start := time.Now()
			if mode == "plain-kgo" {
				cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("logs"),
					kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(1<<20))
				if err != nil {
					b.Fatal(err)
				}
				defer cl.Close()
				b.ResetTimer()
				start = time.Now()
				var failed error
				key, inst, fd, epoch, path := []byte("host1:app"), []byte("host1"), []byte("app"), hex16(nil, 1), []byte("/in.log")
				pos := int64(0)
				for range n {
					pos += int64(len(line)) + 1
					// The same record the sink publishes (DESIGN §11): key, the five headers, the line.
					rec := &kgo.Record{Key: key, Value: line, Headers: []kgo.RecordHeader{
						{Key: HeaderInstance, Value: inst}, {Key: HeaderFeed, Value: fd}, {Key: HeaderEpoch, Value: epoch},
						{Key: HeaderPosition, Value: strconv.AppendInt(nil, pos, 10)}, {Key: HeaderPath, Value: path}}}
					cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
						if err != nil {
							failed = err
						}
					})
				}
				if err := cl.Flush(context.Background()); err != nil || failed != nil {
					b.Fatal(err, failed)
				}
			} else {
				t := &testing.T{}
				r := newBenchRig(b, t, Config{Topic: "logs", Key: "{instance}:{feed}", ExactlyOnce: mode == "sink-exactlyOnce", OffsetsTopic: "offs",
					Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}})
				b.ResetTimer()
				start = time.Now()
				pos := int64(0)
				for sent := 0; sent < n; {
					bt := feed.NewBatch()
					bt.Feed, bt.Path, bt.Epoch = "app", "/in.log", 1
					for k := 0; k < 500 && sent < n; k++ {
						pos += int64(len(line)) + 1
						bt.AppendLine(line, pos)
						sent++
					}
					for !r.Pub.TryPublish(bt) {
						r.Pub.PollAcks() // what the source does: frees the window
						time.Sleep(50 * time.Microsecond)
					}
				}
				for r.Q.AckPoint() < uint64(n) {
					time.Sleep(100 * time.Microsecond)
				}
			}
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(n)/el.Seconds(), "lines/s")
		})
	}
}

func newBenchRig(b *testing.B, t *testing.T, cfg Config) *grouptest.Rig {
	r := grouptest.New(t, processor.GroupConfig{Name: "k", Retry: grouptest.FastRetry(3)})
	cfg.Group, cfg.Name, cfg.Instance, cfg.Timeout = r.G, "k", "host1", 10*time.Second
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	r.G.SetBatchProcessor(s)
	ctx, cancel := context.WithCancel(context.Background())
	r.G.Start(ctx)
	b.Cleanup(func() {
		cancel()
		<-r.G.Done()
		s.Close()
	})
	return r
}
