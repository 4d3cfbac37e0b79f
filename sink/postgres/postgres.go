// Package postgres is the `postgres` sink (DESIGN §11): every line becomes
// one row (instance, feed, epoch, position, path, line, inserted_at) of a
// table whose unique key is (instance, feed, epoch, position), inserted
// with ON CONFLICT DO NOTHING — the inbox pattern: a re-delivery (after a
// crash, a restart, a catch-up) is a no-op, so every line lands once, with
// or without exactlyOnce.
//
// One transaction per batch: the batch's rows go in one COPY into the
// table (one statement, its own transaction: all rows or none). When the
// table holds one of them already (unique_violation: a re-delivery the
// record did not cover, e.g. a table written by an earlier run whose
// record this connection has not read, or rows restored from a dump) the
// COPY commits nothing and the batch goes again as one INSERT … SELECT
// FROM unnest($positions, $lines) … ON CONFLICT DO NOTHING, which skips
// what is there. The lines count as processed when the commit returned,
// i.e. when the server acknowledged it durably (the server's
// synchronous_commit decides what that means; the default, on, is flushed
// WAL). inserted_at is the sink's clock when it sent the batch. Measured
// on this project's 2-core machine (sink/postgres/bench_test.go, 1,000
// lines of 100 bytes a batch): INSERT … SELECT FROM unnest 41–51 k
// lines/s, COPY into a temp table + INSERT … SELECT … ON CONFLICT 37–40 k,
// a bare COPY 60–77 k (and the sink, COPY first, 59–63 k): the COPY-first
// path keeps the inbox guarantee at the COPY's speed.
//
// The sink's record is max(position) per (instance, feed, epoch), and the
// marks table <table>_marks (instance, feed, epoch, position, updated_at;
// primary key (instance, feed, epoch)) for what max(position) cannot see:
// the lines the sink finished without a row — filtered out by match or
// exclude, dead-lettered, or released by the group — after the last row of
// a batch. A batch whose lines end in such lines (or that holds none, all
// of it finished without a row) writes its end into the marks table in the
// same transaction as its rows (one pipelined INSERT … ON CONFLICT plus the
// mark's upsert, committed together); a batch ending in a row writes no
// mark (the common case keeps the plain COPY). The record of an epoch is
// the greater of the two: read from the tables for each epoch the first
// time a batch of it comes after a (re)connect; leading lines of a batch at
// or below it are skipped (AlreadyApplied) without a round trip. The record
// of an epoch the sink wrote itself is kept in memory. A replayed dead
// letter never moves it. Lines the sink released itself (POST
// /admin/release while the server was down) cannot be marked: it gives them
// up with GiveUpTail, and the daemon keeps their range
// (dataDir/state/released.json) for the catch-up at the next start.
//
// DoneThrough (DESIGN §11 "A restored sink is caught up from the input")
// reports that record for every epoch of the feed at start, on its own
// connection: the epochs of the rows by a loose index scan of the primary
// key (one index probe per epoch, whatever the table's size), and the marks
// table's rows. A table restored from a dump (both tables, one snapshot) is
// then behind the pointer, and the daemon re-reads the gap. Without
// createTable the sink makes the marks table next to an existing table at
// connect; when it cannot (no CREATE on the schema) it warns once and
// writes no marks (a run ending in filtered
// or dead-lettered lines is then re-read from its last row at every start:
// duplicates for the other subscribers, never a gap).
//
// Failures (DESIGN §11): a connection failure, a timeout (timeoutMillis per
// batch) or an unavailable server is retried by the sink itself at the
// group's backoff, up to the cap and then at the cap, whatever onFailure
// says: the subscriber is fenced with the reason (the feed stalls; nothing
// lost, nothing dead-lettered) and lifted when a batch commits. Only an
// error the server gives for the rows (data exceptions, constraint
// violations such as a CHECK the table adds, insufficient privilege,
// program limits: SQLSTATE classes 22, 23, 54 and 42501) goes back to the
// group, which retries it per `retry`, then finds the failing line and
// holds or dead-letters it per onFailure.
//
// TLS and authentication are the DSN's (sslmode, sslrootcert, sslcert,
// password, …: libpq's keywords, parsed by pgx). The DSN's password is a
// secret: no log line, status or dead letter shows it; a DSN that holds a
// literal password is a WARN at start naming the key (not one whose
// password comes from a ${VAR} reference, PGPASSWORD or a .pgpass file:
// Config.PasswordLiteral).
package postgres

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tailfeed/feed"
	"tailfeed/internal/redact"
	"tailfeed/processor"
)

