package main

// Case 7: glob feeds (DESIGN §10, issue 13 item 6).
//
//	7a  F files × L lines of -line-bytes present at start, read to the
//	    end by a glob feed → file sink: lines/s as a ratio to the plain-Go
//	    loop reading the same files one after the other in one process;
//	    target ≥ 0.5×.
//	7b  N caught-up files: idle CPU over -glob-idle (target ≤ 1 % of one
//	    core), peak RSS (≤ 64 MiB), descriptors (≤ maxOpenFiles).
//	7c  new-file discovery: from a file's creation to its first line in
//	    the output, p99 ≤ 50 ms with fsnotify.

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

var (
	globOn        = flag.Bool("glob", true, "run the glob cases (7)")
	globFiles     = flag.Int("glob-files", 1000, "glob throughput: files")
	globLines     = flag.Int("glob-lines", 2000, "glob throughput: lines per file")
	globIdleFiles = flag.Int("glob-idle-files", 10000, "glob idle case: caught-up files")
	globIdle      = flag.Duration("glob-idle", 30*time.Second, "glob idle case: CPU window")
	globNew       = flag.Int("glob-new", 200, "glob discovery: new files created one by one")
	globOnly      = flag.Bool("glob-only", false, "run only the glob throughput case (7a), -runs times")
	globMaxOpen   = 1024
)

func globCases(o options, t *table) error {
	if !*globOn {
		return nil
	}
	if err := globThroughput(o, t); err != nil {
		return fmt.Errorf("glob throughput: %w", err)
	}
	if *globOnly {
		return nil
	}
	if err := globIdleCase(o, t); err != nil {
		return fmt.Errorf("glob idle: %w", err)
	}
	if err := globDiscovery(o, t); err != nil {
		return fmt.Errorf("glob discovery: %w", err)
	}
	return nil
}

// writeGlobConfig writes a config with one COMMITTED glob feed over
// dir/in/**/*.log and a file sink; the status server listens on listen.
// The dataDir is dir/gstate, emptied first.
func writeGlobConfig(o options, out, listen string) (cfg, state string, err error) {
	state = filepath.Join(o.dir, "gstate")
	if err := os.RemoveAll(state); err != nil {
		return "", "", err
	}
	return writeGlobConfigAt(o, out, listen, state)
}

// writeGlobConfigAt is writeGlobConfig with the dataDir state (which must
// not exist yet).
func writeGlobConfigAt(o options, out, listen, state string) (cfg, _ string, err error) {
	os.Remove(out)
	var b strings.Builder
	fmt.Fprintf(&b, "dataDir: %q\nstatus: {listen: %q}\nlog: {level: warn}\n", state, listen)
	fmt.Fprintf(&b, "feeds:\n  - name: bench\n    path: %q\n    readStrategy: COMMITTED\n    maxOpenFiles: %d\n",
		filepath.Join(o.dir, "gin", "**", "*.log"), globMaxOpen)
	fmt.Fprintf(&b, "processors:\n  - name: out\n    feed: bench\n    type: file\n    path: %q\n    fsync: never\n", out)
	cfg = filepath.Join(o.dir, "glob.yaml")
	return cfg, state, os.WriteFile(cfg, []byte(b.String()), 0o644)
}

// makeGlobInput writes files × lines lines under dir/gin (100 per
// directory) and returns the total size. An input a previous run left
// with these very files is kept (see keepGlobInput).
func makeGlobInput(o options, files, lines int) (int64, []string, error) {
	in := filepath.Join(o.dir, "gin")
	body := strings.Repeat("x", max(o.lineBytes-12, 1))
	if total, paths, ok := keepGlobInput(in, files, lines, len(body)+12); ok {
		return total, paths, nil
	}
	if err := os.RemoveAll(in); err != nil {
		return 0, nil, err
	}
	var total int64
	var paths []string
	for f := 0; f < files; f++ {
		p := globInputPath(in, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return 0, nil, err
		}
		fh, err := os.Create(p)
		if err != nil {
			return 0, nil, err
		}
		w := bufio.NewWriterSize(fh, 1<<20)
		for i := 0; i < lines; i++ {
			n, _ := fmt.Fprintf(w, "%s %010d\n", body, i)
			total += int64(n)
		}
		if err := w.Flush(); err != nil {
			return 0, nil, err
		}
		fh.Close()
		paths = append(paths, p)
	}
	return total, paths, nil
}

func globInputPath(in string, f int) string {
	return filepath.Join(in, fmt.Sprintf("d%03d", f/100), fmt.Sprintf("f%05d.log", f))
}

