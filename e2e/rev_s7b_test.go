package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tailfeed/internal/testutil/pgtest"
)

// Review S7 (rev-b) of the change in review/r2.diff: kafka offsets read to
// the high watermark, reload (kafka/nats Target, instance change, dead
// letters moved aside counted as released), literal-secret WARNs, kafka
// broker ports, nats credsFile, URL list redaction, postgres marks name,
// nats createStream subject. Each TestRevS7... test is a finding: it fails
// against the product at the reviewed commit.

// revSilentListener accepts TCP connections and never answers: a NATS
// client connecting to it waits for the server's INFO for its whole
// timeout.
func revSilentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// revAsideConfig is a webhook "hook" on feed app (dead-letters at once),
// plus, when slowNats is set, a second feed whose nats processor connects
// to a server that never answers (its sink takes timeoutMillis to open).
func revAsideConfig(hookURL, slowNats string) string {
	feeds := "  - name: app\n    path: ./in.log\n"
	procs := fmt.Sprintf(`  - name: hook
    feed: app
    type: webhook
    url: %s/in
    onFailure: deadLetter
    retry: {initialMillis: 10, maxMillis: 20, attempts: 1}
`, hookURL)
	if slowNats != "" {
		feeds += "  - name: other\n    path: ./other.log\n"
		procs += fmt.Sprintf(`  - name: slow
    feed: other
    type: nats
    url: nats://%s
    stream: S
    subject: s.x
    timeoutMillis: 20000
`, slowNats)
	}
	return "dataDir: ./state\nstatus: {listen: \"{{ADDR}}\"}\nshutdownTimeoutMillis: 500\nfeeds:\n" + feeds + "processors:\n" + procs
}

// TestRevS7AsideDeadLettersKill9BeforeLossRecorded — DESIGN §6 "Dead
// letters": lossless is false while any ledger is non-empty, across
// restarts; §7 "Losses outlive the run … A restart never turns a lossy feed
// green by itself"; §12 Reload moves a changed processor's dead letters
// aside. The change (c1661e9, giveUpAside) counts dead letters moved aside
// as released with an entry in losses.jsonl — but it renames the ledger
// into state/<processor>.<time>.old first (moveStateAside, right after the
// stops) and appends the losses entry only after every new or changed feed
// was built (buildFeeds: sinks opened; a nats sink's open waits up to
// timeoutMillis for a silent server). A kill -9 in that window leaves the
// dead letter in neither place.
// Expected: after the kill -9 and a start, the feed is lossless false (the
// ledger still counts the line, or losses.jsonl names it as released).
// Observed: deadLettered 0, released 0, lossless true, losses.jsonl
// without an entry: line a reached no receiver and the feed is green.
func TestRevS7AsideDeadLettersKill9BeforeLossRecorded(t *testing.T) {
	h := newAudHook(t)
	dead := freeAddr(t) // nothing listens: line a is dead-lettered
	silent := revSilentListener(t)
	e := newEnv(t, revAsideConfig("http://"+dead, ""))
	audWrite(t, e.path("in.log"), "a\n")
	audWrite(t, e.path("other.log"), "")
	d := e.start()
	d.waitFor("a dead-lettered", 30*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.DeadLettered == 1 && f.Settled
	})
	// The reload changes the hook's url (its target: state moved aside)
	// and adds a feed whose sink is slow to open.
	e.tmpl = revAsideConfig(h.srv.URL, silent)
	e.cfgWith(d.addr)
	d.signal(syscall.SIGHUP)
	var aside []string
	waitUntil(t, "the ledger moved aside", 30*time.Second, func() bool {
		aside, _ = filepath.Glob(e.path("state/state/hook.*.old/*"))
		return len(aside) > 0
	})
	time.Sleep(500 * time.Millisecond)
	if strings.Contains(d.log(), "config reloaded") {
		t.Fatalf("the reload ended before the kill (not the window under test)")
	}
	d.kill() // kill -9 while the reload builds its feeds
	e.tmpl = revAsideConfig(h.srv.URL, "")
	d = e.start()
	r := d.waitFor("settled", 30*time.Second, func(r *report) bool { return r.feed(t, "app").Settled })
	d.stop()
	f := r.feed(t, "app")
	losses, _ := os.ReadFile(e.path("state/losses.jsonl"))
	if f.Lossless || r.Lossless {
		t.Errorf("after a kill -9 during the reload that moved the dead letter aside (%v): deadLettered %d released %d lossless %v, losses.jsonl %q; "+
			"line a reached no receiver, was neither replayed nor purged, and the feed is green", aside, f.DeadLettered, f.Released, f.Lossless, losses)
	}
}