// Config configures a Sink.
type Config struct {
	Group       processor.Host
	DSN         string
	Table       string // [schema.]table, lower-case
	CreateTable bool
	Instance    string        // the sidecar's instance (DESIGN §11)
	Feed        string        // the feed it reads (DoneThrough's marks are this feed's)
	Timeout     time.Duration // per batch (and per connect)
	// DSNKey names the DSN in the start WARN (processors[i].dsn).
	DSNKey string
	Logger hclog.Logger
	// PasswordLiteral: the config file itself writes the DSN's password
	// (Settings.PasswordLiteral): a WARN at start.
	PasswordLiteral bool
}

// Sink is the postgres sink. Its methods run on the group goroutine.
type Sink struct {
	cfg     Config
	h       processor.Host
	log     hclog.Logger
	connCfg *pgx.ConnConfig
	conn    *pgx.Conn
	table   string // quoted
	ident   pgx.Identifier
	insert  string
	hide    []string // what no error may show (the password)

	marksIdent pgx.Identifier // <table>_marks
	marksTable string         // quoted
	hasMarks   bool           // the marks table exists (checked at each connect)
	warnedMark bool           // its absence was logged

	// record: max(position) per epoch of this instance's feed, read once
	// per epoch and connection (missing: not read yet).
	record map[recKey]int64
	// scratch
	pos   []int64
	lines [][]byte
}

type recKey struct {
	feed  string
	epoch uint64
}

// Open parses the DSN; it does not connect (the first batch does, and
// waits for a server that is down, fenced with the reason).
func Open(cfg Config) (*Sink, error) {
	if cfg.Group == nil {
		return nil, errors.New("postgres: no group")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = cfg.Group.Logger()
	}
	s := &Sink{cfg: cfg, h: cfg.Group, log: log, record: map[recKey]int64{}}
	s.hide = dsnSecrets(cfg.DSN)
	cc, err := pgx.ParseConfig(cfg.DSN)
	if err != nil {
		// pgx's parse errors may quote the DSN: say only what kind it is.
		return nil, fmt.Errorf("postgres: %s: cannot parse the connection string: %s", cfg.DSNKey, s.mask(DSNProblem(err, cfg.DSN)))
	}
	if cc.Password != "" {
		s.hide = append(s.hide, cc.Password) // from the file, the environment or a .pgpass file alike
	}
	if cfg.PasswordLiteral {
		log.Warn("the postgres DSN holds a literal password; prefer a ${ENV} reference or a .pgpass file", "key", cfg.DSNKey)
	}
	if host, ok := unverified(cc); ok {
		log.Warn("the postgres DSN does not verify the server's certificate (sslmode is not verify-full or verify-ca): the password and the lines may go to whoever answers; set sslmode=verify-full and sslrootcert",
			"key", cfg.DSNKey, "host", host)
	}
	if cc.ConnectTimeout == 0 || cc.ConnectTimeout > cfg.Timeout {
		cc.ConnectTimeout = cfg.Timeout
	}
	// A cached plan would break once the table is recreated (restore).
	cc.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	s.connCfg = cc
	parts := strings.Split(cfg.Table, ".")
	s.ident = pgx.Identifier(parts)
	s.table = s.ident.Sanitize()
	s.insert = insertSQL(s.table)
	s.marksIdent = MarksIdent(parts)
	s.marksTable = s.marksIdent.Sanitize()
	// No connection yet: the first batch connects (a server that is down
	// then fences the subscriber with the reason), so a slow or
	// unreachable server never delays the daemon's start.
	return s, nil
}

// insertSQL inserts one batch: the batch's feed, epoch and path once, its
// positions and lines as two arrays.
func insertSQL(table string) string {
	return `INSERT INTO ` + table + ` (instance, feed, epoch, position, path, line, inserted_at)
SELECT $1, $2, $3, u.p, $4, u.l, $7 FROM unnest($5::bigint[], $6::bytea[]) AS u(p, l)
ON CONFLICT (instance, feed, epoch, position) DO NOTHING`
}

