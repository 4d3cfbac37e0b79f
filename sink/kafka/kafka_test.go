package kafka

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// TestKafkaRecords: each line is one record: the raw line as value, the
// key template rendered, the five tailfeed-* headers.
func TestKafkaRecords(t *testing.T) {
	c := cluster(t, 0, kfake.SeedTopics(3, "logs"))
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)},
		Config{Topic: "logs", Key: "{instance}/{feed}/{epoch}/{path}", Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}})
	r.Run()
	r.Publish("alpha", "be ta", "")
	r.Publish(grouptest.Lines("x", 0, 100)...)
	r.WaitAck(103, 10*time.Second)
	got := readAll(t, c.ListenAddrs(), "logs", 103)
	if len(got) != 103 {
		t.Fatalf("%d records, want 103", len(got))
	}
	want := append([]string{"alpha", "be ta", ""}, grouptest.Lines("x", 0, 100)...)
	pos := int64(0)
	for i, rec := range got { // one key: one partition, in order
		pos += int64(len(want[i])) + 1
		if string(rec.Value) != want[i] {
			t.Fatalf("record %d value %q, want %q", i, rec.Value, want[i])
		}
		if string(rec.Key) != "host1/app/00000000000000e1//in.log" {
			t.Fatalf("key %q", rec.Key)
		}
		for k, v := range map[string]string{HeaderInstance: "host1", HeaderFeed: "app", HeaderEpoch: "00000000000000e1",
			HeaderPosition: fmt.Sprint(pos), HeaderPath: "/in.log"} {
			if h := header(rec, k); h != v {
				t.Fatalf("record %d header %s = %q, want %q", i, k, h, v)
			}
		}
	}
}

// TestKafkaMissingTopicStalls: without createTopics a missing topic stalls
// the feed with the reason (whatever onFailure says: nothing dead-lettered),
// and the feed resumes by itself once the topic exists.
func TestKafkaMissingTopicStalls(t *testing.T) {
	c := cluster(t, 0)
	dir := t.TempDir()
	l, err := processor.OpenLedger(filepath.Join(dir, "k.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter, Ledger: l},
		Config{Topic: "logs", Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}})
	r.Run()
	r.Publish("one", "two")
	grouptest.WaitFor(t, "a stall naming the topic", func() bool {
		st, why := r.Q.State()
		return st == feed.Fenced && strings.Contains(why, `topic "logs" does not exist`)
	})
	time.Sleep(200 * time.Millisecond) // many attempts at the 4 ms cap
	if l.Len() != 0 || r.Q.AckPoint() != 0 {
		t.Fatalf("ledger %d, ack %d: an unavailable topic must hold, not dead-letter", l.Len(), r.Q.AckPoint())
	}
	adm := kadm.NewClient(newClient(t, c))
	if _, err := adm.CreateTopic(context.Background(), 1, -1, nil, "logs"); err != nil {
		t.Fatal(err)
	}
	r.WaitAck(2, 10*time.Second)
	if st, _ := r.Q.State(); st == feed.Fenced {
		t.Fatal("still fenced after the topic came")
	}
	if got := readAll(t, c.ListenAddrs(), "logs", 2); len(got) != 2 {
		t.Fatalf("%d records, want 2", len(got))
	}
}

func newClient(t *testing.T, c *closer, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestKafkaCreateTopics: createTopics makes the topic with the broker's
// defaults and the offsets topic compacted with one partition.
func TestKafkaCreateTopics(t *testing.T) {
	c := cluster(t, 0)
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)},
		Config{Topic: "logs", ExactlyOnce: true, OffsetsTopic: "offs", CreateTopics: true,
			Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}})
	r.Run()
	r.Publish("a")
	r.WaitAck(1, 10*time.Second)
	adm := kadm.NewClient(newClient(t, c))
	td, err := adm.ListTopics(context.Background(), "logs", "offs")
	if err != nil {
		t.Fatal(err)
	}
	if len(td["offs"].Partitions) != 1 || td["logs"].Err != nil {
		t.Fatalf("topics %+v", td)
	}
	rc, err := adm.DescribeTopicConfigs(context.Background(), "offs")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := rc.On("offs", nil)
	compact := false
	for _, kv := range cfg.Configs {
		if kv.Key == "cleanup.policy" && kv.MaybeValue() == "compact" {
			compact = true
		}
	}
	if !compact {
		t.Fatalf("offsets topic not compacted: %+v", cfg.Configs)
	}
}

// TestKafkaExactlyOnceResume: the batch and its offsets record commit in
// one transaction; a new sink (a restart: same transactional id) reads the
// offsets topic and skips what it holds, so the same lines delivered again
// land once.
func TestKafkaExactlyOnceResume(t *testing.T) {
	c := cluster(t, 0, kfake.SeedTopics(2, "logs"), kfake.SeedTopics(1, "offs"))
	cfg := Config{Topic: "logs", ExactlyOnce: true, OffsetsTopic: "offs", Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}}
	r1 := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)}, cfg)
	r1.Run()
	r1.Publish(grouptest.Lines("a", 0, 5)...)
	r1.WaitAck(5, 10*time.Second)
	if id := r1.s.TransactionalID(); id != "tailfeed-host1-k" {
		t.Fatalf("transactional id %q", id)
	}
	r1.Cancel()
	<-r1.G.Done()
	r1.s.Close()

	r2 := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)}, cfg)
	r2.Run()
	r2.Publish(grouptest.Lines("a", 0, 5)...) // the pointer was not committed: delivered again
	r2.Publish(grouptest.Lines("a", 5, 3)...)
	r2.WaitAck(8, 10*time.Second)
	got := readAll(t, c.ListenAddrs(), "logs", 8)
	seen := map[string]int{}
	for _, rec := range got {
		seen[string(rec.Value)]++
	}
	for _, l := range grouptest.Lines("a", 0, 8) {
		if seen[l] != 1 {
			t.Fatalf("line %s landed %d times (all: %v)", l, seen[l], seen)
		}
	}
	if len(got) != 8 {
		t.Fatalf("%d records, want 8", len(got))
	}
	offs := readAll(t, c.ListenAddrs(), "offs", 2)
	last := offs[len(offs)-1]
	if string(last.Key) != "host1:k:app:00000000000000e1" {
		t.Fatalf("offsets key %q", last.Key)
	}
	var v map[string]any
	if err := json.Unmarshal(last.Value, &v); err != nil {
		t.Fatal(err)
	}
	if v["feed"] != "app" || v["epoch"] != "00000000000000e1" || v["position"] != float64(8*8) {
		t.Fatalf("offsets value %s", last.Value)
	}
	if _, ok := v["fileKey"]; !ok {
		t.Fatalf("offsets value without fileKey: %s", last.Value)
	}
}

