package postgres

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/internal/grouptest"
	"tailfeed/internal/testutil/pgtest"
	"tailfeed/processor"
)

// doneThrough calls the sink's DoneThrough and fails the test on an error.
func doneThrough(t *testing.T, s *Sink) []processor.Mark {
	t.Helper()
	m, err := s.DoneThrough(context.Background())
	if err != nil {
		t.Fatalf("DoneThrough: %v", err)
	}
	return m
}

// TestDoneThroughPerEpoch: DoneThrough reports max(position) of this
// instance's and feed's rows per epoch (not other instances' or feeds'),
// the marks table where it is further; a missing table is no record.
func TestDoneThroughPerEpoch(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	dsn := c.DSN("sslmode=disable")
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)}, Config{DSN: dsn, Table: "nothere", Feed: "app"})
	if m := doneThrough(t, r.sink); len(m) != 0 {
		t.Fatalf("a missing table: %v, want no record", m)
	}
	c.Psql(CreateSQL("lines") + "; " + MarksSQL("lines_marks"))
	c.Psql(`INSERT INTO lines (instance, feed, epoch, position, path, line) VALUES
		('host-a', 'app', '00000000000000e1', 10, '/in.log', 'x'), ('host-a', 'app', '00000000000000e1', 30, '/in.log', 'x'),
		('host-a', 'app', '00000000000000e2', 7, '/in.log', 'x'), ('host-a', 'app', '00000000000000e3', 5, '/in.log', 'x'),
		('host-b', 'app', '00000000000000e1', 99, '/in.log', 'x'), ('host-a', 'other', '00000000000000e1', 98, '/in.log', 'x')`)
	c.Psql(`INSERT INTO lines_marks (instance, feed, epoch, position) VALUES
		('host-a', 'app', '00000000000000e2', 12), ('host-a', 'app', '00000000000000e3', 4), ('host-a', 'app', '00000000000000e4', 40),
		('host-b', 'app', '00000000000000e2', 97)`)
	r2 := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)}, Config{DSN: dsn, Table: "lines", Feed: "app"})
	want := []processor.Mark{{Epoch: 0xe1, Position: 30}, {Epoch: 0xe2, Position: 12}, {Epoch: 0xe3, Position: 5}, {Epoch: 0xe4, Position: 40}}
	if got := doneThrough(t, r2.sink); !slices.Equal(got, want) {
		t.Fatalf("DoneThrough %v, want %v", got, want)
	}
	c.Psql("DROP TABLE lines_marks")
	want = []processor.Mark{{Epoch: 0xe1, Position: 30}, {Epoch: 0xe2, Position: 7}, {Epoch: 0xe3, Position: 5}}
	if got := doneThrough(t, r2.sink); !slices.Equal(got, want) {
		t.Fatalf("without the marks table: DoneThrough %v, want %v", got, want)
	}
	c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if m, err := r2.sink.DoneThrough(ctx); err == nil {
		t.Fatalf("server down: %v, want an error (the caller retries)", m)
	}
}