// keepGlobInput reports whether in holds exactly the files makeGlobInput
// would write (the same names and sizes; the content is a function of
// both). Keeping them matters on ext4 without a journal: for 60 s (360 s
// while the inode table block is dirty) after a file is deleted the kernel
// skips its inode number when it allocates one (fs/ext4/ialloc.c,
// recently_deleted), scanning past each such inode at every creation; a
// bench that deleted and rewrote 1,000 inputs, or the last run's 1,000
// pointer files, right before a run made each pointer creation of that run
// cost 0.4-0.7 ms of CPU instead of 15-40 us (perf: find_inode_bit ->
// recently_deleted), a cost no fresh start outside the bench has.
func keepGlobInput(in string, files, lines, lineBytes int) (int64, []string, bool) {
	var paths []string
	n := 0
	err := filepath.WalkDir(in, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil || n != files {
		return 0, nil, false
	}
	size := int64(lines) * int64(lineBytes)
	for f := 0; f < files; f++ {
		p := globInputPath(in, f)
		st, err := os.Stat(p)
		if err != nil || st.Size() != size {
			return 0, nil, false
		}
		paths = append(paths, p)
	}
	return size * int64(files), paths, true
}

// plainMany is the plain-Go loop over many files: each read with a 1 MiB
// buffer, split with bytes.IndexByte, every line written to one buffered
// output.
func plainMany(paths []string, out string) (time.Duration, error) {
	start := time.Now()
	of, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(of, 1<<20)
	buf := make([]byte, 1<<20)
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return 0, err
		}
		rest := 0
		for {
			n, err := f.Read(buf[rest:])
			data := buf[:rest+n]
			at := 0
			for {
				i := bytes.IndexByte(data[at:], '\n')
				if i < 0 {
					break
				}
				w.Write(data[at : at+i+1])
				at += i + 1
			}
			rest = copy(buf, data[at:])
			if err != nil || n == 0 {
				break
			}
		}
		f.Close()
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	of.Close()
	return time.Since(start), nil
}

func globThroughput(o options, t *table) error {
	total, paths, err := makeGlobInput(o, *globFiles, *globLines)
	if err != nil {
		return err
	}
	lines := float64(*globFiles * *globLines)
	out := filepath.Join(o.dir, "glob.out")
	// Each run starts on a dataDir of its own, all removed once the case
	// ends: removing the last run's 1,000 pointer files before the next
	// run would slow that run's pointer creations (see keepGlobInput).
	// With -keep they stay (a new directory per invocation): back-to-back
	// invocations would otherwise pay for the last one's removal.
	states := filepath.Join(o.dir, fmt.Sprintf("gstates-%d", time.Now().UnixNano()))
	if !o.keep {
		defer os.RemoveAll(states)
	}
	var bestPlain, bestDaemon, bestLast time.Duration
	var best measured
	for r := 0; r < o.runs; r++ {
		d, err := plainMany(paths, out)
		if err != nil {
			return err
		}
		if bestPlain == 0 || d < bestPlain {
			bestPlain = d
		}
		addr, err := freePort()
		if err != nil {
			return err
		}
		cfg, state, err := writeGlobConfigAt(o, out, addr, filepath.Join(states, fmt.Sprint(r)))
		if err != nil {
			return err
		}
		p, err := startDaemon(o.bin, cfg, state)
		if err != nil {
			return err
		}
		last, err := p.waitSizes([]string{out}, total, 10*time.Minute)
		if err == nil {
			// Timed to settled (every file's last commit synced and
			// covering its acknowledged lines), as the issue asks, not
			// to the last byte in the output.
			_, err = p.waitSettled(addr, time.Minute)
		}
		if err != nil {
			p.kill()
			return err
		}
		end := time.Now()
		m := measured{wall: end.Sub(p.start)}
		if err := p.stop(); err != nil {
			return err
		}
		m.cpu, m.maxRSS = usage(p.cmd.ProcessState)
		fmt.Fprintf(os.Stderr, "glob run %d: plain %.3f s, tailfeed %.3f s to settled (%.3f s to the last line), cpu %.2f s, ×%.2f\n",
			r+1, d.Seconds(), m.wall.Seconds(), last.Sub(p.start).Seconds(), m.cpu.Seconds(), d.Seconds()/m.wall.Seconds())
		if bestDaemon == 0 || m.wall < bestDaemon {
			bestDaemon, best, bestLast = m.wall, m, last.Sub(p.start)
		}
		os.Remove(out)
	}
	x := bestPlain.Seconds() / bestDaemon.Seconds()
	// The pointers' share: the same number of pointer files made durable,
	// nothing read (best of the runs, each in a directory of its own).
	var floorWall, floorCPU time.Duration
	for r := 0; r < o.runs; r++ {
		w, c, err := pointerFloor(filepath.Join(states, fmt.Sprintf("floor%d", r)), *globFiles)
		if err != nil {
			return err
		}
		if floorWall == 0 || w < floorWall {
			floorWall, floorCPU = w, c
		}
	}
	t.add(row{num: "7", name: fmt.Sprintf("plain-Go loop over %d files × %d lines", *globFiles, *globLines),
		linesPerSec: fmtRate(lines / bestPlain.Seconds()), mbPerSec: fmt.Sprintf("%.0f", float64(total)/1e6/bestPlain.Seconds()),
		xPlain: "1.00", detail: fmt.Sprintf("wall %.3f s", bestPlain.Seconds())})
	t.add(row{num: "7", name: fmt.Sprintf("tailfeed glob feed (**/*.log, %d files present at start) → file sink", *globFiles),
		linesPerSec: fmtRate(lines / bestDaemon.Seconds()), mbPerSec: fmt.Sprintf("%.0f", float64(total)/1e6/bestDaemon.Seconds()),
		xPlain: fmt.Sprintf("%.2f", x), cpu: fmt.Sprintf("%.2f", best.cpu.Seconds()), rss: fmtMiB(best.maxRSS),
		detail: fmt.Sprintf("wall %.3f s, start to settled (%.3f s to the last line)", bestDaemon.Seconds(), bestLast.Seconds()), target: verdict("≥ 0.5× plain", x >= 0.5)})
	t.add(row{num: "7", name: fmt.Sprintf("floor: %d pointer files made durable (created, flocked, mapped, msynced; 32 at once), nothing read", *globFiles),
		cpu:    fmt.Sprintf("%.2f", floorCPU.Seconds()),
		detail: fmt.Sprintf("wall %.3f s = %.0f %% of the 0.5× budget (%.3f s)", floorWall.Seconds(), 100*floorWall.Seconds()/(2*bestPlain.Seconds()), 2*bestPlain.Seconds())})
	return nil
}

