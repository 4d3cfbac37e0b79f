package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"tailfeed/internal/fileutil"
)

// Fault is an error that is dataDir's fault (the config's: exit 2): the
// way to it, its modes or owners, or a file in it that is not what it
// should be. Unwrap gives the cause.
type Fault struct{ Err error }

func (e *Fault) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Fault) Unwrap() error { return e.Err }

func fault(err error) error { return &Fault{Err: err} }

// tailfeed's own names in dataDir are Top and, for the files of its own
// directories whose mode it may tighten, Suffixes. Nothing else under
// dataDir is tailfeed's: it never changes the mode of a file it did not
// create (DESIGN §12 refuses a loose dataDir, it does not chmod -R it).

// Open creates dataDir private (DESIGN §12: the directories 0700,
// every file 0600) and takes the LOCK, opened for writing and never
// through a symlink. The way to dataDir is checked first, as ssh's
// StrictModes does: every directory and symlink on it must belong to root
// or to this process's user, and none may be writable by group or others
// unless sticky (as /tmp), so no other user can swap a component for a
// symlink to a directory tailfeed would then create files in or chmod. A
// dataDir (or its feeds/, dlq/, state/) another user owns or group or
// others may write is refused; one they may only read is made private
// when it holds nothing but tailfeed's own files, and is left as it is
// (with a WARN) when it holds other files too: tailfeed's own directories
// and files in it are private either way.
func Open(dataDir string, log hclog.Logger) (*os.File, error) {
	return opener{dataDir: dataDir, log: log}.open()
}

// opener is one Open: the configured dataDir (for messages) and the logger.
type opener struct {
	dataDir string
	log     hclog.Logger
}

func (o opener) open() (*os.File, error) {
	dir, err := o.checkWay(o.dataDir, true)
	if err != nil {
		return nil, err
	}
	_, err = os.Lstat(dir)
	created := errors.Is(err, fs.ErrNotExist)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fault(err)
	}
	if dir, err = o.checkWay(dir, false); err != nil { // what MkdirAll created (WARNs said)
		return nil, err
	}
	if err := o.checkPrivate(dir, !created); err != nil {
		return nil, err
	}
	for _, sub := range Dirs {
		p := filepath.Join(dir, sub)
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fault(err)
		}
		if err := o.checkPrivate(p, false); err != nil {
			return nil, err
		}
	}
	o.tightenOwn(dir)
	probe := WriteProbePath(dir)
	pf, err := fileutil.OpenNoFollow(probe, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fault(err)
	}
	pf.Close()
	os.Remove(probe)
	lockPath := LockPath(dir)
	f, err := fileutil.OpenNoFollow(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		if fileutil.IsSymlinkErr(err) {
			err = fmt.Errorf("%s is a symbolic link; tailfeed takes its lock only on a regular file there", lockPath)
		}
		return nil, fault(err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file", lockPath)
		}
		return nil, fault(err)
	} else if fi.Mode().Perm() != 0o600 {
		f.Chmod(0o600)
	}
	if err := fileutil.Lock(f); err != nil {
		f.Close()
		return nil, err
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return f, nil
}

// checkWay walks the absolute path p from "/" one component at a time
// (lstat, following each symlink by hand) and refuses it when a directory
// or symlink on the way (p itself included) belongs to a user other than
// root or this process's user, or when a directory before p is writable
// by group or others without the sticky bit: such a user could replace
// the next component with a symlink. A daemon not running as root can only
// change its own user's files, so there a writable directory on the way
// is a WARN. The walk stops at the first component that does not exist
// yet (MkdirAll creates it, under a directory checked). It returns p with
// every symlink resolved: nobody else can change that way.
func (o opener) checkWay(p string, warn bool) (string, error) {
	if !filepath.IsAbs(p) { // config resolves it; a relative one is the cwd's
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fault(err)
		}
		p = abs
	}
	euid := os.Geteuid()
	rest := splitPath(p)
	cur, hops := "/", 0
	if err := o.checkWayDir(cur, euid, len(rest) > 0, warn); err != nil {
		return "", err
	}
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", fault(err)
		}
		last := len(rest) == 0 && fi.Mode()&fs.ModeSymlink == 0 // dataDir itself: checkPrivate's
		if uid, ok := fileutil.Owner(fi); ok && uid != 0 && uid != euid && !last {
			return "", fault(fmt.Errorf("%s (on the way to %s) is owned by user id %d; tailfeed refuses a dataDir whose path another user controls (every directory and symlink on it must belong to root or to user id %d)", next, p, uid, euid))
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if hops++; hops > 40 {
				return "", fault(fmt.Errorf("%s: too many symbolic links", p))
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", fault(err)
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(splitPath(target), rest...)
			continue
		}
		if !fi.IsDir() {
			return "", fault(fmt.Errorf("%s is not a directory", next))
		}
		cur = next
		if err := o.checkWayDir(cur, euid, len(rest) > 0, warn); err != nil {
			return "", err
		}
	}
	return cur, nil
}

