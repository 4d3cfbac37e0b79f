package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"tailfeed/internal/natstest"
)

// natsConfig has two nats subscribers of one COMMITTED feed: exact
// (exactlyOnce, into the stream EXACT the test makes with a 100 ms
// duplicate window, so the record and the sequence chain, not the
// stream's dedupe, keep it exact; allow_batched, so the chain goes out in
// fast batches — sink/nats tests the one-at-a-time chain too) and plain (at least once, into PLAIN,
// which it creates). {{NATS}} is the embedded server's URL.
const natsConfig = `instance: host1
dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
    queueCapacity: 512
processors:
  - name: exact
    feed: app
    type: nats
    url: {{NATS}}
    stream: EXACT
    subject: exact.{instance}.{feed}
    exactlyOnce: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
  - name: plain
    feed: app
    type: nats
    url: {{NATS}}
    stream: PLAIN
    subject: plain.{instance}.{feed}
    createStream: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
`

func natsEnv(t *testing.T) (*env, *natstest.Server, jetstream.JetStream) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "EXACT", Subjects: []string{"exact.>"},
		Storage: jetstream.FileStorage, Duplicates: 100 * time.Millisecond, AllowBatchPublish: true}); err != nil {
		t.Fatal(err)
	}
	return newEnv(t, strings.ReplaceAll(natsConfig, "{{NATS}}", srv.URL())), srv, js
}

func streamMsgs(t testing.TB, js jetstream.JetStream, stream string) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return 0 // PLAIN before the daemon made it
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// checkStream reads stream back: with exact, its bodies must be the input's
// lines, each once, in order; else every input line at least once. It
// returns the duplicates.
func checkStream(t *testing.T, js jetstream.JetStream, stream string, in *input, exact bool) int {
	t.Helper()
	msgs := natstest.Messages(t, js, stream)
	seen := make(map[string]int, len(msgs))
	for i, m := range msgs {
		seen[string(m.Data)]++
		if exact && (i >= len(in.texts) || string(m.Data) != in.texts[i]) {
			t.Fatalf("%s: message %d (seq %d) is %q, want %q (%d messages, %d input lines)", stream, i, m.Sequence, m.Data, at(in.texts, i), len(msgs), len(in.texts))
		}
	}
	missing := 0
	for _, l := range in.texts {
		if seen[l] == 0 {
			missing++
		}
	}
	if missing > 0 || (exact && len(msgs) != len(in.texts)) {
		t.Fatalf("%s: %d messages for %d input lines, %d lines missing", stream, len(msgs), len(in.texts), missing)
	}
	return len(msgs) - len(seen)
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}

// TestNatsKill9 (issue 14 acceptance 1): kill -9 the daemon ten times in
// the middle of bursts while it publishes to a real NATS server (embedded
// in the test process, reached over TCP); then a clean run. The
// exactlyOnce stream holds every input line exactly once, in order; the
// plain stream every line at least once.
func TestNatsKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kill loop: not in -short")
	}
	e, _, js := natsEnv(t)
	in := newInput(t, e.path("in.log"))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 14))
	in.appendLines(3000)
	var log strings.Builder
	for k := range 10 {
		from := streamMsgs(t, js, "EXACT")
		var d *daemon
		if k%2 == 1 {
			d = e.start()
		} else {
			d = e.spawn()
		}
		burst := 4000 + rng.IntN(12000)
		in.appendLines(burst)
		after := 50 + rng.IntN(burst)
		waitUntil(t, fmt.Sprintf("kill %d: %d more messages in EXACT", k, after), 120*time.Second, func() bool {
			return streamMsgs(t, js, "EXACT") >= from+uint64(after) || d.exited()
		})
		d.kill()
		if d.code != -1 {
			t.Fatalf("kill %d: daemon exited with code %d before the kill\n%s", k, d.code, tail(d.log(), 3000))
		}
		fmt.Fprintf(&log, "kill %d: burst %d, EXACT %d, PLAIN %d messages\n", k, burst, streamMsgs(t, js, "EXACT"), streamMsgs(t, js, "PLAIN"))
	}
	d := e.start()
	d.waitSettled(300 * time.Second)
	d.stop()
	checkStream(t, js, "EXACT", in, true)
	dups := checkStream(t, js, "PLAIN", in, false)
	restarts := 0
	for _, r := range e.runs {
		restarts += strings.Count(r.log(), "nats record read")
	}
	skips := 0
	for _, r := range e.runs {
		skips += strings.Count(r.log(), "nats skips lines its subject holds")
	}
	fmt.Fprintf(&log, "%d input lines; %d records read at starts and reconnects, %d batches skipped in part (re-deliveries); EXACT: each once, in order; PLAIN: %d duplicates (its 2-minute duplicate window dedupes re-publishes)", len(in.texts), restarts, skips, dups)
	t.Log(log.String())
	if skips == 0 {
		t.Errorf("no restart found lines its subject held: the kills caused no re-delivery, so the test proves nothing")
	}
}

