package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// peakRSS samples a child's own peak RSS (VmHWM in /proc/<pid>/status,
// Linux) until stop is closed and the process is gone. A child's rusage
// Maxrss is not its own peak: a child forked with CLONE_VM (os/exec does)
// inherits, at exec, the high-water mark of the parent's memory — the
// bench's own (~63 MB after the throughput cases) — so a daemon that
// peaked at 52 MB was reported at 62-74 MB.
type peakRSS struct {
	pid  int
	peak int64 // KiB; 0: never read (not Linux)
}

// sample reads VmHWM once (monotonic: the last read is the peak so far).
func (p *peakRSS) sample() {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if f := bytes.Fields(l); len(f) >= 2 && string(f[0]) == "VmHWM:" {
			if v, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				p.peak = max(p.peak, v)
			}
		}
	}
}
