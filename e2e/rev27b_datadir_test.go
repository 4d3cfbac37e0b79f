package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRev27BRAFdLimitIsNoDataDirFault checks DESIGN §9 "Exit codes": "`run`
// exits 2 on the same errors and when dataDir cannot be created or written
// (`FILE:LINE: dataDir: …`); 1 on other runtime failures (port in use,
// locked — naming the holder)".
//
// A run whose process runs out of file descriptors while it opens its
// pointers (ulimit -n 20, 30 feeds) is a runtime failure: dataDir is
// creatable and writable (the same config starts with a normal limit).
//
// Observed on HEAD: exit 2, stderr "c.yaml:1: dataDir: pointer: sync
// directory of …/state/feeds/f10.ptr: open …/state/feeds: too many open
// files". Expected: exit 1 (EMFILE says nothing about dataDir).
//
// Suspected cause: internal/daemon/daemon.go:297-307 (dataDirFault) takes
// any *fs.PathError whose path lies under dataDir as "cannot be written",
// whatever its errno (EMFILE, ENFILE, ENOMEM, EIO …); only EWOULDBLOCK is
// let through.
func TestRev27BRAFdLimitIsNoDataDirFault(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("dataDir: ./state\nstatus:\n  listen: 127.0.0.1:0\nfeeds:\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "  - name: f%d\n    path: ./in%d.log\n", i, i)
	}
	b.WriteString("processors:\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "  - {name: d%d, feed: f%d, type: discard}\n", i, i)
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", `ulimit -n 20 && exec "$0" run --config "$1"`, bin, path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := exitCode(err)
	if code == -1 {
		t.Fatalf("precondition: the run did not stop on its own (killed: %v); stderr tail %q", err, tail(stderr.String(), 400))
	}
	if !strings.Contains(stderr.String(), "too many open files") {
		t.Fatalf("precondition: no EMFILE at start: exit %d, stderr tail %q", code, tail(stderr.String(), 400))
	}
	if code != 1 || strings.Contains(stderr.String(), path+":1: dataDir:") {
		t.Errorf("out of file descriptors at start (a runtime failure): exit %d, stderr tail %q; want exit 1, not \"FILE:LINE: dataDir: …\"", code, tail(stderr.String(), 300))
	}
}

// TestRev27BOKSymlinkedDataDirEntry: dataDir named through a symlink
// (./link -> ./real) whose pointer path is a directory is still exit 2
// with "FILE:LINE: dataDir: …" (DESIGN §9): dataDirFault compares the
// lexical paths, which both go through the link.
func TestRev27BOKSymlinkedDataDirEntry(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "real", "feeds", "app.ptr"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(brokenBase, "dataDir: ./state", "dataDir: ./link", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := cli(t, "run", "--config", path)
	if code != 2 || !strings.Contains(stderr, path+":1: dataDir:") {
		t.Errorf("pointer a directory under a symlinked dataDir: exit %d, stderr %q; want 2 and %q", code, tail(stderr, 300), path+":1: dataDir: …")
	}
}

// TestRev27BOKLockedDataDirStaysExit1: a second run on a dataDir another
// tailfeed holds is a runtime failure (DESIGN §9 "1 on other runtime
// failures (port in use, locked — naming the holder)"), not a dataDir
// fault.
func TestRev27BOKLockedDataDirStaysExit1(t *testing.T) {
	e := newEnv(t, aud9ACfg("", "", aud9AFileSink("out")))
	newInput(t, e.path("in.log")).appendLines(1)
	d := e.start()
	d.waitSettled(20 * time.Second)
	_, stderr, code := cli(t, "run", "--config", e.cfg)
	if code != 1 || strings.Contains(stderr, ": dataDir:") || !strings.Contains(stderr, "locked") {
		t.Errorf("dataDir locked by a running tailfeed: exit %d, stderr %q; want 1, \"locked\", no \"dataDir:\"", code, tail(stderr, 300))
	}
	d.stop()
}
