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
// or a hard link is reported at the feed's path line (DESIGN §10); another
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
			if len(bad) != 1 || bad[0].Line != 4 || bad[0].Key != "feeds[0].path" ||
				!strings.Contains(bad[0].Msg, filepath.Join(dir, "in.log")) || !strings.Contains(bad[0].Msg, `"out"`) {
				t.Fatalf("got %+v, want one report at line 4 (its path key) naming in.log and processor out", bad)
			}
		})
	}
}

// Two file sinks whose outputs are one file on the file system — through
// a symlinked directory, a symlink (dangling too: created at run) or a
// hard link — are reported at the second one's line (DESIGN §6 "two file
// sinks on one path are a config error"); two files are not.
func TestCheckOutputOutputs(t *testing.T) {
	const src = `dataDir: ./state
feeds:
  - name: app
    path: ./in.log
processors:
  - name: a
    feed: app
    type: file
    path: ./real/out.log
  - name: b
    feed: app
    type: file
    path: ./other/out.log
`
	cases := []struct {
		name string
		make func(dir string) error
		bad  bool
	}{
		{"two directories", func(dir string) error {
			if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(dir, "other"), 0o755)
		}, false},
		{"symlinked directory", func(dir string) error {
			if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
				return err
			}
			return os.Symlink("real", filepath.Join(dir, "other"))
		}, true},
		{"dangling symlink to the other output", func(dir string) error {
			if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
				return err
			}
			if err := os.Mkdir(filepath.Join(dir, "other"), 0o755); err != nil {
				return err
			}
			return os.Symlink("../real/out.log", filepath.Join(dir, "other", "out.log"))
		}, true},
		{"hard link", func(dir string) error {
			for _, d := range []string{"real", "other"} {
				if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
					return err
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "real", "out.log"), nil, 0o644); err != nil {
				return err
			}
			return os.Link(filepath.Join(dir, "real", "out.log"), filepath.Join(dir, "other", "out.log"))
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := c.make(dir); err != nil {
				t.Fatal(err)
			}
			bad := config.CheckOutputOutputs(mustParse(t, src, filepath.Join(dir, "c.yaml")))
			if !c.bad {
				if len(bad) != 0 {
					t.Fatalf("reported %+v", bad)
				}
				return
			}
			if len(bad) != 1 || bad[0].Line != 10 || bad[0].Key != "processors[1].path" || !strings.Contains(bad[0].Msg, `"a"`) {
				t.Fatalf("got %+v, want one report at line 10 naming processor a", bad)
			}
		})
	}
}
