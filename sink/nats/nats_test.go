package nats

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/internal/natstest"
	"tailfeed/processor"
)

// rig is a nats sink on a real group, publishing into a real embedded
// server.
type rig struct {
	*grouptest.Rig
	s      *Sink
	ledger *processor.Ledger
}

func newRig(t *testing.T, gc processor.GroupConfig, cfg Config) *rig {
	t.Helper()
	l, err := processor.OpenLedger(filepath.Join(t.TempDir(), "nats.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	gc.Ledger, gc.Name = l, "n"
	if gc.Retry.Attempts == 0 {
		gc.Retry = grouptest.FastRetry(3)
	}
	r := &rig{Rig: grouptest.New(t, gc), ledger: l}
	cfg.Group = r.G
	if cfg.Instance == "" {
		cfg.Instance = "host1"
	}
	if cfg.Stream == "" {
		cfg.Stream = "LOGS"
	}
	if cfg.Subject == "" {
		cfg.Subject = "logs.{instance}.{feed}"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.s = s
	r.G.SetBatchProcessor(s)
	r.Run()
	return r
}

func bodies(msgs []jetstream.RawStreamMsg) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Data)
	}
	return out
}

func wantLines(t *testing.T, got []string, want ...[]string) {
	t.Helper()
	var all []string
	for _, w := range want {
		all = append(all, w...)
	}
	if strings.Join(got, "|") != strings.Join(all, "|") {
		t.Fatalf("stream holds %d lines %v…, want %d lines %v…", len(got), head(got), len(all), head(all))
	}
}

func head(s []string) []string {
	if len(s) > 6 {
		return s[:6]
	}
	return s
}

// Every line lands once, with its body, subject, Nats-Msg-Id and tailfeed-*
// headers, processed on the publish ack; a batch larger than the window
// fills it (DESIGN §11 nats).
func TestPublishesLinesWithIdentity(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	r := newRig(t, processor.GroupConfig{}, Config{URL: srv.URL(), CreateStream: true, Window: 7,
		Subject: "logs.{instance}.{feed}.{path}.{epoch}"})
	a := grouptest.Lines("a", 0, 20)
	r.Publish(a...)
	bl := grouptest.Lines("b", 0, 3)
	r.Publish(bl...)
	r.WaitAck(23, 10*time.Second)
	_, js := srv.Connect(t)
	msgs := natstest.Messages(t, js, "LOGS")
	wantLines(t, bodies(msgs), a, bl)
	m := msgs[0]
	if want := "logs.host1.app.in_log.00000000000000e1"; m.Subject != want {
		t.Errorf("subject %q, want %q", m.Subject, want)
	}
	pos := int64(len(a[0]) + 1)
	for k, want := range map[string]string{
		"Nats-Msg-Id":       fmt.Sprintf("host1:app:00000000000000e1:%d", pos),
		"tailfeed-instance": "host1", "tailfeed-feed": "app", "tailfeed-epoch": "00000000000000e1",
		"tailfeed-position": fmt.Sprint(pos), "tailfeed-path": "/in.log",
	} {
		if got := m.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	ctx := context.Background()
	st, _ := js.Stream(ctx, "LOGS")
	info, _ := st.Info(ctx)
	if info.Config.Duplicates != 2*time.Minute || info.Config.Storage != jetstream.FileStorage ||
		strings.Join(info.Config.Subjects, ",") != "logs.*.*.*.>" || !info.Config.AllowBatchPublish {
		t.Errorf("created stream: duplicates %v storage %v subjects %v allow_batched %v", info.Config.Duplicates, info.Config.Storage,
			info.Config.Subjects, info.Config.AllowBatchPublish)
	}
}

// Without createStream a missing stream holds the feed (fenced, saying so),
// never dead-letters; once the stream exists the lines go out.
func TestMissingStreamHolds(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	r := newRig(t, processor.GroupConfig{OnFailure: processor.DeadLetter}, Config{URL: srv.URL()})
	a := grouptest.Lines("a", 0, 3)
	r.Publish(a...)
	waitFenced(t, r, `stream "LOGS" does not exist`)
	time.Sleep(50 * time.Millisecond)
	if r.ledger.Len() != 0 {
		t.Fatalf("%d lines dead-lettered for a missing stream", r.ledger.Len())
	}
	_, js := srv.Connect(t)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "LOGS", Subjects: []string{"logs.>"}}); err != nil {
		t.Fatal(err)
	}
	r.WaitAck(3, 10*time.Second)
	wantLines(t, bodies(natstest.Messages(t, js, "LOGS")), a)
}

