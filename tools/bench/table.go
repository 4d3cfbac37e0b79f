package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// row is one line of the result table; empty cells print as "".
type row struct {
	num, name                     string
	linesPerSec, mbPerSec, xPlain string
	cpu, rss, detail, target      string
}

type table struct{ rows []row }

func (t *table) add(r row) { t.rows = append(t.rows, r) }

// print writes the table as Markdown (it goes into README.md as is).
func (t *table) print(w io.Writer) {
	head := row{"#", "case", "lines/s", "MB/s", "× plain", "CPU s", "peak RSS", "detail", "target"}
	all := append([]row{head}, t.rows...)
	width := make([]int, 9)
	for _, r := range all {
		for i, c := range r.cells() {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for k, r := range all {
		cells := r.cells()
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			pad := width[i] - len([]rune(c))
			if i >= 2 && i <= 6 { // numbers: right-aligned
				fmt.Fprintf(&b, " %s%s |", strings.Repeat(" ", pad), c)
			} else {
				fmt.Fprintf(&b, " %s%s |", c, strings.Repeat(" ", pad))
			}
		}
		fmt.Fprintln(w, b.String())
		if k == 0 {
			b.Reset()
			b.WriteString("|")
			for i := range cells {
				if i >= 2 && i <= 6 {
					b.WriteString(strings.Repeat("-", width[i]+1) + ":|")
				} else {
					b.WriteString(strings.Repeat("-", width[i]+2) + "|")
				}
			}
			fmt.Fprintln(w, b.String())
		}
	}
}

func (r row) cells() []string {
	return []string{r.num, r.name, r.linesPerSec, r.mbPerSec, r.xPlain, r.cpu, r.rss, r.detail, r.target}
}

// verdict formats a target check.
func verdict(want string, ok bool) string {
	if ok {
		return want + ": met"
	}
	return want + ": NOT met"
}

func printHeader(o options) {
	cores := strings.TrimSpace(output("nproc"))
	if cores == "" {
		cores = fmt.Sprint(runtime.NumCPU())
	}
	fmt.Printf("machine: %s cores (nproc), %s, %s\n", cores, strings.TrimSpace(output("go", "version")), kernel())
	fmt.Printf("throughput input: %d lines × %d bytes = %.0f MB; best of %d runs per case\n",
		o.lines, o.lineBytes, float64(o.lines)*float64(o.lineBytes)/1e6, o.runs)
	if o.bigMiB > 0 {
		fmt.Printf("peak-RSS inputs: %d MiB each\n", o.bigMiB)
	}
	fmt.Printf("started %s\n\n", time.Now().Format(time.RFC3339))
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return runtime.GOOS
	}
	return runtime.GOOS + " " + strings.TrimSpace(string(b))
}

func output(name string, args ...string) string {
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return string(b)
}

func fmtRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f k", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtMiB(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

func fmtMs(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }
