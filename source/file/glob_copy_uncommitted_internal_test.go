package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// COMMITTED, glob *.log: a.log (past the 4 KiB fingerprint) is read and
// published, no line acknowledged yet (a paused or slow subscriber): its
// pointer names no file, holds no first bytes. logrotate copytruncate to a
// name the glob matches (a-1.log, dateext keeping the extension), then the
// application writes n-0 to the cut a.log. The copy is a new key whose
// first bytes are a tracked file's (DESIGN §10): held back for
// rotateWaitMillis, and a.log's stream, which reads on in it at the
// truncation, takes it — not read again from its start. Before, the glob
// told copies only by a pointer's first bytes (or, without pointers, the
// source's look): until the stream's first commit its copy was read as a
// new file, every old line delivered twice.
func TestGlobCopytruncateBeforeFirstCommitNotReadAgain(t *testing.T) {
	t.Parallel()
	content, n := pastFingerprint()
	dir, data, a := aLogIn(t, content)
	ig, stop := runGlobCfg(t, filepath.Join(dir, "*.log"), data, time.Second, func(c *GlobConfig) {
		c.Stream.RotateWait = 500 * time.Millisecond
	})
	defer stop()
	first, _ := ig.popEpochs(time.Second, false)
	if len(first) != n {
		t.Fatalf("first turn delivered %d lines, want %d", len(first), n)
	}
	if rec, _, err := ig.pointer(); err != nil || rec.FileKey != 0 || rec.FPLen != 0 {
		t.Fatalf("pointer %+v (%v): want one naming no file yet (nothing acknowledged)", rec, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a-1.log"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(a, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, "n-0\n")
	time.Sleep(200 * time.Millisecond)
	ig.q.AddDispatched(uint64(len(first)))
	ig.pub.Poke()
	got, _ := ig.popEpochs(2*time.Second, true)
	tails, bytes, detail := ig.lost()
	if strings.Join(got, ",") != "n-0" || tails != 0 {
		again := 0
		for _, l := range got {
			if strings.HasPrefix(l, "line-") {
				again++
			}
		}
		t.Fatalf("copytruncate to a-1.log before a.log's first commit: %d old lines delivered again, %d lines in all (want n-0 only); lostTails %d lostBytes %d (%q)",
			again, len(got), tails, bytes, detail)
	}
}
