package file

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// marksAfterReopen opens the sink at dir again (a restart) and returns its
// DoneThrough marks.
func marksAfterReopen(t *testing.T, dir string, perEpoch bool) []processor.Mark {
	t.Helper()
	rig := grouptest.New(t, processor.GroupConfig{Name: "sink"})
	s, err := Open(Config{Path: filepath.Join(dir, "out.log"), Record: filepath.Join(dir, "sink.rec"), PerEpoch: perEpoch, Checkpoint: rig.G})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := s.DoneThrough(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRecordAdvancesOverLinesFinishedWithoutIt (DESIGN §11 "every built-in
// record advances over such lines; a replayed dead letter never moves
// it"): an exactlyOnce record, layout 1 and 2, under every fsync policy,
// ends at the last line of the feed's batch whether the group's exclude
// took it out (at a batch's end, or a whole batch) or it was
// dead-lettered; a replay of that dead letter writes it but leaves the
// record. Before, the record stopped at the last line written, so a
// restart took the sink for behind the pointer.
func TestRecordAdvancesOverLinesFinishedWithoutIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		perEpoch bool
		mode     FsyncMode
	}{
		{"layout1 never", false, FsyncNever},
		{"layout1 always", false, FsyncAlways},
		{"layout1 interval", false, FsyncInterval},
		{"layout2 never", true, FsyncNever},
		{"layout2 interval", true, FsyncInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := processor.OpenLedger(filepath.Join(dir, "sink.jsonl"), nil)
			if err != nil {
				t.Fatal(err)
			}
			var armed atomic.Bool
			armed.Store(true)
			r := grouptest.New(t, processor.GroupConfig{Name: "sink", Retry: grouptest.FastRetry(2), OnFailure: processor.DeadLetter,
				Ledger: l, Exclude: regexp.MustCompile(`^skip`)})
			s, err := Open(Config{Path: filepath.Join(dir, "out.log"), Record: filepath.Join(dir, "sink.rec"), PerEpoch: tc.perEpoch,
				Checkpoint: r.G, Fsync: tc.mode, Interval: 5 * time.Millisecond,
				Open: func(p string) (SinkFile, int64, error) {
					f, n, err := openAppend(p)
					if err != nil {
						return nil, 0, err
					}
					return poisonFile{f.(*os.File), []byte("poison"), &armed}, n, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			r.G.SetBatchProcessor(s)
			r.Run()

			r.Publish("a", "b", "skip-1") // filtered at the batch's end
			r.WaitAck(3, 10*time.Second)
			r.Publish("skip-2", "skip-3") // a whole batch filtered: an empty view
			r.WaitAck(5, 10*time.Second)
			r.Publish("c", "poison") // dead-lettered at the batch's end
			r.WaitAck(7, 10*time.Second)
			end := r.Pos
			armed.Store(false)
			if res, err := r.G.Replay(context.Background(), 10); err != nil || res.Replayed != 1 {
				t.Fatalf("replay = %+v, %v", res, err)
			}
			r.Cancel()
			<-r.G.Done()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "out.log")); string(b) != "a\nb\nc\npoison\n" {
				t.Fatalf("output %q", b)
			}
			m := marksAfterReopen(t, dir, tc.perEpoch)
			if len(m) != 1 || m[0].Epoch != r.Epoch || m[0].Position != end {
				t.Fatalf("marks %+v, want epoch %x through %d (the dead-lettered last line; the replay moves nothing)", m, r.Epoch, end)
			}
		})
	}
}

// TestDoneThroughWithoutRecord: a sink without exactlyOnce, or with a
// record that never stored a line, reports no mark (never behind).
func TestDoneThroughWithoutRecord(t *testing.T) {
	dir := t.TempDir()
	rig := grouptest.New(t, processor.GroupConfig{Name: "sink"})
	for _, rec := range []string{"", filepath.Join(dir, "sink.rec")} {
		s, err := Open(Config{Path: filepath.Join(dir, "out.log"), Record: rec, Checkpoint: rig.G})
		if err != nil {
			t.Fatal(err)
		}
		if m, err := s.DoneThrough(context.Background()); err != nil || len(m) != 0 {
			t.Fatalf("record %q: marks %+v, %v", rec, m, err)
		}
		s.Close()
	}
}

// TestDoneThroughOutputShorterThanRecord (DESIGN §4 "Nothing green over a
// loss", §11): the output put back to an earlier copy while the record
// stayed newer (no slot fits). The sink cannot tell where in the record's
// epoch its output now ends: it reports that epoch at position 0 (the
// catch-up re-reads it from its start: duplicates, never a gap within it)
// and the doubt, which the daemon counts — before, it gave the record up
// and reported no mark at all (taken for a new sink: nothing re-read,
// lossless). Layout 1 and 2.
func TestDoneThroughOutputShorterThanRecord(t *testing.T) {
	for _, perEpoch := range []bool{false, true} {
		dir := t.TempDir()
		out := filepath.Join(dir, "out.log")
		rig := grouptest.New(t, processor.GroupConfig{Name: "sink"})
		s, err := Open(Config{Path: out, Record: filepath.Join(dir, "sink.rec"), PerEpoch: perEpoch, Checkpoint: rig.G})
		if err != nil {
			t.Fatal(err)
		}
		b1 := eoBatch(7, 0, "aa", "bb")
		if _, err := s.ProcessBatch(context.Background(), b1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ProcessBatch(context.Background(), eoBatch(7, b1.LastEnd(), "cc", "dd", "ee")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := os.Truncate(out, 3); err != nil { // the output restored to "aa\n"
			t.Fatal(err)
		}
		s, err = Open(Config{Path: out, Record: filepath.Join(dir, "sink.rec"), PerEpoch: perEpoch, Checkpoint: rig.G})
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.DoneThrough(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != 1 || m[0] != (processor.Mark{Epoch: 7, Position: 0}) {
			t.Errorf("perEpoch %v: marks %+v, want epoch 7 at 0", perEpoch, m)
		}
		if d := s.DoneThroughDoubt(); d == "" {
			t.Errorf("perEpoch %v: no doubt reported", perEpoch)
		}
		s.Close()
		// Reopened as it is now (the record stored at 0): no doubt again.
		s, err = Open(Config{Path: out, Record: filepath.Join(dir, "sink.rec"), PerEpoch: perEpoch, Checkpoint: rig.G})
		if err != nil {
			t.Fatal(err)
		}
		if d := s.DoneThroughDoubt(); d != "" {
			t.Errorf("perEpoch %v: doubt at the next open: %s", perEpoch, d)
		}
		s.Close()
	}
}
