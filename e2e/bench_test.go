package e2e

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkFileToFile is end-to-end throughput of the built binary: a COMMITTED
// feed reading 1,000,000 lines of 100 bytes (terminator included) into a file
// sink (fsync never), timed from process start to the feed settled (every line
// written and the pointer committed and synced). Run it with
//
//	go test -run '^$' -bench FileToFile -benchtime 3x ./e2e
func BenchmarkFileToFile(b *testing.B) {
	const lines, lineBytes = 1_000_000, 100
	dir := b.TempDir()
	input := dir + "/in.log"
	writeFixedLines(b, input, lines, lineBytes)
	b.SetBytes(lines * lineBytes)
	b.ResetTimer()
	var total time.Duration
	for range b.N {
		b.StopTimer()
		e := newEnv(b, strings.Replace(committedConfig, "path: ./in.log", "path: "+input, 1))
		b.StartTimer()
		d := e.spawn()
		start := time.Now()
		if err := d.waitReady(60 * time.Second); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Minute)
		for {
			r, err := d.status()
			if err == nil && r.Settled && r.Feeds[0].Sequence == lines {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("not settled with %d lines in 5 minutes", lines)
			}
			time.Sleep(5 * time.Millisecond)
		}
		total += time.Since(start)
		b.StopTimer()
		if got := fileSize(b, e.path("out.log")); got != lines*lineBytes {
			b.Fatalf("output has %d bytes, want %d", got, lines*lineBytes)
		}
		d.stop()
		b.StartTimer()
	}
	b.ReportMetric(float64(lines)*float64(b.N)/total.Seconds(), "lines/s")
}

// writeFixedLines writes n lines of size bytes each ('\n' included).
func writeFixedLines(tb testing.TB, path string, n, size int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	line := []byte(strings.Repeat("x", size-1) + "\n")
	for i := range n {
		itoa(line[:12], i)
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// itoa writes i zero-padded into buf.
func itoa(buf []byte, i int) {
	for j := len(buf) - 1; j >= 0; j-- {
		buf[j] = byte('0' + i%10)
		i /= 10
	}
}