// TestKafkaPoisonFollowsOnFailure: a record over the broker's
// message.max.bytes is rejected; with deadLetter that line alone goes to
// the ledger and the others land (once, with exactlyOnce: the transaction
// holding the rejected record was aborted, never committed in part); with
// hold the feed stalls on it with the reason, nothing dead-lettered.
func TestKafkaPoisonFollowsOnFailure(t *testing.T) {
	raw := make([]byte, 6000)
	rand.Read(raw)
	big := base64.StdEncoding.EncodeToString(raw) // incompressible: over the limit on the wire too
	for _, eo := range []bool{false, true} {
		for _, of := range []processor.OnFailure{processor.DeadLetter, processor.Hold} {
			t.Run(fmt.Sprintf("exactlyOnce=%v/%v", eo, of), func(t *testing.T) {
				c := cluster(t, 0, kfake.SeedTopics(1, "logs", "offs"), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "2000"}))
				l, err := processor.OpenLedger(filepath.Join(t.TempDir(), "k.jsonl"), nil)
				if err != nil {
					t.Fatal(err)
				}
				r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: of, Ledger: l},
					Config{Topic: "logs", ExactlyOnce: eo, OffsetsTopic: "offs", Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}})
				r.Run()
				r.Publish("ok1", big, "ok2")
				if of == processor.Hold {
					grouptest.WaitFor(t, "a stall on the rejected record", func() bool {
						st, why := r.Q.State()
						return st == feed.Fenced && strings.Contains(why, "MESSAGE_TOO_LARGE")
					})
					time.Sleep(100 * time.Millisecond)
					if l.Len() != 0 || r.Q.AckPoint() > 1 {
						t.Fatalf("hold: ledger %d, ack %d", l.Len(), r.Q.AckPoint())
					}
					return
				}
				r.WaitAck(3, 10*time.Second)
				if l.Len() != 1 {
					t.Fatalf("ledger holds %d, want 1", l.Len())
				}
				got := readAll(t, c.ListenAddrs(), "logs", 2)
				var vals []string
				for _, rec := range got {
					vals = append(vals, string(rec.Value))
				}
				if eo && strings.Join(vals, ",") != "ok1,ok2" {
					t.Fatalf("exactlyOnce: read-committed %v, want [ok1 ok2]", vals)
				}
				if !eo && (len(vals) < 2 || vals[len(vals)-1] != "ok2" || !strings.Contains(strings.Join(vals, ","), "ok1")) {
					t.Fatalf("records %v, want ok1 and ok2 at least once", vals)
				}
				data, _ := os.ReadFile(l.Path())
				if !strings.Contains(string(data), "MESSAGE_TOO_LARGE") {
					t.Fatalf("dead letter does not name the error: %.300s", data)
				}
			})
		}
	}
}

// TestKafkaBrokerRestart: the cluster closed mid-run stalls the feed with
// the reason; a new cluster on the same port with the same data directory
// (kfake persists its log there) lets it resume by itself; every line
// lands exactly once (exactlyOnce) — nothing lost.
func TestKafkaBrokerRestart(t *testing.T) {
	port, data := freePort(t), t.TempDir()
	c := cluster(t, port, kfake.DataDir(data), kfake.SeedTopics(1, "logs", "offs"))
	addrs := c.ListenAddrs()
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)},
		Config{Topic: "logs", ExactlyOnce: true, OffsetsTopic: "offs", Timeout: time.Second,
			Client: []kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RetryTimeout(time.Second)}})
	r.Run()
	r.Publish(grouptest.Lines("a", 0, 50)...)
	r.WaitAck(50, 10*time.Second)
	c.Close()
	r.Publish(grouptest.Lines("a", 50, 50)...)
	grouptest.WaitFor(t, "a stall while the broker is down", func() bool {
		st, why := r.Q.State()
		return st == feed.Fenced && strings.Contains(why, "kafka")
	})
	_, why := r.Q.State()
	t.Logf("stalled: %s", why)
	c2 := cluster(t, port, kfake.DataDir(data))
	r.WaitAck(100, 30*time.Second) // resumed by itself
	r.Publish(grouptest.Lines("a", 100, 50)...)
	r.WaitAck(150, 30*time.Second)
	got := readAll(t, c2.ListenAddrs(), "logs", 150)
	seen := map[string]int{}
	for _, rec := range got {
		seen[string(rec.Value)]++
	}
	for _, l := range grouptest.Lines("a", 0, 150) {
		if seen[l] != 1 {
			t.Fatalf("line %s landed %d times", l, seen[l])
		}
	}
}
