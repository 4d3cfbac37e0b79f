package nats

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// BenchmarkNatsThroughput measures lines/s of 100-byte lines into a real
// JetStream stream (file storage), with every ack awaited, against two
// servers: "embedded" (nats-server/v2 in the benchmark's process, as the
// tests run it: it shares the process's CPU and garbage collector with
// the client) and "process" (the same module's nats-server built and run
// as its own process, as in production; skipped if it cannot be built).
// For each:
//
//   - plain-js: a plain nats.go JetStream client publishing the same
//     messages (same subject, headers and Nats-Msg-Id) with PublishMsgAsync
//     and a 4096-message window refilled when half of it came back;
//   - plain-core: the same messages published by a plain client with
//     nats.Conn.PublishMsg and a reply inbox read from one channel (no
//     future per message), same window;
//   - plain-fast: the same messages as one JetStream fast batch (the
//     stream allows them: allow_batched) published by a plain client with
//     nats.Conn.PublishMsg, at most 4096 past the last flow ack — no ack
//     per message; the strongest of the three is the ceiling;
//   - sink: the nats sink on a real group fed in batches of 512 lines
//     (window 4096; fast batches, as the stream allows them), reporting
//     x-ceiling = its lines/s over the best plain one of the same server
//     in the same run;
//   - sink-exactlyOnce: the same with exactlyOnce (fast batches chained by
//     the expected last subject sequence).
//
// Run with
//
//	go test -run '^$' -bench NatsThroughput ./sink/nats
func BenchmarkNatsThroughput(b *testing.B) {
	line := []byte(strings.Repeat("x", 99))
	const window, batch = 4096, 512
	for _, server := range []string{"embedded", "process"} {
		var plainJS, plainCore, plainFast float64 // the last (full) run of each
		url := func(b *testing.B) string {
			if server == "process" {
				return processServer(b)
			}
			return natstest.Start(b, natstest.Options{}).URL()
		}
		b.Run(server+"/plain-js", func(b *testing.B) {
			_, js := connect(b, url(b), jetstream.WithPublishAsyncMaxPending(window+1))
			mkStream(b, js)
			b.ResetTimer()
			futs := make([]jetstream.PubAckFuture, 0, window)
			var pos int64
			for i := 0; i < b.N; i++ {
				if len(futs) == window {
					awaitAll(b, futs[:window/2])
					futs = append(futs[:0], futs[window/2:]...)
				}
				pos += int64(len(line)) + 1
				p := strconv.FormatInt(pos, 10)
				m := &nats.Msg{Subject: "logs.host1.app", Data: line, Header: nats.Header{
					HeaderInstance: {"host1"}, HeaderFeed: {"app"}, HeaderEpoch: {"00000000000000e1"}, HeaderPath: {"/in.log"},
					HeaderPosition: {p}, jetstream.MsgIDHeader: {"host1:app:00000000000000e1:" + p}}}
				f, err := js.PublishMsgAsync(m)
				if err != nil {
					b.Fatal(err)
				}
				futs = append(futs, f)
			}
			awaitAll(b, futs)
			plainJS = report(b)
		})
		b.Run(server+"/plain-core", func(b *testing.B) {
			nc, js := connect(b, url(b))
			mkStream(b, js)
			inbox := nc.NewInbox() + "."
			ch := make(chan *nats.Msg, 1<<16)
			if _, err := nc.ChanSubscribe(inbox+"*", ch); err != nil {
				b.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				b.Fatal(err)
			}
			got := 0
			await := func(n int) {
				for ; got < n; got++ {
					select {
					case m := <-ch:
						if !strings.Contains(string(m.Data), `"seq":`) || strings.Contains(string(m.Data), `"error"`) {
							b.Fatalf("ack %s", m.Data)
						}
					case <-time.After(10 * time.Second):
						b.Fatal("no ack in 10 s")
					}
				}
			}
			pv, iv := []string{""}, []string{""}
			m := &nats.Msg{Subject: "logs.host1.app", Data: line, Header: nats.Header{
				HeaderInstance: {"host1"}, HeaderFeed: {"app"}, HeaderEpoch: {"00000000000000e1"}, HeaderPath: {"/in.log"},
				HeaderPosition: pv, jetstream.MsgIDHeader: iv}}
			b.ResetTimer()
			var pos int64
			for i := 0; i < b.N; i++ {
				if i-got >= window {
					await(i - window/2)
				}
				pos += int64(len(line)) + 1
				p := strconv.FormatInt(pos, 10)
				pv[0], iv[0] = p, "host1:app:00000000000000e1:"+p
				m.Reply = inbox + strconv.Itoa(i)
				if err := nc.PublishMsg(m); err != nil {
					b.Fatal(err)
				}
			}
			await(b.N)
			plainCore = report(b)
		})
		b.Run(server+"/plain-fast", func(b *testing.B) {
			nc, js := connect(b, url(b))
			mkStream(b, js)
			inbox := nc.NewInbox()
			ch := make(chan *nats.Msg, 1<<16)
			if _, err := nc.ChanSubscribe(inbox+".>", ch); err != nil {
				b.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				b.Fatal(err)
			}
			stored, final := 0, false
			read := func() {
				select {
				case m := <-ch:
					var r struct {
						Type  string              `json:"type"`
						Seq   int                 `json:"seq"`
						Count int                 `json:"count"`
						Error *jetstream.APIError `json:"error"`
					}
					if err := json.Unmarshal(m.Data, &r); err != nil || r.Error != nil || r.Type == "gap" || r.Type == "err" {
						b.Fatalf("reply %s", m.Data)
					}
					if r.Type == "ack" {
						stored = max(stored, r.Seq)
					} else if r.Count > 0 {
						stored, final = r.Count, true
					}
				case <-time.After(10 * time.Second):
					b.Fatal("no reply in 10 s")
				}
			}
			pv, iv := []string{""}, []string{""}
			m := &nats.Msg{Subject: "logs.host1.app", Data: line, Header: nats.Header{
				HeaderInstance: {"host1"}, HeaderFeed: {"app"}, HeaderEpoch: {"00000000000000e1"}, HeaderPath: {"/in.log"},
				HeaderPosition: pv, jetstream.MsgIDHeader: iv}}
			pfx := fmt.Sprintf("%s.plain.%d.fail.", inbox, window/4)
			b.ResetTimer()
			var pos int64
			for i := 1; i <= b.N; i++ {
				for i-1-stored >= window {
					read()
				}
				op := 1
				switch {
				case i == b.N:
					op = 2
				case i == 1:
					op = 0
				}
				pos += int64(len(line)) + 1
				p := strconv.FormatInt(pos, 10)
				pv[0], iv[0] = p, "host1:app:00000000000000e1:"+p
				m.Reply = pfx + strconv.Itoa(i) + "." + strconv.Itoa(op) + ".$FI"
				if err := nc.PublishMsg(m); err != nil {
					b.Fatal(err)
				}
			}
			for !final {
				read()
			}
			if stored != b.N {
				b.Fatalf("the batch stored %d of %d", stored, b.N)
			}
			plainFast = report(b)
		})
		for _, eo := range []bool{false, true} {
			name := server + "/sink"
			if eo {
				name += "-exactlyOnce"
			}
			b.Run(name, func(b *testing.B) {
				u := url(b)
				_, js := connect(b, u)
				mkStream(b, js)
				q := feed.NewQueue("n", 1<<16, 64<<20, overload.Policy{Kind: overload.Pause})
				pub := feed.NewPublisher("app", []*feed.Queue{q}, 1<<16, batch)
				g := processor.NewGroup(processor.GroupConfig{Name: "n", Queue: q, Retry: processor.Retry{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 3}, Logger: hclog.NewNullLogger(), Wake: func() {}})
				s, err := Open(Config{Group: g, URL: u, Stream: "LOGS", Subject: "logs.{instance}.{feed}", Instance: "host1",
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
						pub.PollAcks()
						time.Sleep(20 * time.Microsecond)
					}
				}
				for q.AckPoint() < uint64(b.N) {
					if st, why := q.State(); st == feed.Fenced {
						b.Fatalf("fenced: %s", why)
					}
					time.Sleep(100 * time.Microsecond)
				}
				if r, c := report(b), max(plainJS, plainCore, plainFast); c > 0 {
					b.ReportMetric(r/c, "x-ceiling")
				}
			})
		}
	}
}

