package e2e

// Black-box audit of DESIGN §11 'postgres' and 'A restored sink is caught
// up from the input' (and the top-level `instance` key). Tests named
// TestAudX... are findings: each fails on the code it was written against,
// and its comment quotes the DESIGN sentence, what it expects and what the
// binary does. Tests named TestAudOK... are passing probes of rules that
// were checked and found kept.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tailfeed/internal/testutil/pgtest"
)

// audPgTmpl: one COMMITTED feed, a postgres sink and a plain file sink
// (the control that receives a catch-up's re-read as duplicates).
// {{INSTANCE}} is the instance line (or nothing: the default).
const audPgTmpl = `{{INSTANCE}}dataDir: ./state
status:
  listen: {{ADDR}}
  token: tok
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
    rotateWaitMillis: 200
    pollIntervalMillis: 50
processors:
  - name: pg
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    createTable: true
    retry: {initialMillis: 50, maxMillis: 400}
  - name: plain
    feed: app
    type: file
    path: ./plain.log
    fsync: never
`

func audPgEnv(t *testing.T, c *pgtest.Cluster, instance, dsn string) *env {
	t.Helper()
	inst := ""
	if instance != "" {
		inst = "instance: " + instance + "\n"
	}
	cfg := strings.ReplaceAll(audPgTmpl, "{{INSTANCE}}", inst)
	return newEnv(t, strings.ReplaceAll(cfg, "{{DSN}}", dsn))
}

// wantCaughtUpOnce fails t unless, after the catch-up run d (feed report f), the table holds every line of in once and f is lossless without a lost tail, and a start after it re-reads nothing and stays lossless (wantNoSecondCatchUp).
func wantCaughtUpOnce(t *testing.T, c *pgtest.Cluster, e *env, in *input, d *daemon, f feedReport) {
	t.Helper()
	if s := audRowsOnce(t, c, in); s != "" {
		t.Errorf("after the restart: %s; catch-up in the log: %v", s, strings.Contains(d.log(), "committing the pointer back"))
	}
	if !f.Lossless || f.LostTails != 0 {
		t.Errorf("after a catch-up of lines on disk: %s", f.lossFacts())
	}
	wantNoSecondCatchUp(t, e)
}

// audRowsOnce checks that the table holds every input line exactly once
// (by text) and returns a description of what is wrong ("" when right).
func audRowsOnce(t *testing.T, c *pgtest.Cluster, in *input) string {
	t.Helper()
	got := pgLines(t, c, "lines")
	missing, dups := 0, 0
	first := -1
	for i, s := range in.texts {
		switch n := got[s]; {
		case n == 0:
			missing++
			if first < 0 {
				first = i
			}
		case n > 1:
			dups += n - 1
		}
	}
	if missing == 0 && dups == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d lines missing from the table (first: line %d), %d duplicated", missing, len(in.texts), first, dups)
}

// TestAudOKPostgresTableShape checks DESIGN §11 postgres: "inserting
// (instance text, feed text, epoch text, position bigint, path text, line
// bytea, inserted_at timestamptz) with ON CONFLICT (instance, feed, epoch,
// position) DO NOTHING ...; createTable: true creates the table and its
// unique key", and §11 Instance: "default the host name". Expected: those
// columns with those types, a unique key on exactly those four columns,
// epoch 16 lowercase hex, position the byte offset after the line, the
// instance column the host name when `instance` is not set.
func TestAudOKPostgresTableShape(t *testing.T) {
	c, e, in := audPgStart(t, "", "sslmode=disable")
	in.appendLines(50)
	_, _, f := settledRun(t, e)
	cols := c.Psql(`SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'lines'`)
	want := "instance text, feed text, epoch text, position bigint, path text, line bytea, inserted_at timestamp with time zone"
	if cols != want {
		t.Errorf("columns of the created table: %q, want %q", cols, want)
	}
	key := c.Psql(`SELECT string_agg(a.attname, ',' ORDER BY array_position(i.indkey, a.attnum)) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'lines'::regclass AND i.indisunique GROUP BY i.indexrelid`)
	if key != "instance,feed,epoch,position" {
		t.Errorf("unique key of the created table: %q, want instance,feed,epoch,position", key)
	}
	host, _ := os.Hostname()
	row := c.Psql(`SELECT instance || '|' || feed || '|' || epoch || '|' || position || '|' || path FROM lines ORDER BY position LIMIT 1`)
	abs, _ := filepath.Abs(in.path)
	wantRow := fmt.Sprintf("%s|app|%s|%d|%s", host, f.Pointer.Epoch, in.ends[0], abs)
	if row != wantRow {
		t.Errorf("first row %q, want %q", row, wantRow)
	}
	if s := audRowsOnce(t, c, in); s != "" {
		t.Error(s)
	}
}

// TestAudOKPostgresRowsDeletedCaughtUp checks DESIGN §11: "Its record is
// max(position) per (instance, feed, epoch)" and "A sink is behind only
// when its epoch equals the pointer's and its position is smaller: the
// pointer is committed back to that position ... every subscriber receives
// the gap again". The operator deletes the table's last 800 rows while
// tailfeed is stopped; another instance's row in the same feed and epoch at
// a far higher position must not count as this sink's record. Expected:
// caught up, every line once in the table, the plain file sink receives
// the 800 lines again, lossless.
func TestAudOKPostgresRowsDeletedCaughtUp(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable")
	in.appendLines(2000)
	_, _, f := settledRun(t, e)
	c.Psql(fmt.Sprintf(`DELETE FROM lines WHERE position > %d`, in.ends[1199]))
	c.Psql(fmt.Sprintf(`INSERT INTO lines (instance, feed, epoch, position, path, line) VALUES ('other-host', 'app', '%s', 999999999, '/x', '\x41')`, f.Pointer.Epoch))
	d, _, f2 := settledRun(t, e)
	c.Psql(`DELETE FROM lines WHERE instance = 'other-host'`)
	if dups := duplicateLines(t, in, e.path("plain.log")); dups != 800 {
		t.Errorf("plain file sink: %d duplicates, want the 800 lines of the gap again", dups)
	}
	wantCaughtUpOnce(t, c, e, in, d, f2)
}

