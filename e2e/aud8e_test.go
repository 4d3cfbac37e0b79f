package e2e

// Audit 8e: DESIGN §11 (engine sinks, restored sinks and the catch-up) and
// §6's exactlyOnce file and count sinks across kill -9. Each TestAud8EX…
// failed on the product as audited (fixed in the twenty-sixth session) and
// names the DESIGN sentence it holds the product to; TestAud8EOK… are
// passing probes.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/testutil/pgtest"
)

const aud8eCountCatchUpConfig = cuHeader + cuFeed + cuProcessors + cuExact + `  - name: counter
    feed: app
    type: count
` + cuPlain

// TestAud8EXCountRecountsOlderEpochCatchUp — DESIGN §6 count: "the counts
// and the applied (epoch, position) per feed are saved atomically ...;
// re-deliveries are skipped"; §11 "A sink whose epoch is an older one of
// feeds/<feed>.epochs (§4) is caught up from that generation onward ...:
// the rest of it from the sink's position, every later generation still
// on disk, then the current file up to the pointer (other sinks skip what
// they hold through AlreadyApplied ...)". The count sink (whole lines: each
// input line is unique, so each counts 1) is NOT restored; an exactlyOnce
// file sink is restored to a copy whose record lies in the rotated
// generation. The catch-up re-reads the rest of in.log.1 and the whole
// current in.log: every one of those lines the count applied already, so
// its counts must stay one per line. (The exactlyOnce file sink was fixed
// for the same case — TestCatchUpOtherExactlyOnceSinkSkipsOlderEpochReRead
// — by keeping a record per epoch; the count keeps per-epoch positions
// only for glob feeds: sink/count/count.go ProcessBatch "if glob { …
// appliedFor }", so an older-epoch line is compared with the newest
// epoch's record and counted again, and the record then moves back to the
// older epoch, so the current file's lines are counted again too.)
func TestAud8EXCountRecountsOlderEpochCatchUp(t *testing.T) {
	e := newEnv(t, aud8eCountCatchUpConfig)
	in := newInput(t, e.path("in.log"))
	exact := e.path("exact.log")
	d, _, bak := backedUpThenMore(t, e, in, 3000, 1000)
	rotateOnce(t, in, 2000)
	d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.Sequence >= 3000 && len(parseOutput(t, in, exact).idx) == 6000
	})
	d.stop()
	state := e.path("state/state/count/counter.json")
	before := aud8eCounts(t, state)
	if sum, bad := aud8eSumOnes(before); sum != 6000 || bad != 0 {
		t.Fatalf("precondition: before the restore the count holds %d counts (%d keys not 1), want 6000 ones", sum, bad)
	}
	bak.restore()

	d2, _, f := settledRun(t, e)
	if missing := missingLines(t, in, exact); missing != 0 {
		t.Fatalf("precondition: the restored exactlyOnce sink lacks %d lines after the catch-up\n%s", missing, tail(d2.log(), 2000))
	}
	after := aud8eCounts(t, state)
	sum, bad := aud8eSumOnes(after)
	t.Logf("catch-up re-read %d lines; count: %d in all over %d keys", f.Sequence, sum, len(after))
	if sum != 6000 || bad != 0 {
		t.Errorf("the count (not restored) counted the catch-up's re-deliveries: %d counts over %d keys, %d keys not 1 (want 6000 ones: \"re-deliveries are skipped\")",
			sum, len(after), bad)
	}
}

