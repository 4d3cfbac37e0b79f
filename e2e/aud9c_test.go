package e2e

// Audit 9c: DESIGN §12 Operations (Environment, Validation, Dead-letter
// replay, Secure by default, TLS, Health, People, Deployment) and §6 dead
// letters and the file / exactlyOnce file sink.
//
// Findings (fail on the binary as audited):
//   - TestAud9CXExactlyOnceIntervalFirstKillDuplicates: a new exactlyOnce
//     file sink under fsync: interval killed (-9) before its first flush
//     writes every line of its first batches twice after the restart.
//   - TestAud9CXReadyzLostWhenFeedFailsSoonAfterOpening: /readyz answers
//     503 after the feed opened its file and delivered it, when the feed
//     goes FAILED within ~10 ms of opening (readiness is sampled).
//
// Judgement calls (not findings; DESIGN is not explicit):
//   - `run` exits 1, not 2, when dataDir holds something tailfeed cannot
//     use in place of one of its own files (losses.jsonl, dlq/<p>.jsonl,
//     feeds/<feed>.ptr or .epochs, state/removed.json a directory;
//     state/count a file), while feeds/, dlq/, state/ or LOCK of the wrong
//     kind exit 2 "FILE:LINE: dataDir: …" (§9: 2 "when dataDir cannot be
//     created or written"; `help run`: 2 for "an unusable dataDir").
//   - onFailure: deadLetter whose ledger append fails (RLIMIT_FSIZE): the
//     line is held (nothing lost), but `stalled` names only the sink's
//     write error and nothing is logged about the ledger.
//
// Probes kept as regressions (pass): dead-letter replay into exactlyOnce
// file (fsync never/interval/always, raw/json) then kill -9; replay of
// kafka, nats and postgres dead letters (same epoch, dead-lettered tail,
// older epoch after a rotation) then kill -9: no re-read, each line once;
// replay into a file sink that fails half way (503 replayed 1 remaining
// 2, no torn line); pull replay whose attempts run out; webhook replay
// after kill -9; downgraded lines into exactlyOnce across a restart;
// exactlyOnce kill -9 loop with rotations; a path that later becomes a
// directory, FIFO, device or symlink loop (FAILED, /healthz 503, status 4,
// logged once, recovers); the file sink's mode under umask 077 and after
// its output is renamed.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kadm"
	"golang.org/x/sys/unix"

	"tailfeed/internal/natstest"
	"tailfeed/internal/testutil/pgtest"
)

// aud9CReplayThenKill: an exactlyOnce file sink (fsync mode, format) on 60
// lines dead-letters two lines (RLIMIT_FSIZE leaves room for one of three),
// the limit is lifted, the dead letters are replayed (200, replayed 2), more
// lines come when more is true, then kill -9 and a restart: the output must
// still hold every line once (the ledger no longer has the replayed ones).
func aud9CReplayThenKill(t *testing.T, mode, format string, more bool) {
	aud9CReplayThenKillOn(t, mode, format, more, false)
}