// TestAudOKPostgresOlderGenerationRowsDeleted checks DESIGN §11: "A sink
// whose epoch is an older one of feeds/<feed>.epochs is caught up from that
// generation onward if it is still on disk: the rest of it from the sink's
// position, every later generation still on disk, then the current file up
// to the pointer". 1500 lines in in.log, rotated to in.log.1, 500 lines in
// the new in.log; while stopped the operator deletes the rows past line 999
// of the first epoch and every row of the second. Expected: every line once
// in the table, lossless.
func TestAudOKPostgresOlderGenerationRowsDeleted(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable")
	in.appendLines(1500)
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	epoch1 := r.feed(t, "app").Pointer.Epoch
	cut := in.ends[999]
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	in.ends = nil
	in.appendLines(500)
	d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.Pointer != nil && f.Pointer.Epoch != epoch1 && f.Pointer.Offset == in.size()
	})
	d.stop()
	c.Psql(fmt.Sprintf(`DELETE FROM lines WHERE (epoch = '%s' AND position > %d) OR epoch <> '%s'`, epoch1, cut, epoch1))
	d, _, f := settledRun(t, e)
	wantCaughtUpOnce(t, c, e, in, d, f)
}

// TestAudOKPostgresFreshPointerNotAGap checks DESIGN §11: "A fresh pointer
// (no valid slot) is not a gap" and §3 "A pointer file ... with no valid
// slot, is a WARN and a fresh start at 0 under a new epoch (re-read, never
// skip)". The pointer file is zeroed while stopped; the table holds every
// line under the old epoch. Expected: lossless, no lost tail; every line in
// the table (the re-read lands under the new epoch).
func TestAudOKPostgresFreshPointerNotAGap(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable")
	in.appendLines(1000)
	settledRun(t, e)
	if err := os.WriteFile(e.path("state/feeds/app.ptr"), make([]byte, 1024), 0o600); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	in.appendLines(100)
	r := d.waitFor("all lines", 60*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").Pointer.Offset == in.size()
	})
	d.stop()
	f := r.feed(t, "app")
	if !f.Lossless || f.LostTails != 0 || f.LostBytes != 0 {
		t.Errorf("a fresh pointer counted as a gap: %s", f.lossFacts())
	}
	got := pgLines(t, c, "lines")
	for i, s := range in.texts {
		if got[s] == 0 {
			t.Fatalf("line %d missing from the table", i)
		}
	}
}

// TestAudOKPostgresAheadOnlySkips checks DESIGN §11: "A sink ahead of the
// pointer only skips (AlreadyApplied)". The pointer file is put back to a
// copy from 1000 lines earlier while stopped. Expected: the table holds
// every line once, lossless; the plain file sink gets the 1000 lines again.
func TestAudOKPostgresAheadOnlySkips(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable")
	audPointerPutBack1000(t, e, in)
	_, _, f := settledRun(t, e)
	if s := audRowsOnce(t, c, in); s != "" {
		t.Error(s)
	}
	if !f.Lossless || f.Pointer.Offset != in.size() {
		t.Errorf("pointer put back: %s, pointer %d of %d", f.lossFacts(), f.Pointer.Offset, in.size())
	}
	if dups := duplicateLines(t, in, e.path("plain.log")); dups != 1000 {
		t.Errorf("plain file sink: %d duplicates, want 1000", dups)
	}
}

// audSecret is the postgres role's password in the secrecy tests.
const audSecret = "Sekr3tPwZ9"

// TestAudOKPostgresDSNSecret checks DESIGN §11 Secrets: "Secrets (dsn ...)
// never appear in logs, config.lastError, /admin/reload answers or
// feed.status (shown as ***)" and "a literal secret is accepted with a WARN
// at start naming the key". A literal password in the DSN; then a reload
// that changes the password to a wrong one (the sink reconnects and fails:
// the stall reason), and a reload with an unparsable DSN holding the
// password. Expected: the WARN naming processors[...].dsn, the password
// nowhere in the log, status, config.lastError or reload answers.
func TestAudOKPostgresDSNSecret(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{Password: audSecret})
	dsn := fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", audSecret, c.Port)
	e := audPgEnv(t, c, "e2e-host", dsn)
	in := newInput(t, e.path("in.log"))
	in.appendLines(10)
	d := e.start()
	d.waitSettled(60 * time.Second)
	var seen []string
	look := func(what string) {
		for _, p := range []string{"/feed.status", "/metrics", "/healthz", "/admin/dlq/pg"} {
			_, _, body := request(t, d, http.MethodGet, p, "tok", nil)
			seen = append(seen, what+" "+p+": "+string(body))
		}
	}
	look("start")
	reload := func(text string) {
		if err := os.WriteFile(e.cfg, []byte(strings.ReplaceAll(text, addrPlaceholder, d.addr)), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, body := request(t, d, http.MethodPost, "/admin/reload", "tok", nil)
		seen = append(seen, fmt.Sprintf("reload answer %d: %s", code, body))
	}
	wrong := strings.ReplaceAll(e.tmpl, audSecret, audSecret+"X")
	reload(wrong)
	in.appendLines(5)
	waitUntil(t, "the stall over the wrong password", 30*time.Second, func() bool {
		r, err := d.status()
		return err == nil && r.feed(t, "app").Stalled != nil
	})
	look("wrong password")
	reload(strings.ReplaceAll(e.tmpl, "@127.0.0.1:", "@127.0.0.1:x"))
	look("bad dsn")
	d.stop()
	seen = append(seen, "log: "+d.log())
	all := strings.Join(seen, "\n")
	if strings.Contains(all, audSecret) {
		for _, s := range seen {
			if i := strings.Index(s, audSecret); i >= 0 {
				t.Errorf("the DSN's password shows: ...%s...", s[max(0, i-300):min(len(s), i+100)])
			}
		}
	}
	if !strings.Contains(d.log(), "processors[pg].dsn") && !strings.Contains(d.log(), "processors[0].dsn") {
		t.Errorf("no WARN naming the dsn key for a literal password:\n%s", tail(d.log(), 2000))
	}
	t.Logf("%s", tail(all, 3000))
}

