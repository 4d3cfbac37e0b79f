package postgres

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/internal/testutil/pgtest"
	"tailfeed/processor"
)

// rig is a group on a real queue whose processor is a postgres sink.
type rig struct {
	*grouptest.Rig
	sink   *Sink
	ledger *processor.Ledger
}

func newRig(t *testing.T, gc processor.GroupConfig, cfg Config) *rig {
	t.Helper()
	if gc.OnFailure == processor.DeadLetter && gc.Ledger == nil {
		l, err := processor.OpenLedger(filepath.Join(t.TempDir(), "pg.jsonl"), nil)
		if err != nil {
			t.Fatal(err)
		}
		gc.Ledger = l
	}
	gc.Name = "pg"
	r := &rig{Rig: grouptest.New(t, gc)}
	r.ledger, _ = gc.Ledger.(*processor.Ledger)
	cfg.Group = r.G
	if cfg.Instance == "" {
		cfg.Instance = "host-a"
	}
	if cfg.Table == "" {
		cfg.Table, cfg.CreateTable = "lines", true
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Second
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.sink = s
	r.G.SetBatchProcessor(s)
	r.Run()
	return r
}

// rows reads the table back: line text → count.
func rows(t *testing.T, c *pgtest.Cluster, table string) map[string]int {
	t.Helper()
	out := c.Psql("SELECT convert_from(line, 'UTF8') || '|' || count(*) FROM " + table + " GROUP BY line")
	m := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		if l == "" {
			continue
		}
		i := strings.LastIndexByte(l, '|')
		var n int
		fmt.Sscan(l[i+1:], &n)
		m[l[:i]] = n
	}
	return m
}

func wantOnce(t *testing.T, got map[string]int, lines []string) {
	t.Helper()
	if len(got) != len(lines) {
		t.Errorf("table holds %d distinct lines, want %d", len(got), len(lines))
	}
	for _, l := range lines {
		if got[l] != 1 {
			t.Errorf("line %q stored %d times, want once", l, got[l])
		}
	}
}

// TestInsertsEveryLineOnce: batches land as rows with the instance, feed,
// epoch (16 hex), position and path; a re-delivery of the same positions
// (a restart re-reading from an older pointer) is skipped from the record,
// and a re-delivery the record does not cover (another sink process on the
// same table) is a no-op through ON CONFLICT: every line once.
func TestInsertsEveryLineOnce(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	dsn := c.DSN("sslmode=disable")
	lines := grouptest.Lines("a", 0, 300)
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)}, Config{DSN: dsn})
	r.Publish(lines[:100]...)
	r.Publish(lines[100:200]...)
	r.WaitAck(200, 10*time.Second)
	wantOnce(t, rows(t, c, "lines"), lines[:200])
	if got := c.Psql("SELECT instance, feed, epoch, position, path FROM lines ORDER BY position LIMIT 1"); got != "host-a|app|00000000000000e1|8|/in.log" {
		t.Errorf("first row %q", got)
	}
	r.Cancel()
	<-r.G.Done()

	// A restart delivers 100..299 again (pointer behind the table).
	r2 := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)}, Config{DSN: dsn})
	r2.Pos = 8 * 100
	r2.Publish(lines[100:300]...)
	r2.WaitAck(200, 10*time.Second)
	wantOnce(t, rows(t, c, "lines"), lines)
	if r2.sink.record[recKey{"app", 0xe1}] != 8*300 {
		t.Errorf("record %d, want %d", r2.sink.record[recKey{"app", 0xe1}], 8*300)
	}

	// Rows the record does not cover: ON CONFLICT keeps them once.
	r2.sink.record[recKey{"app", 0xe1}] = 0
	r2.Pos = 0
	r2.Publish(lines[:50]...)
	r2.WaitAck(250, 10*time.Second)
	wantOnce(t, rows(t, c, "lines"), lines)
}

// TestRowsAlreadyPresentAreSkipped: a table restored from an older dump
// holds fewer rows; lines the table holds are skipped (no insert), those it
// lacks are inserted, so every line is there once. (What lies before the
// pointer is re-read by DESIGN §11's catch-up at the daemon's start, from
// DoneThrough: e2e TestPostgresSkewedRestore.)
func TestRowsAlreadyPresentAreSkipped(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	c.Psql(CreateSQL("lines"))
	// The table holds lines 0..49 from an earlier run.
	c.Psql("INSERT INTO lines (instance, feed, epoch, position, path, line) SELECT 'host-a', 'app', '00000000000000e1', g*8, '/in.log', convert_to('a-' || lpad((g-1)::text, 5, '0'), 'UTF8') FROM generate_series(1, 50) g")
	c.Psql("CREATE TABLE inserts (n bigint); INSERT INTO inserts VALUES (0)")
	c.Psql(`CREATE FUNCTION count_ins() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE inserts SET n = n + 1; RETURN NEW; END $$`)
	c.Psql("CREATE TRIGGER count_ins BEFORE INSERT ON lines FOR EACH ROW EXECUTE FUNCTION count_ins()")
	lines := grouptest.Lines("a", 0, 100)
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(3)}, Config{DSN: c.DSN("sslmode=disable")})
	r.Publish(lines[:50]...)
	r.Publish(lines[50:]...)
	r.WaitAck(100, 10*time.Second)
	wantOnce(t, rows(t, c, "lines"), lines)
	if n := c.Psql("SELECT n FROM inserts"); n != "50" {
		t.Errorf("%s rows went to INSERT, want 50 (the table held the first 50)", n)
	}
}