func aud9CReplayThenKillOn(t *testing.T, mode, format string, more, glob bool) {
	cfg := audOneFeed
	if glob {
		cfg = strings.Replace(cfg, "path: ./in.log", "path: ./in*.log", 1)
	}
	e := newEnv(t, audWithToken(strings.Replace(audFileConfig(`    exactlyOnce: true
    fsync: `+mode+`
    fsyncIntervalMillis: 50
    format: `+format+`
    onFailure: deadLetter
    retry: {initialMillis: 20, maxMillis: 40, attempts: 2}
`), audOneFeed, cfg, 1)))
	in := e.path("in.log")
	var all strings.Builder
	first := 60
	if glob {
		first = 5000 // the output must be longer than the layout 2 record (2 × 64 KiB): RLIMIT_FSIZE applies to both
	}
	for i := 1; i <= first; i++ {
		fmt.Fprintf(&all, "base-%04d-xxxxxxxxxxxxxxxxxxxxxx\n", i)
	}
	audWrite(t, in, all.String())
	d := e.start()
	d.waitSettled(20 * time.Second)
	st, err := os.Stat(e.path("out.log"))
	if err != nil {
		t.Fatal(err)
	}
	per := st.Size() / int64(first)
	limit := uint64(st.Size() + per + per/2)
	if err := unix.Prlimit(d.pid(), unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: unix.RLIM_INFINITY}, nil); err != nil {
		t.Skipf("prlimit: %v", err)
	}
	for i := 61; i <= 63; i++ {
		appendTo(t, in, fmt.Sprintf("line-%02d-xxxxxxxxxxxxxxxxxxxxxxxx\n", i))
	}
	d.waitFor("2 dead letters", 20*time.Second, func(r *report) bool { return r.feed(t, "app").DeadLettered == 2 })
	d.waitSettled(20 * time.Second)
	if err := unix.Prlimit(d.pid(), unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}, nil); err != nil {
		t.Fatal(err)
	}
	code, _, body := request(t, d, http.MethodPost, "/admin/dlq/out/replay", ctToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"replayed":2`) {
		t.Fatalf("replay: %d %s", code, body)
	}
	n := 63
	if more {
		for i := 64; i <= 66; i++ {
			appendTo(t, in, fmt.Sprintf("line-%02d-xxxxxxxxxxxxxxxxxxxxxxxx\n", i))
		}
		n = 66
	}
	d.waitFor("settled, all acknowledged, no dead letter", 20*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Acknowledged == uint64(first+n-60) && f.DeadLettered == 0
	})
	before, _ := os.ReadFile(e.path("out.log"))
	d.kill()
	d = e.start()
	d.waitSettled(20 * time.Second)
	after, _ := os.ReadFile(e.path("out.log"))
	for i := 61; i <= n; i++ {
		tag := fmt.Sprintf("line-%02d-", i)
		if c := strings.Count(string(after), tag); c != 1 {
			t.Errorf("after kill -9 and a restart %s is %d times in the output (before the kill: %d), want once", tag, c, strings.Count(string(before), tag))
		}
	}
	if string(after) != string(before) || (format == "raw" && !strings.HasPrefix(string(after), all.String())) {
		t.Errorf("output %d bytes after the restart, %d before the kill -9 (want the same bytes, starting with the first %d lines)", len(after), len(before), first)
	}
}

// TestAud9COKReplayKill9ExactlyOnceGlob: as TestAud9COKReplayKill9ExactlyOnce
// on a glob feed (the exactlyOnce record's layout 2, DESIGN §10).
func TestAud9COKReplayKill9ExactlyOnceGlob(t *testing.T) {
	for _, mode := range []string{"never", "interval", "always"} {
		t.Run(mode, func(t *testing.T) { aud9CReplayThenKillOn(t, mode, "raw", true, true) })
	}
}

func TestAud9COKReplayKill9ExactlyOnce(t *testing.T) {
	for _, c := range []struct {
		mode, format string
		more         bool
	}{{"never", "raw", false}, {"interval", "raw", false}, {"never", "json", true}, {"interval", "raw", true}, {"always", "json", true}} {
		t.Run(fmt.Sprintf("%s-%s-%v", c.mode, c.format, c.more), func(t *testing.T) {
			aud9CReplayThenKill(t, c.mode, c.format, c.more)
		})
	}
}

const aud9CKafkaConfig = `dataDir: ./state
instance: e2e-host
status: {listen: "{{ADDR}}", token: ct-secret}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: ./in.log
processors:
  - name: k
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: logs
    offsetsTopic: offs
    exactlyOnce: true
    onFailure: deadLetter
    retry: {initialMillis: 20, maxMillis: 40, attempts: 2}
`

// aud9CBig is an incompressible line of about 8 KB.
func aud9CBig(t *testing.T) string {
	raw := make([]byte, 6000)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	return "big-" + base64.StdEncoding.EncodeToString(raw)
}

// TestAud9COKKafkaReplayKeepsRecord: DESIGN §12 "A replayed line never
// changes a sink's stored position"; §11 a sink is behind only when its
// stored position is smaller than the pointer's. An exactlyOnce kafka sink
// dead-letters a line the topic rejects (max.message.bytes 2000), the limit
// is raised, the dead letter is replayed, the daemon is killed (-9) and
// restarted: every line is in the topic once (read-committed), nothing
// re-read.
func TestAud9COKKafkaReplayKeepsRecord(t *testing.T) {
	for _, c := range []struct{ tailBig, afterKill bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		t.Run(fmt.Sprintf("deadLetteredTail=%v-replayAfterKill=%v", c.tailBig, c.afterKill), func(t *testing.T) { aud9CKafkaReplay(t, c.tailBig, c.afterKill) })
	}
}

func aud9CKafkaReplay(t *testing.T, tailBig, afterKill bool) {
	broker := startKafka(t)
	adm := kafkaAdmin(t, broker)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("2000")}, "logs"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "offs"); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, strings.ReplaceAll(aud9CKafkaConfig, "{{BROKER}}", broker))
	big := aud9CBig(t)
	first := "ok1\n" + big + "\nok2\n"
	if tailBig {
		first = "ok1\nok2\n" + big + "\n"
	}
	audWrite(t, e.path("in.log"), first)
	d := e.start()
	d.waitFor("1 dead letter, settled", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.DeadLettered == 1 && f.Acknowledged == 3
	})
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("1000000")}}, "logs"); err != nil {
		t.Fatal(err)
	}
	replay := func() {
		code, _, body := request(t, d, http.MethodPost, "/admin/dlq/k/replay", ctToken, nil)
		if code != http.StatusOK || !strings.Contains(string(body), `"replayed":1`) {
			t.Fatalf("replay: %d %s", code, body)
		}
		d.waitFor("settled, no dead letter", 30*time.Second, func(r *report) bool {
			return r.Settled && r.feed(t, "app").DeadLettered == 0
		})
	}
	if !afterKill {
		replay()
	}
	d.kill()
	d = e.start()
	if afterKill {
		d.waitFor("settled, the dead letter read from disk", 30*time.Second, func(r *report) bool {
			return r.Settled && r.feed(t, "app").DeadLettered == 1
		})
		replay()
		d.kill()
		d = e.start()
	}
	appendTo(t, e.path("in.log"), "ok3\n")
	d.waitFor("settled at 4", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").Acknowledged >= 1 && r.feed(t, "app").Pointer != nil &&
			r.feed(t, "app").Pointer.Offset == int64(len(first+"ok3\n"))
	})
	got := kafkaCount(t, broker, "logs", 4)
	for _, l := range []string{"ok1", big, "ok2", "ok3"} {
		if got[l] != 1 {
			t.Errorf("line %.10s… is %d times in the topic (read-committed), want once", l, got[l])
		}
	}
	if len(got) != 4 {
		t.Errorf("topic holds %d distinct lines, want 4", len(got))
	}
	d.stop()
}

const aud9CRotateConfig = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 50
    rotateWaitMillis: 8000
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
    exactlyOnce: true
    fsync: %s
    fsyncIntervalMillis: 50
`

// aud9CDowngradedThenRestart: an exactlyOnce file sink; in.log is renamed
// to in.log.1 and a new in.log written; once the new file's line is out,
// late lines are appended to in.log.1 (delivered downgraded, DESIGN §4);
// then the daemon is killed (kill true) or stopped and restarted. The
// output must hold every line once, before and after the restart.
func aud9CDowngradedThenRestart(t *testing.T, fsync string, kill bool) {
	e := newEnv(t, fmt.Sprintf(aud9CRotateConfig, fsync))
	in := e.path("in.log")
	audWrite(t, in, "old-1\nold-2\n")
	d := e.start()
	d.waitFor("2 acknowledged", 30*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").Acknowledged == 2 })
	if err := os.Rename(in, in+".1"); err != nil {
		t.Fatal(err)
	}
	audWrite(t, in, "new-1\n")
	d.waitFor("the new file's line acknowledged", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Acknowledged == 3 && f.Pointer != nil && f.Pointer.Offset == 6
	})
	appendTo(t, in+".1", "late-1\nlate-2\n")
	d.waitFor("2 downgraded lines acknowledged", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Downgraded == 2 && f.Acknowledged == 5
	})
	appendTo(t, in, "new-2\n")
	d.waitFor("new-2 acknowledged", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Acknowledged == 6 && f.Pointer != nil && f.Pointer.Offset == 12
	})
	want := []string{"old-1", "old-2", "new-1", "late-1", "late-2", "new-2"}
	check := func(when string) {
		b, _ := os.ReadFile(e.path("out.log"))
		for _, l := range want {
			if c := strings.Count(string(b), l+"\n"); c != 1 {
				t.Errorf("%s: %s is %d times in the output %q, want once", when, l, c, b)
			}
		}
	}
	check("before the restart")
	if kill {
		d.kill()
	} else {
		d.stop()
	}
	d = e.start()
	appendTo(t, in, "new-3\n")
	d.waitFor("new-3 acknowledged", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == 18
	})
	want = append(want, "new-3")
	check("after the restart")
	d.stop()
}

func TestAud9COKDowngradedExactlyOnceRestart(t *testing.T) {
	for _, c := range []struct {
		fsync string
		kill  bool
	}{{"never", true}, {"always", true}, {"interval", true}, {"never", false}} {
		t.Run(fmt.Sprintf("%s-kill=%v", c.fsync, c.kill), func(t *testing.T) { aud9CDowngradedThenRestart(t, c.fsync, c.kill) })
	}
}

const aud9CKafkaRotConfig = `dataDir: ./state
instance: e2e-host
status: {listen: "{{ADDR}}", token: ct-secret}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 50
    rotateWaitMillis: 500
processors:
  - name: k
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: logs
    offsetsTopic: offs
    exactlyOnce: true
    onFailure: deadLetter
    retry: {initialMillis: 20, maxMillis: 40, attempts: 2}
  - name: plain
    feed: app
    type: file
    path: ./plain.log
`