// CreateSQL is the table createTable makes.
func CreateSQL(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
	instance text NOT NULL,
	feed text NOT NULL,
	epoch text NOT NULL,
	position bigint NOT NULL,
	path text NOT NULL,
	line bytea NOT NULL,
	inserted_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (instance, feed, epoch, position))`
}

// maxIdent is PostgreSQL's identifier limit in bytes (NAMEDATALEN - 1): a
// longer name is truncated to it.
const maxIdent = 63

// MarksIdent is the marks table of a table given as its [schema.]table
// parts: <table>_marks in the same schema, cut to PostgreSQL's 63 bytes as
// the server cuts it (the name existing deployments have). Only where that
// cut is the table's own name (a 63-byte table name) is it the table's
// first 48 bytes, '_', 8 hex digits of the SHA-256 of the table's name and
// _marks: 63 bytes, never the table.
func MarksIdent(parts []string) pgx.Identifier {
	m := append(pgx.Identifier{}, parts...)
	t := m[len(m)-1]
	if name := t + "_marks"; len(name) <= maxIdent || name[:maxIdent] != t {
		m[len(m)-1] = name[:min(len(name), maxIdent)]
		return m
	}
	sum := sha256.Sum256([]byte(t))
	tag := "_" + hex.EncodeToString(sum[:4]) + "_marks"
	m[len(m)-1] = t[:maxIdent-len(tag)] + tag
	return m
}

// MarksSQL is the marks table createTable makes next to table (quoted
// names): the end of the lines finished without a row, per (instance,
// feed, epoch).
func MarksSQL(marks string) string {
	return `CREATE TABLE IF NOT EXISTS ` + marks + ` (
	instance text NOT NULL,
	feed text NOT NULL,
	epoch text NOT NULL,
	position bigint NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (instance, feed, epoch))`
}

// markSQL moves a mark forward (never back).
func (s *Sink) markSQL() string {
	return `INSERT INTO ` + s.marksTable + ` AS m (instance, feed, epoch, position, updated_at) VALUES ($1, $2, $3, $4, now())
ON CONFLICT (instance, feed, epoch) DO UPDATE SET position = greatest(m.position, excluded.position), updated_at = excluded.updated_at`
}

// open opens a connection, creates the tables when asked and reports
// whether the marks table exists.
func (s *Sink) open(ctx context.Context) (*pgx.Conn, bool, error) {
	c, err := pgx.ConnectConfig(ctx, s.connCfg)
	if err != nil {
		return nil, false, s.secret(fmt.Errorf("postgres connect: %w", err))
	}
	if s.cfg.CreateTable {
		for _, q := range []string{CreateSQL(s.table), MarksSQL(s.marksTable)} {
			if _, err := c.Exec(ctx, q); err != nil {
				c.Close(context.Background())
				return nil, false, s.secret(fmt.Errorf("postgres create table %s: %w", s.cfg.Table, err))
			}
		}
	}
	var has, hasTable bool
	if err := c.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL`, s.marksTable, s.table).Scan(&has, &hasTable); err != nil {
		c.Close(context.Background())
		return nil, false, s.secret(fmt.Errorf("postgres connect: %w", err))
	}
	if !has && hasTable {
		// The table made by the operator (createTable false) without its
		// marks table: tailfeed's own bookkeeping, made next to it when
		// the role may (else noMarks warns). Without it a run ending in
		// filtered or dead-lettered lines is re-read at every start.
		if _, err := c.Exec(ctx, MarksSQL(s.marksTable)); err == nil {
			has = true
			s.log.Info("postgres marks table created next to the table", "table", s.marksIdent.Sanitize())
		} else {
			s.log.Debug("postgres marks table could not be created", "error", s.secret(err))
		}
	}
	return c, has, nil
}

// connect opens the connection (and creates the table when asked).
func (s *Sink) connect(ctx context.Context) error {
	if s.conn != nil && !s.conn.IsClosed() {
		return nil
	}
	s.drop()
	c, has, err := s.open(ctx)
	if err != nil {
		return setupError{err}
	}
	s.conn, s.hasMarks = c, has
	clear(s.record) // the table may have been restored meanwhile
	return nil
}

