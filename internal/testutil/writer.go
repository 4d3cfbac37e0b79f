package testutil

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// Writer appends numbered lines "g<generation> line <i>" through one open
// descriptor, like an application logging; Rotate makes it finish with the
// current file (a few more lines land in it, after its rename) and continue
// in a new file at the path. Each line names the generation of the file it
// went to.
type Writer struct {
	t      testing.TB
	path   string
	reopen chan chan struct{}
	stop   chan struct{}
	done   chan struct{}
	n      atomic.Int64 // lines written
	gen    atomic.Int64 // generation of the file written to now
}

// Gen is the generation of the file written to now (0 before the first
// rotation).
func (w *Writer) Gen() int64 { return w.gen.Load() }

// StartWriter starts writing to path until Finish.
func StartWriter(t testing.TB, path string) *Writer {
	w := &Writer{t: t, path: path, reopen: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *Writer) run() {
	defer close(w.done)
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		w.t.Error(err)
		return
	}
	write := func() {
		i := w.n.Load()
		if _, err := fmt.Fprintf(f, "g%d line %07d\n", w.gen.Load(), i); err != nil {
			w.t.Error(err)
		}
		w.n.Add(1)
	}
	for {
		select {
		case <-w.stop:
			f.Close()
			return
		case ack := <-w.reopen:
			for range 3 {
				write() // after the rename: these land in the renamed file
			}
			f.Close()
			w.gen.Add(1)
			f, err = os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				w.t.Error(err)
				return
			}
			close(ack)
		default:
			write()
			if w.n.Load()%20 == 0 {
				time.Sleep(200 * time.Microsecond)
			}
		}
	}
}

// Rotate renames the file to to and makes the writer go on at the path.
func (w *Writer) Rotate(to string) {
	if err := os.Rename(w.path, to); err != nil {
		w.t.Error(err)
		return
	}
	ack := make(chan struct{})
	w.reopen <- ack
	<-ack
}

// Finish stops the writer and returns how many lines it wrote.
func (w *Writer) Finish() int {
	close(w.stop)
	<-w.done
	return int(w.n.Load())
}
