// Command bench measures tailfeed against a plain-Go copy loop in the same
// run and prints one table (`make bench`, after `make build`):
//
//  1. the no-framework limit: a plain-Go copy loop (bufio reader,
//     bytes.IndexByte split, buffered writer) and cat(1), on the same
//     N × L-byte file;
//  2. the built daemon as a process, COMMITTED feed → file sink (fsync
//     never), timed from its start to the last line in the output, with its
//     CPU seconds and peak RSS from the child's rusage;
//  3. the same with two file subscribers, and with `fsync: interval`;
//     plus peak-RSS runs on a large input of 1 MiB lines (and of mixed
//     lengths);
//  4. append-to-delivery latency on a caught-up feed, with fsnotify and
//     with events disabled (TAILFEED_NO_FSNOTIFY=1: poll only);
//  5. the idle CPU of a caught-up daemon;
//  6. the Go micro-benchmarks of the splitter, the publisher/queue hand-off
//     and the pointer commit;
//  7. lines/s into PostgreSQL: the postgres sink next to a plain pgx client
//     (tools/bench/postgres.go);
//  8. lines/s out of the pull API: the built daemon drained over 127.0.0.1
//     by a client pulling max=10000 (and 500) batches with batch ACKs
//     (tools/bench/pull.go; -pull-lines 0 skips it).
//
// Inputs are generated under -dir (default ./var/bench, removed at the end
// unless -keep). Throughput cases run -runs times each, interleaved, and
// report the best run of each (the same treatment for the plain loop and
// the daemon, so the ratio is fair on a noisy machine).
//
// The program re-executes itself for the plain loop (-child plain) so that
// the loop's CPU time and peak RSS come from a child's rusage, like the
// daemon's.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type options struct {
	bin       string
	dir       string
	keep      bool
	lines     int
	lineBytes int
	runs      int
	bigMiB    int
	bigMixed  bool
	appends   int
	idle      []time.Duration
	gobench   bool
	profile   string
	pullLines int
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "-child" {
		os.Exit(child(os.Args[2:]))
	}
	o := parseFlags()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags() options {
	var o options
	var idle string
	flag.StringVar(&o.bin, "bin", "bin/tailfeed", "the built daemon (make build)")
	flag.StringVar(&o.dir, "dir", "var/bench", "work directory for generated inputs and outputs")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory")
	flag.IntVar(&o.lines, "lines", 2_000_000, "lines in the throughput input")
	flag.IntVar(&o.lineBytes, "line-bytes", 100, "bytes per line, terminator included")
	flag.IntVar(&o.runs, "runs", 5, "runs per throughput case (the best is reported)")
	flag.IntVar(&o.bigMiB, "big-mib", 2048, "size in MiB of the peak-RSS inputs (0: skip)")
	flag.BoolVar(&o.bigMixed, "big-mixed", true, "also run the peak-RSS case on lines of mixed lengths")
	flag.IntVar(&o.appends, "appends", 200, "single-line appends per latency case")
	flag.StringVar(&idle, "idle", "10s", "idle-CPU windows, comma separated (e.g. 10s,30s; empty: skip)")
	flag.BoolVar(&o.gobench, "gobench", true, "run the Go micro-benchmarks")
	flag.IntVar(&o.pullLines, "pull-lines", 2_000_000, "lines drained through the pull API per run (0: skip case 8)")
	flag.StringVar(&o.profile, "cpuprofile", "", "also run the one-sink case under a CPU profile written here, and print its top entries")
	flag.Parse()
	for _, s := range strings.Split(idle, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -idle:", err)
			os.Exit(2)
		}
		o.idle = append(o.idle, d)
	}
	if o.lineBytes < 2 || o.lines < 1 || o.runs < 1 {
		fmt.Fprintln(os.Stderr, "bench: -lines, -line-bytes and -runs must be positive (line-bytes ≥ 2)")
		os.Exit(2)
	}
	return o
}

func run(o options) error {
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s: %w (run make build first)", o.bin, err)
	}
	o.bin = bin
	if o.dir, err = filepath.Abs(o.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(o.dir)
	}
	t := &table{}
	started := time.Now()
	printHeader(o)
	if *globOnly {
		if err := globCases(o, t); err != nil {
			return err
		}
		t.print(os.Stdout)
		return nil
	}
	if err := throughput(o, t); err != nil {
		return err
	}
	if err := pullCases(o, t); err != nil {
		return err
	}
	if o.bigMiB > 0 {
		if err := bigInputs(o, t); err != nil {
			return err
		}
	}
	if err := latencyAndIdle(o, t); err != nil {
		return err
	}
	if o.gobench {
		if err := goBenchmarks(t); err != nil {
			return err
		}
		if err := postgresBench(t); err != nil {
			return err
		}
	}
	if err := globCases(o, t); err != nil {
		return err
	}
	t.print(os.Stdout)
	fmt.Printf("\nbench finished in %s\n", time.Since(started).Round(time.Second))
	if o.profile != "" {
		return profileRun(o)
	}
	return nil
}