func waitFenced(t *testing.T, r *rig, reason string) {
	t.Helper()
	grouptest.WaitFor(t, "fenced: "+reason, func() bool {
		st, why := r.Q.State()
		return st == feed.Fenced && strings.Contains(why, reason)
	})
}

// Acceptance 2: the server shut down mid-run holds the feed (fenced with the
// reason, nothing dead-lettered although onFailure is deadLetter) and the
// sink resumes by itself when it is back on the same port and store:
// every line in the stream, none lost.
func TestServerRestartStallsAndResumes(t *testing.T) {
	for _, c := range []struct{ eo, batched bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		eo := c.eo
		t.Run(fmt.Sprintf("exactlyOnce=%v/allow_batched=%v", eo, c.batched), func(t *testing.T) {
			srv := natstest.Start(t, natstest.Options{})
			if !c.batched { // a stream made by hand: an ack per message, or the one-at-a-time chain
				_, js := srv.Connect(t)
				if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "LOGS", Subjects: []string{"logs.>"},
					Storage: jetstream.FileStorage}); err != nil {
					t.Fatal(err)
				}
			}
			r := newRig(t, processor.GroupConfig{OnFailure: processor.DeadLetter, Retry: grouptest.FastRetry(2)},
				Config{URL: srv.URL(), CreateStream: true, ExactlyOnce: eo, Timeout: 500 * time.Millisecond})
			a := grouptest.Lines("a", 0, 50)
			r.Publish(a...)
			r.WaitAck(50, 10*time.Second)
			srv.Stop()
			bl := grouptest.Lines("b", 0, 50)
			r.Publish(bl...)
			waitFenced(t, r, "nats")
			st, why := r.Q.State()
			t.Logf("while down: %v %q", st, why)
			time.Sleep(300 * time.Millisecond)
			if r.ledger.Len() != 0 || r.Q.AckPoint() != 50 {
				t.Fatalf("server down: %d dead letters, ack point %d (want 0, 50)", r.ledger.Len(), r.Q.AckPoint())
			}
			srv.Start()
			r.WaitAck(100, 20*time.Second)
			grouptest.WaitFor(t, "live again", func() bool { st, _ := r.Q.State(); return st != feed.Fenced })
			_, js := srv.Connect(t)
			got := bodies(natstest.Messages(t, js, "LOGS"))
			if eo {
				wantLines(t, got, a, bl) // exactly once, in order
				return
			}
			seen := map[string]bool{}
			for _, l := range got {
				seen[l] = true
			}
			for _, l := range append(a, bl...) {
				if !seen[l] {
					t.Fatalf("line %s lost", l)
				}
			}
		})
	}
}