// audReloadInstance rewrites the running daemon d's config with instance
// host-a changed to to and asks d to reload it; it returns the answer.
func audReloadInstance(t *testing.T, e *env, d *daemon, to string) (int, []byte) {
	t.Helper()
	text := strings.ReplaceAll(e.tmpl, "instance: host-a", "instance: "+to)
	if err := os.WriteFile(e.cfg, []byte(strings.ReplaceAll(text, addrPlaceholder, d.addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, body := request(t, d, http.MethodPost, "/admin/reload", "tok", nil)
	return code, body
}

// TestAudXReloadInstanceNotApplied checks DESIGN §12 Reload: "The new
// file is validated whole first ... If valid, the difference is applied
// without a restart", with §11: "instance ... names this sidecar in every
// engine-side identity: ... postgres' instance column". A reload that
// changes only `instance` (host-a → host-b) is answered 200
// {"status":"reloaded"}; the lines written after it must then land under
// instance host-b (or, were instance not reloadable, the reload must say
// so rather than report it applied). Observed: 200 "reloaded", no WARN,
// and every later row still carries instance host-a — the running config
// and the engine-side identity silently disagree until a restart (a
// second sidecar renamed this way goes on deduplicating against the old
// name).
func TestAudXReloadInstanceNotApplied(t *testing.T) {
	c, e, in := audPgStart(t, "host-a", "sslmode=disable")
	in.appendLines(10)
	d := e.start()
	d.waitSettled(60 * time.Second)
	code, body := audReloadInstance(t, e, d, "host-b")
	if code != http.StatusOK {
		t.Skipf("reload refused (%d %s): instance is not reloadable and says so", code, body)
	}
	in.appendLines(10)
	d.waitFor("20 lines", 60*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").Pointer.Offset == in.size()
	})
	d.stop()
	after := c.Psql(fmt.Sprintf(`SELECT string_agg(DISTINCT instance, ',') FROM lines WHERE position > %d`, in.ends[9]))
	if after != "host-b" {
		t.Errorf("reload of instance host-a → host-b answered %d %s; rows written after it carry instance %q, want host-b", code, body, after)
	}
}

// audPgTwoTmpl: audPgTmpl plus a second postgres sink (table lines2) and
// an exactlyOnce file sink, both never restored.
const audPgTwoTmpl = audPgTmpl + `  - name: pg2
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines2
    createTable: true
    retry: {initialMillis: 50, maxMillis: 400}
  - name: other
    feed: app
    type: file
    path: ./other.log
    exactlyOnce: true
    fsync: never
`

// TestAudXCatchUpGoneGenerationInboxOnce checks DESIGN §11 postgres: "ON
// CONFLICT (instance, feed, epoch, position) DO NOTHING (the inbox
// pattern: a re-delivery is a no-op, so every line lands once, with or
// without exactlyOnce)", with §11 catch-up: a sink in an older generation
// "is caught up from that generation onward if it is still on disk: ...
// every later generation still on disk, then the current file up to the
// pointer (other sinks skip what they hold through AlreadyApplied ...); a
// generation that is gone is counted (lostTails + 1, lostBytes where
// known), named in detail, lossless false".
//
// 2000 lines in in.log (epoch E1), rotated to in.log.1, 500 lines in the
// new in.log (epoch E2, the pointer's). While stopped the operator deletes
// the rows of table "lines" (sink pg) past line 1199 of E1 and every row of
// E2, and in.log.1 is deleted. Sink pg2 (table lines2) is never touched and
// holds every line once.
//
// Expected: the gone part of E1 counted (it is: lostTails 1, lostBytes
// exact, detail naming the sink); the current file — still on disk, the
// pointer's own generation E2 — is read under E2, so pg2's inbox key
// (instance, feed, E2, position) makes the re-delivery a no-op: lines2
// still holds every line exactly once. Observed: after counting the gone
// generation, the source compares in.log with E1's record, calls it
// "pointer input replaced", and reads it under a NEW epoch: every one of
// the 500 lines of the current file lands in lines2 a second time (and the
// never-restored exactlyOnce file sink writes them again too). The README
// documents this ("the file at the path is then read under a new epoch"),
// which contradicts DESIGN's "every line lands once".
func TestAudXCatchUpGoneGenerationInboxOnce(t *testing.T) {
	c, e, in := audPgTwoStart(t)
	in.appendLines(2000)
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	epoch1 := r.feed(t, "app").Pointer.Epoch
	ends1 := append([]int64(nil), in.ends...)
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	in.ends = nil
	in.appendLines(500)
	d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.Pointer != nil && f.Pointer.Epoch != epoch1 && f.Pointer.Offset == in.size()
	})
	d.stop()
	c.Psql(fmt.Sprintf(`DELETE FROM lines WHERE (epoch = '%s' AND position > %d) OR epoch <> '%s'`, epoch1, ends1[1199], epoch1))
	if err := os.Remove(in.path + ".1"); err != nil {
		t.Fatal(err)
	}
	d, _, f := settledRun(t, e)
	want := uint64(ends1[1999] - ends1[1199])
	detail := ""
	if f.Detail != nil {
		detail = *f.Detail
	}
	if f.Lossless || f.LostTails != 1 || f.LostBytes != want || !strings.Contains(detail, "catch-up of sink pg") {
		t.Errorf("gone generation: %s; want lostTails 1 lostBytes %d, detail naming sink pg", f.lossFacts(), want)
	}
	got := pgLines(t, c, "lines2")
	dups, missing := 0, 0
	for _, s := range in.texts {
		if got[s] > 1 {
			dups += got[s] - 1
		}
		if got[s] == 0 {
			missing++
		}
	}
	if dups != 0 || missing != 0 {
		t.Errorf("never-restored postgres inbox lines2 after pg's catch-up: %d lines twice, %d missing (want every line once); %q",
			dups, missing, grepLines(d.log(), "under a new epoch"))
	}
	t.Logf("never-restored exactlyOnce file sink: %d duplicate lines", duplicateLines(t, in, e.path("other.log")))
}

// TestAudXPostgresLongTableNameMarks checks DESIGN §11 Failures: "only a
// record the engine rejects ... follows onFailure" and a connection
// failure is retried — i.e. a table the config accepts works — for a table
// name of 63 bytes, which the config accepts (README: "[schema.]table,
// lower-case letters, digits and _"; the check's own limit is "at most 63
// bytes per name", PostgreSQL's NAMEDATALEN). The sink excludes the last
// line of the input. Expected: settled, every line but the excluded one in
// the table. Observed: the marks table's name <table>_marks is 69 bytes,
// which PostgreSQL truncates to 63 — the table's own name; "CREATE TABLE
// IF NOT EXISTS" of the marks table is a no-op and the mark is written
// into the lines table itself: ERROR column "updated_at" ... does not
// exist (SQLSTATE 42703), retried at the cap forever: the feed stays
// stalled and never settles (no config error names the cause).
func TestAudXPostgresLongTableNameMarks(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	long := strings.Repeat("t", 63)
	cfg := strings.NewReplacer("{{INSTANCE}}", "instance: e2e-host\n", "{{DSN}}", c.DSN("sslmode=disable"), "table: lines", "table: "+long,
		"    retry: {initialMillis: 50, maxMillis: 400}\n  - name: plain", "    retry: {initialMillis: 50, maxMillis: 400}\n    exclude: zzzz\n  - name: plain").Replace(audPgTmpl)
	e := newEnv(t, cfg)
	in := newInput(t, e.path("in.log"))
	in.appendLines(100)
	appendTo(t, in.path, "zzzz filtered\n")
	d := e.start()
	r := d.waitFor("settled or stalled", 30*time.Second, func(r *report) bool {
		return r.Settled || r.feed(t, "app").Stalled != nil
	})
	time.Sleep(2 * time.Second)
	r, _ = statusRaw(t, d)
	d.stop()
	f := r.feed(t, "app")
	if !r.Settled || f.Stalled != nil {
		t.Errorf("a 63-byte table name with a filtered last line: settled %v stalled %v", r.Settled, *f.Stalled)
	}
}