// aud8eCounts reads a count processor's saved counts.
func aud8eCounts(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Counts map[string]uint64 `json:"counts"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return st.Counts
}

// aud8eSumOnes is the sum of the counts and how many are not 1.
func aud8eSumOnes(m map[string]uint64) (sum uint64, bad int) {
	for _, v := range m {
		sum += v
		if v != 1 {
			bad++
		}
	}
	return sum, bad
}

const aud8eKillConfig = `instance: aud8e-host
` + cuHeader + cuFeed + cuProcessors + cuExact + `  - name: counter
    feed: app
    type: count
    fsyncIntervalMillis: 20
  - name: pg
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    createTable: true
    retry: {initialMillis: 50, maxMillis: 400}
` + cuPlain

// aud8eShift rotates in.log numbered (in.log.N → in.log.N+1, in.log →
// in.log.1) and starts a new in.log with n lines; files[0] is the newest
// rotated one.
func aud8eShift(t *testing.T, in *input, files *[]string, n int) {
	t.Helper()
	for i := len(*files); i >= 1; i-- {
		if err := os.Rename(fmt.Sprintf("%s.%d", in.path, i), fmt.Sprintf("%s.%d", in.path, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	*files = append(*files, "")
	in.ends = nil
	in.appendLines(n)
}

// TestAud8EOKKill9RotatingCountExactPostgres — DESIGN §2 "after any crash
// the restart re-reads from the pointer ... never a gap", §6 exactlyOnce
// file ("Re-deliveries with AlreadyApplied are skipped") and count
// ("re-deliveries are skipped"), §11 postgres ("a re-delivery is a no-op,
// so every line lands once, with or without exactlyOnce"). Six kill -9s
// during bursts, half of them with the input rotated (numbered) while
// stopped or just before the kill; then a clean run: the exactlyOnce
// output is every file's bytes in order, the count one per line, the table
// one row per line, while the plain file sink shows the re-deliveries.
func TestAud8EOKKill9RotatingCountExactPostgres(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	e := newEnv(t, strings.ReplaceAll(aud8eKillConfig, "{{DSN}}", c.DSN("sslmode=disable")))
	conn := pgConnect(t, c)
	in := newInput(t, e.path("in.log"))
	exact := e.path("exact.log")
	var rotated []string
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 8))
	in.appendLines(3000)
	for k := range 6 {
		if k%2 == 1 {
			aud8eShift(t, in, &rotated, 500) // while stopped
		}
		from := countLines(t, exact, 0)
		d := e.spawn()
		burst := 3000 + rng.IntN(3000)
		in.appendLines(burst)
		if k%3 == 2 {
			aud8eShift(t, in, &rotated, 1000) // while running
		}
		after := 200 + rng.IntN(burst)
		killWhen(t, d, fmt.Sprintf("kill %d: %d more lines in exact.log", k, after), 60*time.Second, func() bool {
			return countLines(t, exact, 0) >= from+after
		})
	}
	d := e.start()
	d.waitSettled(90 * time.Second)
	d.stop()

	var want []byte
	for i := len(rotated); i >= 1; i-- {
		b, err := os.ReadFile(fmt.Sprintf("%s.%d", in.path, i))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, b...)
	}
	cur, _ := os.ReadFile(in.path)
	want = append(want, cur...)
	total := len(in.texts)
	if n := bytes.Count(want, []byte{'\n'}); n != total {
		t.Fatalf("the files hold %d lines, the input %d", n, total)
	}
	sameBytes(t, "exactlyOnce output after six kill -9s", exact, want)
	if sum, bad := aud8eSumOnes(aud8eCounts(t, e.path("state/state/count/counter.json"))); sum != uint64(total) || bad != 0 {
		t.Errorf("count: %d counts, %d keys not 1; want %d ones", sum, bad, total)
	}
	var rows, distinct int
	if err := conn.QueryRow(context.Background(), "SELECT count(*), count(DISTINCT line) FROM lines").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != total || distinct != total {
		t.Errorf("postgres: %d rows, %d distinct lines; want %d once each", rows, distinct, total)
	}
	plain, _ := os.ReadFile(e.path("plain.log"))
	t.Logf("%d lines in %d files; plain sink %d lines (re-deliveries %d)", total, len(rotated)+1, bytes.Count(plain, []byte{'\n'}), bytes.Count(plain, []byte{'\n'})-total)
}

const aud8ePgRoleConfig = `instance: aud8e-host
` + cuHeader + cuFeed + cuProcessors + `  - name: pg
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    createTable: {{CREATE}}
    onFailure: deadLetter
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 200, attempts: 2}
`

// aud8ePgHeldNotDeadLettered runs tailfeed as role tfuser over 50 lines
// until settled, then breaks the role's access (brk, then every tfuser
// session is terminated so the sink connects again), appends 50 lines and
// holds DESIGN §11 Failures: "A connection failure, timeout or unavailable
// engine is retried at the backoff cap whatever onFailure says (the feed
// stalls with the reason; nothing lost, nothing dead-lettered); only a
// record the engine rejects (too large, a constraint, an authorization
// error for that record) follows onFailure." Then fix runs and every line
// must land once.
func aud8ePgHeldNotDeadLettered(t *testing.T, c *pgtest.Cluster, brk, fix func()) {
	dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=tfuser dbname=postgres sslmode=disable", c.Port)
	e := newEnv(t, strings.NewReplacer("{{DSN}}", dsn, "{{CREATE}}", "true").Replace(aud8ePgRoleConfig))
	in := newInput(t, e.path("in.log"))
	in.appendLines(50)
	d := e.start()
	d.waitSettled(30 * time.Second)
	brk()
	c.Psql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'tfuser'`)
	in.appendLines(50)
	start := time.Now()
	r := d.waitFor("stalled for 2 s, or a dead letter", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.DeadLettered > 0 || (f.Stalled != nil && time.Since(start) > 2*time.Second)
	})
	f := r.feed(t, "app")
	stalled := "<nil>"
	if f.Stalled != nil {
		stalled = *f.Stalled
	}
	if f.DeadLettered != 0 || f.Stalled == nil {
		t.Errorf("the server refused the sink's session, not a record: want the feed stalled with the reason and nothing dead-lettered; got deadLettered %d, lossless %v, stalled %q",
			f.DeadLettered, f.Lossless, stalled)
	} else {
		t.Logf("stalled: %s", stalled)
	}
	fix()
	d.waitFor("settled after the grant", 30*time.Second, func(r *report) bool { return r.Settled })
	d.stop()
	conn := pgConnect(t, c)
	var rows int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM lines").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(in.texts) {
		t.Errorf("after the grant the table holds %d rows, want %d (the others went to the dead-letter ledger)", rows, len(in.texts))
	}
}

