package file_test

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"tailfeed/source/file"
)

// Append-to-delivery latency: one line is appended while the feed is idle
// and caught up; the time until the subscriber's Process sees it is one
// sample. At least 200 samples (b.N when larger), spaced by 1–3 ms of
// quiet so that each append finds the source asleep. Reported as p50/p99 in
// microseconds.
//
//	go test -run '^$' -bench AppendToDelivery -benchtime 1x ./source/file
//
// "fsnotify" wakes on inotify events; "poll" disables them (Config.NoNotify,
// as TAILFEED_NO_FSNOTIFY=1 does for the daemon), so the latency is bounded
// by the default poll interval of 250 ms.
func BenchmarkAppendToDelivery(b *testing.B) {
	for _, mode := range []struct {
		name     string
		noNotify bool
	}{{"fsnotify", false}, {"poll", true}} {
		b.Run(mode.name, func(b *testing.B) {
			p50, p99, max := appendLatency(b, mode.noNotify, max(b.N, 200))
			b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
			b.ReportMetric(float64(max.Microseconds()), "max-µs")
		})
	}
}

func appendLatency(b *testing.B, noNotify bool, n int) (p50, p99, worst time.Duration) {
	seen := make(chan time.Time, 1)
	r := newRig(b, "", rigOpts{strategy: file.Committed, noNotify: noNotify, poll: 250 * time.Millisecond, notify: seen})
	r.start()
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	lat := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := range n {
		time.Sleep(time.Millisecond + rand.N(2*time.Millisecond))
		t0 := time.Now()
		if _, err := f.WriteString("latency " + strconv.Itoa(i) + "\n"); err != nil {
			b.Fatal(err)
		}
		select {
		case t1 := <-seen:
			lat = append(lat, t1.Sub(t0))
		case <-time.After(10 * time.Second):
			b.Fatalf("line %d not delivered within 10s", i)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
}

// Idle CPU: a COMMITTED feed with fsnotify, caught up, with nothing to do,
// for TAILFEED_IDLE_SECONDS (default 30) seconds; the process's user+system
// CPU time over that span as a percentage of one core ("cpu-%"). The whole
// test process is measured, Go runtime included.
//
//	go test -run '^$' -bench IdleCPU -benchtime 1x ./source/file
func BenchmarkIdleCPU(b *testing.B) {
	secs := 30
	if v, err := strconv.Atoi(os.Getenv("TAILFEED_IDLE_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	r := newRig(b, "", rigOpts{strategy: file.Committed, poll: 250 * time.Millisecond, rotateWait: 5 * time.Second})
	appendTo(b, r.path, numbered("warm", 0, 1000)...)
	r.start()
	r.waitLines(1000)
	r.waitSettled()
	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		c0, t0 := cpuTime(), time.Now()
		time.Sleep(time.Duration(secs) * time.Second)
		c1, t1 := cpuTime(), time.Now()
		cpu = c1 - c0
		b.ReportMetric(100*cpu.Seconds()/t1.Sub(t0).Seconds(), "cpu-%")
	}
	b.StopTimer()
	if st := r.src.State(); st != file.CaughtUp {
		b.Fatalf("state %s after idling", st)
	}
	b.Logf("idle %ds: %v CPU", secs, cpu)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
