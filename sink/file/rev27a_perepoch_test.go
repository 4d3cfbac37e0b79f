package file

import (
	"os"
	"testing"
	"time"
)

// TestRev27AOKPerEpochNewOutputCrashBeforeFirstFlush checks
// DESIGN §6 (exactlyOnce file sink: a restart, a kill -9 included, writes
// every line once — the side record is what the output is truncated back
// to) for the layout-2 (per-epoch, glob feed) record: the fix of audit 9C
// (a new output's first record stored, synced, at open) is made in
// openRecord (layout 1) only.
//
// Observed: a PerEpoch sink with fsync interval opens a new output, writes
// "aa\nbb\n" (no flush yet), is "killed" (left unclosed) and reopened: the
// output is not truncated (size 6, want 0) — there is no record to truncate
// to — and the re-delivered lines go after their first copy: the output is
// "aa\nbb\naa\nbb\n", every line twice.
//
// Suspected cause: sink/file/record2.go:164-166 (epochRecord.reconcile: "no
// record yet" returns -1, false) and sink/file/perepoch.go:52 (openRecord2
// stores only when mustStore) — no first record stored at open as
// exactlyonce.go:221-232 now does for layout 1.
func TestRev27AOKPerEpochNewOutputCrashBeforeFirstFlush(t *testing.T) {
	e := newEOSink(t, FsyncInterval)
	open := func() *Sink {
		t.Helper()
		e.cp = &eoCheckpoint{}
		s, err := Open(Config{Path: e.out, Fsync: e.mode, Interval: time.Hour, Checkpoint: e.cp,
			Record: e.rec, PerEpoch: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	mustProcess(t, s, eoBatch(1, 0, "aa", "bb"))
	// kill -9: s left unclosed, no flush happened.
	s2 := open()
	defer s2.Close()
	size := s2.size
	mustProcess(t, s2, eoBatch(1, 0, "aa", "bb"))
	s2.Close()
	if got, _ := os.ReadFile(e.out); string(got) != "aa\nbb\n" {
		t.Fatalf("per-epoch record, crash before the first flush: reopened output size %d (want 0), output after the re-delivery %q, want each line once", size, got)
	}
}
