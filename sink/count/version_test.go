package count

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tailfeed/internal/grouptest"
	"tailfeed/processor"
)

// TestCountStateVersion: a saved state carries "v":1; a file written
// before the field existed still loads (as version 1); a newer one is
// refused with an error naming the file, and left as it was.
func TestCountStateVersion(t *testing.T) {
	dir := t.TempDir()
	r := grouptest.New(t, processor.GroupConfig{Name: "counter", Retry: grouptest.FastRetry(1)})
	path := filepath.Join(dir, "counter.json")
	c := openCountT(t, path, "", r.G)
	c.ProcessBatch(t.Context(), grouptest.Batch(3, 0, "a"))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), `{"v":1,`) {
		t.Fatalf("saved state %s does not start with \"v\":1", data)
	}

	old := filepath.Join(dir, "old.json")
	unversioned := `{"processor":"counter","type":"count","counts":{"a":7},"feeds":{"app":{"epoch":"0000000000000003","position":2}}}` + "\n"
	if err := os.WriteFile(old, []byte(unversioned), 0o600); err != nil {
		t.Fatal(err)
	}
	c = openCountT(t, old, "", r.G)
	if got := counts(c)["a"]; got != 7 {
		t.Fatalf("unversioned state: a=%d, want 7", got)
	}

	future := filepath.Join(dir, "future.json")
	body := `{"v":2,"processor":"counter","type":"count","counts":{"a":7},"feeds":{}}` + "\n"
	if err := os.WriteFile(future, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenCount(CountConfig{Name: "counter", Path: future, Checkpoint: r.G})
	if !errors.Is(err, ErrStateVersion) || !strings.Contains(err.Error(), future+": version 2") {
		t.Fatalf("state of version 2: %v, want ErrStateVersion naming %s", err, future)
	}
	if after, _ := os.ReadFile(future); string(after) != body {
		t.Fatalf("refused state changed: %q", after)
	}
}