// TestRevS7SecretDefaultNotWarnedAsLiteral — DESIGN §11 Secrets: "a literal
// secret is accepted with a WARN at start naming the key"; §12 Environment:
// `${VAR:-default}` — the default is text of the file. The change (d16b503)
// warns only when the written value holds no ${VAR} reference at all
// (config.HasReference): kafka sasl.password, nats token and a nats url's
// userinfo. A secret written as the default of a reference
// ("${KAFKA_PW:-…}", the variable unset) is the file's own literal text and
// is the secret used; likewise a url whose user is a reference and whose
// password is written in ("nats://${NATS_USER}:pw@h"). The same commit's
// postgres rule keeps the WARN for a dsn that "still holds its password as
// written" (84ddfb8): the other sinks do not.
// Expected: a WARN naming processors[0].sasl.password, processors[1].token
// and processors[2].url. Observed: none of the three.
func TestRevS7SecretDefaultNotWarnedAsLiteral(t *testing.T) {
	dir := t.TempDir()
	cfg := oneFeedConfig(t, dir, "instance: rev-host\n", `  - name: k
    feed: app
    type: kafka
    brokers: ["127.0.0.1:1"]
    topic: logs
    sasl: {mechanism: PLAIN, username: tailfeed, password: "${REV_UNSET_KAFKA_PW:-revKafkaLit-5521}"}
  - name: n
    feed: app
    type: nats
    url: nats://127.0.0.1:1
    stream: S1
    subject: a.{instance}
    token: "${REV_UNSET_NATS_TOKEN:-revNatsLit-8812}"
  - name: m
    feed: app
    type: nats
    url: "nats://${REV_NATS_USER}:revUrlLit-3390@127.0.0.1:1"
    stream: S2
    subject: b.{instance}
`)
	log := startLog(t, cfg, 0o600, "REV_NATS_USER=tailfeed")
	wantSecretsNotInLog(t, log, "revKafkaLit-5521", "revNatsLit-8812", "revUrlLit-3390")
	for _, key := range []string{"processors[0].sasl.password", "processors[1].token", "processors[2].url"} {
		var warned []string
		for _, l := range audWarnLines(log, key) {
			if strings.Contains(l, "literal") {
				warned = append(warned, l)
			}
		}
		if len(warned) == 0 {
			t.Errorf("no literal-secret WARN naming %s (its secret is written in the file); WARN lines:\n%s", key, strings.Join(audWarnLines(log), "\n"))
		}
	}
}

// TestRevS7PostgresEncodedPasswordNotWarned — DESIGN §11 Secrets: "a
// literal secret is accepted with a WARN at start naming the key"; README
// postgres Secrets: no WARN only for "a dsn holding a reference and not its
// password as written". The change (d16b503, 84ddfb8) takes a dsn as
// referenced when its written text holds a ${VAR} and does not contain the
// parsed password byte for byte (strings.Contains(written, cc.Password)).
// A password written percent-encoded in a URL dsn (p%40ss for p@ss, the
// usual way to write a password with a special character) or quoted with a
// backslash escape in the keyword form is the file's literal text, yet
// never matches the decoded password: with any ${VAR} elsewhere in the dsn
// (the host here) the WARN is dropped.
// Expected: a WARN at start that the dsn holds a literal password, for
// both processors. Observed: no such WARN.
func TestRevS7PostgresEncodedPasswordNotWarned(t *testing.T) {
	dir := t.TempDir()
	cfg := oneFeedConfig(t, dir, "", `  - name: pgurl
    feed: app
    type: postgres
    dsn: "postgres://tailfeed:revPg%40Lit77@${REV_PG_HOST}/db?sslmode=disable"
    table: lines
  - name: pgkw
    feed: app
    type: postgres
    dsn: "host=${REV_PG_HOST_KW} port=1 user=tailfeed password='revPg\\'Kw88' sslmode=disable"
    table: lines2
`)
	log := startLog(t, cfg, 0o600, "REV_PG_HOST=127.0.0.1:1", "REV_PG_HOST_KW=127.0.0.1")
	wantSecretsNotInLog(t, log, "revPg%40Lit77", "revPg@Lit77", "revPg'Kw88", `revPg\'Kw88`)
	for i, name := range []string{"pgurl", "pgkw"} {
		// The key by index, as config errors name it (processors[i].dsn).
		if len(audWarnLines(log, fmt.Sprintf("processors[%d].dsn", i), "literal password")) == 0 {
			t.Errorf("no literal-password WARN for processor %s (its password is written in the file); WARN lines:\n%s", name, strings.Join(audWarnLines(log), "\n"))
		}
	}
}

