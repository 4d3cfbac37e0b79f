package file

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
)

// A glob stream (Pinned) never reads another file at its path, so it
// keeps no catalogue of the generations beside its file: opening it lists
// no directory and reads no neighbour's first bytes. Before, every open of
// every stream listed its directory and read the head of each file with a
// rotated name (10,000 files in one directory: 10,000 entries per open,
// 10^8 at a start).
func TestPinnedOpenCataloguesNoGenerations(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	for _, p := range []string{in, in + ".1", in + ".2", in + "-20261201"} {
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Config{Feed: "f", Path: in, Strategy: Earliest, Pinned: true, NoNotify: true}, nil)
	if err := s.open(); err != nil {
		t.Fatal(err)
	}
	defer s.cur.close()
	if len(s.genSeen) != 0 {
		t.Fatalf("a pinned stream's open catalogued %d files (generations it never reads)", len(s.genSeen))
	}
}

// A stream still STARTING (its pointer being created: fsyncs that take
// seconds when hundreds of streams start at once) has not had its turn: it
// is not preempted for the streams waiting for a slot however long it has
// held one. Before, such streams were stopped and queued again before
// reading a byte; each came back on a pointer that existed but was empty,
// and the whole start churned (and paid for that reopen, see
// TestPinnedEmptyPointerReadsOnlyItsFile).
func TestGlobPreemptSparesStartingStream(t *testing.T) {
	q := feed.NewQueue("q", 16, 1<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("f", []*feed.Queue{q}, 64, 16)
	g, err := NewGlob(GlobConfig{Stream: Config{Feed: "f", Path: filepath.Join(t.TempDir(), "*.log")}}, pub)
	if err != nil {
		t.Fatal(err)
	}
	defer g.mux.close()
	s := &gstream{path: "a.log", key: 1, st: stOpen, openedAt: time.Now().Add(-5 * time.Second)}
	s.sp = g.mux.add()
	s.src = New(Config{Feed: "f", Path: "a.log"}, s.sp) // STARTING
	_, s.cancel = context.WithCancel(context.Background())
	s.runDone = make(chan struct{})
	close(s.runDone)
	g.byKey[1] = s
	g.open = 1
	g.queue = []*gstream{{path: "b.log", key: 2, st: stQueued}}
	g.preempt()
	if s.st != stOpen {
		t.Fatal("a stream still starting was preempted")
	}
	// Once it reads, its second counts: it gives the slot up.
	s.src.setState(Behind)
	g.preempt()
	if s.st != stStopping {
		t.Fatal("a stream that had its turn kept its slot while another waits")
	}
	<-g.stopped
}
