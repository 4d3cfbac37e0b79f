package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"tailfeed/internal/natstest"
)

// Audit of DESIGN §11 "Sinks on distributed engines" (kafka, nats) and the
// parts of §12 about their config. TestAudX... tests are findings (they
// fail against the product); TestAudOK... tests are probes of rules that
// were checked and hold.

// audWarnLines returns the log's WARN lines that contain every one of words.
func audWarnLines(log string, words ...string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "[WARN]") {
			continue
		}
		all := true
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

const audEnvSecretConfig = `dataDir: ./state
instance: aud-host
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
processors:
  - name: k
    feed: app
    type: kafka
    brokers: ["127.0.0.1:1"]
    topic: logs
    sasl: {mechanism: PLAIN, username: tailfeed, password: "${AUD_KAFKA_PW}"}
  - name: n
    feed: app
    type: nats
    url: nats://127.0.0.1:1
    stream: LOGS
    subject: logs.{instance}.{feed}
    token: "${AUD_NATS_TOKEN}"
`

// audEnvSecretLog starts the daemon on audEnvSecretConfig (private config
// file, both secrets from the environment) and returns its start-up log.
func audEnvSecretLog(t *testing.T) string {
	dir := t.TempDir()
	cfg := strings.NewReplacer("./state", filepath.Join(dir, "state"), "./in.log", filepath.Join(dir, "in.log"),
		addrPlaceholder, freeAddr(t)).Replace(audEnvSecretConfig)
	log := startLog(t, cfg, 0o600, "AUD_KAFKA_PW=audKafkaPw-7731", "AUD_NATS_TOKEN=audNatsTok-9924")
	wantSecretsNotInLog(t, log, "audKafkaPw-7731", "audNatsTok-9924")
	return log
}

// TestAudXKafkaEnvPasswordWarnedAsLiteral — DESIGN §11 Secrets: "Secrets
// (dsn, SASL passwords, tokens) should come from ${ENV} references (§12); a
// literal secret is accepted with a WARN at start naming the key."
// Expected: a sasl.password written as "${AUD_KAFKA_PW}" is not a literal
// secret: no literal-secret WARN (the config does what DESIGN asks).
// Observed: the kafka sink warns "kafka sasl.password is a literal secret in
// the config file; keep the file private" whatever the file holds: the
// check is only "a password key exists" (sink/kafka/register.go
// ConnOpts: PasswordLine > 0), never config.HasReference on the written
// text as cmd/tailfeed/run.go does for status.token.
func TestAudXKafkaEnvPasswordWarnedAsLiteral(t *testing.T) {
	log := audEnvSecretLog(t)
	if w := audWarnLines(log, "sasl.password", "literal"); len(w) > 0 {
		t.Errorf("sasl.password comes from ${AUD_KAFKA_PW}, yet a literal-secret WARN:\n%s", strings.Join(w, "\n"))
	}
}

// TestAudXNatsEnvTokenWarnedAsLiteral — DESIGN §11 Secrets, as above, for a
// nats token.
// Expected: token: "${AUD_NATS_TOKEN}" gives no literal-secret WARN.
// Observed: "nats token is written literally in the config
// (processors[].token); keep the config file private" at every start with a
// token, whatever its source (sink/nats/nats.go: `if cfg.Token != ""`).
// The WARN does not name the processor's key either (processors[].token,
// not processors[1].token).
func TestAudXNatsEnvTokenWarnedAsLiteral(t *testing.T) {
	log := audEnvSecretLog(t)
	if w := audWarnLines(log, "token", "literal"); len(w) > 0 {
		t.Errorf("token comes from ${AUD_NATS_TOKEN}, yet a literal-secret WARN:\n%s", strings.Join(w, "\n"))
	}
}

// TestAudOKLiteralSecretsWarned — DESIGN §11: a literal SASL password and a
// literal nats token are accepted with a WARN at start naming the key, and
// the secrets are not in the log.
func TestAudOKLiteralSecretsWarned(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.NewReplacer(`"${AUD_KAFKA_PW}"`, "audKafkaPw-7731", `"${AUD_NATS_TOKEN}"`, "audNatsTok-9924",
		"./state", filepath.Join(dir, "state"), "./in.log", filepath.Join(dir, "in.log"),
		addrPlaceholder, freeAddr(t)).Replace(audEnvSecretConfig)
	log := startLog(t, cfg, 0o600)
	if len(audWarnLines(log, "sasl.password")) == 0 {
		t.Errorf("no WARN naming sasl.password:\n%s", log)
	}
	if len(audWarnLines(log, "token")) == 0 {
		t.Errorf("no WARN naming the nats token:\n%s", log)
	}
	wantSecretsNotInLog(t, log, "audKafkaPw-7731", "audNatsTok-9924")
}

// audRun runs `tailfeed run` on cfg (written to dir/tailfeed.yaml, mode
// 0600) and returns its output and exit code; it kills the daemon if it
// still runs after 15 s (then the code is -1).
func audRun(t *testing.T, dir, cfg string, extraEnv ...string) (string, int) {
	t.Helper()
	path := filepath.Join(dir, "tailfeed.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", path)
	cmd.Env = append(os.Environ(), append([]string{"TAILFEED_TOKEN="}, extraEnv...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), exitCode(err)
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		return out.String(), -1
	}
}

// TestAudXNatsCredsFileMissingNotAConfigError — DESIGN §9 Exit codes: `run`
// exits 2 on config errors, each `FILE:LINE: message`; the README (TLS,
// "The engine sinks use the same settings") makes a missing tls file of a
// nats/kafka processor exactly that: exit 2, `FILE:LINE:
// processors[N].tls: …` (checked: it holds).
// Expected: a nats `credsFile` that does not exist — the same kind of
// credential file, named by the same processor — is refused the same way:
// exit 2 with `tailfeed.yaml:LINE: processors[0].credsFile: …`.
// Observed: exit 1, `tailfeed run: processor n: nats credsFile: stat
// /nonexistent/…: no such file or directory`, no file or line.
func TestAudXNatsCredsFileMissingNotAConfigError(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in.log"), nil, 0o644)
	cfg := oneFeedConfig(t, dir, "", `  - name: n
    feed: app
    type: nats
    url: nats://127.0.0.1:1
    stream: LOGS
    subject: logs.{instance}.{feed}
    credsFile: /nonexistent/aud.creds
`)
	out, code := audRun(t, dir, cfg)
	if code != 2 || !regexp.MustCompile(`tailfeed\.yaml:\d+: .*credsFile`).MatchString(out) {
		t.Errorf("missing credsFile: exit %d, want 2 with tailfeed.yaml:LINE: …credsFile…; output:\n%s", code, tail(out, 2000))
	}
}

