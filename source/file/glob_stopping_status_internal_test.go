package file

import (
	"testing"
	"time"
)

// A file read to its end whose stream is stopping (closed as inactive, its
// drain waiting for the last lines' acknowledgements) is read to its end:
// not counted in filesBehind, CAUGHT_UP in ?files=1 at its read offset.
// Before, every stopping stream counted as behind and was listed BEHIND at
// the offset of its last close (0 for a new file): a 1,000-file start saw
// filesBehind jump back up by the hundreds of files it had just finished.
// The feed is still not settled (CommitOK) until the stream's final commit.
func TestStoppingStreamReadToItsEndIsNotBehind(t *testing.T) {
	ig := startInternalGlob(t, 50*time.Millisecond, 10*time.Second)
	n := ig.take(t) // popped, not acknowledged: the drain waits
	stopping := func() bool {
		ig.g.mu.Lock()
		defer ig.g.mu.Unlock()
		for _, s := range ig.g.byKey {
			if s.st == stStopping {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for !stopping() {
		if time.Now().After(deadline) {
			t.Fatal("a.log's stream not stopping after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, c := ig.g.StateCounts()
	if c.Behind != 0 || st != CaughtUp {
		t.Fatalf("stopping stream read to its end: state %v, counts %+v; want CAUGHT_UP, 0 behind", st, c)
	}
	files := ig.g.Files()
	if len(files) != 1 || files[0].State != CaughtUp.String() || files[0].Offset != ig.size {
		t.Fatalf("files while stopping: %+v; want a.log CAUGHT_UP at offset %d", files, ig.size)
	}
	if ig.g.CommitOK() {
		t.Fatal("CommitOK while a stream is stopping with lines unacknowledged")
	}
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	for stopping() {
		if time.Now().After(deadline) {
			t.Fatal("a.log's stream still stopping 10 s after its lines were acknowledged")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st, c := ig.g.StateCounts(); c.Behind != 0 || st != CaughtUp {
		t.Fatalf("closed: state %v, counts %+v", st, c)
	}
}