// TestAud9COKKafkaReplayOlderEpoch: DESIGN §12 "A replayed line never
// changes a sink's stored position"; §11 "A sink whose epoch is an older
// one … is caught up from that generation onward". The dead letter is of
// the rotated file's epoch; it is replayed after the rotation, then kill
// -9 and a restart: the sink must not be taken for behind (no line read
// again: the plain file sink's output has each line once), and the topic
// holds each line once.
func TestAud9COKKafkaReplayOlderEpoch(t *testing.T) {
	broker := startKafka(t)
	adm := kafkaAdmin(t, broker)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("2000")}, "logs"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "offs"); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, strings.ReplaceAll(aud9CKafkaRotConfig, "{{BROKER}}", broker))
	big := aud9CBig(t)
	in := e.path("in.log")
	audWrite(t, in, "ok1\n"+big+"\nok2\n")
	d := e.start()
	d.waitFor("1 dead letter, settled", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.DeadLettered == 1 && f.Acknowledged == 3
	})
	if err := os.Rename(in, in+".1"); err != nil {
		t.Fatal(err)
	}
	audWrite(t, in, "new1\n")
	d.waitFor("new1 acknowledged", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Acknowledged == 4 && f.Pointer != nil && f.Pointer.Offset == 5
	})
	time.Sleep(time.Second) // the old file is closed after rotateWaitMillis
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("1000000")}}, "logs"); err != nil {
		t.Fatal(err)
	}
	code, _, body := request(t, d, http.MethodPost, "/admin/dlq/k/replay", ctToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"replayed":1`) {
		t.Fatalf("replay: %d %s", code, body)
	}
	d.waitFor("settled, no dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 0
	})
	d.kill()
	d = e.start()
	appendTo(t, in, "new2\n")
	r := d.waitFor("settled at new2", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == 10
	})
	if f := r.feed(t, "app"); f.LostTails != 0 || !f.Lossless {
		t.Errorf("after the restart: lostTails %d lossless %v detail %v", f.LostTails, f.Lossless, f.Detail)
	}
	plain, _ := os.ReadFile(e.path("plain.log"))
	for _, l := range []string{"ok1", big, "ok2", "new1", "new2"} {
		if c := strings.Count(string(plain), l+"\n"); c != 1 {
			t.Errorf("plain file sink holds %.10s… %d times, want once (the restart re-read lines)", l, c)
		}
	}
	got := kafkaCount(t, broker, "logs", 5)
	for _, l := range []string{"ok1", big, "ok2", "new1", "new2"} {
		if got[l] != 1 {
			t.Errorf("line %.10s… is %d times in the topic (read-committed), want once", l, got[l])
		}
	}
	d.stop()
}

const aud9CPgConfig = `dataDir: ./state
instance: e2e-host
status: {listen: "{{ADDR}}", token: ct-secret}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 50
    rotateWaitMillis: 300
processors:
  - name: pg
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    createTable: true
    onFailure: deadLetter
    retry: {initialMillis: 20, maxMillis: 40, attempts: 2}
  - name: plain
    feed: app
    type: file
    path: ./plain.log
`

// aud9CPgReplay: a postgres sink whose table refuses the line "bad" (a CHECK
// constraint added after the first line) dead-letters it; when rotate is
// true the input is then rotated (the dead letter is of an older epoch);
// the constraint is dropped, the dead letter replayed (200, replayed 1), the
// daemon killed (-9) and restarted, one more line appended. Expected: no
// line read again (the plain file sink has each line once), the table each
// line once, lossless.
func aud9CPgReplay(t *testing.T, rotate, badLast bool) {
	c := pgtest.Start(t, pgtest.Options{})
	e := newEnv(t, strings.ReplaceAll(aud9CPgConfig, "{{DSN}}", c.DSN("")))
	in := e.path("in.log")
	audWrite(t, in, "first\n")
	d := e.start()
	d.waitFor("first acknowledged", 60*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").Acknowledged == 1 })
	c.Psql(`ALTER TABLE lines ADD CONSTRAINT nobad CHECK (line <> 'bad'::bytea)`)
	more := "ok1\nbad\nok2\n"
	if badLast {
		more = "ok1\nok2\nbad\n"
	}
	appendTo(t, in, more)
	d.waitFor("1 dead letter, settled", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.DeadLettered == 1 && f.Acknowledged == 4
	})
	lines := []string{"first", "ok1", "bad", "ok2"}
	size := int64(len("first\n" + more))
	if rotate {
		if err := os.Rename(in, in+".1"); err != nil {
			t.Fatal(err)
		}
		audWrite(t, in, "new1\n")
		d.waitFor("new1 acknowledged", 30*time.Second, func(r *report) bool {
			f := r.feed(t, "app")
			return r.Settled && f.Acknowledged == 5 && f.Pointer != nil && f.Pointer.Offset == 5
		})
		lines = append(lines, "new1")
		size = 5
		time.Sleep(600 * time.Millisecond) // past rotateWaitMillis: the old file closed
	}
	c.Psql(`ALTER TABLE lines DROP CONSTRAINT nobad`)
	code, _, body := request(t, d, http.MethodPost, "/admin/dlq/pg/replay", ctToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"replayed":1`) {
		t.Fatalf("replay: %d %s", code, body)
	}
	d.waitFor("settled, no dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 0
	})
	d.kill()
	d = e.start()
	appendTo(t, in, "last\n")
	lines = append(lines, "last")
	size += 5
	r := d.waitFor("settled at the end", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == size
	})
	f := r.feed(t, "app")
	if f.LostTails != 0 || !f.Lossless || f.Sequence != 1 {
		t.Errorf("after the restart: sequence %d (want 1: only the new line), lostTails %d, lossless %v, detail %v", f.Sequence, f.LostTails, f.Lossless, f.Detail)
	}
	plain, _ := os.ReadFile(e.path("plain.log"))
	rows := pgLines(t, c, "lines")
	for _, l := range lines {
		if n := strings.Count(string(plain), l+"\n"); n != 1 {
			t.Errorf("plain file sink holds %q %d times, want once", l, n)
		}
		if rows[l] != 1 {
			t.Errorf("table holds %q %d times, want once", l, rows[l])
		}
	}
	if strings.Contains(d.log(), "committing the pointer back") {
		t.Errorf("the restart took the sink for behind: %s", grepLines(d.log(), "behind"))
	}
	d.stop()
}

func TestAud9COKPostgresReplay(t *testing.T) {
	for _, c := range []struct{ rotate, badLast bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("rotate=%v-badLast=%v", c.rotate, c.badLast), func(t *testing.T) { aud9CPgReplay(t, c.rotate, c.badLast) })
	}
}

const aud9CNatsConfig = `instance: host1
dataDir: ./state
status: {listen: "{{ADDR}}", token: ct-secret}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 50
    rotateWaitMillis: 300
processors:
  - name: exact
    feed: app
    type: nats
    url: {{NATS}}
    stream: EXACT
    subject: exact.{instance}.{feed}
    exactlyOnce: true
    timeoutMillis: 2000
    onFailure: deadLetter
    retry: {initialMillis: 20, maxMillis: 40, attempts: 2}
  - name: plain
    feed: app
    type: file
    path: ./plain.log
`

