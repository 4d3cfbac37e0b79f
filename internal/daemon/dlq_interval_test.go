package daemon

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/sink/file"
	"tailfeed/status"
)

// intervalPoisonSink is poisonSink under fsync: interval (10 ms);
// record, when set, makes it exactlyOnce.
func intervalPoisonSink(armed *atomic.Bool, record string) Build {
	return func(pc *config.Processor, g *processor.Group) (any, error) {
		return file.Open(file.Config{Path: pc.Path, Checkpoint: g, Record: record,
			Fsync: file.FsyncInterval, Interval: 10 * time.Millisecond,
			Open: func(path string) (file.SinkFile, int64, error) {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
				if err != nil {
					return nil, 0, err
				}
				st, err := f.Stat()
				if err != nil {
					f.Close()
					return nil, 0, err
				}
				return poisonFile{f, armed}, st.Size(), nil
			}})
	}
}

// TestIntervalDeadLetterLastLineSettles: fsync: interval with onFailure:
// deadLetter, and the last line is the poison one. The line is in the
// ledger (processed), so the feed settles with pendingAcks 0 and the
// pointer at the input's end; a clean stop's final commit covers it, and a
// restart after the fault is gone does not write it to the output (it
// stays in the ledger only: a replay would otherwise write it twice). It
// used to stay unacknowledged until another line was written: pendingAcks
// 1, never settled, the stop waiting its whole bound.
func TestIntervalDeadLetterLastLineSettles(t *testing.T) {
	for _, eo := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "exactlyOnce"}[eo], func(t *testing.T) {
			dir := t.TempDir()
			var armed atomic.Bool
			armed.Store(true)
			record := ""
			if eo {
				record = filepath.Join(dir, "sink.rec")
			}
			opts := Options{Processors: map[string]Build{"sink": intervalPoisonSink(&armed, record)}}
			e := eoStart(t, dir, dlqConfig, opts)
			e.appendLines("a", "poison")
			f := e.waitFor("settled with the dead letter", 10*time.Second, func(f status.FeedReport) bool {
				return f.Settled && f.DeadLettered == 1
			})
			if f.PendingAcks != 0 || f.Acknowledged != 2 || f.Pointer.Offset != e.inputSize() {
				t.Fatalf("pendingAcks %d acknowledged %d pointer %+v, input %d", f.PendingAcks, f.Acknowledged, f.Pointer, e.inputSize())
			}
			e.Stop()
			p, err := pointer.Open(filepath.Join(dir, "state", "feeds", "app.ptr"), pointer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			off := p.Record().Offset
			p.Close()
			if off != e.inputSize() {
				t.Fatalf("after a clean stop the pointer is at %d, input %d: the dead letter comes again", off, e.inputSize())
			}
			armed.Store(false)
			e = eoStart(t, dir, dlqConfig, opts)
			f = e.waitFor("settled after the restart", 10*time.Second, settled)
			if got := readLines(t, filepath.Join(dir, "out.log")); len(got) != 1 || got[0] != "a" {
				t.Fatalf("output after the restart %q, want only a (the poison line is in the ledger)", got)
			}
			if f.DeadLettered != 1 {
				t.Fatalf("deadLettered %d after the restart, want 1", f.DeadLettered)
			}
		})
	}
}