// TestAudOKCountAheadOnlySkips checks DESIGN §11 "A sink ahead of the
// pointer only skips (AlreadyApplied)" and §6 count "re-deliveries are
// skipped": the pointer put back to an older copy while stopped; the count
// state is ahead. Expected: counts equal a clean count, lossless.
func TestAudOKCountAheadOnlySkips(t *testing.T) {
	e := newEnv(t, catchUpCountConfig)
	in := newInput(t, e.path("in.log"))
	audPointerPutBack1000(t, e, in)
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	code, body, err := d.get("/v1/state/counter")
	d.stop()
	if err != nil || code != 200 {
		t.Fatalf("GET /v1/state/counter: %d %v %s", code, err, body)
	}
	want := map[string]int{}
	for _, s := range in.texts {
		if m := counterKey.FindStringSubmatch(s); m != nil && !strings.Contains(s, "zzzz") {
			want[m[1]]++
		}
	}
	var st struct {
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(st.Counts) != fmt.Sprint(want) {
		t.Errorf("counts after the pointer was put back: %v, want %v", st.Counts, want)
	}
	if f := r.feed(t, "app"); !f.Lossless {
		t.Errorf("%s", f.lossFacts())
	}
}

// TestAudOKPostgresNewTableNotBehind checks DESIGN §11 "A sink with no
// record is never 'behind' (a new sink, a new table)": a postgres sink
// added to a feed whose pointer is at 1000 lines (the table created at
// this start). Expected: no backward commit, nothing re-read; the table
// holds only the lines appended after it joined.
func TestAudOKPostgresNewTableNotBehind(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	e := newEnv(t, cuHeader+cuPlainFeed+cuProcessors+cuPlain)
	in := newInput(t, e.path("in.log"))
	in.appendLines(1000)
	settledRun(t, e)
	e.tmpl = strings.NewReplacer("{{INSTANCE}}", "instance: e2e-host\n", "{{DSN}}", c.DSN("sslmode=disable")).Replace(audPgTmpl)
	d := e.start()
	d.waitSettled(60 * time.Second)
	in.appendLines(10)
	r := d.waitFor("10 more", 60*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").Pointer.Offset == in.size()
	})
	d.stop()
	if strings.Contains(d.log(), "committing the pointer back") || r.feed(t, "app").Sequence != 10 {
		t.Errorf("a new table caught up: sequence %d", r.feed(t, "app").Sequence)
	}
	if n := pgCount(pgConnect(t, c), "lines"); n != 10 {
		t.Errorf("new table: %d rows, want the 10 lines after it joined", n)
	}
}