// checkWayDir checks a directory on the way to dataDir for write access by
// group or others (dataDir itself, when more is to come, is checkPrivate's).
func (o opener) checkWayDir(p string, euid int, before, warn bool) error {
	if !before {
		return nil
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return fault(err)
	}
	if uid, ok := fileutil.Owner(fi); ok && uid != 0 && uid != euid {
		return fault(fmt.Errorf("%s (on the way to %s) is owned by user id %d; tailfeed refuses a dataDir whose path another user controls", p, o.dataDir, uid))
	}
	perm := fi.Mode()
	if perm.Perm()&0o022 == 0 || perm&fs.ModeSticky != 0 {
		return nil
	}
	msg := fmt.Sprintf("%s (on the way to %s) is writable by group or others (mode %04o) without the sticky bit: another user could replace what follows with a symbolic link", p, o.dataDir, perm.Perm())
	if euid == 0 {
		return fault(fmt.Errorf("%s; tailfeed running as root refuses it (chmod go-w %s, or choose a dataDir under a directory only root can write)", msg, p))
	}
	if warn {
		o.log.Warn("the way to dataDir is not private", "detail", msg)
	}
	return nil
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(filepath.ToSlash(p), "/"), "/")
}

// checkPrivate refuses the directory p when it is a symlink, another user
// owns it or group or others may write it, and makes it 0700 (with a WARN,
// through a descriptor opened without following a symlink) when group or
// others may only read or search it. With foreign set (an existing
// dataDir, not one this run created) it does so only when p holds nothing
// but tailfeed's own names; else it leaves the mode with a WARN.
func (o opener) checkPrivate(p string, foreign bool) error {
	f, err := fileutil.OpenNoFollow(p, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		if fileutil.IsSymlinkErr(err) {
			return fault(fmt.Errorf("%s is a symbolic link; tailfeed keeps its state only in a real directory there", p))
		}
		if errors.Is(err, syscall.ENOTDIR) {
			return fault(fmt.Errorf("%s is not a directory", p))
		}
		return fault(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fault(err)
	}
	if !fi.IsDir() {
		return fault(fmt.Errorf("%s is not a directory", p))
	}
	if uid, ok := fileutil.Owner(fi); ok && uid != os.Geteuid() {
		return fault(fmt.Errorf("%s is owned by user id %d, not by this process's user (%d); tailfeed refuses a dataDir another user controls", p, uid, os.Geteuid()))
	}
	perm := fi.Mode().Perm()
	if perm&0o022 != 0 {
		return fault(fmt.Errorf("%s is writable by group or others (mode %04o); tailfeed refuses a dataDir others can change (chmod 700 %s)", p, perm, p))
	}
	if perm&0o077 == 0 {
		return nil
	}
	if foreign {
		names, err := f.Readdirnames(-1)
		if err != nil {
			return fault(err)
		}
		for _, n := range names {
			if !Top(n) {
				o.log.Warn("dataDir is readable by group or others and holds files that are not tailfeed's; left its mode as it is (tailfeed's own directories and files in it are private); a dedicated directory is best",
					"path", p, "mode", fmt.Sprintf("%04o", perm), "foreign", n)
				return nil
			}
		}
	}
	if err := f.Chmod(perm & 0o700); err != nil {
		return fault(err)
	}
	o.log.Warn("dataDir was readable by group or others; made it private", "path", p,
		"mode", fmt.Sprintf("%04o", perm), "now", fmt.Sprintf("%04o", perm&0o700))
	return nil
}

// tightenOwn takes group and other bits off tailfeed's own files (LOCK,
// losses.jsonl, feeds/*.ptr, feeds/*.epochs, dlq/*.jsonl, state/*: what
// an older version created 0644), with one WARN. Each is opened without
// following a symlink and changed through its descriptor, and only when it
// is a regular file of this process's user; nothing else is touched.
func (o opener) tightenOwn(dir string) {
	paths := []string{LockPath(dir), LossesPath(dir)}
	for sub, suffixes := range Suffixes {
		names, err := readNames(filepath.Join(dir, sub))
		if err != nil {
			o.log.Warn("cannot list a directory in dataDir", "path", filepath.Join(dir, sub), "error", err)
			continue
		}
		for _, n := range names {
			for _, s := range suffixes {
				if strings.HasSuffix(n, s) {
					paths = append(paths, filepath.Join(dir, sub, n))
					break
				}
			}
		}
	}
	n := 0
	for _, p := range paths {
		changed, err := tightenFile(p)
		if err != nil {
			o.log.Warn("cannot make a file in dataDir private", "path", p, "error", err)
		}
		if changed {
			n++
		}
	}
	if n > 0 {
		o.log.Warn("files in dataDir were readable by group or others; made them private", "dataDir", dir, "files", n)
	}
}

func readNames(dir string) ([]string, error) {
	f, err := fileutil.OpenNoFollow(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// tightenFile makes p 0600-like (perm&0700) when it is a regular file of
// this process's user that group or others may access.
func tightenFile(p string) (bool, error) {
	f, err := fileutil.OpenNoFollow(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
		return false, nil
	}
	if uid, ok := fileutil.Owner(fi); ok && uid != os.Geteuid() {
		return false, fmt.Errorf("owned by user id %d, not this process's user; left as it is", uid)
	}
	return true, f.Chmod(fi.Mode().Perm() & 0o700)
}
