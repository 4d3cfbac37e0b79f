package file

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// dlRig is a group with a real file sink (optionally exactlyOnce) and a
// ledger, the sink refusing lines with "poison" while armed.
type dlRig struct {
	*grouptest.Rig
	dir    string
	out    string
	ledger *processor.Ledger
	armed  atomic.Bool
}

func newDLRig(t *testing.T, onFailure processor.OnFailure, exactlyOnce bool) *dlRig {
	t.Helper()
	return newDLRigFsync(t, onFailure, exactlyOnce, FsyncNever)
}

// newDLRigFsync is newDLRig with the sink's fsync policy (interval: 5 ms).
func newDLRigFsync(t *testing.T, onFailure processor.OnFailure, exactlyOnce bool, mode FsyncMode) *dlRig {
	t.Helper()
	return newDLRigAt(t, t.TempDir(), onFailure, exactlyOnce, mode)
}

// newDLRigAt makes the rig on the output, ledger and record in dir (a
// restart when dir was used before; the queue counts from 0 again and the
// same lines get the same positions).
func newDLRigAt(t *testing.T, dir string, onFailure processor.OnFailure, exactlyOnce bool, mode FsyncMode) *dlRig {
	t.Helper()
	l, err := processor.OpenLedger(filepath.Join(dir, "sink.jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &dlRig{dir: dir, out: filepath.Join(dir, "out.log"), ledger: l}
	r.armed.Store(true)
	r.Rig = grouptest.New(t, processor.GroupConfig{Name: "sink", Retry: grouptest.FastRetry(2), OnFailure: onFailure, Ledger: l})
	cfg := Config{Path: r.out, Checkpoint: r.G, Fsync: mode, Interval: 5 * time.Millisecond, Open: func(p string) (SinkFile, int64, error) {
		f, n, err := openAppend(p)
		if err != nil {
			return nil, 0, err
		}
		return poisonFile{f.(*os.File), []byte("poison"), &r.armed}, n, nil
	}}
	if exactlyOnce {
		cfg.Record = filepath.Join(dir, "sink.rec")
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.G.SetBatchProcessor(s)
	return r
}

// TestDeadLetterOneLine: a sink failing for one specific line → after the
// retry budget that line is in the ledger (raw bytes, error, attempts,
// position), the lines after it flow; a replay after the fault is gone
// delivers it and empties the ledger.
func TestDeadLetterOneLine(t *testing.T) {
	r := newDLRig(t, processor.DeadLetter, false)
	r.Run()
	poison := "poison \xff\x00 line"
	r.Publish("a", poison, "b")
	r.WaitAck(3, 10*time.Second) // a fenced subscriber refuses publishes: wait
	r.Publish("c")
	r.WaitAck(4, 10*time.Second)
	if got, want := r.output(), "a\nb\nc\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	if n := r.ledger.Len(); n != 1 {
		t.Fatalf("ledger holds %d entries, want 1", n)
	}
	if st, _ := r.Q.State(); st != feed.Live {
		t.Fatalf("subscriber %v after the dead letter, want LIVE", st)
	}
	items, total := r.ledger.List(10)
	e := items[0]
	raw, _ := base64.StdEncoding.DecodeString(e.LineBase64)
	if total != 1 || string(raw) != poison || e.Feed != "app" || e.Epoch != "00000000000000e1" ||
		e.Position != int64(len("a\n")+len(poison)+1) || !e.Positioned || e.Attempts != 2 ||
		!strings.Contains(e.Error, syscall.EIO.Error()) || e.Time == "" {
		t.Fatalf("entry %+v", *e.DeadLetterEntry)
	}
	if !strings.Contains(e.Line, "poison \ufffd\x00 line") {
		t.Fatalf("readable line %q", e.Line)
	}

	// Still failing: the entry stays.
	res, err := r.G.Replay(context.Background(), 10)
	if !errors.Is(err, processor.ErrReplayIncomplete) || res.Replayed != 0 || res.Remaining != 1 {
		t.Fatalf("replay while failing = %+v, %v", res, err)
	}
	r.armed.Store(false)
	res, err = r.G.Replay(context.Background(), 10)
	if err != nil || res.Replayed != 1 || res.Remaining != 0 {
		t.Fatalf("replay = %+v, %v", res, err)
	}
	if got, want := r.output(), "a\nb\nc\n"+poison+"\n"; got != want {
		t.Fatalf("output after the replay %q, want %q", got, want)
	}
	if _, err := os.Stat(r.ledger.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ledger file after the last entry left: %v", err)
	}
	if q := r.Q.Dispatched(); q != 4 {
		t.Fatalf("dispatched %d after the replay, want 4 (a replay holds no queue position)", q)
	}
}

// TestHoldKeepsRetrying: with onFailure hold the failing line is never
// skipped: the subscriber is fenced (the feed stalls) and retries at the cap
// until the fault is gone; then everything is written in order.
func TestHoldKeepsRetrying(t *testing.T) {
	r := newDLRig(t, processor.Hold, false)
	r.Run()
	r.Publish("a", "poison", "b")
	deadline := time.Now().Add(10 * time.Second)
	for r.G.Failures() < 6 {
		if time.Now().After(deadline) {
			t.Fatal("no retries")
		}
		time.Sleep(time.Millisecond)
	}
	if st, why := r.Q.State(); st != feed.Fenced || !r.Q.Stalling() || !strings.Contains(why, "input/output error") {
		t.Fatalf("state %v %q, want FENCED with the reason", st, why)
	}
	if r.Q.AckPoint() > 1 || r.ledger.Len() != 0 {
		t.Fatalf("ack point %d, ledger %d while holding", r.Q.AckPoint(), r.ledger.Len())
	}
	r.armed.Store(false)
	r.WaitAck(3, 10*time.Second)
	if got, want := r.output(), "a\npoison\nb\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	if st, _ := r.Q.State(); st != feed.Live {
		t.Fatalf("state %v after recovery, want LIVE", st)
	}
}

// TestReplayWritesThroughExactlyOnce: a replayed line has no position, so an
// exactlyOnce sink writes it although its record covers the position.
func TestReplayWritesThroughExactlyOnce(t *testing.T) {
	r := newDLRig(t, processor.DeadLetter, true)
	r.Run()
	r.Publish("a", "poison", "b")
	r.WaitAck(3, 10*time.Second)
	r.armed.Store(false)
	if res, err := r.G.Replay(context.Background(), 1); err != nil || res.Replayed != 1 {
		t.Fatalf("replay = %+v, %v", res, err)
	}
	if got, want := r.output(), "a\nb\npoison\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
}

// TestDeadLetterRedeliveredAfterCrashIsSkipped: [a, poison] dead-letters
// poison; a restart before the pointer passed it delivers both again with
// the fault gone: poison is not written (the ledger keeps it), the ack
// point passes it, and a replay writes it exactly once.
func TestDeadLetterRedeliveredAfterCrashIsSkipped(t *testing.T) {
	for _, tc := range []struct {
		name string
		eo   bool
		mode FsyncMode
		want string // the output after the re-delivery
	}{
		{"plain", false, FsyncNever, "a\na\n"}, // at-least-once: a again
		{"exactlyOnce", true, FsyncNever, "a\n"},
		{"exactlyOnce interval", true, FsyncInterval, "a\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := newDLRigAt(t, dir, processor.DeadLetter, tc.eo, tc.mode)
			r.Run()
			r.Publish("a", "poison")
			r.WaitAck(2, 10*time.Second)
			r.Cancel()
			<-r.G.Done()

			r = newDLRigAt(t, dir, processor.DeadLetter, tc.eo, tc.mode) // the restart: same output, ledger, record
			r.armed.Store(false)
			r.Run()
			r.Publish("a", "poison")
			r.WaitAck(2, 10*time.Second)
			if got := r.output(); got != tc.want {
				t.Fatalf("output after the re-delivery %q, want %q (the dead letter stays in the ledger only)", got, tc.want)
			}
			if n := r.ledger.Len(); n != 1 {
				t.Fatalf("ledger %d entries, want 1", n)
			}
			if res, err := r.G.Replay(context.Background(), 10); err != nil || res.Replayed != 1 {
				t.Fatalf("replay = %+v, %v", res, err)
			}
			if got, want := r.output(), tc.want+"poison\n"; got != want {
				t.Fatalf("output after the replay %q, want %q", got, want)
			}
		})
	}
}

// poisonFile fails every write that holds poison while armed, as a sink
// that cannot take one specific line.
type poisonFile struct {
	*os.File
	poison []byte
	armed  *atomic.Bool
}

func (f poisonFile) Write(p []byte) (int, error) {
	if f.armed.Load() && bytes.Contains(p, f.poison) {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Write(p)
}

func (r *dlRig) output() string {
	b, _ := os.ReadFile(r.out)
	return string(b)
}