// aud9CNatsReplay is aud9CPgReplay for an exactlyOnce nats sink whose stream
// refuses messages over 2000 bytes (MaxMsgSize, raised before the replay).
func aud9CNatsReplay(t *testing.T, rotate, bigLast bool) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	ctx := context.Background()
	sc := jetstream.StreamConfig{Name: "EXACT", Subjects: []string{"exact.>"}, Storage: jetstream.FileStorage,
		Duplicates: 100 * time.Millisecond, MaxMsgSize: 2000}
	if _, err := js.CreateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, strings.ReplaceAll(aud9CNatsConfig, "{{NATS}}", srv.URL()))
	in := e.path("in.log")
	big := aud9CBig(t)
	more := "ok1\n" + big + "\nok2\n"
	if bigLast {
		more = "ok1\nok2\n" + big + "\n"
	}
	audWrite(t, in, more)
	d := e.start()
	d.waitFor("1 dead letter, settled", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.DeadLettered == 1 && f.Acknowledged == 3
	})
	lines := []string{"ok1", big, "ok2"}
	size := int64(len(more))
	if rotate {
		if err := os.Rename(in, in+".1"); err != nil {
			t.Fatal(err)
		}
		audWrite(t, in, "new1\n")
		d.waitFor("new1 acknowledged", 30*time.Second, func(r *report) bool {
			f := r.feed(t, "app")
			return r.Settled && f.Acknowledged == 4 && f.Pointer != nil && f.Pointer.Offset == 5
		})
		lines = append(lines, "new1")
		size = 5
		time.Sleep(600 * time.Millisecond) // past rotateWaitMillis: the old file closed
	}
	sc.MaxMsgSize = -1
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	code, _, body := request(t, d, http.MethodPost, "/admin/dlq/exact/replay", ctToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"replayed":1`) {
		t.Fatalf("replay: %d %s", code, body)
	}
	d.waitFor("settled, no dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.feed(t, "app").DeadLettered == 0
	})
	d.kill()
	d = e.start()
	appendTo(t, in, "last\n")
	lines = append(lines, "last")
	size += 5
	r := d.waitFor("settled at the end", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == size
	})
	f := r.feed(t, "app")
	if f.LostTails != 0 || !f.Lossless || f.Sequence != 1 {
		t.Errorf("after the restart: sequence %d (want 1: only the new line), lostTails %d, lossless %v, detail %v", f.Sequence, f.LostTails, f.Lossless, f.Detail)
	}
	plain, _ := os.ReadFile(e.path("plain.log"))
	got := streamBodies(t, js, "EXACT")
	for _, l := range lines {
		if n := strings.Count(string(plain), l+"\n"); n != 1 {
			t.Errorf("plain file sink holds %.10q %d times, want once", l, n)
		}
		if got[l] != 1 {
			t.Errorf("stream holds %.10q %d times, want once", l, got[l])
		}
	}
	d.stop()
}

func TestAud9COKNatsReplay(t *testing.T) {
	for _, c := range []struct{ rotate, bigLast bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("rotate=%v-bigLast=%v", c.rotate, c.bigLast), func(t *testing.T) { aud9CNatsReplay(t, c.rotate, c.bigLast) })
	}
}

const aud9CBecomesConfig = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 20
    rotateWaitMillis: 300
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
`

// TestAud9COKPathLaterBecomesNotRegular: DESIGN §12 Validation "A path that
// is, or later becomes, anything but a regular file (a directory, a FIFO, a
// socket, a device, a symlink loop) is never opened for reading: the feed
// is FAILED with the reason in detail, logged once (not once per poll), and
// leaves FAILED by itself when a regular file appears there"; Health
// "/healthz answers 503 at once while any feed is FAILED"; `tailfeed
// status` 4 at once. The regular file is removed after it was read and
// something else is put at the path; then a regular file again.
func TestAud9COKPathLaterBecomesNotRegular(t *testing.T) {
	kinds := map[string]func(t *testing.T, p string){
		"directory": func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		},
		"fifo": func(t *testing.T, p string) {
			if err := unix.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"device": func(t *testing.T, p string) {
			if err := os.Symlink("/dev/null", p); err != nil {
				t.Fatal(err)
			}
		},
		"loop": func(t *testing.T, p string) {
			if err := os.Symlink(p+".b", p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(p, p+".b"); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, make := range kinds {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, aud9CBecomesConfig)
			in := e.path("in.log")
			audWrite(t, in, "a\nb\n")
			d := e.start()
			d.waitFor("2 acknowledged", 30*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").Acknowledged == 2 })
			if code, body, _ := d.get("/readyz"); code != http.StatusOK {
				t.Fatalf("/readyz %d %s with the file read, want 200", code, body)
			}
			if err := os.Remove(in); err != nil {
				t.Fatal(err)
			}
			make(t, in)
			r := d.waitFor("FAILED", 30*time.Second, func(r *report) bool { return r.feed(t, "app").State == "FAILED" })
			if f := r.feed(t, "app"); f.Detail == nil || !strings.Contains(*f.Detail, "in.log") {
				t.Errorf("FAILED detail %v, want the path and the reason", f.Detail)
			}
			if code, body, _ := d.get("/healthz"); code != http.StatusServiceUnavailable {
				t.Errorf("/healthz %d %s while FAILED, want 503", code, body)
			}
			if _, stderr, code := cli(t, "status", "--addr", d.addr); code != 4 {
				t.Errorf("tailfeed status exit %d while FAILED, want 4: %s", code, stderr)
			}
			logs := strings.Count(d.log(), "ERROR")
			time.Sleep(500 * time.Millisecond) // 25 polls
			if n := strings.Count(d.log(), "ERROR"); n != logs || n > 1 {
				t.Errorf("%d ERROR lines after 25 more polls (%d before), want it logged once:\n%s", n, logs, tail(d.log(), 2000))
			}
			os.Remove(in + ".b")
			if err := os.RemoveAll(in); err != nil {
				t.Fatal(err)
			}
			audWrite(t, in, "c\n")
			d.waitFor("the new file read", 30*time.Second, func(r *report) bool {
				f := r.feed(t, "app")
				return r.Settled && f.State == "CAUGHT_UP" && f.Acknowledged == 3
			})
			if b, _ := os.ReadFile(e.path("out.log")); string(b) != "a\nb\nc\n" {
				t.Errorf("output %q, want a b c", b)
			}
			if code, body, _ := d.get("/healthz"); code != http.StatusOK {
				t.Errorf("/healthz %d %s after the regular file came back, want 200", code, body)
			}
			d.stop()
		})
	}
}

// TestAud9CXReadyzLostWhenFeedFailsSoonAfterOpening: DESIGN §12 Health:
// "/readyz answers 200 from the first moment every feed has opened its
// file or is waiting for it, and stays 200." README: "then 200
// {"status":"ready"} for the rest of the run". The single feed opens its
// file and delivers both lines (feed.status: CAUGHT_UP, settled,
// acknowledged 2); nobody asks /readyz yet; then the file is deleted and a
// directory made at its path (FAILED, as §12 Validation wants). Observed:
// /readyz then answers 503 {"reason":"feed app FAILED","status":"not
// ready"} in most rounds (8 of 16 in one run of four kinds of path; here
// the first round usually shows it) — the daemon says the feed never
// opened its file although it read and delivered it. The open-to-FAILED
// span in these runs is ~5 ms (log: "tailfeed running" 26.271, the ERROR
// 26.276).
// Suspected cause: readiness is not recorded when a feed opens; it is
// sampled: status/health.go:81-105 (Readiness.Check latches a feed only
// when a check sees it Open) fed by internal/daemon/report.go:192-205
// (watchReady polls every 10 ms) and readyFeeds (report.go:180-187: Open =
// state not STARTING and not FAILED). A feed that opens and fails between
// two samples is never latched, contrary to the comment at health.go:71-73
// ("a feed that opens and fails between two checks still counts as having
// opened"). Timing-dependent, so the test runs up to 8 rounds and fails at
// the first 503. Sure it disagrees; impact small (a narrow window at start).
func TestAud9CXReadyzLostWhenFeedFailsSoonAfterOpening(t *testing.T) {
	for round := 1; round <= 8; round++ {
		e := newEnv(t, aud9CBecomesConfig)
		in := e.path("in.log")
		audWrite(t, in, "a\nb\n")
		d := e.start()
		d.waitFor("2 acknowledged", 30*time.Second, func(r *report) bool {
			f := r.feed(t, "app")
			return r.Settled && f.Acknowledged == 2 && f.State == "CAUGHT_UP"
		})
		if err := os.Remove(in); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(in, 0o755); err != nil {
			t.Fatal(err)
		}
		d.waitFor("FAILED", 30*time.Second, func(r *report) bool { return r.feed(t, "app").State == "FAILED" })
		code, body, err := d.get("/readyz")
		if err != nil {
			t.Fatal(err)
		}
		d.stop()
		if code != http.StatusOK {
			t.Fatalf("round %d: the feed opened its file and delivered its 2 lines, then its path became a directory: /readyz %d %s, want 200 (it stays 200 once every feed opened its file)", round, code, body)
		}
	}
}

// TestAud9COKPullReplayExhaustedStaysOnce: DESIGN §12 "A replay into a
// pull subscriber answers at once (202, {"queued":n}); each entry leaves
// the ledger when a client acknowledges it, and one that exhausts its
// attempts again stays in the ledger once." A replayed entry NACKed
// retry.attempts (2) times stays in the ledger once, deadLettered 1, the
// feed lossy; a second replay queues it again (1) and an ACK empties the
// ledger (lossless). A replay while an entry is out queues nothing more.
func TestAud9COKPullReplayExhaustedStaysOnce(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(pullConfigTmpl,
		"    ackTimeoutMillis: 60000\n    onFailure: deadLetter\n    retry: {initialMillis: 10, maxMillis: 20, attempts: 2}\n"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	d := e.start()
	appendRaw(t, in.path, "Q1\n")
	nack := func(evs []event) {
		for _, ev := range evs {
			if code, body := d.call(http.MethodPost, "/v1/nack", map[string]string{"deliveryId": ev.DeliveryID}); code != http.StatusOK {
				t.Fatalf("nack: %d %s", code, body)
			}
		}
	}
	for range 2 {
		nack(d.pullN(1, 10*time.Second))
	}
	ledger := e.path("state/dlq/consumer.jsonl")
	waitUntil(t, "one dead letter", 20*time.Second, func() bool { l, _ := ledgerEntries(t, ledger); return len(l) == 1 })
	d.waitSettled(20 * time.Second)
	code, a, _ := d.replay("consumer", "")
	if code != http.StatusAccepted || a.Queued == nil || *a.Queued != 1 {
		t.Fatalf("replay: %d %+v, want 202 queued 1", code, a)
	}
	ev := d.pullN(1, 10*time.Second)
	if code, a, _ := d.replay("consumer", ""); code != http.StatusAccepted || a.Queued == nil || *a.Queued != 0 || a.Remaining == nil || *a.Remaining != 1 {
		t.Errorf("a second replay while the entry is out: %d %+v, want 202 queued 0 remaining 1", code, a)
	}
	nack(ev)
	nack(d.pullN(1, 10*time.Second))
	if more := d.pull(10, 500*time.Millisecond); len(more) != 0 {
		t.Fatalf("after its attempts ran out the replayed entry is handed out again: %+v", more)
	}
	checkLedger(t, d, ledger, "Q1")
	r := d.waitSettled(20 * time.Second)
	if f := r.feed(t, "app"); f.DeadLettered != 1 || f.Lossless {
		t.Errorf("after the replayed entry exhausted its attempts: deadLettered %d lossless %v, want 1 false", f.DeadLettered, f.Lossless)
	}
	code, a, _ = d.replay("consumer", "")
	if code != http.StatusAccepted || a.Queued == nil || *a.Queued != 1 {
		t.Fatalf("replay again: %d %+v, want 202 queued 1", code, a)
	}
	d.ack(d.pullN(1, 10*time.Second))
	checkLedger(t, d, ledger)
	r = d.waitSettled(20 * time.Second)
	if f := r.feed(t, "app"); f.DeadLettered != 0 || !f.Lossless {
		t.Errorf("after the ACK: deadLettered %d lossless %v, want 0 true", f.DeadLettered, f.Lossless)
	}
}

// TestAud9COKFileReplayShortWrite: DESIGN §6 file sink "On a failed or
// short write it truncates back to the length before the write"; §12
// replay: "`replayed` is the lines that reached their processor this
// call, `remaining` the lines still in the ledger"; README "the first
// failure stops the replay, 503 with replayed, remaining and error". Three
// dead letters; the replay has room for one line and a half: 503, replayed
// 1, remaining 2, the output ends with the first replayed line whole (no
// torn half line); with the limit lifted a second replay writes the rest.
func TestAud9COKFileReplayShortWrite(t *testing.T) {
	for _, eo := range []bool{false, true} {
		t.Run(fmt.Sprintf("exactlyOnce=%v", eo), func(t *testing.T) {
			e := newEnv(t, audWithToken(audFileConfig(fmt.Sprintf(`    exactlyOnce: %v
    fsync: always
    onFailure: deadLetter
    retry: {initialMillis: 20, maxMillis: 40, attempts: 2}
`, eo))))
			in := e.path("in.log")
			var all strings.Builder
			for i := 1; i <= 200; i++ { // the ledger (same RLIMIT_FSIZE) must fit under the limit
				fmt.Fprintf(&all, "line-%03d-xxxxxxxxxxxxxxxxxxxxxxx\n", i)
			}
			audWrite(t, in, all.String())
			d := e.start()
			d.waitSettled(20 * time.Second)
			st, err := os.Stat(e.path("out.log"))
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Prlimit(d.pid(), unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: uint64(st.Size()), Max: unix.RLIM_INFINITY}, nil); err != nil {
				t.Skipf("prlimit: %v", err)
			}
			for i := 201; i <= 203; i++ {
				appendTo(t, in, fmt.Sprintf("line-%03d-xxxxxxxxxxxxxxxxxxxxxxx\n", i))
			}
			d.waitFor("3 dead letters", 20*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").DeadLettered == 3 })
			if err := unix.Prlimit(d.pid(), unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: uint64(st.Size() + 50), Max: unix.RLIM_INFINITY}, nil); err != nil {
				t.Fatal(err)
			}
			code, _, body := request(t, d, http.MethodPost, "/admin/dlq/out/replay", ctToken, nil)
			if code != http.StatusServiceUnavailable || !strings.Contains(string(body), `"replayed":1`) || !strings.Contains(string(body), `"remaining":2`) {
				t.Errorf("replay with room for 1.5 lines: %d %s, want 503 replayed 1 remaining 2", code, body)
			}
			want := all.String() + "line-201-xxxxxxxxxxxxxxxxxxxxxxx\n"
			if b, _ := os.ReadFile(e.path("out.log")); string(b) != want {
				t.Errorf("output after the failed replay: %d bytes, tail %q; want %d bytes ending with line 201", len(b), tail(string(b), 80), len(want))
			}
			if r, _ := d.status(); r == nil || r.feed(t, "app").DeadLettered != 2 {
				t.Errorf("deadLettered after the failed replay: %+v, want 2", r)
			}
			if err := unix.Prlimit(d.pid(), unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}, nil); err != nil {
				t.Fatal(err)
			}
			code, _, body = request(t, d, http.MethodPost, "/admin/dlq/out/replay", ctToken, nil)
			if code != http.StatusOK || !strings.Contains(string(body), `"replayed":2`) || !strings.Contains(string(body), `"remaining":0`) {
				t.Fatalf("second replay: %d %s, want 200 replayed 2 remaining 0", code, body)
			}
			want += "line-202-xxxxxxxxxxxxxxxxxxxxxxx\nline-203-xxxxxxxxxxxxxxxxxxxxxxx\n"
			if b, _ := os.ReadFile(e.path("out.log")); string(b) != want {
				t.Errorf("output after the second replay: tail %q", tail(string(b), 120))
			}
			d.kill()
			d = e.start()
			d.waitSettled(20 * time.Second)
			if b, _ := os.ReadFile(e.path("out.log")); eo && string(b) != want {
				t.Errorf("exactlyOnce output after kill -9 and a restart: %d bytes, want %d; tail %q", len(b), len(want), tail(string(b), 120))
			}
		})
	}
}

// TestAud9COKFileSinkModeAfterRename: DESIGN §12 "a `file` sink's output
// takes `mode` (default 0640)"; README: "gets exactly its mode … set on a
// new output whatever the umask" and an output rotated by rename: "the
// next batch goes to the file at the path (created with mode …)". Under
// umask 077, mode 0644 (and the default 0640) hold for the first output
// and for the one created after a rename.
func TestAud9COKFileSinkModeAfterRename(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	e := newEnv(t, audOneFeed+`  - name: a
    feed: app
    type: file
    path: ./a.log
    mode: "0644"
  - name: b
    feed: app
    type: file
    path: ./b.log
`)
	in := e.path("in.log")
	audWrite(t, in, "1\n")
	d := e.start()
	d.waitSettled(20 * time.Second)
	modes := func(when string) {
		for name, want := range map[string]os.FileMode{"a.log": 0o644, "b.log": 0o640} {
			fi, err := os.Stat(e.path(name))
			if err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: %s mode %v (%v), want %04o", when, name, fi.Mode().Perm(), err, want)
			}
		}
	}
	modes("at start")
	for _, n := range []string{"a.log", "b.log"} {
		if err := os.Rename(e.path(n), e.path(n+".1")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1200 * time.Millisecond) // "at most 1 s after its path names another file, or none"
	appendTo(t, in, "2\n")
	d.waitFor("2 acknowledged", 20*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").Acknowledged == 2 })
	waitUntil(t, "new outputs", 10*time.Second, func() bool {
		_, e1 := os.Stat(e.path("a.log"))
		_, e2 := os.Stat(e.path("b.log"))
		return e1 == nil && e2 == nil
	})
	modes("after a rename")
	for _, n := range []string{"a.log", "b.log"} {
		if b, _ := os.ReadFile(e.path(n)); string(b) != "2\n" {
			t.Errorf("%s after the rename: %q, want 2", n, b)
		}
	}
	d.stop()
}

// TestAud9COKWebhookReplayAfterKill: DESIGN §6 "deadLettered = entries now
// in the ledgers: read from disk at start"; "lossless is false while any
// ledger is non-empty, across restarts"; §12 "A webhook dead letter that
// was one request is replayed as that request, under its original
// Idempotency-Key: max is rounded up to whole requests". A 3-line request
// refused (400) is dead-lettered, the daemon killed (-9) and restarted:
// deadLettered 3, lossless false, the request not sent again; a replay
// with max=1 then sends it whole under its key: replayed 3, remaining 0.
func TestAud9COKWebhookReplayAfterKill(t *testing.T) {
	rc := newReceiver(t, 1)
	rc.set(func(r *receiver) { r.poison = "R" })
	e := newEnv(t, fmt.Sprintf(webhookConfigTmpl, rc.srv.URL, 3, 2, "deadLetter"))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	d := e.start()
	appendRaw(t, in.path, "R1\nR2\nR3\n")
	ledger := e.path("state/dlq/hook.jsonl")
	waitUntil(t, "three dead letters", 20*time.Second, func() bool { l, _ := ledgerEntries(t, ledger); return len(l) == 3 })
	d.waitSettled(20 * time.Second)
	rc.mu.Lock()
	orig := append([]string(nil), rc.seen...)
	rc.mu.Unlock()
	if len(orig) != 1 {
		t.Fatalf("requests %v, want one request of 3 lines", orig)
	}
	d.kill()
	d = e.start()
	r := d.waitSettled(20 * time.Second)
	if f := r.feed(t, "app"); f.DeadLettered != 3 || f.Lossless || r.Lossless {
		t.Errorf("after kill -9 and a restart: deadLettered %d lossless %v, want 3 false", f.DeadLettered, f.Lossless)
	}
	checkLedger(t, d, ledger, "R1", "R2", "R3")
	rc.mu.Lock()
	if len(rc.seen) != 1 {
		t.Errorf("the restart sent the dead-lettered request again: %v", rc.seen)
	}
	rc.mu.Unlock()
	rc.set(func(r *receiver) { r.poison = "" })
	code, a, _ := d.replay("hook", "?max=1")
	if code != http.StatusOK || a.Replayed == nil || *a.Replayed != 3 || *a.Remaining != 0 {
		t.Fatalf("replay max=1 after the restart: %d %+v, want 200 replayed 3 remaining 0", code, a)
	}
	rc.mu.Lock()
	seen := append([]string(nil), rc.seen...)
	applied := rc.applied[orig[0]]
	rc.mu.Unlock()
	if len(seen) != 2 || seen[1] != orig[0] || fmt.Sprint(applied) != "[R1 R2 R3]" {
		t.Errorf("requests %v (applied %v), want the replay as one request under %s with R1 R2 R3", seen, applied, orig[0])
	}
	checkLedger(t, d, ledger)
	if r := d.waitSettled(20 * time.Second); !r.Lossless {
		t.Errorf("not lossless with an empty ledger")
	}
	d.stop()
}

const aud9CKillRotConfig = `dataDir: ./state
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 2000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 20
    rotateWaitMillis: 300
    queueCapacity: 64
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
    exactlyOnce: true
    fsync: %s
    fsyncIntervalMillis: 30
`

// TestAud9COKExactlyOnceKill9WithRotations: DESIGN §2 / §8 "with
// exactlyOnce the output is byte-identical" after kill -9 at random
// moments, here while the input is also rotated by rename (each rotation
// waits until the old file was read to its end, so nothing is a lost tail):
// every line is in the output exactly once, for fsync never, interval and
// always.
func TestAud9COKExactlyOnceKill9WithRotations(t *testing.T) {
	for _, mode := range []string{"never", "interval", "always"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, fmt.Sprintf(aud9CKillRotConfig, mode))
			in := e.path("in.log")
			audWrite(t, in, "L000000-\n")
			n := 0
			gen := 0
			// A first clean run: the record exists before the first kill
			// (a kill before the first flush is TestAud9CXExactlyOnceIntervalFirstKillDuplicates).
			d := e.start()
			d.waitFor("L000000 acknowledged", 30*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").Acknowledged == 1 })
			d.stop()
			for round := 0; round < 8; round++ {
				d = e.start()
				for burst := 0; burst < 3; burst++ {
					var b strings.Builder
					for i := 0; i < 200; i++ {
						n++
						fmt.Fprintf(&b, "L%06d-%s\n", n, strings.Repeat("x", n%40))
					}
					appendTo(t, in, b.String())
				}
				if round%2 == 1 {
					// rotate once the file was read to its end
					d.waitFor("read to the end", 30*time.Second, func(r *report) bool {
						f := r.feed(t, "app")
						fi, err := os.Stat(in)
						return err == nil && f.Pointer != nil && f.Pointer.Offset == fi.Size() && f.State == "CAUGHT_UP"
					})
					gen++
					if err := os.Rename(in, fmt.Sprintf("%s.%d", in, gen)); err != nil {
						t.Fatal(err)
					}
					audWrite(t, in, "")
				}
				time.Sleep(time.Duration(20+round*15) * time.Millisecond)
				d.kill()
			}
			d = e.start()
			r := d.waitFor(fmt.Sprintf("settled with all %d lines", n), 60*time.Second, func(r *report) bool {
				b, _ := os.ReadFile(e.path("out.log"))
				return r.Settled && strings.Count(string(b), "\n") >= n+1
			})
			b, _ := os.ReadFile(e.path("out.log"))
			lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(string(b), "L000000-\n"), "\n"), "\n")
			seen := map[string]int{}
			for _, l := range lines {
				seen[l]++
			}
			missing, dups := 0, 0
			for i := 1; i <= n; i++ {
				l := fmt.Sprintf("L%06d-%s", i, strings.Repeat("x", i%40))
				switch seen[l] {
				case 0:
					missing++
				case 1:
				default:
					dups++
				}
			}
			if dups != 0 {
				var first, last string
				for i := 1; i <= n; i++ {
					l := fmt.Sprintf("L%06d-%s", i, strings.Repeat("x", i%40))
					if seen[l] > 1 {
						if first == "" {
							first = l
						}
						last = l
					}
				}
				t.Logf("duplicated from %.7s to %.7s", first, last)
			}
			if missing != 0 || dups != 0 || len(lines) != n {
				t.Errorf("output after 8 kills and %d rotations: %d lines, %d missing, %d duplicated (want %d once each)", gen, len(lines), missing, dups, n)
			}
			if f := r.feed(t, "app"); !f.Lossless || f.LostTails != 0 {
				t.Errorf("lossless %v lostTails %d detail %v", f.Lossless, f.LostTails, f.Detail)
			}
			d.stop()
		})
	}
}