// noMarks warns, once, that the marks table is missing.
func (s *Sink) noMarks() {
	if s.warnedMark {
		return
	}
	s.warnedMark = true
	s.log.Warn("postgres marks table missing: lines filtered out or dead-lettered after a batch's last row are not recorded, so a run ending in them is re-read from its last row at the next start (duplicates for the other subscribers); create it, or set createTable: true",
		"table", s.marksIdent.Sanitize(), "sql", MarksSQL(s.marksTable))
}

// drop closes the connection after an error that may have left it unusable.
func (s *Sink) drop() {
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.conn.Close(ctx)
		cancel()
		s.conn = nil
	}
}

// ProcessBatch inserts b's lines in one transaction. It returns len(b.Lines)
// when they are committed (or released), and an error only for rows the
// server rejects (the group's retry and onFailure decide) or when ctx ended.
func (s *Sink) ProcessBatch(ctx context.Context, b *feed.Batch) (int, error) {
	n := len(b.Lines)
	if n == 0 {
		// Lines finished without a row (filtered, dead-lettered,
		// released): their end goes to the marks table.
		if !b.Positioned || b.Done() <= 0 {
			return 0, nil
		}
	}
	rp := s.h.Retry()
	for attempt := 1; ; attempt++ {
		done, err := s.try(ctx, b)
		if err == nil {
			s.h.Unfence()
			return n, nil
		}
		if ctx.Err() != nil {
			return done, ctx.Err()
		}
		if rejected(err) {
			return done, err
		}
		s.drop() // unknown state: reconnect (the retry is idempotent)
		s.h.Fail()
		s.h.Fence(err)
		rel, ok := s.h.Wait(ctx, rp.Backoff(attempt))
		if !ok {
			return done, ctx.Err()
		}
		if rel != nil {
			s.log.Warn("postgres batch released on purpose", "lines", n-done)
			s.h.GiveUpTail(rel, uint64(n-done))
			return n, nil
		}
	}
}

// try inserts the lines of b the record does not hold yet, once.
func (s *Sink) try(ctx context.Context, b *feed.Batch) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.connect(ctx); err != nil {
		return 0, err
	}
	epoch := fmt.Sprintf("%016x", b.Epoch)
	i := 0
	mark := int64(-1) // the end of the lines finished without a row, to record (-1: none)
	if b.Positioned {
		k := recKey{b.Feed, b.Epoch}
		applied, ok := s.record[k]
		if !ok {
			var err error
			if applied, err = s.readRecord(ctx, b.Feed, epoch); err != nil {
				return 0, setupError{err} // the sink's own record, no row's (review 26e D)
			}
			s.record[k] = applied
		}
		for i < len(b.Lines) && b.AlreadyApplied(i, b.Epoch, applied) {
			i++
		}
		// The lines the group finished without handing them here
		// (filtered, dead-lettered, released) after the last line of b.
		if end := b.Done(); end > applied && end > b.LastEnd() {
			if s.hasMarks {
				mark = end
			} else {
				s.noMarks()
			}
		}
		if i == len(b.Lines) {
			if mark >= 0 {
				if _, err := s.conn.Exec(ctx, s.markSQL(), s.cfg.Instance, b.Feed, epoch, mark); err != nil {
					return i, s.secret(fmt.Errorf("postgres mark in %s (position %d): %w", s.marksIdent.Sanitize(), mark, err))
				}
				s.record[k] = mark
			}
			return i, nil
		}
	}
	s.pos, s.lines = append(s.pos[:0], b.Ends[i:]...), append(s.lines[:0], b.Lines[i:]...)
	path := b.Path
	if !utf8.ValidString(path) {
		path = strings.ToValidUTF8(path, "\uFFFD")
	}
	now := time.Now()
	var err error
	if mark >= 0 {
		err = s.insertMarked(ctx, b.Feed, epoch, path, now, mark)
	} else {
		err = s.copyRows(ctx, b.Feed, epoch, path, now)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			// Some rows are there already (a re-delivery the record did not
			// cover): nothing of the COPY was committed; the inbox statement
			// skips what the table holds.
			_, err = s.conn.Exec(ctx, s.insert, s.cfg.Instance, b.Feed, epoch, path, s.pos, s.lines, now)
		}
	}
	if err != nil {
		clear(s.lines)
		return i, s.secret(fmt.Errorf("postgres insert into %s (%d lines, positions %d-%d): %w",
			s.cfg.Table, len(s.pos), s.pos[0], s.pos[len(s.pos)-1], err))
	}
	clear(s.lines) // keep no views into the batch
	if b.Positioned {
		s.record[recKey{b.Feed, b.Epoch}] = max(b.Ends[len(b.Ends)-1], mark)
	}
	return len(b.Lines), nil
}