// TestAudOKPostgresDownAtStartStallsThenCatchesUp checks DESIGN §11
// Failures ("A connection failure ... is retried at the backoff cap ...
// the feed stalls with the reason; nothing lost") at the catch-up's start:
// the table has lost its last 500 rows and the server is down. Expected:
// the subscriber FENCED, the feed stalled with the reason, nothing read;
// SIGTERM stops it (exit 0); with the server back, the next start catches
// the table up.
func TestAudOKPostgresDownAtStartStallsThenCatchesUp(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable connect_timeout=2")
	in.appendLines(1000)
	settledRun(t, e)
	c.Psql(fmt.Sprintf(`DELETE FROM lines WHERE position > %d`, in.ends[499]))
	c.Stop()
	d := e.start()
	r := d.waitFor("the stall", 60*time.Second, func(r *report) bool { return r.feed(t, "app").Stalled != nil })
	f := r.feed(t, "app")
	if f.sub(t, "pg").State != "FENCED" || !strings.Contains(*f.Stalled, "subscriber pg failing") {
		t.Errorf("server down at start: pg %s, stalled %q", f.sub(t, "pg").State, *f.Stalled)
	}
	time.Sleep(time.Second)
	if r, _ := statusRaw(t, d); r.feed(t, "app").Sequence != 0 {
		t.Errorf("lines read while the catch-up decision waits: sequence %d", r.feed(t, "app").Sequence)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(30 * time.Second); code != 0 {
		t.Errorf("SIGTERM while waiting: exit %d", code)
	}
	c.StartServer()
	settledRun(t, e)
	if s := audRowsOnce(t, c, in); s != "" {
		t.Error(s)
	}
}

// TestAudOKPostgresGlobStreamRowsDeleted checks DESIGN §11's catch-up on a
// glob feed (README: "The record is per epoch, so a glob feed's streams
// each have theirs and are caught up per stream"): a.log's rows past its
// line 599 deleted while stopped. Expected: a.log's stream committed back,
// every line of both files once in the table, lossless.
func TestAudOKPostgresGlobStreamRowsDeleted(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	cfg := strings.NewReplacer("{{INSTANCE}}", "instance: e2e-host\n", "{{DSN}}", c.DSN("sslmode=disable"),
		"    path: ./in.log\n    readStrategy: COMMITTED\n    rotateWaitMillis: 200\n    pollIntervalMillis: 50\n",
		"    path: ./in/*.log\n    readStrategy: COMMITTED\n    scanIntervalMillis: 200\n").Replace(audPgTmpl)
	e := newEnv(t, cfg)
	a, _ := globInputs(t, e)
	settledRun(t, e)
	data, _ := os.ReadFile(a)
	cut := 0
	for range 600 {
		cut += strings.IndexByte(string(data[cut:]), '\n') + 1
	}
	c.Psql(fmt.Sprintf(`DELETE FROM lines WHERE path LIKE '%%/a.log' AND position > %d`, cut))
	if n := pgCount(pgConnect(t, c), "lines"); n != 1100 {
		t.Fatalf("after the delete: %d rows, want 1100", n)
	}
	d, _, f := settledRun(t, e)
	got := pgLines(t, c, "lines")
	bad := 0
	for _, tc := range []struct {
		p string
		n int
	}{{"a", 1000}, {"b", 500}} {
		for i := range tc.n {
			if got[fmt.Sprintf("%s-%07d", tc.p, i)] != 1 {
				bad++
			}
		}
	}
	if bad != 0 || len(got) != 1500 || !f.Lossless {
		t.Errorf("glob stream rows deleted: %d lines not once, %d distinct; %s; catch-up %v", bad, len(got), f.lossFacts(), strings.Contains(d.log(), "behind a stream's pointer"))
	}
}

// TestAudOKInstanceNullIsDefault probes `instance: ~` (YAML null).
func TestAudOKInstanceNullIsDefault(t *testing.T) {
	c, e, in := audPgStart(t, "~", "sslmode=disable")
	in.appendLines(5)
	settledRun(t, e)
	host, _ := os.Hostname()
	if got := c.Psql(`SELECT string_agg(DISTINCT instance, ',') FROM lines`); got != host {
		t.Errorf("instance: ~ → rows under instance %q, want the host name %q (or a config error)", got, host)
	}
}

// TestAudOKPostgresMissingTableHoldsThenResumes checks DESIGN §11
// Failures: anything but a rejected record "is retried at the backoff cap
// whatever onFailure says (the feed stalls with the reason; nothing lost,
// nothing dead-lettered)" — README: a missing table without createTable is
// such a failure, and the sink "resumes by itself". Expected: stalled while
// the table is missing, with onFailure deadLetter nothing dead-lettered;
// once the operator creates it, every line lands once.
func TestAudOKPostgresMissingTableHoldsThenResumes(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	cfg := strings.NewReplacer("{{INSTANCE}}", "instance: e2e-host\n", "{{DSN}}", c.DSN("sslmode=disable"),
		"    createTable: true\n", "    createTable: false\n    onFailure: deadLetter\n").Replace(audPgTmpl)
	e := newEnv(t, cfg)
	in := newInput(t, e.path("in.log"))
	in.appendLines(100)
	d := e.start()
	r := d.waitFor("the stall", 30*time.Second, func(r *report) bool { return r.feed(t, "app").Stalled != nil })
	time.Sleep(2 * time.Second)
	r, _ = statusRaw(t, d)
	if f := r.feed(t, "app"); f.DeadLettered != 0 || f.Stalled == nil {
		t.Errorf("missing table: deadLettered %d stalled %v", f.DeadLettered, f.Stalled)
	}
	c.Psql(`CREATE TABLE lines (instance text NOT NULL, feed text NOT NULL, epoch text NOT NULL, position bigint NOT NULL, path text NOT NULL, line bytea NOT NULL, inserted_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (instance, feed, epoch, position))`)
	r = d.waitFor("settled after the table was created", 60*time.Second, func(r *report) bool { return r.Settled })
	d.stop()
	if s := audRowsOnce(t, c, in); s != "" || !r.Lossless {
		t.Errorf("after the table was created: %s lossless %v", s, r.Lossless)
	}
}

// TestAudOKCatchUpGoneWithLaterGenerationInboxOnce is the companion of
// TestAudXCatchUpGoneGenerationInboxOnce with a middle generation still on
// disk: E1 (in.log.2) gone, E2 (in.log.1) and the current file E3 on disk.
// Here every later generation is read under its own epoch: the untouched
// inbox lines2 and the untouched exactlyOnce file sink hold every line once.
func TestAudOKCatchUpGoneWithLaterGenerationInboxOnce(t *testing.T) {
	c, e, in := audPgTwoStart(t)
	in.appendLines(2000)
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	epoch1 := r.feed(t, "app").Pointer.Epoch
	ends1 := append([]int64(nil), in.ends...)
	rot := func(n int) {
		if _, err := os.Stat(in.path + ".1"); err == nil {
			if err := os.Rename(in.path+".1", in.path+".2"); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Rename(in.path, in.path+".1"); err != nil {
			t.Fatal(err)
		}
		in.ends = nil
		in.appendLines(n)
		d.waitFor("read", 60*time.Second, func(r *report) bool {
			f := r.feed(t, "app")
			return f.Settled && f.Pointer.Offset == in.size() && countLines(t, e.path("other.log"), 0) == len(in.texts)
		})
	}
	rot(300)
	rot(500)
	d.stop()
	c.Psql(fmt.Sprintf(`DELETE FROM lines WHERE (epoch = '%s' AND position > %d) OR epoch <> '%s'`, epoch1, ends1[1199], epoch1))
	if err := os.Remove(in.path + ".2"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // past the generations' mtime slack
	_, _, f := settledRun(t, e)
	_, dups := pgDuplicatesIn(t, c, "lines2", in)
	other := duplicateLines(t, in, e.path("other.log"))
	if dups != 0 || other != 0 || f.LostTails != 1 || f.LostBytes != uint64(ends1[1999]-ends1[1199]) {
		t.Errorf("%s; lines2 duplicates %d; exactlyOnce file duplicates %d", f.lossFacts(), dups, other)
	}
}

// pgDuplicatesIn reads table back and counts the second (and later) rows
// of the input's lines.
func pgDuplicatesIn(t *testing.T, c *pgtest.Cluster, table string, in *input) (map[string]int, int) {
	got := pgLines(t, c, table)
	dups := 0
	for _, s := range in.texts {
		if got[s] > 1 {
			dups += got[s] - 1
		}
	}
	return got, dups
}

// TestAudOKCatchUpSameEpochRotatedWhileStopped checks DESIGN §11 "A sink
// is behind only when its epoch equals the pointer's and its position is
// smaller: the pointer is committed back to that position ... the whole
// feed re-reads from it" with §4 "Restart after rotation": the table lost
// its rows past line 1199 and, while stopped, in.log was rotated to
// in.log.1 and 300 lines written to a new in.log. Expected: in.log.1 read
// from the sink's position, then the new file; the untouched inbox lines2
// and the exactlyOnce file sink hold every line once; lossless.
func TestAudOKCatchUpSameEpochRotatedWhileStopped(t *testing.T) {
	c, e, in := audPgTwoStart(t)
	in.appendLines(2000)
	settledRun(t, e)
	c.Psql(fmt.Sprintf(`DELETE FROM lines WHERE position > %d`, in.ends[1199]))
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	in.ends = nil
	in.appendLines(300)
	d, _, f := settledRun(t, e)
	if s := audRowsOnce(t, c, in); s != "" {
		t.Errorf("restored table: %s", s)
	}
	_, dups := pgDuplicatesIn(t, c, "lines2", in)
	other := duplicateLines(t, in, e.path("other.log"))
	if dups != 0 || other != 0 || !f.Lossless {
		t.Errorf("%s; lines2 duplicates %d; exactlyOnce file duplicates %d; catch-up %v", f.lossFacts(), dups, other, strings.Contains(d.log(), "committing the pointer back"))
	}
}

// TestAudXReleasedLinesReReadAtNextStart checks DESIGN §11: "At start it
// reports its done-through mark (epoch, position): the last line it
// applied, filtered, dead-lettered or was released from (every built-in
// record advances over such lines ...)" and §2: "The duplicates after a
// crash are exactly the lines acknowledged since the last commit reached
// the pointer file ... the only other re-delivery is a restored sink's
// catch-up".
//
// The postgres server goes down; 100 lines arrive; the sink is FENCED and
// the operator gives the backlog up with POST /admin/release/app/pg
// (released 100, settled, the pointer at the end). tailfeed is stopped
// cleanly, the server started again, tailfeed started. Nothing was
// restored. Expected: pg's done-through mark is past the released lines,
// so no backward commit and nothing re-read (sequence 0, the plain file
// sink gets no duplicate). Observed: the start says "a sink is behind the
// pointer ... committing the pointer back", re-reads the 100 released
// lines and the plain file sink receives all 100 a second time. The README
// (postgres, Record) documents "Lines released by the sink itself while
// the server was down move no mark (they are re-read and land at the next
// start)", which contradicts DESIGN's "every built-in record advances over
// such lines".
func TestAudXReleasedLinesReReadAtNextStart(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable connect_timeout=2")
	in.appendLines(1000)
	d, _ := startThenPgDown(t, c, e)
	in.appendLines(100)
	releaseThrough(t, d, in, 100)
	d, f := restartAfterRelease(t, c, e, d)
	wantNothingReRead(t, d, f, e, in, "start after a release")
}

// TestAudXFilteredTailReReadWithoutMarksTable checks DESIGN §11: "At start
// it reports its done-through mark (epoch, position): the last line it
// applied, filtered, dead-lettered or was released from (every built-in
// record advances over such lines ...)" and §2's duplicate rule (no
// re-delivery but a crash's uncommitted lines and a restored sink's
// catch-up), for a postgres table made by the operator exactly as DESIGN
// §11 lists it — (instance text, feed text, epoch text, position bigint,
// path text, line bytea, inserted_at timestamptz) with a unique key on
// (instance, feed, epoch, position) — and createTable: false.
//
// The sink excludes the input's last 50 lines. Expected: its record
// advances over them; two clean restarts with nothing appended re-read
// nothing (sequence 0) and the plain file sink gets no duplicates.
// Observed: the sink WARNs "postgres marks table missing" (a table DESIGN
// never names: README's <table>_marks) and every start commits the
// pointer back to its last row and re-reads the 50 filtered lines — every
// other subscriber receives them again, at each start, although no sink
// was restored.
func TestAudXFilteredTailReReadWithoutMarksTable(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	cfg := strings.NewReplacer("{{INSTANCE}}", "instance: e2e-host\n", "{{DSN}}", c.DSN("sslmode=disable"),
		"    createTable: true\n", "    createTable: false\n    exclude: '^filtered'\n").Replace(audPgTmpl)
	e := newEnv(t, cfg)
	c.Psql(`CREATE TABLE lines (instance text NOT NULL, feed text NOT NULL, epoch text NOT NULL, position bigint NOT NULL, path text NOT NULL, line bytea NOT NULL, inserted_at timestamptz NOT NULL DEFAULT now(), UNIQUE (instance, feed, epoch, position))`)
	in := newInput(t, e.path("in.log"))
	in.appendLines(1000)
	appendFiltered(t, in, 50)
	settledRun(t, e)
	reRead := 0
	var logs []string
	for range 2 {
		d, _, f := settledRun(t, e)
		reRead += int(f.Sequence)
		logs = append(logs, grepLines(d.log(), "behind the pointer"))
	}
	data, _ := os.ReadFile(e.path("plain.log"))
	if n := strings.Count(string(data), "filtered-0\n"); reRead != 0 || n != 1 {
		t.Errorf("two restarts with nothing new: %d lines re-read, the plain file sink holds filtered-0 %d times (want 0, 1); %q", reRead, n, logs)
	}
}

// TestAudOKPostgresDeadLetterReplayLands checks DESIGN §11 ("the last line
// it applied, filtered, dead-lettered ... a replayed dead letter never
// moves it") and §6 (replayed lines: "AlreadyApplied return false for
// them (an exactlyOnce sink must still write them)"): the input's last
// line is rejected by a CHECK constraint and dead-lettered; a restart
// re-reads nothing; after the constraint is dropped a replay lands the row
// and empties the ledger; the next start re-reads nothing.
func TestAudOKPostgresDeadLetterReplayLands(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	cfg := strings.NewReplacer("{{INSTANCE}}", "instance: e2e-host\n", "{{DSN}}", c.DSN("sslmode=disable"),
		"    retry: {initialMillis: 50, maxMillis: 400}\n  - name: plain", "    onFailure: deadLetter\n    retry: {initialMillis: 50, maxMillis: 100, attempts: 1}\n  - name: plain").Replace(audPgTmpl)
	e := newEnv(t, cfg)
	d := e.start()
	d.waitSettled(30 * time.Second)
	d.stop()
	c.Psql(`ALTER TABLE lines ADD CONSTRAINT nobad CHECK (position('BADLINE' in convert_from(line, 'UTF8')) = 0)`)
	in := newInput(t, e.path("in.log"))
	in.appendLines(100)
	appendTo(t, in.path, "BADLINE\n")
	_, _, f := settledRun(t, e)
	if f.DeadLettered != 1 {
		t.Fatalf("precondition: deadLettered %d, want 1", f.DeadLettered)
	}
	d, _, f = settledRun(t, e)
	if f.Sequence != 0 {
		t.Errorf("restart after a dead-lettered last line: %d lines re-read", f.Sequence)
	}
	c.Psql(`ALTER TABLE lines DROP CONSTRAINT nobad`)
	d = e.start()
	d.waitSettled(30 * time.Second)
	code, _, body := request(t, d, http.MethodPost, "/admin/dlq/pg/replay", "tok", nil)
	r := d.waitSettled(30 * time.Second)
	d.stop()
	if n := c.Psql(`SELECT count(*) FROM lines WHERE line = 'BADLINE'::bytea`); n != "1" || r.feed(t, "app").DeadLettered != 0 {
		t.Errorf("replay %d %s: BADLINE rows %s, deadLettered %d", code, body, n, r.feed(t, "app").DeadLettered)
	}
	d, _, f = settledRun(t, e)
	if f.Sequence != 0 {
		t.Errorf("restart after the replay: %d lines re-read", f.Sequence)
	}
}

// TestAudOKFileSinkAheadAndFreshPointer checks DESIGN §11 "A sink ahead of
// the pointer only skips (AlreadyApplied)" and "A fresh pointer (no valid
// slot) is not a gap" with the exactlyOnce file sinks: the pointer put back
// to an older copy → exactlyOnce outputs unchanged, the plain sink gets the
// lines again, lossless; then the pointer zeroed (no valid slot) → a fresh
// start at 0, lossless, nothing missing anywhere.
func TestAudOKFileSinkAheadAndFreshPointer(t *testing.T) {
	e := newEnv(t, catchUpConfig)
	in := newInput(t, e.path("in.log"))
	audPointerPutBack1000(t, e, in)
	_, _, f := settledRun(t, e)
	for _, out := range []string{"exact.log", "other.log"} {
		if dups, miss := duplicateLines(t, in, e.path(out)), missingLines(t, in, e.path(out)); dups != 0 || miss != 0 {
			t.Errorf("pointer put back: %s %d duplicates %d missing", out, dups, miss)
		}
	}
	if dups := duplicateLines(t, in, e.path("plain.log")); dups != 1000 || !f.Lossless {
		t.Errorf("pointer put back: plain %d duplicates (want 1000); %s", dups, f.lossFacts())
	}
	if err := os.WriteFile(e.path("state/feeds/app.ptr"), make([]byte, 1024), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, f = settledRun(t, e)
	if !f.Lossless || f.LostTails != 0 || f.Pointer.Offset != in.size() {
		t.Errorf("fresh pointer: %s pointer %d of %d", f.lossFacts(), f.Pointer.Offset, in.size())
	}
	for _, out := range []string{"exact.log", "other.log", "plain.log"} {
		if miss := missingLines(t, in, e.path(out)); miss != 0 {
			t.Errorf("fresh pointer: %s misses %d lines", out, miss)
		}
	}
}

// TestAudXPostgresEnvDSNWarnsLiteral checks DESIGN §11 Secrets: "Secrets
// (dsn, SASL passwords, tokens) should come from ${ENV} references (§12); a
// literal secret is accepted with a WARN at start naming the key." The DSN
// is written as "${PGDSN}" — the recommended form — and the environment
// holds a DSN with a password. Expected: no WARN about a literal password
// (there is none in the file), and the password nowhere in the log.
// Observed: the WARN "the postgres DSN holds a literal password; prefer a
// ${ENV} reference or a .pgpass file" — telling the operator to do what
// they did.
func TestAudXPostgresEnvDSNWarnsLiteral(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{Password: audSecret})
	e := audPgEnv(t, c, "e2e-host", "${PGDSN}")
	in := newInput(t, e.path("in.log"))
	in.appendLines(10)
	dsn := fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", audSecret, c.Port)
	d := e.startIn(e.dir, "PGDSN="+dsn)
	d.waitSettled(60 * time.Second)
	d.stop()
	if n := c.Psql(`SELECT count(*) FROM lines`); n != "10" {
		t.Fatalf("precondition: %s rows, want 10", n)
	}
	log := d.log()
	if strings.Contains(log, "literal password") || strings.Contains(log, audSecret) {
		t.Errorf("DSN from ${PGDSN}: %q", grepLines(log, "password"))
	}
}

// TestAudOKFileExactlyOnceFilteredTailNotBehind checks DESIGN §11 "every
// built-in record advances over such lines" for the exactlyOnce file sink
// with an exclude filter that drops the input's last 50 lines: two
// restarts with nothing new re-read nothing.
func TestAudOKFileExactlyOnceFilteredTailNotBehind(t *testing.T) {
	e := newEnv(t, cuHeader+cuPlainFeed+cuProcessors+cuExact+"    exclude: '^filtered'\n"+cuPlain)
	in := newInput(t, e.path("in.log"))
	in.appendLines(1000)
	appendFiltered(t, in, 50)
	settledRun(t, e)
	for k := range 2 {
		d, _, f := settledRun(t, e)
		if f.Sequence != 0 {
			t.Errorf("restart %d: %d lines re-read; %q", k, f.Sequence, grepLines(d.log(), "behind"))
		}
	}
}

// audPgTwoStart starts a private PostgreSQL and an env on audPgTwoTmpl (instance e2e-host), with its input in.log.
func audPgTwoStart(t *testing.T) (*pgtest.Cluster, *env, *input) {
	t.Helper()
	c := pgtest.Start(t, pgtest.Options{})
	e := newEnv(t, strings.NewReplacer("{{INSTANCE}}", "instance: e2e-host\n", "{{DSN}}", c.DSN("sslmode=disable")).Replace(audPgTwoTmpl))
	return c, e, newInput(t, e.path("in.log"))
}

// appendFiltered appends n lines "filtered-<i>" to in (the lines an exclude '^filtered' drops).
func appendFiltered(t *testing.T, in *input, n int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "filtered-%d\n", i)
	}
	appendTo(t, in.path, b.String())
}

// audPointerPutBack1000 runs 1000 lines, copies the pointer file aside,
// runs 1000 more and stops, then puts the pointer file back to the copy:
// every sink is 1000 lines ahead of it.
func audPointerPutBack1000(t *testing.T, e *env, in *input) {
	t.Helper()
	in.appendLines(1000)
	settledRun(t, e)
	bak := filepath.Join(t.TempDir(), "app.ptr")
	copyFile(t, e.path("state/feeds/app.ptr"), bak)
	d := e.start()
	in.appendLines(1000)
	d.waitSettled(60 * time.Second)
	d.stop()
	copyFile(t, bak, e.path("state/feeds/app.ptr"))
}

// audRunsThenRotates runs 1000 lines once, copies the pointer file aside
// (to bak), starts again, appends 1000 more and, once settled, renames
// in.log to in.log.1 (epoch1 the renamed file's epoch); d is still running.
func audRunsThenRotates(t *testing.T, e *env, in *input) (d *daemon, bak, epoch1 string) {
	t.Helper()
	in.appendLines(1000)
	settledRun(t, e)
	bak = filepath.Join(t.TempDir(), "app.ptr")
	copyFile(t, e.path("state/feeds/app.ptr"), bak)
	d = e.start()
	in.appendLines(1000)
	r := d.waitSettled(60 * time.Second)
	epoch1 = r.feed(t, "app").Pointer.Epoch
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	return d, bak, epoch1
}

// audPointerPutBack runs 1000 lines (the pointer file copied aside), 1000
// more, a rotation (in.log → in.log.1) and 500 lines in the new in.log;
// then stops and puts the pointer file back to the copy (an older epoch:
// every sink is ahead of it). gone deletes in.log.1 too. It returns the
// next run's feed report and log.
func audPointerPutBack(t *testing.T, c *pgtest.Cluster, e *env, in *input, gone bool) (feedReport, string) {
	d, bak, epoch1 := audRunsThenRotates(t, e, in)
	in.ends = nil
	in.appendLines(500)
	d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.Pointer.Epoch != epoch1 && f.Pointer.Offset == in.size()
	})
	d.stop()
	copyFile(t, bak, e.path("state/feeds/app.ptr"))
	if gone {
		if err := os.Remove(in.path + ".1"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2100 * time.Millisecond) // past the generations' mtime slack
	d, _, f := settledRun(t, e)
	return f, d.log()
}