// TestAudOKEngineTLSFileMissingExit2 — the README's rule for the engine
// sinks' tls files (exit 2, FILE:LINE: processors[N].tls: …) holds for
// kafka and nats.
func TestAudOKEngineTLSFileMissingExit2(t *testing.T) {
	for _, proc := range []string{
		"{name: k, feed: app, type: kafka, brokers: [\"127.0.0.1:1\"], topic: t, tls: {caFile: /nonexistent/ca.pem}}",
		"{name: n, feed: app, type: nats, url: \"tls://127.0.0.1:1\", stream: S, subject: \"a.{instance}\", tls: {caFile: /nonexistent/ca.pem}}",
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "in.log"), nil, 0o644)
		cfg := fmt.Sprintf("dataDir: %s\nstatus:\n  listen: %s\nfeeds:\n  - {name: app, path: %s}\nprocessors:\n  - %s\n",
			filepath.Join(dir, "state"), freeAddr(t), filepath.Join(dir, "in.log"), proc)
		out, code := audRun(t, dir, cfg)
		if code != 2 || !regexp.MustCompile(`tailfeed\.yaml:7: processors\[0\]\.tls: `).MatchString(out) {
			t.Errorf("%s: exit %d, want 2 with tailfeed.yaml:7: processors[0].tls: …; output:\n%s", proc, code, tail(out, 2000))
		}
	}
}

// TestAudXNatsURLPasswordWithCommaShownInConfigError — DESIGN §11 Secrets
// / §12 Secure by default: "URLs are shown with their userinfo redacted";
// secrets never appear in logs, config.lastError or /admin/reload answers.
// Expected: a nats url whose password holds a ',' (unescaped: a config
// error, rightly) is quoted in the error without any part of the password.
// Observed: the error quotes "nats://aud:PWHALFONE,***@127.0.0.1:4222" —
// the url is split on ',' before its userinfo is masked
// (redact.URLList), so the first half of the password is printed by
// `validate`, by `run` and (the same text) in a failed reload's lastError.
// An unlikely password, but a real leak of a secret's characters.
func TestAudXNatsURLPasswordWithCommaShownInConfigError(t *testing.T) {
	dir := t.TempDir()
	cfg := fmt.Sprintf(`dataDir: %s
feeds:
  - {name: app, path: %s}
processors:
  - {name: n, feed: app, type: nats, url: "nats://aud:PWHALFONE,PWHALFTWO@127.0.0.1:4222", stream: S, subject: "a.{instance}"}
`, filepath.Join(dir, "state"), filepath.Join(dir, "in.log"))
	path := filepath.Join(dir, "tailfeed.yaml")
	os.WriteFile(path, []byte(cfg), 0o600)
	stdout, stderr, code := cli(t, "validate", "--config", path)
	out := stdout + stderr
	if code != 2 {
		t.Fatalf("validate: exit %d, want 2 (the url is not valid)\n%s", code, out)
	}
	for _, s := range []string{"PWHALFONE", "PWHALFTWO"} {
		if strings.Contains(out, s) {
			t.Errorf("part of the url's password (%q) is in validate's output:\n%s", s, out)
		}
	}
}

// --- engine probes ---

const audKafkaConfig = `dataDir: ./state
instance: aud-host
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
processors:
  - name: exact
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: logs
    key: "k-{instance}-{feed}-{epoch}"
    offsetsTopic: offs
    exactlyOnce: true
    createTopics: true
    retry: {initialMillis: 50, maxMillis: 500}
`

