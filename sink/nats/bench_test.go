package nats

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"tailfeed/feed"
	"tailfeed/internal/natstest"
	"tailfeed/overload"
	"tailfeed/processor"
)

// BenchmarkNatsThroughput measures lines/s into a real JetStream stream
// (the server embedded in the process, file storage) for 100-byte lines:
// "plain" is the engine's ceiling as a plain nats.go client reaches it (the
// same messages and headers, async publish with the same 500-message
// window, every ack awaited); "sink" is the nats sink on a real group fed
// in batches of 512 lines; "sink-exactlyOnce" the same with exactlyOnce
// (one publish at a time: the sequence chain). Run with
//
//	go test -run '^$' -bench NatsThroughput ./sink/nats
func BenchmarkNatsThroughput(b *testing.B) {
	line := []byte(strings.Repeat("x", 99))
	const window, batch = 500, 512
	b.Run("plain", func(b *testing.B) {
		srv := natstest.Start(b, natstest.Options{})
		_, js := srv.Connect(b)
		mkStream(b, js)
		js2, _ := jetstream.New(mustConn(b, srv), jetstream.WithPublishAsyncMaxPending(window+1))
		b.ResetTimer()
		futs := make([]jetstream.PubAckFuture, 0, window)
		var pos int64
		for i := 0; i < b.N; i++ {
			if len(futs) == window {
				awaitAll(b, futs)
				futs = futs[:0]
			}
			pos += int64(len(line)) + 1
			m := &nats.Msg{Subject: "logs.host1.app", Data: line, Header: nats.Header{
				HeaderInstance: {"host1"}, HeaderFeed: {"app"}, HeaderEpoch: {"00000000000000e1"}, HeaderPath: {"/in.log"},
				HeaderPosition: {fmt.Sprint(pos)}, jetstream.MsgIDHeader: {fmt.Sprintf("host1:app:00000000000000e1:%d", pos)}}}
			f, err := js2.PublishMsgAsync(m)
			if err != nil {
				b.Fatal(err)
			}
			futs = append(futs, f)
		}
		awaitAll(b, futs)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	})
	for _, eo := range []bool{false, true} {
		name := "sink"
		if eo {
			name = "sink-exactlyOnce"
		}
		b.Run(name, func(b *testing.B) {
			srv := natstest.Start(b, natstest.Options{})
			_, js := srv.Connect(b)
			mkStream(b, js)
			q := feed.NewQueue("n", 1<<16, 64<<20, overload.Policy{Kind: overload.Pause})
			pub := feed.NewPublisher("app", []*feed.Queue{q}, 1<<30, batch)
			g := processor.NewGroup(processor.GroupConfig{Name: "n", Queue: q, Retry: processor.Retry{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 3}, Logger: hclog.NewNullLogger(), Wake: func() {}})
			s, err := Open(Config{Group: g, URL: srv.URL(), Stream: "LOGS", Subject: "logs.{instance}.{feed}", Instance: "host1",
				ExactlyOnce: eo, Window: window, Timeout: 5 * time.Second, Logger: hclog.NewNullLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			g.SetBatchProcessor(s)
			ctx, cancel := context.WithCancel(context.Background())
			g.Start(ctx)
			defer func() { cancel(); <-g.Done() }()
			b.ResetTimer()
			var pos int64
			for sent := 0; sent < b.N; {
				fb := feed.NewBatch()
				fb.Feed, fb.Path, fb.Epoch = "app", "/in.log", 0xe1
				for k := 0; k < batch && sent < b.N; k++ {
					pos += int64(len(line)) + 1
					fb.AppendLine(line, pos)
					sent++
				}
				for !pub.TryPublish(fb) {
					time.Sleep(20 * time.Microsecond)
				}
			}
			for q.AckPoint() < uint64(b.N) {
				if st, why := q.State(); st == feed.Fenced {
					b.Fatalf("fenced: %s", why)
				}
				time.Sleep(100 * time.Microsecond)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

func mkStream(b *testing.B, js jetstream.JetStream) {
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "LOGS", Subjects: []string{"logs.>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute}); err != nil {
		b.Fatal(err)
	}
}

func mustConn(b *testing.B, srv *natstest.Server) *nats.Conn {
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
}

func awaitAll(b *testing.B, futs []jetstream.PubAckFuture) {
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			b.Fatal(err)
		}
	}
}
