package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// DESIGN §10 "Never matched: … anything under dataDir", also when the
// walk reaches dataDir under another name than the configured one: dataDir
// a symlink to a directory under the glob ("link"), or the glob's root a
// symlink to a directory holding dataDir ("root"). Before, the walk
// compared only the configured path (and where a symlinked root led when
// dataDir's own path had a symlink), so it read dataDir's pointers and
// epochs file as input — and the pointers of those streams in turn, a
// feedback loop.
func TestGlobNeverReadsDataDirReachedThroughASymlink(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"link", "root"} {
		t.Run(mode, func(t *testing.T) {
			in := t.TempDir()
			if err := os.WriteFile(filepath.Join(in, "a.log"), []byte(numbered("a", 3)), 0o600); err != nil {
				t.Fatal(err)
			}
			var pattern, data, inData string
			switch mode {
			case "link":
				// dataDir is ./state, a symlink to in/real.
				inData = filepath.Join(in, "real")
				if err := os.Mkdir(inData, 0o700); err != nil {
					t.Fatal(err)
				}
				data = filepath.Join(t.TempDir(), "state")
				if err := os.Symlink(inData, data); err != nil {
					t.Fatal(err)
				}
				pattern = filepath.Join(in, "**", "*")
			case "root":
				// The glob's root ./logs is a symlink to in, which holds
				// dataDir in/state.
				data = filepath.Join(in, "state")
				inData = filepath.Join(in, "state")
				logs := filepath.Join(t.TempDir(), "logs")
				if err := os.Symlink(in, logs); err != nil {
					t.Fatal(err)
				}
				pattern = filepath.Join(logs, "**", "*")
			}
			ig, stop := runGlobCfg(t, pattern, data, 200*time.Millisecond, nil)
			got, _ := ig.popEpochs(1500*time.Millisecond, true)
			ig.g.mu.Lock()
			var under []string
			for p := range ig.g.byPath {
				if !strings.HasSuffix(p, "/a.log") {
					under = append(under, p)
				}
			}
			ig.g.mu.Unlock()
			stop()
			if strings.Join(got, ",") != "a-0,a-1,a-2" || len(under) > 0 {
				t.Fatalf("dataDir %s (really %s) reached under the glob %s: delivered %.200q, tracked besides a.log %q; want a-0..a-2 only, nothing under dataDir",
					data, inData, pattern, got, under)
			}
		})
	}
}