// TestAudOKKafkaRecordsAndOffsets — DESIGN §11 kafka: value the raw line;
// headers tailfeed-instance/-feed/-epoch (16 lowercase hex)/-position
// (decimal)/-path; key from the template; createTopics makes offsetsTopic
// compacted with one partition; the offsets record's key
// <instance>:<processor>:<feed>:<epoch> and value {"feed","fileKey","epoch","position"}.
func TestAudOKKafkaRecordsAndOffsets(t *testing.T) {
	broker := startKafka(t)
	e := newEnv(t, strings.ReplaceAll(audKafkaConfig, "{{BROKER}}", broker))
	lines := []string{"alpha", "", "gamma \xff"}
	os.WriteFile(e.path("in.log"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	d := e.start()
	d.waitSettled(60 * time.Second)
	d.stop()
	ptr, ok := showPointer(t, e.path("state/feeds/app.ptr"))
	if !ok {
		t.Fatal("no pointer")
	}
	epoch := ptr.Epoch
	recs := kafkaRecords(t, broker, "logs", len(lines))
	if len(recs) != len(lines) {
		t.Fatalf("%d records, want %d", len(recs), len(lines))
	}
	pos := 0
	for i, r := range recs {
		pos += len(lines[i]) + 1
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		want := map[string]string{"tailfeed-instance": "aud-host", "tailfeed-feed": "app", "tailfeed-epoch": epoch,
			"tailfeed-position": strconv.Itoa(pos), "tailfeed-path": e.path("in.log")}
		for k, v := range want {
			if h[k] != v {
				t.Errorf("record %d: header %s = %q, want %q", i, k, h[k], v)
			}
		}
		if string(r.Value) != lines[i] || string(r.Key) != "k-aud-host-app-"+epoch {
			t.Errorf("record %d: key %q value %q", i, r.Key, r.Value)
		}
	}
	offs := kafkaRecords(t, broker, "offs", 1)
	if len(offs) == 0 {
		t.Fatal("no offsets record")
	}
	last := offs[len(offs)-1]
	if string(last.Key) != "aud-host:exact:app:"+epoch {
		t.Errorf("offsets key %q", last.Key)
	}
	var v map[string]any
	if err := json.Unmarshal(last.Value, &v); err != nil {
		t.Fatalf("offsets value %q: %v", last.Value, err)
	}
	if v["feed"] != "app" || v["epoch"] != epoch || v["position"] != float64(pos) || len(v) != 4 {
		t.Errorf("offsets value %s", last.Value)
	}
	if v["fileKey"] != ptr.FileKey {
		t.Errorf("offsets value's fileKey %v, the pointer's %s: %s", v["fileKey"], ptr.FileKey, last.Value)
	}
	adm := kafkaAdmin(t, broker)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, "offs")
	if err != nil || len(td["offs"].Partitions) != 1 {
		t.Errorf("offs: %v partitions, err %v", len(td["offs"].Partitions), err)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "offs")
	if err != nil {
		t.Fatal(err)
	}
	cfgs, _ := rc.On("offs", nil)
	compact := false
	for _, kv := range cfgs.Configs {
		if kv.Key == "cleanup.policy" && kv.MaybeValue() == "compact" {
			compact = true
		}
	}
	if !compact {
		t.Errorf("offs is not compacted: %+v", cfgs.Configs)
	}
	if w := audWarnLines(d.log(), "not compacted"); len(w) > 0 {
		t.Errorf("WARN about a compacted offsets topic: %v", w)
	}
}

// TestAudOKKafkaOffsetsNotCompactedWarnAtStart — DESIGN §11: "an offsets
// topic that is not compacted is a WARN at start" (no line needed).
func TestAudOKKafkaOffsetsNotCompactedWarnAtStart(t *testing.T) {
	broker := startKafka(t, kfake.SeedTopics(1, "logs", "offs"))
	e := newEnv(t, strings.ReplaceAll(strings.ReplaceAll(audKafkaConfig, "{{BROKER}}", broker), "createTopics: true", "createTopics: false"))
	os.WriteFile(e.path("in.log"), nil, 0o644)
	d := e.start()
	waitUntil(t, "WARN naming the offsets topic not compacted", 30*time.Second, func() bool {
		return len(audWarnLines(d.log(), "not compacted")) > 0
	})
	d.stop()
}

// audCommittedHead is the top of most engine configs here: instance
// aud-host, feed app reading ./in.log COMMITTED (its further keys follow).
const audCommittedHead = `instance: aud-host
dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
`

// audKafkaKx is processor kx: kafka exactlyOnce into topic logs, offsets
// in offs.
const audKafkaKx = `  - name: kx
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: logs
    offsetsTopic: offs
    exactlyOnce: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
`

const audNatsConfig = audCommittedHead + `    queueCapacity: 512
processors:
  - name: exact
    feed: app
    type: nats
    url: {{NATS}}
    stream: {{STREAM}}
    subject: aud.{instance}.{feed}
    exactlyOnce: true
    createStream: {{CREATE}}
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
`

// TestAudOKNatsMessageAndCreatedStream — DESIGN §11 nats: body the raw
// line; Nats-Msg-Id <instance>:<feed>:<epoch>:<position>; the tailfeed-*
// headers; createStream: file storage, the subject, a 2-minute duplicate
// window.
func TestAudOKNatsMessageAndCreatedStream(t *testing.T) {
	srv, js := startNats(t)
	e := newEnv(t, strings.NewReplacer("{{NATS}}", srv.URL(), "{{STREAM}}", "AUDC", "{{CREATE}}", "true").Replace(audNatsConfig))
	lines := []string{"one", "", "three"}
	os.WriteFile(e.path("in.log"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	d := e.start()
	d.waitSettled(60 * time.Second)
	d.stop()
	ptr, _ := showPointer(t, e.path("state/feeds/app.ptr"))
	epoch := ptr.Epoch
	msgs := natstest.Messages(t, js, "AUDC")
	if len(msgs) != len(lines) {
		t.Fatalf("%d messages, want %d", len(msgs), len(lines))
	}
	pos := 0
	for i, m := range msgs {
		pos += len(lines[i]) + 1
		want := map[string]string{"Nats-Msg-Id": fmt.Sprintf("aud-host:app:%s:%d", epoch, pos),
			"tailfeed-instance": "aud-host", "tailfeed-feed": "app", "tailfeed-epoch": epoch,
			"tailfeed-position": strconv.Itoa(pos), "tailfeed-path": e.path("in.log")}
		for k, v := range want {
			if m.Header.Get(k) != v {
				t.Errorf("message %d: %s = %q, want %q", i, k, m.Header.Get(k), v)
			}
		}
		if string(m.Data) != lines[i] || m.Subject != "aud.aud-host.app" {
			t.Errorf("message %d: subject %q body %q", i, m.Subject, m.Data)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "AUDC")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Storage != jetstream.FileStorage || info.Config.Duplicates != 2*time.Minute {
		t.Errorf("created stream: storage %v duplicates %v", info.Config.Storage, info.Config.Duplicates)
	}
}

// TestAudOKNatsKill9OneAtATime — DESIGN §2/§11: kill -9 mid-delivery into
// a nats exactlyOnce subject on a stream made by hand WITHOUT
// allow_batched (the one-at-a-time expected-last-subject-sequence chain)
// and a short duplicate window (so the stream's dedupe does not hide
// duplicates): every line once, in order.
func TestAudOKNatsKill9OneAtATime(t *testing.T) {
	srv, js := startNats(t, shortDupStream("AUDX", "aud", false))
	e := newEnv(t, strings.NewReplacer("{{NATS}}", srv.URL(), "{{STREAM}}", "AUDX", "{{CREATE}}", "false").Replace(audNatsConfig))
	in := newInput(t, e.path("in.log"))
	in.appendLines(500)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for k := range 5 {
		d := e.spawn()
		from := streamMsgs(t, js, "AUDX")
		in.appendLines(1500 + rng.IntN(1500))
		after := uint64(50 + rng.IntN(800))
		killWhen(t, d, fmt.Sprintf("kill %d: %d messages", k, after), 120*time.Second, func() bool {
			return streamMsgs(t, js, "AUDX")-from >= after
		})
	}
	d := e.start()
	d.waitSettled(300 * time.Second)
	d.stop()
	checkStream(t, js, "AUDX", in, true)
}

const audGlobKillConfig = `instance: aud-host
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
` + audKafkaKx + `  - name: nx
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDG
    subject: aud.{instance}.{feed}.{epoch}
    exactlyOnce: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
`

// TestAudOKGlobKill9ExactlyOnceBothEngines — DESIGN §2 / §11: kill -9 the
// binary mid-delivery, many times, while it delivers a glob feed (three
// files written in turns) into kafka exactlyOnce (offsets keyed per epoch)
// and nats exactlyOnce (a subject per {epoch}, a short duplicate window
// so the stream's dedupe hides nothing); afterwards every line is in each
// engine exactly once, and on each nats subject in file order.
func TestAudOKGlobKill9ExactlyOnceBothEngines(t *testing.T) {
	broker := startKafka(t, kfake.SeedTopics(3, "logs"), kfake.SeedTopics(1, "offs"))
	srv, js := startNats(t, shortDupStream("AUDG", "aud", true))
	adm := kafkaAdmin(t, broker)
	e := newEnv(t, strings.NewReplacer("{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(audGlobKillConfig))
	os.MkdirAll(e.path("in"), 0o755)
	files := []*audFile{{t: t, path: e.path("in/a.log")}, {t: t, path: e.path("in/b.log")}, {t: t, path: e.path("in/c.log")}}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	total := func() int {
		n := 0
		for _, f := range files {
			n += len(f.texts)
		}
		return n
	}
	for _, f := range files {
		f.appendLines(300)
	}
	for k := range 8 {
		d := e.spawn()
		from := streamMsgs(t, js, "AUDG") + uint64(kafkaEnd(t, adm, "logs"))
		for range 3 {
			files[rng.IntN(3)].appendLines(800 + rng.IntN(1200))
		}
		after := uint64(100 + rng.IntN(2000))
		killWhen(t, d, fmt.Sprintf("kill %d: %d messages", k, after), 120*time.Second, func() bool {
			return streamMsgs(t, js, "AUDG")+uint64(kafkaEnd(t, adm, "logs"))-from >= after
		})
	}
	d := e.start()
	d.waitSettled(300 * time.Second)
	d.stop()
	n := total()
	// kafka, read-committed: each line once.
	got := kafkaCount(t, broker, "logs", n)
	for _, f := range files {
		for i, s := range f.texts {
			if got[s] != 1 {
				t.Errorf("kafka: %s line %d landed %d times", filepath.Base(f.path), i, got[s])
			}
		}
	}
	// nats: each subject is one file's lines, once, in order.
	bySubject := map[string][]string{}
	for _, m := range natstest.Messages(t, js, "AUDG") {
		bySubject[m.Subject] = append(bySubject[m.Subject], string(m.Data))
	}
	if len(bySubject) != len(files) {
		t.Errorf("nats: %d subjects, want %d", len(bySubject), len(files))
	}
	for _, f := range files {
		found := false
		for subj, msgs := range bySubject {
			if len(msgs) == 0 || len(f.texts) == 0 || msgs[0] != f.texts[0] {
				continue
			}
			found = true
			if len(msgs) != len(f.texts) {
				t.Errorf("nats %s: %d messages for %d lines of %s", subj, len(msgs), len(f.texts), filepath.Base(f.path))
			}
			for i := range min(len(msgs), len(f.texts)) {
				if msgs[i] != f.texts[i] {
					t.Errorf("nats %s: message %d is %q, want %q", subj, i, msgs[i], f.texts[i])
					break
				}
			}
		}
		if !found {
			t.Errorf("nats: no subject starts with %s's first line", filepath.Base(f.path))
		}
	}
	t.Logf("%d lines in 3 files, 8 kills", n)
}

// audFile is an input file whose lines name it (so lines of several files
// never compare equal).
type audFile struct {
	t     testing.TB
	path  string
	texts []string
}

// appendLines appends n lines with one write(2).
func (f *audFile) appendLines(n int) {
	f.t.Helper()
	var b strings.Builder
	for range n {
		s := fmt.Sprintf("%s line %07d %s", filepath.Base(f.path), len(f.texts), strings.Repeat("x", len(f.texts)%37))
		f.texts = append(f.texts, s)
		b.WriteString(s + "\n")
	}
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		f.t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(b.String()); err != nil {
		f.t.Fatal(err)
	}
}

const audRotateKillConfig = audCommittedHead + `    queueCapacity: 512
    pollIntervalMillis: 20
    rotateWaitMillis: 200
processors:
` + audKafkaKx + `  - name: nb
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDB
    subject: audb.{instance}.{feed}
    exactlyOnce: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
  - name: ns
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDS
    subject: auds.{instance}.{feed}
    exactlyOnce: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
`

// TestAudOKRotateKill9ExactlyOnceBothEngines — DESIGN §2 / §11 with §4's
// rotation: a single-file feed renamed away (logrotate's create mode) in
// the middle of bursts, the binary killed -9 many times, delivering into
// kafka exactlyOnce and two nats exactlyOnce subjects (a stream with fast
// batches, one without: the one-at-a-time chain); the rotated files stay
// on disk. Afterwards kafka holds every line once (read-committed) and
// each nats stream every line once, in order.
func TestAudOKRotateKill9ExactlyOnceBothEngines(t *testing.T) {
	broker := startKafka(t, kfake.SeedTopics(2, "logs"), kfake.SeedTopics(1, "offs"))
	srv, js := startNats(t, shortDupStream("AUDB", "audb", true), shortDupStream("AUDS", "auds", false))
	adm := kafkaAdmin(t, broker)
	e := newEnv(t, strings.NewReplacer("{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(audRotateKillConfig))
	in := &audFile{t: t, path: e.path("in.log")}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
	in.appendLines(500)
	rotations := 0
	progress := func() uint64 {
		return streamMsgs(t, js, "AUDB") + streamMsgs(t, js, "AUDS") + uint64(kafkaEnd(t, adm, "logs"))
	}
	for k := range 8 {
		d := e.spawn()
		from := progress()
		added := len(in.texts)
		in.appendLines(500 + rng.IntN(1500))
		if k == 0 {
			// A fresh pointer starts at the file it first opens: a file
			// renamed away before this first run opened the input was never
			// this feed's (its lines are history, not a generation). Rotate
			// only once the run reads.
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
		// Each line appended in this round is a new message in each of
		// the three counted streams: a kill point beyond 3× them may never
		// come (the rare 120 s stall of earlier runs).
		added = len(in.texts) - added
		after := uint64(100 + rng.IntN(min(2000, 3*added-100)))
		deadline := time.Now().Add(120 * time.Second)
		for progress()-from < after && !d.exited() {
			if time.Now().After(deadline) {
				// Leave the evidence of a stall: the daemon's own account.
				_, body, _ := d.get("/feed.status")
				t.Fatalf("kill %d: timed out after 120s waiting for %d more messages (got %d)\nstatus: %s\nlog:\n%s",
					k, after, progress()-from, body, tail(d.log(), 6000))
			}
			time.Sleep(5 * time.Millisecond)
		}
		d.kill()
		if d.code != -1 {
			t.Fatalf("kill %d: exited %d before the kill\n%s", k, d.code, tail(d.log(), 3000))
		}
	}
	d := e.start()
	r := d.waitSettled(300 * time.Second)
	d.stop()
	if f := r.feed(t, "app"); !f.Lossless {
		t.Errorf("feed lossy after the run: lostTails %d", f.LostTails)
	}
	n := len(in.texts)
	got := kafkaCount(t, broker, "logs", n)
	bad := 0
	for i, s := range in.texts {
		if got[s] != 1 {
			bad++
			if bad <= 10 {
				t.Errorf("kafka: line %d landed %d times", i, got[s])
			}
		}
	}
	if bad > 0 {
		t.Errorf("kafka: %d of %d lines not exactly once", bad, n)
	}
	for _, stream := range []string{"AUDB", "AUDS"} {
		msgs := natstest.Messages(t, js, stream)
		if len(msgs) != n {
			t.Errorf("%s: %d messages for %d lines", stream, len(msgs), n)
		}
		for i := range min(len(msgs), n) {
			if string(msgs[i].Data) != in.texts[i] {
				t.Errorf("%s: message %d is %q, want %q", stream, i, msgs[i].Data, in.texts[i])
				break
			}
		}
	}
	t.Logf("%d lines, %d rotations, 8 kills", n, rotations)
}

const audReloadTargetNats = audCommittedHead + `processors:
  - name: n
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDT
    subject: {{SUBJECT}}.{instance}.{feed}
    timeoutMillis: 2000
    onFailure: deadLetter
    retry: {initialMillis: 50, maxMillis: 200, attempts: 1}
`

const audReloadTargetKafka = audCommittedHead + `processors:
  - name: k
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: {{TOPIC}}
    timeoutMillis: 2000
    onFailure: deadLetter
    retry: {initialMillis: 50, maxMillis: 200, attempts: 1}
`

// audReloadTarget runs the daemon on tmpl (rendered by first), makes one
// dead letter (a line over the engine's size limit), reloads with the
// target rendered by second, and checks DESIGN §12's rule for a changed
// target.
func audReloadTarget(t *testing.T, tmpl string, first, second *strings.Replacer, proc string) {
	e := newEnv(t, first.Replace(tmpl))
	raw := make([]byte, 6000)
	for i := range raw {
		raw[i] = byte(rand.IntN(256))
	}
	big := base64.StdEncoding.EncodeToString(raw) // incompressible: over the limit on the wire too
	os.WriteFile(e.path("in.log"), []byte("ok1\n"+big+"\nok2\n"), 0o644)
	d := e.start()
	d.waitFor("the big line dead-lettered, the rest processed", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.DeadLettered == 1 && f.Settled
	})
	dlq := e.path("state/dlq/" + proc + ".jsonl")
	if _, err := os.Stat(dlq); err != nil {
		t.Fatalf("no dead-letter ledger: %v", err)
	}
	e.tmpl = second.Replace(tmpl)
	e.cfgWith(d.addr)
	if code, _, body := request(t, d, "POST", "/admin/reload", "", nil); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	appendTo(t, e.path("in.log"), "ok3\n")
	d.waitSettled(60 * time.Second)
	d.stop()
	aside, _ := filepath.Glob(e.path("state/state/" + proc + ".*.old"))
	_, err := os.Stat(dlq)
	warned := strings.Contains(d.log(), "moved aside")
	if len(aside) == 0 || err == nil || !warned {
		t.Errorf("target changed by a reload: state/%s.<time>.old %v, %s still there: %v, WARN 'moved aside': %v; want the dead letters moved aside with a WARN (the processor starts as new)",
			proc, aside, filepath.Base(dlq), err == nil, warned)
	}
}

// TestAudXReloadNatsSubjectChangeKeepsState — DESIGN §12 Reload: "Its
// durable state (exactlyOnce record, webhook record, count state, dead
// letters) is kept only when its target is unchanged (… nats
// stream/subject …); otherwise that state is moved aside to
// state/<processor>.<time>.old with a WARN and the processor starts as
// new."
// Expected: a nats processor with a dead letter whose subject a reload
// changes gets its ledger (and side record) moved to
// state/n.<time>.old with a WARN.
// Observed: nothing moved, no WARN: the old target's dead letters stay the
// new one's (deadLettered still 1, a replay goes to the new subject). The
// nats and kafka sinks register no Target (sink/nats/register.go,
// sink/kafka/register.go), so internal/daemon/reload.go targetChanged
// never sees a change for them.
func TestAudXReloadNatsSubjectChangeKeepsState(t *testing.T) {
	srv, _ := startNats(t, jetstream.StreamConfig{Name: "AUDT", Subjects: []string{"one.>", "two.>"},
		Storage: jetstream.FileStorage, MaxMsgSize: 1000})
	audReloadTarget(t, audReloadTargetNats,
		strings.NewReplacer("{{NATS}}", srv.URL(), "{{SUBJECT}}", "one"),
		strings.NewReplacer("{{NATS}}", srv.URL(), "{{SUBJECT}}", "two"), "n")
}

// TestAudXReloadKafkaTopicChangeKeepsState — DESIGN §12 Reload, as above,
// for "kafka topic/offsetsTopic".
// Expected: the kafka processor's dead letters moved aside with a WARN
// when a reload changes its topic.
// Observed: kept, no WARN (no Target registered for kafka).
func TestAudXReloadKafkaTopicChangeKeepsState(t *testing.T) {
	b := startKafka(t, kfake.SeedTopics(1, "one", "two"), kfake.BrokerConfigs(map[string]string{"message.max.bytes": "2000"}))
	audReloadTarget(t, audReloadTargetKafka,
		strings.NewReplacer("{{BROKER}}", b, "{{TOPIC}}", "one"),
		strings.NewReplacer("{{BROKER}}", b, "{{TOPIC}}", "two"), "k")
}

// TestAudXNatsCreateStreamDottedInstance — DESIGN §11 nats: "The stream
// must exist, or `createStream: true` creates it (file storage, the
// subject, a 2-minute duplicate window)"; §11 Instance: instance is
// `[A-Za-z0-9._-]+` (default the host name — an FQDN holds dots).
// Expected: with instance "web.example" (valid), subject
// logs.{instance}.{feed}.lines and createStream: true, the
// created stream takes the sink's subject and the lines are stored.
// Observed: the stream is created with the template's variable tokens made
// wildcards (logs.*.*.lines, the README's own decision), which does not
// take logs.web.example.app.lines; the feed holds forever ("no stream takes
// subject …"), nothing delivered. (With {feed} as the last token it works:
// the last variable token becomes '>'.) The README names the limit ("needs a stream made
// by hand"), but DESIGN promises createStream creates a stream with the
// subject, and a dotted instance is valid by DESIGN's own pattern.
func TestAudXNatsCreateStreamDottedInstance(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	cfg := strings.NewReplacer("{{NATS}}", srv.URL(), "{{STREAM}}", "AUDD", "{{CREATE}}", "true",
		"instance: aud-host", "instance: web.example", "subject: aud.{instance}.{feed}", "subject: logs.{instance}.{feed}.lines").Replace(audNatsConfig)
	e := newEnv(t, cfg)
	os.WriteFile(e.path("in.log"), []byte("one\ntwo\n"), 0o644)
	d := e.start()
	ok := true
	func() {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if r, err := d.status(); err == nil && r.Settled {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		ok = false
	}()
	r, raw := statusRaw(t, d)
	_ = r
	d.stop()
	if n := streamMsgs(t, js, "AUDD"); !ok || n != 2 {
		t.Errorf("instance web.example, createStream: settled %v, %d messages in the created stream, want 2; status:\n%s", ok, n, raw)
	}
}

// TestAudOKMissingTargetHoldsThenResumes — DESIGN §11 Failures ("an
// unavailable engine is retried at the backoff cap whatever onFailure says
// … nothing dead-lettered"), kafka "Topics must exist", nats "The stream
// must exist": with onFailure deadLetter and one attempt, a missing kafka
// topic / nats stream stalls the feed with the reason; created later by
// hand, every line lands once and nothing is dead-lettered.
func TestAudOKMissingTargetHoldsThenResumes(t *testing.T) {
	broker := startKafka(t)
	srv, js := startNats(t)
	cfg := strings.NewReplacer("{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(`instance: aud-host
dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - {name: app, path: ./in.log}
processors:
  - {name: k, feed: app, type: kafka, brokers: [{{BROKER}}], topic: late, offsetsTopic: lateoffs, exactlyOnce: true, timeoutMillis: 1000, onFailure: deadLetter, retry: {initialMillis: 50, maxMillis: 300, attempts: 1}}
  - {name: n, feed: app, type: nats, url: {{NATS}}, stream: LATE, subject: "late.{instance}.{feed}", exactlyOnce: true, timeoutMillis: 1000, onFailure: deadLetter, retry: {initialMillis: 50, maxMillis: 300, attempts: 1}}
`)
	e := newEnv(t, cfg)
	os.WriteFile(e.path("in.log"), []byte("one\ntwo\nthree\n"), 0o644)
	d := e.start()
	d.waitFor("stalled naming the missing topic", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Stalled != nil && strings.Contains(*f.Stalled, "subscriber k") && strings.Contains(*f.Stalled, "does not exist")
	})
	time.Sleep(2 * time.Second)
	if f := func() feedReport { r, _ := statusRaw(t, d); return r.feed(t, "app") }(); f.DeadLettered != 0 {
		t.Fatalf("dead-lettered %d while the target is missing", f.DeadLettered)
	}
	adm := kafkaAdmin(t, broker)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "late"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "lateoffs"); err != nil {
		t.Fatal(err)
	}
	d.waitFor("stalled on the missing stream", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Stalled != nil && strings.Contains(*f.Stalled, "subscriber n")
	})
	time.Sleep(2 * time.Second)
	if f := func() feedReport { r, _ := statusRaw(t, d); return r.feed(t, "app") }(); f.DeadLettered != 0 {
		t.Fatalf("dead-lettered %d while the stream is missing", f.DeadLettered)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LATE", Subjects: []string{"late.>"}}); err != nil {
		t.Fatal(err)
	}
	r := d.waitSettled(60 * time.Second)
	d.stop()
	if f := r.feed(t, "app"); f.DeadLettered != 0 || !f.Lossless {
		t.Errorf("after: dead letters %d, lossless %v", f.DeadLettered, f.Lossless)
	}
	if got := kafkaCount(t, broker, "late", 3); len(got) != 3 || got["one"] != 1 || got["three"] != 1 {
		t.Errorf("kafka: %v", got)
	}
	if n := streamMsgs(t, js, "LATE"); n != 3 {
		t.Errorf("nats: %d messages", n)
	}
}

// TestAudOKNatsSecretsNotInDeadLetters — DESIGN §12: secrets never appear
// in status, metrics, logs or dead letters: a nats url carrying the token
// as its userinfo, a message over the stream's limit dead-lettered; the
// token is nowhere in the ledger, the log, /feed.status, /metrics.
func TestAudOKNatsSecretsNotInDeadLetters(t *testing.T) {
	const tok = "audTok3n5ecret"
	srv := natstest.Start(t, natstest.Options{Token: tok})
	_, js := srv.Connect(t)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "AUDT", Subjects: []string{"one.>"}, MaxMsgSize: 1000}); err != nil {
		t.Fatal(err)
	}
	u := strings.Replace(srv.URL(), "nats://", "nats://"+tok+"@", 1)
	e := newEnv(t, strings.NewReplacer("{{NATS}}", u, "{{SUBJECT}}", "one").Replace(audReloadTargetNats))
	os.WriteFile(e.path("in.log"), []byte("ok1\n"+strings.Repeat("B", 3000)+"\nok2\n"), 0o644)
	d := e.start()
	d.waitFor("dead letter", 60*time.Second, func(r *report) bool { f := r.feed(t, "app"); return f.DeadLettered == 1 && f.Settled })
	_, st := statusRaw(t, d)
	_, _, m := request(t, d, "GET", "/metrics", "", nil)
	d.stop()
	dl, _ := os.ReadFile(e.path("state/dlq/n.jsonl"))
	for what, s := range map[string]string{"ledger": string(dl), "log": d.log(), "status": string(st), "metrics": string(m)} {
		if strings.Contains(s, tok) {
			t.Errorf("the token is in the %s", what)
		}
	}
	if n := streamMsgs(t, js, "AUDT"); n != 2 {
		t.Errorf("%d messages, want 2", n)
	}
}

// TestAudXKafkaBrokerPortNotChecked — DESIGN §11 kafka: "`brokers` (a list
// of `host:port`)"; §9: validate checks types, enums, names and may list
// several errors, each FILE:LINE: message, exit 2 (the config code means
// to: it refuses a broker that is not host:port, sink/kafka/config.go).
// Expected: "127.0.0.1:abc" and "127.0.0.1:99999" (no port) are config
// errors at their line.
// Observed: validate accepts both (exit 0): only net.SplitHostPort is
// asked, not whether the port is a number 1..65535; `run` then starts and
// the feed stalls for ever on "kafka client: unable to parse port from
// addr: …" — a typo in the config shows up as an outage.
func TestAudXKafkaBrokerPortNotChecked(t *testing.T) {
	dir := t.TempDir()
	cfg := fmt.Sprintf(`dataDir: %s
feeds:
  - {name: app, path: %s}
processors:
  - name: k
    feed: app
    type: kafka
    brokers: ["127.0.0.1:abc", "127.0.0.1:99999"]
    topic: logs
`, filepath.Join(dir, "state"), filepath.Join(dir, "in.log"))
	path := filepath.Join(dir, "tailfeed.yaml")
	os.WriteFile(path, []byte(cfg), 0o600)
	stdout, stderr, code := cli(t, "validate", "--config", path)
	out := stdout + stderr
	if code != 2 || !strings.Contains(out, "tailfeed.yaml:8:") {
		t.Errorf("brokers with a port that is not one: validate exit %d, want 2 naming tailfeed.yaml:8:\n%s", code, out)
	}
}

const audReloadLoadConfig = audCommittedHead + `    queueCapacity: {{Q}}
    pollIntervalMillis: 20
processors:
  - name: kp
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: plain
    timeoutMillis: {{T}}
    retry: {initialMillis: 50, maxMillis: 400}
  - name: kx
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: exact
    offsetsTopic: offs
    exactlyOnce: true
    timeoutMillis: {{T}}
    retry: {initialMillis: 50, maxMillis: 400}
  - name: np
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDP
    subject: audp.{instance}.{feed}
    timeoutMillis: {{T}}
    retry: {initialMillis: 50, maxMillis: 400}
  - name: nx
    feed: app
    type: nats
    url: {{NATS}}
    stream: AUDE
    subject: aude.{instance}.{feed}
    exactlyOnce: true
    timeoutMillis: {{T}}
    retry: {initialMillis: 50, maxMillis: 400}
`

// TestAudOKReloadUnderLoadNoDuplicates — DESIGN §2 (duplicates only after a
// crash or a restored sink's catch-up) and §12 Reload ("A changed
// processor keeps its queue and position: the new instance receives first
// the lines the old one did not finish"): reloads that change every engine
// processor (timeoutMillis), and every other one the feed (queueCapacity:
// stopped with a final commit, started again from its pointer), while
// lines stream in leave every line once in
// each engine — at-least-once sinks included (streams with a 100 ms
// duplicate window: their dedupe hides nothing).
func TestAudOKReloadUnderLoadNoDuplicates(t *testing.T) {
	broker := startKafka(t, kfake.SeedTopics(2, "plain", "exact"), kfake.SeedTopics(1, "offs"))
	srv, js := startNats(t, shortDupStream("AUDP", "audp", true), shortDupStream("AUDE", "aude", true))
	tmpl := strings.NewReplacer("{{BROKER}}", broker, "{{NATS}}", srv.URL()).Replace(audReloadLoadConfig)
	e := newEnv(t, strings.NewReplacer("{{T}}", "3000", "{{Q}}", "512").Replace(tmpl))
	in := &audFile{t: t, path: e.path("in.log")}
	in.appendLines(1000)
	d := e.start()
	for k := range 6 {
		in.appendLines(2000)
		time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
		// odd reloads change the feed too (stopped, final commit, started
		// again from its pointer), even ones only the processors.
		e.tmpl = strings.NewReplacer("{{T}}", strconv.Itoa(3000+k+1), "{{Q}}", strconv.Itoa(512+(k+1)/2*64)).Replace(tmpl)
		e.cfgWith(d.addr)
		if code, _, body := request(t, d, "POST", "/admin/reload", "", nil); code != 200 {
			t.Fatalf("reload %d: %d %s", k, code, body)
		}
	}
	d.waitSettled(180 * time.Second)
	d.stop()
	n := len(in.texts)
	for _, topic := range []string{"plain", "exact"} {
		if bad := notOnce(kafkaCount(t, broker, topic, n), in.texts); bad > 0 {
			t.Errorf("kafka %s: %d of %d lines not exactly once", topic, bad, n)
		}
	}
	for _, stream := range []string{"AUDP", "AUDE"} {
		seen := map[string]int{}
		msgs := natstest.Messages(t, js, stream)
		for _, m := range msgs {
			seen[string(m.Data)]++
		}
		if bad := notOnce(seen, in.texts); bad > 0 || len(msgs) != n {
			t.Errorf("nats %s: %d messages for %d lines, %d not exactly once", stream, len(msgs), n, bad)
		}
	}
	if c := strings.Count(d.log(), "reloaded"); c == 0 {
		t.Logf("log has no 'reloaded' line")
	}
}

const audSharedOffsetsConfig = `instance: host-a
dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
processors:
  - name: exact
    feed: app
    type: kafka
    brokers: [{{BROKER}}]
    topic: logs
    offsetsTopic: offs
    exactlyOnce: true
    timeoutMillis: 2000
    retry: {initialMillis: 50, maxMillis: 400}
`

// TestAudXKafkaSharedOffsetsOpenTxnDuplicates — DESIGN §11 Instance ("names
// this sidecar in every engine-side identity, so many hosts can share one
// engine: … the kafka transactionalId … and offsets key") and kafka
// ("`exactlyOnce: true` … At start the sink reads `offsetsTopic` to its end
// (read-committed) and skips a delivery only when `AlreadyApplied` holds
// for the stored position of its epoch"); §2: an exactlyOnce sink stores
// the last applied (epoch, position) atomically with its output and skips
// re-deliveries.
// Set-up: two sidecars share the offsets topic (one partition, as
// createTopics makes it). Sidecar host-b has a transaction open on it — as
// it has for a moment in every batch, and for up to a minute after a
// kill -9 (the transaction timeout) — simulated here by a transactional
// client "tailfeed-host-b-exact" that produced its offsets record and has
// not committed yet. Meanwhile host-a (the daemon) commits 200 more lines,
// stops cleanly and starts again.
// Expected: host-a's topic holds each line once (read-committed).
// Observed: at start host-a reads the offsets topic only up to the last
// stable offset, i.e. up to host-b's open transaction, so its own newer
// committed records are unseen; its stored position is the stale one, the
// feed is taken for "behind", the pointer is committed back and the 200
// lines are produced and committed a second time: duplicates in an
// exactlyOnce topic without any crash of host-a.
func TestAudXKafkaSharedOffsetsOpenTxnDuplicates(t *testing.T) {
	broker := startKafka(t, kfake.SeedTopics(1, "logs", "offs"))
	e := newEnv(t, strings.ReplaceAll(audSharedOffsetsConfig, "{{BROKER}}", broker))
	in := &audFile{t: t, path: e.path("in.log")}
	in.appendLines(100)
	d := e.start()
	d.waitSettled(60 * time.Second)

	// host-b's transaction, open on the shared offsets topic.
	b, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.TransactionalID("tailfeed-host-b-exact"),
		kgo.TransactionTimeout(5*time.Minute), kgo.DefaultProduceTopic("offs"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := b.ProduceSync(ctx, &kgo.Record{Topic: "offs", Key: []byte("host-b:exact:app:0000000000000001"),
		Value: []byte(`{"feed":"app","fileKey":"","epoch":"0000000000000001","position":1}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	in.appendLines(200)
	d.waitSettled(60 * time.Second)
	d.stop()
	d = e.start()
	d.waitSettled(60 * time.Second)
	d.stop()
	// host-b commits its batch; now read host-a's topic, read-committed.
	if err := b.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if dup := notOnce(kafkaCount(t, broker, "logs", len(in.texts)), in.texts); dup > 0 {
		t.Errorf("exactlyOnce topic: %d of %d lines not exactly once (host-b's open transaction on the shared offsets topic hid host-a's newer offsets records at its start)", dup, len(in.texts))
	}
}

// TestAudOKNatsKill9DuringCatchUp — DESIGN §11 "A restored sink is caught
// up from the input" with §2: a nats exactlyOnce stream restored to an
// earlier point (its last messages deleted while tailfeed is stopped) is
// caught up from the input; kill -9 three times in the middle of that
// catch-up, then a clean run: the stream holds every line once, in order.
func TestAudOKNatsKill9DuringCatchUp(t *testing.T) {
	srv, js := startNats(t, shortDupStream("AUDK", "aud", true))
	ctx := context.Background()
	st, err := js.Stream(ctx, "AUDK")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, strings.NewReplacer("{{NATS}}", srv.URL(), "{{STREAM}}", "AUDK", "{{CREATE}}", "false").Replace(audNatsConfig))
	in := &audFile{t: t, path: e.path("in.log")}
	in.appendLines(8000)
	d := e.start()
	d.waitSettled(120 * time.Second)
	d.stop()
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(2001); seq <= info.State.LastSeq; seq++ {
		if err := st.DeleteMsg(ctx, seq); err != nil {
			t.Fatalf("delete %d: %v", seq, err)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 19))
	for k := range 3 {
		d := e.spawn()
		from := streamMsgs(t, js, "AUDK")
		after := uint64(100 + rng.IntN(1500))
		killWhen(t, d, fmt.Sprintf("kill %d: %d messages of the catch-up", k, after), 120*time.Second, func() bool {
			return streamMsgs(t, js, "AUDK")-from >= after
		})
		in.appendLines(500)
	}
	d = e.start()
	r := d.waitSettled(120 * time.Second)
	d.stop()
	if f := r.feed(t, "app"); !f.Lossless {
		t.Errorf("lossy: lostTails %d", f.LostTails)
	}
	msgs := natstest.Messages(t, js, "AUDK")
	if len(msgs) != len(in.texts) {
		t.Errorf("%d messages for %d lines", len(msgs), len(in.texts))
	}
	for i := range min(len(msgs), len(in.texts)) {
		if string(msgs[i].Data) != in.texts[i] {
			t.Fatalf("message %d is %q, want %q", i, msgs[i].Data, in.texts[i])
		}
	}
}

// TestAudOKEngineStateFilesPrivate — DESIGN §12 Secure by default: every
// file in dataDir is 0600 (directories 0700), the nats exactlyOnce side
// record (written for a run ending in filtered lines) and the engine
// sinks' dead-letter ledgers included.
func TestAudOKEngineStateFilesPrivate(t *testing.T) {
	srv, _ := startNats(t, jetstream.StreamConfig{Name: "AUDM", Subjects: []string{"aud.>"}, MaxMsgSize: 1000})
	cfg := strings.NewReplacer("{{NATS}}", srv.URL(), "{{STREAM}}", "AUDM", "{{CREATE}}", "false",
		"    retry: {initialMillis: 50, maxMillis: 400}\n", "    retry: {initialMillis: 50, maxMillis: 400, attempts: 1}\n    onFailure: deadLetter\n    exclude: \"^skip\"\n").Replace(audNatsConfig)
	e := newEnv(t, cfg)
	os.WriteFile(e.path("in.log"), []byte("one\n"+strings.Repeat("B", 3000)+"\nskip1\nskip2\n"), 0o644)
	d := e.start()
	d.waitFor("settled with one dead letter", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.DeadLettered == 1
	})
	d.stop()
	if _, err := os.Stat(e.path("state/state/exact.rec")); err != nil {
		t.Logf("no side record: %v", err)
	}
	for p, m := range modesOf(t, e.path("state")) {
		if m.IsDir() && m.Perm() != 0o700 || m.IsRegular() && m.Perm() != 0o600 {
			t.Errorf("%s: %v", p, m)
		}
	}
}

// TestAudXNatsURLLiteralPasswordNoWarn — DESIGN §11 Secrets: "Secrets
// (dsn, SASL passwords, tokens) should come from ${ENV} references (§12);
// a literal secret is accepted with a WARN at start naming the key"; §12
// treats a URL's userinfo as a secret (always shown redacted).
// Expected: a nats url written with a literal password
// (nats://aud:SecretPw99@host, the config file private) gets the WARN at
// start naming processors[0].url, as a literal `token:` does (checked:
// it does) and as a postgres DSN's literal password does.
// Observed: no WARN at all; run.go only warns about a URL's userinfo when
// the config file is readable by others. (Less sure than the others: the
// DESIGN list names dsn, SASL passwords and tokens, and a nats URL's
// userinfo is a password or a token.)
func TestAudXNatsURLLiteralPasswordNoWarn(t *testing.T) {
	dir := t.TempDir()
	cfg := oneFeedConfig(t, dir, "", `  - {name: n, feed: app, type: nats, url: "nats://aud:SecretPw99@127.0.0.1:1", stream: S, subject: "a.{instance}"}
`)
	log := startLog(t, cfg, 0o600)
	if strings.Contains(log, "SecretPw99") {
		t.Errorf("the password is in the log")
	}
	var warned []string
	for _, l := range audWarnLines(log, "processors[0].url") {
		if !strings.Contains(l, "failing") {
			warned = append(warned, l)
		}
	}
	if len(warned) == 0 {
		t.Errorf("no WARN at start naming processors[0].url for its literal password; WARN lines:\n%s", strings.Join(audWarnLines(log), "\n"))
	}
}