// fdCount is the number of open descriptors of pid.
func fdCount(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

func globIdleCase(o options, t *table) error {
	n := *globIdleFiles
	total, _, err := makeGlobInput(o, n, 1)
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Join(o.dir, "gin"))
	out := filepath.Join(o.dir, "glob.out")
	defer os.Remove(out)
	cfg, state, err := writeGlobConfig(o, out, "127.0.0.1:0")
	if err != nil {
		return err
	}
	p, err := startDaemon(o.bin, cfg, state)
	if err != nil {
		return err
	}
	defer p.kill()
	if _, err := p.waitSizes([]string{out}, total, 10*time.Minute); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // the last commits and closes
	pid := p.cmd.Process.Pid
	maxFD := fdCount(pid)
	hwm := &peakRSS{pid: pid}
	stopFD := make(chan struct{})
	fdDone := make(chan struct{})
	go func() {
		defer close(fdDone)
		for {
			select {
			case <-stopFD:
				return
			case <-time.After(100 * time.Millisecond):
				maxFD = max(maxFD, fdCount(pid))
			}
		}
	}()
	pct, err := idleCPU(pid, *globIdle)
	close(stopFD)
	<-fdDone
	if err != nil {
		return err
	}
	// The daemon's own peak, sampled through its stop (see peakRSS).
	hwm.sample()
	hwmDone := make(chan struct{})
	go func() {
		defer close(hwmDone)
		for {
			select {
			case <-p.done:
				return
			case <-time.After(10 * time.Millisecond):
				hwm.sample()
			}
		}
	}()
	if err := p.stop(); err != nil {
		return err
	}
	<-hwmDone
	_, rss := usage(p.cmd.ProcessState)
	if hwm.peak > 0 {
		rss = hwm.peak
	}
	ok := pct <= 1 && rss <= 64<<10 && maxFD <= globMaxOpen+32
	t.add(row{num: "7", name: fmt.Sprintf("glob feed, %d caught-up files: idle CPU, RSS, descriptors", n),
		rss: fmtMiB(rss), detail: fmt.Sprintf("%.3f %% of one core over %s; %d descriptors at most (all of the process; maxOpenFiles %d); RSS: its VmHWM", pct, *globIdle, maxFD, globMaxOpen),
		target: verdict("≤ 1 %, RSS ≤ 64 MiB, fds ≤ maxOpenFiles (+ the daemon's own)", ok)})
	return nil
}

func globDiscovery(o options, t *table) error {
	in := filepath.Join(o.dir, "gin")
	if err := os.RemoveAll(in); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(in, "d"), 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(in)
	out := filepath.Join(o.dir, "glob.out")
	defer os.Remove(out)
	cfg, state, err := writeGlobConfig(o, out, "127.0.0.1:0")
	if err != nil {
		return err
	}
	p, err := startDaemon(o.bin, cfg, state)
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
	line := strings.Repeat("y", 88)
	var want int64
	var lat []time.Duration
	for i := 0; i < *globNew; i++ {
		time.Sleep(5 * time.Millisecond)
		rec := fmt.Sprintf("%s %010d\n", line, i)
		want += int64(len(rec))
		t0 := time.Now()
		if err := os.WriteFile(filepath.Join(in, "d", fmt.Sprintf("new%05d.log", i)), []byte(rec), 0o644); err != nil {
			return err
		}
		if err := w.waitSize(want, t0.Add(10*time.Second)); err != nil {
			return fmt.Errorf("new file %d: %w", i, err)
		}
		lat = append(lat, time.Since(t0))
	}
	if err := p.stop(); err != nil {
		return err
	}
	slices.Sort(lat)
	p50, p99 := percentile(lat, 0.50), percentile(lat, 0.99)
	t.add(row{num: "7", name: "glob feed: new file created → its first line delivered, fsnotify",
		detail: fmt.Sprintf("p50 %s, p99 %s, max %s (n=%d)", fmtMs(p50), fmtMs(p99), fmtMs(lat[len(lat)-1]), len(lat)),
		target: verdict("p99 ≤ 50 ms", p99 <= 50*time.Millisecond)})
	return nil
}
