package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kfake"

	"tailfeed/internal/natstest"
	"tailfeed/internal/testutil/pgtest"
)

// Third audit pass (second on the engines) of DESIGN §11 "Sinks on
// distributed engines" and the parts of §2, §9 and §12 that bind them,
// against the built binary. TestAud3EX… are findings (they fail against
// the product as it is); TestAud3EOK… are fast passing probes of rules that
// were checked and hold.

// aud3ReloadTmpl is a feed read by a file sink and a kafka processor whose
// broker is {{BROKER}}; {{KTLS}} is replaced by the kafka processor's
// further keys (nothing, or a tls mapping).
const aud3ReloadTmpl = `dataDir: ./state
instance: aud3-host
status: {listen: "{{ADDR}}", token: sesame}
shutdownTimeoutMillis: 1000
feeds:
  - {name: app, path: ./in.log, readStrategy: COMMITTED, pollIntervalMillis: 20}
processors:
  - {name: archive, feed: app, type: file, path: ./out.log}
  - name: k
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: logs
    createTopics: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
{{KTLS}}`

// TestAud3EXReloadEngineTLSFileMissingNoFileLine — DESIGN §12 Reload: "The
// new file is validated whole first; if invalid, an ERROR with every
// `FILE:LINE: message`, reloadFailures + 1, and the daemon runs on
// unchanged" and "`POST /admin/reload` … answers … 400 `{"error"}` with
// every `FILE:LINE: message`"; §11 TLS keys of a kafka processor. At `run`
// a kafka processor whose tls.caFile is missing is a config error naming
// FILE:LINE (exit 2, TestAudOKEngineTLSFileMissingExit2 holds it).
// Expected: a reload to the same mistake is refused with a body naming
// tailfeed.yaml:LINE, and the running feed is left alone.
// Observed: the processor's TLS files are checked only when the feed is
// rebuilt, after the feed was stopped: the answer carries no FILE:LINE
// (README, Reload, documents this as a known limit: "checked when its feed
// is rebuilt, where a failure rolls the reload back without a line
// number" — a README decision that contradicts DESIGN's letter): the 400
// body and config.lastError read "feed app: processor k: kafka processor
// k: tls.caFile: open …: no such file or directory", and the log shows
// the feed stopped and rebuilt ("reload: a feed could not be built;
// restarting the stopped feeds on the unchanged config") although the
// file was invalid (TestAud3EXInvalidReloadTouchesBestEffortTap shows a
// consequence).
func TestAud3EXReloadEngineTLSFileMissingNoFileLine(t *testing.T) {
	broker := startKafka(t)
	tmpl := strings.ReplaceAll(aud3ReloadTmpl, "{{BROKER}}", broker)
	e := newEnv(t, strings.ReplaceAll(tmpl, "{{KTLS}}", ""))
	in := newInput(t, e.path("in.log"))
	in.appendLines(50)
	d := e.start()
	d.waitSettled(60 * time.Second)
	before := d.waitSettled(10*time.Second).feed(t, "app")

	bad := strings.ReplaceAll(tmpl, "{{KTLS}}", "    tls: {caFile: ./no-such-ca.pem}\n")
	reconfig(t, e, d, bad)
	code, _, body := request(t, d, http.MethodPost, "/admin/reload", "sesame", nil)
	tlsLine := 0
	for i, l := range strings.Split(bad, "\n") {
		if strings.Contains(l, "no-such-ca.pem") {
			tlsLine = i + 1
		}
	}
	want := regexp.MustCompile(`tailfeed\.yaml:` + strconv.Itoa(tlsLine) + `: `)
	if code != http.StatusBadRequest || !want.Match(body) {
		t.Errorf("POST /admin/reload with a missing kafka tls.caFile (line %d) = %d %s; want 400 naming tailfeed.yaml:%d: (as run does, exit 2)",
			tlsLine, code, body, tlsLine)
	}
	c := configOf(t, d)
	if c.ReloadFailures != 1 || c.LastError == nil || !want.MatchString(*c.LastError) {
		t.Errorf("config after the reload = %+v; want reloadFailures 1 and lastError naming tailfeed.yaml:%d:", c, tlsLine)
	}
	after := d.waitSettled(30*time.Second).feed(t, "app")
	if after.Pointer == nil || before.Pointer == nil || after.Pointer.Commits != before.Pointer.Commits {
		t.Errorf("an invalid reload touched the running feed: pointer %+v before, %+v after (DESIGN: the daemon runs on unchanged)",
			before.Pointer, after.Pointer)
	}
	if strings.Contains(d.log(), "restarting the stopped feeds") {
		t.Errorf("the feed was stopped and rebuilt on an invalid file: %q", grepLines(d.log(), "reload"))
	}
	d.stop()
}

// aud3PgTwoTmpl: one feed, two postgres processors into one table — errs
// takes the ERROR lines only, all takes every line (its DSN is {{DSNALL}}).
const aud3PgTwoTmpl = `dataDir: ./state
instance: aud3-host
status: {listen: "{{ADDR}}"}
shutdownTimeoutMillis: 1000
feeds:
  - {name: app, path: ./in.log, readStrategy: COMMITTED, pollIntervalMillis: 20}
processors:
  - name: errs
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    createTable: true
    match: "ERROR"
    retry: {initialMillis: 50, maxMillis: 400}
  - name: all
    feed: app
    type: postgres
    dsn: "{{DSNALL}}"
    table: lines
    onFailure: hold
    retry: {initialMillis: 50, maxMillis: 400, attempts: 2}
`

