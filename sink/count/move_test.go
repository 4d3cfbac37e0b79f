package count

import (
	"os"
	"path/filepath"
	"testing"

	"tailfeed/internal/datadir"
)

// A state an earlier tailfeed kept as state/<processor>.json moves to
// state/<processor>.count.json at the first open; never over a state
// already there, and never the daemon's removed.json or released.json.
func TestMoveOldStateOnce(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, datadir.State), 0o700)
	old, path := datadir.CountStateOld(dir, "counter"), datadir.CountState(dir, "counter")
	if err := os.WriteFile(old, []byte(`{"v":1,"counts":{"a":2}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := moveOldState(old, path); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != `{"v":1,"counts":{"a":2}}` {
		t.Fatalf("state at %s = %q, %v; want the old file's", path, b, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("old state still at %s (%v)", old, err)
	}
	// A newer state is never overwritten by an old one.
	os.WriteFile(old, []byte("older"), 0o600)
	if err := moveOldState(old, path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"v":1,"counts":{"a":2}}` {
		t.Fatalf("state overwritten: %q", b)
	}
	holds := filepath.Join(dir, datadir.State, "removed.json")
	os.WriteFile(holds, []byte(`{"holds":[]}`), 0o600)
	if got := datadir.CountStateOld(dir, "removed"); got != "" {
		t.Fatalf("CountStateOld(removed) = %q, want none (the daemon's holds file)", got)
	}
	if err := moveOldState(datadir.CountStateOld(dir, "removed"), datadir.CountState(dir, "removed")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(holds); err != nil {
		t.Fatalf("the daemon's removed.json was moved: %v", err)
	}
}
