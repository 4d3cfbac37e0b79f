package count

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/internal/fileutil"
	"tailfeed/sink"
)

func init() {
	sink.Register("count", sink.Type{New: open, OwnMatch: true, Describe: func(pc *config.Processor) []any {
		// Re-deliveries are always skipped (README: exactlyOnce is implied).
		return []any{"target", "counts, at GET /v1/state/" + pc.Name, "exactlyOnce", true}
	}})
}

// open builds a count processor; its state is
// dataDir/state/count/<processor>.json (datadir.CountState; a state an
// earlier tailfeed kept as <processor>.json is moved there first), saved at
// most fsyncIntervalMillis after a change. It applies match itself (the
// group does not filter a count processor by it).
func open(env sink.Env) (any, error) {
	pc := env.Config
	path := datadir.CountState(env.DataDir, pc.Name)
	if err := moveOldState(datadir.CountStateOld(env.DataDir, pc.Name), path); err != nil {
		return nil, err
	}
	return OpenCount(CountConfig{
		Name:       pc.Name,
		Path:       path,
		Match:      pc.Built.Match,
		Interval:   pc.Built.FsyncInterval,
		Checkpoint: env.Group,
		Glob:       map[string]bool{env.Feed.Name: config.IsGlob(env.Feed.Path)},
		Feed:       env.Feed.Name,
	})
}

// moveOldState makes path's directory, and renames the state file old
// (an earlier tailfeed's name for it; "": none) to path when path does not
// exist yet, and makes the rename durable.
func moveOldState(old, path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// Made durable with its entry: a state saved in it must not vanish
		// with the directory at a power loss.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("count state: %w", err)
		}
		if err := fileutil.SyncDir(filepath.Dir(dir)); err != nil {
			return fmt.Errorf("count state: %w", err)
		}
	}
	if old == "" {
		return nil
	}
	defer os.Remove(old + ".tmp") // an earlier tailfeed's save a crash interrupted: never read
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Lstat(old); err != nil {
		return nil
	}
	if err := os.Rename(old, path); err != nil {
		return fmt.Errorf("count state: move %s to %s: %w", old, path, err)
	}
	for _, dir := range []string{filepath.Dir(path), filepath.Dir(old)} {
		if err := fileutil.SyncDir(dir); err != nil {
			return fmt.Errorf("count state: moved %s to %s: %w", old, path, err)
		}
	}
	return nil
}