// TestAudOKPointerPutBackOlderEpoch checks DESIGN §11 "A sink ahead of the
// pointer only skips (AlreadyApplied)" when the pointer file alone is put
// back to a copy from an older generation: the rest of in.log.1 and the
// current file are read under the epochs they had; both postgres inboxes
// and the exactlyOnce file sink hold every line once; only the plain sink
// gets duplicates; lossless.
func TestAudOKPointerPutBackOlderEpoch(t *testing.T) {
	c, e, in := audPgTwoStart(t)
	f, _ := audPointerPutBack(t, c, e, in, false)
	_, d1 := pgDuplicatesIn(t, c, "lines", in)
	_, d2 := pgDuplicatesIn(t, c, "lines2", in)
	other := duplicateLines(t, in, e.path("other.log"))
	if d1 != 0 || d2 != 0 || other != 0 || !f.Lossless {
		t.Errorf("pointer put back: %s; duplicates: lines %d lines2 %d other.log %d", f.lossFacts(), d1, d2, other)
	}
}

// TestAudOKReloadBadInstanceRefused checks DESIGN §11 instance
// "[A-Za-z0-9._-]+" with §12 Reload: an invalid instance in a reload is
// answered 400 with FILE:LINE, config.lastError set, the daemon runs on.
func TestAudOKReloadBadInstanceRefused(t *testing.T) {
	_, e, in := audPgStart(t, "host-a", "sslmode=disable")
	in.appendLines(10)
	d := e.start()
	d.waitSettled(60 * time.Second)
	code, body := audReloadInstance(t, e, d, "host/b")
	_, raw := statusRaw(t, d)
	d.stop()
	if code != http.StatusBadRequest || !strings.Contains(string(body), e.cfg+":1: instance") || !strings.Contains(string(raw), `"reloadFailures":1`) {
		t.Errorf("reload with instance host/b: %d %s; status %s", code, body, tail(string(raw), 300))
	}
}

