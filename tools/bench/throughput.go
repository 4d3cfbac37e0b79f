package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// rssLimitKiB is the peak-RSS target (64 MiB).
const rssLimitKiB = 64 << 10

// bestOf keeps the fastest run of a case and the highest peak RSS of all.
type bestOf struct {
	best   measured
	maxRSS int64
	runs   int
}

func (b *bestOf) add(m measured) {
	if b.runs == 0 || m.wall < b.best.wall {
		b.best = m
	}
	b.maxRSS = max(b.maxRSS, m.maxRSS)
	b.runs++
}

type tpCase struct {
	name string
	run  func() (measured, error)
}

// throughput runs cases 1–3 on the N × L-byte input.
func throughput(o options, t *table) error {
	in := filepath.Join(o.dir, "in.log")
	if err := writeLines(in, o.lines, o.lineBytes); err != nil {
		return err
	}
	defer os.Remove(in)
	size := int64(o.lines) * int64(o.lineBytes)
	if err := warm(in); err != nil {
		return err
	}
	out := func(n string) string { return filepath.Join(o.dir, n) }
	one := []sinkSpec{{"out1", out("out1.log"), "never"}}
	two := []sinkSpec{{"out1", out("out1.log"), "never"}, {"out2", out("out2.log"), "never"}}
	interval := []sinkSpec{{"out1", out("out1.log"), "interval"}}
	cases := []tpCase{
		{"plain", func() (measured, error) { return runPlain(in, out("plain.out")) }},
		{"cat", func() (measured, error) { return runCat(in, out("cat.out")) }},
		{"one", func() (measured, error) { return runTailfeed(o, in, size, one) }},
		{"two", func() (measured, error) { return runTailfeed(o, in, size, two) }},
		{"interval", func() (measured, error) { return runTailfeed(o, in, size, interval) }},
	}
	res := make([]bestOf, len(cases))
	for r := 0; r < o.runs; r++ { // interleaved: drift hits every case alike
		for i, c := range cases {
			m, err := c.run()
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			res[i].add(m)
			fmt.Fprintf(os.Stderr, "run %d %-8s %7.3f s  cpu %6.3f s  rss %s\n", r+1, c.name, m.wall.Seconds(), m.cpu.Seconds(), fmtMiB(m.maxRSS))
		}
	}
	os.Remove(out("plain.out"))
	os.Remove(out("cat.out"))
	plainRate := float64(o.lines) / res[0].best.wall.Seconds()
	rowFor := func(num, name string, b bestOf, ratioTarget float64, checkRSS bool) row {
		rate := float64(o.lines) / b.best.wall.Seconds()
		x := rate / plainRate
		r := row{num: num, name: name, linesPerSec: fmtRate(rate),
			mbPerSec: fmt.Sprintf("%.0f", float64(size)/1e6/b.best.wall.Seconds()),
			xPlain:   fmt.Sprintf("%.2f", x), cpu: fmt.Sprintf("%.2f", b.best.cpu.Seconds()),
			rss: fmtMiB(b.maxRSS), detail: fmt.Sprintf("wall %.3f s", b.best.wall.Seconds())}
		var targets []string
		ok := true
		if ratioTarget > 0 {
			targets = append(targets, fmt.Sprintf("≥ %.1f× plain", ratioTarget))
			ok = ok && x >= ratioTarget
		}
		if checkRSS {
			targets = append(targets, "RSS ≤ 64 MiB")
			ok = ok && b.maxRSS <= rssLimitKiB
		}
		if len(targets) > 0 {
			r.target = verdict(strings.Join(targets, ", "), ok)
		}
		return r
	}
	t.add(rowFor("1", "plain-Go copy loop (bufio, IndexByte, bufio.Writer)", res[0], 0, false))
	t.add(rowFor("1", "cat", res[1], 0, false))
	t.add(rowFor("2", "tailfeed COMMITTED → file sink, fsync never", res[2], 0.5, true))
	t.add(rowFor("3", "tailfeed → two file sinks, fsync never", res[3], 0.4, true))
	t.add(rowFor("3", "tailfeed → file sink, fsync interval (100 ms)", res[4], 0, true))
	return nil
}

