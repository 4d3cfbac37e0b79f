package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"tailfeed/config"
)

// LoadPartial gives, with the errors of an invalid file, the config as far
// as it decoded (a reload lists the file-system problems of the paths that
// did decode with the file's own errors, DESIGN §12); a valid file gives
// what Load gives, and a file that cannot be read at all gives no config.
func TestLoadPartial(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	valid := "dataDir: ./state\nfeeds:\n  - {name: app, path: ./in.log}\nprocessors:\n  - {name: d, feed: app, type: discard}\n"

	p := write("valid.yaml", valid)
	want, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.LoadPartial(p)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadPartial(valid) = %+v, %v; want Load's %+v", got, err, want)
	}

	p = write("typeerr.yaml", "dataDir: ./state\nfeeds:\n  - {name: app, path: ./in.log, queueCapacity: abc}\n  - {name: b, path: ./b.log}\nprocessors:\n  - {name: d, feed: app, type: discard}\n")
	if cfg, err := config.Load(p); cfg != nil || err == nil {
		t.Fatalf("Load(invalid) = %v, %v; want nil and the errors", cfg, err)
	}
	cfg, err := config.LoadPartial(p)
	var errs *config.Errors
	if !errors.As(err, &errs) || len(*errs) == 0 || (*errs)[0].Line != 3 {
		t.Fatalf("LoadPartial(invalid) error = %v, want the *Errors at line 3", err)
	}
	if cfg == nil || len(cfg.Feeds) != 2 || cfg.Feeds[0].Path != filepath.Join(dir, "in.log") ||
		cfg.Feeds[1].Path != filepath.Join(dir, "b.log") || cfg.DataDir != filepath.Join(dir, "state") || cfg.DataDirLine != 1 {
		t.Fatalf("LoadPartial(invalid) config = %+v, want the feeds' paths and the dataDir decoded", cfg)
	}

	p = write("baddatadir.yaml", "dataDir: [x]\n"+valid[len("dataDir: ./state\n"):])
	if cfg, err := config.LoadPartial(p); err == nil || cfg == nil || cfg.DataDirLine != 0 {
		t.Fatalf("LoadPartial(bad dataDir) = %+v, %v; want DataDirLine 0 (not decoded)", cfg, err)
	}

	p = write("syntax.yaml", "feeds: [\n")
	if cfg, err := config.LoadPartial(p); err == nil || cfg != nil {
		t.Fatalf("LoadPartial(unreadable YAML) = %+v, %v; want no config", cfg, err)
	}
	if cfg, err := config.LoadPartial(filepath.Join(dir, "missing.yaml")); err == nil || cfg != nil {
		t.Fatalf("LoadPartial(missing) = %+v, %v; want no config", cfg, err)
	}
}
