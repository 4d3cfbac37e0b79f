package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// goBenchmarks runs case 6: the Go micro-benchmarks of the hot path.
func goBenchmarks(t *table) error {
	sets := []struct{ pkg, pattern string }{
		{"./source/file", "^BenchmarkSplit$"},
		{"./feed", "^BenchmarkPublishDispatch$"},
		{"./pointer", "^Benchmark(Store|Commit)$"},
		{"./sink/nats", "^BenchmarkNatsThroughput$"},   // lines/s into JetStream: the sink next to a plain nats.go client
		{"./e2e", "^BenchmarkNatsDaemon$"},             // the built daemon into JetStream end to end, at least once and exactlyOnce
		{"./sink/kafka", "^BenchmarkKafkaThroughput$"}, // into kfake over TCP, next to a plain kgo producer
	}
	for _, s := range sets {
		cmd := exec.Command("go", "test", "-run", "^$", "-bench", s.pattern, "-benchmem", "-count", "1", s.pkg)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("go test -bench %s %s: %w\n%s", s.pattern, s.pkg, err, out)
		}
		found := 0
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if r, ok := benchRow(sc.Text()); ok {
				t.add(r)
				found++
			}
		}
		if found == 0 {
			t.add(row{num: "6", name: s.pkg + " " + s.pattern, detail: "no benchmark found"})
		}
	}
	return nil
}

// benchRow turns a `go test -bench` result line into a table row.
func benchRow(line string) (row, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return row{}, false
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return row{}, false
	}
	r := row{num: "6", name: "go bench " + f[0]}
	metrics := map[string]float64{}
	var detail []string
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			continue
		}
		metrics[f[i+1]] = v
		if f[i+1] != "MB/s" && f[i+1] != "lines/s" {
			detail = append(detail, f[i]+" "+f[i+1])
		}
	}
	r.detail = strings.Join(detail, ", ")
	if v, ok := metrics["MB/s"]; ok {
		r.mbPerSec = fmt.Sprintf("%.0f", v)
	}
	switch {
	case metrics["lines/s"] > 0:
		r.linesPerSec = fmtRate(metrics["lines/s"])
	case metrics["ns/line"] > 0:
		r.linesPerSec = fmtRate(1e9 / metrics["ns/line"])
	}
	if v, ok := metrics["allocs/line"]; ok {
		r.target = verdict("< 0.01 allocs/line", v < 0.01)
	}
	return r, true
}