// bigRuns is how many times each large input is run.
const bigRuns = 2

// bigInputs measures the daemon's peak RSS on large inputs of long lines.
func bigInputs(o options, t *table) error {
	kinds := []struct {
		name   string
		length func(*rand.Rand) int
	}{{"1 MiB lines", oneMiBLines}}
	if o.bigMixed {
		kinds = append(kinds, struct {
			name   string
			length func(*rand.Rand) int
		}{"mixed lengths 1 B–1 MiB (log-uniform)", mixedLines})
	}
	for _, k := range kinds {
		in := filepath.Join(o.dir, "big.log")
		lines, err := writeSized(in, o.bigMiB, k.length)
		if err != nil {
			return err
		}
		if err := warm(in); err != nil {
			return err
		}
		size := int64(o.bigMiB) << 20
		// Twice: the first run after writing GiBs often pays for the
		// kernel's page reclaim inside write(2). Best wall, highest RSS.
		var b bestOf
		for range bigRuns {
			m, err := runTailfeed(o, in, size, []sinkSpec{{"out1", filepath.Join(o.dir, "big.out"), "never"}})
			if err != nil {
				os.Remove(in)
				return fmt.Errorf("big input (%s): %w", k.name, err)
			}
			b.add(m)
			fmt.Fprintf(os.Stderr, "big %-8s %7.3f s  cpu %6.3f s  rss %s\n", k.name, m.wall.Seconds(), m.cpu.Seconds(), fmtMiB(m.maxRSS))
		}
		os.Remove(in)
		m := b.best
		m.maxRSS = b.maxRSS
		t.add(row{num: "3", name: fmt.Sprintf("tailfeed → file sink, %d MiB of %s", o.bigMiB, k.name),
			linesPerSec: fmtRate(float64(lines) / m.wall.Seconds()),
			mbPerSec:    fmt.Sprintf("%.0f", float64(size)/1e6/m.wall.Seconds()),
			cpu:         fmt.Sprintf("%.2f", m.cpu.Seconds()), rss: fmtMiB(m.maxRSS),
			detail: fmt.Sprintf("%d lines, wall %.3f s (best of %d)", lines, m.wall.Seconds(), bigRuns),
			target: verdict("RSS ≤ 64 MiB", m.maxRSS <= rssLimitKiB)})
	}
	return nil
}

// profileRuns is how many one-sink runs the CPU profile merges (one run of
// the default input gives only about a hundred 10 ms samples).
const profileRuns = 20

// profileRun repeats the one-sink case under a CPU profile and prints the
// merged profile's top entries.
func profileRun(o options) error {
	in := filepath.Join(o.dir, "in.log")
	if err := writeLines(in, o.lines, o.lineBytes); err != nil {
		return err
	}
	defer os.Remove(in)
	prof, err := filepath.Abs(o.profile)
	if err != nil {
		return err
	}
	size := int64(o.lines) * int64(o.lineBytes)
	args := []string{"tool", "pprof", "-top", "-nodecount=25", o.bin}
	var wall, cpu time.Duration
	for i := 1; i <= profileRuns; i++ {
		p := fmt.Sprintf("%s.%d", prof, i)
		m, err := runTailfeed(o, in, size, []sinkSpec{{"out1", filepath.Join(o.dir, "out1.log"), "never"}}, "TAILFEED_CPUPROFILE="+p)
		if err != nil {
			return err
		}
		wall, cpu = wall+m.wall, cpu+m.cpu
		args = append(args, p)
	}
	fmt.Printf("\nCPU profile of the one-sink case, %d runs merged (wall %.3f s, cpu %.2f s in all): %s.1…%d\n",
		profileRuns, wall.Seconds(), cpu.Seconds(), prof, profileRuns)
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// warm reads path once so that every case reads it from the page cache.
func warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}
