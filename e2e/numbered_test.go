package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// numWriter is an application logging numbered lines ("line N\n", N from
// 1) to a path while the test rotates it. It opens the path for each line
// (O_APPEND, like `echo >> app.log`), so after a rename rotation its next
// line goes to the new file, as a logger does once told to reopen. It never
// creates the path: whoever rotates creates the new file (logrotate's
// `create` fails on a path the writer created first), and a line waits,
// unwritten, while the path is missing.
type numWriter struct {
	t     testing.TB
	path  string
	pause time.Duration

	mu    sync.Mutex  // held for each line; quiet holds it to keep the writer still
	n     int         // lines written
	spans []writeSpan // spans[N-1]: when line N's write ran

	stop chan struct{}
	done chan struct{}
}

// writeSpan is when one line's open+write+close ran.
type writeSpan struct{ from, to time.Time }

// startWriter starts writing a line every pause.
func startWriter(t testing.TB, path string, pause time.Duration) *numWriter {
	w := &numWriter{t: t, path: path, pause: pause, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(func() { w.finish() })
	return w
}

func (w *numWriter) run() {
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		if err := w.writeNext(); err != nil {
			w.t.Errorf("writer: %v", err)
			return
		}
		time.Sleep(w.pause)
	}
}

// writeNext writes the next line, or nothing while the path is missing.
func (w *numWriter) writeNext() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	from := time.Now()
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	line := fmt.Sprintf("line %d\n", w.n+1)
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	w.n++
	w.spans = append(w.spans, writeSpan{from, time.Now()})
	return nil
}

// quiet runs fn while the writer writes nothing.
func (w *numWriter) quiet(fn func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn()
}

// finish stops the writer and returns how many lines it wrote; safe to
// call twice.
func (w *numWriter) finish() int {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	return w.written()
}

func (w *numWriter) written() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// span returns when line n (from 1) was written.
func (w *numWriter) span(n int) writeSpan {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spans[n-1]
}

// tally is a file sink's output of numbered lines compared with what the
// writer wrote.
type tally struct {
	written    int
	delivered  int   // distinct lines 1..written in the output
	missing    []int // line numbers written but not in the output
	duplicated int   // output lines beyond the first of each number
	foreign    []string
	torn       int // bytes after the last '\n'
}

// countNumbered reads the output at out and tallies lines 1..written.
func countNumbered(t testing.TB, out string, written int) tally {
	t.Helper()
	data, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	seen := make([]int, written+1)
	tl := tally{written: written}
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			tl.torn = len(data)
			break
		}
		line := data[:nl]
		data = data[nl+1:]
		n, ok := parseNumbered(line)
		if !ok || n > written {
			tl.foreign = append(tl.foreign, string(line))
			continue
		}
		seen[n]++
	}
	for n := 1; n <= written; n++ {
		switch {
		case seen[n] == 0:
			tl.missing = append(tl.missing, n)
		default:
			tl.delivered++
			tl.duplicated += seen[n] - 1
		}
	}
	return tl
}

// parseNumbered returns N of "line N".
func parseNumbered(line []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("line "))
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(rest))
	return n, err == nil && n > 0
}

// ranges prints line numbers as compact ranges: "3-7,12".
func ranges(ns []int) string {
	var b bytes.Buffer
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			fmt.Fprintf(&b, "%d", ns[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", ns[i], ns[j])
		}
		if b.Len() > 200 {
			b.WriteString(",…")
			break
		}
		i = j + 1
	}
	return b.String()
}

// settleAtPath waits until the feed is settled with its pointer at the end
// of the file at path under the current epoch (every earlier generation
// read and the one at the path too) and the output has not grown for
// 300 ms. It returns the last report and whether that happened in time; it
// does not fail the test, so a caller can still tabulate what it saw.
func settleAtPath(d *daemon, path, out string, timeout time.Duration) (*report, bool) {
	deadline := time.Now().Add(timeout)
	var last *report
	atEnd := func() bool {
		r, err := d.status()
		if err != nil {
			return false
		}
		last = r
		if !r.Settled || len(r.Feeds) != 1 {
			return false
		}
		f := r.Feeds[0]
		st, err := os.Stat(path)
		if err != nil {
			return false
		}
		return f.Pointer != nil && f.Pointer.Offset == st.Size() && f.Pointer.Epoch == f.Epoch
	}
	for time.Now().Before(deadline) && !d.exited() {
		if !atEnd() {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		before := sizeOf(out)
		time.Sleep(300 * time.Millisecond)
		if sizeOf(out) == before && atEnd() {
			return last, true
		}
	}
	return last, false
}

// sizeOf is path's size, -1 when it cannot be stat'ed.
func sizeOf(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return st.Size()
}

// statusExit runs `tailfeed status --wait-settled` against d and returns
// its exit code and stderr.
func statusExit(t testing.TB, d *daemon, wait time.Duration) (int, string) {
	t.Helper()
	_, stderr, code := cli(t, "status", "--addr", d.addr, "--wait-settled", wait.String())
	return code, stderr
}
