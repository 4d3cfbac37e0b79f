package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
)

// findCopy takes only a file that can be the copy: matching first bytes,
// long enough, not modified after the truncation was noticed, not one of
// the daemon's own outputs (by path, by identity through a symlink; a
// declared directory holding the input is ignored).
func TestFindCopyRules(t *testing.T) {
	t.Parallel()
	content := []byte("line-1\nline-2\nline-3\n")
	trunc := time.Now().Add(-time.Hour) // when the truncation was noticed
	cases := []struct {
		name    string
		mtime   time.Time // the candidate's
		outputs func(dir string) []string
		found   bool
	}{
		{"older copy", trunc.Add(-time.Minute), nil, true},
		{"same time", trunc, nil, true},
		{"modified after the truncation was noticed", trunc.Add(time.Second), nil, false},
		{"declared output", trunc.Add(-time.Minute), func(dir string) []string {
			return []string{filepath.Join(dir, "app.log.1")}
		}, false},
		{"a declared directory holding the input", trunc.Add(-time.Minute), func(dir string) []string {
			return []string{dir + "/"}
		}, true}, // a directory holding the input is ignored
		{"declared through a symlink", trunc.Add(-time.Minute), func(dir string) []string {
			link := filepath.Join(t.TempDir(), "out.log")
			if err := os.Symlink(filepath.Join(dir, "app.log.1"), link); err != nil {
				t.Fatal(err)
			}
			return []string{link}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "app.log")
			cp := filepath.Join(dir, "app.log.1")
			if err := os.WriteFile(in, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cp, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(cp, c.mtime, c.mtime); err != nil {
				t.Fatal(err)
			}
			cfg := Config{Path: in}
			if c.outputs != nil {
				cfg.Outputs = c.outputs(dir)
			}
			s := New(cfg, nil)
			f, _, _ := s.findCopy(len(content), pointer.Fingerprint(content), 14, trunc, func(uint64, uint64) bool { return false })
			if f != nil {
				f.Close()
			}
			if (f != nil) != c.found {
				t.Fatalf("found %v, want %v", f != nil, c.found)
			}
		})
	}
}

// A file under a declared directory that does not hold the input (dataDir
// next to the input's directory) is skipped.
func TestFindCopySkipsFilesUnderDataDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "logs")
	data := filepath.Join(root, "logs", "state")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "app.log")
	if err := os.WriteFile(in, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Path: in, Outputs: []string{data, filepath.Join(dir, "out.log")}}, nil)
	own := s.outs.scan(dir)
	if !own.has(dir, "out.log", 0, 0) || own.has(dir, "app.log.1", 0, 0) {
		t.Fatal("declared output file not recognised, or an undeclared one taken for it")
	}
	if !own.has(data, "x.rec", 0, 0) {
		t.Fatal("a file under the declared directory is not recognised")
	}
}