func report(b *testing.B) float64 {
	r := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(r, "lines/s")
	return r
}

func connect(b testing.TB, url string, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream) {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return nc, js
}

// processServer runs nats-server (built from the module this package
// depends on, cached in the temp dir under its version) as its own
// process with JetStream on a temp dir.
func processServer(b testing.TB) string {
	v, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/nats-io/nats-server/v2").Output()
	if err != nil {
		b.Skipf("nats-server cannot be built here: go list: %v", err)
	}
	bin := filepath.Join(os.TempDir(), "tailfeed-test-nats-server-"+strings.TrimSpace(string(v)))
	if _, err := os.Stat(bin); err != nil {
		tmp := fmt.Sprintf("%s.%d", bin, os.Getpid()) // then renamed: another test process may build it too
		out, err := exec.Command("go", "build", "-o", tmp, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			b.Skipf("nats-server cannot be built here: %v\n%s", err, out)
		}
		if err := os.Rename(tmp, bin); err != nil {
			b.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", b.TempDir())
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	for i := 0; i < 200; i++ {
		if nc, err := nats.Connect(url); err == nil {
			_, err := jetstream.New(nc)
			nc.Close()
			if err == nil {
				return url
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	b.Fatalf("nats-server on port %d did not come up", port)
	return ""
}

func mkStream(b testing.TB, js jetstream.JetStream) {
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "LOGS", Subjects: []string{"logs.>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute, AllowBatchPublish: true}); err != nil {
		b.Fatal(err)
	}
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
