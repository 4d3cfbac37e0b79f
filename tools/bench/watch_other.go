//go:build !linux

package main

import (
	"fmt"
	"os"
	"time"
)

// growWatch polls a file's size every 100 µs (no inotify here).
type growWatch struct{ path string }

func newGrowWatch(path string) (*growWatch, error) { return &growWatch{path: path}, nil }

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
		if time.Now().After(deadline) {
			return fmt.Errorf("%s has %d bytes, want %d: timeout", w.path, st.Size(), want)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (w *growWatch) close() {}