// TestNatsServerRestart (issue 14 acceptance 2): the server shut down
// mid-run: the feed reports stalled with the reason, resumes by itself
// when the server is back (same port, same store), nothing lost.
func TestNatsServerRestart(t *testing.T) {
	e, srv, js := natsEnv(t)
	in := newInput(t, e.path("in.log"))
	in.appendLines(2000)
	d := e.start()
	d.waitSettled(60 * time.Second)
	srv.Stop()
	in.appendLines(3000)
	r := d.waitFor("stalled on nats", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Stalled != nil && strings.Contains(*f.Stalled, "subscriber exact failing: nats nats://127.0.0.1") &&
			strings.Contains(*f.Stalled, "reconnecting")
	})
	t.Logf("while the server is down: stalled %q", *r.feed(t, "app").Stalled)
	srv.Start()
	r = d.waitSettled(120 * time.Second)
	if f := r.feed(t, "app"); !f.Lossless || f.DeadLettered != 0 || f.Stalled != nil {
		t.Errorf("after the restart: lossless %v, dead letters %d, stalled %v", f.Lossless, f.DeadLettered, f.Stalled)
	}
	d.stop()
	checkStream(t, js, "EXACT", in, true)
	checkStream(t, js, "PLAIN", in, false)
}

const natsRestoreConfig = `instance: host1
dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
    rotateWaitMillis: 200
    pollIntervalMillis: 50
processors:
  - name: exact
    feed: app
    type: nats
    url: {{NATS}}
    stream: EXACT
    subject: exact.{instance}.{feed}
    exactlyOnce: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
`

// TestNatsSkewedRestore (issue 14 acceptance 4, DESIGN §11 "A restored
// sink is caught up from the input"): while tailfeed is stopped the
// exactlyOnce stream is put back to an earlier point — every message after
// sequence 3000 (the first 3000 lines) deleted. At the next start the
// subject's last message is behind the pointer; the feed re-reads from it
// and the stream ends with every line exactly once, in order; lossless.
// "generationGone": the input rotated after those 3000 lines (1000 more in
// it, 2000 in the new file) and the rotated generation deleted: its lines
// past the restored point are counted (lostTails 1, lossless false); the
// stream holds every other line once, in order.
func TestNatsSkewedRestore(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(map[bool]string{false: "sameEpoch", true: "generationGone"}[gone], func(t *testing.T) {
			srv := natstest.Start(t, natstest.Options{})
			_, js := srv.Connect(t)
			ctx := context.Background()
			st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EXACT", Subjects: []string{"exact.>"},
				Storage: jetstream.FileStorage, Duplicates: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, strings.ReplaceAll(natsRestoreConfig, "{{NATS}}", srv.URL()))
			in := newInput(t, e.path("in.log"))
			restore := func() {
				info, err := st.Info(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for seq := uint64(3001); seq <= info.State.LastSeq; seq++ {
					if err := st.DeleteMsg(ctx, seq); err != nil {
						t.Fatalf("delete %d: %v", seq, err)
					}
				}
			}
			r, log := restoreRun(t, e, in, gone, true, func() {}, restore)
			if strings.Contains(log, "nats disconnected") {
				t.Errorf("a clean stop logs its own close as a lost connection:\n%s", tail(log, 2000))
			}
			msgs := natstest.Messages(t, js, "EXACT")
			got := map[string]int{}
			var order []string
			for _, m := range msgs {
				got[string(m.Data)]++
				order = append(order, string(m.Data))
			}
			checkRestored(t, "stream EXACT", got, in, gone, r)
			want := in.texts
			if gone {
				want = append(append([]string{}, in.texts[:3000]...), in.texts[4000:]...)
			}
			if strings.Join(order, "\n") != strings.Join(want, "\n") {
				t.Errorf("stream EXACT: %d messages not in the input's order (want %d)", len(order), len(want))
			}
		})
	}
}

// BenchmarkNatsDaemon is end-to-end throughput of the built binary into a
// real JetStream stream (the server embedded in the test process, over
// TCP): a COMMITTED feed of 200,000 lines of 100 bytes into one nats
// subscriber (createStream; batchMaxLines 4096), at least once and
// exactlyOnce (fast batches), timed from process start to the feed
// settled (every line acknowledged by the stream and the pointer
// committed). Run it with
//
//	go test -run '^$' -bench NatsDaemon -benchtime 1x ./e2e
func BenchmarkNatsDaemon(b *testing.B) {
	const lines, lineBytes = 200_000, 100
	dir := b.TempDir()
	input := dir + "/in.log"
	writeFixedLines(b, input, lines, lineBytes)
	for _, eo := range []bool{false, true} {
		name := "atLeastOnce"
		if eo {
			name = "exactlyOnce"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(lines * lineBytes)
			var total time.Duration
			for range b.N {
				b.StopTimer()
				srv := natstest.Start(b, natstest.Options{})
				e := newEnv(b, strings.NewReplacer("{{NATS}}", srv.URL(), "{{EO}}", fmt.Sprint(eo)).Replace(`instance: host1
dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - {name: app, path: `+input+`, readStrategy: COMMITTED}
processors:
  - {name: n, feed: app, type: nats, url: '{{NATS}}', stream: LOGS, subject: 'logs.{instance}.app', createStream: true, exactlyOnce: {{EO}}, batchMaxLines: 4096}
`))
				b.StartTimer()
				d := e.spawn()
				start := time.Now()
				if err := d.waitReady(60 * time.Second); err != nil {
					b.Fatal(err)
				}
				deadline := time.Now().Add(5 * time.Minute)
				for {
					r, err := d.status()
					if err == nil && r.Settled && r.Feeds[0].Sequence == lines {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("not settled with %d lines in 5 minutes", lines)
					}
					time.Sleep(5 * time.Millisecond)
				}
				total += time.Since(start)
				b.StopTimer()
				d.stop()
				_, js := srv.Connect(b)
				if n := streamMsgs(b, js, "LOGS"); n != lines {
					b.Fatalf("stream holds %d messages, want %d", n, lines)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(lines)*float64(b.N)/total.Seconds(), "lines/s")
		})
	}
}