// TestAud8EXPostgresNoConnectPrivilegeDeadLetters: while tailfeed runs,
// the role loses CONNECT on the database (REVOKE CONNECT) and its session
// ends: the server refuses the new session with SQLSTATE 42501 at connect
// ("permission denied for database"). That is a connection failure, no
// record's fault — yet sink/postgres/postgres.go rejected() takes any 42501
// for a rejected row (ProcessBatch "if rejected(err) { return done, err
// }"), also the connect's (try → connect → open wraps pgx's ConnectError,
// which unwraps to the PgError), so the group dead-letters every line
// under onFailure: deadLetter. (At start the same refusal holds — the
// catch-up's DoneThrough stalls — so only a running daemon shows it.)
func TestAud8EXPostgresNoConnectPrivilegeDeadLetters(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	c.Psql(`CREATE ROLE tfuser LOGIN`)
	c.Psql(`REVOKE CONNECT ON DATABASE postgres FROM PUBLIC`)
	c.Psql(`GRANT CONNECT ON DATABASE postgres TO tfuser`)
	c.Psql(`GRANT CREATE ON SCHEMA public TO tfuser`)
	aud8ePgHeldNotDeadLettered(t, c, func() {
		c.Psql(`REVOKE CONNECT ON DATABASE postgres FROM tfuser`)
	}, func() {
		c.Psql(`GRANT CONNECT ON DATABASE postgres TO tfuser`)
	})
}

// TestAud8EXPostgresCreateTableNoSchemaPrivilegeDeadLetters: createTable:
// true; while tailfeed runs, the role loses CREATE on the schema (the
// table and its marks table exist and stay granted) and its session ends.
// At the reconnect CREATE TABLE IF NOT EXISTS is refused with 42501
// ("permission denied for schema public") — the engine refusing the sink's
// setup, not a record — and the sink hands it to the group as a rejected
// record (postgres.go open → "postgres create table …: %w"; rejected()
// takes 42501), so every line is dead-lettered.
func TestAud8EXPostgresCreateTableNoSchemaPrivilegeDeadLetters(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	c.Psql(`CREATE ROLE tfuser LOGIN`)
	c.Psql(`GRANT CREATE ON SCHEMA public TO tfuser`)
	aud8ePgHeldNotDeadLettered(t, c, func() {
		c.Psql(`REVOKE CREATE ON SCHEMA public FROM tfuser`)
	}, func() {
		c.Psql(`GRANT CREATE ON SCHEMA public TO tfuser`)
	})
}

// TestAud8EOKTwoRestoredSinksOlderAndSameEpoch — DESIGN §11: "the pointer
// is committed back to that position ... and the whole feed re-reads from
// it" and "A sink whose epoch is an older one of feeds/<feed>.epochs (§4)
// is caught up from that generation onward": two exactlyOnce file sinks
// restored at once, "exact" to a copy in the rotated generation, "other"
// to a copy in the middle of the current one. The catch-up starts at the
// earlier of the two; both outputs end byte-identical to the two files.
func TestAud8EOKTwoRestoredSinksOlderAndSameEpoch(t *testing.T) {
	e := newEnv(t, catchUpConfig)
	in := newInput(t, e.path("in.log"))
	exact := e.path("exact.log")
	d, _, bak := backedUpThenMore(t, e, in, 3000, 1000)
	rotateOnce(t, in, 1000)
	d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
		return r.Settled && len(parseOutput(t, in, exact).idx) == 5000
	})
	d.stop()
	bakOther := backupSink(t, e, e.path("other.log"), "other")
	d = e.start()
	in.appendLines(1000)
	d.waitFor("1000 more", 60*time.Second, func(r *report) bool {
		return r.Settled && len(parseOutput(t, in, exact).idx) == 6000
	})
	d.stop()
	bak.restore()
	bakOther.restore()
	rot, _ := os.ReadFile(in.path + ".1")
	cur, _ := os.ReadFile(in.path)
	want := append(bytes.Clone(rot), cur...)
	d, _, f := settledRun(t, e)
	if !strings.Contains(d.log(), "committing the pointer back") || f.Sequence < 2000 {
		t.Fatalf("precondition: no catch-up (%d lines read)", f.Sequence)
	}
	sameBytes(t, "exact (restored into the rotated generation)", exact, want)
	sameBytes(t, "other (restored within the current generation)", e.path("other.log"), want)
	if !f.Lossless {
		t.Errorf("lossless false: %s", f.lossFacts())
	}
}