// TestAudOKCatchUpPullReceivesGap checks DESIGN §11 "every subscriber
// receives the gap again" for a pull subscriber: after the exactlyOnce file
// sink is restored to a copy from 1000 lines earlier, the catch-up hands
// the pull client lines 1000..1999 again, under their epoch and positions.
func TestAudOKCatchUpPullReceivesGap(t *testing.T) {
	cfg := strings.Replace(cuHeader, "  listen: {{ADDR}}\n", "  listen: {{ADDR}}\n  token: "+ctToken+"\n", 1) + cuPlainFeed + cuProcessors + cuExact +
		"  - {name: consumer, feed: app, type: pull}\n"
	e := newEnv(t, cfg)
	in := newInput(t, e.path("in.log"))
	in.appendLines(1000)
	d := e.start()
	ackAll(t, d, pullFromN(t, d, "consumer", 1000, ""))
	d.waitSettled(60 * time.Second)
	d.stop()
	bak := backupSink(t, e, e.path("exact.log"), "exact")
	d = e.start()
	in.appendLines(1000)
	ackAll(t, d, pullFromN(t, d, "consumer", 1000, ""))
	d.waitSettled(60 * time.Second)
	d.stop()
	bak.restore()
	d = e.start()
	evs := pullFromN(t, d, "consumer", 1000, "")
	ackAll(t, d, evs)
	d.waitSettled(60 * time.Second)
	d.stop()
	for i, ev := range evs {
		if ev.Line != in.texts[1000+i] || ev.Position != in.ends[1000+i] {
			t.Fatalf("re-read event %d: %q at %d, want %q at %d", i, ev.Line, ev.Position, in.texts[1000+i], in.ends[1000+i])
		}
	}
	if miss, dups := missingLines(t, in, e.path("exact.log")), duplicateLines(t, in, e.path("exact.log")); miss != 0 || dups != 0 {
		t.Errorf("restored exactlyOnce output: %d missing %d duplicated", miss, dups)
	}
}