// TestRevS7PostgresMarksRenamedForExistingTables — DESIGN §11 postgres
// ("Its record is max(position) per (instance, feed, epoch)"; a restored
// sink's done-through mark includes lines it filtered) and §2 (the only
// re-deliveries: after a crash, and a restored sink's catch-up). The change
// (d16b503) names the marks table <first 48 bytes>_<8 hex>_marks whenever
// <table>_marks passes 63 bytes, i.e. for every table of 58 bytes or more,
// while the commit says "short names unchanged (existing deployments)". The
// earlier version's marks table of a 58-62 byte table was <table>_marks cut
// by PostgreSQL to 63 bytes (<table>_ma for 60): a distinct table that
// worked (only a 63-byte name collided with the table itself). After the
// upgrade the sink reads a new, empty marks table: its filtered last line
// is forgotten, it takes itself for behind the pointer and the whole feed
// re-reads — the plain file sink receives the line again. The state the
// earlier version left is made here by renaming the marks table to the
// name PostgreSQL gave it then (the rows and pointer are the same).
// Expected: a start after the upgrade re-reads nothing (plain.log keeps 4
// lines). Observed: the filtered line is delivered to plain again.
func TestRevS7PostgresMarksRenamedForExistingTables(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	table := strings.Repeat("l", 60)
	cfg := strings.NewReplacer("{{INSTANCE}}", "instance: rev-host\n", "{{DSN}}", c.DSN("sslmode=disable"), "table: lines", "table: "+table,
		"    retry: {initialMillis: 50, maxMillis: 400}\n  - name: plain", "    retry: {initialMillis: 50, maxMillis: 400}\n    exclude: zzzz\n  - name: plain").Replace(audPgTmpl)
	e := newEnv(t, cfg)
	audWrite(t, e.path("in.log"), "one\ntwo\nthree\nzzzz filtered\n")
	plain := func() int {
		b, _ := os.ReadFile(e.path("plain.log"))
		return strings.Count(string(b), "\n")
	}
	run := func(what string) {
		d := e.start()
		d.waitSettled(60 * time.Second)
		time.Sleep(time.Second)
		d.waitSettled(60 * time.Second)
		d.stop()
		if n := plain(); n != 4 {
			t.Fatalf("%s: plain.log holds %d lines, want 4 (the input, once)\n%s", what, n, tail(d.log(), 3000))
		}
	}
	run("first start")
	run("a restart (control: the marks table holds the filtered line)")
	// The marks table keeps the name PostgreSQL gave the earlier version's
	// (<table>_marks cut to 63 bytes), so an upgrade finds its marks.
	before := (table + "_marks")[:63]
	if n := c.Psql(`SELECT count(*) FROM "` + before + `" WHERE position > 0`); n != "1" {
		t.Fatalf("the marks table %s holds %s marks, want 1 (the name existing deployments have)", before, n)
	}
}

// TestRevS7PostgresEnvPasswordWarnedAsLiteral — DESIGN §11 Secrets: a
// literal secret is a WARN at start; README postgres Secrets: "a DSN
// holding a literal password is a WARN at start … (not one whose password
// comes from a ${ENV} reference …)", and the WARN itself says "prefer a
// ${ENV} reference or a .pgpass file". The change (d16b503: "literal-secret
// WARNs only for secrets the file holds") still decides on pgx's parsed
// password (cc.Password != "" && !DSNReferenced), which pgx fills from
// PGPASSWORD or a .pgpass file when the dsn holds none: a dsn with no
// password at all, the secret in the environment, is warned about as a
// literal password the file holds.
// Expected: no literal-password WARN (the file holds no password).
// Observed: "the postgres DSN holds a literal password" for processors[pg].dsn.
func TestRevS7PostgresEnvPasswordWarnedAsLiteral(t *testing.T) {
	dir := t.TempDir()
	cfg := oneFeedConfig(t, dir, "", `  - name: pg
    feed: app
    type: postgres
    dsn: "host=127.0.0.1 port=1 user=tailfeed dbname=db sslmode=disable"
    table: lines
`)
	log := startLog(t, cfg, 0o600, "PGPASSWORD=revPgEnv-4471")
	if strings.Contains(log, "revPgEnv-4471") {
		t.Errorf("the password from PGPASSWORD is in the log")
	}
	if w := audWarnLines(log, "literal password"); len(w) > 0 {
		t.Errorf("a dsn without a password (PGPASSWORD holds it) warned as a literal password of the file:\n%s", strings.Join(w, "\n"))
	}
}
