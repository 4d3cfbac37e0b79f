package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tailfeed/config"
)

// A single-file feed whose path is a file sink's output through a symlink
// (also one that dangles: the output is created at run), a chain of them,
// or a hard link is reported at the feed's line (DESIGN §10); another
// file is not.
func TestCheckOutputInputs(t *testing.T) {
	const src = `dataDir: ./state
feeds:
  - name: app
    path: ./in.log
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
`
	cases := []struct {
		name string
		make func(dir string) error
		bad  bool
	}{
		{"another file", func(dir string) error { return os.WriteFile(filepath.Join(dir, "in.log"), nil, 0o644) }, false},
		{"nothing there", func(dir string) error { return nil }, false},
		{"dangling symlink to the output", func(dir string) error { return os.Symlink("out.log", filepath.Join(dir, "in.log")) }, true},
		{"symlink chain", func(dir string) error {
			if err := os.WriteFile(filepath.Join(dir, "out.log"), nil, 0o644); err != nil {
				return err
			}
			if err := os.Symlink(filepath.Join(dir, "out.log"), filepath.Join(dir, "mid")); err != nil {
				return err
			}
			return os.Symlink("mid", filepath.Join(dir, "in.log"))
		}, true},
		{"symlinked directory", func(dir string) error {
			if err := os.Symlink(".", filepath.Join(dir, "here")); err != nil {
				return err
			}
			return os.Symlink("here/out.log", filepath.Join(dir, "in.log"))
		}, true},
		{"hard link", func(dir string) error {
			if err := os.WriteFile(filepath.Join(dir, "out.log"), nil, 0o644); err != nil {
				return err
			}
			return os.Link(filepath.Join(dir, "out.log"), filepath.Join(dir, "in.log"))
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := c.make(dir); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "c.yaml")
			bad := config.CheckOutputInputs(mustParse(t, src, file))
			if !c.bad {
				if len(bad) != 0 {
					t.Fatalf("reported %+v", bad)
				}
				return
			}
			if len(bad) != 1 || bad[0].Line != 3 || bad[0].Key != "feeds[0].path" ||
				!strings.Contains(bad[0].Msg, filepath.Join(dir, "in.log")) || !strings.Contains(bad[0].Msg, `"out"`) {
				t.Fatalf("got %+v, want one report at line 3 naming in.log and processor out", bad)
			}
		})
	}
}