// readRecord reads the record of (feed, epoch) from the tables: the
// greater of the rows' max(position) and the mark (-1: none).
func (s *Sink) readRecord(ctx context.Context, feedName, epoch string) (int64, error) {
	q := `SELECT max(position) FROM ` + s.table + ` WHERE instance = $1 AND feed = $2 AND epoch = $3`
	if s.hasMarks {
		q = `SELECT greatest((` + q + `), (SELECT position FROM ` + s.marksTable + ` WHERE instance = $1 AND feed = $2 AND epoch = $3))`
	}
	var max *int64
	if err := s.conn.QueryRow(ctx, q, s.cfg.Instance, feedName, epoch).Scan(&max); err != nil {
		return 0, s.secret(fmt.Errorf("postgres read record of %s: %w", s.cfg.Table, err))
	}
	if max == nil {
		return -1, nil
	}
	return *max, nil
}

// insertMarked inserts the rows in s.pos and s.lines and moves the mark to
// mark, in one transaction: the two statements go pipelined, with one Sync,
// which PostgreSQL runs as one implicit transaction (both or neither).
func (s *Sink) insertMarked(ctx context.Context, feedName, epoch, path string, now time.Time, mark int64) error {
	var pb pgx.Batch
	pb.Queue(s.insert, s.cfg.Instance, feedName, epoch, path, s.pos, s.lines, now)
	pb.Queue(s.markSQL(), s.cfg.Instance, feedName, epoch, mark)
	return s.conn.SendBatch(ctx, &pb).Close()
}

// DoneThrough implements processor.DoneThrougher (DESIGN §11): the record
// of every epoch of the feed this instance has rows or a mark for, read
// on a connection of its own. A missing table is no record.
func (s *Sink) DoneThrough(ctx context.Context) ([]processor.Mark, error) {
	if s.cfg.Feed == "" {
		return nil, errors.New("postgres: no feed")
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, hasMarks, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close(context.Background())
	var hasTable bool
	if err := c.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.table).Scan(&hasTable); err != nil {
		return nil, s.secret(fmt.Errorf("postgres read record of %s: %w", s.cfg.Table, err))
	}
	if !hasTable {
		return nil, nil
	}
	got := map[string]int64{}
	// A loose index scan of the primary key: one probe per epoch.
	q := `WITH RECURSIVE e(epoch) AS (
	SELECT min(epoch) FROM ` + s.table + ` WHERE instance = $1 AND feed = $2
	UNION ALL
	SELECT (SELECT min(epoch) FROM ` + s.table + ` WHERE instance = $1 AND feed = $2 AND epoch > e.epoch) FROM e WHERE e.epoch IS NOT NULL)
SELECT epoch, (SELECT max(position) FROM ` + s.table + ` WHERE instance = $1 AND feed = $2 AND epoch = e.epoch) FROM e WHERE epoch IS NOT NULL`
	if hasMarks {
		q += ` UNION ALL SELECT epoch, position FROM ` + s.marksTable + ` WHERE instance = $1 AND feed = $2`
	}
	rows, err := c.Query(ctx, q, s.cfg.Instance, s.cfg.Feed)
	if err != nil {
		return nil, s.secret(fmt.Errorf("postgres read record of %s: %w", s.cfg.Table, err))
	}
	var (
		ep  string
		pos int64
	)
	_, err = pgx.ForEachRow(rows, []any{&ep, &pos}, func() error {
		if p, ok := got[ep]; !ok || pos > p {
			got[ep] = pos
		}
		return nil
	})
	if err != nil {
		return nil, s.secret(fmt.Errorf("postgres read record of %s: %w", s.cfg.Table, err))
	}
	out := make([]processor.Mark, 0, len(got))
	for ep, pos := range got {
		e, err := strconv.ParseUint(ep, 16, 64)
		if err != nil || len(ep) != 16 {
			s.log.Warn("postgres rows with an epoch that is not 16 hex digits are not this sink's; ignored", "epoch", ep)
			continue
		}
		out = append(out, processor.Mark{Epoch: e, Position: pos})
	}
	slices.SortFunc(out, func(a, b processor.Mark) int { return cmp.Compare(a.Epoch, b.Epoch) })
	return out, nil
}

