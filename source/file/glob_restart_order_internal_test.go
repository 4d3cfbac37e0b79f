package file

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The epoch barrier holds per path across a restart too (DESIGN §10
// "Order"; §4: at a restart the pointer's generation is read before the
// file at the path). a.log's line is read and committed, the daemon stops;
// while it is stopped, a.log gets 5,000 more lines and is rotated to
// a.1.log (matched), and a new a.log gets one line. At the restart the new
// a.log's line is published only after every line a.1.log held past its
// pointer was delivered (and acknowledged).
func TestGlobRestartNewFileAtPathWaitsForTheOldFilesTail(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "a.log")
	if err := os.WriteFile(a, []byte("old-00000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, stop := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 2*time.Second, nil)
	if got, _ := ig.popEpochs(time.Second, true); !slices.Equal(got, []string{"old-00000"}) {
		t.Fatalf("first run: %q", got)
	}
	stop()
	var b strings.Builder
	const more = 5000
	for i := 1; i <= more; i++ {
		fmt.Fprintf(&b, "old-%05d\n", i)
	}
	appendTo(t, a, b.String())
	if err := os.Rename(a, filepath.Join(dir, "a.1.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte("new-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _ := runGlobCfg(t, filepath.Join(dir, "*.log"), data, 2*time.Second, nil)
	var got []string
	for end := time.Now().Add(10 * time.Second); len(got) < more+1 && time.Now().Before(end); {
		l, _ := ig2.popEpochs(50*time.Millisecond, true)
		got = append(got, l...)
	}
	if len(got) != more+1 {
		t.Fatalf("after the restart: %d lines, want %d", len(got), more+1)
	}
	if i := slices.Index(got, "new-0"); i != more {
		t.Errorf("after the restart the new a.log's line was delivered at index %d, before the rotated file's last lines (%d of them); want it last", i, more)
	}
	old := slices.DeleteFunc(slices.Clone(got), func(l string) bool { return l == "new-0" })
	if !sortedStrings(old) || old[0] != "old-00001" {
		t.Errorf("the rotated file's lines out of order or not from its pointer: first %q", old[0])
	}
}

func sortedStrings(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i] < s[i-1] {
			return false
		}
	}
	return true
}