// TestAudOKPostgresOlderGenerationDateName is
// TestAudOKPostgresOlderGenerationRowsDeleted with logrotate's dateext
// name (in.log-20261201) and a middle generation (in.log-20261202): the
// catch-up finds both by §4's rules; every line once, lossless.
func TestAudOKPostgresOlderGenerationDateName(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable")
	in.appendLines(1500)
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	epoch1 := r.feed(t, "app").Pointer.Epoch
	cut := in.ends[999]
	for _, name := range []string{"-20261201", "-20261202"} {
		if err := os.Rename(in.path, in.path+name); err != nil {
			t.Fatal(err)
		}
		in.ends = nil
		in.appendLines(300)
		d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
			f := r.feed(t, "app")
			return f.Settled && f.Pointer != nil && f.Pointer.Epoch != epoch1 && f.Pointer.Offset == in.size() && pgCount(pgConnect(t, c), "lines") == len(in.texts)
		})
	}
	d.stop()
	c.Psql(fmt.Sprintf(`DELETE FROM lines WHERE (epoch = '%s' AND position > %d) OR epoch <> '%s'`, epoch1, cut, epoch1))
	time.Sleep(2100 * time.Millisecond)
	_, _, f := settledRun(t, e)
	if s := audRowsOnce(t, c, in); s != "" || !f.Lossless {
		t.Errorf("after the restart: %s; %s", s, f.lossFacts())
	}
}