// TestAud9CXExactlyOnceIntervalFirstKillDuplicates: DESIGN §2
// "Built-in sinks with exactlyOnce: true store the last applied (epoch,
// position) atomically with their output/state and skip re-deliveries";
// §6 exactlyOnce (file): "At open: a record shorter than the file →
// truncate the file to it (that tail was never acknowledged and will be
// re-delivered)"; §8 "with exactlyOnce the output is byte-identical";
// README (Exactly-once effects): "After any number of kill -9 the output is
// byte-identical to a clean run." A new exactlyOnce file sink with fsync:
// interval (fsyncIntervalMillis 1000) writes the first 600 lines; kill -9
// comes before its first flush (state/out.rec exists, 0 bytes). Observed:
// after the restart out.log holds 1200 lines, every line twice (also with
// fsyncIntervalMillis 30 and a kill 20 ms after the append, in a kill loop
// with rotations: lines 1-600 twice). Expected: the output truncated back
// to what a record covers (nothing), each line once.
// Suspected cause: sink/file/exactlyonce.go:143-146 (sideRecord.reconcile:
// no valid slot → "no record yet: nothing was applied under exactlyOnce",
// return -1: the output is left as it is), and openRecord
// (exactlyonce.go:193-236) stores no first record (length = the output's
// size at open) when it creates the record file, so an output written
// before the first interval flush is taken as pre-existing content and
// the re-delivered lines are appended after it. fsync never/always store
// the record with each batch, so their window is only between the write
// and the store. Sure.
func TestAud9CXExactlyOnceIntervalFirstKillDuplicates(t *testing.T) {
	e := newEnv(t, audOneFeed+`  - name: out
    feed: app
    type: file
    path: ./out.log
    exactlyOnce: true
    fsync: interval
    fsyncIntervalMillis: 1000
`)
	in := e.path("in.log")
	audWrite(t, in, "")
	d := e.start()
	var b strings.Builder
	for i := 1; i <= 600; i++ {
		fmt.Fprintf(&b, "L%06d\n", i)
	}
	appendTo(t, in, b.String())
	waitUntil(t, "600 lines in the output", 10*time.Second, func() bool {
		out, _ := os.ReadFile(e.path("out.log"))
		return len(out) == b.Len()
	})
	d.kill()
	d = e.start()
	d.waitFor("settled at the end", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return r.Settled && f.Pointer != nil && f.Pointer.Offset == int64(b.Len())
	})
	out, _ := os.ReadFile(e.path("out.log"))
	if string(out) != b.String() {
		t.Errorf("exactlyOnce output after a kill -9 before the first interval flush and a restart: %d bytes (%d lines, L000001 %d times), want the input's %d bytes once",
			len(out), strings.Count(string(out), "\n"), strings.Count(string(out), "L000001\n"), b.Len())
	}
	d.stop()
}

