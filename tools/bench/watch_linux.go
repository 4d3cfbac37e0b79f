//go:build linux

package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// growWatch waits for a file to grow, woken by inotify (IN_MODIFY), so the
// measured latency is not quantised by a polling interval.
type growWatch struct {
	path string
	ino  *os.File // the inotify descriptor, in the runtime poller
	buf  []byte
}

func newGrowWatch(path string) (*growWatch, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_MODIFY); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("inotify watch %s: %w", path, err)
	}
	return &growWatch{path: path, ino: os.NewFile(uintptr(fd), "inotify"), buf: make([]byte, 64<<10)}, nil
}

// waitSize returns once the file holds at least want bytes.
func (w *growWatch) waitSize(want int64, deadline time.Time) error {
	for {
		st, err := os.Stat(w.path)
		if err != nil {
			return err
		}
		if st.Size() >= want {
			return nil
		}
		w.ino.SetReadDeadline(deadline)
		if _, err := w.ino.Read(w.buf); err != nil {
			return fmt.Errorf("%s has %d bytes, want %d: %w", w.path, st.Size(), want, err)
		}
	}
}

func (w *growWatch) close() { w.ino.Close() }