// Acceptance 3: a message over the stream's size limit is a record the
// engine rejects: it follows onFailure — dead-lettered (the others go on)
// or held (fenced with the reason, nothing after it counted). A message
// over the server's max_payload (refused by the client before it is sent)
// is a rejection too.
func TestPoisonFollowsOnFailure(t *testing.T) {
	for _, c := range []struct {
		onf        processor.OnFailure
		maxPayload int32
	}{{processor.DeadLetter, 0}, {processor.Hold, 0}, {processor.DeadLetter, 1500}} {
		onf := c.onf
		t.Run(fmt.Sprint(onf, c.maxPayload), func(t *testing.T) {
			srv := natstest.Start(t, natstest.Options{MaxPayload: c.maxPayload})
			_, js := srv.Connect(t)
			if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "LOGS", Subjects: []string{"logs.>"}, MaxMsgSize: 1000}); err != nil {
				t.Fatal(err)
			}
			r := newRig(t, processor.GroupConfig{OnFailure: onf, Retry: grouptest.FastRetry(2)}, Config{URL: srv.URL()})
			big := strings.Repeat("x", 2000) // the limit counts headers too
			r.Publish("ok-1", big, "ok-2")
			if onf == processor.DeadLetter {
				r.WaitAck(3, 10*time.Second)
				if r.ledger.Len() != 1 {
					t.Fatalf("%d dead letters, want 1", r.ledger.Len())
				}
				items, _ := r.ledger.List(10)
				if !strings.Contains(items[0].Error, "rejected") {
					t.Errorf("dead letter error %q", items[0].Error)
				}
				wantLines(t, bodies(natstest.Messages(t, js, "LOGS")), []string{"ok-1", "ok-2"})
				return
			}
			waitFenced(t, r, "rejected the message")
			time.Sleep(100 * time.Millisecond)
			if r.ledger.Len() != 0 || r.Q.AckPoint() != 1 {
				t.Fatalf("hold: %d dead letters, ack point %d (want 0, 1)", r.ledger.Len(), r.Q.AckPoint())
			}
		})
	}
}

// exactlyOnce: a new sink (a restart) reads the last message of its
// subject and skips what it holds, so a re-delivery lands nothing twice;
// a message stored behind the sink's back (a lost ack: the sink's expected
// sequence is stale) makes the server reject the next publish, and the
// sink re-reads the subject and resumes after it.
func TestExactlyOnceResumesAfterSubjectLast(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LOGS", Subjects: []string{"logs.>"}, Duplicates: time.Millisecond * 100}); err != nil {
		t.Fatal(err)
	}
	r1 := newRig(t, processor.GroupConfig{}, Config{URL: srv.URL(), ExactlyOnce: true})
	a := grouptest.Lines("a", 0, 10)
	r1.Publish(a...)
	r1.WaitAck(10, 10*time.Second)
	r1.Cancel()
	<-r1.G.Done()
	time.Sleep(200 * time.Millisecond) // past the duplicate window: only the record stops a duplicate

	// A restart: the same lines come again, then new ones.
	r2 := newRig(t, processor.GroupConfig{}, Config{URL: srv.URL(), ExactlyOnce: true})
	r2.Publish(a...)
	bl := grouptest.Lines("b", 0, 5)
	r2.Publish(bl...)
	r2.WaitAck(15, 10*time.Second)
	wantLines(t, bodies(natstest.Messages(t, js, "LOGS")), a, bl)

	// A message of this sink stored without it knowing (no Msg-Id, so
	// nothing dedupes it): the next line it publishes expects a stale
	// sequence.
	c := grouptest.Lines("c", 0, 3)
	pos := r2.Pos
	m := nats.NewMsg("logs.host1.app")
	m.Data = []byte(c[0])
	m.Header.Set(HeaderEpoch, fmt.Sprintf("%016x", r2.Epoch))
	m.Header.Set(HeaderPosition, fmt.Sprint(pos+int64(len(c[0])+1)))
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	r2.Publish(c...)
	r2.WaitAck(18, 10*time.Second)
	wantLines(t, bodies(natstest.Messages(t, js, "LOGS")), a, bl, c)
}