// TestAud9COKEnvEverywhere: DESIGN §12 Environment: "${VAR} and
// ${VAR:-default} in any scalar value, expanded per scalar after the YAML
// is parsed … and before the value is typed"; "$${ is a literal ${".
// References in a webhook URL, a header value, an integer (batchMaxLines,
// typed: one line per request), a float (retry.jitter), an enum
// (overload policy of a subscriber), a feed's glob exclude list and the
// status token, with defaults and set variables, all take effect; a
// header value with $${ keeps a literal ${.
func TestAud9COKEnvEverywhere(t *testing.T) {
	var mu sync.Mutex
	var auth, lit []string
	var sizes []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 0
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			n++
		}
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		lit = append(lit, r.Header.Get("X-Lit"))
		sizes = append(sizes, n)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ${AUD9C_TOKEN}
feeds:
  - name: app
    path: ./logs/*.log
    exclude: ["${AUD9C_EXCL:-./logs/skip*.log}"]
    overload:
      subscribers:
        tap:
          policy: ${AUD9C_POLICY:-DROP_AFTER_SPIN}
processors:
  - name: hook
    feed: app
    type: webhook
    url: http://${AUD9C_HOST}/in
    batchMaxLines: ${AUD9C_BML:-1}
    headers:
      Authorization: "Bearer ${AUD9C_HOOK}"
      X-Lit: "a$${b}"
    retry:
      jitter: ${AUD9C_JITTER:-0.1}
  - name: tap
    feed: app
    type: discard
`)
	os.MkdirAll(e.path("logs"), 0o755)
	audWrite(t, e.path("logs/a.log"), "1\n2\n3\n")
	audWrite(t, e.path("logs/skip1.log"), "x\n")
	d := e.startIn(e.dir, "AUD9C_TOKEN=envtok", "AUD9C_HOST="+host, "AUD9C_HOOK=hooksecret")
	var r *report
	waitUntil(t, "settled", 30*time.Second, func() bool {
		code, _, body := request(t, d, http.MethodGet, "/feed.status", "", nil)
		if code != http.StatusOK {
			return false
		}
		r = &report{}
		return json.Unmarshal(body, r) == nil && r.Settled && r.Feeds[0].Acknowledged == 3
	})
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(sizes) != "[1 1 1]" {
		t.Errorf("request sizes %v, want [1 1 1] (batchMaxLines ${AUD9C_BML:-1} typed as 1)", sizes)
	}
	for i := range auth {
		if auth[i] != "Bearer hooksecret" || lit[i] != "a${b}" {
			t.Errorf("request %d: Authorization %q X-Lit %q, want Bearer hooksecret and a${b}", i, auth[i], lit[i])
		}
	}
	if f := r.feed(t, "app"); f.Sequence != 3 {
		t.Errorf("sequence %d, want 3 (logs/skip1.log excluded)", f.Sequence)
	}
	if code, _, _ := request(t, d, http.MethodGet, "/admin/dlq/hook", "", nil); code != http.StatusUnauthorized {
		t.Errorf("admin without the token from ${AUD9C_TOKEN}: %d, want 401", code)
	}
	if code, _, body := request(t, d, http.MethodGet, "/admin/dlq/hook", "envtok", nil); code != http.StatusOK {
		t.Errorf("admin with the token from ${AUD9C_TOKEN}: %d %s, want 200", code, body)
	}
	m := string(aud9CGet(t, d, "/metrics"))
	if !strings.Contains(m, "tailfeed_feed_state") {
		t.Errorf("no metrics")
	}
	d.stop()
}

func aud9CGet(t *testing.T, d *daemon, path string) []byte {
	t.Helper()
	_, body, err := d.get(path)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestAud9COKWebhookFirstRequestKeyAfterKill: DESIGN §6 webhook "Before the
// first POST of a batch the sink records (epoch, first, last) … after a
// restart it … rebuilds the recorded batch with the same range, so the key
// is stable." The very first request of a new webhook is received and
// never answered; kill -9; the restart sends the same lines under the same
// Idempotency-Key.
func TestAud9COKWebhookFirstRequestKeyAfterKill(t *testing.T) {
	var mu sync.Mutex
	var keys, bodies []string
	hang := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			var o struct{ Line string }
			json.Unmarshal(sc.Bytes(), &o)
			b.WriteString(o.Line + ",")
		}
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		bodies = append(bodies, b.String())
		h := hang
		mu.Unlock()
		if h {
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t, audHookConfig(srv.URL, "    batchMaxLines: 2\n    timeoutMillis: 60000\n"))
	audWrite(t, e.path("in.log"), "a\nb\nc\n")
	d := e.start()
	waitUntil(t, "the first request", 20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(keys) == 1 })
	d.kill()
	mu.Lock()
	hang = false
	mu.Unlock()
	d = e.start()
	d.waitFor("3 acknowledged", 30*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").Acknowledged == 3 })
	mu.Lock()
	defer mu.Unlock()
	if len(keys) < 2 || keys[1] != keys[0] || bodies[1] != bodies[0] {
		t.Errorf("requests %v %v: want the first request sent again under its key with the same lines", keys, bodies)
	}
	d.stop()
}

// TestAud9COKReplayUnderLoadThenKill: as TestAud9COKReplayKill9ExactlyOnce
// with the input growing while the replay runs and a kill -9 soon after
// it: every line, replayed ones included, once in the exactlyOnce output.
func TestAud9COKReplayUnderLoadThenKill(t *testing.T) {
	for _, mode := range []string{"never", "interval"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, audWithToken(audFileConfig(`    exactlyOnce: true
    fsync: `+mode+`
    fsyncIntervalMillis: 20
    onFailure: deadLetter
    retry: {initialMillis: 20, maxMillis: 40, attempts: 2}
`)))
			in := e.path("in.log")
			var all strings.Builder
			for i := 1; i <= 200; i++ {
				fmt.Fprintf(&all, "base-%04d-xxxxxxxxxxxxxxxxxxxxxx\n", i)
			}
			audWrite(t, in, all.String())
			d := e.start()
			d.waitSettled(20 * time.Second)
			st, _ := os.Stat(e.path("out.log"))
			if err := unix.Prlimit(d.pid(), unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: uint64(st.Size() + 50), Max: unix.RLIM_INFINITY}, nil); err != nil {
				t.Skipf("prlimit: %v", err)
			}
			appendTo(t, in, "dead-1-xxxxxxxxxxxxxxxxxxxxxxxxxx\ndead-2-xxxxxxxxxxxxxxxxxxxxxxxxxx\ndead-3-xxxxxxxxxxxxxxxxxxxxxxxxxx\n")
			d.waitFor("2 dead letters", 20*time.Second, func(r *report) bool { return r.Settled && r.feed(t, "app").DeadLettered == 2 })
			if err := unix.Prlimit(d.pid(), unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}, nil); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 1; i <= 3000; i++ {
					f, err := os.OpenFile(in, os.O_WRONLY|os.O_APPEND, 0)
					if err != nil {
						return
					}
					fmt.Fprintf(f, "more-%04d-xxxxxxxxxxxxxxxxxxxxxx\n", i)
					f.Close()
					if i%100 == 0 {
						time.Sleep(5 * time.Millisecond)
					}
				}
			}()
			time.Sleep(30 * time.Millisecond)
			code, _, body := request(t, d, http.MethodPost, "/admin/dlq/out/replay", ctToken, nil)
			if code != http.StatusOK || !strings.Contains(string(body), `"replayed":2`) {
				t.Fatalf("replay: %d %s", code, body)
			}
			time.Sleep(20 * time.Millisecond)
			d.kill()
			<-done
			d = e.start()
			d.waitFor("settled at the end", 60*time.Second, func(r *report) bool {
				fi, _ := os.Stat(in)
				f := r.feed(t, "app")
				return r.Settled && f.Pointer != nil && f.Pointer.Offset == fi.Size()
			})
			out, _ := os.ReadFile(e.path("out.log"))
			inb, _ := os.ReadFile(in)
			for _, l := range strings.Split(strings.TrimSuffix(string(inb), "\n"), "\n") {
				if c := strings.Count(string(out), l+"\n"); c != 1 {
					t.Errorf("%s is %d times in the output, want once", l, c)
				}
			}
			if r, _ := d.status(); r == nil || r.feed(t, "app").DeadLettered != 0 {
				t.Errorf("dead letters left after the replay: %+v", r)
			}
			d.stop()
		})
	}
}
