package postgres

// Review 26e (independent review of c522651's postgres part: errors from
// connecting or making the tables are setupError, never rejected()).

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/internal/testutil/pgtest"
	"tailfeed/processor"
)

// D (the reverse: a table-level refusal dead-letters every line). The
// operator made the table (createTable false) and gave the sink's role
// INSERT on it but not SELECT (a write-only inbox role: INSERT … ON
// CONFLICT DO NOTHING needs no SELECT). The change retries a role refused
// CONNECT or CREATE at the cap ("an unavailable engine", its setupError
// comment; DESIGN §11 Failures: "only a record the engine rejects (too
// large, a constraint, an authorization error for that record) follows
// onFailure"). The sink's own read of its record (readRecord: SELECT
// max(position) FROM the table) is refused with 42501 for every batch —
// no record's fault — yet rejected() takes 42501 for a row rejection, so
// under onFailure deadLetter every line is dead-lettered (lossless false,
// the lines never in the table) instead of the subscriber holding with the
// reason until SELECT is granted. Expected: fenced with "permission
// denied", nothing dead-lettered; once SELECT is granted the lines land.
// Observed: both lines dead-lettered. Cause: sink/postgres/postgres.go
// try ~383 (readRecord's error is not a setupError) and rejected ~554
// (42501 taken for the rows whatever statement failed).
func TestRev26ERDRecordReadRefusedDeadLettersEveryLine(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	c.Psql(CreateSQL("inbox"))
	c.Psql(MarksSQL("inbox_marks"))
	c.Psql("CREATE ROLE writer LOGIN")
	c.Psql("GRANT INSERT ON inbox, inbox_marks TO writer")
	dsn := fmt.Sprintf("host=%s port=%d user=writer dbname=postgres", c.Socket, c.Port)
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter},
		Config{DSN: dsn, Table: "inbox"})
	r.Publish("w-1", "w-2")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st, why := r.Q.State()
		if r.ledger.Len() > 0 || (st == feed.Fenced && strings.Contains(why, "permission denied") && r.G.Failures() >= 4) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := r.ledger.Len(); n != 0 {
		items, _ := r.ledger.List(10)
		t.Fatalf("%d lines dead-lettered for the sink's own record read being refused (first error: %s); want the subscriber held at the cap", n, items[0].Error)
	}
	c.Psql("GRANT SELECT ON inbox, inbox_marks TO writer")
	r.WaitAck(2, 10*time.Second)
	wantOnce(t, rows(t, c, "inbox"), []string{"w-1", "w-2"})
}