// TLS against the real server with a CA the test makes, and a token: the
// CA verifies; without it the certificate does not verify, which is a
// connection failure that holds (never skipped, never dead-lettered);
// insecureSkipVerify connects.
func TestTLSAndToken(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{TLS: true, Token: "s3cret-token"})
	cases := []struct {
		name string
		tls  *TLS
		tok  string
		ok   bool
		why  string
	}{
		{"ca", &TLS{CAFile: srv.CAFile}, "s3cret-token", true, ""},
		{"insecure", &TLS{InsecureSkipVerify: true}, "s3cret-token", true, ""},
		{"no-ca", &TLS{}, "s3cret-token", false, "certificate"},
		{"bad-token", &TLS{CAFile: srv.CAFile}, "wrong-token", false, "nats"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, processor.GroupConfig{OnFailure: processor.DeadLetter, Retry: grouptest.FastRetry(2)},
				Config{URL: srv.URL(), CreateStream: true, TLS: c.tls, Token: c.tok, Stream: "S" + strings.ReplaceAll(c.name, "-", ""),
					Subject: "s." + c.name + ".{feed}"})
			r.Publish("one", "two")
			if c.ok {
				r.WaitAck(2, 10*time.Second)
				return
			}
			waitFenced(t, r, c.why)
			_, why := r.Q.State()
			if strings.Contains(why, c.tok) {
				t.Errorf("reason shows the token: %q", why)
			}
			time.Sleep(100 * time.Millisecond)
			if r.ledger.Len() != 0 || r.Q.AckPoint() != 0 {
				t.Fatalf("%d dead letters, ack point %d", r.ledger.Len(), r.Q.AckPoint())
			}
		})
	}
}

func TestPathToken(t *testing.T) {
	for in, want := range map[string]string{"/var/log/app.log": "var_log_app_log", "a b*>": "a_b__", "/": "_"} {
		if got := PathToken(in); got != want {
			t.Errorf("PathToken(%q) = %q, want %q", in, got, want)
		}
	}
}

// exactlyOnce: a line without a position (a dead-letter replay, a
// downgraded line) published on the subject does not erase the record: it
// carries the sink's record in tailfeed-applied-epoch/-position, so a
// restart after it still skips what the stream holds.
func TestExactlyOnceUnpositionedKeepsRecord(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LOGS", Subjects: []string{"logs.>"}, Duplicates: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	r1 := newRig(t, processor.GroupConfig{}, Config{URL: srv.URL(), ExactlyOnce: true})
	a := grouptest.Lines("a", 0, 10)
	r1.Publish(a...)
	r1.WaitAck(10, 10*time.Second)
	r1.Cancel()
	<-r1.G.Done()
	rb := &feed.Batch{Feed: "app", Path: "/in.log", Epoch: r1.Epoch, Lines: [][]byte{[]byte("replayed")}, Ends: []int64{8}}
	if n, err := r1.s.ProcessBatch(ctx, rb); n != 1 || err != nil {
		t.Fatalf("replay: %d, %v", n, err)
	}
	st, _ := js.Stream(ctx, "LOGS")
	m, err := st.GetLastMsgForSubject(ctx, "logs.host1.app")
	if err != nil || m.Header.Get(HeaderPosition) != "" || m.Header.Get("tailfeed-applied-position") != fmt.Sprint(r1.Pos) {
		t.Fatalf("replayed message headers %v (%v), want no %s and the record %d", m.Header, err, HeaderPosition, r1.Pos)
	}
	time.Sleep(200 * time.Millisecond) // past the duplicate window
	r2 := newRig(t, processor.GroupConfig{}, Config{URL: srv.URL(), ExactlyOnce: true})
	r2.Publish(a...)
	bl := grouptest.Lines("b", 0, 3)
	r2.Publish(bl...)
	r2.WaitAck(13, 10*time.Second)
	wantLines(t, bodies(natstest.Messages(t, js, "LOGS")), a, []string{"replayed"}, bl)
}

