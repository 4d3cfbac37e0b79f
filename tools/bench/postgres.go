package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// postgresBench runs case 7: lines/s into a private PostgreSQL cluster
// (sink/postgres/bench_test.go starts it from the Debian postgresql
// package; without it the row says so): the postgres sink next to a plain
// pgx client sending the same rows — with the sink's inbox statement
// (INSERT … ON CONFLICT DO NOTHING) and with a bare COPY, the engine's
// ceiling for this library. Targets (issue 14): ≥ 0.5× the ceiling and
// ≥ 100,000 lines/s.
func postgresBench(t *table) error {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "^Benchmark(PostgresSink|PlainPgxInsert|PlainPgxCopy)$",
		"-benchtime", "300x", "-count", "1", "./sink/postgres")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go test -bench ./sink/postgres: %w\n%s", err, out)
	}
	rates := map[string]float64{}
	var rows []row
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			if strings.Contains(line, "pgtest:") {
				t.add(row{num: "7", name: "postgres", detail: strings.TrimSpace(line)})
			}
			continue
		}
		name := strings.SplitN(f[0], "-", 2)[0]
		for i := 2; i+1 < len(f); i += 2 {
			if f[i+1] == "lines/s" {
				v, _ := strconv.ParseFloat(f[i], 64)
				rates[name] = v
			}
		}
		rows = append(rows, row{num: "7", name: "postgres " + strings.TrimPrefix(name, "Benchmark"), linesPerSec: fmtRate(rates[name]),
			detail: "1,000 lines of 100 B per batch, fsync on"})
	}
	ceiling := rates["BenchmarkPlainPgxCopy"]
	for _, r := range rows {
		if r.name == "postgres PostgresSink" && ceiling > 0 {
			v := rates["BenchmarkPostgresSink"]
			r.xPlain = fmt.Sprintf("%.2f", v/ceiling)
			r.target = verdict("≥ 0.5× plain COPY, ≥ 100 k/s", v >= ceiling/2 && v >= 100_000)
		}
		t.add(r)
	}
	return nil
}