// TestServerDownStallsAndResumes (acceptance 2): the server shut down mid-run
// and later started again, then the cluster restarted: the subscriber is
// fenced with the reason while it is away (never dead-lettered, although
// onFailure is deadLetter and attempts run out), resumes by itself, and
// every line is there once.
func TestServerDownStallsAndResumes(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	lines := grouptest.Lines("d", 0, 120)
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter},
		Config{DSN: c.DSN("sslmode=disable"), Timeout: time.Second})
	r.Publish(lines[:40]...)
	r.WaitAck(40, 10*time.Second)
	c.Stop()
	r.Publish(lines[40:80]...)
	grouptest.WaitFor(t, "the fence", func() bool {
		st, why := r.Q.State()
		return st == feed.Fenced && strings.Contains(why, "postgres connect")
	})
	_, why := r.Q.State()
	t.Logf("stalled: %s", why)
	time.Sleep(100 * time.Millisecond) // many attempts at the cap
	if r.G.Failures() < 3 {
		t.Errorf("failures %d: not retrying", r.G.Failures())
	}
	c.StartServer()
	r.WaitAck(80, 15*time.Second)
	grouptest.WaitFor(t, "live again", func() bool { st, _ := r.Q.State(); return st == feed.Live })

	c.Restart()
	r.Publish(lines[80:]...)
	r.WaitAck(120, 15*time.Second)
	wantOnce(t, rows(t, c, "lines"), lines)
	if n := r.ledger.Len(); n != 0 || r.G.DeadLettered() != 0 {
		t.Errorf("dead letters %d (%d): an unavailable server must hold, never dead-letter", n, r.G.DeadLettered())
	}
}

// TestPoisonFollowsOnFailure (acceptance 3): a row the table rejects (a
// CHECK constraint) is a poison line: under deadLetter it goes to the
// ledger and the others land; under hold the subscriber stays fenced on it
// with the server's reason and nothing is dead-lettered.
func TestPoisonFollowsOnFailure(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	c.Psql(CreateSQL("lines"))
	c.Psql(`ALTER TABLE lines ADD CONSTRAINT no_poison CHECK (position('\x504f49534f4e'::bytea in line) = 0)`)
	t.Run("deadLetter", func(t *testing.T) {
		c.Psql("TRUNCATE lines")
		c.Psql("DROP TABLE IF EXISTS lines_marks") // made at connect: the last run's marks would skip these lines
		r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter},
			Config{DSN: c.DSN("sslmode=disable"), Table: "lines"})
		r.Publish("ok-1", "ok-2", "POISON-3", "ok-4")
		r.WaitAck(4, 10*time.Second)
		wantOnce(t, rows(t, c, "lines"), []string{"ok-1", "ok-2", "ok-4"})
		items, n := r.ledger.List(10)
		if n != 1 || len(items) != 1 || !strings.Contains(items[0].Error, "no_poison") {
			t.Fatalf("ledger %d %+v, want the poison line with the constraint's name", n, items)
		}
	})
	t.Run("hold", func(t *testing.T) {
		c.Psql("TRUNCATE lines")
		c.Psql("DROP TABLE IF EXISTS lines_marks") // made at connect: the last run's marks would skip these lines
		r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.Hold},
			Config{DSN: c.DSN("sslmode=disable"), Table: "lines"})
		r.Publish("ok-1", "POISON-2", "ok-3")
		grouptest.WaitFor(t, "held on the poison line", func() bool {
			st, why := r.Q.State()
			return st == feed.Fenced && strings.Contains(why, "no_poison") && r.G.Failures() >= 4
		})
		if r.Q.AckPoint() != 1 {
			t.Errorf("ack point %d, want 1 (held at the poison line)", r.Q.AckPoint())
		}
		wantOnce(t, rows(t, c, "lines"), []string{"ok-1"})
	})
}

// syncBuf is a log sink tests can read.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// otherCA writes a CA certificate that signed nothing of the server's.
func otherCA(t *testing.T) string {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: "not the server's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "other.crt")
	os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	return p
}

