package file_test

import (
	"os"
	"sync"
	"testing"
	"time"

	"tailfeed/source/file"
)

// TestEpochBarrierTellsThePublisher: while the barrier waits, the
// publisher's Barrier() names the new epoch (a webhook holding lines of the
// old one back learns that no more of them will come); once it is crossed,
// it is 0 again.
func TestEpochBarrierTellsThePublisher(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, block: block})
	var unblock sync.Once
	open := func() { unblock.Do(func() { close(block) }) }
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	t.Cleanup(open) // before the rig's stop, which drains
	r.waitFor("the first file read", 10*time.Second, func() bool { return r.src.LinesRead() >= 5 })
	if e := r.pub.Barrier(); e != 0 {
		t.Fatalf("Barrier() %016x before any switch, want 0", e)
	}
	old := r.src.Epoch()
	newFile := r.path + ".new"
	appendTo(t, newFile, numbered("b", 0, 3)...)
	if err := os.Rename(newFile, r.path); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the barrier", 10*time.Second, func() bool { return r.pub.Barrier() != 0 })
	waiting := r.pub.Barrier()
	if waiting == old || r.src.Epoch() != old {
		t.Fatalf("Barrier() %016x, source epoch %016x (old %016x): want the new epoch while the old one is current", waiting, r.src.Epoch(), old)
	}
	open()
	r.waitLines(8)
	if e := r.pub.Barrier(); e != 0 || r.src.Epoch() != waiting {
		t.Fatalf("after the switch Barrier() %016x, epoch %016x; want 0, %016x", e, r.src.Epoch(), waiting)
	}
}