// TestFilteredTailIsMarked (DESIGN §11: every built-in record advances over
// the lines the sink filtered, dead-lettered or was released from): a run
// whose last lines are filtered out, or whose last batch the filters empty,
// or whose last line is dead-lettered, reports the end of those lines as
// done-through, not its last row — so the next start is not "behind" and
// re-reads nothing. Before the marks table it reported the last row.
func TestFilteredTailIsMarked(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	dsn := c.DSN("sslmode=disable")
	c.Psql(CreateSQL("lines"))
	c.Psql(`ALTER TABLE lines ADD CONSTRAINT no_poison CHECK (position('\x504f49534f4e'::bytea in line) = 0)`)
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter,
		Exclude: regexp.MustCompile("^skip")}, Config{DSN: dsn, Feed: "app"})
	r.Publish("a-1", "a-2", "skip-3", "skip-4") // a filtered tail: positions 4, 8, 15, 22
	r.WaitAck(4, 10*time.Second)
	if got, want := doneThrough(t, r.sink), []processor.Mark{{Epoch: 0xe1, Position: 22}}; !slices.Equal(got, want) {
		t.Fatalf("after a filtered tail: DoneThrough %v, want %v (the last row is at 8)", got, want)
	}
	r.Publish("skip-5", "skip-6") // filtered whole: 29, 36
	r.WaitAck(6, 10*time.Second)
	if got, want := doneThrough(t, r.sink), []processor.Mark{{Epoch: 0xe1, Position: 36}}; !slices.Equal(got, want) {
		t.Fatalf("after a batch filtered whole: DoneThrough %v, want %v", got, want)
	}
	r.Publish("a-7", "POISON-8") // 40, 49: the poison line dead-lettered
	r.WaitAck(8, 10*time.Second)
	if got, want := doneThrough(t, r.sink), []processor.Mark{{Epoch: 0xe1, Position: 49}}; !slices.Equal(got, want) {
		t.Fatalf("after a dead-lettered tail: DoneThrough %v, want %v", got, want)
	}
	wantOnce(t, rows(t, c, "lines"), []string{"a-1", "a-2", "a-7"})
	if got := c.Psql("SELECT position FROM lines_marks WHERE instance = 'host-a' AND feed = 'app' AND epoch = '00000000000000e1'"); got != "49" {
		t.Fatalf("marks table holds %q, want 49", got)
	}

	// A new sink (a restart) reads the mark as its record: the filtered
	// and dead-lettered lines delivered again are not written.
	r.Cancel()
	<-r.G.Done()
	r2 := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter},
		Config{DSN: dsn, Feed: "app"})
	r2.Publish("a-1", "a-2", "skip-3", "skip-4", "skip-5", "skip-6", "a-7", "POISON-8", "a-9")
	r2.WaitAck(9, 10*time.Second)
	wantOnce(t, rows(t, c, "lines"), []string{"a-1", "a-2", "a-7", "a-9"})
	if r2.ledger.Len() != 0 {
		t.Fatalf("%d dead letters: the record covers the poison line", r2.ledger.Len())
	}

	// The first run's dead letter replayed (the constraint dropped) is
	// written, and moves neither the record nor the mark.
	c.Psql("ALTER TABLE lines DROP CONSTRAINT no_poison")
	rr := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter, Ledger: r.ledger},
		Config{DSN: dsn, Feed: "app"})
	if res, err := rr.G.Replay(context.Background(), 10); err != nil || res.Replayed != 1 {
		t.Fatalf("replay = %+v, %v", res, err)
	}
	wantOnce(t, rows(t, c, "lines"), []string{"a-1", "a-2", "a-7", "POISON-8", "a-9"})
	if got, want := doneThrough(t, rr.sink), []processor.Mark{{Epoch: 0xe1, Position: 53}}; !slices.Equal(got, want) {
		t.Fatalf("after the replay: DoneThrough %v, want %v", got, want)
	}
	if got := c.Psql("SELECT position FROM lines_marks"); got != "49" {
		t.Fatalf("marks table holds %q after the replay, want 49", got)
	}
}

// TestNoMarksTableIsMade: an existing table without its marks table (no
// createTable) gets one at connect, so a filtered tail is recorded (a
// start after it re-reads nothing); a role that may not create it still
// has every line taken, and the sink says once that the tail is not
// recorded.
func TestNoMarksTableIsMade(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	c.Psql(CreateSQL("lines"))
	var logs syncBuf
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), Exclude: regexp.MustCompile("^skip")},
		Config{DSN: c.DSN("sslmode=disable"), Table: "lines", Feed: "app", Logger: log})
	r.Publish("a-1", "skip-2")
	r.Publish("skip-3")
	r.Publish("a-4", "skip-5")
	r.WaitAck(5, 10*time.Second)
	wantOnce(t, rows(t, c, "lines"), []string{"a-1", "a-4"})
	if n := strings.Count(logs.String(), "marks table missing"); n != 0 {
		t.Fatalf("%d warnings about the marks table, want 0 (it was made):\n%s", n, logs.String())
	}
	if got, want := doneThrough(t, r.sink), []processor.Mark{{Epoch: 0xe1, Position: 29}}; !slices.Equal(got, want) {
		t.Fatalf("DoneThrough %v, want %v (the filtered tail)", got, want)
	}

	// A role without CREATE on the schema: the marks table is not made.
	c.Psql("DROP TABLE lines_marks")
	c.Psql("TRUNCATE lines")
	c.Psql("CREATE ROLE weak LOGIN PASSWORD 'weakpw'")
	c.Psql("GRANT SELECT, INSERT, UPDATE ON lines TO weak")
	c.Psql("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
	dsn := fmt.Sprintf("postgres://weak:weakpw@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
	var logs2 syncBuf
	log2 := hclog.New(&hclog.LoggerOptions{Output: &logs2, Level: hclog.Warn})
	r2 := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), Exclude: regexp.MustCompile("^skip")},
		Config{DSN: dsn, Table: "lines", Feed: "app", Logger: log2})
	r2.Publish("a-1", "skip-2")
	r2.Publish("skip-3")
	r2.Publish("a-4", "skip-5")
	r2.WaitAck(5, 10*time.Second)
	if n := strings.Count(logs2.String(), "marks table missing"); n != 1 {
		t.Fatalf("%d warnings about the marks table, want 1:\n%s", n, logs2.String())
	}
	if got, want := doneThrough(t, r2.sink), []processor.Mark{{Epoch: 0xe1, Position: 22}}; !slices.Equal(got, want) {
		t.Fatalf("DoneThrough %v, want %v (the last row)", got, want)
	}
}
