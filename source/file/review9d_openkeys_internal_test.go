package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRev9DOKOpenKeysCountedToZeroAfterCopytruncate (probe): the change under
// review (a): a glob stream's key proves its file while the stream's source
// holds ANY descriptor on it (openKeys, counted per reader until its
// close). A stream whose source read a copytruncate copy (readCopy: the copy
// and the cut file, queued behind it) and the cut file's new lines, and then
// closed as inactive, must hold nothing: a count left over would make
// sameFile take another file with a reused inode for the stream's own.
func TestRev9DOKOpenKeysCountedToZeroAfterCopytruncate(t *testing.T) {
	ig := startInternalGlob(t, 1500*time.Millisecond, 5*time.Second)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	a := filepath.Join(dir, "a.log")
	stop := make(chan struct{})
	popped := make(chan int)
	go func() {
		got := 0
		for {
			select {
			case <-stop:
				popped <- got
				return
			default:
			}
			if b := ig.q.TryPop(); b != nil {
				got += b.Len()
				ig.q.AddDispatched(uint64(b.Len()))
				b.Release()
				ig.pub.Poke()
			} else {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()
	var s *gstream
	ig.waitFor(t, "a.log open", func() bool {
		s = ig.g.byPath[a]
		return s != nil && s.st == stOpen
	})
	time.Sleep(200 * time.Millisecond)
	srcs := map[*Source]bool{}
	for round := range 3 {
		old, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		var more strings.Builder
		for i := range 3 {
			fmt.Fprintf(&more, "r%d-late-%d\n", round, i)
		}
		// copytruncate with lines written between the copy and the cut
		// reaching the copy: copy, append to the copy, cut, write anew.
		cp := filepath.Join(dir, fmt.Sprintf("a.log.%d", round+1))
		if err := os.WriteFile(cp, append(old, more.String()...), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(a, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(a, []byte(fmt.Sprintf("r%d-new-0\nr%d-new-1\n", round, round)), 0o600); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(600 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			ig.g.mu.Lock()
			for _, x := range ig.g.byKey {
				if x.src != nil {
					srcs[x.src] = true
				}
			}
			ig.g.mu.Unlock()
		}
	}
	closed := false
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && !closed; time.Sleep(5 * time.Millisecond) {
		ig.g.mu.Lock()
		s = ig.g.byPath[a]
		closed = s != nil && s.st == stClosed
		for _, x := range ig.g.byKey {
			if x.src != nil {
				srcs[x.src] = true
			}
			if x.st != stClosed {
				closed = false
			}
		}
		ig.g.mu.Unlock()
	}
	if !closed {
		ig.g.mu.Lock()
		var rows []string
		for k, x := range ig.g.byKey {
			rows = append(rows, fmt.Sprintf("%x %s st=%d gone=%v src=%v", k, x.path, x.st, x.gone, x.src != nil))
		}
		ig.g.mu.Unlock()
		close(stop)
		t.Logf("popped %d lines; stream done=%v copyOf=%v touched=%v", <-popped, s.done, s.copyOf != nil, s.touched)
		t.Fatalf("a.log's stream not closed as inactive after 10 s: %v (byPath stream %+v)", rows, s)
	}
	close(stop)
	got := <-popped
	time.Sleep(300 * time.Millisecond) // the last source's Close (on the stopping goroutine)
	left := map[uint64]int{}
	for src := range srcs {
		src.fds.mu.Lock()
		for k, n := range src.fds.n {
			left[k] += n
		}
		src.fds.mu.Unlock()
	}
	t.Logf("%d lines delivered, %d sources seen", got, len(srcs))
	if len(left) != 0 {
		t.Errorf("a.log's stream closed, yet its source's openKeys still counts descriptors %v: holds() would answer true for a file it no longer holds", left)
	}
}

// TestRev9DXHClosedStreamCopytruncatedLinesNeitherReadNorCounted — DESIGN §4
// "Nothing green over a loss": a truncation with no copy counts; a
// copytruncate's copy is read ("a copy … looked for in the path's
// directory"); §10 a CLOSED file is still tracked and its identity checked
// at every look; §2 no line lost. a.log (5 lines) is read, acknowledged and
// closed as inactive (closeInactiveMillis 300). Then, between two looks of
// the glob, 3 lines are appended to it and it is rotated by copytruncate
// (cp a.log a.log.1 — outside the glob *.log —, truncate, 2 new lines), 3
// times. Expected: each round's 3 appended lines delivered (from the copy,
// as a single-file source's readCopy does: first bytes match, the copy is
// no shorter than what was consumed) or counted lost (lostTails/lostBytes
// > 0). Observed: in 3 of 4 runs some rounds' appended lines (9, 6, 3 of 9)
// are never delivered and nothing is counted (lostTails 0, lostBytes 0):
// sameFile finds the closed stream's key with other first bytes (the
// pointer's fingerprint) and takes it for inode reuse — a ghost stream and a
// new one read from 0 — so neither the cut file's tail nor its copy is
// looked at. Likely predates the diff (sameFile's pointer first-bytes check
// of a closed stream at its own path is older); not checked on the parent.
func TestRev9DXHClosedStreamCopytruncatedLinesNeitherReadNorCounted(t *testing.T) {
	ig := startInternalGlob(t, 300*time.Millisecond, 5*time.Second)
	dir := filepath.Dir(ig.g.cfg.Stream.Path)
	a := filepath.Join(dir, "a.log")
	stop := make(chan struct{})
	popped := make(chan map[string]int)
	go func() {
		got := map[string]int{}
		for {
			select {
			case <-stop:
				popped <- got
				return
			default:
			}
			if b := ig.q.TryPop(); b != nil {
				for _, l := range b.Lines {
					got[string(l)]++
				}
				ig.q.AddDispatched(uint64(b.Len()))
				b.Release()
				ig.pub.Poke()
			} else {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()
	var want []string
	for round := range 3 {
		ig.waitFor(t, "a.log's stream closed as inactive", func() bool {
			s := ig.g.byPath[a]
			return s != nil && s.st == stClosed
		})
		time.Sleep(150 * time.Millisecond)
		f, err := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			l := fmt.Sprintf("r%d-late-%d", round, i)
			want = append(want, l)
			fmt.Fprintln(f, l)
		}
		f.Close()
		// copytruncate at once (before the glob's next look, 100 ms).
		old, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("a.log.%d", round+1)), old, 0o600); err != nil {
			t.Fatal(err)
		}
		nf, err := os.OpenFile(a, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			l := fmt.Sprintf("r%d-new-%d", round, i)
			want = append(want, l)
			fmt.Fprintln(nf, l)
		}
		nf.Close()
		time.Sleep(1200 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	got := <-popped
	var missing []string
	for _, l := range want {
		if got[l] == 0 {
			missing = append(missing, l)
		}
	}
	tails, bytes, detail := ig.lost()
	t.Logf("%d distinct lines delivered; missing %v; lostTails %d lostBytes %d detail %q", len(got), missing, tails, bytes, detail)
	if len(missing) > 0 && tails == 0 && bytes == 0 {
		t.Errorf("%d of %d lines appended to a closed glob file and then rotated by copytruncate (copy a.log.N beside it) were never delivered, and nothing was counted lost (lostTails 0, lostBytes 0): %v. DESIGN §2 no line lost; §4 nothing green over a loss",
			len(missing), len(want), missing)
	}
}
