package file

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestFileSinkCreateSyncsDirectory: under fsync always or interval an
// output the sink creates gets its directory fsynced before the sink is
// used (a power loss must not take the new file's entry away); an output
// that exists, or fsync: never, does not; a failed directory fsync fails
// the open.
func TestFileSinkCreateSyncsDirectory(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   FsyncMode
		exists bool
		want   bool
	}{
		{"always creates", FsyncAlways, false, true},
		{"interval creates", FsyncInterval, false, true},
		{"never creates", FsyncNever, false, false},
		{"always existing", FsyncAlways, true, false},
		{"interval existing", FsyncInterval, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.log")
			if tc.exists {
				if err := os.WriteFile(out, []byte("a\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var synced []string
			s, err := Open(Config{Path: out, Fsync: tc.mode, Checkpoint: &eoCheckpoint{},
				SyncDir: func(d string) error { synced = append(synced, d); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := slices.Contains(synced, dir); got != tc.want {
				t.Fatalf("directory fsynced: %v (%q), want %v", got, synced, tc.want)
			}
		})
	}
	t.Run("failing directory fsync", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out.log")
		_, err := Open(Config{Path: out, Fsync: FsyncAlways,
			SyncDir: func(string) error { return syscall.EIO }})
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("open = %v, want EIO", err)
		}
	})
}

// TestFileSinkCreatesMissingDirectories: an output under directories that
// do not exist yet (DESIGN §7's ./var/out/app.log) gets them created; under
// fsync always each new directory's entry is synced in its parent, under
// never none is.
func TestFileSinkCreatesMissingDirectories(t *testing.T) {
	for _, mode := range []FsyncMode{FsyncAlways, FsyncNever} {
		root := t.TempDir()
		out := filepath.Join(root, "var", "out", "app.log")
		var synced []string
		s, err := Open(Config{Path: out, Fsync: mode, Checkpoint: &eoCheckpoint{},
			SyncDir: func(d string) error { synced = append(synced, d); return nil }})
		if err != nil {
			t.Fatalf("fsync %v: %v", mode, err)
		}
		s.Close()
		if _, err := os.Stat(out); err != nil {
			t.Fatalf("fsync %v: output not created: %v", mode, err)
		}
		var want []string
		if mode == FsyncAlways {
			want = []string{root, filepath.Join(root, "var"), filepath.Join(root, "var", "out")}
		}
		if !slices.Equal(synced, want) {
			t.Errorf("fsync %v: directories synced %q, want %q", mode, synced, want)
		}
	}
}
