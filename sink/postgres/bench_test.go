package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tailfeed/feed"
	"tailfeed/internal/testutil/pgtest"
	"tailfeed/overload"
	"tailfeed/processor"
)

// The benchmarks measure lines/s into a private cluster (fsync on) in
// batches of benchBatch lines of benchLineBytes bytes: the sink's
// ProcessBatch next to a plain pgx client sending the same rows, with the
// same statement (the ceiling for the guarantee: ON CONFLICT on the unique
// key), with COPY into a temp table then INSERT … SELECT … ON CONFLICT
// (the alternative the sink did not choose), and with a bare COPY into the
// table (no dedupe at all: the engine's raw ceiling). `make bench` runs
// them (bench/postgres.go).

const (
	benchBatch     = 1000
	benchLineBytes = 100
)

func benchSetup(b *testing.B) (*pgtest.Cluster, *pgx.Conn) {
	b.Helper()
	c := pgtest.Start(b, pgtest.Options{})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN("sslmode=disable"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(ctx) })
	if _, err := conn.Exec(ctx, CreateSQL("lines")); err != nil {
		b.Fatal(err)
	}
	return c, conn
}

// benchLines makes batch i's lines and positions.
func benchLines(i int) ([][]byte, []int64) {
	lines := make([][]byte, benchBatch)
	ends := make([]int64, benchBatch)
	for j := range lines {
		l := []byte(fmt.Sprintf("%08d %08d ", i, j))
		for len(l) < benchLineBytes-1 {
			l = append(l, 'x')
		}
		lines[j] = l
		ends[j] = int64(i*benchBatch+j+1) * benchLineBytes
	}
	return lines, ends
}

func report(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N*benchBatch)/time.Since(start).Seconds(), "lines/s")
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*benchBatch), "ns/line")
}

// BenchmarkPostgresSink: the sink's ProcessBatch (record read, skip check,
// one INSERT … SELECT FROM unnest … ON CONFLICT per batch).
func BenchmarkPostgresSink(b *testing.B) {
	c, _ := benchSetup(b)
	q := feed.NewQueue("pg", 1024, 1<<20, overload.Policy{Kind: overload.Pause})
	g := processor.NewGroup(processor.GroupConfig{Name: "pg", Queue: q, Retry: processor.Retry{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 1}})
	s, err := Open(Config{Group: g, DSN: c.DSN("sslmode=disable"), Table: "lines", Instance: "bench", Timeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batches := make([]*feed.Batch, b.N)
	for i := range batches {
		lines, ends := benchLines(i)
		bt := &feed.Batch{Feed: "app", Path: "/var/log/app.log", Epoch: 0xe1, Positioned: true}
		for j := range lines {
			bt.AppendLine(lines[j], ends[j])
		}
		batches[i] = bt
	}
	b.ResetTimer()
	start := time.Now()
	for _, bt := range batches {
		if n, err := s.ProcessBatch(context.Background(), bt); err != nil || n != benchBatch {
			b.Fatal(n, err)
		}
	}
	report(b, start)
}

// BenchmarkPlainPgxInsert: a plain pgx client, the sink's statement.
func BenchmarkPlainPgxInsert(b *testing.B) {
	_, conn := benchSetup(b)
	ctx := context.Background()
	sql := insertSQL("lines")
	data := benchData(b.N)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := conn.Exec(ctx, sql, "bench", "app", "00000000000000e1", "/var/log/app.log", data[i].ends, data[i].lines, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	report(b, start)
}

// BenchmarkPlainPgxCopyTemp: COPY into a temp table, then INSERT … SELECT …
// ON CONFLICT DO NOTHING, in one transaction per batch.
func BenchmarkPlainPgxCopyTemp(b *testing.B) {
	_, conn := benchSetup(b)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE stage (position bigint, line bytea) ON COMMIT DELETE ROWS`); err != nil {
		b.Fatal(err)
	}
	data := benchData(b.N)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		d := data[i]
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stage"}, []string{"position", "line"}, pgx.CopyFromSlice(len(d.lines), func(j int) ([]any, error) {
			return []any{d.ends[j], d.lines[j]}, nil
		})); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO lines (instance, feed, epoch, position, path, line, inserted_at)
SELECT $1, $2, $3, position, $4, line, now() FROM stage ON CONFLICT (instance, feed, epoch, position) DO NOTHING`,
			"bench", "app", "00000000000000e1", "/var/log/app.log"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	report(b, start)
}

// BenchmarkPlainPgxCopy: a bare COPY of the same rows into the table (no
// ON CONFLICT: a re-delivery would fail the batch): the raw ceiling.
func BenchmarkPlainPgxCopy(b *testing.B) {
	_, conn := benchSetup(b)
	ctx := context.Background()
	data := benchData(b.N)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		d := data[i]
		now := time.Now()
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"lines"}, []string{"instance", "feed", "epoch", "position", "path", "line", "inserted_at"},
			pgx.CopyFromSlice(len(d.lines), func(j int) ([]any, error) {
				return []any{"bench", "app", "00000000000000e1", d.ends[j], "/var/log/app.log", d.lines[j], now}, nil
			})); err != nil {
			b.Fatal(err)
		}
	}
	report(b, start)
}

type benchBatchData struct {
	lines [][]byte
	ends  []int64
}

func benchData(n int) []benchBatchData {
	out := make([]benchBatchData, n)
	for i := range out {
		out[i].lines, out[i].ends = benchLines(i)
	}
	return out
}