// TestTLSVerifyFull: with sslmode=verify-full and the CA that signed the
// server's certificate the lines land over TLS with a password (the
// literal password WARNs at start, naming the key, and is never logged);
// with a CA that did not sign it the connection fails — fenced with the
// reason, nothing dead-lettered, the password in no log or reason.
func TestTLSVerifyFull(t *testing.T) {
	const pw = "Sup3r-s3cret-pw"
	c := pgtest.Start(t, pgtest.Options{TLS: true, Password: pw})
	logs := &syncBuf{}
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})
	dsn := c.DSN(fmt.Sprintf("password=%s sslmode=verify-full sslrootcert=%s", pw, c.CAFile))
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2)}, Config{DSN: dsn, DSNKey: "processors[pg].dsn", PasswordLiteral: true, Logger: log})
	r.Publish("tls-1", "tls-2")
	r.WaitAck(2, 10*time.Second)
	wantOnce(t, rows(t, c, "lines"), []string{"tls-1", "tls-2"})
	// The sink's connection is TLS (the server says so).
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	var tlsConns int
	conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE s.ssl AND a.client_addr IS NOT NULL").Scan(&tlsConns)
	conn.Close(context.Background())
	if tlsConns < 2 {
		t.Errorf("%d TLS connections, want the sink's and ours", tlsConns)
	}
	if !strings.Contains(logs.String(), "literal password") || !strings.Contains(logs.String(), "processors[pg].dsn") {
		t.Errorf("no WARN naming the key for a literal password:\n%s", logs.String())
	}

	bad := strings.Replace(dsn, c.CAFile, otherCA(t), 1)
	r2 := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter},
		Config{DSN: bad, DSNKey: "processors[pg].dsn", Logger: log})
	r2.Publish("never")
	grouptest.WaitFor(t, "the certificate error", func() bool {
		st, why := r2.Q.State()
		return st == feed.Fenced && strings.Contains(why, "certificate")
	})
	time.Sleep(50 * time.Millisecond)
	_, why := r2.Q.State()
	t.Logf("stalled: %s", why)
	if r2.ledger.Len() != 0 || r2.Q.AckPoint() != 0 {
		t.Errorf("a certificate that does not verify is a connection error (hold), not a dead letter")
	}
	if strings.Contains(why, pw) || strings.Contains(logs.String(), pw) {
		t.Errorf("the password shows:\nreason %s\nlogs %s", why, logs.String())
	}
}

// TestBadDSN: a DSN pgx cannot parse is an error at open that does not
// show the password.
func TestBadDSN(t *testing.T) {
	r := grouptest.New(t, processor.GroupConfig{Name: "pg"})
	_, err := Open(Config{Group: r.G, DSN: "host=x password=hunter22 port=notaport", Table: "t", DSNKey: "processors[pg].dsn"})
	if err == nil || strings.Contains(err.Error(), "hunter22") || !strings.Contains(err.Error(), "processors[pg].dsn") {
		t.Fatalf("err %v", err)
	}
	_, err = Open(Config{Group: r.G, DSN: "postgres://u:hunter22@x:notaport/db", Table: "t", DSNKey: "processors[pg].dsn"})
	if err == nil || strings.Contains(err.Error(), "hunter22") {
		t.Fatalf("err %v", err)
	}
}

// TestMissingTableHolds: without createTable a missing table is the
// engine's state, not the lines' fault: the subscriber is fenced with the
// server's reason and nothing is dead-lettered (onFailure deadLetter,
// attempts run out); once the table exists the lines land.
func TestMissingTableHolds(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	r := newRig(t, processor.GroupConfig{Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter},
		Config{DSN: c.DSN("sslmode=disable"), Table: "later"})
	r.Publish("m-1", "m-2")
	grouptest.WaitFor(t, "the fence", func() bool {
		st, why := r.Q.State()
		return st == feed.Fenced && strings.Contains(why, `relation "later" does not exist`) && r.G.Failures() >= 4
	})
	if r.ledger.Len() != 0 {
		t.Fatalf("%d dead letters for a missing table", r.ledger.Len())
	}
	c.Psql(CreateSQL("later"))
	r.WaitAck(2, 10*time.Second)
	wantOnce(t, rows(t, c, "later"), []string{"m-1", "m-2"})
}

// TestUnverifiedTLSWarns: a DSN to a remote host whose certificate is not
// verified (pgx's default sslmode=prefer, require, disable) is a WARN at
// start naming the key; verify-full, and a socket or loopback host, are not.
func TestUnverifiedTLSWarns(t *testing.T) {
	ca := otherCA(t)
	r := grouptest.New(t, processor.GroupConfig{Name: "pg"})
	for _, c := range []struct {
		dsn  string
		warn bool
	}{
		{"host=db.example user=t", true},
		{"host=db.example user=t sslmode=require", true},
		{"postgres://t@db.example/logs?sslmode=disable", true},
		{"host=db.example user=t sslmode=verify-full sslrootcert=" + ca, false},
		{"host=db.example user=t sslmode=verify-ca sslrootcert=" + ca, false},
		{"host=127.0.0.1 user=t sslmode=disable", false},
		{"host=/run/postgresql user=t", false},
	} {
		logs := &syncBuf{}
		log := hclog.New(&hclog.LoggerOptions{Output: logs})
		s, err := Open(Config{Group: r.G, DSN: c.dsn, Table: "t", DSNKey: "processors[pg].dsn", Logger: log})
		if err != nil {
			t.Fatalf("%s: %v", c.dsn, err)
		}
		s.Close()
		got := strings.Contains(logs.String(), "does not verify the server's certificate") && strings.Contains(logs.String(), "processors[pg].dsn")
		if got != c.warn {
			t.Errorf("%s: warned %v, want %v\n%s", c.dsn, got, c.warn, logs.String())
		}
	}
}