// TestAud3EXPostgresTwoProcessorsOneTableLoseLines — DESIGN §11 postgres:
// "the inbox pattern: a re-delivery is a no-op, so every line lands once,
// with or without exactlyOnce … Its record is max(position) per
// (instance, feed, epoch)"; §2 "never a gap". DESIGN names only two
// sidecars with one instance as an operator error on one engine (and makes
// two nats processors of one feed and stream a config error); two postgres
// processors of one sidecar and feed on one table are accepted by validate
// and run.
// Set-up: processor errs (match: ERROR, role postgres) and processor all
// (every line, role aud3 without INSERT on the table, onFailure: hold)
// write one table. errs inserts the ERROR rows; all holds (the pointer
// stays at 0). Stopped with SIGTERM, INSERT granted, started again.
// Expected: every line of the file in the table once (all never finished
// them: they are re-read and inserted), or the config refused as the nats
// rule does. Observed: all takes errs' rows as its own record
// (max(position) of the shared (instance, feed, epoch)), skips every line
// up to errs' last one, and the non-ERROR lines before it never reach the
// table; the feed reports settled and lossless.
func TestAud3EXPostgresTwoProcessorsOneTableLoseLines(t *testing.T) {
	c, good := aud3PgSelectOnlyRole(t)
	limited := strings.Replace(good, "user=postgres", "user=aud3", 1)
	e := newEnv(t, strings.NewReplacer("{{DSN}}", good, "{{DSNALL}}", limited).Replace(aud3PgTwoTmpl))
	var lines []string
	for i := range 40 {
		if i%4 == 3 {
			lines = append(lines, fmt.Sprintf("ERROR line %d", i))
		} else {
			lines = append(lines, fmt.Sprintf("info line %d", i))
		}
	}
	if err := os.WriteFile(e.path("in.log"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := runValidate(t, e); code != 0 {
		t.Logf("validate refuses the config (exit %d): %s — the rule this test checks then holds", code, out)
		return
	}
	d := e.start()
	conn := pgConnect(t, c)
	waitUntil(t, "errs inserted the 10 ERROR rows", 60*time.Second, func() bool { return pgCount(conn, "lines") == 10 })
	waitReport(t, d, "processor all holding (the feed stalled)", 30*time.Second, func(r *report) bool {
		return r.feed(t, "app").Stalled != nil
	})
	d.stop()
	if p, ok := showPointer(t, e.path("state/feeds/app.ptr")); ok && p.Offset != 0 {
		t.Fatalf("precondition: all held every line, yet the pointer is at %d", p.Offset)
	}
	c.Psql(`GRANT INSERT, UPDATE ON lines, lines_marks TO aud3;`)
	d2 := e.start()
	r := d2.waitSettled(60 * time.Second)
	d2.stop()
	got := pgLines(t, c, "lines")
	var missing []string
	for _, l := range lines {
		if got[l] != 1 {
			missing = append(missing, fmt.Sprintf("%q×%d", l, got[l]))
		}
	}
	if len(missing) > 0 {
		f := r.feed(t, "app")
		t.Errorf("%d of %d lines not in the table once after processor all could insert (feed lossless %v, settled %v): %s",
			len(missing), len(lines), f.Lossless, f.Settled, strings.Join(missing, " "))
	}
}

// runValidate runs `tailfeed validate` on e's config (written with a free
// address) and returns its output and exit code.
func runValidate(t *testing.T, e *env) (string, int) {
	t.Helper()
	cfg := e.cfgWith(freeAddr(t))
	out, errOut, code := cli(t, "validate", "--config", cfg)
	return out + errOut, code
}

// aud3CrashConfig: one rotated single-file feed into postgres (no
// exactlyOnce: the inbox), a nats exactlyOnce subject holding {epoch}
// (each generation on a subject of its own), and kafka without
// exactlyOnce (at least once), with a file sink filtering most lines out
// (its marks advance over filtered lines).
const aud3CrashConfig = audCommittedHead + `    queueCapacity: 512
    pollIntervalMillis: 20
    rotateWaitMillis: 200
processors:
  - name: pg
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    createTable: true
    retry: {initialMillis: 50, maxMillis: 400}
  - name: ne
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDE
    subject: aude.{instance}.{feed}.{epoch}
    exactlyOnce: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
  - name: kp
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: plain
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
  - name: fx
    feed: app
    type: file
    path: ./fx.log
    exactlyOnce: true
    match: "7 x"
`

// TestAud3EOKCrashRotateAllEngines — DESIGN §2 (at least once, never a
// gap; effectively once where the sink proves what it applied) and §11
// (postgres: every line lands once with or without exactlyOnce; nats
// exactlyOnce: the subject holds every line once, in order; kafka without
// exactlyOnce: every line at least once) under kill -9 mid-delivery with
// logrotate-style renames in between. Expected: no line missing anywhere;
// postgres and the nats subjects each line once; the exactlyOnce file
// sink each matching line once.
func TestAud3EOKCrashRotateAllEngines(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	broker := startKafka(t, kfake.SeedTopics(2, "plain"))
	srv, js := startNats(t, shortDupStream("AUDE", "aude", true))
	adm := kafkaAdmin(t, broker)
	conn := pgConnect(t, c)
	e := newEnv(t, strings.NewReplacer("{{DSN}}", c.DSN("sslmode=disable"), "{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(aud3CrashConfig))
	in := &audFile{t: t, path: e.path("in.log")}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 31))
	in.appendLines(300)
	progress := func() uint64 {
		return streamMsgs(t, js, "AUDE") + uint64(kafkaEnd(t, adm, "plain")) + uint64(pgCount(conn, "lines"))
	}
	rotations := 0
	const kills = 12
	for k := range kills {
		d := e.spawn()
		from := progress()
		added := len(in.texts)
		in.appendLines(500 + rng.IntN(1500))
		if k == 0 {
			waitUntil(t, "the first run delivers", 60*time.Second, func() bool { return progress() > from || d.exited() })
		}
		if k%2 == 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
			rotations++
			if err := os.Rename(in.path, fmt.Sprintf("%s.%d", in.path, rotations)); err != nil {
				t.Fatal(err)
			}
			in.appendLines(300 + rng.IntN(1000))
		}
		// Each line appended in this round is a new delivery in each of
		// the three counted engines: a kill point beyond 3× them may never
		// come (the probe once waited 2 min for 4,035 of at most ~3,900).
		added = len(in.texts) - added
		after := uint64(50 + rng.IntN(min(4000, 3*added-50)))
		killWhen(t, d, fmt.Sprintf("kill %d: %d more deliveries", k, after), 120*time.Second, func() bool {
			return progress()-from >= after
		})
	}
	d := e.start()
	r := d.waitSettled(300 * time.Second)
	d.stop()
	if f := r.feed(t, "app"); !f.Lossless {
		t.Errorf("feed lossy after the run: %s", f.lossFacts())
	}
	n := len(in.texts)
	rows := pgLines(t, c, "lines")
	kc := kafkaCount(t, broker, "plain", n)
	nc := map[string]int{}
	for _, m := range natstest.Messages(t, js, "AUDE") {
		nc[string(m.Data)]++
	}
	fx := map[string]int{}
	if b, err := os.ReadFile(e.path("fx.log")); err == nil {
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			fx[l]++
		}
	}
	var pgBad, natsBad, kafkaMissing, fxBad int
	for _, s := range in.texts {
		if rows[s] != 1 {
			pgBad++
		}
		if nc[s] != 1 {
			natsBad++
		}
		if kc[s] < 1 {
			kafkaMissing++
		}
		want := 0
		if strings.Contains(s, "7 x") {
			want = 1
		}
		if fx[s] != want {
			fxBad++
		}
	}
	if pgBad+natsBad+kafkaMissing+fxBad > 0 {
		t.Errorf("%d lines, %d rotations, %d kills: postgres %d not once, nats %d not once, kafka %d missing, exactlyOnce file %d wrong",
			n, rotations, kills, pgBad, natsBad, kafkaMissing, fxBad)
	}
	t.Logf("%d lines, %d rotations, %d kills", n, rotations, kills)
}

