package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunDataDirEntryUnusable: a file tailfeed keeps under dataDir that
// cannot be opened or written (a directory in its place) is dataDir that
// "cannot be … written": exit 2 with "FILE:LINE: dataDir: …" (DESIGN §9;
// audit 9C: exit 1, "cannot start").
func TestRunDataDirEntryUnusable(t *testing.T) {
	for _, entry := range []string{"losses.jsonl", "feeds/app.ptr", "state/removed.json", "state/released.json"} {
		t.Run(entry, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "state", entry), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, "state"), 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "c.yaml")
			os.WriteFile(path, []byte(brokenBase), 0o600)
			_, stderr, code := cli(t, "run", "--config", path)
			if code != 2 || !strings.Contains(stderr, path+":1: dataDir:") {
				t.Errorf("%s a directory: exit %d, stderr %q; want 2 and %q", entry, code, stderr, path+":1: dataDir: …")
			}
		})
	}
}
