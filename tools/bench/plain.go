package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// child runs a measured loop in this process (re-executed by the bench so
// that its rusage is a child's): "plain IN OUT".
func child(args []string) int {
	if len(args) != 3 || args[0] != "plain" {
		fmt.Fprintln(os.Stderr, "bench: usage: -child plain IN OUT")
		return 2
	}
	n, err := plainCopy(args[1], args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: plain:", err)
		return 1
	}
	fmt.Println(n)
	return 0
}

// plainCopy is the no-framework limit: a bufio.Reader split on '\n'
// (ReadSlice, a bytes.IndexByte scan of its buffer), each line plus '\n'
// written through a bufio.Writer. Bytes after the last '\n' are not copied
// (as tailfeed does). It returns the lines copied.
func plainCopy(in, out string) (int, error) {
	fi, err := os.Open(in)
	if err != nil {
		return 0, err
	}
	defer fi.Close()
	fo, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	r := bufio.NewReaderSize(fi, 1<<20)
	w := bufio.NewWriterSize(fo, 1<<20)
	lines := 0
	for {
		line, err := r.ReadSlice('\n')
		if err == nil {
			w.Write(line[:len(line)-1])
			w.WriteByte('\n')
			lines++
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			w.Write(line) // a line longer than the buffer: its first part
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		fo.Close()
		return lines, err
	}
	if err := w.Flush(); err != nil {
		fo.Close()
		return lines, err
	}
	return lines, fo.Close()
}

// measured is a child process's cost.
type measured struct {
	wall   time.Duration
	cpu    time.Duration // user + system
	maxRSS int64         // KiB
}

func usage(ps *os.ProcessState) (cpu time.Duration, rssKiB int64) {
	cpu = ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		rssKiB = int64(ru.Maxrss) // KiB on Linux
	}
	return cpu, rssKiB
}

// runPlain runs the plain loop as a child.
func runPlain(in, out string) (measured, error) {
	self, err := os.Executable()
	if err != nil {
		return measured{}, err
	}
	os.Remove(out)
	cmd := exec.Command(self, "-child", "plain", in, out)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return measured{}, fmt.Errorf("plain loop: %w", err)
	}
	m := measured{wall: time.Since(start)}
	m.cpu, m.maxRSS = usage(cmd.ProcessState)
	return m, nil
}

// runCat runs cat IN > OUT.
func runCat(in, out string) (measured, error) {
	f, err := os.Create(out)
	if err != nil {
		return measured{}, err
	}
	defer f.Close()
	cmd := exec.Command("cat", in)
	cmd.Stdout = f
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return measured{}, fmt.Errorf("cat: %w", err)
	}
	m := measured{wall: time.Since(start)}
	m.cpu, m.maxRSS = usage(cmd.ProcessState)
	return m, nil
}
