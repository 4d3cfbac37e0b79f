package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// p99Limit is the append→delivery target.
const p99Limit = 5 * time.Millisecond

// idleLimit is the idle-CPU target, in percent of one core.
const idleLimit = 0.2

// latencyAndIdle runs cases 4 and 5: single-line appends to a caught-up
// feed, with fsnotify and poll only, and the idle CPU of each daemon.
func latencyAndIdle(o options, t *table) error {
	for _, poll := range []bool{false, true} {
		if err := latencyRun(o, t, poll); err != nil {
			return err
		}
	}
	return nil
}

func latencyRun(o options, t *table, pollOnly bool) error {
	in, out := filepath.Join(o.dir, "lat.log"), filepath.Join(o.dir, "lat.out")
	if err := os.WriteFile(in, nil, 0o644); err != nil {
		return err
	}
	defer os.Remove(in)
	defer os.Remove(out)
	cfg, state, err := writeConfig(o.dir, in, []sinkSpec{{"out1", out, "never"}})
	if err != nil {
		return err
	}
	mode, env := "fsnotify", []string(nil)
	if pollOnly {
		mode, env = "poll only (TAILFEED_NO_FSNOTIFY=1, pollIntervalMillis 250)", []string{"TAILFEED_NO_FSNOTIFY=1"}
	}
	p, err := startDaemon(o.bin, cfg, state, env...)
	if err != nil {
		return err
	}
	defer p.kill()
	if _, err := p.waitSizes([]string{out}, 0, time.Minute); err != nil {
		return err
	}
	w, err := newGrowWatch(out)
	if err != nil {
		return err
	}
	defer w.close()
	lat, err := appendLoop(in, w, 5, o.appends)
	if err != nil {
		return fmt.Errorf("latency (%s): %w", mode, err)
	}
	slices.Sort(lat)
	p50, p99 := percentile(lat, 0.50), percentile(lat, 0.99)
	fmt.Fprintf(os.Stderr, "latency %s: p50 %s p99 %s max %s\n", mode, fmtMs(p50), fmtMs(p99), fmtMs(lat[len(lat)-1]))
	r := row{num: "4", name: "append → delivery latency, " + mode,
		detail: fmt.Sprintf("p50 %s, p99 %s, max %s (n=%d)", fmtMs(p50), fmtMs(p99), fmtMs(lat[len(lat)-1]), len(lat))}
	if !pollOnly {
		r.target = verdict("p99 ≤ 5 ms", p99 <= p99Limit)
	}
	t.add(r)
	time.Sleep(time.Second) // let the last commit's msync and timers pass
	for _, d := range o.idle {
		pct, err := idleCPU(p.cmd.Process.Pid, d)
		if err != nil {
			return err
		}
		name := "idle CPU of a caught-up daemon, " + strings.SplitN(mode, " (", 2)[0]
		fmt.Fprintf(os.Stderr, "idle %s over %s: %.3f %%\n", mode, d, pct)
		t.add(row{num: "5", name: name, detail: fmt.Sprintf("%.3f %% of one core over %s", pct, d),
			target: verdict("≤ 0.2 %", pct <= idleLimit)})
	}
	if err := p.stop(); err != nil {
		return err
	}
	_, rss := usage(p.cmd.ProcessState)
	fmt.Fprintf(os.Stderr, "latency daemon peak RSS %s\n", fmtMiB(rss))
	return nil
}

// appendLoop appends single 100-byte lines to in, each once the previous
// one is in the output, after a random 5–15 ms pause, and returns the time
// from each append to its delivery (the first warm ones not counted).
func appendLoop(in string, w *growWatch, warm, n int) ([]time.Duration, error) {
	f, err := os.OpenFile(in, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	line := []byte(strings.Repeat("x", 89))
	rng := rand.New(rand.NewPCG(3, 4))
	var want int64
	lat := make([]time.Duration, 0, n)
	for i := 0; i < warm+n; i++ {
		time.Sleep(5*time.Millisecond + time.Duration(rng.IntN(10_000))*time.Microsecond)
		rec := fmt.Appendf(nil, "%s %09d\n", line, i)
		want += int64(len(rec))
		t0 := time.Now()
		if _, err := f.Write(rec); err != nil {
			return nil, err
		}
		if err := w.waitSize(want, t0.Add(10*time.Second)); err != nil {
			return nil, fmt.Errorf("append %d: %w", i, err)
		}
		if i >= warm {
			lat = append(lat, time.Since(t0))
		}
	}
	return lat, nil
}

// percentile is the nearest-rank percentile of sorted d.
func percentile(d []time.Duration, q float64) time.Duration {
	k := int(float64(len(d))*q+0.999999) - 1
	return d[min(max(k, 0), len(d)-1)]
}

// idleCPU is the CPU the process used over d, in percent of one core.
func idleCPU(pid int, d time.Duration) (float64, error) {
	c0, err := cpuTime(pid)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	time.Sleep(d)
	c1, err := cpuTime(pid)
	if err != nil {
		return 0, err
	}
	return 100 * float64(c1-c0) / float64(time.Since(t0)), nil
}

// cpuTime is the time the process's threads ran, summed from
// /proc/PID/task/*/schedstat (nanoseconds, finer than the clock ticks of
// /proc/PID/stat).
func cpuTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("idle CPU needs /proc/%d/task/*/schedstat", pid)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread just ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}
