//go:build unix

package file

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkGlobRescan is one rescan (scanIntervalMillis) of a glob feed
// tracking 10,000 caught-up, closed files in 100 directories: the idle
// cost that recurs every interval.
func BenchmarkGlobRescan(b *testing.B) {
	g := rescanFixture(b, 10000)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		g.scan(g.ctx)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
	b.StopTimer()
	if len(g.queue) != 0 {
		b.Fatalf("%d unchanged files queued", len(g.queue))
	}
}

// cpuTime is the process's CPU time (user + system): on a shared machine
// the wall time of a benchmark says little.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGlobHousekeep is one housekeeping pass (every second while
// nothing waits for a slot) of a glob feed tracking 10,000 caught-up,
// closed files.
func BenchmarkGlobHousekeep(b *testing.B) {
	g := rescanFixture(b, 10000)
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		g.lastHK = time.Time{}
		g.housekeep(g.ctx)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e3, "cpu-µs/op")
}
