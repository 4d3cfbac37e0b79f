package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
)

// tailfeed changes the mode of its own files only, never chmod -R of
// whatever directory dataDir names (review of issue 11 item 13, D1). A
// dataDir that is an existing shared directory (dataDir: . next to the
// config, a volume root, /var/lib by mistake) has its own mode changed to
// 0700 and every unrelated file and directory under it stripped of its
// group and other bits: here the application's log directory, its log and
// the config file itself (what the first version did). DESIGN §12
// refuses a loose dataDir; it never asks tailfeed to change files it did
// not create: such a dataDir keeps its mode, with a WARN.
func TestDataDirForeignFilesKeepTheirModes(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	foreignDir := filepath.Join(dir, "app-logs")
	foreign := filepath.Join(foreignDir, "other.log")
	os.Mkdir(foreignDir, 0o755)
	os.WriteFile(foreign, []byte("x\n"), 0o644)
	os.Chmod(foreignDir, 0o755)
	os.Chmod(foreign, 0o644)
	e := startIn(t, dir, `dataDir: %DIR%
status: {listen: "127.0.0.1:0"}
feeds:
  - {name: app, path: %DIR%/app-logs/app.log}
processors:
  - {name: d, feed: app, type: discard}
`, Options{})
	e.Stop()
	for p, want := range map[string]os.FileMode{dir: 0o755, foreignDir: 0o755, foreign: 0o644,
		filepath.Join(dir, "tailfeed.yaml"): 0o644} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o after start, was %04o (not tailfeed's file)", p, fi.Mode().Perm(), want)
		}
	}
}

// The way to dataDir is checked like ssh's StrictModes (review D2). The
// first version's ownership and mode checks followed a symlink at dataDir: a
// user who owns dataDir's parent (dataDir: /srv/app/state, /srv/app the
// application's) replaces `state` with a symlink to a root-owned 0755
// directory (/etc here stood for by etc/), and a daemon running as root
// accepts it (the target is root's), chmods the target 0700 and creates
// LOCK, feeds/, dlq/, state/ in it. The directory entry dataDir names is
// controlled by another user: it should be refused like a dataDir that
// user owns (Lstat: a symlink must be owned by this user or root, or be
// refused), and the chmod should never go through a path that can be
// swapped.
func TestDataDirSymlinkOfAnotherUserRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	base := t.TempDir()
	appDir := filepath.Join(base, "srv-app")
	etc := filepath.Join(base, "etc")
	os.Mkdir(appDir, 0o755)
	os.Mkdir(etc, 0o755)
	os.Chmod(etc, 0o755)
	os.Chown(appDir, 65534, 65534)
	link := filepath.Join(appDir, "state")
	if err := os.Symlink(etc, link); err != nil {
		t.Fatal(err)
	}
	os.Lchown(link, 65534, 65534)
	in := filepath.Join(base, "in.log")
	os.WriteFile(in, nil, 0o644)
	cfgPath := filepath.Join(base, "tailfeed.yaml")
	os.WriteFile(cfgPath, []byte("dataDir: "+link+"\nstatus: {listen: \"127.0.0.1:0\"}\nfeeds:\n  - {name: app, path: "+in+"}\nprocessors:\n  - {name: d, feed: app, type: discard}\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, hclog.NewNullLogger())
	if err == nil {
		d.closeAll()
	}
	fi, _ := os.Stat(etc)
	_, lockErr := os.Stat(filepath.Join(etc, "LOCK"))
	if err == nil || fi.Mode().Perm() != 0o755 || lockErr == nil {
		t.Fatalf("dataDir a symlink owned by uid 65534: New err %v; the target's mode %04o (was 0755); LOCK created in the target: %v",
			err, fi.Mode().Perm(), lockErr == nil)
	}
}

// The same with the symlink one level up (dataDir:
// /srv/app/state/etc, `state` -> / by the application's user): dataDir's
// last component is a real directory, so tightenDataDir walks it and
// strips group/other bits from every file in the root-owned target
// (/etc/passwd 0644 -> 0600 would lock every non-root user out).
func TestDataDirWayThroughAnotherUsersSymlinkRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	root := t.TempDir() // stands for /
	etc := filepath.Join(root, "etc")
	os.Mkdir(etc, 0o755)
	os.Chmod(etc, 0o755)
	passwd := filepath.Join(etc, "passwd")
	os.WriteFile(passwd, []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	os.Chmod(passwd, 0o644)
	appDir := filepath.Join(t.TempDir(), "srv-app")
	os.Mkdir(appDir, 0o755)
	os.Chown(appDir, 65534, 65534)
	link := filepath.Join(appDir, "state")
	os.Symlink(root, link)
	os.Lchown(link, 65534, 65534)
	in := filepath.Join(t.TempDir(), "in.log")
	os.WriteFile(in, nil, 0o644)
	cfgPath := filepath.Join(t.TempDir(), "tailfeed.yaml")
	os.WriteFile(cfgPath, []byte("dataDir: "+filepath.Join(link, "etc")+"\nstatus: {listen: \"127.0.0.1:0\"}\nfeeds:\n  - {name: app, path: "+in+"}\nprocessors:\n  - {name: d, feed: app, type: discard}\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, hclog.NewNullLogger())
	if err == nil {
		d.closeAll()
	}
	fi, _ := os.Stat(passwd)
	if err == nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("dataDir through a symlink owned by uid 65534: New err %v; the target's etc/passwd is now %04o (was 0644)", err, fi.Mode().Perm())
	}
}

// A dataDir that is a symlink of this user (or root) to a private
// directory is followed: the state lands in the target.
func TestDataDirOwnSymlinkFollowed(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o700)
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	e := startIn(t, base, `dataDir: %DIR%/link
status: {listen: "127.0.0.1:0"}
feeds:
  - {name: app, path: %DIR%/in.log}
processors:
  - {name: d, feed: app, type: discard}
`, Options{})
	e.Stop()
	if _, err := os.Stat(filepath.Join(real, "LOCK")); err != nil {
		t.Fatalf("no LOCK in the symlink's target: %v", err)
	}
}

// A root daemon refuses a dataDir under a directory others may write
// without the sticky bit (they could swap dataDir for a symlink); under a
// sticky one (as /tmp) it is accepted.
func TestDataDirUnderWritableDirRefusedAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the refusal is root's; others get a WARN")
	}
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o777, false}, {0o777 | os.ModeSticky, true}} {
		base := t.TempDir()
		shared := filepath.Join(base, "shared")
		os.Mkdir(shared, 0o755)
		os.Chmod(shared, tc.mode)
		in := filepath.Join(base, "in.log")
		os.WriteFile(in, nil, 0o644)
		cfgPath := filepath.Join(base, "tailfeed.yaml")
		os.WriteFile(cfgPath, []byte("dataDir: "+filepath.Join(shared, "tf")+"\nstatus: {listen: \"127.0.0.1:0\"}\nfeeds:\n  - {name: app, path: "+in+"}\nprocessors:\n  - {name: d, feed: app, type: discard}\n"), 0o600)
		cfg, err := config.Load(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(cfg, hclog.NewNullLogger())
		if err == nil {
			d.closeAll()
		}
		if (err == nil) != tc.ok {
			t.Errorf("dataDir under a %v directory: New err %v, want ok %v", tc.mode, err, tc.ok)
		}
	}
}
