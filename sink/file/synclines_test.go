package file_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/sink/file"
)

// lineCheckpoint is a Checkpoint driven by hand: mark is the queue count
// through the batch being processed.
type lineCheckpoint struct {
	mark, durable uint64
}

func (c *lineCheckpoint) Hold()        {}
func (c *lineCheckpoint) Mark() uint64 { return c.mark }
func (c *lineCheckpoint) DurableThrough(m uint64) {
	c.durable = max(c.durable, m)
}

// syncCounter is a real file that counts its fsyncs.
type syncCounter struct {
	*os.File
	syncs int
}

func (f *syncCounter) Sync() error { f.syncs++; return f.File.Sync() }

// TestFileSinkIntervalSyncsAtSyncLines: with fsync: interval, a sink that
// has SyncLines lines waiting syncs at once rather than at the interval, so
// a busy feed's acknowledgement window does not fill waiting for it.
func TestFileSinkIntervalSyncsAtSyncLines(t *testing.T) {
	for _, tc := range []struct {
		syncLines int
		// durable mark after each batch of 4 lines (marks 4, 8, 12, 16, 20, 24)
		want []uint64
	}{
		{10, []uint64{0, 0, 12, 12, 12, 24}},
		{0, []uint64{0, 0, 0, 0, 0, 0}}, // off: only the interval (an hour here)
	} {
		t.Run(fmt.Sprint("syncLines=", tc.syncLines), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.log")
			var f *syncCounter
			cp := &lineCheckpoint{}
			s, err := file.Open(file.Config{
				Path: path, Fsync: file.FsyncInterval, Interval: time.Hour, Checkpoint: cp,
				SyncLines: tc.syncLines,
				Open: func(p string) (file.SinkFile, int64, error) {
					of, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
					f = &syncCounter{File: of}
					return f, 0, err
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var want string
			for i, w := range tc.want {
				b := feed.NewBatch()
				for k := range 4 {
					line := fmt.Sprintf("line %d.%d", i, k)
					b.AppendLine([]byte(line), int64(len(want)+len(line)+1))
					want += line + "\n"
				}
				cp.mark += 4
				if n, err := s.ProcessBatch(context.Background(), b); n != 4 || err != nil {
					t.Fatalf("batch %d: ProcessBatch = %d, %v", i, n, err)
				}
				if cp.durable != w {
					t.Fatalf("batch %d (mark %d): durable %d, want %d (%d syncs)", i, cp.mark, cp.durable, w, f.syncs)
				}
			}
			if err := s.Flush(context.Background()); err != nil || cp.durable != cp.mark {
				t.Fatalf("Flush: %v, durable %d, want %d", err, cp.durable, cp.mark)
			}
			if got, _ := os.ReadFile(path); string(got) != want {
				t.Fatalf("output %q, want %q", got, want)
			}
		})
	}
}