var _ processor.DoneThrougher = (*Sink)(nil)

// setupError is a failure to connect, to make the tables or to read the
// sink's record: never the rows' (a role refused CONNECT, CREATE or SELECT
// is an unavailable engine, retried at the cap whatever onFailure says:
// DESIGN §11; audit 8e).
type setupError struct{ err error }

func (e setupError) Error() string { return e.err.Error() }
func (e setupError) Unwrap() error { return e.err }

// rejected reports whether the server refused the rows themselves (onFailure
// applies) rather than being unavailable (retried at the cap).
func rejected(err error) bool {
	var se setupError
	if errors.As(err, &se) {
		return false
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) != 5 {
		return false
	}
	switch pe.Code[:2] {
	case "22", "23", "54": // data exception, integrity constraint, program limit
		return true
	}
	return pe.Code == "42501" // insufficient privilege
}

// unverified reports a connection to a host that is neither a Unix socket
// nor loopback (DESIGN §11: a certificate is verified, or the sink says it
// is not) without a verified certificate: sslmode disable, allow, prefer
// (pgx's default) or require. verify-ca (pgx checks the chain itself) and
// verify-full count as verified.
func unverified(cc *pgx.ConnConfig) (string, bool) {
	cfgs := append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port, TLSConfig: cc.TLSConfig}}, cc.Fallbacks...)
	for _, f := range cfgs {
		if strings.HasPrefix(f.Host, "/") || f.Host == "localhost" {
			continue
		}
		if ip := net.ParseIP(f.Host); ip != nil && ip.IsLoopback() {
			continue
		}
		if f.TLSConfig == nil || (f.TLSConfig.InsecureSkipVerify && f.TLSConfig.VerifyPeerCertificate == nil) {
			return f.Host, true
		}
	}
	return "", false
}

// copyColumns are the columns COPY fills.
var copyColumns = []string{"instance", "feed", "epoch", "position", "path", "line", "inserted_at"}

// copyRows COPYs the rows in s.pos and s.lines into the table: one
// statement, its own transaction (all rows or none). It fails with
// unique_violation (23505) when the table holds one of them already.
func (s *Sink) copyRows(ctx context.Context, feedName, epoch, path string, now time.Time) error {
	row := []any{s.cfg.Instance, feedName, epoch, int64(0), path, []byte(nil), now}
	_, err := s.conn.CopyFrom(ctx, s.ident, copyColumns, pgx.CopyFromSlice(len(s.pos), func(j int) ([]any, error) {
		row[3], row[5] = s.pos[j], s.lines[j]
		return row, nil
	}))
	return err
}

// Close closes the connection.
func (s *Sink) Close() error {
	s.drop()
	return nil
}

// dsnSecrets finds the password of a URL DSN as written (the keyword form's
// is pgx's parsed Password).
func dsnSecrets(dsn string) []string {
	var out []string
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = append(out, pw)
			if esc := (&url.URL{User: url.UserPassword("", pw)}).String(); len(esc) > 3 {
				out = append(out, esc[3:len(esc)-1])
			}
		}
	}
	// keyword form: password=... (quoted or not)
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "password="); ok && len(v) > 0 {
			out = append(out, strings.Trim(v, "'"))
		}
	}
	return out
}

// mask hides the DSN's secrets (and any URL's userinfo) in a text.
func (s *Sink) mask(msg string) string {
	msg = redact.URL(msg)
	for _, p := range s.hide {
		if p != "" {
			msg = strings.ReplaceAll(msg, p, redact.Mask)
		}
	}
	return msg
}

// secret returns err with the DSN's secrets masked in its text (status,
// logs and dead letters show error texts); errors.As still sees the cause.
// pgx lists each address it tried on a line of its own: one line here.
func (s *Sink) secret(err error) error {
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n\t", "; ")
	return &redact.Error{Msg: s.mask(strings.ReplaceAll(msg, "\n", " ")), Err: err}
}
