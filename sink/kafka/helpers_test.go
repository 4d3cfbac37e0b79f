package kafka

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// Every test here runs against franz-go's kfake cluster, in the test
// process, over real TCP on 127.0.0.1: no Kafka broker can be installed on
// these machines. The sink knows nothing of kfake.

// cluster starts a kfake cluster of one broker on 127.0.0.1 (port 0: a
// free one) and closes it at the test's end.
func cluster(t *testing.T, port int, opts ...kfake.Opt) *closer {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(c.Close) })
	return &closer{Cluster: c, once: &once}
}

// closer is a cluster whose Close may be called before the cleanup's.
type closer struct {
	*kfake.Cluster
	once *sync.Once
}

func (c *closer) Close() { c.once.Do(c.Cluster.Close) }

// freePort returns a port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	n, _ := strconv.Atoi(p)
	return n
}

// rig is a group on a real queue running a kafka sink.
type rig struct {
	*grouptest.Rig
	s *Sink
}

func newRig(t *testing.T, gc processor.GroupConfig, cfg Config) *rig {
	t.Helper()
	if gc.Name == "" {
		gc.Name = "k"
	}
	r := grouptest.New(t, gc)
	cfg.Group = r.G
	if cfg.Name == "" {
		cfg.Name = gc.Name
	}
	if cfg.Instance == "" {
		cfg.Instance = "host1"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Second
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.G.SetBatchProcessor(s)
	return &rig{Rig: r, s: s}
}

// readAll reads every committed record of topic (read-committed) until it
// has want records or within passes with nothing more.
func readAll(t *testing.T, addrs []string, topic string, want int, extra ...kgo.Opt) []*kgo.Record {
	t.Helper()
	opts := append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted())}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r); n++ })
		if len(out) >= want && n == 0 {
			break
		}
	}
	return out
}

func header(r *kgo.Record, k string) string {
	for _, h := range r.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return "\x00missing"
}
