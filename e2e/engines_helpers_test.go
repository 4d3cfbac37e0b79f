package e2e

// Set-up shared by the tests that run the binary against the engines
// (kafka through kfake, nats through natstest, postgres through pgtest).

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"tailfeed/internal/natstest"
	"tailfeed/internal/testutil/pgtest"
)

// startKafka starts a one-broker kfake cluster with opts, closed when the test ends, and returns the broker's address.
func startKafka(t testing.TB, opts ...kfake.Opt) string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// kafkaAdmin returns an admin client of broker, closed when the test ends.
func kafkaAdmin(t testing.TB, broker string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// startNats starts a private nats server, creates streams on it and returns it with a JetStream client.
func startNats(t testing.TB, streams ...jetstream.StreamConfig) (*natstest.Server, jetstream.JetStream) {
	t.Helper()
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	for _, sc := range streams {
		if _, err := js.CreateStream(context.Background(), sc); err != nil {
			t.Fatal(err)
		}
	}
	return srv, js
}

// shortDupStream is a file-storage stream on subject.> whose 100 ms duplicate window hides no duplicate; batch allows fast batches.
func shortDupStream(name, subject string, batch bool) jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: name, Subjects: []string{subject + ".>"}, Storage: jetstream.FileStorage,
		Duplicates: 100 * time.Millisecond, AllowBatchPublish: batch}
}

// killWhen waits until done holds (or the daemon exits), kills the daemon -9 and fails t if it had exited before the kill.
func killWhen(t testing.TB, d *daemon, what string, timeout time.Duration, done func() bool) {
	t.Helper()
	waitUntil(t, what, timeout, func() bool { return done() || d.exited() })
	d.kill()
	if d.code != -1 {
		t.Fatalf("%s: exited %d before the kill\n%s", what, d.code, tail(d.log(), 3000))
	}
}

// notOnce counts the texts that got does not hold exactly once.
func notOnce(got map[string]int, texts []string) int {
	bad := 0
	for _, s := range texts {
		if got[s] != 1 {
			bad++
		}
	}
	return bad
}

// audPgStart starts a private PostgreSQL and an env on audPgTmpl (instance, a DSN carrying dsnOpts), with its input in.log.
func audPgStart(t *testing.T, instance, dsnOpts string) (*pgtest.Cluster, *env, *input) {
	t.Helper()
	c := pgtest.Start(t, pgtest.Options{})
	e := audPgEnv(t, c, instance, c.DSN(dsnOpts))
	return c, e, newInput(t, e.path("in.log"))
}

// startThenPgDown starts tailfeed on e, waits until it settled and stops the postgres server under it; it returns the running daemon and that report.
func startThenPgDown(t *testing.T, c *pgtest.Cluster, e *env) (*daemon, *report) {
	t.Helper()
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	c.Stop()
	return d, r
}

// releaseThrough releases the n lines pg holds (releaseHeld) and fails t unless the pointer is then at the end of in.
func releaseThrough(t *testing.T, d *daemon, in *input, n uint64) feedReport {
	t.Helper()
	f := releaseHeld(t, d, n)
	if f.Pointer == nil || f.Pointer.Offset != in.size() {
		t.Fatalf("precondition: after the release the pointer is %+v (input size %d)", f.Pointer, in.size())
	}
	return f
}

// restartAfterRelease stops d, starts the postgres server again and runs once over what is on disk (logging released.json as it was).
func restartAfterRelease(t *testing.T, c *pgtest.Cluster, e *env, d *daemon) (*daemon, feedReport) {
	t.Helper()
	d.stop()
	rel, _ := os.ReadFile(e.path("state/state/released.json"))
	c.StartServer()
	d, _, f := settledRun(t, e)
	t.Logf("released.json before the start: %s", rel)
	return d, f
}

// wantNothingReRead fails t, naming what, if run d (feed report f) re-read a line or the plain file sink got a duplicate of in.
func wantNothingReRead(t *testing.T, d *daemon, f feedReport, e *env, in *input, what string) {
	t.Helper()
	if dups := duplicateLines(t, in, e.path("plain.log")); f.Sequence != 0 || dups != 0 {
		t.Errorf("%s, nothing restored: %d lines re-read, plain file sink %d duplicates (want 0, 0); %q",
			what, f.Sequence, dups, grepLines(d.log(), "behind"))
	}
}

// wantNoSecondCatchUp runs once more after a catch-up and fails t if that start catches up again, re-reads or is lossy.
func wantNoSecondCatchUp(t *testing.T, e *env) {
	t.Helper()
	d3, _, f3 := settledRun(t, e)
	if strings.Contains(d3.log(), "committing the pointer back") || f3.Sequence != 0 || !f3.Lossless {
		t.Errorf("the start after the catch-up: sequence %d, %s, catch-up again %v", f3.Sequence, f3.lossFacts(), strings.Contains(d3.log(), "committing the pointer back"))
	}
}
