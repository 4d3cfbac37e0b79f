package file

import (
	"os"
	"path/filepath"
	"strings"

	"tailfeed/internal/fileutil"
)

// outputs are the paths the daemon writes itself (Config.Outputs: file-sink
// outputs, dataDir). A file at one of them, or under one that is a
// directory, is never taken for the input's rotated file or copytruncate
// copy: a file sink writing next to its input produces a file that starts
// with the input's first bytes and is as long as what was consumed, and
// reading it as the input's copy would feed the sink's output back to it.
type outputs struct {
	paths []string // cleaned; symlinks resolved as well where they resolve
	files []FileID // Config.OutputFiles: outputs known by identity only
}

// FileID is a file's device and inode: an output the daemon writes that it
// knows by no path (its standard output redirected to a regular file,
// written by a stdout sink; Config.OutputFiles).
type FileID struct{ Dev, Ino uint64 }

// newOutputs keeps the outputs that do not hold the input path (a
// directory holding the input would hide every copy of it).
func newOutputs(list []string, input string) outputs {
	return keepOutputs(resolveOutputs(list), input)
}

// outPath is an output path, cleaned, and where its symlinks lead ("":
// nowhere else, or they do not resolve).
type outPath struct{ p, real string }

// resolveOutputs cleans the outputs and resolves their symlinks (a walk of
// every component: a glob feed resolves them once for many streams, see
// Glob.outputsNow).
func resolveOutputs(list []string) []outPath {
	var out []outPath
	for _, p := range list {
		if p == "" {
			continue
		}
		o := outPath{p: filepath.Clean(p)}
		if r, err := filepath.EvalSymlinks(o.p); err == nil && r != o.p {
			o.real = r
		}
		out = append(out, o)
	}
	return out
}

// keepOutputs is newOutputs over outputs resolveOutputs made.
func keepOutputs(res []outPath, input string) outputs {
	var o outputs
	in := filepath.Clean(input)
	for _, r := range res {
		if r.p != in && under(in, r.p) {
			continue
		}
		o.paths = append(o.paths, r.p)
		if r.real != "" {
			o.paths = append(o.paths, r.real)
		}
	}
	return o
}

// ownSet is the outputs as seen at the start of one directory scan.
type ownSet struct {
	o       *outputs
	realDir string             // the scanned directory with symlinks resolved
	ids     map[[2]uint64]bool // identities of the outputs that exist
}

// scan prepares the checks for one scan of dir.
func (o *outputs) scan(dir string) ownSet {
	set := ownSet{o: o}
	if len(o.paths) == 0 && len(o.files) == 0 {
		return set
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		set.realDir = r
	}
	set.ids = map[[2]uint64]bool{}
	for _, p := range o.paths {
		if dev, ino, err := fileutil.DevInoPath(p); err == nil {
			set.ids[[2]uint64{dev, ino}] = true
		}
	}
	for _, f := range o.files {
		set.ids[[2]uint64{f.Dev, f.Ino}] = true
	}
	return set
}

// has reports whether the entry name of the scanned directory dir, with
// identity (dev, ino), is one of the daemon's outputs or lies under one.
func (s ownSet) has(dir, name string, dev, ino uint64) bool {
	if s.o == nil || (len(s.o.paths) == 0 && len(s.o.files) == 0) {
		return false
	}
	if s.ids[[2]uint64{dev, ino}] {
		return true
	}
	cands := []string{filepath.Join(dir, name)}
	if s.realDir != "" {
		cands = append(cands, filepath.Join(s.realDir, name))
	}
	for _, c := range cands {
		for _, p := range s.o.paths {
			if under(c, p) {
				return true
			}
		}
	}
	return false
}

// under reports whether path is dir or lies below it (both cleaned).
func under(path, dir string) bool {
	if path == dir {
		return true
	}
	if strings.HasSuffix(dir, string(os.PathSeparator)) {
		return strings.HasPrefix(path, dir)
	}
	// Without building dir + "/": a rescan asks this for every file.
	return len(path) > len(dir) && path[len(dir)] == os.PathSeparator && strings.HasPrefix(path, dir)
}
