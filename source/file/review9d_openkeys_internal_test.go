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
	t.Parallel()
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
