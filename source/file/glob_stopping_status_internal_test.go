package file

import (
	"os"
	"path/filepath"
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
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 10*time.Second)
	n := ig.take(t) // popped, not acknowledged: the drain waits
	s := ig.stoppingStream(t)
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
	ig.waitFor(t, "a.log's stream closed", func() bool { return s.st != stStopping })
	if st, c := ig.g.StateCounts(); c.Behind != 0 || st != CaughtUp {
		t.Fatalf("closed: state %v, counts %+v", st, c)
	}
}

// A file deleted while its stream is closing, a line written to it through
// its writer's descriptor meanwhile: once the stream closes nobody can read
// that line, and it is counted — lostTails 1, lostBytes its length (and
// handed to OnLoss, the ledger, once the glob's mutex is released). Before,
// the descriptor was closed with the line unread and nothing counted
// (settled and lossless).
func TestStoppingStreamDeletedAndWrittenCountsItsTail(t *testing.T) {
	t.Parallel()
	ig := startInternalGlob(t, 50*time.Millisecond, 10*time.Second)
	n := ig.take(t)
	s := ig.stoppingStream(t)
	path := filepath.Join(filepath.Dir(ig.g.cfg.Stream.Path), "a.log")
	const line = "written-after-the-delete\n"
	writeAfter(t, path, func() error { return os.Remove(path) }, line)
	ig.waitFor(t, "the scan seeing a.log gone", func() bool { return s.gone })
	ig.q.AddDispatched(n)
	ig.pub.Poke()
	ig.waitFor(t, "a.log's stream closed", func() bool { return s.st == stClosed })
	if tails, bytes := ig.g.LostTails(), ig.g.LostBytes(); tails != 1 || bytes != uint64(len(line)) {
		t.Fatalf("deleted with a line unread: lostTails %d, lostBytes %d; want 1, %d", tails, bytes, len(line))
	}
}
