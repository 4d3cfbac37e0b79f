package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OutputInput is a single-file feed whose path names a file sink's output
// on the file system (CheckOutputInputs).
type OutputInput struct {
	Feed int    // the index in Feeds (-1: a processor's path, CheckOutputOutputs)
	Line int    // the feed's path key line (its entry's when none)
	Key  string // "feeds[i].path"
	Msg  string // what is wrong, naming the path and the processor
}

// Error is "KEY: message" (the file and line are the caller's).
func (o OutputInput) Error() string { return o.Key + ": " + o.Msg }

// CheckOutputInputs reports the single-file feeds whose path is, as the
// file system has it now, a file sink's output (DESIGN §10 "a single-file
// feed whose path is a sink's output is a config error"): the same path
// once the symlinks of both are followed as far as they lead (a link to an
// output not created yet counts), or the same file (device and inode: a
// hard link). The same path as written is decode's error already. `run`
// calls it (at start and at a reload); `validate` checks the file only
// (DESIGN §9).
func CheckOutputInputs(cfg *Config) []OutputInput {
	var out []OutputInput
	for i, f := range cfg.Feeds {
		if f.Path == "" || IsGlob(f.Path) {
			continue // a glob's matches are excluded one by one (DESIGN §10)
		}
		in := resolveAsFar(f.Path)
		inInfo, inErr := os.Stat(f.Path)
		for j, p := range cfg.Processors {
			o := p.OutputPath()
			if o == "" || o == f.Path {
				continue
			}
			same := resolveAsFar(o) == in
			if !same && inErr == nil {
				if oi, err := os.Stat(o); err == nil && os.SameFile(inInfo, oi) {
					same = true
				}
			}
			if same {
				out = append(out, OutputInput{Feed: i, Line: max(f.PathLine, f.Line), Key: fmt.Sprintf("feeds[%d].path", i), Msg: fmt.Sprintf(
					"%s is %s, the output of %s processor %s (line %d); a feed cannot read what a sink writes",
					f.Path, o, p.Type, describeProc(p, j), p.Line)})
				break
			}
		}
	}
	return out
}

// CheckOutputOutputs reports the file sinks whose output is, as the file
// system has it now, the output of an earlier file sink (DESIGN §6 "two
// file sinks on one path are a config error"): the same path once the
// symlinks of both are followed as far as they lead (a symlinked
// directory, a link to an output not created yet), or the same file
// (device and inode: a hard link). Two sinks appending to one file write
// every line twice, and an exactlyOnce sink's truncate at open would cut
// the other's lines. The same path as written is decode's error already;
// `run` calls it (at start and at a reload); `validate` checks the file
// only (DESIGN §9).
func CheckOutputOutputs(cfg *Config) []OutputInput {
	var out []OutputInput
	type seen struct {
		i        int
		resolved string
		info     os.FileInfo
	}
	var earlier []seen
	for i, p := range cfg.Processors {
		o := p.OutputPath()
		if o == "" {
			continue
		}
		cur := seen{i: i, resolved: resolveAsFar(o)}
		cur.info, _ = os.Stat(o)
		for _, e := range earlier {
			q := cfg.Processors[e.i]
			if q.OutputPath() == o {
				continue // decode's error (the same path as written)
			}
			if e.resolved == cur.resolved || (e.info != nil && cur.info != nil && os.SameFile(e.info, cur.info)) {
				out = append(out, OutputInput{Feed: -1, Line: p.Line, Key: fmt.Sprintf("processors[%d].path", i), Msg: fmt.Sprintf(
					"%s is %s, the output of %s processor %s (line %d), on the file system (a symlink or a hard link); two file sinks cannot share a file",
					o, q.OutputPath(), q.Type, describeProc(q, e.i), q.Line)})
				break
			}
		}
		earlier = append(earlier, cur)
	}
	return out
}

// resolveAsFar is p with its symlinks followed as far as they lead: a
// final component that does not exist, or a dangling symlink's target,
// is kept as named (filepath.EvalSymlinks fails on those). A link's target
// is never cleaned as text: a ".." after a symlinked component goes to the
// parent of where that symlink leads, as the kernel resolves it.
func resolveAsFar(p string) string {
	for range 40 { // as the kernel's MAXSYMLINKS
		dir, base := filepath.Split(p)
		if base == "" || base == "." || base == ".." {
			return evalExisting(p)
		}
		dir = evalExisting(dir)
		q := filepath.Join(dir, base)
		t, err := os.Readlink(q)
		if err != nil {
			return q
		}
		if !filepath.IsAbs(t) {
			t = dir + "/" + t
		}
		p = t
	}
	return filepath.Clean(p)
}

// evalExisting is dir with its symlinks followed component by component as
// far as they lead: through an ancestor that exists, and through a link
// whose target does not exist yet (a sink's output directory it will
// create, under a symlinked or dangling one); filepath.EvalSymlinks fails
// on either. ".." goes to the parent of the component resolved so far.
func evalExisting(dir string) string {
	if !filepath.IsAbs(dir) {
		if wd, err := os.Getwd(); err == nil {
			dir = wd + "/" + dir
		}
	}
	parts := strings.Split(dir, "/")
	cur := "/"
	for hops := 0; len(parts) > 0; {
		c := parts[0]
		parts = parts[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			cur = next // a directory, or nothing yet: kept as named
			continue
		}
		if hops++; hops > 40 { // as the kernel's MAXSYMLINKS
			return filepath.Clean(dir)
		}
		t, err := os.Readlink(next)
		if err != nil {
			cur = next
			continue
		}
		if filepath.IsAbs(t) {
			cur = "/"
		}
		parts = append(strings.Split(t, "/"), parts...)
	}
	return cur
}