// Credentials in the URL (nats://TOKEN@host, a list of servers) never show
// in the fence reason (feed.status, /healthz, logs).
func TestURLCredentialsNotShown(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{Token: "right-token"})
	host := strings.TrimPrefix(srv.URL(), "nats://")
	r := newRig(t, processor.GroupConfig{OnFailure: processor.DeadLetter, Retry: grouptest.FastRetry(2)},
		Config{URL: "nats://WR0NGTOKEN@" + host + ",nats://us3r:pa55word@" + host, CreateStream: true})
	r.Publish("one")
	waitFenced(t, r, "nats")
	_, why := r.Q.State()
	if strings.Contains(why, "WR0NGTOKEN") || strings.Contains(why, "pa55word") {
		t.Fatalf("reason shows a credential: %q", why)
	}
	t.Logf("reason: %s", why)
	if strings.Contains(why, "processor: fatal") {
		t.Errorf("reason shows the internal marker: %q", why)
	}
	r2 := newRig(t, processor.GroupConfig{}, Config{URL: "nats://right-token@" + host, CreateStream: true, Stream: "L2", Subject: "l2.{feed}"})
	r2.Publish("two")
	r2.WaitAck(1, 10*time.Second)
}

// A refused credential closes the library's connection for good; the sink
// makes a new one at the group's backoff, so once the server takes the
// credential the feed resumes by itself.
func TestRefusedCredentialRecovers(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{Token: "old-token"})
	r := newRig(t, processor.GroupConfig{OnFailure: processor.DeadLetter, Retry: grouptest.FastRetry(2)},
		Config{URL: srv.URL(), Token: "new-token", CreateStream: true})
	r.Publish("one", "two")
	waitFenced(t, r, "Authorization Violation")
	srv.Stop()
	srv.SetToken("new-token")
	srv.Start()
	r.WaitAck(2, 20*time.Second)
	if r.ledger.Len() != 0 {
		t.Fatalf("%d dead letters", r.ledger.Len())
	}
}

// A stream that exists but does not take the sink's subject holds the
// feed with a reason that says so (never a dead letter).
func TestSubjectOutsideStreamHolds(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "LOGS", Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, processor.GroupConfig{OnFailure: processor.DeadLetter, Retry: grouptest.FastRetry(2)}, Config{URL: srv.URL()})
	r.Publish("one")
	waitFenced(t, r, "no stream takes subject logs.host1.app")
	time.Sleep(50 * time.Millisecond)
	if r.ledger.Len() != 0 {
		t.Fatalf("%d dead letters", r.ledger.Len())
	}
}

// insecureSkipVerify and a literal token are WARNed at start, the token
// itself never logged.
func TestStartWarnings(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{TLS: true, Token: "s3cret-token"})
	var buf syncBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
	r := newRig(t, processor.GroupConfig{}, Config{URL: srv.URL(), CreateStream: true, Token: "s3cret-token",
		TLS: &TLS{InsecureSkipVerify: true}, Literal: []string{"processors[0].token"}, Logger: log})
	r.Publish("one")
	r.WaitAck(1, 10*time.Second)
	out := buf.String()
	if !strings.Contains(out, "[WARN]  nats tls.insecureSkipVerify is true") || !strings.Contains(out, "[WARN]  nats secret written literally in the config file, not as a ${ENV} reference; keep the file private: key=processors[0].token") {
		t.Errorf("start warnings missing:\n%s", out)
	}
	if strings.Contains(out, "s3cret-token") {
		t.Errorf("the log shows the token:\n%s", out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// credsFile against a real server in operator (JWT) mode: the user's
// credentials publish; without them the server refuses, which holds.
func TestCredsFile(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{Creds: true})
	r := newRig(t, processor.GroupConfig{}, Config{URL: srv.URL(), CreateStream: true, CredsFile: srv.CredsFile})
	r.Publish("one", "two")
	r.WaitAck(2, 10*time.Second)
	_, js := srv.Connect(t)
	wantLines(t, bodies(natstest.Messages(t, js, "LOGS")), []string{"one", "two"})
	r2 := newRig(t, processor.GroupConfig{OnFailure: processor.DeadLetter, Retry: grouptest.FastRetry(2)},
		Config{URL: srv.URL(), Stream: "LOGS", Subject: "logs.other"})
	r2.Publish("three")
	waitFenced(t, r2, "nats")
	if r2.ledger.Len() != 0 {
		t.Fatalf("%d dead letters", r2.ledger.Len())
	}
}