const aud3PoisonConfig = audCommittedHead + `processors:
  - name: kx
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: logs
    offsetsTopic: offs
    exactlyOnce: true
    timeoutMillis: 2000
    onFailure: deadLetter
    retry: {initialMillis: 50, maxMillis: 200, attempts: 2}
  - name: nx
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDP
    subject: audp.{instance}.{feed}
    exactlyOnce: true
    timeoutMillis: 2000
    onFailure: deadLetter
    retry: {initialMillis: 50, maxMillis: 200, attempts: 2}
`

// TestAud3EOKPoisonInExactlyOnceBatch — DESIGN §11 Failures: "only a
// record the engine rejects (too large …) follows onFailure"; kafka: "a
// produce error aborts the transaction (never a partial commit) and the
// batch is retried as in §6"; nats exactlyOnce: "a message is stored only
// after its predecessor". One over-size line in the middle of a batch of
// 2000 (random, incompressible; both engines limited to 100,000 bytes): with onFailure deadLetter each sink dead-letters that line alone;
// every other line lands once, in order (kafka read-committed), and a
// restart re-delivers nothing.
func TestAud3EOKPoisonInExactlyOnceBatch(t *testing.T) {
	broker := startKafka(t, kfake.SeedTopics(1, "logs", "offs"), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "100000"}))
	srv, js := startNats(t, jetstream.StreamConfig{Name: "AUDP", Subjects: []string{"audp.>"}, Storage: jetstream.FileStorage,
		Duplicates: 100 * time.Millisecond, MaxMsgSize: 100000, AllowBatchPublish: true})
	e := newEnv(t, strings.NewReplacer("{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(aud3PoisonConfig))
	var lines []string
	for i := range 2000 {
		lines = append(lines, fmt.Sprintf("line %05d", i))
	}
	raw := make([]byte, 120000)
	for i := range raw {
		raw[i] = byte(rand.IntN(256))
	}
	big := base64.StdEncoding.EncodeToString(raw) // 160,000 incompressible bytes, over both limits
	all := append(append(append([]string{}, lines[:1200]...), big), lines[1200:]...)
	if err := os.WriteFile(e.path("in.log"), []byte(strings.Join(all, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	r := d.waitFor("settled with the big line dead-lettered twice", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.DeadLettered == 2
	})
	d.stop()
	_, _, f2 := settledRun(t, e)
	if f2.Sequence != 0 {
		t.Errorf("the restart re-read %d lines", f2.Sequence)
	}
	kc := kafkaRecords(t, broker, "logs", len(lines))
	var kt []string
	for _, rec := range kc {
		kt = append(kt, string(rec.Value))
	}
	var nt []string
	for _, m := range natstest.Messages(t, js, "AUDP") {
		nt = append(nt, string(m.Data))
	}
	want := strings.Join(lines, "|")
	if strings.Join(kt, "|") != want {
		t.Errorf("kafka holds %d records, not the %d small lines once in order", len(kt), len(lines))
	}
	if strings.Join(nt, "|") != want {
		t.Errorf("nats holds %d messages, not the %d small lines once in order", len(nt), len(lines))
	}
	if f := r.feed(t, "app"); f.DeadLettered != 2 {
		t.Errorf("deadLettered %d, want 2 (the big line, once per sink)", f.DeadLettered)
	}
}

const aud3PlainConfig = audCommittedHead + `processors:
  - name: kp
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: plain
    createTopics: true
    timeoutMillis: 2000
  - name: np
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDN
    subject: audn.{instance}.{feed}
    createStream: true
    timeoutMillis: 2000
`

// TestAud3EOKPlainEngineMessages — DESIGN §11 without exactlyOnce: kafka
// records carry the raw line, the five tailfeed-* headers and the key
// (default {instance}:{feed}, the README's decision); nats messages (fast
// batches on a created stream) carry Nats-Msg-Id
// <instance>:<feed>:<epoch>:<position> and the tailfeed-* headers.
func TestAud3EOKPlainEngineMessages(t *testing.T) {
	broker := startKafka(t)
	srv, js := startNats(t)
	e := newEnv(t, strings.NewReplacer("{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(aud3PlainConfig))
	lines := []string{"first", "", "third \xfe"}
	os.WriteFile(e.path("in.log"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	settledRun(t, e)
	ptr, _ := showPointer(t, e.path("state/feeds/app.ptr"))
	recs := kafkaRecords(t, broker, "plain", len(lines))
	msgs := natstest.Messages(t, js, "AUDN")
	if len(recs) != len(lines) || len(msgs) != len(lines) {
		t.Fatalf("%d kafka records, %d nats messages; want %d each", len(recs), len(msgs), len(lines))
	}
	pos := 0
	for i, l := range lines {
		pos += len(l) + 1
		want := map[string]string{"tailfeed-instance": "aud-host", "tailfeed-feed": "app", "tailfeed-epoch": ptr.Epoch,
			"tailfeed-position": strconv.Itoa(pos), "tailfeed-path": e.path("in.log")}
		kh := map[string]string{}
		for _, h := range recs[i].Headers {
			kh[h.Key] = string(h.Value)
		}
		for k, v := range want {
			if kh[k] != v || msgs[i].Header.Get(k) != v {
				t.Errorf("line %d: %s kafka %q nats %q, want %q", i, k, kh[k], msgs[i].Header.Get(k), v)
			}
		}
		if id := fmt.Sprintf("aud-host:app:%s:%d", ptr.Epoch, pos); msgs[i].Header.Get("Nats-Msg-Id") != id {
			t.Errorf("line %d: Nats-Msg-Id %q, want %q", i, msgs[i].Header.Get("Nats-Msg-Id"), id)
		}
		if string(recs[i].Value) != l || string(msgs[i].Data) != l || string(recs[i].Key) != "aud-host:app" {
			t.Errorf("line %d: kafka key %q value %q, nats body %q", i, recs[i].Key, recs[i].Value, msgs[i].Data)
		}
	}
}

// TestAud3EOKInsecureSkipVerifyWarned — DESIGN §11 TLS: "insecureSkipVerify:
// true exists, and is logged at WARN at start" — for a kafka and a nats
// processor, before either reaches its engine (both unreachable).
func TestAud3EOKInsecureSkipVerifyWarned(t *testing.T) {
	cfg := audCommittedHead + `processors:
  - {name: k, feed: app, type: kafka, brokers: ["127.0.0.1:1"], topic: t, tls: {insecureSkipVerify: true}}
  - {name: n, feed: app, type: nats, url: "tls://127.0.0.1:1", stream: S, subject: "s.{instance}", tls: {insecureSkipVerify: true}}
`
	e := newEnv(t, cfg)
	os.WriteFile(e.path("in.log"), nil, 0o644)
	d := e.start()
	waitUntil(t, "two insecureSkipVerify WARNs", 30*time.Second, func() bool {
		return len(audWarnLines(d.log(), "insecureSkipVerify")) >= 2
	})
	d.stop()
	w := audWarnLines(d.log(), "insecureSkipVerify")
	if !strings.Contains(strings.Join(w, "\n"), "app.k") || !strings.Contains(strings.Join(w, "\n"), "app.n") {
		t.Errorf("the WARNs do not name both processors: %q", w)
	}
}

const aud3CatchConfig = audCommittedHead + `processors:
  - name: pg
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    createTable: true
    retry: {initialMillis: 50, maxMillis: 400}
` + audKafkaKx + `  - name: nx
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDQ
    subject: audq.{instance}.{feed}
    exactlyOnce: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
  - name: fx
    feed: app
    type: file
    path: ./fx.log
    exactlyOnce: true
  - name: plain
    feed: app
    type: file
    path: ./plain.log
`

// TestAud3EOKCatchUpOthersSkip — DESIGN §11 "A restored sink is caught up
// from the input": a postgres table restored to an earlier point (its rows
// after line 600 of 1000 deleted while stopped) is behind the pointer in
// the same epoch: "the pointer is committed back to that position … and
// the whole feed re-reads from it — every subscriber receives the gap
// again" — "other sinks skip what they hold through AlreadyApplied or
// receive duplicates". Expected: the table every line once; kafka
// exactlyOnce (read-committed), the nats exactlyOnce subject and the
// exactlyOnce file every line once; the plain file sink the 400 lines
// again.
func TestAud3EOKCatchUpOthersSkip(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	broker := startKafka(t, kfake.SeedTopics(1, "logs", "offs"))
	srv, js := startNats(t, shortDupStream("AUDQ", "audq", true))
	e := newEnv(t, strings.NewReplacer("{{DSN}}", c.DSN("sslmode=disable"), "{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(aud3CatchConfig))
	in := &audFile{t: t, path: e.path("in.log")}
	in.appendLines(1000)
	settledRun(t, e)
	c.Psql(fmt.Sprintf(`DELETE FROM lines WHERE position > %d`, len(strings.Join(in.texts[:600], "\n"))+1))
	d, _, f := settledRun(t, e)
	if !strings.Contains(d.log(), "committing the pointer back") {
		t.Errorf("no catch-up in the log (sequence %d)", f.Sequence)
	}
	rows := pgLines(t, c, "lines")
	kc := kafkaCount(t, broker, "logs", len(in.texts))
	nc := map[string]int{}
	for _, m := range natstest.Messages(t, js, "AUDQ") {
		nc[string(m.Data)]++
	}
	fx := map[string]int{}
	b, _ := os.ReadFile(e.path("fx.log"))
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		fx[l]++
	}
	pb, _ := os.ReadFile(e.path("plain.log"))
	plain := strings.Count(string(pb), "\n")
	var bad []string
	for i, s := range in.texts {
		if rows[s] != 1 || kc[s] != 1 || nc[s] != 1 || fx[s] != 1 {
			bad = append(bad, fmt.Sprintf("line %d: pg %d kafka %d nats %d file %d", i, rows[s], kc[s], nc[s], fx[s]))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d lines not once after the catch-up; first: %s", len(bad), bad[0])
	}
	if plain != 1400 {
		t.Errorf("the plain file sink holds %d lines, want 1400 (the gap of 400 again)", plain)
	}
}

const aud3GlobFilterKillConfig = `instance: aud-host
dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    readStrategy: COMMITTED
    queueCapacity: 512
    pollIntervalMillis: 20
    scanIntervalMillis: 200
processors:
  - name: pg
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    createTable: true
    match: "[13579] x"
    retry: {initialMillis: 50, maxMillis: 400}
  - name: kx
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: logs
    offsetsTopic: offs
    exactlyOnce: true
    match: "[02468] x"
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
  - name: nx
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDF
    subject: audf.{instance}.{feed}.{epoch}
    exactlyOnce: true
    exclude: "5 x"
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
`

// TestAud3EOKGlobFilteredKill9 — DESIGN §2 / §11 with §10: kill -9
// mid-delivery of a glob feed (three files written in turns) into
// postgres, kafka exactlyOnce and nats exactlyOnce ({epoch} subjects, a
// short duplicate window), each with a filter (every built-in record
// advances over filtered lines). Expected: each sink holds each line it
// matches exactly once (kafka read-committed) and nothing else.
func TestAud3EOKGlobFilteredKill9(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	broker := startKafka(t, kfake.SeedTopics(3, "logs"), kfake.SeedTopics(1, "offs"))
	srv, js := startNats(t, shortDupStream("AUDF", "audf", true))
	adm := kafkaAdmin(t, broker)
	conn := pgConnect(t, c)
	e := newEnv(t, strings.NewReplacer("{{DSN}}", c.DSN("sslmode=disable"), "{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(aud3GlobFilterKillConfig))
	os.MkdirAll(e.path("in"), 0o755)
	files := []*audFile{{t: t, path: e.path("in/a.log")}, {t: t, path: e.path("in/b.log")}, {t: t, path: e.path("in/c.log")}}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 17))
	for _, f := range files {
		f.appendLines(300)
	}
	progress := func() uint64 {
		return streamMsgs(t, js, "AUDF") + uint64(kafkaEnd(t, adm, "logs")) + uint64(pgCount(conn, "lines"))
	}
	for k := range 8 {
		d := e.spawn()
		from := progress()
		for range 3 {
			files[rng.IntN(3)].appendLines(500 + rng.IntN(1500))
		}
		after := uint64(50 + rng.IntN(1500))
		killWhen(t, d, fmt.Sprintf("kill %d: %d deliveries", k, after), 120*time.Second, func() bool {
			return progress()-from >= after
		})
	}
	d := e.start()
	d.waitSettled(300 * time.Second)
	d.stop()
	rows := pgLines(t, c, "lines")
	n := 0
	for _, f := range files {
		n += len(f.texts)
	}
	odd := regexp.MustCompile(`[13579] x`)
	even := regexp.MustCompile(`[02468] x`)
	evens := 0
	for _, f := range files {
		for _, s := range f.texts {
			if even.MatchString(s) {
				evens++
			}
		}
	}
	kc := kafkaCount(t, broker, "logs", evens)
	nc := map[string]int{}
	for _, m := range natstest.Messages(t, js, "AUDF") {
		nc[string(m.Data)]++
	}
	bad := 0
	for _, f := range files {
		for i, s := range f.texts {
			want := func(b bool) int {
				if b {
					return 1
				}
				return 0
			}
			if rows[s] != want(odd.MatchString(s)) || kc[s] != want(even.MatchString(s)) || nc[s] != want(!strings.Contains(s, "5 x")) {
				bad++
				if bad <= 5 {
					t.Errorf("%s line %d %q: pg %d kafka %d nats %d", filepath.Base(f.path), i, s, rows[s], kc[s], nc[s])
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d lines wrong", bad, n)
	}
	t.Logf("%d lines in 3 files, 8 kills", n)
}

// TestAud3EOKPostgresLockTimeoutHolds — DESIGN §11 Failures: "A connection
// failure, timeout or unavailable engine is retried at the backoff cap
// whatever onFailure says (the feed stalls with the reason; nothing lost,
// nothing dead-lettered)". The table is locked by another session
// (ACCESS EXCLUSIVE) for longer than timeoutMillis: each batch times out.
// Expected with onFailure deadLetter and attempts 1: the feed stalled, no
// dead letter; once the lock goes, every line in the table once.
func TestAud3EOKPostgresLockTimeoutHolds(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	c.Psql(`CREATE TABLE lines (instance text NOT NULL, feed text NOT NULL, epoch text NOT NULL, position bigint NOT NULL,
  path text NOT NULL, line bytea NOT NULL, inserted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (instance, feed, epoch, position));
CREATE TABLE lines_marks (instance text NOT NULL, feed text NOT NULL, epoch text NOT NULL, position bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (instance, feed, epoch));`)
	cfg := audCommittedHead + `processors:
  - name: pg
    feed: app
    type: postgres
    dsn: "` + c.DSN("sslmode=disable") + `"
    table: lines
    timeoutMillis: 500
    onFailure: deadLetter
    retry: {initialMillis: 50, maxMillis: 300, attempts: 1}
`
	e := newEnv(t, cfg)
	in := newInput(t, e.path("in.log"))
	d := e.start() // the catch-up's record read runs before the lock
	d.waitSettled(30 * time.Second)
	conn := pgConnect(t, c)
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE lines IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	in.appendLines(300)
	waitReport(t, d, "the feed stalled on the locked table", 30*time.Second, func(r *report) bool {
		return r.feed(t, "app").Stalled != nil
	})
	time.Sleep(3 * time.Second) // several timeouts at attempts 1
	r, _ := d.status()
	if f := r.feed(t, "app"); f.DeadLettered != 0 {
		t.Errorf("a table locked past timeoutMillis dead-lettered %d lines (stalled %v)", f.DeadLettered, *f.Stalled)
	}
	tx.Rollback(ctx)
	r = d.waitSettled(60 * time.Second)
	d.stop()
	if s := audRowsOnce(t, c, in); s != "" {
		t.Errorf("after the lock: %s (deadLettered %d)", s, r.feed(t, "app").DeadLettered)
	}
}

const aud3TwoTablesConfig = audCommittedHead + `    rotateWaitMillis: 200
    pollIntervalMillis: 20
processors:
  - {name: pa, feed: app, type: postgres, dsn: "{{DSN}}", table: ta, createTable: true}
  - {name: pb, feed: app, type: postgres, dsn: "{{DSN}}", table: tb, createTable: true}
  - {name: plain, feed: app, type: file, path: ./plain.log}
`

// TestAud3EOKCatchUpOlderAndSameEpoch — DESIGN §11 "A restored sink is
// caught up from the input": table ta restored to a point in the rotated
// generation (an older epoch of feeds/app.epochs: "caught up from that
// generation onward … the rest of it from the sink's position, every later
// generation still on disk, then the current file up to the pointer") and
// table tb restored to a point in the current file (same epoch, behind:
// "the pointer is committed back to that position"), at one start.
// Expected: both tables hold every line once; lossless.
func TestAud3EOKCatchUpOlderAndSameEpoch(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	e := newEnv(t, strings.ReplaceAll(aud3TwoTablesConfig, "{{DSN}}", c.DSN("sslmode=disable")))
	in := &audFile{t: t, path: e.path("in.log")}
	in.appendLines(1000)
	d := e.start()
	d.waitSettled(60 * time.Second)
	if err := os.Rename(in.path, in.path+".1"); err != nil {
		t.Fatal(err)
	}
	first := len(in.texts)
	in.appendLines(1000)
	waitReport(t, d, "both generations delivered", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.Pointer != nil && f.Pointer.Offset == int64(len(strings.Join(in.texts[first:], "\n"))+1)
	})
	d.stop()
	// ta: back to line 400 of the rotated generation; tb: back to line 500 of the current file.
	c.Psql(fmt.Sprintf(`DELETE FROM ta WHERE line NOT IN (SELECT convert_to(x, 'UTF8') FROM unnest(ARRAY[%s]) x)`, aud3SQLList(in.texts[:400])))
	c.Psql(fmt.Sprintf(`DELETE FROM tb WHERE line NOT IN (SELECT convert_to(x, 'UTF8') FROM unnest(ARRAY[%s]) x)`, aud3SQLList(in.texts[:first+500])))
	if n := c.Psql(`SELECT (SELECT count(*) FROM ta) || ' ' || (SELECT count(*) FROM tb)`); n != "400 1500" {
		t.Fatalf("precondition: rows left in ta, tb = %s, want 400 1500", n)
	}
	d2, _, f := settledRun(t, e)
	if !strings.Contains(d2.log(), "committing the pointer back") {
		t.Errorf("no catch-up logged")
	}
	for _, tab := range []string{"ta", "tb"} {
		got := pgLines(t, c, tab)
		bad := 0
		for _, s := range in.texts {
			if got[s] != 1 {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("table %s: %d of %d lines not once after the catch-up (%s; catch-up logged %v)", tab, bad, len(in.texts),
				f.lossFacts(), strings.Contains(d2.log(), "committing the pointer back"))
		}
	}
	if !f.Lossless {
		t.Errorf("lossy after a catch-up from generations on disk: %s", f.lossFacts())
	}
}

// aud3SQLList is texts as a list of SQL string literals.
func aud3SQLList(texts []string) string {
	q := make([]string, len(texts))
	for i, s := range texts {
		q[i] = "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return strings.Join(q, ",")
}

// TestAud3EOKReloadFixedDSNDeliversHeldLines — DESIGN §12 Reload: "A
// changed processor keeps its queue and position: the new instance
// receives first the lines the old one did not finish" (its durable state
// moved aside when its target — postgres dsn/table — changed); §11
// Failures. A postgres processor whose role may not insert (onFailure:
// hold) holds 200 lines; a reload gives it a DSN with a role that may.
// Expected: the 200 held lines and 100 later ones in the table once.
func TestAud3EOKReloadFixedDSNDeliversHeldLines(t *testing.T) {
	c, good := aud3PgSelectOnlyRole(t)
	tmpl := "shutdownTimeoutMillis: 1000\n" + audCommittedHead + `processors:
  - name: pg
    feed: app
    type: postgres
    dsn: "{{DSN}}"
    table: lines
    onFailure: hold
    retry: {initialMillis: 50, maxMillis: 300, attempts: 2}
`
	e := newEnv(t, strings.ReplaceAll(tmpl, "{{DSN}}", strings.Replace(good, "user=postgres", "user=aud3", 1)))
	in := newInput(t, e.path("in.log"))
	in.appendLines(200)
	d := e.start()
	waitReport(t, d, "pg holding the 200 lines", 30*time.Second, func(r *report) bool {
		return r.feed(t, "app").Stalled != nil
	})
	e.tmpl = strings.ReplaceAll(tmpl, "{{DSN}}", good)
	e.cfgWith(d.addr)
	if code, _, body := request(t, d, "POST", "/admin/reload", "", nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	in.appendLines(100)
	r := d.waitSettled(60 * time.Second)
	d.stop()
	if s := audRowsOnce(t, c, in); s != "" {
		f := r.feed(t, "app")
		t.Errorf("after the reload: %s (released %d, lossless %v)", s, f.Released, f.Lossless)
	}
}

// TestAud3EXInvalidReloadTouchesBestEffortTap — DESIGN §12 Reload: "The new
// file is validated whole first; if invalid, an ERROR …, reloadFailures +
// 1, and the daemon runs on unchanged"; §5 best-effort subscribers ("Lines
// still in its queue when shutdownTimeoutMillis expires count in
// dropped"). A feed with a kafka processor and a DROP_AFTER_SPIN pull
// subscriber tap whose client has not pulled its three lines yet; the new
// file gives the kafka processor a tls.caFile that does not exist (a file
// `run` refuses with exit 2).
// Expected: the reload refused and nothing else changes: tap still hands
// out a1, a2, a3; dropped 0; lossless true.
// Observed: the TLS file is found missing only while the feed is rebuilt,
// after the feed (and tap with it) was stopped and started again on the
// old config: tap's three queued lines are gone — dropped or never handed
// out — by a reload that was refused.
func TestAud3EXInvalidReloadTouchesBestEffortTap(t *testing.T) {
	broker := startKafka(t)
	tmpl := `dataDir: ./state
instance: aud3-host
status: {listen: "{{ADDR}}", token: sesame}
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 20
    overload: {subscribers: {tap: {policy: DROP_AFTER_SPIN}}}
processors:
  - {name: tap, feed: app, type: pull}
  - name: k
    feed: app
    type: kafka
    brokers: [` + broker + `]
    topic: logs
    createTopics: true
{{KTLS}}`
	e := newEnv(t, strings.ReplaceAll(tmpl, "{{KTLS}}", ""))
	os.WriteFile(e.path("in.log"), []byte("a1\na2\na3\n"), 0o644)
	d := e.start()
	d.waitFor("the three lines published, kafka done", 30*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].Sequence == 3
	})
	reconfig(t, e, d, strings.ReplaceAll(tmpl, "{{KTLS}}", "    tls: {caFile: ./no-such-ca.pem}\n"))
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", "sesame", nil); code != http.StatusBadRequest {
		t.Fatalf("reload with a missing tls.caFile = %d %s, want 400", code, body)
	}
	// Pull until the three lines came (up to 20 s: a loaded CI may take
	// seconds), then 400 ms more to show that nothing beyond them comes.
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && len(got) < 3 {
		for _, ev := range aud3Pull(t, d, "tap") {
			got = append(got, ev.Line)
		}
	}
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); {
		for _, ev := range aud3Pull(t, d, "tap") {
			got = append(got, ev.Line)
		}
	}
	r, _ := statusRaw(t, d)
	f := r.Feeds[0]
	if strings.Join(got, ",") != "a1,a2,a3" || f.Dropped != 0 || !f.Lossless {
		t.Errorf("after a refused reload tap handed out %v (want a1,a2,a3), dropped %d, lossless %v (want 0, true): the invalid file changed the running feed",
			got, f.Dropped, f.Lossless)
	}
	d.stop()
}

// aud3Pull pulls up to 10 events of subscriber sub (token sesame), waiting up to 200 ms.
func aud3Pull(t *testing.T, d *daemon, sub string) []event {
	t.Helper()
	code, _, body := request(t, d, http.MethodGet, "/v1/pull/"+sub+"?max=10&wait=200ms", "sesame", nil)
	if code != http.StatusOK {
		t.Fatalf("pull: %d %s", code, body)
	}
	var doc struct {
		Events []event `json:"events"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Events
}

const aud3DupRuleConfig = audCommittedHead + `    queueCapacity: 256
processors:
  - name: kp
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: plain
    timeoutMillis: 2000
  - name: np
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDR
    subject: audr.{instance}.{feed}
    timeoutMillis: 2000
`

// TestAud3EOKDuplicatesOnlyPastThePointer — DESIGN §2: "after any crash the
// restart re-reads from the pointer …: The duplicates after a crash are
// exactly the lines acknowledged since the last commit reached the
// pointer file — never a gap". kill -9 mid-delivery into kafka and nats
// without exactlyOnce (a 100 ms duplicate window hides nothing), then one
// settled run. Expected: every line at least once, and every line
// delivered twice lies past the pointer the kill left.
func TestAud3EOKDuplicatesOnlyPastThePointer(t *testing.T) {
	broker := startKafka(t, kfake.SeedTopics(1, "plain"))
	srv, js := startNats(t, shortDupStream("AUDR", "audr", true))
	adm := kafkaAdmin(t, broker)
	e := newEnv(t, strings.NewReplacer("{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(aud3DupRuleConfig))
	in := newInput(t, e.path("in.log"))
	d := e.spawn()
	in.appendLines(20000)
	killWhen(t, d, "5000 deliveries", 60*time.Second, func() bool {
		return streamMsgs(t, js, "AUDR")+uint64(kafkaEnd(t, adm, "plain")) >= 5000
	})
	p, ok := showPointer(t, e.path("state/feeds/app.ptr"))
	if !ok {
		t.Fatal("no pointer after the kill")
	}
	settledRun(t, e)
	kc := kafkaCount(t, broker, "plain", len(in.texts))
	nc := map[string]int{}
	for _, m := range natstest.Messages(t, js, "AUDR") {
		nc[string(m.Data)]++
	}
	dupK, dupN := 0, 0
	for i, s := range in.texts {
		if kc[s] < 1 || nc[s] < 1 {
			t.Fatalf("line %d missing: kafka %d nats %d", i, kc[s], nc[s])
		}
		if kc[s] > 1 {
			dupK++
		}
		if nc[s] > 1 {
			dupN++
		}
		if (kc[s] > 1 || nc[s] > 1) && in.ends[i] <= p.Offset {
			t.Errorf("line %d (ends at %d, the pointer was at %d) delivered again: kafka %d nats %d", i, in.ends[i], p.Offset, kc[s], nc[s])
			break
		}
	}
	t.Logf("pointer at %d after the kill; duplicates kafka %d nats %d", p.Offset, dupK, dupN)
}

// TestAud3EOKKafkaDefaultTransactionalID — DESIGN §11 Instance: the kafka
// "transactionalId default tailfeed-<instance>-<processor>", stable across
// restarts.
func TestAud3EOKKafkaDefaultTransactionalID(t *testing.T) {
	broker := startKafka(t, kfake.SeedTopics(1, "logs", "offs"))
	e := newEnv(t, strings.ReplaceAll(audCommittedHead+"processors:\n"+audKafkaKx, "{{BROKER}}", broker))
	in := newInput(t, e.path("in.log"))
	in.appendLines(10)
	settledRun(t, e)
	in.appendLines(10)
	settledRun(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	txs, err := kafkaAdmin(t, broker).ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := txs.TransactionalIDs()
	if len(ids) != 1 || ids[0] != "tailfeed-aud-host-kx" {
		t.Errorf("transactional ids %v, want [tailfeed-aud-host-kx]", ids)
	}
}

// TestAud3EOKSecretsNotInDebugLog — DESIGN §11 Secrets: "Secrets never
// appear in logs, config.lastError, /admin/reload answers or feed.status"
// — at log level debug too, with every engine's secret written literally
// and every engine reached and failing (kafka SASL against a broker
// without SASL, nats with a user:password URL and a server that does not
// know it, postgres with a password against a server that does not want
// one).
func TestAud3EOKSecretsNotInDebugLog(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	broker := startKafka(t)
	srv, _ := startNats(t)
	natsURL := strings.Replace(srv.URL(), "nats://", "nats://audUser:audNatsPw-5521@", 1)
	pgDSN := strings.Replace(c.DSN("sslmode=disable"), "user=postgres", "user=postgres password=audPgPw-8812", 1)
	cfg := "shutdownTimeoutMillis: 500\n" + audCommittedHead + `log: {level: debug}
processors:
  - {name: k, feed: app, type: kafka, brokers: [` + broker + `], topic: t, createTopics: true, timeoutMillis: 1000,
     sasl: {mechanism: SCRAM-SHA-512, username: u, password: audKafkaPw-3391}}
  - {name: n, feed: app, type: nats, url: "` + natsURL + `", stream: S, subject: "s.{instance}", createStream: true, timeoutMillis: 1000}
  - {name: p, feed: app, type: postgres, dsn: "` + pgDSN + `", table: lines, createTable: true}
`
	e := newEnv(t, cfg)
	os.WriteFile(e.path("in.log"), []byte("one\ntwo\n"), 0o644)
	d := e.start()
	time.Sleep(4 * time.Second)
	_, body := statusRaw(t, d)
	_, _, health := request(t, d, http.MethodGet, "/healthz", "", nil)
	d.stop()
	for _, s := range []string{"audNatsPw-5521", "audKafkaPw-3391", "audPgPw-8812"} {
		if strings.Contains(d.log(), s) || strings.Contains(string(body), s) || strings.Contains(string(health), s) {
			t.Errorf("secret %s shown (log %v, status %v)", s, strings.Contains(d.log(), s), strings.Contains(string(body), s))
		}
	}
}

// TestAud3EOKWipedDataDirNotAGap — DESIGN §11: "A sink with no record is
// never behind … A fresh pointer (no valid slot) is not a gap." A sidecar
// whose dataDir is lost (a pod rescheduled with an emptyDir state volume)
// starts again on the same table, which holds the old run's rows under its
// instance. Expected: lossless, no lost tail; the file read again under a
// new epoch, every line in the table.
func TestAud3EOKWipedDataDirNotAGap(t *testing.T) {
	c, e, in := audPgStart(t, "e2e-host", "sslmode=disable")
	in.appendLines(1000)
	settledRun(t, e)
	if err := os.RemoveAll(e.path("state")); err != nil {
		t.Fatal(err)
	}
	in.appendLines(100)
	_, _, f := settledRun(t, e)
	if !f.Lossless || f.LostTails != 0 || f.LostBytes != 0 {
		t.Errorf("a wiped dataDir counted as a gap: %s", f.lossFacts())
	}
	got := pgLines(t, c, "lines")
	for i, s := range in.texts {
		if got[s] == 0 {
			t.Fatalf("line %d missing from the table", i)
		}
	}
}

// TestAud3EOKWipedDataDirNotAGapEngines — as TestAud3EOKWipedDataDirNotAGap
// for kafka and nats exactlyOnce, whose records (offsets topic, the
// subject's last message) name an epoch the new dataDir never heard of.
// Expected: lossless; every line in each engine (the old run's once, the
// file read again under a new epoch).
func TestAud3EOKWipedDataDirNotAGapEngines(t *testing.T) {
	broker := startKafka(t, kfake.SeedTopics(1, "logs", "offs"))
	srv, js := startNats(t, shortDupStream("AUDW", "audw", true))
	cfg := audCommittedHead + "processors:\n" + audKafkaKx + `  - name: nx
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDW
    subject: audw.{instance}.{feed}
    exactlyOnce: true
    timeoutMillis: 2000
`
	e := newEnv(t, strings.NewReplacer("{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(cfg))
	in := newInput(t, e.path("in.log"))
	in.appendLines(500)
	settledRun(t, e)
	if err := os.RemoveAll(e.path("state")); err != nil {
		t.Fatal(err)
	}
	in.appendLines(100)
	_, _, f := settledRun(t, e)
	if !f.Lossless || f.LostTails != 0 {
		t.Errorf("a wiped dataDir counted as a gap: %s", f.lossFacts())
	}
	kc := kafkaCount(t, broker, "logs", 1100)
	nc := map[string]int{}
	for _, m := range natstest.Messages(t, js, "AUDW") {
		nc[string(m.Data)]++
	}
	for i, s := range in.texts {
		want := 2 // the first run's, and the re-read under the new epoch
		if i >= 500 {
			want = 1
		}
		if kc[s] != want || nc[s] != want {
			t.Fatalf("line %d: kafka %d nats %d, want %d each", i, kc[s], nc[s], want)
		}
	}
}

// TestAud3EOKBestEffortEngineDownNeverStalls — DESIGN §5: "A fenced or dead
// best-effort subscriber never stalls the feed"; §11 Failures. A
// DROP_AFTER_SPIN postgres subscriber whose server is unreachable from the
// start (its record read for the catch-up is not waited for: only
// pointer-holding subscribers take part) next to a file sink. Expected:
// the file sink gets every line, the feed is not stalled and settles.
func TestAud3EOKBestEffortEngineDownNeverStalls(t *testing.T) {
	cfg := `shutdownTimeoutMillis: 500
` + audCommittedHead + `    queueCapacity: 64
    overload: {subscribers: {pg: {policy: DROP_AFTER_SPIN, spinBoundMillis: 10}}}
processors:
  - {name: pg, feed: app, type: postgres, dsn: "host=127.0.0.1 port=1 user=u dbname=d sslmode=disable connect_timeout=1", table: lines}
  - {name: out, feed: app, type: file, path: ./out.log}
`
	e := newEnv(t, cfg)
	in := newInput(t, e.path("in.log"))
	in.appendLines(2000)
	d := e.start()
	r := d.waitFor("settled with every line in out.log", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.Pointer != nil && f.Pointer.Offset == in.size()
	})
	d.stop()
	if f := r.feed(t, "app"); f.Stalled != nil {
		t.Errorf("stalled by a best-effort subscriber: %s", *f.Stalled)
	}
	if b, _ := os.ReadFile(e.path("out.log")); strings.Count(string(b), "\n") != 2000 {
		t.Errorf("out.log holds %d lines, want 2000", strings.Count(string(b), "\n"))
	}
}

// aud3PgSelectOnlyRole starts a private PostgreSQL with the sink's table
// and marks table made, and a role aud3 that may only SELECT them; it
// returns the cluster and the superuser's DSN (replace user=postgres by
// user=aud3 for the limited one).
func aud3PgSelectOnlyRole(t *testing.T) (*pgtest.Cluster, string) {
	t.Helper()
	c := pgtest.Start(t, pgtest.Options{})
	c.Psql(`CREATE ROLE aud3 LOGIN;
CREATE TABLE lines (instance text NOT NULL, feed text NOT NULL, epoch text NOT NULL, position bigint NOT NULL,
  path text NOT NULL, line bytea NOT NULL, inserted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (instance, feed, epoch, position));
CREATE TABLE lines_marks (instance text NOT NULL, feed text NOT NULL, epoch text NOT NULL, position bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (instance, feed, epoch));
GRANT SELECT ON lines, lines_marks TO aud3;`)
	return c, c.DSN("sslmode=disable")
}
